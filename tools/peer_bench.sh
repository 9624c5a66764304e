#!/usr/bin/env bash
# kvrt beside llama.cpp in one run, interleaved step by step on the same GGUF files: llama-bench
# and `kvrt bench` at each thread count, then ratios (kvrt / llama.cpp) printed with lscpu's model
# name and the load average before every step. Builds nothing of the peer: it uses the build of
# ../shared/tools/peer-llama.sh (llama.cpp 80fb11ac); without it, it says so and stops.
#
#   tools/peer_bench.sh [options]
#     --peer DIR        peer-llama.sh's directory (default $PEER_DIR, else peer-llama.sh's own
#                       default ${TMPDIR:-/tmp}/peer-llama); the tools are in DIR/src/build/bin
#     --sections LIST   comma-separated, in this order (default weights,kv,arch,state,memory,quality):
#                       weights  decode at short context, 4096 and 8192 positions and prefill of 512
#                                tokens for each --types on the realistic synthetic shape
#                                (synth_model --type f16, quantized by the peer's llama-quantize);
#                                each runtime's default cache (kvrt f32, llama.cpp f16); where
#                                `kvrt info` offers bf16 products, kvrt's prefill with them too
#                       kv       decode at 8192 positions on the Q4_0 file: kvrt f32/q8/q4 caches
#                                against llama.cpp f16/q8_0/q4_0 with flash attention (-fa 1)
#                       arch     decode at short context and 8192 positions on each --arch-model
#                       state    prompt-cache file sizes: `kvrt run --prompt-cache` per KV setting
#                                and `llama-completion --prompt-cache` per cache type, same prompt
#                       memory   peak resident memory of `kvrt run` and `llama-completion` for each
#                                --types at -c 4096, same prompt, each runtime's default cache
#                       quality  tools/peer/kv_quality.sh (mean KL to each runtime's FP32 cache) on
#                                models/canary.gguf and, when ../shared/fixtures is there
#                                ($KVRT_FIXTURES_DIR), arch/qwen2-hd64.gguf
#     --types LIST      weight types of `weights` (default F16,Q8_0,Q4_0,Q4_K_M)
#     --threads LIST    thread counts (default 1,2)
#     --reps N          llama-bench repetitions; kvrt's prefill runs N+1 times, the first as
#                       warm-up as llama-bench's (default 2)
#     --arch-model FILE a model of the `arch` section (repeatable; default the Gemma-3-1B and
#                       Qwen3-0.6B shapes, synth_model --shape S --ctx 8192 --type q4_0, made once
#                       in build/models/)
#     --dir DIR         keep every program's JSON and the step list in DIR; runs append to it, so
#                       sections run separately render into one page (default: a temporary dir)
#     --from DIR        run nothing: render DIR
#     --page [FILE]     also write the page (default docs/results/<date>-<cpu>-peer.md)
#   Env: KVRT_BUILD (default build/); OMP_WAIT_POLICY for kvrt (default passive, as advised for a
#   shared machine in docs/performance.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${KVRT_BUILD:-$root/build}"
peer="${PEER_DIR:-${TMPDIR:-/tmp}/peer-llama}"
sections="weights,kv,arch,state,memory,quality"
types="F16,Q8_0,Q4_0,Q4_K_M"
threads="1,2"
reps=2
arch_models=()
dir="" from="" page=""
while (($#)); do
  case "$1" in
    --peer) peer="$2"; shift 2 ;;
    --sections) sections="$2"; shift 2 ;;
    --types) types="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --arch-model) arch_models+=("$2"); shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --from) from="$2"; shift 2 ;;
    --page)
      if [ $# -gt 1 ] && [ "${2#--}" = "$2" ]; then page="$2"; shift 2; else page=default; shift; fi ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "peer_bench.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$reps" =~ ^[1-9][0-9]?$ ]] || { echo "peer_bench.sh: --reps must be 1 to 99, not '$reps'" >&2; exit 2; }
for t in ${threads//,/ }; do
  [[ "$t" =~ ^[1-9][0-9]{0,2}$ ]] || { echo "peer_bench.sh: bad thread count '$t' in --threads" >&2; exit 2; }
done

cpu="$(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
[ -n "$cpu" ] || cpu="unknown CPU"
slug="$(printf '%s' "$cpu" | tr '[:upper:]' '[:lower:]' | sed -e 's/([^)]*)//g' -e 's/[^a-z0-9]\{1,\}/-/g' -e 's/^-//' -e 's/-$//' | cut -c1-48)"
[ "$page" != default ] || page="$root/docs/results/$(date -u +%Y-%m-%d)-$slug-peer.md"

# The page of DIR, naming the kvrt commit its run recorded (not this checkout's, for --from).
render() {
  local commit
  commit="$(sed -n 's/.*, kvrt \([0-9a-f]\{1,\}\),.*/\1/p' "$1/peer.txt" 2>/dev/null)"
  [ -n "$commit" ] || commit="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  python3 "$root/tools/peer/peer_page.py" "$1" "$cpu" "$commit" "${page:-}"
}

if [ -n "$from" ]; then
  [ -f "$from/steps.tsv" ] || { echo "peer_bench.sh: '$from' holds no steps.tsv of a peer_bench.sh run" >&2; exit 2; }
  render "$from"
  exit 0
fi

bin="$peer/src/build/bin"
# The peer's files a section needs, before any of its work.
need() {
  for tool; do
    if [ ! -e "$bin/$tool" ]; then
      echo "peer_bench.sh: no llama.cpp build at $peer ($bin/$tool is missing); build it with" \
        "../shared/tools/peer-llama.sh $peer, or pass --peer DIR" >&2
      exit 3
    fi
  done
}
for section in ${sections//,/ }; do
  case "$section" in
    weights|kv|arch) need llama-bench llama-quantize ;;
    state|memory) need llama-completion ;;
    quality) need libllama.so ;;
    *) echo "peer_bench.sh: unknown section '$section' (weights, kv, arch, state, memory, quality)" >&2; exit 2 ;;
  esac
