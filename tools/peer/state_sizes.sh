#!/usr/bin/env bash
# The `state` section of tools/peer_bench.sh: the size of the state file each runtime saves for
# one prompt on one model, `kvrt run --prompt-cache` for each KV setting and llama.cpp's
# `llama-completion --prompt-cache` for each cache type (f16, its default; q8_0 and q4_0 with
# -fa on, which a quantized V needs). The prompt is the first texts of
# validation/canary, about 2,000 tokens. Appends "runtime setting tokens bytes command" lines to
# DIR/state.tsv; the token count is read from each file's header.
#   tools/peer/state_sizes.sh PEER_BIN KVRT MODEL THREADS DIR
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ $# -eq 5 ] || { echo "usage: state_sizes.sh PEER_BIN KVRT MODEL THREADS DIR" >&2; exit 2; }
bin="$1" kvrt="$2" model="$3" t="$4" dir="$5"
work="$dir/state"
mkdir -p "$work"
prompt="$work/prompt.txt"
python3 "$root/tools/peer/canary_prompt.py" "$root/validation/canary/manifest.toml" "$prompt"

# Tokens held by a state file, from its header (docs/formats/state-file.md; llama.cpp's
# llama_state_save_file: magic, version, token count).
tokens_of() {
  python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
if b[:8] == b"KVRTSTAT":
    o = 24
    for _ in range(3):  # model, setting, matmul
        o += 4 + struct.unpack_from("<I", b, o)[0]
    o += 4 + 4 + 1 + 8  # n_ctx, n_batch, has sampler, sampler state
    o += 4 + struct.unpack_from("<I", b, o)[0]  # application
    print(struct.unpack_from("<I", b, o)[0])
else:
    print(struct.unpack_from("<I", b, 8)[0])
PY
}

record() {  # runtime setting file command...
  local runtime="$1" setting="$2" file="$3"
  shift 3
  printf '%s\t%s\t%s\t%s\t%s\n' "$runtime" "$setting" "$(tokens_of "$file")" "$(stat -c %s "$file")" \
    "${*/#$root\//}" >>"$dir/state.tsv"
}

for pair in f32:f16 q8:q8_0 k=q8,v=q4:q8_0/q4_0 q4:q4_0 q4s:-; do
  k="${pair%%:*}" l="${pair#*:}"
  echo "peer_bench: [state] kvrt $k" >&2
  f="$work/kvrt-${k//[=,]/_}.kvs"
  rm -f "$f"
  cmd=("$kvrt" run -m "$model" -t "$t" -c 4096 -f "$prompt" -n 1 --kv "$k" --allow-unvalidated --prompt-cache "$f")
  "${cmd[@]}" >/dev/null 2>"$f.log" || { tail -3 "$f.log" >&2; exit 1; }
  record kvrt "$k" "$f" "${cmd[@]}"
  [ "$l" != - ] || continue
  echo "peer_bench: [state] llama.cpp $l" >&2
  f="$work/llama-${l//\//_}.bin"
  rm -f "$f"
  cmd=("$bin/llama-completion" -m "$model" -t "$t" -c 4096 -f "$prompt" -n 1 -no-cnv --prompt-cache "$f"
       -ctk "${l%%/*}" -ctv "${l##*/}")
  [ "$l" = f16 ] || cmd+=(-fa on)
  "${cmd[@]}" >/dev/null 2>"$f.log" </dev/null || { tail -3 "$f.log" >&2; exit 1; }
  record llama.cpp "$l" "$f" "${cmd[@]}"
done
