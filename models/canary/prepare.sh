#!/usr/bin/env bash
# Makes the canary model's data in DATA (default /work/canary-data), deterministically:
#   stories_train.tsv   1000 stories sampled from stories260K at temperature 1, at most 512
#                       tokens each (seeds 1..500 and 4001..4500; about 0.5M tokens)
#   stories_heldout.tsv 300 other stories (seeds 1000001..), the filler of held-out cases only
#   nll_texts.tsv       32 other stories (seeds 2000001..), the NLL check of the export
#   val.tsv             24 held-out retrieval cases per distance bucket (seed 11), for training logs
#   heldout.tsv         100 held-out cases per bucket (seed 7), the reported recall; also as
#   heldout_cases/      an acceptance set for kvrt validate --cases
#   val_long.tsv        12 held-out cases per bucket at distances 2048-4000 (seed 11), prompts up
#                       to 4090 tokens: the long canary's training logs
#   heldout_long.tsv    50 such cases per bucket (seed 7), also as heldout_long_cases/
# and checks that models/canary/spm.py tokenizes like kvrt. Story i of a part has seed FIRST + i,
# so a part can be made in pieces; each part runs as its own process (one per core). Stories are
# sampled on kvrt's scalar kernels (KVRT_ISA=scalar): sampling at temperature 1 turns a last-bit
# difference of the logits into another story, and the SIMD rungs sum in other orders (the
# avx512-bf16 rung gives other stories than avx2 and scalar), so only the scalar twins give the
# same data on every x86-64 machine. The files' sha256 must match data.sha256 (the data the
# committed runs in runs/ trained on); a mismatch is an error naming the file.
# Needs build/ (models/canary/setup.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
data="${1:-/work/canary-data}"
build="${KVRT_BUILD:-$root/build}"
model="${STORIES_MODEL:-$root/models/stories260K.gguf}"
eval_tool="$build/models/canary/canary_eval"
mkdir -p "$data"

part() {  # NAME N FIRST_SEED: data/part_NAME, resumed from its complete lines
  local f="$data/part_$1" done=0
  if [ -f "$f" ]; then
    done=$(wc -l < "$f")
    head -n "$done" "$f" > "$f.tmp" && mv "$f.tmp" "$f"  # drop a partial last line
  fi
  [ "$done" -ge "$2" ] && return
  KVRT_ISA=scalar "$eval_tool" stories -m "$model" -n "$(($2 - done))" --seed "$(($3 + done))" \
    --temp 1.0 --max-tokens 512 >> "$f"
}
part a 500 1 &
part b 500 4001
wait $!
cat "$data/part_a" "$data/part_b" > "$data/stories_train.tsv"
part heldout 300 1000001 &
part nll 32 2000001
wait $!
cp "$data/part_heldout" "$data/stories_heldout.tsv"
cp "$data/part_nll" "$data/nll_texts.tsv"

py=/usr/bin/python3
$py "$here/heldout.py" --vocab "$model" --stories "$data/stories_heldout.tsv" \
  --train-stories "$data/stories_train.tsv" --per-bucket 24 --seed 11 -o "$data/val.tsv"
$py "$here/heldout.py" --vocab "$model" --stories "$data/stories_heldout.tsv" \
  --train-stories "$data/stories_train.tsv" --per-bucket 100 --seed 7 -o "$data/heldout.tsv" \
  --manifest "$data/heldout_cases"
long=(--buckets 2048-2560,2560-3072,3072-3584,3584-4000 --max-prompt 4090)
$py "$here/heldout.py" --vocab "$model" --stories "$data/stories_heldout.tsv" \
  --train-stories "$data/stories_train.tsv" --per-bucket 12 --seed 11 -o "$data/val_long.tsv" "${long[@]}"
$py "$here/heldout.py" --vocab "$model" --stories "$data/stories_heldout.tsv" \
  --train-stories "$data/stories_train.tsv" --per-bucket 50 --seed 7 -o "$data/heldout_long.tsv" \
  --manifest "$data/heldout_long_cases" "${long[@]}"
$py "$here/tokenizer_check.py" --vocab "$model" --eval-tool "$eval_tool" \
  "$data/nll_texts.tsv" "$data/heldout.tsv" "$data/stories_train.tsv"
(cd "$data" && sha256sum -c --quiet "$here/data.sha256") || {
  echo "prepare.sh: the data in $data differ from models/canary/data.sha256, the data the runs in" \
    "models/canary/runs trained on (another kvrt scalar path?): a resumed run would see other data" >&2
  exit 1
}
