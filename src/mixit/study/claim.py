"""A claim of the paper as mixit judges it: the finding, the rule fixed in code before any run,
the verdict its runs give (``Claim.judge``, ``refuse``, ``hold_back``), and the record that
``OUT/claims.json`` holds of it (``ClaimRecord``, ``ClaimsFile``, read back by
``read_claims``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Required

# typing_extensions, not typing: pydantic reads TypedDicts of Python 3.11 only from there.
from typing_extensions import TypedDict

from mixit.common.errors import UsageError
from mixit.common.io import JSONObject, read_record
from mixit.config.overrides import Setting
from mixit.study.words import UNJUDGED, Verdict

# A claim's verdicts (``mixit.study.words``): no reference where the reference did not learn
# its task (mixit.study.references); inconclusive for a "not reproduced" on runs cut off
# while still rising, or a rule its seeds left undecided (docs/reproduce.md, "Reading rules").
REPRODUCED, NOT_REPRODUCED, NOT_RUN = Verdict.REPRODUCED, Verdict.NOT_REPRODUCED, Verdict.NOT_RUN
NO_REFERENCE, INCONCLUSIVE = Verdict.NO_REFERENCE, Verdict.INCONCLUSIVE
# The seeds the presets, the scales' budgets and the claims' rules were chosen on while
# looking at results (docs/reproduce.md): a verdict confirmed elsewhere needs other seeds.
TUNED_ON_SEEDS = range(3)
# Where `mixit reproduce` starts its seeds unless told: seeds nothing was chosen on, so that
# its verdicts confirm (``--seed 0`` gives the seeds above).
FRESH_FIRST_SEED = 100
# The settings of a reproduction that an experiment may declare its verdict independent of.
SEEDS, OVERRIDES = "seeds", "overrides"


class ClaimRecord(TypedDict, total=False):
    """A claim as claims.json holds it (``Claim.to_json``): its fields, by name, the first
    three always there."""

    id: Required[str]
    statement: Required[str]
    rule: Required[str]
    measured: dict[str, Any]
    verdict: str
    construction: str
    ablation: str
    by_seeds: dict[str, str]
    independent_of: list[str]
    seen_seeds: list[int]
    no_reference: list[str]
    rule_verdict: str
    unfinished: list[str]
    failing: list[str]
    undecided: list[str]
    runs: list[str]
    same_runs_as: str


class ClaimsFile(TypedDict, total=False):
    """``OUT/claims.json``: the setting its claims were judged under (``Setting.record``) and
    the claims."""

    scale: Required[str]
    seeds: Required[int]
    first_seed: int
    overrides: dict[str, Setting]
    tuned: str | None
    tuned_on_seeds: list[int]
    tune: str | None
    presets: str | None
    confirmed_on_seeds: list[int]
    claims: Required[list[ClaimRecord]]


def read_claims(path: Path, remedy: str) -> ClaimsFile:
    """A claims.json held to ``ClaimsFile``, each claim with only the keys a ``Claim`` has:
    anything else is one UsageError naming the place, ending in ``remedy``."""
    stored = read_record(path, ClaimsFile, str(path), remedy)
    for number, claim in enumerate(stored["claims"]):
        unknown = sorted(set(claim) - set(ClaimRecord.__annotations__))
        if unknown:
            raise UsageError(f"{path}: claims.{number}: no claim has {unknown[0]!r}; {remedy}")
    return stored


@dataclass
class Claim:
    """One finding of the paper, the rule that judges it (fixed in code before any run) and
    the verdict on the measured numbers."""

    id: str
    statement: str
    rule: str
    measured: JSONObject = field(default_factory=dict)
    verdict: str = NOT_RUN
    # The model construction(s) of the runs behind the verdict (mixit.models.constructions).
    construction: str = ""
    # The detail of the authors' code the verdict turns on, from ``mixit reproduce ablation``
    # at the same scale and seeds (ablation.dependence); "" when no ablation covered it.
    ablation: str = ""
    # The verdict on each set of seeds this output was reproduced on ({"0-2": "reproduced",
    # "100-102": ...}): settings chosen on the first are confirmed by the others only.
    by_seeds: dict[str, str] = field(default_factory=dict)
    # The settings its verdict does not depend on (``Experiment.independent_of``): fresh
    # seeds cannot confirm a claim that is the same computation on every seed range.
    independent_of: list[str] = field(default_factory=list)
    # Seeds beyond TUNED_ON_SEEDS whose results were seen when the rule was written: their
    # verdicts are observations, and only other seeds confirm the rule.
    seen_seeds: list[int] = field(default_factory=list)
    # Why the standard runs the claim reads MixiT against did not learn their task; the
    # verdict is then NO_REFERENCE, and ``rule_verdict`` keeps what the rule alone said.
    no_reference: list[str] = field(default_factory=list)
    rule_verdict: str = ""
    # The runs the claim reads that were cut off while still rising; a "not reproduced" on
    # them is INCONCLUSIVE, and ``rule_verdict`` keeps what the rule alone said.
    unfinished: list[str] = field(default_factory=list)
    # A claim over several tasks (C5, C7): those its rule failed on (``refuse`` and
    # ``hold_back`` read them).
    failing: list[str] = field(default_factory=list)
    # The comparisons its seeds left undecided (claims.per_seed): the verdict is INCONCLUSIVE.
    undecided: list[str] = field(default_factory=list)
    # The run directories (named by config hash) of its headlines' tasks, sorted.
    runs: list[str] = field(default_factory=list)
    # Another committed output whose claim read the same runs ("results/X"; runs.same_runs).
    same_runs_as: str = ""

    def to_json(self) -> JSONObject:
        """The claim as claims.json holds it: every field, by its name."""
        return dict(vars(self))

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> Claim:
        """A claim as claims.json holds it (``ClaimRecord``); a key it does not have is a
        TypeError."""
        return cls(**stored)

    def judge(self, holds: bool | None, measured: Mapping[str, Any]) -> Claim:
        self.measured = dict(measured)
        self.verdict = {True: REPRODUCED, False: NOT_REPRODUCED, None: INCONCLUSIVE}[holds]
        return self

    def refuse(self, unlearned: Mapping[str, str]) -> Claim:
        """No verdict when the claim's reference did not learn its task (``unlearned``: why,
        by task; empty leaves the verdict as the rule gave it). A claim that reads several
        tasks is judged task by task: when its rule fails on a task whose reference learned
        (``failing``), it is not reproduced whatever the others' references did, and the
        tasks without one are named beside the verdict."""
        if not unlearned:
            return self
        self.no_reference = list(unlearned.values())
        failed_with_reference = [task for task in self.failing if task not in unlearned]
        if self.verdict == NOT_REPRODUCED and failed_with_reference:
            return self
        self.rule_verdict = self.verdict
        self.verdict = NO_REFERENCE
        return self

    def hold_back(self, unfinished: Mapping[str, Sequence[str]]) -> Claim:
        """A "not reproduced" on runs cut off while still rising (``unfinished``: by task, one
        line per model) becomes INCONCLUSIVE; an inconclusive verdict names them too. A claim
        that reads several tasks is held back only by the tasks it failed on (``failing``,
        rule of 2026-12-07): a failure on a task whose runs all converged stands, whatever
        still rises on the others, since every task must hold."""
        lines = [line for task_lines in unfinished.values() for line in task_lines]
        if self.verdict == NOT_REPRODUCED and any(t not in unfinished for t in self.failing):
            return self
        if lines and self.verdict in (NOT_REPRODUCED, INCONCLUSIVE):
            self.unfinished = lines
            self.rule_verdict = self.verdict
            self.verdict = INCONCLUSIVE
        return self

    def fresh_verdicts(self) -> list[str]:
        """The verdicts on sets of seeds that nothing was tuned on (``TUNED_ON_SEEDS``) and
        the rule's writer had not seen; [] for a claim independent of the seeds."""
        if SEEDS in self.independent_of:
            return []
        return [v for label, v in self.by_seeds.items() if not _tuned_on(label, self.seen_seeds)]

    def confirmed(self) -> bool | None:
        """Reproduced on a set of seeds that nothing was tuned on; None when no such set has
        judged it (a set without a reference judged nothing)."""
        fresh = [v for v in self.fresh_verdicts() if v not in UNJUDGED]
        return None if not fresh else all(v == REPRODUCED for v in fresh)


def _tuned_on(label: str, seen: Sequence[int] = ()) -> bool:
    """Whether a seed range ``first-last`` holds a seed the settings were tuned on or the
    rule's writer had seen."""
    first, last = (int(part) for part in label.split("-"))
    return any(seed in TUNED_ON_SEEDS or seed in seen for seed in range(first, last + 1))
