#!/usr/bin/env bash
# Runs the test suite (all but the suite 'slow') under AddressSanitizer + UndefinedBehaviorSanitizer in its own build
# dir (debug build type with -O1 so the suite stays fast). Any report fails the run.
#   tools/test_sanitize.sh [meson test args...]      Env: KVRT_SANITIZE_BUILD (default build-sanitize/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_SANITIZE_BUILD:-$root/build-sanitize}"
"$root/tools/setup.sh"   # Debian packages (and the release build, which CI has already done)

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$root" --buildtype=debug -Doptimization=1 -Db_sanitize=address,undefined \
    -Db_lundef=false >&2
fi
ninja -C "$build" >&2

# Every report halts the test (halt_on_error=1; the build stays recoverable so that a justified
# suppression in tests/sanitize/*.supp can apply). detect_leaks stays on: kvrt frees what it allocates.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:suppressions=$root/tests/sanitize/asan.supp"
export LSAN_OPTIONS="suppressions=$root/tests/sanitize/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$root/tests/sanitize/ubsan.supp"
# Without arguments: the whole suite but the 'slow' suite (see tests/meson.build), which runs natively.
args=("$@")
(($#)) || args=(--no-suite slow)
meson test -C "$build" --print-errorlogs --timeout-multiplier=4 "${args[@]}"
