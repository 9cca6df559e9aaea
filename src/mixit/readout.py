"""Readouts that replace or restrict a body's next-token logits.

``BottleneckReadout``, the compression task's (MAD, Poli et al. 2024): the whole input
must be rebuilt from one vector: the final hidden state at the last position
(the compression token). An MLP reads that vector plus a learned embedding of the position
to rebuild, so no position's logits see any input token except through the bottleneck. The
readout trains in every model of the spectrum, as the output head does.
"""

from __future__ import annotations

import torch
from torch import nn

from mixit.model import Trainable


class BottleneckReadout(Trainable):
    """``model(input_ids)`` (B, T) -> logits (B, T, V): row t is the guess of input token t
    from the last position's features alone; with ``scored`` (B, T), the (S, V) scored rows.
    ``body`` is any model with ``features(input_ids)`` -> (B, T, n)."""

    def __init__(self, body: nn.Module, n: int, block_size: int, vocab_size: int) -> None:
        super().__init__()
        self.body = body
        self.positions = nn.Embedding(block_size, n)
        nn.init.normal_(self.positions.weight, std=n**-0.5)
        self.decoder = nn.Sequential(nn.Linear(n, 4 * n), nn.GELU(), nn.Linear(4 * n, vocab_size))

    def forward(self, input_ids: torch.Tensor, scored: torch.Tensor | None = None) -> torch.Tensor:
        T = input_ids.shape[1]
        code = self.body.features(input_ids)[:, -1]  # (B, n): the compression token's state
        queries = code[:, None, :] + self.positions.weight[:T]  # (B, T, n)
        logits = self.decoder(queries)  # (B, T, V)
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
