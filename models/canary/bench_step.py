#!/usr/bin/python3
"""Tokens/s of one training step (forward, backward, AdamW) of every canary variant on one thread,
the variants in turn for ROUNDS rounds, so that a busy machine slows them alike and their ratios
hold. Steps of 4096 tokens in sequences of SEQ; random token ids (speed does not depend on them).

  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp bench_step.py SEQ ROUNDS
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as canary_model  # noqa: E402


def main():
    seq, rounds = int(sys.argv[1]), int(sys.argv[2])
    torch.set_num_threads(1)
    nets = {k: canary_model.Canary(canary_model.variant_config(k, n_ctx=max(seq, 1024)))
            for k in canary_model.VARIANTS}
    opts = {k: torch.optim.AdamW(n.parameters(), lr=1e-3) for k, n in nets.items()}
    ids = torch.randint(0, 512, (max(1, 4096 // seq), seq + 1))
    rates = {k: [] for k in nets}
    for _ in range(rounds):
        for k, net in nets.items():
            t0 = time.time()
            logits = net(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
            opts[k].zero_grad()
            loss.backward()
            opts[k].step()
            rates[k].append(ids[:, 1:].numel() / (time.time() - t0))
    for k, v in rates.items():
        print(f"seq {seq}: {k}: {sum(p.numel() for p in nets[k].parameters())} parameters, tokens/s "
              f"median {sorted(v)[len(v) // 2]:.0f}, best {max(v):.0f}, rounds {[round(x) for x in v]}")


if __name__ == "__main__":
    main()
