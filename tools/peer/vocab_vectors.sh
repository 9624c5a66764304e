#!/usr/bin/env bash
# Makes tokenizer test vectors with the peer's tokenizer: the gpt-2 vocabulary and merges
# (tests/data/vocab/ggml-vocab-gpt-2.gguf) with tokenizer.ggml.pre set to PRE, tokenized by
# peer_tokenize (libllama's llama_tokenize as `llama-tokenize --no-bos --no-parse-special --ids`
# calls it) on every string of tests/data/vocab/ggml-vocab-gpt-2-pre-PRE.gguf.inp, written as that
# .inp's .out: one line of ids per string. The tests make the same copy of the vocabulary
# themselves (tests/vocab_copy.h), so only .inp and .out are vendored. Builds nothing of the peer:
# run ../shared/tools/peer-llama.sh first.
#   tools/peer/vocab_vectors.sh PRE...   (e.g. tekken gpt-4o; PEER_DIR as for tools/peer_bench.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
peer="${PEER_DIR:-${TMPDIR:-/tmp}/peer-llama}"
bin="$peer/src/build/bin"
[ -f "$bin/libllama.so" ] || { echo "vocab_vectors.sh: no $bin/libllama.so: build it with ../shared/tools/peer-llama.sh $peer" >&2; exit 3; }
[ $# -gt 0 ] || { echo "usage: vocab_vectors.sh PRE..." >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++17 -I"$peer/src/include" -I"$peer/src/ggml/include" "$root/tools/peer/peer_tokenize.cc" \
  -L"$bin" -lllama -lggml -lggml-base -Wl,-rpath,"$bin" -o "$work/peer_tokenize"
vocab="$root/tests/data/vocab"
for pre in "$@"; do
  inp="$vocab/ggml-vocab-gpt-2-pre-$pre.gguf.inp"
  [ -f "$inp" ] || { echo "vocab_vectors.sh: no $inp (copy ggml-vocab-gpt-2.gguf.inp and add strings)" >&2; exit 2; }
  # A vocabulary-only GGUF has no tensor data to realign, so the string value can change length.
  python3 - "$vocab/ggml-vocab-gpt-2.gguf" "$work/vocab.gguf" "$pre" <<'PY'
import struct, sys
src, dst, pre = sys.argv[1:4]
b = open(src, "rb").read()
key = b"tokenizer.ggml.pre"
i = b.index(struct.pack("<Q", len(key)) + key + struct.pack("<I", 8)) + 8 + len(key) + 4
n = struct.unpack_from("<Q", b, i)[0]
v = pre.encode()
open(dst, "wb").write(b[:i] + struct.pack("<Q", len(v)) + v + b[i + 8 + n:])
PY
  "$work/peer_tokenize" "$work/vocab.gguf" "$inp" "${inp%.inp}.out"
  echo "${inp%.inp}.out: $(wc -l <"${inp%.inp}.out") strings"
done
