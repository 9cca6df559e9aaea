"""``reproduce --extend`` on planted families: a family a claim left open by a run still rising
trains at twice its budget, recorded in OUT/extension.json before it trains, until nothing is
open, the cap or --max-hours; the plan then builds its runs at their families' factors."""

import json

import pytest

from mixit.common.errors import UsageError
from mixit.paper import extend as extension
from mixit.paper.extend import (
    EXTENSION,
    OpenFamily,
    extended,
    first_to_train,
    read_extension,
    reproduce_extending,
)
from mixit.study.experiment import Reproduction, Run
from mixit.study.extend import EXTEND_CAP

TASK = "retrieval"


def _plan(steps: int | None):
    """The plan of one run at ``steps`` (None: its task preset's)."""
    run = Run(TASK, "standard", 0)

    def plan(names, how):
        config = run.config(how.scale, {} if steps is None else {"train.steps": steps})
        return [], {run: extended({run: config}, [_Experiment()], how)[run]}

    return plan


class _Experiment:
    """An experiment that plans the one run of ``_plan``."""

    name = "table1"

    def plan(self, scale, seeds):
        return [Run(TASK, "standard", 0)]

    def every_run(self, scale, seeds):
        return self.plan(scale, seeds)


def _planted(monkeypatch, open_rounds, seconds=10.0):
    """Families open for the first ``open_rounds`` judgements, then none."""
    judged = []
    monkeypatch.setattr(
        extension,
        "open_families",
        lambda experiments, claims, configs, how: (
            {"table1/retrieval": OpenFamily(1, seconds)} if len(judged) <= open_rounds else {}
        ),
    )

    def reproduce(names, how, train):
        judged.append(read_extension(how.out)["factors"].get("table1/retrieval", 1))
        return []

    return reproduce, judged


def test_an_open_family_doubles_until_it_is_decided(tmp_path, monkeypatch):
    how = Reproduction(out=tmp_path)
    reproduce, judged = _planted(monkeypatch, open_rounds=2)
    reproduce_extending(["table1"], how, reproduce, _plan(100))
    assert judged == [1, 2, 4]  # the factor each judgement trained at
    record = json.loads((tmp_path / EXTENSION).read_text())
    assert record["factors"] == {"table1/retrieval": 4} and record["stopped"] == "decided"
    assert [r["families"] for r in record["rounds"]] == [
        {"table1/retrieval": 2},
        {"table1/retrieval": 4},
    ]


def test_the_doublings_stop_at_the_cap(tmp_path, monkeypatch):
    reproduce, judged = _planted(monkeypatch, open_rounds=99)
    reproduce_extending(["table1"], Reproduction(out=tmp_path), reproduce, _plan(None))
    assert judged == [2**k for k in range(EXTEND_CAP.bit_length())]  # 1, 2, 4, 8, 16
    assert read_extension(tmp_path)["stopped"] == "cap"


def test_no_round_starts_that_would_pass_max_hours(tmp_path, monkeypatch):
    # the family's runs took 1,000 s: its doubling is priced at 2,000 s, past 0.5 h
    reproduce, judged = _planted(monkeypatch, open_rounds=99, seconds=1000.0)
    reproduce_extending(["table1"], Reproduction(out=tmp_path), reproduce, _plan(100), 0.5)
    assert judged == [1] and read_extension(tmp_path)["stopped"] == "max_hours"


def test_the_most_decisive_then_the_cheapest_family_trains_first():
    families = {
        "table3/addition": OpenFamily(claims=1, seconds=50.0),
        "table5/dyck": OpenFamily(claims=2, seconds=900.0),
        "table3/dyck": OpenFamily(claims=1, seconds=10.0),
    }
    assert first_to_train(families, 1, None) == ["table5/dyck", "table3/dyck", "table3/addition"]
    # 200 s left: the decisive one does not fit, the two cheap ones do
    assert first_to_train(families, 1, 200.0) == ["table3/dyck", "table3/addition"]
    assert first_to_train(families, 10, 200.0) == ["table5/dyck", "table3/dyck", "table3/addition"]


def test_the_plan_builds_each_run_at_its_familys_factor(tmp_path):
    record = {"factors": {"table1/retrieval": 4}, "rounds": [], "stopped": "cap", "open": []}
    (tmp_path / EXTENSION).write_text(json.dumps(record))
    _, configs = _plan(100)([], Reproduction(out=tmp_path))
    assert configs[Run(TASK, "standard", 0)].train.steps == 400


@pytest.mark.parametrize(
    "stored, fragment",
    [
        ("{garbage", "not a UTF-8 JSON file"),
        ('{"factors": {"table1/retrieval": "4"}}', "factors.table1/retrieval: input should be"),
        (
            '{"factors": {"table1/retrieval": 0}, "rounds": [], "stopped": "", "open": []}',
            "at least 1",
        ),
    ],
)
def test_a_damaged_record_is_refused(tmp_path, stored, fragment):
    (tmp_path / EXTENSION).write_text(stored)
    with pytest.raises(UsageError, match=fragment):
        read_extension(tmp_path)
