#!/usr/bin/python3
"""Checks that kvrt computes what torch computes for each canary variant: a short run of train.py
(a few steps, into a temporary folder), then its checkpoint exported as export.sh does (raw f32
tensors, synth_model --weights-from, F32 GGUF) and the NLL of every token of a few long texts
compared between torch (one forward pass) and kvrt (canary_eval token-nll: the decode path, one
token per eval). The texts are stories joined up to the model's context (less 24 tokens).

Each variant is compared twice: as trained, and with every tensor drawn anew (matrices at a gain
that makes attention and logits sharp, norm weights around 1, biases around 0 with the key-bias
offset kept), so that a norm applied to the wrong tensor, a bias left out or a window one position
off changes the numbers by more than the bound. A negative control runs the randomized torch model
with one detail of its architecture changed (RoPE pairing, or the window one position wider) and
must miss the bound: the comparison can tell.

  check_export.py [--variant V ...] [--steps 2] [--data /work/canary-data] [--build build]
Exit code 0 when every comparison is within --tolerance (nats per token) and every control is not.
"""
import argparse
import copy
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heldout  # noqa: E402
import model as canary_model  # noqa: E402
import records  # noqa: E402
import spm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))


def long_texts(path, tok, n_texts, max_tokens):
    """n_texts texts, each stories joined while they stay under max_tokens tokens (BOS included)."""
    stories = [r[1] for r in records.read_records(path)]
    texts, cur = [], ""
    for s in stories:
        joined = (cur + " " + s) if cur else s
        if len(tok.encode(joined, bos=True)) > max_tokens:
            if cur:
                texts.append(cur)
            cur = s
            if len(texts) == n_texts:
                break
        else:
            cur = joined
    return [(f"t{i}", t) for i, t in enumerate(texts[:n_texts])]


@torch.no_grad()
def torch_token_nll(net, tok, texts):
    out = []
    for _, text in texts:
        ids = torch.tensor([tok.encode(text, bos=True)])
        logits = net(ids[:, :-1]).double()
        out.append(F.cross_entropy(logits[0], ids[0, 1:], reduction="none").tolist())
    return out


def kvrt_token_nll(net, texts, work, a):
    raw = os.path.join(work, "raw")
    net.dump_raw(raw)
    gguf = os.path.join(work, "model-f32.gguf")
    subprocess.run([os.path.join(a.build, "tools/synth_model/synth_model"), "-o", gguf, "--type", "f32",
                    *net.synth_flags().split(), "--vocab-from", a.vocab, "--weights-from", raw,
                    "--name", "check"], check=True, stdout=subprocess.DEVNULL)
    tsv = os.path.join(work, "texts.tsv")
    records.write_records(tsv, texts)
    res = subprocess.run([os.path.join(a.build, "models/canary/canary_eval"), "token-nll", "-m", gguf, "-i", tsv,
                          "--threads", "1"], check=True, capture_output=True, text=True)
    return [[float(x) for x in line.split("\t")[1].split()] for line in res.stdout.splitlines()]


def largest_difference(x, y):
    assert [len(r) for r in x] == [len(r) for r in y], "torch and kvrt tokenized differently"
    return max(abs(p - q) for rx, ry in zip(x, y) for p, q in zip(rx, ry))


@torch.no_grad()
def randomize(net, seed):
    """Every tensor drawn anew: matrices N(0, gain / sqrt(n_in)) (gain 1.5 for Q, K and the
    output, so that attention and logits are sharp), norm weights N(1, 0.3), biases N(0, 0.5)."""
    g = torch.Generator().manual_seed(seed)
    for name, p in net.named_parameters():
        if p.dim() == 2:
            gain = 1.5 if (".wq." in name or ".wk." in name or name.startswith("output")) else 1.0
            p.copy_(torch.randn(p.shape, generator=g) * gain / p.shape[1] ** 0.5)
        elif name.endswith("bias"):
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        else:
            p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))


def control_of(net):
    """The same weights in a torch model with one detail of the architecture changed."""
    c = copy.copy(net.c)
    other = canary_model.Canary(c)
    other.load_state_dict(net.state_dict())
    if c.sliding_window:
        for blk in other.blocks:  # the window one position wider
            if blk.window:
                blk.window += 1
                blk.attn.window += 1
        return other, f"window {c.sliding_window + 1} in place of {c.sliding_window}"
    arch = canary_model.ARCHS[c.arch]
    for blk in other.blocks:
        blk.attn.arch = canary_model.Arch(not arch.neox, arch.qk_norm, arch.qkv_bias, arch.gemma)
    return other, "the other RoPE pairing"


def short_run(variant, run, a):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               LD_LIBRARY_PATH="/usr/lib/x86_64-linux-gnu/openblas-openmp:" + os.environ.get("LD_LIBRARY_PATH", ""))
    subprocess.run([sys.executable, os.path.join(HERE, "train.py"), "--variant", variant, "--run", run,
                    "--data", a.data, "--vocab", a.vocab, "--max-steps-this-run", str(a.steps),
                    "--eval-every", "1000000"], check=True, env=env, stdout=subprocess.DEVNULL)
    ckpt = torch.load(os.path.join(run, "checkpoint.pt"))
    assert ckpt["step"] == a.steps and ckpt["args"]["variant"] == variant
    assert all(s["exp_avg"].dtype == torch.bfloat16 for s in ckpt["opt"]["state"].values())
    net = canary_model.Canary(canary_model.Config(**ckpt["config"]))
    net.load_state_dict(ckpt["model"])
    return net, os.path.getsize(os.path.join(run, "checkpoint.pt"))


def check_variant(variant, tok, a):
    ok = True
    with tempfile.TemporaryDirectory(prefix=f"check-{variant}-") as tmp:
        net, size = short_run(variant, os.path.join(tmp, "run"), a)
        n_params = sum(p.numel() for p in net.parameters())
        # Texts as long as the context allows (stories joined), so every position is compared.
        texts = long_texts(os.path.join(a.data, "nll_texts.tsv"), tok, a.texts, net.c.n_ctx - 24)
        print(f"{variant}: {n_params} parameters, {net.c.arch}; a {a.steps}-step run's checkpoint: {size} bytes; "
              f"texts of {', '.join(str(len(tok.encode(t, bos=True))) for _, t in texts)} tokens")
        net.eval()
        for label in ("as trained", "randomized"):
            if label == "randomized":
                randomize(net, 1)
            theirs = kvrt_token_nll(net, texts, os.path.join(tmp, label.replace(" ", "-")), a)
            diff = largest_difference(torch_token_nll(net, tok, texts), theirs)
            n_tokens = sum(len(r) for r in theirs)
            verdict = "ok" if diff <= a.tolerance else "DIFFERS"
            ok &= diff <= a.tolerance
            print(f"  {label}: largest per-token NLL difference torch/kvrt {diff:.2e} over {n_tokens} tokens: {verdict}")
        control, what = control_of(net)
        control.eval()
        diff = largest_difference(torch_token_nll(control, tok, texts), theirs)
        ok &= diff > a.tolerance
        print(f"  control ({what}): {diff:.2e}: {'ok, above the bound' if diff > a.tolerance else 'NOT DETECTED'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", nargs="*", default=sorted(canary_model.VARIANTS))
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--data", default="/work/canary-data")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--vocab", default=heldout.DEFAULT_VOCAB)
    ap.add_argument("--texts", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=1e-3, help="nats per token")
    a = ap.parse_args()
    torch.set_num_threads(1)
    tok = spm.SpmTokenizer(a.vocab)
    results = [check_variant(v, tok, a) for v in a.variant]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
