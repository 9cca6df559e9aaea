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
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.config.overrides import Setting
from mixit.config.schema import RunConfig
from mixit.running.launchers import Launch
from mixit.running.runs import train_missing
from mixit.tuning.records import Budget, Rung, TuningRecord
from mixit.tuning.rules import (
    BUDGET_CAP,
    EDGE_BOUND,
    Candidate,
    Scoring,
    Trial,
    ValidationPoint,
    candidate_config,
    grid,
    learned,
    rung_steps,
    score_at,
    still_rising,
    survivors,
    tuning_seed,
)


@dataclass(frozen=True)
class Halving:
    """One key's successive halving: its record, and the trial it chose (alive: the budget
    rule trains it on)."""

    record: TuningRecord
    winner: Trial


@dataclass
class Tuner:
    """Runs the halving of several grids at once on the tuning ``seed``, into ``runs_dir``:
    each grid belongs to a key (a model, or an experiment's group of runs) with its base
    config."""

    seed: int
    runs_dir: Path
    launch: Launch = field(default_factory=Launch)
    progress: bool | None = None
    # ``--max-hours``: no grid step past an edge and no budget doubling whose run, priced by
    # the run it grows from, would take the tuning's training past this many hours; each
    # key's ``cut`` says what was left out. Counted in the runs' own training seconds
    # (``spent``, by run folder), not the wall clock: a tuning resumed from its runs counts
    # what they cost, not how fast they were found.
    max_hours: float | None = None
    spent: dict[str, float] = field(default_factory=dict)
    cut: dict[Hashable, list[str]] = field(default_factory=dict)

    def affords(self, key: Hashable, seconds: float, what: str) -> bool:
        """Whether ``seconds`` more of training stay within ``max_hours``; if not, ``what``
        is recorded as left out for ``key``."""
        if self.max_hours is None:
            return True
        if sum(self.spent.values()) + seconds <= self.max_hours * 3600:
            return True
        left_out = self.cut.setdefault(key, [])
        if what not in left_out:
            left_out.append(what)
        return False

    def seconds(self, trial: Trial) -> float:
        """The training seconds ``trial``'s run has cost so far: what growing it costs."""
        return self.spent.get(trial.run_dir, 0.0)

    def train_to(self, trials: Sequence[Trial], step: int) -> None:
        """Train (or resume) every trial's run up to ``step`` (its whole budget when that is
        its last step) and record its score there."""
        configs = {}
        for i, trial in enumerate(trials):
            if trial.stopped != "halted":
                continue  # finished early (target or plateau): its score is final
            halt = 0 if step >= trial.config.train.steps else step
            configs[i] = trial.config.with_train(halt_at=halt)
        summaries, _ = train_missing(configs, self.runs_dir, self.progress, launch=self.launch)
        for i, summary in summaries.items():
            trial = trials[i]
            trial.run_dir = summary["run_dir"]
            self.spent[trial.run_dir] = summary.get("train_seconds", 0.0)
            metric = trial.scoring.metric
            if summary["steps_run"] > step:
                # Finished past this rung in an earlier call (a resumed tuning): it is judged
                # at the rung, as the uninterrupted halving judged it.
                record = score_at(Path(trial.run_dir), step)
                trial.steps_run, trial.stopped = step, "halted"
                trial.scores[step] = record[metric]
                continue
            trial.steps_run, trial.stopped = summary["steps_run"], summary["stopped"]
            trial.scores[summary["steps_run"]] = summary["metrics"][metric]

    @staticmethod
    def rank(trials: Sequence[Trial]) -> list[Trial]:
        """Best first: the score, then an earlier stop at the target, then the rate nearer
        the base's, then the lower rate."""

        def key(trial: Trial) -> tuple:
            solved = trial.stopped == "target"
            return (
                -trial.scoring.sign * trial.score,
                trial.steps_run if solved else math.inf,
                abs(trial.candidate.exponent),
                trial.candidate.exponent,
            )

        return sorted(trials, key=key)

    def halve(
        self, grids: Mapping[Hashable, tuple[RunConfig, Sequence[Candidate]]]
    ) -> dict[Hashable, Halving]:
        """Successive halving of every key's grid at once (their runs train side by side):
        each key's record (``record``) and its winning trial."""
        trials = {
            key: [Trial(c, candidate_config(base, c, self.seed), Scoring.of(base)) for c in grid]
            for key, (base, grid) in grids.items()
        }
        rungs = {
            key: rung_steps(base.train.steps, base.train.eval_every)
            for key, (base, _) in grids.items()
        }
        live = {key: list(ts) for key, ts in trials.items()}
        extended: dict[Hashable, list[float]] = {key: [] for key in grids}
        history: dict[Hashable, list[Rung]] = {key: [] for key in grids}
        for depth in range(max(len(r) for r in rungs.values())):
            at = {key: r[min(depth, len(r) - 1)] for key, r in rungs.items()}
            self.train_all(live, at)
            while added := self.extend(grids, trials, live, extended):
                self.train_all(added, at)
            for key, ts in live.items():
                if depth < len(rungs[key]):
                    history[key].append(
                        {"step": at[key], "scores": [[t.rate, t.score] for t in ts]}
                    )
                    live[key] = self.promote(ts, len(rungs[key]) - depth - 1)
        halved = {}
        for key in grids:
            record = self.record(trials[key], live[key][0], extended[key], history[key])
            record.cut = list(self.cut.get(key, []))
            halved[key] = Halving(record, live[key][0])
        return halved

    def train_all(
        self, trials: Mapping[Hashable, Sequence[Trial]], at: Mapping[Hashable, int]
    ) -> None:
        """Every key's trials up to its own step ``at[key]``, grouped by step."""
        for step in sorted(set(at.values())):
            self.train_to([t for key, ts in trials.items() if at[key] == step for t in ts], step)

    def promote(self, trials: Sequence[Trial], rungs_left: int) -> list[Trial]:
        """Those that go on (``survivors``), best first."""
        return self.rank(trials)[: survivors(len(trials), rungs_left)]

    def extend(
        self,
        grids: Mapping[Hashable, tuple[RunConfig, Sequence[Candidate]]],
        trials: dict[Hashable, list[Trial]],
        live: dict[Hashable, list[Trial]],
        extended: dict[Hashable, list[float]],
    ) -> dict[Hashable, list[Trial]]:
        """The new trials of the keys whose best live rate is the lowest or highest rate tried
        (under its initialisation) and beats the live rate next to it at this rung by more than
        the task's litmus tolerance: one grid step beyond it, within ``EDGE_BOUND``. A smaller
        lead is noise, and growing the grid on it costs more than it can find."""
        added: dict[Hashable, list[Trial]] = {}
        for key, ts in live.items():
            best = self.rank(ts)[0]
            init = best.candidate.init
            tried = [t.candidate.exponent for t in trials[key] if t.candidate.init == init]
            k = best.candidate.exponent
            step = -1 if k == min(tried) else 1 if k == max(tried) else 0
            if step == 0 or abs(k + step) > EDGE_BOUND or not self.leads(best, ts, -step):
                continue
            beyond = Candidate(k + step, init)
            # The new rate trains to the rung the best one reached: about its seconds.
            past = f"the grid's step past train.lr={best.rate:g} (its best rate at an edge)"
            if not self.affords(key, self.seconds(best), past):
                continue
            config = candidate_config(grids[key][0], beyond, self.seed)
            trial = Trial(beyond, config, best.scoring)
            trials[key].append(trial)
            live[key].append(trial)
            extended[key].append(trial.rate)
            added[key] = [trial]
        return added

    @staticmethod
    def leads(best: Trial, live: Sequence[Trial], inward: int) -> bool:
        """Whether ``best`` beats the live trial one grid step ``inward`` of it (same
        initialisation, scored at the same step) by more than the tolerance."""
        inside = Candidate(best.candidate.exponent + inward, best.candidate.init)
        neighbours = [t for t in live if t.candidate == inside]
        if not neighbours:
            return False
        gain = best.scoring.sign * (best.score - neighbours[0].score)
        return gain > best.scoring.tolerance

    @staticmethod
    def record(
        trials: Sequence[Trial],
        winner: Trial,
        extended: Sequence[float],
        history: Sequence[Mapping[str, Any]],
    ) -> TuningRecord:
        """What ``tuning.json`` keeps of one key's halving."""
        init = winner.candidate.init
        exponents = [t.candidate.exponent for t in trials if t.candidate.init == init]
        k = winner.candidate.exponent
        at_edge = k in (min(exponents), max(exponents))
        if at_edge:  # the grid stopped there: at its bound, or within the tolerance
            edge = "bound" if abs(k) == EDGE_BOUND else "edge"
        else:
            edge = "extended" if extended else "interior"
        return TuningRecord(
            lr=winner.rate,
            init=init,
            edge=edge,
            extended_with=list(extended),
            validation=[
                ValidationPoint(t.rate, t.candidate.init, t.score, t.steps_run)
                for t in sorted(trials, key=lambda t: (str(t.candidate.init), t.rate))
            ],
            rungs=[dict(rung) for rung in history],
            run_dir=winner.run_dir,
        )


