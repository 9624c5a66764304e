#!/usr/bin/env bash
# Installs the npm packages of the tests (tests/node/package-lock.json: the openai client that
# tests/serve_openai.sh runs against kvrt serve) into tests/node/node_modules, when npm is there
# and they are not installed yet. Installs Debian's npm (and node) when there is no npm; if that
# fails it says so and succeeds: that test then skips.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/tests/node"
if ! command -v npm >/dev/null; then
  echo "kvrt node_setup: installing npm from Debian" >&2
  . "$root/tools/apt_need.sh"
  if ! apt_need npm; then
    echo "kvrt node_setup: npm could not be installed; the openai client test will skip" >&2
    exit 0
  fi
fi
if [ ! -f "$dir/node_modules/openai/package.json" ]; then
  echo "kvrt node_setup: installing the test packages in $dir" >&2
  npm ci --prefix "$dir" --no-audit --no-fund >&2 ||
    echo "kvrt node_setup: npm ci failed (no registry?); the openai client test will skip" >&2
fi
