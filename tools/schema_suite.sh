#!/usr/bin/env bash
# Prints the table of the official JSON Schema test suite (Debian's json-schema-test-suite, draft 7)
# against kvrt's JSON Schema grammars: per keyword file the cases run, the cases passed and the
# cases skipped because the converter refuses their schema, then each skipped schema with the
# reason. Exits non-zero when an instance is misjudged (as the test json_schema_suite does).
#   tools/schema_suite.sh [DRAFT_DIR]        Env: KVRT_BUILD (default build/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_BUILD:-$root/build}"
. "$root/tools/apt_need.sh"
apt_need json-schema-test-suite
ninja -C "$build" tests/test_json_schema_suite >&2
exec "$build/tests/test_json_schema_suite" --table "$@"