def budget(tuner: Tuner, base: RunConfig, winner: Trial) -> tuple[int, list[Budget]]:
    """``budgets`` for one key."""
    return budgets(tuner, {None: (base, winner)})[None]


def doubled(
    tuner: Tuner,
    winners: Mapping[Hashable, tuple[RunConfig, Trial]],
    tried: dict[Hashable, list[Budget]],
) -> dict[Hashable, Trial]:
    """Rule 5 from each key's current run: while it is still rising, its run at twice the
    budget, up to ``BUDGET_CAP`` times the base's; each key's last run, its budgets tried
    appended to ``tried``. The keys' longer runs train side by side."""
    current = {key: trial for key, (_, trial) in winners.items()}
    final: dict[Hashable, Trial] = {}
    while current:
        longer: dict[Hashable, Trial] = {}
        for key, trial in current.items():
            rising = still_rising(trial)
            steps = trial.config.train.steps
            capped = rising and 2 * steps > BUDGET_CAP * winners[key][0].train.steps
            tried[key].append(
                {"steps": steps, "score": trial.score, "stopped": trial.stopped, "rising": rising}
                | ({"capped": True} if capped else {})
            )
            if not rising or capped:
                final[key] = trial
                continue
            # A fresh schedule over twice the budget: twice the steps at the pace it ran.
            seconds = 2 * steps * tuner.seconds(trial) / max(trial.steps_run, 1)
            what = f"the budget's doubling from {steps:,} steps (still rising)"
            if not tuner.affords(key, seconds, what):
                tried[key][-1]["cut"] = True
                final[key] = trial
                continue
            longer[key] = at_steps(trial, 2 * steps)
        tuner.train_all(
            {key: [trial] for key, trial in longer.items()},
            {key: trial.config.train.steps for key, trial in longer.items()},
        )
        current = longer
    return final


