#!/usr/bin/env bash
# KV-cache quality of kvrt's settings beside llama.cpp's cache types on the same model and tokens:
# kv_quality's table (mean KL to each runtime's own FP32 cache, top-1 agreement, bits/value), its
# peer rows made by peer_logits against the peer's libllama, with llama.cpp's Hadamard rotation on
# and off (LLAMA_ATTN_ROT_DISABLE=1). Builds nothing of the peer: run ../shared/tools/peer-llama.sh
# first (PEER_DIR, default /tmp/peer-llama). Without it, prints kvrt's rows alone.
#   tools/peer/kv_quality.sh [MODEL] [TEXT]   (defaults: models/canary.gguf and the texts of
#                                              validation/canary's cases; KVRT_CHUNKS=4, KVRT_N=960;
#                                              KVRT_JSON=FILE also writes the table as JSON)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${KVRT_BUILD:-$root/build}"
peer="${PEER_DIR:-${TMPDIR:-/tmp}/peer-llama}"
model="${1:-$root/models/canary.gguf}"
chunks="${KVRT_CHUNKS:-4}" n="${KVRT_N:-960}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

text="${2:-}"
if [ -z "$text" ]; then
  text="$work/canary.txt"
  python3 -c 'import sys, tomllib; print("\n".join(c["text"] for c in tomllib.load(open(sys.argv[1], "rb"))["case"]))' \
    "$root/validation/canary/manifest.toml" > "$text"
fi
"$root/tools/setup.sh"
"$build/bench/kv_quality" -m "$model" --text "$text" --chunks "$chunks" -n "$n" --settings "f32" \
  --dump-tokens "$work/tokens.txt" >/dev/null

peer_args=()
bin="$peer/src/build/bin"
if [ -f "$bin/libllama.so" ]; then
  g++ -O2 -std=c++17 -I"$peer/src/include" -I"$peer/src/ggml/include" "$root/tools/peer/peer_logits.cc" \
    -L"$bin" -lllama -lggml -lggml-base -Wl,-rpath,"$bin" -o "$work/peer_logits"
  "$work/peer_logits" "$model" "$work/tokens.txt" f32 "$work/ref.f32" 2>/dev/null
  # type, bits per value
  for tb in q8_0:8.5 q5_0:5.5 q4_1:5 q4_0:4.5 iq4_nl:4.5 q8_0/q4_0:6.5; do
    t="${tb%%:*}" bits="${tb##*:}" f="${t//\//_}"
    "$work/peer_logits" "$model" "$work/tokens.txt" "$t" "$work/$f.rot.f32" 2>/dev/null
    LLAMA_ATTN_ROT_DISABLE=1 "$work/peer_logits" "$model" "$work/tokens.txt" "$t" "$work/$f.norot.f32" 2>/dev/null
    peer_args+=(--peer "llama.cpp $t rot,$bits,$work/$f.rot.f32" --peer "llama.cpp $t,$bits,$work/$f.norot.f32")
  done
  peer_args+=(--peer-ref "$work/ref.f32")
  echo "peer: llama.cpp $(git -C "$peer/src" rev-parse --short HEAD) at $peer" >&2
else
  echo "kv_quality.sh: no peer build at $peer (run ../shared/tools/peer-llama.sh); kvrt rows only" >&2
fi
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), commit $(git -C "$root" rev-parse --short HEAD)"
"$build/bench/kv_quality" -m "$model" --text "$text" --chunks "$chunks" -n "$n" ${KVRT_SETTINGS:+--settings "$KVRT_SETTINGS"} \
  ${KVRT_JSON:+--json "$KVRT_JSON"} "${peer_args[@]}"
