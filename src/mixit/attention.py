"""The two token mixers: learned softmax attention (eq. 2.1) and MixiT's fixed mixing (eq. 2.3).

Both read ``x`` (B, T, n) and return (B, T, n); both expose ``param_groups()`` so a Variant can
freeze them by group name. Each has a ``hook_pattern`` tap: when a forward hook is registered
on it, the (B, H, T, T) attention pattern is computed and passed through it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mixit.config import ModelConfig


class Tap(nn.Identity):
    """A named place to read (or edit) an activation with a forward hook; free when unhooked."""

    @property
    def active(self) -> bool:
        return bool(self._forward_hooks)


def rope_tables(block_size: int, head_size: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin tables (T, hs/2) of rotary position embeddings."""
    inv_freq = base ** (-torch.arange(0, head_size, 2, dtype=torch.float32) / head_size)
    angles = torch.outer(torch.arange(block_size, dtype=torch.float32), inv_freq)  # (T, hs/2)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x_i, x_{i + hs/2}) of ``x`` (B, H, T, hs) by the position's angle."""
    x1, x2 = x.chunk(2, dim=-1)  # (B, H, T, hs/2) each
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


@dataclass
class LayerCache:
    """What incremental decoding keeps per layer: keys and values for softmax attention,
    values only for MixiT (its mixing weights do not depend on the input, so no keys)."""

    k: torch.Tensor | None = None  # (B, H, t, hs)
    v: torch.Tensor | None = None  # (B, H, t, hs)

    @property
    def length(self) -> int:
        return 0 if self.v is None else self.v.shape[2]

    def extend(self, name: str, new: torch.Tensor) -> torch.Tensor:
        """Append ``new`` (B, H, T, hs) to the cached ``k`` or ``v``; return all of it."""
        old = getattr(self, name)
        full = new if old is None else torch.cat([old, new], dim=2)  # (B, H, t + T, hs)
        setattr(self, name, full)
        return full


def _offset_causal_mask(T: int, start: int, device: torch.device) -> torch.Tensor:
    """(T, start + T): query i (at position start + i) may see keys 0 .. start + i."""
    keys = torch.arange(start + T, device=device)
    return keys[None, :] <= (start + torch.arange(T, device=device))[:, None]


