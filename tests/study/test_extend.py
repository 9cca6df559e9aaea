"""``--extend`` on planted comparisons: a reading a run still rising leaves open doubles the
whole family's budget, judges again, and stops once decided, at the cap or at --max-hours."""

import json
import shlex

import pytest

from mixit.cli import build_parser, main
from mixit.cli.compare import next_command
from mixit.config.schema import RunConfig
from mixit.study import extend as extension
from mixit.study.extend import EXTEND_CAP, extend, open_by_rising
from mixit.study.litmus import CROSSES
from mixit.study.results import read_results_csv
from mixit.training.resolve import resolve_config


def _configs(steps: int) -> dict[tuple[str, int], RunConfig]:
    settings = {"train.steps": steps}
    return {
        (model, seed): resolve_config("retrieval", model, "tiny", seed, settings)
        for model in ("standard", "mixit")
        for seed in (0, 1)
    }


def _result(open_models: list[str], seconds: float = 1.0) -> dict:
    rows = [
        {"model": "mixit", "matches": None, "still_rising": True}
        if "mixit" in open_models
        else {"model": "mixit", "matches": False}
    ]
    table = [{"model": m, "train_seconds": seconds, "values": [0.5, 0.5]} for m in ("standard",)]
    return {"litmus": {"tolerance": 0.02, "rows": rows}, "rows": table}


def _judge(open_until: int, calls: list):
    """A comparison that stays open below ``open_until`` steps."""

    def judge(per_model, record):
        steps = per_model["mixit"]["train.steps"]
        assert per_model["standard"]["train.steps"] == steps  # the whole family
        calls.append((steps, record["steps"]))
        return _result(["mixit"] if steps < open_until else [])

    return judge


def test_an_open_reading_doubles_the_familys_budget_until_it_is_decided():
    calls = []
    result = extend(_result(["mixit"]), _configs(100), 100, _judge(400, calls))
    assert calls == [(200, 200), (400, 400)]
    record = result["extension"]
    assert record["stopped"] == "decided" and record["open"] == [] and record["steps"] == 400
    assert [(d["steps"], d["to"], d["open"]) for d in record["doublings"]] == [
        (100, 200, ["mixit"]),
        (200, 400, ["mixit"]),
    ]


def test_the_doublings_stop_at_the_cap_and_say_what_stayed_open():
    calls = []
    result = extend(_result(["mixit"]), _configs(100), 100, _judge(10**9, calls))
    assert [steps for steps, _ in calls] == [200, 400, 800, 1600]
    assert EXTEND_CAP * 100 == 1600
    assert result["extension"]["stopped"] == "cap" and result["extension"]["open"] == ["mixit"]


def test_the_doublings_stop_before_one_that_would_pass_max_hours(monkeypatch):
    clock = iter(range(0, 10**6, 1000))  # each reading of the clock 1,000 s later
    monkeypatch.setattr(extension.time, "monotonic", lambda: next(clock))
    calls = []
    result = extend(_result(["mixit"]), _configs(100), 100, _judge(10**9, calls), max_hours=1.0)
    # the first doubling took 1,000 s; the next, priced at 2,000 s, would pass the hour
    assert len(calls) == 1 and result["extension"]["stopped"] == "max_hours"


def test_a_decided_reading_trains_nothing_more():
    calls = []
    result = extend(_result([]), _configs(100), 100, _judge(0, calls))
    assert calls == [] and "extension" not in result


@pytest.mark.parametrize("row, open_", [({"still_rising": True}, True), ({}, False)])
def test_only_a_reading_open_by_a_rising_run_is_extended(row, open_):
    litmus = {"rows": [{"model": "mixit", "matches": None, **row}]}
    assert open_by_rising(litmus) == (["mixit"] if open_ else [])


def test_compare_extend_trains_the_family_again_at_twice_the_budget(tmp_path, monkeypatch, capsys):
    """The CLI's --extend through the one study loop: a reading planted open once trains every
    model on every seed at twice the budget, and compare.json records the doubling."""
    answers = iter([["mixit"], []])
    monkeypatch.setattr(extension, "open_by_rising", lambda litmus: next(answers))
    quick = ["train.steps=4", "train.eval_every=4", "train.stop_at=none"]
    quick += ["train.eval_examples=64", "task.n_train=500", "task.n_test=64"]
    out = tmp_path / "c"
    argv = ["compare", "--task", "dyck", "--models", "standard,mixit", "--seeds", "2"]
    assert main([*argv, "--out", str(out), "--extend", *quick]) == 0
    rows = read_results_csv(out / "results.csv")
    assert sorted(int(r["steps_run"]) for r in rows) == [8] * 4  # the family, every seed
    record = json.loads((out / "compare.json").read_text())["extension"]
    assert record["doublings"][0] | {"train_seconds": 0} == {
        "steps": 4, "to": 8, "open": ["mixit"], "train_seconds": 0
    }  # fmt: skip
    assert "extended: 4 -> 8 steps for mixit" in capsys.readouterr().out
    assert main([*argv, "--out", str(tmp_path / "d"), "--max-hours", "0", *quick]) == 2