def at_steps(trial: Trial, steps: int) -> Trial:
    """``trial``'s candidate over a budget of ``steps`` (a fresh schedule)."""
    return Trial(trial.candidate, trial.config.with_train(steps=steps), trial.scoring)


def budgets(
    tuner: Tuner,
    winners: Mapping[Hashable, tuple[RunConfig, Trial]],
    families: Mapping[Hashable, Hashable] | None = None,
    floors: Mapping[Hashable, int] | None = None,
) -> dict[Hashable, tuple[int, list[Budget]]]:
    """Per key, from its base config and its winner: the steps the verdict runs train
    (docs/tuning.md, rule 5) and each budget tried. While the run at the current budget is
    still rising, twice the budget, up to ``BUDGET_CAP`` times the base's. Then one budget per
    family (``families[key]``; None: every key is one family, a comparison): a key whose
    budget ended below the largest its family reached (or its ``floors[family]``, a budget the
    family's other members were tuned to earlier) trains again at that one, on the tuning
    seed, and rule 5 goes on from there; repeated until the family agrees."""
    family_of = families or dict.fromkeys(winners)
    tried: dict[Hashable, list[Budget]] = {key: [] for key in winners}
    final = doubled(tuner, winners, tried)
    while True:
        largest: dict[Hashable, int] = dict(floors or {})
        for key, trial in final.items():
            family = family_of[key]
            largest[family] = max(largest.get(family, 0), trial.config.train.steps)
        below = {
            key: (winners[key][0], at_steps(trial, largest[family_of[key]]))
            for key, trial in final.items()
            if trial.config.train.steps < largest[family_of[key]]
        }
        if not below:
            break
        tuner.train_all(
            {key: [trial] for key, (_, trial) in below.items()},
            {key: trial.config.train.steps for key, (_, trial) in below.items()},
        )
        first = {key: len(tried[key]) for key in below}
        final |= doubled(tuner, below, tried)
        for key, index in first.items():
            tried[key][index]["raised"] = True  # the family's budget, not its own rule's
    return {key: (final[key].config.train.steps, tried[key]) for key in winners}


