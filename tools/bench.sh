#!/usr/bin/env bash
# Benchmarks on the realistic-shape synthetic model (llama, d_model 1024, 8 layers, 16 heads,
# 4 KV heads, head_dim 64, d_ff 2816, F16 weights, 32000-token vocabulary): generates it once in
# build/models/, then runs the attention bench (bench_attention) and `kvrt bench` with the
# arguments given (defaults: 2 threads and kvrt bench's own: the settings f32;q8;q4;k=q8,v=q4 at
# 1k/4k/8k/16k). Both write JSON: bench_attention.json and bench.json in $KVRT_BENCH_OUT (default
# the build directory); tools/results.sh turns them into a results page.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_BUILD:-$root/build}"
"$root/tools/setup.sh"
model="$build/models/synth-1024-f16.gguf"
if [ ! -f "$model" ]; then
  mkdir -p "$build/models"
  "$build/tools/synth_model/synth_model" -o "$model" --type f16 >&2
fi
out="${KVRT_BENCH_OUT:-$build}"
"$build/bench/bench_attention" "$out/bench_attention.json"
exec "$build/tools/kvrt/kvrt" bench -m "$model" -t 2 --json "$out/bench.json" "$@"