def test_an_estimate_with_extend_prices_its_doublings(tmp_path, capsys):
    """#104: the next command's --estimate says what --extend adds, its first doubling priced
    as the comparison at twice the budget, and the doublings up to the cap."""
    argv = ["compare", "--task", "dyck", "--models", "standard,mixit", "--seeds", "2"]
    argv += ["--out", str(tmp_path / "c"), "--estimate", "--target", "h100"]
    assert main([*argv, "train.steps=8"]) == 0
    doubled = capsys.readouterr().out.splitlines()[-1].removeprefix("about ")
    assert main([*argv, "train.steps=4", "--extend"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("plus --extend") and "again at 8 steps" in line
    assert f"up to about {doubled.removesuffix(' in all, one run after another')} of" in line
    assert f"up to {4 * EXTEND_CAP:,} steps" in line


def test_an_estimate_with_extend_starts_past_the_doublings_already_trained(tmp_path, capsys):
    """A doubling whose runs are all finished in OUT costs nothing: the estimate prices the
    first one still to train (found in the new-user trial: it said 'about 0 s')."""
    small = ["model.n_embd=16", "task.n_train=64", "task.n_test=32", "train.eval_every=4"]
    argv = ["compare", "--task", "dyck", "--models", "standard,mixit", "--seeds", "2"]
    argv += ["--out", str(tmp_path / "c"), "--no-progress", *small]
    assert main([*argv, "train.steps=8"]) == 0  # the first doubling of a 4-step budget
    capsys.readouterr()
    assert main([*argv, "train.steps=4", "--extend", "--estimate", "--target", "h100"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("plus --extend") and "again at 16 steps" in line


def _open(why: dict) -> dict:
    rows = [{"model": "frozen-qk", "matches": True}, {"model": "mixit", "matches": None, **why}]
    return {"litmus": {"tolerance": 0.02, "rows": rows}, "seeds": [0, 1, 2]}


ASKED = ["compare", "--task", "addition", "--seeds", "3", "train.steps=40"]


@pytest.mark.parametrize(
    "why, done, then",
    [
        ({"still_rising": True}, {}, [*ASKED, "--extend"]),
        (
            {"why": CROSSES},
            {},
            ["compare", "--task", "addition", "train.steps=40", "--seeds", "auto"],
        ),
        ({"still_rising": True}, {"extension": {"stopped": "cap"}}, None),  # to its cap
        (  # --max-hours stopped the doublings: again without it
            {"still_rising": True},
            {"extension": {"stopped": "max_hours"}},
            ["compare", "--task", "addition", "--seeds", "3", "train.steps=40", "--extend"],
        ),
        ({"why": CROSSES}, {"seeds_auto": {}}, None),
        ({"matches": False}, {}, None),  # decided: nothing is open
    ],
)
def test_an_open_reading_prints_the_command_that_would_decide_it(why, done, then):
    asked = [*ASKED, "--extend", "--max-hours", "0.5"] if done.get("extension") else ASKED
    step = next_command(asked, {**_open(why), **done})
    assert step == ("" if then is None else shlex.join(then))
    if then is not None:  # a command the parser takes as it is printed
        args, extra = build_parser().parse_known_args(shlex.split(step))
        assert args.command == "compare" and not extra


def test_a_suite_prints_the_command_that_would_decide_its_open_readings(
    monkeypatch, tmp_path, capsys
):
    """Of its tasks' open readings, a run still rising asks first for a longer budget; the
    command is the suite's own, without --report."""
    import mixit.cli.suite as suite_command

    planted = {"addition": _open({"why": CROSSES}), "dyck": _open({"still_rising": True})}
    monkeypatch.setattr(suite_command, "suite", lambda *args, **kwargs: planted)
    (tmp_path / "summary.md").write_text("# Suite\n")
    argv = ["suite", "--tasks", "addition,dyck", "--seeds", "3", "--out", str(tmp_path)]
    assert main([*argv, "--report"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == f"next, to decide what is open: mixit {shlex.join(argv)} --extend"
