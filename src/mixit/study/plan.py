"""What a command studies, as one frozen record: ``Study``. ``compare``, ``suite``, ``compare
--axis`` and ``suite --axis`` each build one and hand it, task by task and value by value, to
the same loop (``mixit.study.compare.run_study``: plan, tune, train what is missing, judge,
report), instead of threading the same list of options through every call."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mixit.config.overrides import Settings
from mixit.models.variants import SPECTRUM
from mixit.running.launchers import LOCAL, Launch


@dataclass(frozen=True)
class Study:
    """The spectrum's ``models`` (None: every variant) on ``tasks`` at ``preset``, seeds
    ``seed`` .. ``seed + seeds - 1`` (or ``"auto"``), with ``overrides`` on every run, into
    ``out``; ``tune`` what the tuning protocol chooses (None: a ``model.arch`` model's rate
    only), ``tolerance`` the litmus reading's (None: the metric's default), ``launch`` where
    runs train and ``progress`` how they report; ``extend`` and ``max_hours`` whether and how
    far the verdict runs train on where a reading is open."""

    tasks: tuple[str, ...]
    models: tuple[str, ...] | None = None
    preset: str = "tiny"
    seed: int = 0
    seeds: int | str = 1
    out: Path = Path("runs/compare")
    overrides: Settings = field(default_factory=dict)
    tune: tuple[str, ...] | None = None
    tolerance: float | None = None
    launch: Launch = LOCAL
    progress: bool | None = None
    # ``--extend``: double the budget of every model and seed while a run still rising leaves a
    # reading open (``mixit.study.extend``), up to its cap or ``max_hours`` of training;
    # ``max_hours`` bounds the tuning's growth past its grid as well (``halving.tune``).
    extend: bool = False
    max_hours: float | None = None

    @classmethod
    def of(
        cls,
        tasks: Sequence[str],
        models: Sequence[str] | None = None,
        *,
        out: str | Path,
        overrides: Settings | None = None,
        tune: Sequence[str] | None = None,
        launch: Launch | None = None,
        **settings: Any,
    ) -> Study:
        """A study from the public entry points' options (sequences, a folder as text, None
        for the defaults)."""
        return cls(
            tuple(tasks),
            tuple(models) if models else None,
            out=Path(out),
            overrides=dict(overrides or {}),
            tune=None if tune is None else tuple(tune),
            launch=launch or LOCAL,
            **settings,
        )

    @property
    def task(self) -> str:
        """The one task of a study of one task (a comparison)."""
        (task,) = self.tasks
        return task

    @property
    def spectrum(self) -> tuple[str, ...]:
        """The models it trains: those named, or the paper's five."""
        return self.models or SPECTRUM

    def on(self, task: str, out: Path, overrides: Settings | None = None) -> Study:
        """The same study of ``task`` alone into ``out``, with ``overrides`` in place of its
        own (a value of an axis)."""
        point = self.overrides if overrides is None else dict(overrides)
        return dataclasses.replace(self, tasks=(task,), out=out, overrides=point)
