"""What a reproduction's verdicts depend on beyond their rules, as claims.json and each
results.json record it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mixit.common.io import JSONObject
from mixit.config.identity import EXECUTION_SETTINGS
from mixit.config.overrides import Settings
from mixit.study.claim import (
    TUNED_ON_SEEDS,
)
from mixit.tasks.base import PLATEAU, PLATEAU_KEY


@dataclass(frozen=True)
class Setting:
    """What a verdict depends on beyond its rule: the scale, the seeds, the overrides on every
    run and how the learning rates were chosen (a sweep's ``best.json``, the tuning protocol,
    the scale's tuned presets). ``record()`` is how claims.json and each results.json store
    it; ``stored`` is one such record read back, which older files may lack keys of."""

    scale: str
    seeds: int
    first_seed: int = 0
    overrides: Settings = field(default_factory=dict)
    tuned: str | None = None
    tune: str | None = None
    presets: str | None = None

    @property
    def seed_range(self) -> range:
        return range(self.first_seed, self.first_seed + self.seeds)

    def record(self) -> JSONObject:
        """The stored form, keys in the order files have always had them."""
        return {
            "scale": self.scale,
            "seeds": self.seeds,
            "first_seed": self.first_seed,
            "overrides": dict(self.overrides),
            "tuned": self.tuned,
            "tuned_on_seeds": list(TUNED_ON_SEEDS),
            **({"tune": self.tune} if self.tune else {}),
            **({"presets": self.presets} if self.presets else {}),
            "confirmed_on_seeds": [s for s in self.seed_range if s not in TUNED_ON_SEEDS],
        }

    @classmethod
    def from_record(cls, stored: Mapping[str, Any]) -> Setting:
        """A stored record read back; a key an older file lacks takes its default."""
        return cls(
            stored["scale"],
            stored["seeds"],
            stored.get("first_seed", 0),
            dict(stored.get("overrides", {})),
            stored.get("tuned"),
            stored.get("tune"),
            stored.get("presets"),
        )

    def same_as(
        self, stored: Mapping[str, Any], but_seeds: bool = False, but_rates: bool = False
    ) -> bool:
        """Whether ``stored`` (a record) was judged under this setting; ``but_seeds``: up to
        its seeds, ``but_rates``: however its learning rates were chosen (an ablation, which
        sets each row's options itself). Overrides compare as text, as the command line gives
        them: ``50`` from the library and ``"50"`` from ``train.steps=50`` are one setting."""
        try:
            other = Setting.from_record(stored)
        except (KeyError, TypeError, AttributeError, ValueError):
            return False
        return self._identity(but_seeds, but_rates) == other._identity(but_seeds, but_rates)

    def _identity(self, but_seeds: bool, but_rates: bool) -> tuple:
        overrides = tuple(sorted((k, str(v)) for k, v in self.overrides.items()))
        seeds = () if but_seeds else (self.seeds, self.first_seed)
        rates = () if but_rates else (self.tuned, self.tune, self.presets)
        return self.scale, *seeds, overrides, *rates


def recorded_overrides(overrides: Settings) -> Settings:
    """The overrides a verdict is put down to: where and how the runs executed changes no
    result, so those are left out; the plateau stop rule every preset now has is written out
    (``train.plateau``), and left out where a user set it to 0, as records from before the
    rule (2026-12-06) are, so that such an output is read again with ``train.plateau=0``."""
    kept = {k: v for k, v in overrides.items() if tuple(k.split(".", 1)) not in EXECUTION_SETTINGS}
    # First, and a number however given: train.plateau=0.5 and the preset's 0.5 are one.
    plateau = float(kept.pop(PLATEAU_KEY, PLATEAU))
    return {PLATEAU_KEY: plateau} | kept if plateau else kept
