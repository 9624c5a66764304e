#!/usr/bin/env bash
# Runs the whole test suite: installs and builds on first use, then every test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/tools/setup.sh"
# The npm packages of the tests (the openai client against kvrt serve).
"$root/tools/node_setup.sh"
meson test -C "${KVRT_BUILD:-$root/build}" --print-errorlogs "$@"
