#!/usr/bin/python3
"""Summaries of kvrt's results on the canary model.

  report.py recall RESULTS.tsv        recall by distance bucket (canary_eval recall output)
  report.py nll TORCH.tsv KVRT.tsv... NLL per text: torch (f32, f16 weights) against kvrt runs
  report.py curve RUN/log.jsonl       the training curve: val recall by bucket at each evaluation
"""
import json
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
    for key in sorted({heldout.bucket_of(r[0]) for r in rows}, key=heldout.bucket_order):
        lo, hi = (int(x) for x in key.split("-"))
        hits = [int(r[2]) for r in rows if heldout.bucket_of(r[0]) == key]
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


def curve(path):
    """One row per evaluation. A step logged twice (a run resumed from an earlier checkpoint)
    counts once: its last entry, with an evaluation from an earlier one. tokens/s is the mean of
    the training steps since the last row; copy acc the curriculum's moving average where logged."""
    by_step = {}
    with open(path, encoding="utf-8") as f:
        for e in map(json.loads, f):
            by_step[e["step"]] = {**by_step.get(e["step"], {}), **e}
    buckets = sorted({k for e in by_step.values() for k in e.get("recall", {})}, key=heldout.bucket_order)
    print("| step | tokens | seq | max distance | copy acc (avg) | answer acc | " + " | ".join(buckets) +
          " | held-out NLL | tokens/s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in buckets) + " | ---: | ---: |")
    rates = []
    for step in sorted(by_step):
        e = by_step[step]
        rates.append(e["tok_s"])
        if "recall" not in e:
            continue
        recalls = " | ".join(f"{e['recall'][b]:.0%}" for b in buckets)
        print(f"| {step} | {e['tokens'] / 1e6:.2f}M | {e['seq_len']} | {e['max_d']} | {e.get('copy_avg', e.get('copy_acc', 0)):.2f} | "
              f"{e.get('answer_acc', 0):.2f} | {recalls} | {e['heldout_nll']:.3f} | {sum(rates) / len(rates):.0f} |")
        rates = []


if __name__ == "__main__":
    if sys.argv[1] == "recall":
        recall(sys.argv[2])
    elif sys.argv[1] == "curve":
        curve(sys.argv[2])
    else:
        nll(sys.argv[2], sys.argv[3:])
