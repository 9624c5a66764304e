#!/usr/bin/env bash
# Do two threads pay, and do they survive busy neighbours? Runs `kvrt bench` (prefill of N
# tokens, then decode at that short context) on 1 and 2 threads, on an idle machine and with busy
# processes beside it (`yes > /dev/null`, one unless --busy says more), interleaved round by round so that drift in the
# machine's load hits every cell alike, for one or more kvrt binaries (e.g. main's and a branch's).
# Prints every run, then per binary and neighbour the ratio of 2 threads to 1 (prefill and decode,
# each round and their median), with lscpu's model name and the load average before each run.
#
#   tools/bench_threads.sh [options] [KVRT_BINARY...]      (default: build/tools/kvrt/kvrt)
#     -m FILE         model (default: the realistic synthetic shape in F16, made by tools/bench.sh's
#                     recipe in build/models/synth-1024-f16.gguf when missing)
#     --rounds N      rounds of the whole grid (default 3)
#     --tokens N      prefill tokens and the decode context (default 512)
#     --decode N      decode steps timed per run (default 64)
#     --busy N        busy processes beside the busy runs (default 1)
#     --json DIR      keep every run's kvrt bench JSON in DIR
#   Env: KVRT_BUILD (default build/).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_BUILD:-$root/build}"

model=""
rounds=3
tokens=512
decode=64
busy=1
keep=""
bins=()
while (($#)); do
  case "$1" in
    -m) model="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --tokens) tokens="$2"; shift 2 ;;
    --decode) decode="$2"; shift 2 ;;
    --busy) busy="$2"; shift 2 ;;
    --json) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench_threads.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) bins+=("$1"); shift ;;
  esac
done
for n in "$rounds" "$tokens" "$decode" "$busy"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench_threads.sh: '$n' is not a positive count" >&2; exit 2; }
done
((${#bins[@]})) || bins=("$build/tools/kvrt/kvrt")
for b in "${bins[@]}"; do
  [ -f "$b" ] && [ -x "$b" ] || { echo "bench_threads.sh: '$b' is not an executable file" >&2; exit 2; }
done
if [ -z "$model" ]; then
  model="$build/models/synth-1024-f16.gguf"
  if [ ! -f "$model" ]; then
    mkdir -p "$build/models"
    "$build/tools/synth_model/synth_model" -o "$model" --type f16 >&2
  fi
fi
[ -f "$model" ] || { echo "bench_threads.sh: model '$model' is not a file" >&2; exit 2; }

work="$(mktemp -d)"
neighbours=()
stop_neighbours() {
  for p in "${neighbours[@]}"; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  neighbours=()
}
trap 'stop_neighbours; rm -rf "$work"' EXIT
[ -z "$keep" ] || mkdir -p "$keep"

cpu="$(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
echo "CPU: ${cpu:-unknown}, $(nproc) cores; model $(basename "$model"); prefill $tokens tokens, decode at $tokens; busy: $busy x yes"
echo "command: KVRT bench -m MODEL -t T --ctx $tokens --prefill-tokens $tokens --decode-tokens $decode --settings f32"
results="$work/results.tsv"
for ((r = 1; r <= rounds; r++)); do
  for bi in "${!bins[@]}"; do
    for load in idle busy; do
      if [ "$load" = busy ]; then
        for ((i = 0; i < busy; i++)); do yes > /dev/null & neighbours+=($!); done
      fi
      # Alternate the order of the thread counts from round to round.
      order="1 2"; ((r % 2)) || order="2 1"
      for t in $order; do
        json="$work/r$r-b$bi-$load-t$t.json"
        avg="$(cut -d' ' -f1-3 /proc/loadavg)"
        if ! "${bins[$bi]}" bench -m "$model" -t "$t" --ctx "$tokens" --prefill-tokens "$tokens" \
          --decode-tokens "$decode" --settings f32 --json "$json" > /dev/null 2> "$work/err"; then
          cat "$work/err" >&2
          exit 1
        fi
        [ -z "$keep" ] || cp "$json" "$keep/"
        python3 - "$json" "$r" "$bi" "$load" "$t" "$avg" >> "$results" <<'PY'
import json, sys
path, r, b, load, t, avg = sys.argv[1:]
s = json.load(open(path))["results"][0]
print("\t".join([r, b, load, t, "%.2f" % s["prefill_tok_s"], "%.2f" % s["decode"][-1]["tok_s"], avg]))
PY
        tail -n 1 "$results" | awk -F'\t' '{printf "round %s  bin %s  %-4s  -t %s  prefill %8s  decode %7s tok/s  (load %s)\n", $1, $2, $3, $4, $5, $6, $7}'
      done
      stop_neighbours
    done
  done
done

echo
for bi in "${!bins[@]}"; do echo "bin $bi: ${bins[$bi]}"; done
python3 - "$results" <<'PY'
import collections, statistics, sys
cells = collections.defaultdict(dict)  # (bin, load, round) -> {threads: (prefill, decode)}
for line in open(sys.argv[1]):
    r, b, load, t, pre, dec, _ = line.rstrip("\n").split("\t")
    cells[(b, load, r)][t] = (float(pre), float(dec))
print("2 threads / 1 thread, each round; median last (the same run's 1-thread and 2-thread numbers)")
print("%-4s %-5s %-8s %s" % ("bin", "load", "phase", "ratios"))
for b in sorted({k[0] for k in cells}):
    for load in ("idle", "busy"):
        for phase, i in (("prefill", 0), ("decode", 1)):
            ratios = [c["2"][i] / c["1"][i] for (bb, ll, _), c in sorted(cells.items())
                      if bb == b and ll == load and "1" in c and "2" in c]
            if ratios:
                print("%-4s %-5s %-8s %s   median %.2f" % (b, load, phase, " ".join("%.2f" % x for x in ratios),
                                                        statistics.median(ratios)))
PY
