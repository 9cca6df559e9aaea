"""The splits a run reads besides the task's own: validation rows held out of the training
rows for a tuning trial (``train.validation_fraction``), and the rows the stop rule reads
(``train.stop_validation_fraction``), so that the test split never decides when a run stops or
which setting wins (docs/tuning.md, rule 5)."""

from __future__ import annotations

import dataclasses

import torch

from mixit.common.errors import UsageError
from mixit.config.schema import TrainConfig
from mixit.tasks.base import Split, TaskData

# The fewest held-out rows a validation split or a stop rule is read on: an accuracy on 20 rows
# already has a standard error of up to 0.11, five tolerances; on fewer it decides nothing.
MIN_HELD_ROWS = 20


def held_out_splits(data: TaskData, train: TrainConfig) -> tuple[TaskData, TaskData | None]:
    """The splits a run reads: with ``train.validation_fraction`` (a tuning trial), that
    share of the training rows becomes the split it is evaluated on, and the test split is set
    aside; then the stop rule's rows (``hold_out_stop_split``). Too few validation rows to read
    anything on is one line."""
    data = hold_out_validation(data, train.validation_fraction)
    if train.validation_fraction and not data.test_is_train and len(data.test) < MIN_HELD_ROWS:
        raise UsageError(
            f"train.validation_fraction={train.validation_fraction} holds out "
            f"{len(data.test)} of the training rows to evaluate on; at least "
            f"{MIN_HELD_ROWS} are needed (give the task more training rows, or a larger "
            "fraction)"
        )
    return hold_out_stop_split(data, train.stop_split_fraction())


def hold_out_stop_split(data: TaskData, fraction: float) -> tuple[TaskData, TaskData | None]:
    """``fraction`` of the training rows set aside for the stop rule, and those rows as data
    of their own (scored as a training set: one pass); ``data`` and None for no fraction, a
    task scored on its own training set, or one with too few rows to hold ``MIN_HELD_ROWS``
    out (whose stop rule is then off: ``StopRule.of``)."""
    if not fraction or data.test_is_train or int(len(data.train) * fraction) < MIN_HELD_ROWS:
        return data, None
    held = hold_out_validation(data, fraction)  # its test split: the held-out rows
    stop = dataclasses.replace(held, train=held.test, test_is_train=True)
    return dataclasses.replace(data, train=held.train), stop


def hold_out_validation(data: TaskData, fraction: float) -> TaskData:
    """``fraction`` of the training rows (a fixed random choice) become the split the run is
    evaluated on, the rest is trained on; the test split is set aside. Memorization, scored on
    its training set by design, is returned as it is."""
    if not fraction or data.test_is_train:
        return data
    order = torch.randperm(len(data.train), generator=torch.Generator().manual_seed(0))
    held = max(1, int(len(data.train) * fraction))
    rows = {"train": order[held:], "validation": order[:held]}
    train, validation = (
        Split(data.train.inputs[rows[k]], data.train.targets[rows[k]]) for k in rows
    )
    return dataclasses.replace(data, train=train, test=validation)
