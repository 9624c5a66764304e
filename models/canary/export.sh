#!/usr/bin/env bash
# Exports a checkpoint to GGUF with synth_model (F16 for the repository, F32 for the check),
# then measures it with kvrt: NLL on the NLL texts against torch, and greedy recall by distance
# on the held-out set with the FP32 cache (a 4096-position model also on heldout_long.tsv). A model
# with key biases (canary-kbias) also gets the table of its largest key-bias channels, read back
# from the F16 file.
#   export.sh [CHECKPOINT] [OUT.gguf]   (defaults: /work/canary-data/run/checkpoint.pt,
#                                        models/canary.gguf; general.name is OUT's base name)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
data="${CANARY_DATA:-/work/canary-data}"
ckpt="${1:-$data/run/checkpoint.pt}"
out="${2:-$root/models/canary.gguf}"
name="$(basename "$out" .gguf)"
build="${KVRT_BUILD:-$root/build}"
vocab="${STORIES_MODEL:-$root/models/stories260K.gguf}"
work="$data/export/$name"
py=/usr/bin/python3
export LD_LIBRARY_PATH="/usr/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

$py "$here/export.py" --checkpoint "$ckpt" --texts "$data/nll_texts.tsv" --vocab "$vocab" --out "$work"
read -r -a shape < "$work/shape.txt"
for type in f32 f16; do
  dst="$work/$name-$type.gguf"; [ "$type" = f16 ] && dst="$out"
  "$build/tools/synth_model/synth_model" -o "$dst" --type "$type" "${shape[@]}" --vocab-from "$vocab" \
    --weights-from "$work/raw" --name "$name"
  "$build/models/canary/canary_eval" nll -m "$dst" -i "$data/nll_texts.tsv" > "$work/kvrt_nll_$type.tsv"
done
$py "$here/report.py" nll "$work/torch_nll.tsv" "$work/kvrt_nll_f32.tsv" "$work/kvrt_nll_f16.tsv"
if [ -f "$work/raw/blk.0.attn_k.bias.f32" ]; then
  echo "key biases of $out (attn_k.bias as the file stores it):"
  $py "$here/gguf_read.py" "$out" --key-bias
fi
"$build/models/canary/canary_eval" recall -m "$out" -i "$data/heldout.tsv" --kv f32 --threads 2 > "$work/recall_f32.tsv"
$py "$here/report.py" recall "$work/recall_f32.tsv"
if grep -q -- "--ctx 4096" "$work/shape.txt"; then  # a long canary: its own held-out set too
  "$build/models/canary/canary_eval" recall -m "$out" -i "$data/heldout_long.tsv" --kv f32 --threads 2 \
    > "$work/recall_long_f32.tsv"
  $py "$here/report.py" recall "$work/recall_long_f32.tsv"
fi
