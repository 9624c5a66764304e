#!/usr/bin/python3
"""Reads the tensors of a GGUF file (v2/v3; F32 and F16 tensors) as numpy arrays, and shows the
key biases of a canary: what kvrt itself reads, not what torch saved.

  gguf_read.py FILE --key-bias     per layer and KV head: the largest |attn_k.bias| channel, its
                                   value, the largest |bias| of the other channels and the ratio
  gguf_read.py FILE                the tensors' names, shapes and types
"""
import argparse
import struct
import sys

import numpy as np

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_TYPES = {0: np.float32, 1: np.float16}  # ggml type id -> numpy type


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8", errors="replace")
        self.pos += n
        return s

    def value(self, t):
        if t in _SCALARS:
            return self.take(_SCALARS[t])
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        raise ValueError(f"GGUF value type {t} is not known")


def read(path):
    """(metadata dict, {name: numpy array in torch's [n_out][n_in] order})."""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.pos = 4
    version = r.take("<I")
    if version not in (2, 3):
        raise ValueError(f"{path}: GGUF version {version} is not read here")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    align = meta.get("general.alignment", 32)
    start = (r.pos + align - 1) // align * align
    tensors = {}
    for name, dims, t, offset in infos:
        if t not in _TYPES:
            raise ValueError(f"{path}: tensor {name} has type {t}; only F32 and F16 are read here")
        n = int(np.prod(dims))
        a = np.frombuffer(data, dtype=_TYPES[t], count=n, offset=start + offset).astype(np.float32)
        tensors[name] = a.reshape(list(reversed(dims)))  # ggml dims[0] is the fastest
    return meta, tensors


def key_bias_table(meta, tensors):
    arch = meta["general.architecture"]
    n_kv = meta[f"{arch}.attention.head_count_kv"]
    rows = ["| layer | KV head | channel | bias | largest other \\|bias\\| | ratio |", "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for layer in range(meta[f"{arch}.block_count"]):
        b = tensors[f"blk.{layer}.attn_k.bias"].reshape(n_kv, -1)
        for h in range(n_kv):
            ch = int(np.abs(b[h]).argmax())
            rest = np.abs(np.delete(b[h], ch)).max()
            rows.append(f"| {layer} | {h} | {ch} | {b[h, ch]:.3f} | {rest:.3f} | {abs(b[h, ch]) / rest:.1f} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--key-bias", action="store_true")
    a = ap.parse_args()
    meta, tensors = read(a.file)
    if a.key_bias:
        if not any(n.endswith("attn_k.bias") for n in tensors):
            sys.exit(f"gguf_read.py: {a.file} has no attn_k.bias tensors")
        print(key_bias_table(meta, tensors))
        return
    for name, t in tensors.items():
        print(name, list(t.shape))


if __name__ == "__main__":
    main()
