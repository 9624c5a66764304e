#!/usr/bin/python3
"""Summaries of kvrt's results on the canary model.

  report.py recall RESULTS.tsv        recall by distance bucket (canary_eval recall output)
  report.py nll TORCH.tsv KVRT.tsv... NLL per text: torch (f32, f16 weights) against kvrt runs
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heldout  # noqa: E402
import records  # noqa: E402


def wilson(k, n, z=1.96):
    if n == 0:
        return 0.0, 0.0
    p = k / n
    d = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, mid - half), min(1.0, mid + half)


def recall(path):
    rows = records.read_records(path)
    print("| distance (tokens) | cases | recalled | recall | 95% interval |")
    print("| --- | ---: | ---: | ---: | --- |")
    total_k = 0
    for lo, hi in heldout.BUCKETS:
        hits = [int(r[2]) for r in rows if lo <= int(r[1]) < hi]
        k, n = sum(hits), len(hits)
        total_k += k
        a, b = wilson(k, n)
        print(f"| {lo}-{hi} | {n} | {k} | {k / max(1, n):.1%} | [{a:.1%}, {b:.1%}] |")
    a, b = wilson(total_k, len(rows))
    print(f"| all | {len(rows)} | {total_k} | {total_k / max(1, len(rows)):.1%} | [{a:.1%}, {b:.1%}] |")


def nll(torch_path, kvrt_paths):
    torch_rows = records.read_records(torch_path)
    t32 = [float(r[1]) for r in torch_rows]
    t16 = [float(r[2]) for r in torch_rows]
    print(f"torch f32 weights: mean NLL {sum(t32) / len(t32):.6f} nats/token over {len(t32)} texts")
    print(f"torch f16 weights: mean NLL {sum(t16) / len(t16):.6f}")
    for p in kvrt_paths:
        k = [float(r[2]) for r in records.read_records(p)]
        ref = t16 if "f16" in os.path.basename(p) else t32
        diff = max(abs(x - y) for x, y in zip(k, ref))
        print(f"kvrt {os.path.basename(p)}: mean NLL {sum(k) / len(k):.6f}; largest per-text difference "
              f"from torch ({'f16' if ref is t16 else 'f32'} weights) {diff:.1e} (texts' means have 6 decimals)")


if __name__ == "__main__":
    if sys.argv[1] == "recall":
        recall(sys.argv[2])
    else:
        nll(sys.argv[2], sys.argv[3:])
