"""The paper's two token mixers: learned softmax attention (eq. 2.1) and MixiT's fixed mixing
(eq. 2.3); ``mixit.models.mixers`` holds the rest and the registry a Variant names them in.

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

from .shape import ModelShape


class Tap(nn.Identity):
    """A named place to read (or edit) an activation with a forward hook; free when unhooked."""

    @property
    def active(self) -> bool:
        return bool(self._forward_hooks)


class Projection(nn.Linear):
    """A linear map whose output is multiplied by a fixed ``multiplier``: the width factor
    sqrt(base / fan_in) of ``model.width_scaling`` (1.0 when it is off)."""

    def __init__(self, fan_in: int, fan_out: int, bias: bool, multiplier: float = 1.0) -> None:
        super().__init__(fan_in, fan_out, bias=bias)
        self.multiplier = multiplier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return y if self.multiplier == 1.0 else y * self.multiplier


def projection(
    config: ModelShape,
    fan_in: int,
    fan_out: int,
    base: float | None = None,
    bias: bool | None = None,
) -> Projection:
    """A projection as the config builds it: with ``config.bias`` unless ``bias`` says
    otherwise, with the width factor sqrt(base / fan_in) under ``config.width_scaling``
    (``base`` defaults to ``config.width_base``)."""
    base = config.width_base if base is None else base
    multiplier = math.sqrt(base / fan_in) if config.width_scaling else 1.0
    return Projection(fan_in, fan_out, config.bias if bias is None else bias, multiplier)


@dataclass(frozen=True)
class MixerTraits:
    """What a token mixer needs from the rest of the model, read by model, generation,
    export and benchmarks instead of branching on the kind of attention."""

    # "rope" (rotated queries and keys), "learned" (absolute, added at the input) or, for a
    # hybrid of both kinds of layer, "rope+learned".
    positions: str
    cached: tuple[str, ...]  # what incremental decoding keeps per layer: ("k", "v") or ("v",)
    causal: bool  # whether position t reads positions <= t only
    exportable: bool  # whether a Hugging Face LlamaForCausalLM can hold it
    projections: int  # n x n weight matrices per layer: W_Q, W_K, W_V, W_O, or fewer
    # The (H, T, T) mixing matrices each layer holds: "none", "fixed" (buffers) or "trained"
    # (parameters).
    matrices: str

    @property
    def learned_positions(self) -> bool:
        """Whether the model adds a learned position table at its input."""
        return "learned" in self.positions.split("+")

    @property
    def rope(self) -> bool:
        """Whether some layer rotates its queries and keys."""
        return "rope" in self.positions.split("+")


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
    values only for MixiT's family (``mixit.models.mixers``: its mixing weights do not depend
    on the input, so no keys). The causal mean and no mixing keep every value too, though a
    running sum, or the last value, would do: the one cache serves the whole family."""

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


def offset_causal_mask(T: int, start: int, device: torch.device) -> torch.Tensor:
    """(T, start + T): query i (at position start + i) may see keys 0 .. start + i."""
    keys = torch.arange(start + T, device=device)
    return keys[None, :] <= (start + torch.arange(T, device=device))[:, None]


