"""A tuning record as the files hold it: written in one key order, and read back whole, from
this version's files and from the lists of validation points written before."""

import dataclasses
import json

from mixit.tuning.records import KEYS, TuningRecord
from mixit.tuning.rules import ValidationPoint

HALVED = TuningRecord(
    lr=0.003,
    init=None,
    edge="interior",
    extended_with=[],
    validation=[ValidationPoint(0.001, None, 0.5, 8), ValidationPoint(0.003, None, 0.9, 16)],
    rungs=[{"step": 8, "kept": [0.003]}],
    run_dir="runs/retrieval-standard-s1000-abc",
)


def test_a_halving_record_holds_no_budget_rule_keys_until_the_rule_fills_them():
    assert list(HALVED.to_json()) == list(KEYS[:7])
    assert HALVED.to_json()["init"] is None  # a choice of no initialisation is written


def test_a_tuned_record_is_written_in_the_files_order_and_read_back_whole():
    rule = {"steps": 16, "budgets": [{"steps": 16}], "seed": 1000, "overrides": {"train.lr": 0.003}}
    tuned = dataclasses.replace(HALVED, **rule, capped=False, init_tuned=False, learned=True)
    written = tuned.to_json()
    assert list(written) == [key for key in KEYS if key not in ("raised_from", "cut")]
    assert written["validation"][0] == {"lr": 0.001, "init": None, "score": 0.5, "steps": 8}
    assert TuningRecord.from_json(json.loads(json.dumps(written))) == tuned
    tuned.raised_from, tuned.cut = 8, ["the budget's doubling from 16 steps (still rising)"]
    assert list(tuned.to_json()) == list(KEYS)
    assert TuningRecord.from_json(json.loads(json.dumps(tuned.to_json()))) == tuned


def test_a_record_written_before_reads_its_validation_lists_and_leaves_unknown_keys():
    old = {**HALVED.to_json(), "validation": [[0.001, None, 0.5, 8]], "reference_steps": 16}
    read = TuningRecord.from_json(old)
    assert read.validation == [ValidationPoint(0.001, None, 0.5, 8)]
    assert "reference_steps" not in read.to_json()
