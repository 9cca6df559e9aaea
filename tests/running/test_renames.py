"""``mixit records rename`` gives a run named by its config alone (before names covered the files
a run reads) today's name, only when asked, so the same command finds it instead of training
it again."""

import hashlib
import json

from mixit.cli import main
from mixit.running.runs import run_dir_name, train_missing
from mixit.training.resolve import resolve_config


def test_a_run_named_by_its_config_alone_gets_todays_name_on_apply(tmp_path, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"input": w, "target": w[::-1]}) + "\n" for w in "abcdef"))
    steps = {"train.steps": 2, "train.eval_every": 2, "train.batch_size": 4}
    config = resolve_config(
        "custom", "standard", "tiny", 0, steps | {"task.data_files": f"{data},{data}"}
    )
    runs = tmp_path / "out" / "task.size=1" / "runs"  # as an axis value's runs/
    assert train_missing({"run": config}, runs)[1] == 1
    digest = hashlib.sha256(json.dumps(config.result_dict(), sort_keys=True).encode())
    legacy = runs / f"custom-standard-s0-{digest.hexdigest()[:10]}"
    (runs / run_dir_name(config)).rename(legacy)
    assert train_missing({"run": config}, runs, train=False)[0] == {}  # not found by name

    assert main(["records", "rename", str(tmp_path / "out")]) == 0
    assert legacy.is_dir() and "would rename (give --apply) 1 runs" in capsys.readouterr().out
    assert main(["records", "rename", str(tmp_path / "out"), "--apply"]) == 0
    assert train_missing({"run": config}, runs)[1] == 0  # found: nothing trains
    assert (
        main(["records", "rename", str(tmp_path / "out"), "--apply"]) == 0
    )  # nothing left to rename
    assert capsys.readouterr().out.endswith("renamed 0 runs\n")


def test_a_run_of_a_built_in_task_keeps_its_name(tmp_path, capsys):
    steps = {"train.steps": 2, "train.eval_every": 2, "train.eval_examples": 32}
    config = resolve_config("retrieval", "standard", "tiny", 0, steps)
    train_missing({"run": config}, tmp_path / "runs")
    assert main(["records", "rename", str(tmp_path)]) == 0
    assert "rename (give --apply) 0 runs" in capsys.readouterr().out
