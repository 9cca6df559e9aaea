"""The variants' definitions: what each named model freezes and which token mixer it uses
(``mixit.spectrum`` applies the paper's to any causal LM).

``SPECTRUM`` is the paper's five, the default of every command; the rows after them go past
the paper (docs/rows.md) and are trained only when ``--models`` names them.

A Variant names parameter groups, never parameter-name substrings. The groups are exposed by
the model (see ``Decoder.param_groups``): ``qk`` (W_Q, W_K), ``vo`` (W_V, W_O), ``mix`` (a
trained mixing matrix), ``mlp`` (W_G, W_U, W_D), ``norm`` (every RMSNorm gain), ``embed``,
``pos``, ``unembed``.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class AttentionKind(StrEnum):
    """The names of the built-in token mixers (``attention.MIXERS``); a mixer added there
    under any other name is as good a ``Variant.attention``."""

    SOFTMAX = "softmax"  # softmax(Q K^T / sqrt(n_h)) with RoPE on Q and K (eq. 2.1)
    MIXING = "mixing"  # a fixed random causal matrix per head, A @ V (eq. 2.3)
    LEARNED_MIXING = "learned-mixing"  # the same matrix, trained from MixiT's draw
    UNIFORM = "uniform"  # the causal mean: position t averages positions 0..t
    IDENTITY = "identity"  # no mixing: position t reads itself only


# MixiT's family: mixers that apply an (H, T, T) matrix to the values, with no queries or keys.
# They take MixiT's block (learned positions, the shaped residual) and its construction, so
# that the rows of the family differ in the matrix alone.
MATRIX_MIXERS = frozenset(
    {
        AttentionKind.MIXING,
        AttentionKind.LEARNED_MIXING,
        AttentionKind.UNIFORM,
        AttentionKind.IDENTITY,
    }
)

# h <- lam h + sqrt(1 - lam^2) f(h): the shaped residual keeps the forward pass stable in depth
# (section 2, following the shaped-transformer analysis).
_SHAPED = {"residual_lambda": math.sqrt(0.5)}


HYBRID_JOIN = "+"  # what a hybrid's name joins its parts with
HYBRID_SYNTAX = (
    "BASE+OTHER@LAYERS: BASE's model with OTHER in LAYERS (i, i-j, joined by '.'), "
    "e.g. mixit+standard@3 or standard+mixit@0-1.3"
)


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
    # A row the paper does not have (docs/rows.md): reports mark it, and it trains only when
    # named.
    beyond_paper: bool = False
    # A hybrid's layers built as another variant: (layer, variant name) pairs (``variant_named``).
    layers: tuple[tuple[int, str], ...] = ()

    def at(self, layer: int) -> Variant:
        """The variant layer ``layer`` is built as: a hybrid's other variant there, or itself."""
        other = dict(self.layers).get(layer)
        return self if other is None else VARIANTS[other]

    def mixers(self, n_layer: int) -> dict[str, int]:
        """How many of ``n_layer`` layers each token mixer builds (its name in
        ``AttentionKind``), read from the layers a hybrid names rather than by visiting every
        layer: a config not yet validated may ask for any number of them."""
        named = [VARIANTS[other].attention for layer, other in self.layers if layer < n_layer]
        counts = {kind: named.count(kind) for kind in dict.fromkeys(named)}
        if n_layer > len(named):
            counts[self.attention] = counts.get(self.attention, 0) + n_layer - len(named)
        return counts

    @property
    def rows(self) -> tuple[str, ...]:
        """The rows of the spectrum it is built from: its own name, or a hybrid's base and
        the variants of its other layers."""
        return (self.name.split(HYBRID_JOIN)[0], *(other for _, other in self.layers))

    @property
    def draws_frozen(self) -> bool:
        """Whether it keeps a random draw untrained (frozen groups, or MixiT's fixed mixing, in
        any of its layers): what ``model.frozen_seed`` draws anew; for any other variant the
        key changes nothing."""
        own = bool(self.frozen) or self.attention == AttentionKind.MIXING
        return own or any(VARIANTS[other].draws_frozen for _, other in self.layers)

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
            model_defaults=_SHAPED,
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
        Variant(
            "mixit-learned",
            AttentionKind.LEARNED_MIXING,
            frozenset(),
            "MixiT's mixing matrix trained from its draw (Synthesizer's random mixing, trained)",
            model_defaults=_SHAPED,
            if_matches="mixing that does not depend on the input suffices once it is trained",
            if_short="input-dependent attention is needed: trained fixed mixing falls short too",
            beyond_paper=True,
        ),
        Variant(
            "uniform",
            AttentionKind.UNIFORM,
            frozenset(),
            "each position averages the ones up to it (a causal mean; no mixing parameters)",
            model_defaults=_SHAPED,
            if_matches="an unweighted average of the past suffices",
            if_short="the task needs mixing that weighs positions apart",
            beyond_paper=True,
        ),
        Variant(
            "no-mixing",
            AttentionKind.IDENTITY,
            frozenset(),
            "no token mixing: each position reads itself only (the MLP-only control)",
            model_defaults=_SHAPED,
            if_matches="no token mixing is needed: each token alone suffices",
            if_short="the task needs token mixing",
            beyond_paper=True,
        ),
    )
}

# The paper's five, the models every command trains unless ``--models`` names others.
SPECTRUM: tuple[str, ...] = tuple(name for name, v in VARIANTS.items() if not v.beyond_paper)


def _layer_numbers(text: str) -> list[int]:
    """``0-2.5`` as [0, 1, 2, 5]; ValueError for anything else."""
    numbers = []
    for item in text.split("."):
        low, dash, high = item.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or int(high or low) < int(low):
            raise ValueError(f"'{text}' is not a list of layers")
        numbers += range(int(low), int(high or low) + 1)
    return numbers


def variant_named(name: str) -> Variant:
    """The variant ``name`` names: a row of ``VARIANTS``, or a hybrid (``HYBRID_SYNTAX``): its
    BASE's variant (every model-wide group, setting and layer not named) with OTHER's mixer and
    frozen groups in the layers named. ValueError, saying what is accepted, for anything else."""
    if name in VARIANTS:
        return VARIANTS[name]
    base, *parts = name.split(HYBRID_JOIN)
    layers: dict[int, str] = {}
    try:
        if base not in VARIANTS or not parts:
            raise ValueError(f"'{base}' is not a model")
        for part in parts:
            other, _, where = part.partition("@")
            if other not in VARIANTS:
                raise ValueError(f"'{other}' is not a model")
            for layer in _layer_numbers(where):
                if layer in layers:
                    raise ValueError(f"layer {layer} is named twice")
                layers[layer] = other
    except ValueError as error:
        # An exported model's code holds this module and imports nothing of mixit, so the
        # guess is difflib's here rather than common.errors.did_you_mean's.
        close = difflib.get_close_matches(name, VARIANTS, n=1)
        guess = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(
            f"unknown model '{name}'{guess} ({error}); choose one of: "
            f"{', '.join(VARIANTS)}, or a hybrid {HYBRID_SYNTAX}"
        ) from None
    return dataclasses.replace(
        VARIANTS[base],
        name=name,
        description=f"{base} with {', '.join(parts)}",
        if_matches=f"{name} matches the reference",
        if_short=f"{name} falls short of the reference",
        beyond_paper=True,
        layers=tuple(sorted(layers.items())),
    )


def beyond_paper(name: str) -> bool:
    """Whether ``name`` is a row or hybrid of mixit's that the paper does not have (a variant
    registered elsewhere, unknown here, is not)."""
    try:
        return variant_named(name).beyond_paper
    except ValueError:
        return False
