#!/usr/bin/env bash
# The `memory` section of tools/peer_bench.sh: the peak resident memory (ru_maxrss) of one
# generation per weight file, `kvrt run` with its default cache (f32) and with q8 against
# `llama-completion` with its default (f16), both at -c 4096 on the same prompt (the first texts
# of validation/canary, about 2,000 tokens) and 8 new tokens. Appends "type runtime cache KiB
# command" lines to DIR/resident.tsv.
#   tools/peer/resident.sh PEER_BIN KVRT THREADS DIR TYPE=MODEL...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ $# -ge 5 ] || { echo "usage: resident.sh PEER_BIN KVRT THREADS DIR TYPE=MODEL..." >&2; exit 2; }
bin="$1" kvrt="$2" t="$3" dir="$4"
shift 4
work="$dir/resident"
mkdir -p "$work"
prompt="$work/prompt.txt"
python3 "$root/tools/peer/canary_prompt.py" "$root/validation/canary/manifest.toml" "$prompt"

# Runs the command (its output to LOG) and appends its peak resident KiB to resident.tsv.
measure() {  # type runtime cache log command...
  local type="$1" runtime="$2" cache="$3" log="$4"
  shift 4
  echo "peer_bench: [memory] $type $runtime $cache" >&2
  local kib
  kib="$(python3 - "$log" "$@" <<'PY'
import resource, subprocess, sys
with open(sys.argv[1], "w") as log:
    subprocess.run(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                   check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)  # KiB on Linux
PY
)" || { tail -3 "$log" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t%s\n' "$type" "$runtime" "$cache" "$kib" "${*/#$root\//}" >>"$dir/resident.tsv"
}

for pair; do
  type="${pair%%=*}" model="${pair#*=}"
  measure "$type" kvrt f32 "$work/kvrt-$type.log" "$kvrt" run -m "$model" -t "$t" -c 4096 -f "$prompt" -n 8
  measure "$type" kvrt q8 "$work/kvrt-q8-$type.log" "$kvrt" run -m "$model" -t "$t" -c 4096 -f "$prompt" \
    -n 8 --kv q8 --allow-unvalidated
  measure "$type" llama.cpp f16 "$work/llama-$type.log" "$bin/llama-completion" -m "$model" -t "$t" \
    -c 4096 -f "$prompt" -n 8 -no-cnv
done
