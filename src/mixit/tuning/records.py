"""One key's tuning record, as ``tuning.json`` and ``compare.json``'s ``tuned`` hold it: what
the halving chose (the rate, the initialisation, where it lies on the grid, the evidence of
every rate tried and each rung) and what the budget rule added (the steps, the budgets tried,
the seed, the settings the verdict runs take, and whether the model learned)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from mixit.common.io import JSONObject
from mixit.config.overrides import Setting
from mixit.tuning.rules import ValidationPoint, validation_points

# The file's keys, in the order it writes them; ``train.lr`` is dotted in the file.
KEYS = (
    "train.lr",
    "init",
    "edge",
    "extended_with",
    "validation",
    "rungs",
    "run_dir",
    "steps",
    "budgets",
    "seed",
    "overrides",
    "raised_from",
    "capped",
    "init_tuned",
    "learned",
    "cut",
)


class Rung(TypedDict):
    """One rung of the halving: its step and each trial's ``[rate, score]`` there."""

    step: int
    scores: list[list[float]]


class Budget(TypedDict, total=False):
    """One budget the budget rule trained the chosen rate at: its steps, the score, how the
        run stopped, whether it was still rising, and whether it hit the cap (``capped``) or is
        the family's one budget rather than its own rule's (``raised``), or was left undoubled while
    still rising for ``--max-hours`` (``cut``)."""

    steps: int
    score: float
    stopped: str
    rising: bool
    capped: bool
    raised: bool
    cut: bool


# What the budget rule adds to the halving's record (``halving.tune``).
BUDGET_RULE = ("steps", "budgets", "seed", "overrides", "capped", "init_tuned", "learned")


@dataclass
class TuningRecord:
    """The halving's part (``lr`` .. ``run_dir``), then the budget rule's (``steps`` ..
    ``learned``; None until ``halving.tune`` fills it in). ``raised_from``: the steps of its own
    budget rule where the family's one budget raised it (None: not raised)."""

    lr: float
    init: str | None
    edge: str
    extended_with: list[float]
    validation: list[ValidationPoint]
    rungs: list[Rung]
    run_dir: str
    steps: int | None = None
    budgets: list[Budget] = field(default_factory=list)
    seed: int | None = None
    overrides: dict[str, Setting] = field(default_factory=dict)
    raised_from: int | None = None
    capped: bool | None = None
    init_tuned: bool | None = None
    learned: bool | None = None
    # What ``--max-hours`` left out of the protocol (a grid's step past its edge, a budget's
    # doubling), in words; written only where something was.
    cut: list[str] = field(default_factory=list)

    def to_json(self) -> JSONObject:
        """The record as the files hold it: dotted ``train.lr``, each validation point
        labelled, and only the keys set (a halving's record before the budget rule has none of
        the rule's; ``raised_from`` only where raised, ``cut`` only where something was)."""
        values = {name: getattr(self, name) for name in _FIELDS}
        values["validation"] = [point._asdict() for point in self.validation]
        written = {"train.lr": values.pop("lr")}
        for key in KEYS[1:]:
            unset = key in BUDGET_RULE and self.steps is None
            left_out = (key == "raised_from" and self.raised_from is None) or (
                key == "cut" and not self.cut
            )
            if not unset and not left_out:
                written[key] = values[key]
        return written

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> TuningRecord:
        """A record as a file holds it (its validation labelled, or as the lists written
        before); keys this version does not write are left out."""
        known = {name: record[name] for name in _FIELDS if name in record and name != "lr"}
        known["validation"] = validation_points(record)
        return cls(lr=record["train.lr"], **known)


_FIELDS = tuple(f.name for f in dataclasses.fields(TuningRecord))
