#!/usr/bin/env bash
# Load test of kvrt serve on loopback, bounded in requests: 1, 4 and 16 concurrent clients
# (bench/serve_load.mjs, node without packages) on the realistic synthetic shape (the model of
# tools/bench.sh, made once in build/models/), --parallel 4. Prints one JSON line per level:
# aggregate tokens/s, p50/p99 time to first token, errors. When llama.cpp's llama-server is
# found ($LLAMA_SERVER, else ../peer/src/build/bin/llama-server beside the checkout, as
# ../shared/tools/peer-llama.sh builds it), the same requests go to `llama-server -np 4` on the
# same file, in the same run, after kvrt's.
#   tools/serve_bench.sh [MODEL.gguf]
# Environment: KVRT_SERVE_BENCH_TOKENS (default 64 per request), KVRT_SERVE_BENCH_THREADS (2),
# KVRT_SERVE_BENCH_ROUNDS (2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_BUILD:-$root/build}"
command -v node >/dev/null || { echo "serve_bench: node (18 or later) is needed for the load client" >&2; exit 2; }
model="${1:-$build/models/synth-1024-f16.gguf}"
if [ $# -eq 0 ] && [ ! -f "$model" ]; then
  mkdir -p "$build/models"
  "$build/tools/synth_model/synth_model" -o "$model" --type f16 >&2
fi
# Passive OpenMP waits for both servers: spinning joins collapse on a shared machine
# (docs/performance.md).
export OMP_WAIT_POLICY=passive
tokens="${KVRT_SERVE_BENCH_TOKENS:-64}"
threads="${KVRT_SERVE_BENCH_THREADS:-2}"
rounds="${KVRT_SERVE_BENCH_ROUNDS:-2}"
ctx=512
slots=4
llama="${LLAMA_SERVER:-$root/../peer/src/build/bin/llama-server}"

tmp="$(mktemp -d)"
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# About 60 tokens of story text: each request puts its own number in front of it.
cat > "$tmp/prompt.txt" <<'TEXT'
Once upon a time, in a small village at the edge of a great forest, there lived a girl named
Mia who loved to collect smooth stones from the river. Every morning she walked along the water
with her dog, a brown puppy called Max, and every evening she told her grandmother what she found.
TEXT

wait_port() {  # URL: waits until /health answers 200
  for _ in $(seq 1 600); do
    curl -sf "$1/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "serve_bench: no server at $1" >&2
  return 1
}

# load NAME URL: after a request that is not counted (the first touches the model's pages and
# makes the prefill products' primitives), the three levels against one server, in rounds: on a
# shared machine compare levels within a round (the rounds show the drift).
load() {
  local name="$1" url="$2" round
  node "$root/bench/serve_load.mjs" "$url" 1 1 8 "$tmp/prompt.txt" "$name-warmup" >/dev/null
  for round in $(seq 1 "$rounds"); do
    node "$root/bench/serve_load.mjs" "$url" 1 2 "$tokens" "$tmp/prompt.txt" "$name-$round"
    node "$root/bench/serve_load.mjs" "$url" 4 4 "$tokens" "$tmp/prompt.txt" "$name-$round"
    node "$root/bench/serve_load.mjs" "$url" 16 16 "$tokens" "$tmp/prompt.txt" "$name-$round"
  done
}

echo "serve_bench: $(lscpu | sed -n 's/^Model name: *//p'); load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "serve_bench: model $model, $tokens tokens per request, $threads threads, $slots slots of $ctx positions" >&2
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port="$(free_port)"
"$build/tools/kvrt/kvrt" serve -m "$model" -c "$ctx" -t "$threads" --parallel "$slots" --queue 32 \
  --port "$port" >"$tmp/kvrt.out" 2>"$tmp/kvrt.err" &
pid=$!
wait_port "http://127.0.0.1:$port"
load kvrt "http://127.0.0.1:$port"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""

if [ -x "$llama" ]; then
  # llama-server splits -c among its slots: the same positions per slot as kvrt's.
  port="$(free_port)"
  "$llama" -m "$model" -c $((ctx * slots)) -np "$slots" -t "$threads" --port "$port" \
    >"$tmp/llama.out" 2>"$tmp/llama.err" &
  pid=$!
  wait_port "http://127.0.0.1:$port"
  load llama-server "http://127.0.0.1:$port"
else
  echo "serve_bench: llama-server not found (set LLAMA_SERVER, or build it with ../shared/tools/peer-llama.sh); kvrt only" >&2
fi
echo "serve_bench: load average after $(cut -d' ' -f1-3 /proc/loadavg)" >&2
