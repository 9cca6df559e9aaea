"""When a run ends before its budget: the stop rule (``train.stop_at``, ``train.patience``)
and the training rows held out for it to read, so that the test split never decides when a
run stops (docs/tuning.md, rule 5)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mixit.config.schema import RunConfig
from mixit.tasks import TaskData, TaskSpec
from mixit.tasks.base import hold_out_validation

# The headline metric on the stop rule's held-out training rows, in metrics.jsonl.
STOP_METRIC = "stop_validation"


def hold_out_stop_split(data: TaskData, fraction: float) -> tuple[TaskData, TaskData | None]:
    """``fraction`` of the training rows set aside for the stop rule, and those rows as data
    of their own (scored as a training set: one pass); ``data`` and None for no fraction or a
    task scored on its own training set."""
    if not fraction or data.test_is_train:
        return data, None
    held = hold_out_validation(data, fraction)  # its test split: the held-out rows
    stop = dataclasses.replace(held, train=held.test, test_is_train=True)
    return dataclasses.replace(data, train=held.train), stop


@dataclass
class StopRule:
    """When a run ends before ``train.steps``: at the first evaluation whose headline metric
    reaches ``train.stop_at`` ("target"), or after ``train.patience`` evaluations in a row
    without a better one ("plateau"). Its state travels in the checkpoint, so a resumed run
    stops at the same step as an uninterrupted one."""

    target: float | None
    patience: int
    higher_is_better: bool
    best: float | None = None
    stale: int = 0  # evaluations since the best

    @classmethod
    def of(cls, config: RunConfig, spec: TaskSpec, state: Mapping[str, Any]) -> StopRule:
        rule = cls(config.train.stop_at, config.train.patience, spec.higher_is_better)
        rule.best, rule.stale = state.get("best"), state.get("stale", 0)
        return rule

    def _beats(self, value: float, other: float) -> bool:
        return value > other if self.higher_is_better else value < other

    def update(self, value: float) -> str | None:
        """Record one evaluation's headline metric; the reason to stop now, if any."""
        if math.isfinite(value) and (self.best is None or self._beats(value, self.best)):
            self.best, self.stale = value, 0
        else:
            self.stale += 1
        target = self.target
        if target is not None and math.isfinite(value) and not self._beats(target, value):
            return "target"
        if self.patience and self.stale >= self.patience:
            return "plateau"
        return None

    def state(self) -> dict[str, float | int | None]:
        return {"best": self.best, "stale": self.stale}
