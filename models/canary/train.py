#!/usr/bin/python3
"""Trains the canary model (model.py) on stories with facts, cues and copies (data.py).

Resumes from RUN/checkpoint.pt when it exists: the data of step s is a pure function of (--seed,
s), so a resumed run sees the same batches as an uninterrupted one. A checkpoint is written every
--ckpt-minutes, at the end and on SIGTERM or SIGINT; the log (RUN/log.jsonl, one JSON object per
line) keeps the loss, the accuracy on copied tokens and, every --eval-every steps, greedy recall
by distance on a validation set of held-out cases (heldout.py with another seed) and the NLL on
held-out stories.
See README.md for the command lines (train.sh sets the threads and BLAS).
"""
import argparse
import json
import math
import os
import signal
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data  # noqa: E402
import heldout  # noqa: E402
import model as canary_model  # noqa: E402
import records  # noqa: E402
import spm  # noqa: E402
import tasks  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/work/canary-data", help="folder of prepare.sh's files")
    ap.add_argument("--run", default="/work/canary-data/run", help="checkpoint and log folder")
    ap.add_argument("--vocab", default=heldout.DEFAULT_VOCAB)
    ap.add_argument("--steps", type=int, default=None,
                    help="default 6000 (TRAIN_DEFAULTS: per variant); the learning rate decays over the last 20%%")
    ap.add_argument("--seq-len", type=int, default=None, help="default 1024 (TRAIN_DEFAULTS: per variant)")
    ap.add_argument("--lr", type=float, default=None, help="default 2e-3")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--answer-weight", type=float, default=4.0,
                    help="loss weight of copied tokens (answers, copies) against 1 for the others")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=None, help="default 400")
    ap.add_argument("--ckpt-minutes", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads; 1 because on a loaded 2-core machine 2 threads ran 10x slower")
    ap.add_argument("--max-steps-this-run", type=int, default=0, help="stop after this many steps (0 = no limit)")
    ap.add_argument("--variant", default="canary", choices=sorted(canary_model.VARIANTS),
                    help="the architecture and shape (model.VARIANTS); canary: the first canary, a llama")
    ap.add_argument("--curriculum", choices=sorted(data.CURRICULA), default=None, help="default standard")
    ap.add_argument("--init-from", default=None,
                    help="GGUF to start from (a path relative to the repository); default none")
    ap.add_argument("--val", default=None, help="validation cases in --data (default val.tsv)")
    for f in dataclasses_fields():
        ap.add_argument("--" + f.replace("_", "-"), type=int, default=None)
    a = ap.parse_args()
    for k, v in {**BASE_DEFAULTS, **TRAIN_DEFAULTS.get(a.variant, {})}.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a


# The recipe's defaults, and those of variants that differ. canary-long continues the first canary
# (models/canary.gguf, trained at 1024 positions) to 4096 positions at a quarter of its learning
# rate, for 2000 steps of 4096 tokens (data.LongCurriculum).
BASE_DEFAULTS = dict(seq_len=1024, lr=2e-3, steps=6000, eval_every=400, curriculum="standard", init_from="",
                     val="val.tsv")
TRAIN_DEFAULTS = {
    "canary-long": dict(seq_len=4096, lr=5e-4, steps=2000, eval_every=200, curriculum="long",
                        init_from="models/canary.gguf", val="val_long.tsv"),
}
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))


def dataclasses_fields():
    return ["d_model", "n_layers", "n_heads", "n_kv_heads", "head_dim", "d_ff"]


def lr_at(step, a):
    """Warm-up, then constant, then a linear decay to 10% over the last 20% of --steps."""
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    decay_start = int(0.8 * a.steps)
    if step < decay_start:
        return a.lr
    return a.lr * (1.0 - 0.9 * min(1.0, (step - decay_start) / max(1, a.steps - decay_start)))


