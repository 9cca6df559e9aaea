"""The tuning protocol (docs/tuning.md): each model's learning rate, budget and, for a
``model.arch`` model, initialisation, chosen on held-out training data and a seed that gives
no verdict, by successive halving over a grid that extends at its edges.

Every run of the grid is the full-budget run; between rungs it halts at ``train.halt_at``
(an execution setting) and later resumes from its checkpoint, so a rung's score is the score
of that very run part-way through its schedule, and a promoted run pays only for the steps it
has not trained yet.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mixit.config import ARCH_INITS, RunConfig
from mixit.launchers import Launch
from mixit.litmus import DEFAULT_TOLERANCE, short_of_chance
from mixit.resolve import resolve_config
from mixit.rundir import read_records
from mixit.runs import train_missing
from mixit.tasks import get_task

# The grid: the preset's rate times GRID_STEP ** k for k in GRID, extended one step at a time
# at an edge up to GRID_STEP ** +-EDGE_BOUND (Table 8 of the paper spans one to two decades).
GRID_STEP = 10**0.5
GRID = (-1, 0, 1)
EDGE_BOUND = 3
# The share of the training split held out to choose on (train.validation_fraction).
VALIDATION_FRACTION = 0.1
# A seed none of the verdict seeds 0-2, 100-102 and 200-202 is.
TUNING_SEED = 1000
# Successive halving: every rate trains to the first rung, the better half to the second,
# the best of those to the whole budget.
RUNG_FRACTIONS = (0.25, 0.5)
# A model still rising at the end of its budget trains again at twice it, up to this many
# times the preset's steps.
BUDGET_CAP = 4


@dataclass(frozen=True)
class Candidate:
    """One point of a model's grid: the rate ``preset rate * GRID_STEP ** exponent`` under
    the initialisation ``init`` (None: the config's own)."""

    exponent: int
    init: str | None = None


@dataclass
class Trial:
    """A candidate's run on the tuning seed: its config and its score at each rung reached."""

    candidate: Candidate
    config: RunConfig
    scores: dict[int, float] = field(default_factory=dict)  # step -> validation metric
    steps_run: int = 0
    stopped: str = "halted"
    run_dir: str = ""
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.config.train.lr

    @property
    def score(self) -> float:
        return self.scores[max(self.scores)]


def tuning_seed(verdict_seeds: Iterable[int]) -> int:
    """``TUNING_SEED``, or the first seed after it that gives no verdict here."""
    taken = set(verdict_seeds)
    seed = TUNING_SEED
    while seed in taken:
        seed += 1
    return seed


def rung_steps(steps: int, eval_every: int) -> list[int]:
    """The steps at which halving compares: the evaluation steps nearest each fraction of
    ``RUNG_FRACTIONS`` of the budget (distinct, below it), then the budget itself."""
    nearest = (max(eval_every, round(steps * f / eval_every) * eval_every) for f in RUNG_FRACTIONS)
    return [*sorted({step for step in nearest if step < steps}), steps]


@dataclass
class Tuner:
    """Tunes the ``models`` of one task on the tuning seed, into ``runs_dir``."""

    task: str
    preset: str
    seed: int
    overrides: Mapping[str, Any]
    runs_dir: Path
    launch: Launch = field(default_factory=Launch)
    progress: bool | None = None

    def __post_init__(self) -> None:
        spec = get_task(self.task)
        self.metric = spec.metric
        self.better = 1.0 if spec.higher_is_better else -1.0
        self.tolerance = DEFAULT_TOLERANCE.get(spec.metric, 0.02)

    def config(self, model: str, candidate: Candidate, **train: Any) -> RunConfig:
        base = resolve_config(self.task, model, self.preset, self.seed, self.overrides)
        extra = {f"train.{key}": value for key, value in train.items()}
        if candidate.init is not None:
            extra["model.arch_init"] = candidate.init
        return resolve_config(
            self.task,
            model,
            self.preset,
            self.seed,
            {
                **self.overrides,
                "train.lr": base.train.lr * GRID_STEP**candidate.exponent,
                "train.validation_fraction": VALIDATION_FRACTION,
                **extra,
            },
        )

    def train_to(self, trials: Sequence[Trial], step: int) -> None:
        """Train (or resume) every trial's run up to ``step`` (its whole budget when that is
        its last step) and record its score there."""
        configs = {}
        for i, trial in enumerate(trials):
            if trial.stopped != "halted":
                continue  # finished early (target or plateau): its score is final
            config = trial.config
            config.train.halt_at = 0 if step >= config.train.steps else step
            configs[i] = config
        summaries, _ = train_missing(configs, self.runs_dir, self.progress, launch=self.launch)
        for i, summary in summaries.items():
            trial = trials[i]
            trial.steps_run, trial.stopped = summary["steps_run"], summary["stopped"]
            trial.scores[summary["steps_run"]] = summary["metrics"][self.metric]
            trial.run_dir, trial.seconds = summary["run_dir"], summary.get("train_seconds", 0.0)

    def rank(self, trials: Sequence[Trial]) -> list[Trial]:
        """Best first: the score, then an earlier stop at the target, then the rate nearer
        the preset's, then the lower rate."""

        def key(trial: Trial) -> tuple:
            solved = trial.stopped == "target"
            return (
                -self.better * trial.score,
                trial.steps_run if solved else math.inf,
                abs(trial.candidate.exponent),
                trial.candidate.exponent,
            )

        return sorted(trials, key=key)

    def halve(self, grids: Mapping[str, Sequence[Candidate]]) -> dict[str, dict[str, Any]]:
        """Successive halving of every model's grid at once (their runs train side by side);
        each model's record (``record``)."""
        trials = {
            model: [Trial(c, self.config(model, c)) for c in grid] for model, grid in grids.items()
        }
        first = next(iter(trials.values()))[0].config.train
        rungs = rung_steps(first.steps, first.eval_every)
        live = {model: list(ts) for model, ts in trials.items()}
        extended: dict[str, list[float]] = {model: [] for model in grids}
        history: list[dict[str, Any]] = []
        for depth, step in enumerate(rungs):
            self.train_to([t for ts in live.values() for t in ts], step)
            while added := self.extend(trials, live, extended):
                self.train_to(added, step)
            history.append(
                {"step": step, **{m: [[t.rate, t.score] for t in ts] for m, ts in live.items()}}
            )
            if depth + 1 < len(rungs):
                keep = 1 if depth + 2 == len(rungs) else None
                live = {m: self.promote(ts, keep) for m, ts in live.items()}
        return {
            model: self.record(
                model, trials[model], self.rank(live[model])[0], extended[model], history
            )
            for model in grids
        }

    def promote(self, trials: Sequence[Trial], keep: int | None) -> list[Trial]:
        """The better half (rounded up) of a rung's trials, or the best ``keep``."""
        ranked = self.rank(trials)
        return ranked[: keep or math.ceil(len(ranked) / 2)]

    def extend(
        self,
        trials: dict[str, list[Trial]],
        live: dict[str, list[Trial]],
        extended: dict[str, list[float]],
    ) -> list[Trial]:
        """The new trials of the models whose best live rate is the lowest or highest rate
        tried (under its initialisation), one grid step beyond it, within ``EDGE_BOUND``."""
        added = []
        for model, ts in live.items():
            best = self.rank(ts)[0].candidate
            tried = [t.candidate.exponent for t in trials[model] if t.candidate.init == best.init]
            step = -1 if best.exponent == min(tried) else 1 if best.exponent == max(tried) else 0
            beyond = Candidate(best.exponent + step, best.init)
            if step == 0 or abs(beyond.exponent) > EDGE_BOUND:
                continue
            trial = Trial(beyond, self.config(model, beyond))
            trials[model].append(trial)
            live[model].append(trial)
            extended[model].append(trial.rate)
            added.append(trial)
        return added

    def record(
        self,
        model: str,
        trials: Sequence[Trial],
        winner: Trial,
        extended: Sequence[float],
        history: Sequence[Mapping[str, Any]],
    ) -> dict[str, Any]:
        """What ``tuning.json`` keeps of one model's halving."""
        exponents = [
            t.candidate.exponent for t in trials if t.candidate.init == winner.candidate.init
        ]
        at_bound = abs(winner.candidate.exponent) == EDGE_BOUND and winner.candidate.exponent in (
            min(exponents),
            max(exponents),
        )
        edge = "bound" if at_bound else "extended" if extended else "interior"
        return {
            "train.lr": winner.rate,
            "init": winner.candidate.init,
            "edge": edge,
            "extended_with": list(extended),
            "validation": [
                [t.rate, t.candidate.init, t.score, t.steps_run]
                for t in sorted(trials, key=lambda t: (str(t.candidate.init), t.rate))
            ],
            "rungs": [
                {"step": rung["step"], "scores": rung[model]} for rung in history if model in rung
            ],
            "winner": winner,
        }


def still_rising(trial: Trial, metric: str, better: float, tolerance: float) -> bool:
    """Whether a full-budget run ended its budget still improving: stopped by the budget (not
    at its target nor on a plateau), its last validation score beyond its score at half the
    budget by more than ``tolerance``."""
    if trial.stopped != "budget":
        return False
    records = read_records(Path(trial.run_dir) / "metrics.jsonl")
    half = [r for r in records if r["step"] <= trial.config.train.steps / 2]
    if not half:
        return False
    return better * (records[-1][metric] - half[-1][metric]) > tolerance


def budget(tuner: Tuner, model: str, winner: Trial) -> tuple[int, list[dict[str, Any]]]:
    """The steps the model's verdict runs train (docs/tuning.md, rule 5) and each budget
    tried: while the run at the current budget is still rising, twice the budget, up to
    ``BUDGET_CAP`` times the preset's."""
    preset_steps = winner.config.train.steps
    trial, tried = winner, []
    while True:
        rising = still_rising(trial, tuner.metric, tuner.better, tuner.tolerance)
        steps = trial.config.train.steps
        tried.append(
            {"steps": steps, "score": trial.score, "stopped": trial.stopped, "rising": rising}
        )
        if not rising or 2 * steps > BUDGET_CAP * preset_steps:
            return steps, tried
        longer = Trial(trial.candidate, tuner.config(model, trial.candidate, steps=2 * steps))
        tuner.train_to([longer], 2 * steps)
        trial = longer


def learned(tuner: Tuner, record: Mapping[str, Any], chance: float | None) -> bool:
    """Whether any rate tried took the model clearly beyond chance (``LEARNED_MARGIN``)."""
    if chance is None:
        return True
    scores = [score for _, _, score, _ in record["validation"]]
    best = max(scores, key=lambda s: tuner.better * s)
    return not short_of_chance({tuner.seed: best}, chance, tuner.tolerance, tuner.better > 0)


def grid(init: str | None = None) -> list[Candidate]:
    return [Candidate(k, init) for k in GRID]


def tune(
    task: str,
    models: Sequence[str],
    preset: str,
    verdict_seeds: Iterable[int],
    overrides: Mapping[str, Any],
    runs_dir: Path,
    launch: Launch | None = None,
    progress: bool | None = None,
) -> dict[str, dict[str, Any]]:
    """Each model's tuned settings under the protocol, with what chose them:
    ``{model: {"overrides": {...}, "train.lr", "steps", "init", "edge", "validation", ...}}``.

    For a ``model.arch`` model without a ``model.arch_init`` override, the standard model
    tunes over both initialisations first, and its winner's initialisation applies to every
    other model."""
    tuner = Tuner(task, preset, tuning_seed(verdict_seeds), overrides, runs_dir)
    tuner.launch, tuner.progress = launch or Launch(), progress
    probe = resolve_config(task, models[0], preset, tuner.seed, overrides)
    chooses_init = probe.model.arch != "mixit" and "model.arch_init" not in overrides
    records: dict[str, dict[str, Any]] = {}
    rest = list(models)
    init = None
    if chooses_init and "standard" in rest:
        both = [c for arch_init in ARCH_INITS for c in grid(arch_init)]
        records |= tuner.halve({"standard": both})
        init = records["standard"]["init"]
        rest.remove("standard")
    elif chooses_init:
        init = probe.model.arch_init
    if rest:
        records |= tuner.halve({model: grid(init) for model in rest})
    chance = _chance(probe)
    for model in models:
        record = records[model]
        winner: Trial = record.pop("winner")
        steps, budgets = budget(tuner, model, winner)
        record |= {"steps": steps, "budgets": budgets, "seed": tuner.seed}
        record["init_tuned"] = chooses_init and "standard" in models
        record["learned"] = learned(tuner, record, chance)
        chosen = {"train.lr": winner.rate, "train.steps": steps}
        if winner.candidate.init is not None:
            chosen["model.arch_init"] = winner.candidate.init
        record["overrides"] = chosen
    return {model: records[model] for model in models}


def _chance(config: RunConfig) -> float | None:
    spec = get_task(config.task_name)
    return spec.chance(spec.make_data(config.task, config.seed), config.task)