def tune(
    bases: Mapping[Hashable, RunConfig],
    verdict_seeds: Iterable[int],
    runs_dir: Path,
    *,
    inits: Mapping[Hashable, Sequence[str]] | None = None,
    families: Mapping[Hashable, Hashable] | None = None,
    launch: Launch | None = None,
    progress: bool | None = None,
    max_hours: float | None = None,
    floors: Mapping[Hashable, int] | None = None,
) -> dict[Hashable, TuningRecord]:
    """Each key's tuned settings under the protocol, from its base config (a verdict run's),
    with what chose them: ``{key: TuningRecord}``, whose ``overrides`` the verdict runs take.

    ``inits[key]``: the initialisations that key chooses among as well, on its own
    (``tuning_rules.initialisations``; none: its base's). ``families[key]``: the keys whose
    verdict runs train one budget, the largest any of them reached (None: all keys, a
    comparison), at least ``floors[family]`` where given; a key raised to it records its own
    rule's budget as ``raised_from``.
    ``max_hours``: the grid's steps past its edges and the budget's doublings that would end
    past it are left out, and each record's ``cut`` says which."""
    launch = launch or Launch()
    if launch.submits and not launch.wait:
        raise UsageError(
            "tuning compares each rung's runs before it trains the next: drop --no-wait "
            "(or tune nothing: --no-tune)"
        )
    tuner = Tuner(tuning_seed(verdict_seeds), runs_dir, launch, progress, max_hours)
    choosing = {key: tuple((inits or {}).get(key, ())) for key in bases}
    halved = tuner.halve(
        {
            key: (base, [c for init in choosing[key] for c in grid(init)] or grid())
            for key, base in bases.items()
        }
    )
    records = {key: halving.record for key, halving in halved.items()}
    winners = {key: halving.winner for key, halving in halved.items()}
    reached = budgets(tuner, {k: (bases[k], winners[k]) for k in bases}, families, floors)
    for key, base in bases.items():
        record, winner = records[key], winners[key]
        steps, tried = reached[key]
        chosen: dict[str, Setting] = {"train.lr": winner.rate, "train.steps": steps}
        if winner.candidate.init is not None:
            init_key = "model.init" if base.model.arch == "mixit" else "model.arch_init"
            chosen[init_key] = winner.candidate.init
        record.steps, record.budgets, record.seed, record.overrides = (
            steps,
            tried,
            tuner.seed,
            chosen,
        )
        raised = [i for i, b in enumerate(tried) if b.get("raised")]
        if raised:
            record.raised_from = tried[raised[0] - 1]["steps"]
        record.capped = bool(tried[-1].get("capped"))
        record.init_tuned = bool(choosing[key])
        record.learned = learned(record.validation, record.budgets, base, tuner.seed)
        record.cut = list(tuner.cut.get(key, []))
    return {key: records[key] for key in bases}
