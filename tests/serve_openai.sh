#!/usr/bin/env bash
# Runs tests/serve_openai.mjs (the npm `openai` package against kvrt serve); skipped (77) with a
# message when node or the package is missing: tools/node_setup.sh installs it into tests/node/.
#   tests/serve_openai.sh KVRT_EXE SYNTH_MODEL_EXE
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v node >/dev/null; then
  echo "SKIP: node is not installed (the openai client test needs Node.js 18 or later)" >&2
  exit 77
fi
if [ ! -f "$root/tests/node/node_modules/openai/package.json" ]; then
  echo "SKIP: the npm package openai is not in tests/node/node_modules; run tools/node_setup.sh" >&2
  exit 77
fi
exec node "$root/tests/serve_openai.mjs" "$1" "$2" "$root"
