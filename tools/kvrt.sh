#!/usr/bin/env bash
# Runs kvrt, installing dependencies and building on first use: tools/kvrt.sh run -p "Once upon a time"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/tools/setup.sh"
exec "${KVRT_BUILD:-$root/build}/tools/kvrt/kvrt" "$@"
