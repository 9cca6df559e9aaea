"""The five variants' definitions: what each named model freezes and which attention it uses
(``mixit.spectrum`` applies them to any causal LM).

A Variant names parameter groups, never parameter-name substrings. The groups are exposed by
the model (see ``Decoder.param_groups``): ``qk`` (W_Q, W_K), ``vo`` (W_V, W_O), ``mlp``
(W_G, W_U, W_D), ``norm`` (every RMSNorm gain), ``embed``, ``pos``, ``unembed``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class AttentionKind(StrEnum):
    """The names of the built-in token mixers (``attention.MIXERS``); a mixer added there
    under any other name is as good a ``Variant.attention``."""

    SOFTMAX = "softmax"  # softmax(Q K^T / sqrt(n_h)) with RoPE on Q and K (eq. 2.1)
    MIXING = "mixing"  # a fixed random causal matrix per head, A @ V (eq. 2.3)


@dataclass(frozen=True)
class Variant:
    name: str
    attention: str  # its token mixer's name in attention.MIXERS (AttentionKind for the built-in)
    frozen: frozenset[str]
    description: str
    # Model-config values this variant changes from the dataclass defaults. They are written
    # into the resolved config.json, and a preset or a user override still wins over them.
    model_defaults: Mapping[str, object] = field(default_factory=dict)
    # The litmus test's reading (`mixit compare`) when this variant matches the standard model
    # on a task, and when it falls short.
    if_matches: str = "it matches the standard model"
    if_short: str = "it falls short of the standard model"

    @property
    def frozen_attention(self) -> bool:
        """Whether its attention logits come from frozen queries and keys, so their spread at
        initialisation is printed beside its verdict (docs/tuning.md, rule 6)."""
        return "qk" in self.frozen


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("standard", AttentionKind.SOFTMAX, frozenset(), "everything trained"),
        Variant(
            "frozen-qk",
            AttentionKind.SOFTMAX,
            frozenset({"qk"}),
            "W_Q, W_K frozen at initialisation",
            if_matches="learned queries and keys are not needed",
            if_short="learned queries and keys are needed",
        ),
        Variant(
            "frozen-mlp",
            AttentionKind.SOFTMAX,
            frozenset({"mlp"}),
            "W_G, W_U, W_D frozen at initialisation",
            if_matches="the task keeps little in trained MLP weights",
            if_short="the MLPs carry what the task needs",
        ),
        Variant(
            "mixit",
            AttentionKind.MIXING,
            frozenset(),
            "fixed random causal mixing (eq. 2.3), learned positions, shaped residual",
            # Shaped residual h <- lam h + sqrt(1 - lam^2) f(h) keeps the forward pass stable
            # in depth (section 2, following the shaped-transformer analysis).
            model_defaults={"residual_lambda": math.sqrt(0.5)},
            if_matches="no input-dependent attention is needed: fixed mixing suffices",
            if_short="input-dependent attention is needed (a circuit such as an induction head)",
        ),
        Variant(
            "random",
            AttentionKind.SOFTMAX,
            frozenset({"qk", "vo", "mlp", "norm"}),
            "only embeddings and output head trained (Zhong & Andreas' random transformer)",
            if_matches="embeddings and output head alone suffice",
            if_short="trained attention or MLP blocks are needed",
        ),
    )
}