def make_batch(builder, curriculum, a, step):
    n, batch_tokens = curriculum.shape()
    batch, answers, dense = [], [], []
    for i in range(batch_tokens // n):
        rng = tasks.make_rng("train", a.seed, step, i)
        ids, ans, is_copy = builder.sequence(rng, n, curriculum.max_distance(n), curriculum.copy_share(),
                                            curriculum.procedural())
        batch.append(ids)
        answers.append(ans)
        dense.append(is_copy)
    ids = torch.tensor(batch, dtype=torch.long)
    mask = torch.zeros(ids.shape[0], n, dtype=torch.bool)  # [B][T]: targets that are copies
    for b, ans in enumerate(answers):
        for pos in ans:
            mask[b, pos - 1] = True
    return ids, mask, torch.tensor(dense)


def encode_case(tok, prompt, answer):
    p = tok.encode(prompt, bos=True)
    return p, tok.encode(prompt + answer, bos=True)[len(p):]


@torch.no_grad()
def recall_by_bucket(net, tok, cases, batch=4):
    """Greedy exact match of each answer (argmax at every answer position given the right prefix
    is exactly what a greedy continuation produces), grouped by distance bucket."""
    net.eval()
    hits = {heldout.bucket_of(c[0]): [0, 0] for c in cases}
    for i in range(0, len(cases), batch):
        chunk = cases[i:i + batch]
        enc = [encode_case(tok, c[2], c[3]) for c in chunk]
        width = max(len(p) + len(ans) for p, ans in enc)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        for b, (p, ans) in enumerate(enc):
            ids[b, :len(p) + len(ans)] = torch.tensor(p + ans)
        pred = net(ids).argmax(-1)
        for b, ((p, ans), c) in enumerate(zip(enc, chunk)):
            ok = pred[b, len(p) - 1:len(p) - 1 + len(ans)].tolist() == ans
            hits[heldout.bucket_of(c[0])][0] += ok
            hits[heldout.bucket_of(c[0])][1] += 1
    net.train()
    return {k: h[0] / max(1, h[1]) for k, h in hits.items()}


@torch.no_grad()
def text_nll(net, tok, texts):
    """Mean NLL (nats per token) of each text from BOS, and over all tokens."""
    net.eval()
    total, n_total, per_text = 0.0, 0, []
    for text in texts:
        ids = torch.tensor([tok.encode(text, bos=True)])
        logits = net(ids[:, :-1]).double()
        nll = F.cross_entropy(logits[0], ids[0, 1:], reduction="sum").item()
        per_text.append(nll / (ids.shape[1] - 1))
        total += nll
        n_total += ids.shape[1] - 1
    net.train()
    return total / n_total, per_text


def load_config(a, ckpt):
    if ckpt:
        return canary_model.Config(**ckpt["config"])
    c = canary_model.variant_config(a.variant, n_ctx=a.seq_len)
    for f in dataclasses_fields():
        if getattr(a, f) is not None:
            setattr(c, f, getattr(a, f))
    return c


RECIPE_ARGS = ["variant", "seq_len", "lr", "warmup", "seed", "steps", "answer_weight", "curriculum", "init_from"]


def check_same_recipe(a, saved):
    """A resumed run takes the arguments that shape its data and learning rate as it started."""
    for k in RECIPE_ARGS:
        if k in saved and saved[k] != getattr(a, k):
            sys.exit(f"train.py: {a.run}/checkpoint.pt was trained with --{k.replace('_', '-')} {saved[k]}, "
                     f"not {getattr(a, k)}: resume with the same arguments (or use another --run)")


MOMENTS = ("exp_avg", "exp_avg_sq")


def compact_opt_state(opt):
    """The optimizer's state with AdamW's moments in bf16: a checkpoint of weights (f32) and
    moments takes 8 bytes a parameter, small enough to keep in git. Loading casts them back to
    f32 (Optimizer.load_state_dict casts floating state to the parameters' type); bf16's 8-bit
    mantissa moves a step's update by about 0.2%, once per resume."""
    sd = opt.state_dict()
    sd["state"] = {i: {k: (v.to(torch.bfloat16) if k in MOMENTS else v) for k, v in s.items()}
                   for i, s in sd["state"].items()}
    return sd


def save(path, net, opt, step, a, c, curriculum):
    tmp = path + ".tmp"
    torch.save({"model": net.state_dict(), "opt": compact_opt_state(opt), "step": step,
                "config": vars(c), "args": vars(a), "curriculum": curriculum.state()}, tmp)
    os.replace(tmp, path)


def evaluate(net, tok, val_cases, nll_texts):
    t0 = time.time()
    rec = recall_by_bucket(net, tok, val_cases)
    nll, _ = text_nll(net, tok, nll_texts)
    return {"recall": rec, "recall_all": sum(rec.values()) / len(rec), "heldout_nll": nll,
            "eval_s": round(time.time() - t0, 1)}


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    os.makedirs(a.run, exist_ok=True)
    ckpt_path = os.path.join(a.run, "checkpoint.pt")
    ckpt = torch.load(ckpt_path) if os.path.exists(ckpt_path) else None
    if ckpt:
        check_same_recipe(a, ckpt["args"])
    c = load_config(a, ckpt)
    torch.manual_seed(a.seed)
    net = canary_model.Canary(c)
    decay = [p for n, p in net.named_parameters() if p.dim() == 2 and "tok_embd" not in n]
    other = [p for n, p in net.named_parameters() if not (p.dim() == 2 and "tok_embd" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95))
    step = 0
    if ckpt:
        net.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        step = ckpt["step"]
    elif a.init_from:
        net.load_gguf(os.path.join(ROOT, a.init_from))
    tok = spm.SpmTokenizer(a.vocab)
    pool = data.StoryPool(os.path.join(a.data, "stories_train.tsv"), tok)
    builder = data.Builder(tok, pool)
    curriculum = data.CURRICULA[a.curriculum](c.n_ctx, ckpt["curriculum"] if ckpt else None)
    val_cases = records.read_records(os.path.join(a.data, a.val))
    nll_texts = [r[1] for r in records.read_records(os.path.join(a.data, "nll_texts.tsv"))]
    n_params = sum(p.numel() for p in net.parameters())
    print(f"{a.variant}: {n_params} parameters, config {vars(c)}, story pool {pool.n_tokens} tokens, "
          + (f"resuming at step {step}" if step else "starting"), flush=True)
    log = open(os.path.join(a.run, "log.jsonl"), "a")
    return train_loop(net, opt, builder, curriculum, a, c, step, tok, val_cases, nll_texts, log, ckpt_path)


def train_loop(net, opt, builder, curriculum, a, c, step, tok, val_cases, nll_texts, log, ckpt_path):
    last_ckpt, t_start, start_step = time.time(), time.time(), step
    # SIGTERM or SIGINT (the end of a session, `kill PID`) ends the run after the current step
    # with a checkpoint, so nothing trained is lost.
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.append(signum))
    while step < a.steps and not stop and not (a.max_steps_this_run and step - start_step >= a.max_steps_this_run):
        t0 = time.time()
        ids, copy_mask, dense = make_batch(builder, curriculum, a, step)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a)
        logits = net(ids[:, :-1])
        losses = F.cross_entropy(logits.reshape(-1, c.n_vocab), ids[:, 1:].reshape(-1), reduction="none")
        weights = 1.0 + (a.answer_weight - 1.0) * copy_mask.reshape(-1).float()
        loss = (losses * weights).sum() / weights.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        step += 1
        dt = time.time() - t0
        entry = {"step": step, "loss": round(losses.mean().item(), 4), "seq_len": ids.shape[1] - 1,
                 "max_d": curriculum.max_distance(ids.shape[1] - 1), "copy_share": round(curriculum.copy_share(), 3),
                 "lr": round(lr_at(step - 1, a), 6), "tok_s": round(ids[:, 1:].numel() / dt),
                 "procedural": curriculum.procedural()}
        hit = logits.argmax(-1) == ids[:, 1:]
        for key, rows in (("copy_acc", dense), ("answer_acc", ~dense)):  # dense copies; facts and copies in text
            m = copy_mask & rows[:, None]
            if m.any():
                entry[key] = round(hit[m].float().mean().item(), 4)
        curriculum.advance(ids[:, 1:].numel(), entry.get("copy_acc"))
        entry.update(tokens=curriculum.tokens, copy_avg=round(curriculum.copy_avg, 4), gate=curriculum.gate)
        if step % a.eval_every == 0 or step == a.steps:
            entry.update(evaluate(net, tok, val_cases, nll_texts))
        log.write(json.dumps(entry) + "\n")
        log.flush()
        if step % 10 == 0 or "recall" in entry:
            print(json.dumps(entry), flush=True)
        if time.time() - last_ckpt > 60 * a.ckpt_minutes or step == a.steps:
            save(ckpt_path, net, opt, step, a, c, curriculum)
            last_ckpt = time.time()
    save(ckpt_path, net, opt, step, a, c, curriculum)
    print(f"{a.variant}: stopped at step {step} after {time.time() - t_start:.0f} s", flush=True)
    return 128 + stop[0] if stop else 0  # a signal's stop tells train_variants.sh not to go on


if __name__ == "__main__":
    sys.exit(main())
