"""The canary models in torch: each computes what kvrt computes for its GGUF architecture
(src/model/architecture.cc, src/model/layer_rows.cc, src/model/session.cc).

Every variant is pre-norm blocks with RMSNorm (eps 1e-5, the value synth_model writes), attention
with grouped KV heads (query head h reads KV head h // (n_heads / n_kv_heads)) and a gated
feed-forward; untied output matrix. What differs, per GGUF architecture (ARCHS):
  llama   RoPE on interleaved pairs (2i, 2i + 1), GGUF's llama convention, so Q and K weights
          are written as they are, with no permutation; SwiGLU; no biases.
  qwen3   RoPE on NeoX halves (i, i + head_dim / 2); a per-head RMSNorm of Q and of K over head_dim
          (one [head_dim] weight each, shared by the heads) after the projection, before RoPE.
  gemma3  NeoX RoPE; per-head Q/K norm; the embedding times sqrt(d_model); GeGLU (tanh gelu); an
          RMSNorm on each sublayer's output before the residual add (post_attention_norm,
          post_ffw_norm); layer il attends within a sliding window when il % 6 < 5 (a query at
          position p sees keys p - window + 1 .. p), with RoPE base rope_base_swa there and
          rope_base in the global layers.
  qwen2   NeoX RoPE; Q, K and V projections with biases. k_bias_outlier adds a fixed offset to
          channel k_bias_channel of every KV head's key bias (a buffer, not trained; the exported
          attn_k.bias is the trained bias plus it): Qwen2's key biases have a few channels an
          order of magnitude above the rest, which is what a compressed key cache meets there.
Queries are scaled by 1/sqrt(head_dim) in every variant (kvrt's QueryScale for these shapes).
RoPE frequencies are base^(-2i / head_dim). The first canary's angles are computed in double (as it
was trained); the others' (and canary-long's) by kvrt's float recurrence (ops::RopeTable, llama.cpp's
ggml_rope_cache_init), so torch and kvrt agree at 4096 positions too.
"""
import ctypes
import ctypes.util
import dataclasses
import math
import os

import numpy as np
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
    arch: str = "llama"           # the GGUF architecture (ARCHS)
    sliding_window: int = 0       # gemma3: the windowed layers' window (positions)
    window_period: int = 6        # gemma3: layer il is windowed when il % period < period - 1
    rope_base_swa: float = 10000.0  # gemma3: the windowed layers' RoPE base (rope.freq_base_swa)
    k_bias_outlier: float = 0.0   # qwen2: fixed offset of one key-bias channel per KV head
    k_bias_channel: int = 0       # qwen2: that channel (within the head)
    rope_float32: bool = False    # llama: RoPE angles by kvrt's float recurrence (the others always)


@dataclasses.dataclass(frozen=True)
class Arch:
    neox: bool       # RoPE on halves (else interleaved pairs)
    qk_norm: bool    # per-head RMSNorm of Q and K
    qkv_bias: bool   # biases on the Q, K and V projections
    gemma: bool      # scaled embedding, GeGLU, post-sublayer norms, sliding-window layers


ARCHS = {
    "llama": Arch(neox=False, qk_norm=False, qkv_bias=False, gemma=False),
    "qwen3": Arch(neox=True, qk_norm=True, qkv_bias=False, gemma=False),
    "gemma3": Arch(neox=True, qk_norm=True, qkv_bias=False, gemma=True),
    "qwen2": Arch(neox=True, qk_norm=False, qkv_bias=True, gemma=False),
}

# The canaries (train.py --variant). RoPE bases are the ones synth_model writes for the
# architecture (tools/synth_model/synth.cc, families()): the export has no other way to set them.
VARIANTS = {
    # The first canary: a llama, head_dim 64, GQA 2:1 (models/canary.gguf).
    "canary": {},
    # Qwen3-style: per-head Q/K RMSNorm, NeoX RoPE (base 1e6, Qwen3's), head_dim 128, GQA 2:1.
    "canary-qk": dict(arch="qwen3", head_dim=128, rope_base=1e6),
    # Gemma-3-style: six layers, five with a 128-position window (RoPE base 10000) and one global
    # (base 1e6), Q/K norm, the embedding scale, GeGLU and the sandwich norms.
    "canary-swa": dict(arch="gemma3", n_layers=6, rope_base=1e6, sliding_window=128),
    # Qwen2-style: Q/K/V biases; key channel 31 of every KV head (NeoX pair 31/63, the lowest
    # RoPE frequency, so the offset stays in that channel at every position) carries 16.
    "canary-kbias": dict(arch="qwen2", k_bias_outlier=16.0, k_bias_channel=31),
    # The first canary continued to 4096 positions (train.py's TRAIN_DEFAULTS: from
    # models/canary.gguf, the long curriculum), with kvrt's RoPE angles, which differ from the
    # double-precision ones it was trained with by up to 1.4e-4 rad at position 4095 (5e-6 at 512).
    "canary-long": dict(n_ctx=4096, rope_float32=True),
}


