"""The tuned presets (docs/tuning.md, "Tuned presets"): `reproduce` trains each group of runs
at the choice the scale's file records unless told not to, a setting the user gives wins, the
claims say which presets judged them, and `--estimate --tune lr` counts the tuning."""

import json

import pytest

from mixit.cli import main
from mixit.paper.estimate import tuning_costs
from mixit.paper.runner import judged_under, plan_reproduction
from mixit.study import tuned_presets
from mixit.study.experiment import Reproduction
from mixit.tasks.base import PLATEAU, PLATEAU_KEY
from mixit.tuning import presets as presets_file
from mixit.tuning.rules import GRID, halving_budgets

CHOSEN_LR = 0.0123


@pytest.fixture
def presets(tmp_path, monkeypatch):
    """A tiny presets file choosing CHOSEN_LR and 900 steps for every group of table 4."""
    monkeypatch.setattr(presets_file, "TUNED", tmp_path)
    _, configs = plan_reproduction(["table4"], Reproduction("tiny", presets=False))
    groups = {(r.task, r.model, json.dumps(dict(r.overrides))) for r in configs}
    rows = [
        {
            "task": task,
            "model": model,
            "run_overrides": json.loads(overrides),
            "overrides": {"train.lr": CHOSEN_LR, "train.steps": 900},
        }
        for task, model, overrides in groups
    ]
    (tmp_path / "tiny.json").write_text(json.dumps({"scale": "tiny", "groups": rows}))
    return configs


def test_reproduce_trains_at_the_tuned_presets_by_default(presets):
    how = Reproduction("tiny")
    _, configs = plan_reproduction(["table4"], how)
    assert {c.train.lr for c in configs.values()} == {CHOSEN_LR}
    assert {c.train.steps for c in configs.values()} == {900}
    assert judged_under(how).presets == "tuned (tiny.json)"


def test_no_tune_and_tune_lr_train_from_the_task_presets(presets):
    for how in (Reproduction("tiny", presets=False), Reproduction("tiny", tune=True)):
        _, configs = plan_reproduction(["table4"], how)
        assert configs == presets
        assert "presets" not in judged_under(how).record()


def test_a_setting_the_user_gives_wins_over_the_tuned_presets(presets):
    how = Reproduction("tiny", overrides={"train.lr": 0.5})
    _, configs = plan_reproduction(["table4"], how)
    assert {c.train.lr for c in configs.values()} == {0.5}
    assert {c.train.steps for c in configs.values()} == {900}


def test_a_scale_without_a_presets_file_keeps_the_task_presets(presets):
    _, configs = plan_reproduction(["table4"], Reproduction("small"))
    _, untuned = plan_reproduction(["table4"], Reproduction("small", presets=False))
    assert configs == untuned


def test_a_damaged_presets_file_is_one_line_not_a_traceback(presets, tmp_path, capsys):
    (tmp_path / "tiny.json").write_text("{not json")
    assert main(["reproduce", "table4", "--estimate", "--out", str(tmp_path / "o")]) == 2
    assert "tuned presets are damaged" in capsys.readouterr().err


def test_a_run_whose_group_has_no_choice_stops_before_anything_trains(presets, tmp_path, capsys):
    stored = json.loads((tmp_path / "tiny.json").read_text())
    dropped = stored["groups"].pop()
    (tmp_path / "tiny.json").write_text(json.dumps(stored))
    out = tmp_path / "o"
    assert main(["reproduce", "table4", "--out", str(out), "train.steps=2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no choice for" in err and dropped["model"] in err
    assert not (out / "runs").exists() or not any((out / "runs").iterdir())
    # --no-tune is the way to train at the task presets' rates.
    _, configs = plan_reproduction(["table4"], Reproduction("tiny", presets=False))
    assert configs == presets


def test_a_run_finds_its_group_by_identity_not_by_its_overrides():
    # Figure 2's 8-pair runs are table 1's retrieval runs planned under other overrides.
    _, configs = plan_reproduction(["table1", "figure2"], Reproduction("tiny"))
    retrieval = [r for r in configs if r.task == "retrieval" and r.model == "standard"]
    eight = [r for r in retrieval if ("task.max_pairs", 8) in r.overrides]
    table1 = [r for r in retrieval if not any(k == "task.max_pairs" for k, _ in r.overrides)]
    assert eight and table1
    assert {tuned_presets.identity(r, "tiny") for r in eight + table1} == {
        tuned_presets.identity(table1[0], "tiny")
    }
    assert {(configs[r].train.lr, configs[r].train.steps) for r in eight + table1} == {
        (configs[table1[0]].train.lr, configs[table1[0]].train.steps)
    }


def test_tune_lr_and_no_tune_together_are_refused(tmp_path, capsys):
    assert main(["reproduce", "table4", "--tune", "lr", "--no-tune", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err  # one line, naming both options
    assert err.count("\n") == 1 and "--no-tune: not allowed with argument --tune" in err


def test_the_estimate_counts_each_groups_halving_once():
    how = Reproduction("tiny", tune=True)
    experiments, configs = plan_reproduction(["table4", "table6"], how)
    costs = tuning_costs(experiments, configs, how)
    groups = {json.dumps({**c.result_dict(), "seed": 0}, sort_keys=True) for c in configs.values()}
    assert len(costs) == len(groups)
    # Table 6's series choose an initialisation too: twice the grid.
    assert {cost for _, cost in costs.values()} == {
        halving_budgets(len(GRID)),
        halving_budgets(2 * len(GRID)),
    }
    assert all(config.seed == 1000 for config, _ in costs.values())


@pytest.mark.parametrize("path", sorted(presets_file.TUNED.glob("*.json")), ids=lambda p: p.name)
def test_no_committed_variant_trains_below_its_reference(path):
    """docs/tuning.md rule 5 holds in every committed presets file: no variant's group trains
    fewer steps than the standard model's group of the same task and setting."""
    groups = json.loads(path.read_text())["groups"]
    steps = {
        presets_file.group_key(g["task"], g["model"], g["run_overrides"]): g["overrides"][
            "train.steps"
        ]
        for g in groups
    }
    below = [
        (g["task"], g["model"], g["overrides"]["train.steps"])
        for g in groups
        if g["overrides"]["train.steps"]
        < steps.get(presets_file.group_key(g["task"], "standard", g["run_overrides"]), 0)
    ]
    assert below == []


def test_an_execution_override_is_not_a_setting_the_verdicts_depend_on():
    how = Reproduction("tiny", overrides={"train.checkpoint_every": 500, "train.lr": 0.5})
    assert judged_under(how).overrides == {PLATEAU_KEY: PLATEAU, "train.lr": 0.5}
