"""A second compare into the same folder keeps the earlier models' rows under the same
setting, and says so; under another setting it replaces them, and says that."""

import json

from mixit.study.compare import compare

QUICK = {"train.steps": 4, "train.eval_every": 4, "task.n_train": 256, "task.n_test": 64}
QUICK |= {"model.n_embd": 16, "model.n_head": 2, "model.n_layer": 1}


def test_a_second_compare_keeps_the_earlier_models(tmp_path, capsys):
    compare("retrieval", ["standard", "mixit"], out=tmp_path, overrides=QUICK, tune=[])
    trained = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "runs").glob("*/summary.json")}
    result = compare("retrieval", ["random"], out=tmp_path, overrides=QUICK, tune=[])
    assert [row["model"] for row in result["rows"]] == ["standard", "mixit", "random"]
    stored = json.loads((tmp_path / "compare.json").read_text())
    assert [row["model"] for row in stored["rows"]] == ["standard", "mixit", "random"]
    assert {r["model"] for r in stored["litmus"]["rows"]} <= {"mixit", "random"}
    again = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "runs").glob("*/summary.json")}
    assert all(again[name] == stamp for name, stamp in trained.items())  # read back
    assert "keeping standard, mixit from the earlier compare.json" in capsys.readouterr().err
    other = compare("retrieval", ["random"], out=tmp_path, overrides={**QUICK, "train.steps": 8})
    assert [row["model"] for row in other["rows"]] == ["random"]
    assert "under another setting; it is replaced" in capsys.readouterr().err
