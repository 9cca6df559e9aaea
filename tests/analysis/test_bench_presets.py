"""``mixit bench --presets``: each tiny preset's step, split and profiled."""

import json

import pytest
import torch

from mixit.analysis.presets import TINY_TASKS, adamw_form, preset_config, preset_rows
from mixit.cli import main
from mixit.tasks import get_task
from mixit.training.resolve import resolve_config
from mixit.training.setup import setup


def test_a_preset_takes_its_tasks_length_and_vocabulary():
    config = preset_config("retrieval")
    assert config.model.block_size > 1 and config.model.vocab_size > 2
    assert config.train.batch_size == 128  # the tiny preset's


def test_each_preset_gets_a_profiled_row(tmp_path, capsys):
    assert (
        main(
            [
                "bench",
                "--presets",
                "memorization",
                "--rounds",
                "1",
                "--json",
                str(tmp_path / "p.json"),
            ]
        )
        == 0
    )
    (row,) = json.loads((tmp_path / "p.json").read_text())["rows"]
    assert row["preset"] == "memorization" and row["tokens_per_s"] > 0
    assert 0 < row["mfu"] < 1 and 0 < row["matmul_share"] < 1
    assert min(row["forward_ms"], row["backward_ms"], row["optimizer_ms"]) > 0
    assert row["fused_optimizer_ms"] > 0 and row["foreach_optimizer_ms"] > 0
    assert "memorization" in capsys.readouterr().out


def test_an_unknown_preset_task_is_one_line_before_anything_is_measured(capsys, monkeypatch):
    from mixit.analysis import presets

    def measured(*_):
        raise AssertionError("measured before the tasks were checked")

    monkeypatch.setattr(presets, "matmul_peaks", measured)
    assert main(["bench", "--presets", "retrieval,nope"]) == 2
    assert "unknown task 'nope'" in capsys.readouterr().err


def test_rows_follow_the_tasks_named():
    result = preset_rows(("memorization",), rounds=1)
    assert [r["preset"] for r in result["rows"]] == ["memorization"]


def test_each_adamw_form_is_the_one_it_names():
    model = torch.nn.Linear(3, 2)
    own = torch.optim.AdamW(model.parameters())
    assert adamw_form(own, "own") is own
    for form in ("fused", "foreach"):
        groups = adamw_form(own, form).param_groups
        assert all(group[form] for group in groups)
        assert [g["params"] for g in groups] == [g["params"] for g in own.param_groups]


@pytest.mark.parametrize("task", TINY_TASKS)
def test_adamw_foreach_trains_the_same_parameters_bit_for_bit(task):
    """docs/cost.md's rule for AdamW's foreach form, part (a): the same parameters, bit for
    bit, as the one-parameter-at-a-time form, on each tiny preset's standard and MixiT
    models (the task's data built once for the four trainings)."""
    config = resolve_config(task, "standard", "tiny", 0, {"train.device": "cpu"})
    data = get_task(task).make_data(config.task, config.seed)

    def trained(model: str, foreach: bool) -> list[torch.Tensor]:
        training = setup(resolve_config(task, model, "tiny", 0, {"train.device": "cpu"}), data)
        training.optimizer = adamw_form(training.optimizer, "foreach")
        for group in training.optimizer.param_groups:
            group["foreach"] = foreach
        for _ in range(4):
            training.step()
        return [p.detach().clone() for p in training.model.parameters()]

    for model in ("standard", "mixit"):
        one_at_a_time, over_lists = trained(model, False), trained(model, True)
        assert all(torch.equal(a, b) for a, b in zip(one_at_a_time, over_lists, strict=True))
