"""When a run ends before its budget: the stop rule (``train.stop_at``, ``train.patience``,
``train.plateau``) and the training rows held out for it to read, so that the test split
never decides when a run stops (docs/tuning.md, rule 5)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mixit.config.schema import RunConfig
from mixit.tasks import TaskSpec

# The headline metric on the stop rule's held-out training rows, in metrics.jsonl.
STOP_METRIC = "stop_validation"


# The fewest evaluations a plateau is read over (``train.plateau``): two points are one noisy
# difference. The same count rule 5 reads "still rising" over (tuning.rules.RISING_WINDOW).
PLATEAU_EVALUATIONS = 3


@dataclass
class StopRule:
    """When a run ends before ``train.steps``: at the first evaluation whose headline metric
    reaches ``train.stop_at`` ("target"), after ``train.patience`` evaluations in a row
    without a better one, or once it has gained no more than the task's tolerance over the
    last ``train.plateau`` of the budget ("plateau", ``flat``). Its state travels in the
    checkpoint, so a resumed run stops at the same step as an uninterrupted one."""

    target: float | None
    patience: int
    higher_is_better: bool
    best: float | None = None
    stale: int = 0  # evaluations since the best
    stretch: float = 0.0  # steps a plateau spans (train.plateau x train.steps); 0: no such rule
    margin: float = 0.0  # the progress that counts over it: the task's litmus tolerance
    history: list[tuple[int, float]] = field(default_factory=list)  # (step, value) read so far

    @classmethod
    def of(
        cls, config: RunConfig, spec: TaskSpec, state: Mapping[str, Any], readable: bool = True
    ) -> StopRule:
        """The rule of ``config`` from a checkpoint's ``state``; one that never fires where
        nothing it may read was held out (``readable`` False: too few training rows)."""
        train = config.train
        if not readable:
            return cls(None, 0, spec.higher_is_better)
        rule = cls(train.stop_at, train.patience, spec.higher_is_better)
        rule.best, rule.stale = state.get("best"), state.get("stale", 0)
        rule.stretch, rule.margin = train.plateau * train.steps, spec.tolerance
        rule.history = [(int(step), float(value)) for step, value in state.get("history", [])]
        return rule

    def _beats(self, value: float, other: float) -> bool:
        return value > other if self.higher_is_better else value < other

    def flat(self) -> bool:
        """Whether the values read so far hold a stretch of at least ``stretch`` steps and
        ``PLATEAU_EVALUATIONS`` evaluations, ending now, over which none gained more than
        ``margin`` on the stretch's first."""
        if not self.stretch or len(self.history) < PLATEAU_EVALUATIONS:
            return False
        now = self.history[-1][0]
        starts = [i for i, (step, _) in enumerate(self.history) if now - step >= self.stretch]
        if not starts:
            return False
        first = min(starts[-1], len(self.history) - PLATEAU_EVALUATIONS)
        window = [value for _, value in self.history[first:]]
        sign = 1.0 if self.higher_is_better else -1.0
        return all(math.isfinite(v) for v in window) and all(
            sign * (value - window[0]) <= self.margin for value in window[1:]
        )

    def update(self, step: int, value: float) -> str | None:
        """Record one evaluation's headline metric at ``step``; the reason to stop now, if
        any."""
        if math.isfinite(value) and (self.best is None or self._beats(value, self.best)):
            self.best, self.stale = value, 0
        else:
            self.stale += 1
        self.history.append((step, value))
        target = self.target
        if target is not None and math.isfinite(value) and not self._beats(target, value):
            return "target"
        if (self.patience and self.stale >= self.patience) or self.flat():
            return "plateau"
        return None

    def state(self) -> dict[str, Any]:
        return {"best": self.best, "stale": self.stale, "history": self.history}
