"""What a command studies, as one frozen record: ``Study``. ``compare``, ``suite``, ``compare
--axis`` and ``suite --axis`` each build one and hand it, task by task and value by value, to
the same loop (``mixit.study.compare.run_study``: plan, tune, train what is missing, judge,
report), instead of threading the same list of options through every call."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mixit.config.overrides import Settings, with_settings
from mixit.config.schema import RunConfig
from mixit.models.variants import SPECTRUM
from mixit.running.launchers import LOCAL, Launch
from mixit.training.resolve import check_seed, resolve_config


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


@dataclass(frozen=True)
class Comparison:
    """What a comparison trains: ``models`` on ``task`` at ``preset``, one run per seed of
    ``seeds``, with ``overrides`` on every run, into ``out/runs`` (None: nowhere yet)."""

    task: str
    models: tuple[str, ...]
    preset: str
    seeds: range
    out: Path | None
    overrides: Settings

    def configs(
        self, per_model: Mapping[str, Mapping[str, Any]] | None = None
    ) -> dict[tuple[str, int], RunConfig]:
        """Every (model, seed)'s resolved config, first, so a bad model name or key fails
        before any training or timing (each model resolved once, on the first seed; a seed
        changes nothing else of it); ``per_model`` adds a model's own settings (its tuned
        values, a budget: ``with_choices``)."""
        configs = {}
        if self.seeds:  # the first seed is checked as each model is resolved
            check_seed(self.seeds[-1])
        for m in self.models:
            base = resolve_config(self.task, m, self.preset, self.seeds.start, self.overrides)
            configs |= {(m, s): dataclasses.replace(base, seed=s) for s in self.seeds}
        return with_choices(configs, per_model or {})


def with_choices(
    configs: Mapping[tuple[str, int], RunConfig], per_model: Mapping[str, Settings]
) -> dict[tuple[str, int], RunConfig]:
    """``configs`` (resolved, by model and seed) with each model's own settings set: its tuned
    values, an extension's budget. They are set after resolving, as the user's overrides
    would be set last (none of them is a construction's own setting)."""
    return {(m, s): with_settings(c, per_model.get(m, {})) for (m, s), c in configs.items()}


def comparison_of(study: Study, models: tuple[str, ...], seeds: range) -> Comparison:
    """What the one task of ``study`` trains of ``models`` over ``seeds``."""
    overrides = dict(study.overrides)
    return Comparison(study.task, models, study.preset, seeds, study.out, overrides)