def variant_config(name, **overrides):
    if name not in VARIANTS:
        raise ValueError(f"unknown canary variant '{name}' (known: {', '.join(VARIANTS)})")
    return Config(**{**VARIANTS[name], **overrides})


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(n_ctx, head_dim, base):
    """cos, sin [n_ctx][head_dim / 2] with the angles computed in double (the llama canary's)."""
    i = torch.arange(head_dim // 2, dtype=torch.float64)
    freq = base ** (-2.0 * i / head_dim)
    angle = torch.arange(n_ctx, dtype=torch.float64)[:, None] * freq[None, :]
    return angle.cos().float(), angle.sin().float()


def powf(x, y):
    """C's powf, as kvrt's std::pow(float, float) calls it: numpy's float32 power can differ by an
    ulp (10000^(-2/64): 0.74989426 against powf's 0.74989420), and the recurrence below multiplies
    that error into every angle (4.7e-3 nats of NLL at 3600 positions)."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.powf.restype = ctypes.c_float
    libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]
    return np.float32(libm.powf(np.float32(x), np.float32(y)))


def rope_tables_f32(n_ctx, head_dim, base):
    """cos, sin [n_ctx][head_dim / 2] as kvrt's RopeTable computes them: theta_i = pos * step^i
    by a float recurrence, step = powf(base, -2 / head_dim); cos and sin of each float angle."""
    step = powf(base, np.float32(-2.0) / np.float32(head_dim))
    angle = np.empty((n_ctx, head_dim // 2), dtype=np.float32)
    theta = np.arange(n_ctx, dtype=np.float32)
    for i in range(head_dim // 2):
        angle[:, i] = theta
        theta = (theta * step).astype(np.float32)
    a = angle.astype(np.float64)
    return torch.from_numpy(np.cos(a).astype(np.float32)), torch.from_numpy(np.sin(a).astype(np.float32))


def rope(x, cos, sin, neox):
    """x [B][H][T][head_dim]: rotates pairs (2i, 2i + 1), or (i, i + head_dim / 2) for NeoX."""
    if neox:
        half = x.shape[-1] // 2
        x0, x1 = x[..., :half], x[..., half:]
        return torch.cat((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


def causal_mask(t, window=0):
    """[T][T]: 0 where query i sees key j (j <= i, and i - j < window when windowed), else -inf."""
    mask = torch.full((t, t), float("-inf")).triu(1)
    if window:
        mask = mask + torch.full((t, t), float("-inf")).tril(-window)
    return mask


class Attention(nn.Module):
    def __init__(self, c, window=0):
        super().__init__()
        self.c, self.arch, self.window = c, ARCHS[c.arch], window
        bias = self.arch.qkv_bias
        self.wq = nn.Linear(c.d_model, c.n_heads * c.head_dim, bias=bias)
        self.wk = nn.Linear(c.d_model, c.n_kv_heads * c.head_dim, bias=bias)
        self.wv = nn.Linear(c.d_model, c.n_kv_heads * c.head_dim, bias=bias)
        self.wo = nn.Linear(c.n_heads * c.head_dim, c.d_model, bias=False)
        if self.arch.qk_norm:
            self.q_norm = RMSNorm(c.head_dim, c.rms_eps)
            self.k_norm = RMSNorm(c.head_dim, c.rms_eps)
        if bias:
            offset = torch.zeros(c.n_kv_heads, c.head_dim)  # [KV][hd]
            offset[:, c.k_bias_channel] = c.k_bias_outlier
            self.register_buffer("k_bias_offset", offset.flatten(), persistent=False)

    def k_bias(self):
        """The key bias kvrt adds (attn_k.bias): the trained bias plus the fixed offset."""
        return self.wk.bias + self.k_bias_offset

    def forward(self, x, cos, sin, mask):
        """x [B][T][d_model]; mask [T][T] (0 or -inf: causal, and the window if any)."""
        c, (b, t, _) = self.c, x.shape
        group = c.n_heads // c.n_kv_heads
        k = self.wk(x)
        if self.arch.qkv_bias:
            k = k + self.k_bias_offset
        q = self.wq(x).view(b, t, c.n_heads, c.head_dim)  # [B][T][H][hd]
        k = k.view(b, t, c.n_kv_heads, c.head_dim)        # [B][T][KV][hd]
        v = self.wv(x).view(b, t, c.n_kv_heads, c.head_dim).transpose(1, 2)
        if self.arch.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q = rope(q.transpose(1, 2), cos, sin, self.arch.neox) * (1.0 / math.sqrt(c.head_dim))
        k = rope(k.transpose(1, 2), cos, sin, self.arch.neox)
        # The `group` query heads of one KV head as group * rows against that head's keys: one
        # matrix product per KV head, no copies of K and V. Query blocks of kBlock positions see
        # only the keys from the window's start (0 for a global layer) to their end, which skips
        # the masked parts of the scores.
        q = q.reshape(b * c.n_kv_heads, group, t, c.head_dim)
        k = k.reshape(b * c.n_kv_heads, t, c.head_dim)
        v = v.reshape(b * c.n_kv_heads, t, c.head_dim)
        outs = []
        for start in range(0, t, kBlock):
            end = min(t, start + kBlock)
            k0 = max(0, start - self.window + 1) if self.window else 0
            qb = q[:, :, start:end].reshape(b * c.n_kv_heads, group * (end - start), c.head_dim)
            scores = torch.baddbmm(mask[start:end, k0:end].repeat(group, 1), qb, k[:, k0:end].transpose(1, 2))
            outs.append((scores.softmax(-1) @ v[:, k0:end]).view(b * c.n_kv_heads, group, end - start, c.head_dim))
        out = torch.cat(outs, dim=2).view(b, c.n_heads, t, c.head_dim).transpose(1, 2)
        return self.wo(out.reshape(b, t, c.n_heads * c.head_dim))


class FeedForward(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gelu = ARCHS[c.arch].gemma
        self.w_gate = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.w_up = nn.Linear(c.d_model, c.d_ff, bias=False)
        self.w_down = nn.Linear(c.d_ff, c.d_model, bias=False)

    def forward(self, x):
        g = self.w_gate(x)
        g = F.gelu(g, approximate="tanh") if self.gelu else F.silu(g)
        return self.w_down(g * self.w_up(x))


class Block(nn.Module):
    def __init__(self, c, window=0):
        super().__init__()
        self.gemma = ARCHS[c.arch].gemma
        self.window = window
        self.attn_norm = RMSNorm(c.d_model, c.rms_eps)
        self.attn = Attention(c, window)
        if self.gemma:
            self.post_attn_norm = RMSNorm(c.d_model, c.rms_eps)
        self.ffn_norm = RMSNorm(c.d_model, c.rms_eps)
        self.ffn = FeedForward(c)
        if self.gemma:
            self.post_ffn_norm = RMSNorm(c.d_model, c.rms_eps)

    def forward(self, x, cos, sin, mask):
        a = self.attn(self.attn_norm(x), cos, sin, mask)
        x = x + (self.post_attn_norm(a) if self.gemma else a)
        f = self.ffn(self.ffn_norm(x))
        return x + (self.post_ffn_norm(f) if self.gemma else f)


class Canary(nn.Module):
    def __init__(self, c):
        super().__init__()
        if c.arch not in ARCHS:
            raise ValueError(f"unknown architecture '{c.arch}' (known: {', '.join(ARCHS)})")
        self.c, self.arch = c, ARCHS[c.arch]
        self.tok_embd = nn.Embedding(c.n_vocab, c.d_model)
        self.blocks = nn.ModuleList(Block(c, self.window_of(i)) for i in range(c.n_layers))
        self.out_norm = RMSNorm(c.d_model, c.rms_eps)
        self.output = nn.Linear(c.d_model, c.n_vocab, bias=False)
        tables = rope_tables if c.arch == "llama" and not c.rope_float32 else rope_tables_f32
        cos, sin = tables(c.n_ctx, c.head_dim, c.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        if c.sliding_window:
            cos, sin = tables(c.n_ctx, c.head_dim, c.rope_base_swa)
            self.register_buffer("cos_swa", cos, persistent=False)
            self.register_buffer("sin_swa", sin, persistent=False)
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2's scaled init of residual outputs
            if name.endswith("wo.weight") or name.endswith("w_down.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c.n_layers))

    def window_of(self, layer):
        """kvrt's ModelConfig::window_of for WindowLayers::kPattern (gemma3), 0 elsewhere."""
        c = self.c
        if not self.arch.gemma or not c.sliding_window:
            return 0
        return c.sliding_window if layer % c.window_period < c.window_period - 1 else 0

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, ids):
        """ids [B][T] -> logits [B][T][n_vocab]."""
        t = ids.shape[1]
        masks = {0: causal_mask(t)}
        x = self.tok_embd(ids)
        if self.arch.gemma:
            x = x * torch.tensor(math.sqrt(self.c.d_model), dtype=torch.float32)
        for blk in self.blocks:
            w = blk.window
            if w not in masks:
                masks[w] = causal_mask(t, w)
            cos, sin = (self.cos_swa, self.sin_swa) if w else (self.cos, self.sin)
            x = blk(x, cos[:t], sin[:t], masks[w])
        return self.output(self.out_norm(x))

    def gguf_tensors(self):
        """(GGUF tensor name, f32 tensor) in GGUF order: a Linear's [n_out][n_in] is dims
        [n_in, n_out] with dims[0] fastest, the same bytes. Names as llama.cpp's converter writes
        them for the architecture (synth_model reads each from its file)."""
        yield "token_embd.weight", self.tok_embd.weight
        yield "output_norm.weight", self.out_norm.weight
        yield "output.weight", self.output.weight
        for i, b in enumerate(self.blocks):
            p = f"blk.{i}."
            yield p + "attn_norm.weight", b.attn_norm.weight
            yield p + "attn_q.weight", b.attn.wq.weight
            yield p + "attn_k.weight", b.attn.wk.weight
            yield p + "attn_v.weight", b.attn.wv.weight
            if self.arch.qkv_bias:
                yield p + "attn_q.bias", b.attn.wq.bias
                yield p + "attn_k.bias", b.attn.k_bias()
                yield p + "attn_v.bias", b.attn.wv.bias
            if self.arch.qk_norm:
                yield p + "attn_q_norm.weight", b.attn.q_norm.weight
                yield p + "attn_k_norm.weight", b.attn.k_norm.weight
            yield p + "attn_output.weight", b.attn.wo.weight
            if self.arch.gemma:
                yield p + "post_attention_norm.weight", b.post_attn_norm.weight
                yield p + "post_ffw_norm.weight", b.post_ffn_norm.weight
            yield p + "ffn_norm.weight", b.ffn_norm.weight
            yield p + "ffn_gate.weight", b.ffn.w_gate.weight
            yield p + "ffn_up.weight", b.ffn.w_up.weight
            yield p + "ffn_down.weight", b.ffn.w_down.weight

    def synth_flags(self):
        """synth_model's flags for this model's shape and architecture."""
        c = self.c
        flags = ["--arch", c.arch, "--d-model", c.d_model, "--n-layers", c.n_layers, "--n-heads", c.n_heads,
                 "--n-kv-heads", c.n_kv_heads, "--head-dim", c.head_dim, "--d-ff", c.d_ff, "--ctx", c.n_ctx]
        if c.sliding_window:
            flags += ["--sliding-window", c.sliding_window]
        return " ".join(str(f) for f in flags)

    @torch.no_grad()
    def load_gguf(self, path):
        """Sets every tensor from a GGUF of this shape (an F32 or F16 export of a canary)."""
        import gguf_read
        _, tensors = gguf_read.read(path)
        for name, p in self.gguf_tensors():
            t = torch.from_numpy(tensors[name])
            if t.shape != p.shape:
                raise ValueError(f"{path}: tensor {name} has shape {list(t.shape)}, the model {list(p.shape)}")
            if name.endswith("attn_k.bias"):  # the file's bias holds the fixed offset
                attn = self.blocks[int(name.split(".")[1])].attn
                attn.wk.bias.copy_(t - attn.k_bias_offset)
            else:
                p.copy_(t)

    def dump_raw(self, directory):
        """Writes every tensor as directory/<name>.f32 for synth_model --weights-from."""
        os.makedirs(directory, exist_ok=True)
        for name, t in self.gguf_tensors():
            t.detach().float().contiguous().numpy().astype("<f4").tofile(os.path.join(directory, name + ".f32"))


Llama = Canary  # the first canary's name for the model class (diagnose.py, old scripts)
