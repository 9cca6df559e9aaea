"""``mixit bench --presets``: each tiny preset's step, split and profiled."""

import json

from mixit.analysis.presets import preset_config, preset_rows
from mixit.cli import main


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
    assert row["fused_optimizer_ms"] > 0
    assert "memorization" in capsys.readouterr().out


def test_an_unknown_preset_task_is_one_line(capsys):
    assert main(["bench", "--presets", "retrieval,nope"]) == 2
    assert "unknown task 'nope'" in capsys.readouterr().err


def test_rows_follow_the_tasks_named():
    result = preset_rows(("memorization",), rounds=1)
    assert [r["preset"] for r in result["rows"]] == ["memorization"]
