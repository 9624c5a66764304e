#!/usr/bin/env bash
# Load test of kvrt serve beside llama.cpp's llama-server on loopback, bounded in requests: 1, 4
# and 16 concurrent streaming clients (bench/serve_load.mjs, node without packages) on the
# realistic synthetic shape (the model of tools/bench.sh, made once in build/models/), 4 slots
# each (kvrt serve --parallel 4, llama-server -np 4). Every request asks for exactly N tokens
# with "ignore_eos": true, and the load client checks each reply's usage says so (a mismatch is
# reported, and makes this script fail). Both servers run at once and are loaded in turn, level
# by level, in rounds (kvrt first in odd rounds, llama-server first in even ones), so their
# numbers come from one run on the same machine state. Prints one JSON line per step and the
# tables of tools/serve_page.py (with lscpu's model name, the commit and the load average before
# every step). llama-server is $LLAMA_SERVER, else ../peer/src/build/bin/llama-server beside the
# checkout (../shared/tools/peer-llama.sh builds it); without it, kvrt alone.
#
#   tools/serve_bench.sh [options] [MODEL.gguf]
#     --page [FILE]  also write the page (default docs/results/<date>-<cpu>-serve.md)
#     --dir DIR      keep the steps (steps.tsv, run.txt) in DIR (default: a temporary dir)
#     --from DIR     run nothing: render DIR
#   Env: KVRT_SERVE_BENCH_TOKENS (tokens per request, default 128), KVRT_SERVE_BENCH_THREADS (2),
#   KVRT_SERVE_BENCH_ROUNDS (3), KVRT_BUILD (default build/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_BUILD:-$root/build}"
page="" dir="" from="" model=""
invocation="tools/serve_bench.sh${*:+ $*}"
while (($#)); do
  case "$1" in
    --page)
      if [ $# -gt 1 ] && [ "${2#--}" = "$2" ] && [ "${2%.md}" != "$2" ]; then page="$2"; shift 2; else page=default; shift; fi ;;
    --dir) dir="$2"; shift 2 ;;
    --from) from="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
    -*) echo "serve_bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) model="$1"; shift ;;
  esac
done
tokens="${KVRT_SERVE_BENCH_TOKENS:-128}"
threads="${KVRT_SERVE_BENCH_THREADS:-2}"
rounds="${KVRT_SERVE_BENCH_ROUNDS:-3}"
for v in "$tokens" "$threads" "$rounds"; do
  [[ "$v" =~ ^[1-9][0-9]{0,3}$ ]] || { echo "serve_bench.sh: tokens, threads and rounds must be 1 to 9999, not '$v'" >&2; exit 2; }
done

cpu="$(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
[ -n "$cpu" ] || cpu="unknown CPU"
slug="$(printf '%s' "$cpu" | tr '[:upper:]' '[:lower:]' | sed -e 's/([^)]*)//g' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//' | cut -c1-48)"
[ "$page" != default ] || page="$root/docs/results/$(date -u +%Y-%m-%d)-$slug-serve.md"
render() { python3 "$root/tools/serve_page.py" "$1" "$cpu" ${page:+"$page"}; }
if [ -n "$from" ]; then
  [ -f "$from/steps.tsv" ] || { echo "serve_bench.sh: '$from' holds no steps.tsv of a serve_bench.sh run" >&2; exit 2; }
  render "$from"
  exit 0
fi

command -v node >/dev/null || { echo "serve_bench.sh: node (18 or later) is needed for the load client" >&2; exit 2; }
kvrt="$build/tools/kvrt/kvrt"
[ -x "$kvrt" ] || { echo "serve_bench.sh: $kvrt is missing: build kvrt first (docs/building-and-testing.md)" >&2; exit 3; }
shape=""
if [ -z "$model" ]; then
  model="$build/models/synth-1024-f16.gguf"
  shape="the realistic synthetic shape (synth_model --type f16: llama, d_model 1024, 8 layers, 16/4 heads of 64, d_ff 2816, 32000-token vocabulary)"
  if [ ! -f "$model" ]; then
    mkdir -p "$build/models"
    "$build/tools/synth_model/synth_model" -o "$model" --type f16 >&2
  fi
fi
[ -f "$model" ] || { echo "serve_bench.sh: no model file '$model'" >&2; exit 2; }
# Passive OpenMP waits for both servers: spinning joins collapse on a shared machine
# (docs/performance.md).
export OMP_WAIT_POLICY=passive
ctx=512
slots=4
llama="$(realpath -m "${LLAMA_SERVER:-$root/../peer/src/build/bin/llama-server}")"

tmp="$(mktemp -d)"
if [ -z "$dir" ]; then dir="$tmp/run"; fi
mkdir -p "$dir"
: >"$dir/steps.tsv"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
# About 60 tokens of story text: each request puts its own number in front of it.
cat >"$tmp/prompt.txt" <<'TEXT'
Once upon a time, in a small village at the edge of a great forest, there lived a girl named
Mia who loved to collect smooth stones from the river. Every morning she walked along the water
with her dog, a brown puppy called Max, and every evening she told her grandmother what she found.
TEXT

wait_port() {  # URL: waits until /health answers 200
  for _ in $(seq 1 600); do
    curl -sf "$1/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "serve_bench.sh: no server at $1" >&2
  return 1
}
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

