"""The token mixers past the paper's two, and ``MIXERS``, where a Variant finds its mixer by name.

Each new mixer is a member of MixiT's family: y_h = A_h @ V_h with W_V and W_O trained, no
queries, keys or RoPE, so the rows built on them differ from MixiT in the matrix A alone
(docs/rows.md says why these three and not others):

- ``LearnedMixing``: A = I + W, W trained and started from MixiT's centred draw, so that on the
  same seed it starts as MixiT's model; Synthesizer's random mixing (Tay et al. 2021), trained.
- ``UniformMixing``: A_ts = 1 / (t + 1) for s <= t, the causal mean; no parameters in A, as in
  FNet's parameter-free mixing.
- ``NoMixing``: A = I, each position reads itself only: the MLP-only control.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from .attention import FixedMixing, MixerTraits, SoftmaxAttention, offset_causal_mask
from .shape import ModelShape
from .variants import AttentionKind, Variant


class LearnedMixing(FixedMixing):
    """MixiT's mixing matrix trained: A = I + W (W alone without ``model.mixing_identity``),
    W started at MixiT's draw less the identity. Under the causal mask W's entries above the
    diagonal are masked in every forward pass, so they get no gradient and A stays causal.
    Weight decay pulls W, not A, towards zero: towards the identity that MixiT's matrix
    approaches at large width (Theorem 2.1)."""

    def hold(self, mixing: torch.Tensor) -> None:
        T = mixing.shape[-1]
        eye = torch.eye(T, dtype=mixing.dtype, device=mixing.device)  # (T, T)
        self.weights = nn.Parameter(mixing - eye if self.identity else mixing)  # (H, T, T)

    def rows(self, start: int, T: int) -> torch.Tensor:
        weights = self.weights[:, start : start + T, : start + T]  # (H, T, start + T)
        keys = torch.arange(start + T, device=weights.device)  # (start + T,)
        same = keys[None, :] == (start + torch.arange(T, device=weights.device))[:, None]
        if self.causal:
            weights = weights * offset_causal_mask(T, start, weights.device)  # (H, T, start + T)
        return weights + same.to(weights.dtype) if self.identity else weights

    @staticmethod
    def traits(config: ModelShape) -> MixerTraits:
        return dataclasses.replace(FixedMixing.traits(config), matrices="trained")

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {**super().param_groups(), "mix": [self.weights]}


class _ParameterFree(FixedMixing):
    """A fixed matrix with nothing drawn, the same for every head, whose rows sum to 1."""

    def __init__(self, config: ModelShape) -> None:
        super().__init__(config)
        # Its rows hold the identity's weight whatever ``model.mixing_identity`` (an option of
        # MixiT's draw) says, so pads are masked as for a matrix with the identity in it.
        self.identity = True


class UniformMixing(_ParameterFree):
    """The causal mean (the plain mean of all positions without ``model.mixing_causal``)."""

    @staticmethod
    def initial(config: ModelShape) -> torch.Tensor:
        T = config.block_size
        seen = torch.ones(T, T)  # (T, T)
        if config.mixing_causal:
            seen = seen.tril()
        mean = seen / seen.sum(-1, keepdim=True)  # (T, T), each row sums to 1
        return mean.expand(config.n_head, T, T).clone()  # (H, T, T)


class NoMixing(_ParameterFree):
    """The identity: y_t = W_O W_V x_t, each position reads itself only."""

    @staticmethod
    def initial(config: ModelShape) -> torch.Tensor:
        T = config.block_size
        return torch.eye(T).expand(config.n_head, T, T).clone()  # (H, T, T)


# A mixer is a module built from the model's shape that declares its traits and its parameter
# groups, and maps (B, T, n) to (B, T, n); a Variant names it by its key here.
MIXERS: dict[str, type[nn.Module]] = {
    AttentionKind.SOFTMAX: SoftmaxAttention,
    AttentionKind.MIXING: FixedMixing,
    AttentionKind.LEARNED_MIXING: LearnedMixing,
    AttentionKind.UNIFORM: UniformMixing,
    AttentionKind.IDENTITY: NoMixing,
}


def mixer_traits(kind: str, config: ModelShape) -> MixerTraits:
    """The traits of the token mixer that ``kind`` names, built with ``config``."""
    return MIXERS[kind].traits(config)


def variant_traits(variant: Variant, config: ModelShape) -> MixerTraits:
    """The traits of ``variant``'s model: its mixer's, or, for a hybrid of several mixers,
    what the model needs of them together (keys cached where any layer caches them, learned
    positions where any layer learns them), as a lower bound for the memory model (the fewest
    projections; matrices only where every layer holds the same kind). A hybrid is not
    exported as a Llama: no stock config holds a different variant per layer."""
    # A model of no layers, which validation refuses, has its base's traits until then.
    kinds = set(variant.mixers(config.n_layer)) or {variant.attention}
    if len(kinds) == 1:
        return mixer_traits(kinds.pop(), config)
    each = [mixer_traits(kind, config) for kind in sorted(kinds)]
    positions = {part for traits in each for part in traits.positions.split("+")}
    matrices = {traits.matrices for traits in each}
    return MixerTraits(
        positions="+".join(sorted(positions, key=["rope", "learned"].index)),
        cached=("k", "v") if any("k" in traits.cached for traits in each) else ("v",),
        causal=all(traits.causal for traits in each),
        exportable=False,
        projections=min(traits.projections for traits in each),
        matrices=matrices.pop() if len(matrices) == 1 else "none",
    )
