"""``reproduce --extend`` on planted families: a family a claim left open by a run still rising
trains at twice its budget, recorded in OUT/extension.json before it trains, until nothing is
open, the cap or --max-hours; the plan then builds its runs at their families' factors."""

import json

import pytest

from mixit.paper import extend as extension
from mixit.paper.extend import EXTENSION, extended, read_extension, reproduce_extending
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


def _planted(monkeypatch, open_rounds):
    """Families open for the first ``open_rounds`` judgements, then none."""
    judged = []
    monkeypatch.setattr(
        extension,
        "open_families",
        lambda experiments, claims, configs, how: (
            {"table1/retrieval"} if len(judged) <= open_rounds else set()
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


def test_the_doublings_stop_before_a_round_past_max_hours(tmp_path, monkeypatch):
    clock = iter(range(0, 10**6, 1000))
    monkeypatch.setattr(extension.time, "monotonic", lambda: next(clock))
    reproduce, judged = _planted(monkeypatch, open_rounds=99)
    reproduce_extending(["table1"], Reproduction(out=tmp_path), reproduce, _plan(100), 1.0)
    assert judged == [1, 2] and read_extension(tmp_path)["stopped"] == "max_hours"


def test_the_plan_builds_each_run_at_its_familys_factor(tmp_path):
    (tmp_path / EXTENSION).write_text(json.dumps({"factors": {"table1/retrieval": 4}}))
    _, configs = _plan(100)([], Reproduction(out=tmp_path))
    assert configs[Run(TASK, "standard", 0)].train.steps == 400


def test_a_damaged_record_is_refused(tmp_path):
    (tmp_path / EXTENSION).write_text("{garbage")
    with pytest.raises(Exception, match="not an extension record"):
        read_extension(tmp_path)
