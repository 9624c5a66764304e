#!/usr/bin/python3
"""Writes a trained checkpoint's tensors as raw f32 files for synth_model --weights-from, plus
the architecture and shape (shape.txt: synth_model flags) and torch's NLL on the NLL texts, with
the weights as trained (f32) and with the matrices rounded to f16 as the F16 GGUF stores them
(torch_nll.tsv). Any variant of model.VARIANTS: the checkpoint's config names it.

  export.py --checkpoint RUN/checkpoint.pt --texts nll_texts.tsv --out DIR
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heldout  # noqa: E402
import model as canary_model  # noqa: E402
import records  # noqa: E402
import spm  # noqa: E402
import train  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--vocab", default=heldout.DEFAULT_VOCAB)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(2)
    ckpt = torch.load(a.checkpoint)
    c = canary_model.Config(**ckpt["config"])
    net = canary_model.Canary(c)
    net.load_state_dict(ckpt["model"])
    net.dump_raw(os.path.join(a.out, "raw"))
    with open(os.path.join(a.out, "shape.txt"), "w") as f:
        f.write(net.synth_flags() + "\n")
    tok = spm.SpmTokenizer(a.vocab)
    texts = records.read_records(a.texts)
    _, nll32 = train.text_nll(net, tok, [t[1] for t in texts])
    with torch.no_grad():
        for _, p in net.gguf_tensors():
            if p.dim() == 2:
                p.copy_(p.half().float())
    _, nll16 = train.text_nll(net, tok, [t[1] for t in texts])
    records.write_records(os.path.join(a.out, "torch_nll.tsv"),
                          [(t[0], f"{x:.6f}", f"{y:.6f}") for t, x, y in zip(texts, nll32, nll16)])
    print(f"export.py: step {ckpt['step']}, {sum(p.numel() for p in net.parameters())} parameters -> {a.out}")


if __name__ == "__main__":
    main()