class SoftmaxAttention(nn.Module):
    """Causal multi-head attention softmax(Q K^T / sqrt(n_h)) V with RoPE on Q and K (eq. 2.1)."""

    def __init__(self, config: ModelShape) -> None:
        super().__init__()
        n = config.n_embd
        self.n_head = config.n_head
        # W_Q and W_K stay separate parameters so Frozen-QK freezes exactly them.
        self.w_q = projection(config, n, n)
        self.w_k = projection(config, n, n)
        self.w_v = projection(config, n, n)
        self.w_o = projection(config, n, n)
        self.rope_base = config.rope_base
        cos, sin = rope_tables(config.block_size, n // config.n_head, config.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.hook_pattern = Tap()
        # The attention pattern spelt out instead of the fused kernel: SDPA has no batching
        # rule, so members trained as one batched model (torch.func.vmap) set this.
        self.explicit = False

    @torch.no_grad()
    def fill_rope_tables(self) -> None:
        """Compute the RoPE tables again in place: they are not saved with the weights, so a
        model that Hugging Face builds without values and then loads needs them filled."""
        T, half = self.rope_cos.shape
        cos, sin = rope_tables(T, 2 * half, self.rope_base)
        self.rope_cos.copy_(cos)
        self.rope_sin.copy_(sin)

    @staticmethod
    def traits(config: ModelShape) -> MixerTraits:
        return MixerTraits(
            positions="rope",
            cached=("k", "v"),
            causal=True,
            exportable=True,
            projections=4,
            matrices="none",
        )

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {
            "qk": [*self.w_q.parameters(), *self.w_k.parameters()],
            "vo": [*self.w_v.parameters(), *self.w_o.parameters()],
        }

    def forward(
        self, x: torch.Tensor, cache: LayerCache | None = None, real: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``real`` (B, T): the positions that are not pads, which alone may be read (with
        ``model.pad_masking``); every position still reads itself."""
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
        explicit = self.hook_pattern.active or self.explicit
        if start == 0 and real is None and not explicit:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, hs)
        else:
            mask = offset_causal_mask(T, start, x.device)  # (T, start + T)
            if real is not None:
                itself = torch.eye(T, dtype=torch.bool, device=x.device)  # (T, T)
                mask = mask & (real[:, None, None, :] | itself)  # (B, 1, T, T)
            if explicit:
                scores = q @ k.transpose(-2, -1) / math.sqrt(hs)  # (B, H, T, start + T)
                pattern = self.hook_pattern(scores.masked_fill(~mask, float("-inf")).softmax(-1))
                y = pattern @ v  # (B, H, T, hs)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (B, H, T, hs)
        y = y.transpose(1, 2).reshape(B, T, n)  # (B, T, n)
        return self.w_o(y)


def mixing_matrices(
    weights: torch.Tensor,
    causal: bool = True,
    centering: str = "row-mean",
    identity: bool = True,
) -> torch.Tensor:
    """MixiT's mixing A = I + W^M - drift(W^M) (eq. 2.3) for raw weights (H, T, T).

    Row t sees positions 0..t under the causal mask (every position without it). The drift
    of row t is, by ``centering``:

    - ``row-mean``: the mean of its visible entries, so every row of A sums to exactly 1;
    - ``row-sum-over-position``: its visible sum divided by t + 1. Under the causal mask that
      is the same mean; without it the row keeps a constant offset on all T columns, a
      uniform pooling component (the authors' non-causal classifier).

    Causal: A is lower-triangular and row t only depends on the first t + 1 entries of row t
    of W^M, so the top-left (T', T') block of A is the matrix a shorter sequence would get.
    ``identity=False`` leaves out the I.
    """
    T = weights.shape[-1]
    visible = torch.ones(T, T, dtype=torch.bool)  # (T, T)
    if causal:
        visible = visible.tril()
    w = weights.masked_fill(~visible, 0.0)  # (H, T, T)
    if centering == "row-mean":
        seen = visible.sum(-1, dtype=weights.dtype)  # (T,) entries each row sees
    else:
        seen = torch.arange(1, T + 1, dtype=weights.dtype)  # (T,) the row's position + 1
    drift = w.sum(-1, keepdim=True) / seen[:, None]  # (H, T, 1)
    centred = (w - drift).masked_fill(~visible, 0.0)  # (H, T, T)
    return torch.eye(T, dtype=weights.dtype) + centred if identity else centred


def mask_pads(
    mixing: torch.Tensor, real: torch.Tensor, causal: bool = True, identity: bool = True
) -> torch.Tensor:
    """Per-example mixing matrices (B, H, T, T) that read no pad: ``mixing`` (H, T, T) with the
    columns of pads (``real`` (B, T) False) removed and each row's off-identity part
    re-centred over the real positions it sees, so its real entries again sum to 1 (0 without
    the identity). Any per-row drift of the original centring cancels in the re-centring."""
    T = mixing.shape[-1]
    eye = torch.eye(T, dtype=mixing.dtype, device=mixing.device)  # (T, T)
    seen = torch.ones(T, T, dtype=torch.bool, device=mixing.device)  # (T, T)
    if causal:
        seen = seen.tril()
    keep = seen & (real[:, None, None, :] | eye.bool())  # (B, 1, T, T): itself, real tokens
    centred = (mixing - eye if identity else mixing).masked_fill(~keep, 0.0)  # (B, H, T, T)
    drift = centred.sum(-1, keepdim=True) / keep.sum(-1, keepdim=True)  # (B, H, T, 1)
    recentred = (centred - drift).masked_fill(~keep, 0.0)  # (B, H, T, T)
    return recentred + eye if identity else recentred


def attention_sink_matrix(T: int, first_row_weight: float = 1.0) -> torch.Tensor:
    """Half the weight on the token itself, half on the first token; row 0 puts
    ``first_row_weight`` on itself (1.0: every row sums to 1; the authors' code: 0.5)."""
    sink = 0.5 * torch.eye(T)
    sink[:, 0] = 0.5
    sink[0, 0] = first_row_weight
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
    with m = ``block_size``; ``mixing_matrices`` centres them as the config says.
    """

    def __init__(self, config: ModelShape) -> None:
        super().__init__()
        n = config.n_embd
        self.n_head = config.n_head
        self.w_v = projection(config, n, n)
        self.w_o = projection(config, n, n)
        self.causal, self.identity = config.mixing_causal, config.mixing_identity
        self.hold(self.initial(config))
        self.hook_pattern = Tap()

    @staticmethod
    def initial(config: ModelShape) -> torch.Tensor:
        """The (H, T, T) matrices at initialisation: MixiT's random draw (eq. 2.3)."""
        n, H, T = config.n_embd, config.n_head, config.block_size
        sigma = mixing_std(config.mixing_scale, n, H, T)  # (H, 1, 1)
        mixing = mixing_matrices(
            sigma * torch.randn(H, T, T),
            causal=config.mixing_causal,
            centering=config.mixing_centering,
            identity=config.mixing_identity,
        )  # (H, T, T)
        if config.attention_sink:
            mixing[0] = attention_sink_matrix(T, config.sink_first_row_weight)
        return mixing

    def hold(self, mixing: torch.Tensor) -> None:
        """Keep the (H, T, T) matrices: a buffer, saved with the weights and never trained."""
        self.register_buffer("mixing", mixing)

    def rows(self, start: int, T: int) -> torch.Tensor:
        """Rows start .. start + T of the matrices (H, T, start + T): the top-left block of the
        (H, T_max, T_max) ones for a short input."""
        return self.mixing[:, start : start + T, : start + T]

    @staticmethod
    def traits(config: ModelShape) -> MixerTraits:
        return MixerTraits(
            positions="learned",
            cached=("v",),
            causal=config.mixing_causal,
            exportable=False,
            projections=2,
            matrices="fixed",
        )

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {"vo": [*self.w_v.parameters(), *self.w_o.parameters()]}

    def forward(
        self, x: torch.Tensor, cache: LayerCache | None = None, real: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``real`` (B, T): the positions that are not pads, which alone may be read (with
        ``model.pad_masking``; see ``mask_pads``)."""
        B, T, n = x.shape
        H, hs = self.n_head, n // self.n_head
        start = 0 if cache is None else cache.length  # position of x's first token
        v = self.w_v(x).view(B, T, H, hs).transpose(1, 2)  # (B, H, T, hs)
        if cache is not None:
            v = cache.extend("v", v)  # (B, H, start + T, hs)
        mixing = self.rows(start, T)  # (H, T, start + T)
        if real is not None:
            pattern = self.hook_pattern(mask_pads(mixing, real, self.causal, self.identity))
            y = (pattern @ v).transpose(1, 2)  # (B, T, H, hs)
        elif self.hook_pattern.active:
            pattern = self.hook_pattern(mixing.expand(B, *mixing.shape))  # (B, H, T, start + T)
            y = (pattern @ v).transpose(1, 2)  # (B, T, H, hs)
        else:
            # One contraction over key positions with the shared (H, T, T) matrices; a
            # broadcast matmul would first copy them B times (measured 20-25 % slower).
            y = torch.einsum("hts,bhsd->bthd", mixing, v)  # (B, T, H, hs)
        return self.w_o(y.reshape(B, T, n))  # (B, T, n)
