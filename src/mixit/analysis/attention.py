"""Attention maps, drawn, and the spread of a model's attention logits at initialisation; the
head scores themselves are ``mixit.models.heads`` (a run can track them as it trains).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from mixit.common.plots import PAGE, SEQUENTIAL, save, styled
from mixit.config.schema import RunConfig
from mixit.models.decoder import Decoder
from mixit.models.heads import attention_patterns, logit_spread
from mixit.training.resolve import fit_model_to_data
from mixit.training.rundir import new_model

# The most token labels a map's axis names; beyond it, every k-th.
TICKS = 24


def plot_attention_maps(patterns: torch.Tensor, tokens: list[str], path: Path, title: str) -> None:
    """A grid of heat maps (layers x heads) of one example's attention (L, H, T, T), PNG and
    PDF. The axes are positions: each tick names its position and, where every position has a
    tick (at most ``TICKS``), the token there; beyond, every k-th position by number alone."""
    L, H, T, _ = patterns.shape
    every = max(1, math.ceil(T / TICKS))
    ticks = list(range(0, T, every))
    names = [f"{t} {tokens[t]}" if every == 1 else str(t) for t in ticks]
    with styled() as plt:
        width = min(PAGE, 1.7 * H + 0.9)
        fig, axes = plt.subplots(L, H, figsize=(width, width / H * L + 0.5), squeeze=False)
        for layer in range(L):
            for head in range(H):
                ax = axes[layer][head]
                weights = patterns[layer, head].cpu().numpy()
                image = ax.imshow(weights, cmap=SEQUENTIAL, vmin=0, vmax=1)
                ax.set_title(f"layer {layer}, head {head}", fontsize=7)
                ax.set_xticks(ticks, names if layer == L - 1 else [], rotation=90, fontsize=5)
                ax.set_yticks(ticks, names if head == 0 else [], fontsize=5)
                ax.grid(False)
        fig.supxlabel("key position and token (attended to)", fontsize=7)
        fig.supylabel("query position and token", fontsize=7)
        fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
        fig.suptitle(title)
        save(fig, path)


def initial_logit_spread(config: RunConfig, sequences: int = 64) -> float | None:
    """The ``logit_spread`` of a run's attention at initialisation, on its first training
    sequences: how far from uniform its frozen queries and keys start (Frozen-QK, the random
    transformer). None for a model whose attention cannot be read (a ``module:`` factory)."""
    data = config.task_spec.make_data(config.task, config.seed)
    config = fit_model_to_data(config, data)
    model = new_model(config)
    model = getattr(model, "body", model)  # under a readout: the decoder it reads
    inputs = data.train.inputs[:sequences]  # (S, T)
    with torch.no_grad():
        if isinstance(model, Decoder):
            return logit_spread(attention_patterns(model, inputs))
        inner = getattr(model, "inner", None)
        setter = getattr(inner, "set_attn_implementation", None)
        if setter is None:
            return None
        setter("eager")  # the fused kernels return no attention weights
        attentions = getattr(inner(inputs, output_attentions=True), "attentions", None)
    if not attentions:
        return None
    return logit_spread(torch.stack(attentions).float())  # (L, S, H, T, T)
