"""Readouts that replace or restrict a body's next-token logits.

``BottleneckReadout``, the compression task's (MAD, Poli et al. 2024): the whole input
must be rebuilt from one vector: the final hidden state at the last position
(the compression token). A decoder reads that vector plus an embedding of the position to
rebuild, so no position's logits see any input token except through the bottleneck. It is
MAD's autoencoder decoder (``mad/model/auto_encoder.py`` at 0f49a45): fixed sine-cosine
positions, two norm-linear-GELU layers that keep the width, then a normed unembedding.
``wide`` gives mixit's earlier readout instead: learned positions and one 4x-wide MLP. The
readout trains in every model of the spectrum, as the output head does.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from mixit.models.decoder import Trainable


def sincos_positions(length: int, n: int) -> torch.Tensor:
    """(length, n): position p's sines in the first half, cosines in the second, at
    frequencies from 1 down to 1/10,000 in geometric steps (a zero column for odd n)."""
    half = n // 2
    frequencies = torch.exp(-math.log(10_000) / max(half - 1, 1) * torch.arange(half))  # (n/2,)
    angles = torch.arange(length, dtype=torch.float)[:, None] * frequencies  # (L, n/2)
    table = torch.cat([angles.sin(), angles.cos()], dim=1)  # (L, 2 * (n/2))
    return nn.functional.pad(table, (0, n - 2 * half))  # (L, n)


class BottleneckReadout(Trainable):
    """``model(input_ids)`` (B, T) -> logits (B, T, V): row t is the guess of input token t
    from the last position's features alone; with ``scored`` (B, T), the (S, V) scored rows.
    ``body`` is any model with ``features(input_ids)`` -> (B, T, n)."""

    def __init__(
        self, body: nn.Module, n: int, block_size: int, vocab_size: int, wide: bool = False
    ) -> None:
        super().__init__()
        self.body = body
        if wide:
            self.positions = nn.Parameter(torch.randn(block_size, n) * n**-0.5)
            self.decoder = nn.Sequential(nn.Linear(n, 4 * n), nn.GELU())
            self.head = nn.Linear(4 * n, vocab_size)
        else:
            self.register_buffer("positions", sincos_positions(block_size, n), persistent=False)
            self.decoder = nn.Sequential(
                nn.RMSNorm(n), nn.Linear(n, n), nn.GELU(), nn.RMSNorm(n), nn.Linear(n, n), nn.GELU()
            )
            self.head = nn.Sequential(nn.RMSNorm(n), nn.Linear(n, vocab_size))

    def forward(self, input_ids: torch.Tensor, scored: torch.Tensor | None = None) -> torch.Tensor:
        T = input_ids.shape[1]
        code = self.body.features(input_ids)[:, -1]  # (B, n): the compression token's state
        queries = code[:, None, :] + self.positions[:T]  # (B, T, n)
        logits = self.head(self.decoder(queries))  # (B, T, V)
        return logits if scored is None else logits[scored]


class AnswerReadout(Trainable):
    """``body``'s logits with every token outside ``answer_ids`` at -inf: a classifier's head.

    The body's output-head rows for the answer tokens are a classifier's score layer (no
    bias, the same initialisation), so a softmax over them alone is a k-class head; the other
    rows get no gradient. The readout adds no parameter: its weights are the body's.
    """

    def __init__(self, body: nn.Module, answer_ids: tuple[int, ...], vocab_size: int) -> None:
        super().__init__()
        self.body = body
        allowed = torch.zeros(vocab_size, dtype=torch.bool)
        allowed[list(answer_ids)] = True
        self.register_buffer("allowed", allowed, persistent=False)  # (V,)

    def forward(self, input_ids: torch.Tensor, scored: torch.Tensor | None = None) -> torch.Tensor:
        logits = self.body(input_ids, scored)  # (B, T, V), or (S, V) at the scored positions
        return logits.masked_fill(~self.allowed, float("-inf"))
