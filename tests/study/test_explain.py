"""``compare --explain``: the reference's components, ablated, behind a "falls short" (#105)."""

import pytest

from mixit.cli import main
from mixit.study.explain import explain, format_explanation
from mixit.training.train import train

SMALL = {"model.n_layer": 2, "model.n_embd": 16, "model.n_head": 2, "task.n_test": 64}
SMALL |= {"task.n_train": 256, "train.steps": 4, "train.tensorboard": False}


def _result(matches):
    litmus = {"tolerance": 0.02, "rows": [{"model": "mixit", "matches": matches}]}
    return {"seeds": [0, 1], "litmus": litmus}


def test_a_variant_short_of_the_reference_is_explained_by_the_references_ablation(tmp_path):
    run_dir = tmp_path / "standard-s0"
    train("retrieval", "standard", out=run_dir, overrides=SMALL, progress=False)
    rows = [{"model": "standard", "seed": "0", "run_dir": str(run_dir)}]
    found = explain(_result(False), rows)
    assert found.short == ["mixit"] and found.seed == 0
    lines = format_explanation(found).splitlines()
    assert lines[0].startswith("explained (mixit falls short): in standard (seed 0)")
    assert len(lines) == 4 and all(line.startswith("  ablating L") for line in lines[1:])
    assert "takes test accuracy from" in lines[1]
    assert explain(_result(True), rows) is None  # nothing falls short: nothing to explain
    assert explain(_result(False), [{**rows[0], "seed": "1"}]) is None  # no first-seed run


@pytest.mark.parametrize("extra", [["--axis", "task.max_pairs=2,4"], ["--frozen-draws", "2"]])
def test_explain_reads_one_comparison(extra, tmp_path, capsys):
    argv = ["compare", "--task", "retrieval", "--explain", *extra, "--out", str(tmp_path / "c")]
    assert main(argv) == 2
    assert "--explain reads one comparison" in capsys.readouterr().err