done
kvrt="$build/tools/kvrt/kvrt"
synth="$build/tools/synth_model/synth_model"
for f in "$kvrt" "$synth"; do
  [ -x "$f" ] || { echo "peer_bench.sh: $f is missing: build kvrt first (docs/building-and-testing.md)" >&2; exit 3; }
done
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

if [ -z "$dir" ]; then
  dir="$(mktemp -d)"
  trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
if [ ! -f "$dir/peer.txt" ]; then
  printf 'llama.cpp %s (%s), kvrt %s, OMP_WAIT_POLICY=%s\n' "$(git -C "$peer/src" rev-parse --short=8 HEAD)" \
    "$peer" "$(git -C "$root" rev-parse --short=12 HEAD)" "$OMP_WAIT_POLICY" >"$dir/peer.txt"
fi

# One measured step: section, model label, threads, runtime, what, then the command, whose JSON
# goes to a new file step-*.json (unique, so that runs may share DIR). Appends a line to steps.tsv
# with the 1-minute load before it.
step() {
  local section="$1" label="$2" t="$3" runtime="$4" what="$5"
  shift 5
  local out load
  out="$(mktemp --suffix=.json "$dir/step-XXXXXX")"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  echo "peer_bench: [$section] $label t=$t $runtime $what (load $load)" >&2
  if [ "$runtime" = llama.cpp ]; then
    "$@" -o json >"$out" 2>"${out%.json}.log"
  else
    "$@" --json "$out" >/dev/null 2>"${out%.json}.log"
  fi || { tail -5 "${out%.json}.log" >&2; echo "peer_bench.sh: step failed: $*" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$section" "$label" "$t" "$runtime" "$what" "${out##*/}" \
    "$load" "${*/#$root\//}" >>"$dir/steps.tsv"
}

models="$build/models"
mkdir -p "$models/peer"
f16="$models/synth-1024-f16.gguf"  # the file tools/bench.sh makes
[ -f "$f16" ] || "$synth" -o "$f16" --type f16 >&2
# The realistic shape in TYPE: F16 as synth_model writes it, the others by llama-quantize.
weights_file() {
  local type="$1" f
  if [ "$type" = F16 ]; then echo "$f16"; return; fi
  f="$models/peer/synth-1024-${type,,}.gguf"
  if [ ! -f "$f" ]; then
    nice -n 10 "$bin/llama-quantize" "$f16" "$f.tmp" "$type" 2 >"$dir/quantize.log" 2>&1 ||
      { tail -5 "$dir/quantize.log" >&2; echo "peer_bench.sh: llama-quantize to $type failed" >&2; exit 1; }
    mv "$f.tmp" "$f"
  fi
  echo "$f"
}

decode_ctx="4096,8192"
# kvrt's bf16 products (AVX512-BF16 or AMX through oneDNN), where this CPU has them: a second
# prefill of 512 tokens in the weights section.
bf16=""
"$kvrt" info -m "$f16" 2>/dev/null | grep -q '^matmul bf16: *available' && bf16=1
for section in ${sections//,/ }; do
  case "$section" in
    weights)
      for type in ${types//,/ }; do
        m="$(weights_file "$type")"
        for t in ${threads//,/ }; do
          step weights "$type" "$t" llama.cpp "pp512, short decode" \
            "$bin/llama-bench" -m "$m" -t "$t" -p 512 -n 32 -r "$reps"
          step weights "$type" "$t" kvrt "pp512" "$kvrt" bench -m "$m" -t "$t" \
            --settings "$(printf 'f32;%.0s' $(seq 0 "$reps") | sed 's/;$//')" --ctx 512 --prefill-tokens 512 --decode-tokens 1
          if [ -n "$bf16" ]; then
            step weights "$type" "$t" kvrt "pp512" "$kvrt" bench -m "$m" -t "$t" --matmul bf16 \
              --settings "$(printf 'f32;%.0s' $(seq 0 "$reps") | sed 's/;$//')" --ctx 512 --prefill-tokens 512 --decode-tokens 1
          fi
          step weights "$type" "$t" llama.cpp "decode at depth" \
            "$bin/llama-bench" -m "$m" -t "$t" -p 0 -n 32 -d "$decode_ctx" -r "$reps"
          step weights "$type" "$t" kvrt "decode" "$kvrt" bench -m "$m" -t "$t" --settings f32 \
            --ctx "16,$decode_ctx" --prefill-tokens 16 --decode-tokens 32
        done
      done ;;
    kv)
      m="$(weights_file Q4_0)"
      for t in ${threads//,/ }; do
        for pair in f32:f16 q8:q8_0 q4:q4_0; do
          step kv Q4_0 "$t" llama.cpp "cache ${pair#*:}" "$bin/llama-bench" -m "$m" -t "$t" -p 0 -n 32 -d 8192 \
            -r "$reps" -fa 1 -ctk "${pair#*:}" -ctv "${pair#*:}"
          step kv Q4_0 "$t" kvrt "cache ${pair%%:*}" "$kvrt" bench -m "$m" -t "$t" --settings "${pair%%:*}" \
            --ctx 8192 --prefill-tokens 16 --decode-tokens 32
        done
      done ;;
    arch)
      if [ ${#arch_models[@]} -eq 0 ]; then
        for shape in gemma3-1b qwen3-0.6b; do
          f="$models/synth-$shape-q4_0.gguf"
          [ -f "$f" ] || "$synth" -o "$f" --shape "$shape" --ctx 8192 --type q4_0 >&2
          arch_models+=("$f")
        done
      fi
      for m in "${arch_models[@]}"; do
        [ -f "$m" ] || { echo "peer_bench.sh: --arch-model '$m' is not a file" >&2; exit 2; }
        for t in ${threads//,/ }; do
          step arch "$(basename "$m" .gguf)" "$t" llama.cpp "decode" \
            "$bin/llama-bench" -m "$m" -t "$t" -p 0 -n 32 -d 0,8192 -r "$reps"
          step arch "$(basename "$m" .gguf)" "$t" kvrt "decode" "$kvrt" bench -m "$m" -t "$t" --settings f32 \
            --ctx 16,8192 --prefill-tokens 16 --decode-tokens 32
        done
      done ;;
    state)
      "$root/tools/peer/state_sizes.sh" "$bin" "$kvrt" "$f16" "${threads%%,*}" "$dir" ;;
    memory)
      files=()
      for type in ${types//,/ }; do files+=("$type=$(weights_file "$type")"); done
      "$root/tools/peer/resident.sh" "$bin" "$kvrt" "${threads%%,*}" "$dir" "${files[@]}" ;;
    quality)
      quality_models=("$root/models/canary.gguf")
      fixture="${KVRT_FIXTURES_DIR:-$root/../shared/fixtures}/arch/qwen2-hd64.gguf"
      if [ -f "$fixture" ]; then quality_models+=("$fixture"); else echo "peer_bench.sh: no $fixture; canary only" >&2; fi
      for m in "${quality_models[@]}"; do
        out="$(mktemp --suffix=.json "$dir/step-XXXXXX")"
        load="$(cut -d' ' -f1 /proc/loadavg)"
        echo "peer_bench: [quality] $(basename "$m") (load $load)" >&2
        KVRT_JSON="$out" PEER_DIR="$peer" KVRT_BUILD="$build" "$root/tools/peer/kv_quality.sh" "$m" \
          >"${out%.json}.log" 2>&1 || { tail -5 "${out%.json}.log" >&2; exit 1; }
        printf 'quality\t%s\t-\tboth\tKL\t%s\t%s\t%s\n' "$(basename "$m" .gguf)" "${out##*/}" "$load" \
          "PEER_DIR=$peer tools/peer/kv_quality.sh ${m/#$root\//}" >>"$dir/steps.tsv"
      done ;;
  esac
done
render "$dir"
