"""What an experiment is: the runs it needs, and how it turns their summaries into a report.

An experiment never trains anything itself: it lists ``Run``s, the runner trains those that
are not finished yet (once, shared between experiments), and ``report`` reads the summaries.
Experiments that measure rather than train (covariance at initialisation, throughput) do so
in ``report`` and cache the figures with ``cached_measurement``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Required

# typing_extensions, not typing: pydantic reads TypedDicts of Python 3.11 only from there.
from typing_extensions import TypedDict

from mixit.common.errors import UsageError
from mixit.common.io import JSONObject, read_record
from mixit.config.overrides import Setting, Settings
from mixit.config.schema import RunConfig
from mixit.running.launchers import LOCAL, Launch
from mixit.study.words import UNJUDGED, Verdict
from mixit.tasks import Split, get_task
from mixit.training.resolve import resolve_config
from mixit.training.rundir import RunSummary

SCALES = ("tiny", "small", "paper")
# The task preset each scale trains. `small` is the 2-core, two-hour reproduction: the tiny
# models without tiny's budget cuts (``SCALE_SETTINGS``), so a run it shares with `tiny` (same
# resolved config, same directory) is trained once. The tasks' own `small` presets are larger
# models for `mixit train`, too slow for a two-hour CPU reproduction (docs/reproduce.md).
SCALE_PRESET = {"tiny": "tiny", "small": "tiny", "paper": "paper"}
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


@dataclass(frozen=True)
class Reproduction:
    """What a reproduction runs under, shared by ``reproduce``, its ``estimate`` and the
    ablation: the scale, the seeds (``seeds`` of them from ``first_seed``: seeds 100-102
    confirm settings chosen on 0-2), where the runs go, the overrides applied to every run
    (dotted keys; they change the runs' hashes) and the ``best.json`` of ``mixit sweep
    --best`` to train each task and model with, and where the missing runs train
    (``launch``: here, ``launch.jobs`` at once, or submitted as a job array)."""

    scale: str = "tiny"
    seeds: int = 3
    first_seed: int = 0
    out: Path = Path("runs/reproduce")
    overrides: Settings = field(default_factory=dict)
    tuned: str | Path | None = None
    progress: bool | None = False  # None: bars on a terminal, lines in a log (common.progress)
    launch: Launch = LOCAL
    # Tune every group of runs first (mixit.tuning.halving, docs/tuning.md): `reproduce --tune lr`.
    tune: bool = False
    # Train each group of runs at the choice the scale's tuned presets recorded
    # (tuning/presets.py, applied by study/tuned_presets.py); off: the task presets' own rates
    # (`reproduce --no-tune`).
    presets: bool = True

    @property
    def jobs(self) -> int:
        """How many runs train at once here (``--jobs``)."""
        return self.launch.jobs

    @property
    def seed_range(self) -> range:
        return range(self.first_seed, self.first_seed + self.seeds)


@dataclass(frozen=True)
class Run:
    """One training run: a task, a model, a seed and the overrides on top of the scale preset."""

    task: str
    model: str
    seed: int
    overrides: tuple[tuple[str, Any], ...] = ()

    def config(
        self,
        scale: str,
        extra: Mapping[str, Any] | None = None,
        tuned: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
    ) -> RunConfig:
        """The resolved config: the scale's preset, then the tuned hyperparameters of this
        task and model (``mixit sweep --best``), then the run's own overrides, then ``extra``
        (a user's, e.g. train.steps)."""
        base = dict((tuned or {}).get((self.task, self.model), {}))
        overrides = {**base, **dict(self.overrides), **(extra or {})}
        return resolve_config(self.task, self.model, SCALE_PRESET[scale], self.seed, overrides)


# Shorter training than the tiny presets, so that `reproduce all --scale tiny --jobs 2` fits
# a laptop's half hour, only where the claims these tasks judge (C2, C4, C5) keep their
# verdicts. Addition, modular addition and memorization need their presets' whole budgets;
# docs/reproduce.md has the measurements behind each cut.
TINY_BUDGET: dict[str, Settings] = {
    # Half the preset's 2,400-step ceiling, which C1 and C3 keep their verdicts at; the
    # preset's stop at 0.99 applies.
    "retrieval": {"train.steps": 1200},
    "dyck": {"train.steps": 500, "train.eval_every": 250},
    "khop": {"train.steps": 500, "train.eval_every": 250},
    "lm": {"train.steps": 200, "train.eval_every": 100},
    "sentiment": {"train.steps": 500, "train.eval_every": 250},
}
# `small` keeps the presets' budgets and gives k-hop the paper's fixed depth of five layers
# (appendix C.1: hop_k needs O(log k) layers) and its 5,000 training steps (appendix C.2):
# shallower or shorter, no model separates from MixiT (docs/reproduce.md).
SCALE_SETTINGS: dict[str, dict[str, Settings]] = {
    "tiny": TINY_BUDGET,
    "small": {"khop": {"model.n_layer": 5, "train.steps": 5000}},
    "paper": {},
}


def runs(
    task: str,
    models: Sequence[str],
    seeds: range,
    scale: str,
    overrides: Settings | None = None,
) -> list[Run]:
    """Every (model, seed) of one task under the same overrides (after the scale's settings)."""
    settings = SCALE_SETTINGS[scale].get(task, {})
    frozen = tuple(sorted({**settings, **(overrides or {})}.items()))
    return [Run(task, model, seed, frozen) for model in models for seed in seeds]


def against_standard(label: str, task: str, seeds: range, scale: str) -> Headline:
    """MixiT's test accuracy on ``task``, read against the standard model's."""
    mixit, standard = runs(task, ["mixit"], seeds, scale), runs(task, ["standard"], seeds, scale)
    return Headline(label, tuple(mixit), reference=tuple(standard))


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


@dataclass
class Report:
    markdown: str
    results: JSONObject  # results.json
    claims: list[Claim] = field(default_factory=list)


Summaries = Mapping[Run, RunSummary]
Overrides = Settings
# The settings of a reproduction that an experiment may declare its verdict independent of.
SEEDS, OVERRIDES = "seeds", "overrides"


def measures_nothing(scale: str, seeds: range, overrides: Overrides) -> list[RunConfig]:
    return []


@dataclass(frozen=True)
class Headline:
    """A number a claim turns on: ``metric`` of ``runs`` (runs of the claim's experiment, one
    per seed), read against ``reference``: the standard runs that must have learned the task
    for the claim's verdict to mean anything (empty: the claim has no such reference)."""

    label: str
    runs: tuple[Run, ...]
    metric: str = "test_accuracy"
    reference: tuple[Run, ...] = ()


def no_headlines(scale: str, seeds: range) -> dict[str, list[Headline]]:
    return {}


def plans_nothing(scale: str, seeds: range) -> list[Run]:
    return []


@dataclass(frozen=True)
class Experiment:
    """``plan(scale, seeds)`` lists the runs (``seeds``: a range of seed numbers);
    ``report(scale, seeds, summaries, out, overrides)`` writes PNGs into ``out`` and returns
    the report, results and claims, the claims by ``judge(results)``, so that a verdict can be
    judged again from a stored ``results.json`` once the runs are gone.

    ``measures`` lists the configs a report builds and measures besides the runs (at
    initialisation, or for timing), under the reproduction's ``overrides``.
    ``independent_of`` names the settings (``SEEDS``, ``OVERRIDES``) the verdict does not
    depend on; a test holds every other setting to change what the experiment trains or
    measures. ``tune_inits``: see the field."""

    name: str
    title: str
    plan: Callable[[str, range], list[Run]]
    report: Callable[[str, range, Summaries, Path, Overrides], Report]
    judge: Callable[[Mapping[str, Any]], list[Claim]]
    measures: Callable[[str, range, Overrides], list[RunConfig]] = measures_nothing
    independent_of: tuple[str, ...] = ()
    headlines: Callable[[str, range], dict[str, list[Headline]]] = no_headlines
    # Under `reproduce --tune lr`, the initialisations (model.init) each group of runs also
    # chooses among; () keeps the experiment's own.
    tune_inits: tuple[str, ...] = ()
    # Whether the scale's tuned presets cover its runs (those of `reproduce all`); an
    # experiment outside it (the width questions) trains at the task presets' rates, or is
    # tuned by `--tune lr`, and says so (docs/width.md).
    tuned_presets: bool = True
    # Rows past the paper's (Frozen-MLP beside Tables 2 and 3, issue #105): trained, priced,
    # extended and reported with the plan; no claim reads them.
    beyond: Callable[[str, range], list[Run]] = plans_nothing

    def every_run(self, scale: str, seeds: range) -> list[Run]:
        """Every run it may train: its plan, then its rows past the paper's (which of them a
        reproduction trains: ``mixit.paper.runner.runs_trained``)."""
        return [*self.plan(scale, seeds), *self.beyond(scale, seeds)]


_TEST_SPLITS: dict[tuple[str, str, int], Split] = {}


def test_split(config: RunConfig) -> Split:
    """The test split of a run's data, built once per task config and seed: the models of one
    seed share it, so a report that analyses every run builds each dataset once."""
    task = json.dumps(config.to_dict()["task"], sort_keys=True, default=str)
    key = (config.task_name, task, config.seed)
    if key not in _TEST_SPLITS:
        _TEST_SPLITS[key] = get_task(config.task_name).make_data(config.task, config.seed).test
    return _TEST_SPLITS[key]


def settings_note(scale: str, tasks: Sequence[str]) -> str:
    """The scale's settings beyond the task presets (``SCALE_SETTINGS``) for ``tasks``."""
    parts = [f"{t}: {SCALE_SETTINGS[scale][t]}" for t in tasks if t in SCALE_SETTINGS[scale]]
    if not parts:
        return ""
    return f"Settings beyond the `{SCALE_PRESET[scale]}` task presets: {'; '.join(parts)}. "


def _tuned_on(label: str, seen: Sequence[int] = ()) -> bool:
    """Whether a seed range ``first-last`` holds a seed the settings were tuned on or the
    rule's writer had seen."""
    first, last = (int(part) for part in label.split("-"))
    return any(seed in TUNED_ON_SEEDS or seed in seen for seed in range(first, last + 1))
