"""The canary model in torch: llama as kvrt runs it (src/model/session.cc).

Pre-norm blocks with RMSNorm (eps 1e-5), attention with grouped KV heads (query head h reads KV
head h // (n_heads / n_kv_heads)), RoPE on interleaved pairs (2i, 2i + 1) with frequency
base^(-2i / head_dim) — GGUF's llama convention, so Q and K weights are written as they are, with
no permutation — and a SwiGLU feed-forward. No biases; untied output matrix.
"""
import dataclasses
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

kBlock = 256  # query positions per attention block


@dataclasses.dataclass
class Config:
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int = 2
    head_dim: int = 64
    d_ff: int = 384
    n_vocab: int = 512
    n_ctx: int = 1024
    rope_base: float = 10000.0
    rms_eps: float = 1e-5


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(n_ctx, head_dim, base):
    """cos, sin [n_ctx][head_dim / 2], as kvrt's RopeTable computes them."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    freq = base ** (-2.0 * i / head_dim)
    angle = torch.arange(n_ctx, dtype=torch.float64)[:, None] * freq[None, :]
    return angle.cos().float(), angle.sin().float()


def rope(x, cos, sin):
    """x [B][H][T][head_dim]: rotates pairs (2i, 2i + 1) by the angle of each position."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wq = nn.Linear(c.d_model, c.n_heads * c.head_dim, bias=False)
        self.wk = nn.Linear(c.d_model, c.n_kv_heads * c.head_dim, bias=False)
        self.wv = nn.Linear(c.d_model, c.n_kv_heads * c.head_dim, bias=False)
        self.wo = nn.Linear(c.n_heads * c.head_dim, c.d_model, bias=False)

    def forward(self, x, cos, sin, mask):
        """x [B][T][d_model]; mask [T][T] (0 or -inf above the diagonal)."""
        c, (b, t, _) = self.c, x.shape
        group = c.n_heads // c.n_kv_heads
        q = self.wq(x).view(b, t, c.n_heads, c.head_dim).transpose(1, 2)     # [B][H][T][hd]
        k = self.wk(x).view(b, t, c.n_kv_heads, c.head_dim).transpose(1, 2)  # [B][KV][T][hd]
        v = self.wv(x).view(b, t, c.n_kv_heads, c.head_dim).transpose(1, 2)
        q = rope(q, cos, sin) * (1.0 / math.sqrt(c.head_dim))
        k = rope(k, cos, sin)
        # The `group` query heads of one KV head as group * rows against that head's keys: one
        # matrix product per KV head, no copies of K and V. Query blocks of kBlock positions see
        # only the keys up to their end, which skips most of the masked half of the scores.
        q = q.reshape(b * c.n_kv_heads, group, t, c.head_dim)
        k = k.reshape(b * c.n_kv_heads, t, c.head_dim)
        v = v.reshape(b * c.n_kv_heads, t, c.head_dim)
        outs = []
        for start in range(0, t, kBlock):
            end = min(t, start + kBlock)
            qb = q[:, :, start:end].reshape(b * c.n_kv_heads, group * (end - start), c.head_dim)
            scores = torch.baddbmm(mask[start:end, :end].repeat(group, 1), qb, k[:, :end].transpose(1, 2))
            outs.append((scores.softmax(-1) @ v[:, :end]).view(b * c.n_kv_heads, group, end - start, c.head_dim))
        out = torch.cat(outs, dim=2).view(b, c.n_heads, t, c.head_dim).transpose(1, 2)
        return self.wo(out.reshape(b, t, c.n_heads * c.head_dim))


class FeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.w_gate = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.w_up = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.w_down = nn.Linear(c.d_ff, c.d_model, bias=False)

    def forward(self, x):
        return self.w_down(F.silu(self.w_gate(x)) * self.w_up(x))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn_norm = RMSNorm(c.d_model, c.rms_eps)
        self.attn = Attention(c)
        self.ffn_norm = RMSNorm(c.d_model, c.rms_eps)
        self.ffn = FeedForward(c)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.tok_embd = nn.Embedding(c.n_vocab, c.d_model)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.out_norm = RMSNorm(c.d_model, c.rms_eps)
        self.output = nn.Linear(c.d_model, c.n_vocab, bias=False)
        cos, sin = rope_tables(c.n_ctx, c.head_dim, c.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual outputs
            if name.endswith("wo.weight") or name.endswith("w_down.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c.n_layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def forward(self, ids):
        """ids [B][T] -> logits [B][T][n_vocab]."""
        t = ids.shape[1]
        mask = torch.full((t, t), float("-inf")).triu(1)
        cos, sin = self.cos[:t], self.sin[:t]
        x = self.tok_embd(ids)
        for blk in self.blocks:
            x = blk(x, cos, sin, mask)
        return self.output(self.out_norm(x))

    def gguf_tensors(self):
        """(GGUF tensor name, f32 tensor) in GGUF order: a Linear's [n_out][n_in] is dims
        [n_in, n_out] with dims[0] fastest, the same bytes."""
        yield "token_embd.weight", self.tok_embd.weight
        yield "output_norm.weight", self.out_norm.weight
        yield "output.weight", self.output.weight
        for i, b in enumerate(self.blocks):
            p = f"blk.{i}."
            yield p + "attn_norm.weight", b.attn_norm.weight
            yield p + "attn_q.weight", b.attn.wq.weight
            yield p + "attn_k.weight", b.attn.wk.weight
            yield p + "attn_v.weight", b.attn.wv.weight
            yield p + "attn_output.weight", b.attn.wo.weight
            yield p + "ffn_norm.weight", b.ffn_norm.weight
            yield p + "ffn_gate.weight", b.ffn.w_gate.weight
            yield p + "ffn_up.weight", b.ffn.w_up.weight
            yield p + "ffn_down.weight", b.ffn.w_down.weight

    def dump_raw(self, directory):
        """Writes every tensor as directory/<name>.f32 for synth_model --weights-from."""
        os.makedirs(directory, exist_ok=True)
        for name, t in self.gguf_tensors():
            t.detach().float().contiguous().numpy().astype("<f4").tofile(os.path.join(directory, name + ".f32"))