names=(kvrt) urls=()
port="$(free_port)"
kvrt_cmd=("$kvrt" serve -m "$model" -c "$ctx" -t "$threads" --parallel "$slots" --queue 32 --port "$port")
"${kvrt_cmd[@]}" >"$tmp/kvrt.out" 2>"$tmp/kvrt.err" &
pids+=($!)
urls+=("http://127.0.0.1:$port")
llama_cmd=()
if [ -x "$llama" ]; then
  # llama-server splits -c among its slots: the same positions per slot as kvrt's.
  port="$(free_port)"
  llama_cmd=("$llama" -m "$model" -c $((ctx * slots)) -np "$slots" -t "$threads" --port "$port")
  "${llama_cmd[@]}" >"$tmp/llama.out" 2>"$tmp/llama.err" &
  pids+=($!)
  names+=(llama-server)
  urls+=("http://127.0.0.1:$port")
else
  echo "serve_bench.sh: llama-server not found (set LLAMA_SERVER, or build it with ../shared/tools/peer-llama.sh); kvrt only" >&2
fi
for url in "${urls[@]}"; do wait_port "$url"; done
# llama-server fails a reply (error 500 "does not match the expected Content-only format") once
# it holds a token that is a lone byte of no UTF-8 character, which random weights sample now and
# then: its requests ban those tokens (logit_bias false), found by detokenizing the first 1024
# ids. The work per token is the same; kvrt serve samples from the whole vocabulary.
extras=("" "")
banned=""
if ((${#urls[@]} > 1)); then
  node --input-type=module - "${urls[1]}" >"$tmp/llama-extra.json" <<'JS'
const url = process.argv[2];
const ids = [];
for (let first = 0; first < 1024; first += 64) {
  await Promise.all(Array.from({ length: 64 }, async (_, k) => {
    const res = await fetch(`${url}/detokenize`, { method: 'POST', body: JSON.stringify({ tokens: [first + k] }) });
    if (res.ok && (await res.json()).content === '\uFFFD') ids.push(first + k);
  }));
}
ids.sort((a, b) => a - b);
console.log(JSON.stringify({ logit_bias: Object.fromEntries(ids.map((id) => [id, false])) }));
JS
  extras[1]="$tmp/llama-extra.json"
  banned="$(node -e 'const b = Object.keys(JSON.parse(require("fs").readFileSync(process.argv[1])).logit_bias); console.log(b.length ? `${b.length} tokens (ids ${b[0]} to ${b[b.length - 1]})` : "none")' "${extras[1]}")"
fi

{
  printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
  printf 'commit\t%s\n' "$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  printf 'command\tKVRT_SERVE_BENCH_TOKENS=%s KVRT_SERVE_BENCH_THREADS=%s KVRT_SERVE_BENCH_ROUNDS=%s %s\n' \
    "$tokens" "$threads" "$rounds" "$invocation"
  printf 'model\t%s\n' "${model/#$root\//}"
  printf 'shape\t%s\n' "$shape"
  printf 'tokens\t%s\n' "$tokens"
  printf 'kvrt\t%s\n' "${kvrt_cmd[*]/#$root\//}"
  if ((${#llama_cmd[@]})); then
    printf 'llama-server\t%s\n' "${llama_cmd[*]/#$root\//}"
    printf 'llama-server bans\t%s\n' "$banned"
    printf 'llama.cpp\t%s\n' "$(git -C "$(dirname "$llama")/../.." rev-parse --short=8 HEAD 2>/dev/null || echo unknown)"
  fi
  printf 'client\tnode bench/serve_load.mjs URL CLIENTS REQUESTS %s PROMPT_FILE (node %s)\n' "$tokens" "$(node --version)"
  printf 'load before\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$dir/run.txt"

# One measured step: round, server index, clients, requests. Appends the load client's JSON line
# to steps.tsv with the round, the server and the 1-minute load before it.
step() {
  local round="$1" i="$2" clients="$3" requests="$4" load out
  load="$(cut -d' ' -f1 /proc/loadavg)"
  out="$(node "$root/bench/serve_load.mjs" "${urls[$i]}" "$clients" "$requests" "$tokens" "$tmp/prompt.txt" \
    "${names[$i]}" ${extras[$i]:+"${extras[$i]}"})"
  echo "$out"
  printf '%s\t%s\t%s\t%s\n' "$round" "${names[$i]}" "$load" "$out" >>"$dir/steps.tsv"
}

echo "serve_bench: $cpu; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "serve_bench: model $model, $tokens tokens per request, $threads threads, $slots slots of $ctx positions, $rounds rounds" >&2
# A request that is not counted first: it touches the model's pages and makes kvrt's prefill
# products' primitives.
for i in "${!urls[@]}"; do
  node "$root/bench/serve_load.mjs" "${urls[$i]}" 1 1 8 "$tmp/prompt.txt" "${names[$i]}-warmup" \
    ${extras[$i]:+"${extras[$i]}"} >/dev/null
done
for round in $(seq 1 "$rounds"); do
  order=("${!urls[@]}")
  ((round % 2 == 1)) || order=($(printf '%s\n' "${order[@]}" | sort -rn))
  for level in "1 2" "4 4" "16 16"; do
    for i in "${order[@]}"; do step "$round" "$i" $level; done
  done
done
printf 'load after\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$dir/run.txt"
render "$dir"
if awk -F'\t' '$4 !~ /"mismatched":0[,}]/ { bad = 1 } END { exit !bad }' "$dir/steps.tsv"; then
  echo "serve_bench.sh: some replies did not hold the $tokens tokens asked for (see above): the numbers compare different work" >&2
  exit 1
fi
