"""The tuning protocol's rules (docs/tuning.md), apart from the machinery that trains them
(``mixit.tuning.halving``): the grid and its edges, the held-out share, the tuning seed, the rungs
of successive halving, the budget rule, and what counts as having learned."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from mixit.common.errors import RunsFailed
from mixit.config.schema import ARCH_INITS, RunConfig
from mixit.tasks.base import DEFAULT_TOLERANCE as DEFAULT_TOLERANCE
from mixit.training.rundir import RunSummary, read_records
from mixit.training.stopping import STOP_METRIC

# The reference must beat chance by this many tolerances on every seed to count as having
# learned the task. 5 x 0.02 puts retrieval's bar at about 0.37 over its context-guess chance
# of 0.27, above the 0.30-0.34 that standard seeds without an induction circuit reach, and
# counts tiny sentiment's 0.74 over its 0.58 majority class as learned. Chosen after seeing
# those numbers, before the fresh seeds that check it.
LEARNED_MARGIN = 5

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


# "Still rising" reads the gain over the last half of a run's budget, over at least this many
# evaluations: two points are one noisy difference.
RISING_WINDOW = 3


# The best a headline metric can be: a run within the tolerance of it has converged.
CEILING = {"test_accuracy": 1.0, "test_token_accuracy": 1.0}


# The date of the rules in force (docs/tuning.md): presets tuned under them record it, so a
# verdict under presets tuned by earlier rules says so.
RULES = "2026-12-01"


# The settings that name an initialisation: one the user or an experiment gives is not tuned.
INIT_KEYS = ("model.init", "model.arch_init")


class ValidationPoint(NamedTuple):
    """One rate's evidence in a tuning record: the rate, the initialisation it trained
    under (None: the preset's), its validation score and the steps it trained to."""

    lr: float
    init: str | None
    score: float
    steps: int


def validation_points(record: Mapping[str, Any]) -> list[ValidationPoint]:
    """A tuning record's ``validation`` evidence; records are written as labelled objects
    (``{"lr", "init", "score", "steps"}``), and read also as the lists written before."""
    return [
        ValidationPoint(**point) if isinstance(point, Mapping) else ValidationPoint(*point)
        for point in record["validation"]
    ]


@dataclass(frozen=True)
class Candidate:
    """One point of a grid: the rate ``base rate * GRID_STEP ** exponent`` under the
    initialisation ``init`` (None: the base config's own)."""

    exponent: int
    init: str | None = None


def candidate_config(base: RunConfig, candidate: Candidate, seed: int, steps: int = 0) -> RunConfig:
    """``base`` (a resolved config) as the tuning run of ``candidate``: on ``seed``, scored on
    the validation split, at the candidate's rate and initialisation (``model.init`` for
    mixit's decoder, ``model.arch_init`` for a ``model.arch`` model), and over ``steps`` when
    given. Its changes are typed values of the grid (a positive rate, an initialisation the
    field names) on a config resolved and validated already, so it is not validated again."""
    changes: dict[str, float] = {
        "lr": base.train.lr * GRID_STEP**candidate.exponent,
        "validation_fraction": VALIDATION_FRACTION,
    }
    if steps:
        changes["steps"] = steps
    config = dataclasses.replace(base.with_train(**changes), seed=seed)
    if candidate.init is not None:
        field_name = "init" if base.model.arch == "mixit" else "arch_init"
        config = config.with_model(**{field_name: candidate.init})
    return config


@dataclass(frozen=True)
class Scoring:
    """How the rules score a task: its headline metric: its name, ``sign`` +1 where it rises
    as it improves (-1 where it falls), and the litmus ``tolerance`` a gain must beat. Read
    once per task (``of``) and carried, so a rule never looks the task up again."""

    metric: str
    sign: float
    tolerance: float

    @classmethod
    def of(cls, config: RunConfig) -> Scoring:
        spec = config.task_spec
        return cls(spec.metric, 1.0 if spec.higher_is_better else -1.0, spec.tolerance)


@dataclass
class Trial:
    """A candidate's run on the tuning seed: its config and its score at each rung reached."""

    candidate: Candidate
    config: RunConfig
    scoring: Scoring
    scores: dict[int, float] = field(default_factory=dict)  # step -> validation metric
    steps_run: int = 0
    stopped: str = "halted"
    run_dir: str = ""

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


def survivors(alive: int, rungs_left: int) -> int:
    """How many of ``alive`` trials go on past a rung: the better half (rounded up) with two
    or more rungs to come, the best alone before the last rung, all after it."""
    if rungs_left == 0:
        return alive
    return 1 if rungs_left == 1 else math.ceil(alive / 2)


def halving_budgets(candidates: int, steps: int = 1000, eval_every: int = 1) -> float:
    """The budgets a halving of ``candidates`` trains, before edges, early stops and longer
    budgets: 1.75 for three rates (3/4 + 2/4 + 1/2)."""
    total, alive, reached = 0.0, candidates, 0
    rungs = rung_steps(steps, eval_every)
    for depth, step in enumerate(rungs):
        total += alive * (step - reached) / steps
        reached = step
        alive = survivors(alive, len(rungs) - depth - 1)
    return total


def score_at(run_dir: Path, step: int) -> dict[str, Any]:
    """A run's evaluation at ``step`` (a rung: an evaluation step) from its metrics.jsonl."""
    records = [r for r in read_records(run_dir / "metrics.jsonl") if r["step"] == step]
    if not records:
        raise RunsFailed(f"{run_dir}: no evaluation at step {step} to judge its rung by")
    return records[-1]


def still_rising(trial: Trial) -> bool:
    """Whether a full-budget run ended its budget still improving (``rising_at_end``)."""
    return rising_at_end(Path(trial.run_dir), trial.config, trial.stopped, trial.scoring)


def rising_at_end(
    run_dir: Path, config: RunConfig, stopped: str, line: Scoring | None = None
) -> bool:
    """Whether a run ended its budget still improving (rule 5 and the reading rules of
    2026-12-06, docs/tuning.md): stopped by the budget (not at its target nor on a plateau),
    its headline gained more than the task's litmus tolerance over the last half of the
    budget (over its last ``RISING_WINDOW`` evaluations where that half holds fewer), and it
    ended further than the tolerance from the metric's ceiling and from its target. A run at
    its ceiling has converged, whatever it gained on the way. ``line``: the task's headline,
    where the caller holds it."""
    if stopped != "budget":
        return False
    line = line or Scoring.of(config)
    metric = line.metric
    records = [r for r in read_records(run_dir / "metrics.jsonl") if metric in r]
    window = [r for r in records if r["step"] >= config.train.steps / 2]
    if len(window) < RISING_WINDOW:
        window = records[-RISING_WINDOW:]
    if len(window) < 2:
        return False
    last = window[-1][metric]
    if at_top(last, config.train.stop_at, line):
        return False
    return line.sign * (last - window[0][metric]) > line.tolerance


def at_top(value: float, target: float | None, line: Scoring) -> bool:
    """Whether a headline value is within the task's litmus tolerance of the metric's ceiling
    or of the run's ``target`` (``train.stop_at``): a run there has converged, and no budget
    would raise it by more than the tolerance."""
    reached = target is not None and line.sign * (target - value) <= line.tolerance
    return reached or near_ceiling(value, line.metric, line.tolerance)


def near_ceiling(value: float, metric: str, margin: float) -> bool:
    """Whether ``value`` is within ``margin`` of ``metric``'s ceiling (accuracy 1.0); never
    for a metric without one."""
    ceiling = CEILING.get(metric)
    return ceiling is not None and ceiling - value <= margin


def best_held_out(run_dir: Path, config: RunConfig) -> tuple[float, int] | None:
    """A verdict run read at its best held-out point (reading rule of 2026-12-06): its
    headline test metric at the first evaluation where its held-out stop split
    (``STOP_METRIC``, the rows its stop rule reads) was best, and that step; None for a run
    evaluated without one (no stop rule, or a tuning run, which reads its validation split)."""
    best = best_held_out_record(run_dir, config)
    return None if best is None else (best[Scoring.of(config).metric], best["step"])


def best_held_out_record(run_dir: Path, config: RunConfig) -> dict[str, Any] | None:
    """The evaluation ``best_held_out`` reads, whole (metrics.jsonl's record); None for a run
    evaluated without a held-out stop split, or kept without its metrics.jsonl (a record of
    its config and summary alone reads as its summary says)."""
    line = Scoring.of(config)
    path = run_dir / "metrics.jsonl"
    records = read_records(path) if path.is_file() else []
    held = [record for record in records if STOP_METRIC in record and line.metric in record]
    if not held:
        return None
    return max(held, key=lambda record: line.sign * record[STOP_METRIC])  # the first of equals


def summary_at_best(summary: RunSummary, config: RunConfig) -> RunSummary:
    """``summary`` with its evaluation metrics read at the run's best held-out point
    (``best_held_out_record``), and that step (``read_at``), as the claims of ``reproduce``
    read it; unchanged for a run evaluated without a held-out stop split. Its summary.json
    and results.csv keep the last evaluation."""
    best = best_held_out_record(Path(summary["run_dir"]), config)
    if best is None:
        return summary
    metrics = {key: best.get(key, value) for key, value in summary["metrics"].items()}
    return {**summary, "metrics": metrics, "read_at": best["step"]}


def learned(
    validation: Sequence[ValidationPoint],
    budgets: Sequence[Mapping[str, Any]],
    base: RunConfig,
    seed: int,
) -> bool:
    """Whether any rate tried took the model clearly beyond chance (``LEARNED_MARGIN``): at a
    rung of the halving (``validation``), or at the chosen rate with a budget the budget rule
    doubled (``budgets``)."""
    spec = base.task_spec
    chance = spec.chance(spec.make_data(base.task, seed), base.task)
    if chance is None:
        return True
    better = 1.0 if spec.higher_is_better else -1.0
    scores = [point.score for point in validation]
    scores += [budget["score"] for budget in budgets]
    best = max(scores, key=lambda s: better * s)
    return not short_of_chance({seed: best}, chance, spec.tolerance, spec.higher_is_better)


def grid(init: str | None = None) -> list[Candidate]:
    return [Candidate(k, init) for k in GRID]


def initialisations(
    base: RunConfig, asked: Sequence[str] = (), fixed: bool = False
) -> tuple[str, ...]:
    """Rule 6: the initialisations a model chooses among on validation, each model on its own:
    those ``asked`` (an experiment's), else an ``--arch`` model's own and ``small-output``, and
    mixit's decoder its preset's and ``small-output``; () when there is one (``fixed``: the
    user or the experiment set it)."""
    if asked:
        return tuple(asked)
    if fixed:
        return ()
    options = ARCH_INITS if base.model.arch != "mixit" else (base.model.init, "small-output")
    unique = tuple(dict.fromkeys(options))
    return unique if len(unique) > 1 else ()


def capped_record(record: Mapping[str, Any]) -> bool:
    """Whether a tuning record's budget rule reached the cap still rising: its ``capped``,
    or, in a record written before it, a last budget still rising at the cap."""
    if "capped" in record:
        return bool(record["capped"])
    budgets = record.get("budgets") or [{}]
    last, first = budgets[-1], budgets[0]
    return bool(last.get("rising")) and 2 * last["steps"] > BUDGET_CAP * first["steps"]


def short_of_chance(
    by_seed: Mapping[int, float], chance: float, tolerance: float, higher_is_better: bool = True
) -> str:
    """How a model's seeds fall short of learning a task: the seeds not clearly beyond its
    ``chance`` (``LEARNED_MARGIN`` tolerances), as a phrase; "" when every seed is beyond."""
    better = 1.0 if higher_is_better else -1.0
    bar = chance + better * LEARNED_MARGIN * tolerance
    short = [(s, v) for s, v in by_seed.items() if better * (v - bar) < 0]
    if not short:
        return ""
    listed = ", ".join(f"{v:.3f} (seed {s})" for s, v in short)
    return f"reaches {listed}, not clearly beyond chance {chance:.3f} (the bar: {bar:.3f})"
