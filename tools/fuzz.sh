#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.cc) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in their own build dir, then runs each for a bounded time.
#   tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60 s; targets: gguf tokenizer toml manifest weights signed state grammar)
# Env: KVRT_FUZZ_BUILD (default build-fuzz/). The tokenizer and manifest targets read the vendored vocabularies.
# A crash stops with a non-zero exit; the input is left in $build/artifacts/ (see tests/fuzz/README.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_FUZZ_BUILD:-$root/build-fuzz}"
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(gguf tokenizer toml manifest weights signed state grammar)

packages=(clang libclang-rt-14-dev libomp-14-dev meson ninja-build pkg-config cmake libdnnl-dev ocl-icd-opencl-dev libxsimd-dev
          libtomlplusplus-dev libsodium-dev)
. "$root/tools/apt_need.sh"
apt_need "${packages[@]}"

sanitize=(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" "$root" --buildtype=debugoptimized -Dtests=false \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" >&2
fi
ninja -C "$build" src/libkvrt.a >&2

# Libraries libkvrt.a needs beside OpenMP: toml++ (compiled), libsodium, and oneDNN when the build found it.
libs=($(pkg-config --libs tomlplusplus libsodium))
grep -q 'KVRT_HAVE_DNNL 1' "$build/kvrt_config.h" && libs+=(-ldnnl)

mkdir -p "$build/artifacts"
for t in "${targets[@]}"; do
  exe="$build/fuzz_$t"
  clang++ -std=c++20 -g -O1 -fsanitize=fuzzer "${sanitize[@]}" -DKVRT_SOURCE_DIR="\"$root\"" -I"$root/src" -I"$root/include" -I"$build" \
    "$root/tests/fuzz/fuzz_$t.cc" "$build/src/libkvrt.a" "${libs[@]}" -fopenmp -o "$exe" >&2
  work="$build/corpus/$t"   # grows while fuzzing; the repository's seeds stay read-only
  mkdir -p "$work"
  seeds=("$root/tests/fuzz/corpus/$t")
  [ -d "$root/tests/fuzz/crashes/$t" ] && seeds+=("$root/tests/fuzz/crashes/$t")
  log="$build/fuzz_$t.log"
  status=0
  "$exe" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" "$work" "${seeds[@]}" >"$log" 2>&1 || status=$?
  runs="$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')"
  cov="$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 || true)"
  if ((status != 0)); then
    tail -40 "$log" >&2
    echo "fuzz $t: FAILED after $runs executions (exit $status); input in $build/artifacts/" >&2
    exit 1
  fi
  echo "fuzz $t: $runs executions in ${seconds}s, $cov, no crash"
done
