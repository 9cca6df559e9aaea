"""The paper's findings and the rule that judges each, written down before any result.

Margins are absolute, in the metric's units. A rule names the models and the numbers it
compares, and how it reads the seeds (``Rule.reads``), so a reader can check a verdict against
``results.json`` by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mixit.models.heads import HEAD_THRESHOLD
from mixit.study.claim import (
    Claim,
)
from mixit.study.litmus import ROUNDING, interval_95

# How a rule reads its seeds (docs/reproduce.md, "Reading rules", 2026-12-01, written before
# any run it judges). A comparison is read on its per-seed values (a paired difference: the
# models of one seed share its data): it holds when it holds on every seed and on the 95 %
# interval of their mean, fails when it fails on both, and is otherwise undecided, which
# leaves the claim inconclusive. A mean against a bar would pass a model two of whose three
# seeds are below it. A pass mark (the model solved its task) is read on every seed alone.
BY_INTERVAL = "each comparison on every seed and on the 95 % interval over seeds"
EVERY_SEED = "on every seed"
# A rule over a measurement that is not a set of seeds (throughput, a simulation).
NOT_SEEDS = ""


@dataclass(frozen=True)
class Rule:
    """A claim's rule: a template whose fields are its margins, so that the text a reader
    checks and the numbers the experiment compares are written once, and how it reads the
    seeds (``BY_INTERVAL``, ``EVERY_SEED`` or ``NOT_SEEDS``)."""

    template: str
    margins: Mapping[str, float] = field(default_factory=dict)
    reads: str = BY_INTERVAL

    def text(self) -> str:
        rule = self.template.format(**self.margins)
        return f"{rule}; read {self.reads}" if self.reads else rule


def per_seed(values: Sequence[float], bound: float = 0.0, strict: bool = False) -> bool | None:
    """Whether per-seed ``values`` are >= ``bound`` (> when ``strict``), read ``BY_INTERVAL``:
    True when every seed and the low end of the 95 % interval of their mean are, False when no
    seed and not the interval's high end are, None (undecided) otherwise. One seed decides
    alone."""

    def holds(value: float) -> bool:
        return value > bound + ROUNDING if strict else value >= bound - ROUNDING

    low, high = interval_95(values) or (min(values), max(values))
    if all(holds(v) for v in values) and holds(low):
        return True
    if not any(holds(v) for v in values) and not holds(high):
        return False
    return None


def every_seed(values: Sequence[float], bound: float) -> bool:
    """A pass mark read ``EVERY_SEED``: every one of ``values`` is >= ``bound``."""
    return all(value >= bound - ROUNDING for value in values)


def paired(first: Sequence[float], second: Sequence[float]) -> list[float]:
    """``first - second`` seed by seed (both listed in the same seed order)."""
    return [a - b for a, b in zip(first, second, strict=True)]


def judged(
    claim_id: str, readings: Mapping[str, bool | None], measured: Mapping[str, Any]
) -> Claim:
    """``claim_id`` judged on its rule's comparisons (``readings``: each by name, read per
    seed): reproduced when every one holds, not reproduced when any fails, else inconclusive,
    with the undecided ones named (``Claim.undecided``)."""
    values = list(readings.values())
    holds = False if False in values else None if None in values else True
    verdict = claim(claim_id).judge(holds, measured)
    verdict.undecided = [name for name, reading in readings.items() if reading is None]
    return verdict


# Seeds whose results had been seen when the size rules were written (docs/reproduce.md).
SEEN_BEFORE_THE_SIZE_RULES = (*range(3), *range(100, 103))
# C12 read seed by seed (rule of 2026-12-06, issue #101): written after the per-seed
# discrepancies of every committed output had been seen.
C12_PER_SEED = (*range(3), *range(100, 103), *range(200, 203), *range(300, 303))


@dataclass(frozen=True)
class Finding:
    """A claim of the paper, where it is judged (``experiment``: the name of the experiment
    whose ``judge`` returns it, and whose ``headlines`` name the runs it turns on) and by what
    rule."""

    id: str
    experiment: str
    statement: str
    rule: Rule
    # Seeds whose results were seen when the rule was written, beyond the tuning seeds.
    seen_seeds: tuple[int, ...] = ()


FINDINGS: list[Finding] = [
    Finding(
        "C1",
        "table1",
        "Retrieval: standard, Frozen-MLP and Frozen-QK are far more accurate than MixiT "
        "(Table 1: 100 / 100 / 97.0 vs 11.2 %).",
        Rule(
            "each of standard, frozen-mlp, frozen-qk has test accuracy >= mixit's + {margin:.2f}",
            {"margin": 0.20},
        ),
    ),
    Finding(
        "C2",
        "table1",
        "k-hop induction heads: standard, Frozen-MLP and Frozen-QK beat MixiT "
        "(Table 1: 99.99 / 99.89 / 96.73 vs 48.58 %).",
        Rule(
            "each of standard, frozen-mlp, frozen-qk has test accuracy >= {solved:.2f} on every "
            "seed (it solves the task) and >= mixit's + {margin:.2f}",
            # The paper's three winners reach 96.7-99.99 %: a lead over MixiT by models that
            # have not solved k-hop is not the paper's finding.
            {"margin": 0.10, "solved": 0.90},
        ),
        SEEN_BEFORE_THE_SIZE_RULES,
    ),
    Finding(
        "C3",
        "figure2",
        "Retrieval accuracy falls fastest with the number of pairs for MixiT (Figure 2).",
        Rule(
            "mixit's drop in accuracy from the fewest to the most pairs is larger than the drop "
            "of each of standard, frozen-mlp, frozen-qk"
        ),
    ),
    Finding(
        "C4",
        "table2",
        "Language modeling: standard < Frozen-QK < MixiT in log perplexity (Table 2).",
        # The paper's Frozen-QK is close to standard (2.78 / 3.07 / 3.73 on WikiText-103):
        # the order alone would pass a Frozen-QK as far from standard as MixiT is.
        Rule(
            "test log_ppl: standard < frozen-qk < mixit, and frozen-qk - standard < "
            "mixit - frozen-qk"
        ),
        SEEN_BEFORE_THE_SIZE_RULES,
    ),
    Finding(
        "C5",
        "table3",
        "MixiT is competitive with the standard transformer on decimal addition, Dyck-1, "
        "modular addition and sentiment (Table 3).",
        Rule(
            "on each of the four tasks mixit's test accuracy >= standard's - {margin:.2f}",
            {"margin": 0.03},
        ),
    ),
    Finding(
        "C6",
        "table4",
        "Memorization capacity: standard > Frozen-QK ~ MixiT > Frozen-MLP in bits per "
        "parameter (Table 4: 2.98, 2.25, 2.18, 1.13).",
        Rule(
            "bits/param: standard > max(frozen-qk, mixit); |frozen-qk - mixit| <= {close:g} "
            "x standard; min(frozen-qk, mixit) > frozen-mlp",
            # The paper's own gap is 0.07 bits against standard's 2.98.
            {"close": 0.1},
        ),
    ),
    Finding(
        "C7",
        "table5",
        "More MixiT heads help decimal addition and Dyck-1 (Table 5).",
        Rule(
            "on addition and on dyck, mixit's accuracy with the most heads >= with the "
            "fewest + {margin:.2f}",
            {"margin": 0.02},
        ),
    ),
    Finding(
        "C8",
        "table6",
        "At depth 16 MixiT keeps its accuracy on decimal addition while the random transformer "
        "collapses (Table 6: 100 vs 22.9 %).",
        Rule(
            "at the largest depth mixit's accuracy (with its shaped residual, as the paper "
            "builds it) >= its depth-2 accuracy - {keep:.2f} and the random transformer's <= its "
            "depth-2 accuracy - {collapse:.2f}",
            {"keep": 0.10, "collapse": 0.20},
        ),
    ),
    Finding(
        "C9",
        "table7",
        "Token correlation (the covariance normalised by the tokens' norms; the paper's Table "
        "7 gives the covariance) grows with depth for the random transformer and stays flat "
        "for MixiT.",
        Rule(
            "at initialisation, token correlation at the largest depth minus at depth 2: "
            "random >= +{rise:.2f}, and |mixit| <= {flat:.2f}",
            {"rise": 0.10, "flat": 0.05},
        ),
    ),
    Finding(
        "C10",
        "figure3",
        "Frozen-QK trained on retrieval forms a previous-token head and an induction head "
        "(Figure 3).",
        Rule(
            "in each seed's Frozen-QK retrieval model some head has previous-token score at "
            "value positions (where retrieval needs it) >= {threshold:g} and some later-layer "
            "head has induction score >= {threshold:g} (the score at value positions decides "
            "since 2026-11-25; by_the_every_position_score gives the circuit by the score "
            "over every position, read before)",
            {"threshold": HEAD_THRESHOLD},
            EVERY_SEED,
        ),
    ),
    Finding(
        "C11",
        "throughput",
        "Training throughput: MixiT > Frozen-QK > standard (appendix D: +32.0 % and +23.9 %).",
        # The paper's claim is two sizes, not an order: a Frozen-QK that gains only its FLOP
        # saving (a few per cent) does not reproduce +23.9 %.
        Rule(
            "median samples/s at the language-model shape: mixit > frozen-qk > standard, and "
            "each of mixit's and frozen-qk's gain over standard >= {fraction:g} x the paper's "
            "(+{paper_mixit:.1%} and +{paper_frozen_qk:.1%})",
            {
                "fraction": 0.5,
                "paper_mixit": 1349.0 / 1022.8 - 1,
                "paper_frozen_qk": 1267.1 / 1022.8 - 1,
            },
            NOT_SEEDS,
        ),
        SEEN_BEFORE_THE_SIZE_RULES,
    ),
    Finding(
        "C12",
        "theorem21",
        "Theorem 2.1: at initialisation MixiT's token covariance converges to the SDE (2.4) "
        "as width and depth grow with depth / width = tau.",
        Rule(
            "the discrepancy between the simulated recursion and the SDE at tau falls from the "
            "smallest to the largest width and is <= {limit:.2f} at the largest",
            {"limit": 0.10},
        ),
        C12_PER_SEED,
    ),
]


def _claim(finding: Finding) -> Claim:
    return Claim(
        finding.id, finding.statement, finding.rule.text(), seen_seeds=list(finding.seen_seeds)
    )


CLAIMS: list[Claim] = [_claim(f) for f in FINDINGS]


def claim(claim_id: str) -> Claim:
    """A fresh, unjudged copy of one claim."""
    return next(_claim(f) for f in FINDINGS if f.id == claim_id)


def experiment_of(claim_id: str) -> str:
    """The name of the experiment that judges ``claim_id``."""
    return next(f.experiment for f in FINDINGS if f.id == claim_id)


def margin(claim_id: str, name: str = "margin", default: float | None = None) -> float:
    """One number of a claim's rule, as its experiment compares it; ``default`` for a rule
    that has no such number (KeyError without one)."""
    margins = next(f.rule.margins for f in FINDINGS if f.id == claim_id)
    if name not in margins and default is not None:
        return default
    return margins[name]