class SoftmaxAttention(nn.Module):
    """Causal multi-head attention softmax(Q K^T / sqrt(n_h)) V with RoPE on Q and K (eq. 2.1)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        n = config.n_embd
        self.n_head = config.n_head
        # W_Q and W_K stay separate parameters so Frozen-QK freezes exactly them.
        self.w_q = nn.Linear(n, n, bias=False)
        self.w_k = nn.Linear(n, n, bias=False)
        self.w_v = nn.Linear(n, n, bias=False)
        self.w_o = nn.Linear(n, n, bias=False)
        cos, sin = rope_tables(config.block_size, n // config.n_head, config.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.hook_pattern = Tap()

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {"qk": [self.w_q.weight, self.w_k.weight], "vo": [self.w_v.weight, self.w_o.weight]}

    def forward(self, x: torch.Tensor, cache: LayerCache | None = None) -> torch.Tensor:
        B, T, n = x.shape
        H, hs = self.n_head, n // self.n_head
        start = 0 if cache is None else cache.length  # position of x's first token
        q = self.w_q(x).view(B, T, H, hs).transpose(1, 2)  # (B, H, T, hs)
        k = self.w_k(x).view(B, T, H, hs).transpose(1, 2)  # (B, H, T, hs)
        v = self.w_v(x).view(B, T, H, hs).transpose(1, 2)  # (B, H, T, hs)
        cos, sin = self.rope_cos[start : start + T], self.rope_sin[start : start + T]  # (T, hs/2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.extend("k", k), cache.extend("v", v)  # (B, H, start + T, hs)
        if start > 0:
            mask = _offset_causal_mask(T, start, x.device)  # (T, start + T)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T, hs)
        elif self.hook_pattern.active:
            scores = q @ k.transpose(-2, -1) / math.sqrt(hs)  # (B, H, T, T)
            causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            pattern = self.hook_pattern(scores.masked_fill(~causal, float("-inf")).softmax(-1))
            y = pattern @ v  # (B, H, T, hs)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, hs)
        y = y.transpose(1, 2).reshape(B, T, n)  # (B, T, n)
        return self.w_o(y)


def mixing_matrices(weights: torch.Tensor) -> torch.Tensor:
    """MixiT's causal mixing A = I + W^M - mean(W^M) (eq. 2.3) for raw weights (H, T, T).

    Under the causal mask row t sees positions 0..t, so the mean is taken over each row's visible
    prefix: every row of A sums to exactly 1 and A is lower-triangular. Row t only depends on
    the first t + 1 entries of row t of W^M, so the top-left (T', T') block of A is the matrix a
    shorter sequence of length T' would get.
    """
    T = weights.shape[-1]
    causal = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
    w = weights.masked_fill(~causal, 0.0)  # (H, T, T)
    visible = torch.arange(1, T + 1, dtype=weights.dtype)  # (T,) entries each row sees
    row_mean = w.sum(-1, keepdim=True) / visible[:, None]  # (H, T, 1)
    return torch.eye(T, dtype=weights.dtype) + (w - row_mean).masked_fill(~causal, 0.0)


def attention_sink_matrix(T: int) -> torch.Tensor:
    """Half the weight on the token itself, half on the first token (row 0: all on itself)."""
    sink = 0.5 * torch.eye(T)
    sink[:, 0] += 0.5
    sink[0, 0] = 1.0
    return sink  # (T, T)


def mixing_std(scale: str, n: int, n_head: int, T: int) -> torch.Tensor:
    """Standard deviation (H, 1, 1) of each head's W^M entries.

    - ``paper``: 1/sqrt(n m), eq. 2.3 read with appendix A (eq. A.4), the scale Theorem 2.1
      is about; with m = T the matrix is close to the identity at large n.
    - ``per-head-spread``: uniform in [1/sqrt(m n_h), 1/sqrt(m)] per head (the authors' code).
    - ``sequence``: 1/sqrt(m), section 2's "simplest case" of N(0, 1/m) entries.
    """
    if scale == "paper":
        return torch.full((n_head, 1, 1), 1.0 / math.sqrt(n * T))
    if scale == "sequence":
        return torch.full((n_head, 1, 1), 1.0 / math.sqrt(T))
    low, high = 1.0 / math.sqrt(T * (n // n_head)), 1.0 / math.sqrt(T)
    return low + (high - low) * torch.rand(n_head, 1, 1)


class FixedMixing(nn.Module):
    """MixiT attention: y_h = A_h @ V_h with A_h fixed at initialisation (eq. 2.3).

    The matrices are a registered buffer (H, T_max, T_max): saved with the weights, never
    trained, no queries, keys or RoPE. W^M entries are N(0, sigma^2), sigma from ``mixing_std``
    with m = ``block_size``.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        n, H, T = config.n_embd, config.n_head, config.block_size
        self.n_head = H
        self.w_v = nn.Linear(n, n, bias=False)
        self.w_o = nn.Linear(n, n, bias=False)
        sigma = mixing_std(config.mixing_scale, n, H, T)  # (H, 1, 1)
        mixing = mixing_matrices(sigma * torch.randn(H, T, T))  # (H, T, T)
        if config.attention_sink:
            mixing[0] = attention_sink_matrix(T)
        self.register_buffer("mixing", mixing)
        self.hook_pattern = Tap()

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {"vo": [self.w_v.weight, self.w_o.weight]}

    def forward(self, x: torch.Tensor, cache: LayerCache | None = None) -> torch.Tensor:
        B, T, n = x.shape
        H, hs = self.n_head, n // self.n_head
        start = 0 if cache is None else cache.length  # position of x's first token
        v = self.w_v(x).view(B, T, H, hs).transpose(1, 2)  # (B, H, T, hs)
        if cache is not None:
            v = cache.extend("v", v)  # (B, H, start + T, hs)
        # Rows start .. start + T of the fixed matrix (the top-left block for short inputs).
        mixing = self.mixing[:, start : start + T, : start + T]  # (H, T, start + T)
        if self.hook_pattern.active:
            pattern = self.hook_pattern(mixing.expand(B, *mixing.shape))  # (B, H, T, start + T)
            y = (pattern @ v).transpose(1, 2)  # (B, T, H, hs)
        else:
            # One contraction over key positions with the shared (H, T, T) matrices; a
            # broadcast matmul would first copy them B times (measured 20-25 % slower).
            y = torch.einsum("hts,bhsd->bthd", mixing, v)  # (B, T, H, hs)
        return self.w_o(y.reshape(B, T, n))  # (B, T, n)
