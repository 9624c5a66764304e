#!/usr/bin/python3
"""Which part of the held-out half a checkpoint fails to generalize to: names, relations, fact
templates or cue templates.

Builds held-out-style cases (heldout.CaseMaker: story filler, a distractor fact, the target's cue
at a distance in each bucket) from the training half with one part at a time swapped for its
held-out half, then with all of them (the held-out set itself), and prints the checkpoint's greedy
recall by distance bucket for each. Training fact templates that start with the value are skipped
(the held-out measure needs a space before it).

  diagnose.py [CHECKPOINT] [--per-bucket 12] [--data /work/canary-data]
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heldout  # noqa: E402
import model as canary_model  # noqa: E402
import spm  # noqa: E402
import tasks  # noqa: E402
import train  # noqa: E402

PARTS = ("names", "relations", "facts", "cues")


class MixedPools(tasks.Pools):
    """The training lists with the parts in `held` taken from the held-out half."""

    def __init__(self, held):
        super().__init__(False)
        other = tasks.Pools(True)
        for part in held:
            setattr(self, part, getattr(other, part))


def cases_for(maker, tok, per_bucket):
    cases = []
    for lo, hi in heldout.BUCKETS:
        rng = tasks.make_rng("diagnose", lo)
        while sum(1 for c in cases if lo <= c[1] < hi) < per_bucket:
            try:
                prompt, answer, dist = maker.make(rng, rng.randint(lo, hi - 1))
            except ValueError:  # a template that starts with its value
                continue
            if lo <= dist < hi and len(tok.encode(prompt, bos=True)) <= 1000:
                cases.append((f"c{len(cases)}", dist, prompt, answer))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint", nargs="?", default="/work/canary-data/run/checkpoint.pt")
    ap.add_argument("--per-bucket", type=int, default=12)
    ap.add_argument("--data", default="/work/canary-data")
    a = ap.parse_args()
    torch.set_num_threads(1)
    ckpt = torch.load(a.checkpoint)
    net = canary_model.Llama(canary_model.Config(**ckpt["config"]))
    net.load_state_dict(ckpt["model"])
    tok = spm.SpmTokenizer(heldout.DEFAULT_VOCAB)
    sentences = heldout.held_out_sentences(tok, os.path.join(a.data, "stories_heldout.tsv"))
    print(f"step {ckpt['step']}: greedy recall by distance, {a.per_bucket} cases per bucket")
    for held in [(), ("names",), ("relations",), ("facts",), ("cues",), PARTS]:
        maker = heldout.CaseMaker(tok, sentences, 1000)
        maker.pools = MixedPools(held)
        recall = train.recall_by_bucket(net, tok, cases_for(maker, tok, a.per_bucket))
        label = "all held out" if len(held) == len(PARTS) else "held-out " + held[0] if held else "all training"
        print(f"  {label:<22}" + "  ".join(f"{k} {v:.0%}" for k, v in recall.items()), flush=True)


if __name__ == "__main__":
    main()
