"""``mixit records publish`` copies an output folder without its runs, whole or not at all."""

import json
from pathlib import Path

import pytest

from mixit.cli import main
from mixit.study.publish import publish


def output_folder(root: Path) -> Path:
    (root / "table1").mkdir(parents=True)
    (root / "table1" / "report.md").write_text("# table 1\n")
    (root / "results.csv").write_text("task,model\n")
    (root / "stale.json").write_text("{}")
    for name, seconds in (("a", 1.5), ("b", 2.0)):
        run = root / "runs" / name
        run.mkdir(parents=True)
        (run / "model.safetensors").write_bytes(b"weights")
        (run / "summary.json").write_text(json.dumps({"train_seconds": seconds}))
    return root


def test_copies_everything_but_the_runs_and_sums_their_seconds(tmp_path):
    source = output_folder(tmp_path / "out")
    destination = tmp_path / "results" / "copy"
    costs = publish(source, destination, exclude=("stale.json",))
    copied = sorted(str(p.relative_to(destination)) for p in destination.rglob("*"))
    assert copied == ["results.csv", "table1", "table1/report.md"]
    assert costs["runs"] == 2 and costs["train_seconds"] == 3.5
    assert [p.name for p in destination.parent.iterdir()] == ["copy"]  # no staging left


@pytest.mark.parametrize("problem", ["not an output", "destination exists"])
def test_bad_input_exits_2_and_writes_nothing(tmp_path, problem, capsys):
    source = tmp_path / "out"
    source.mkdir()
    destination = tmp_path / "results" / "copy"
    if problem == "destination exists":
        output_folder(source)
        destination.mkdir(parents=True)
    assert main(["records", "publish", str(source), str(destination)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not destination.exists() or list(destination.iterdir()) == []


def test_a_claim_judged_on_the_same_runs_as_another_output_is_counted_once(tmp_path):
    from mixit.paper.shared_runs import mark_same_runs
    from mixit.paper.verdicts import write_claims
    from mixit.study.claim import (
        Claim,
    )
    from mixit.study.setting import Setting

    runs = {"C6": ["memorization-mixit-s0-aaaa"], "C1": ["retrieval-mixit-s0-bbbb"]}
    for name, scale, c1_runs in (("b-small", "small", ["retrieval-mixit-s0-cccc"]),
                                 ("a-tiny", "tiny", runs["C1"])):  # fmt: skip
        folder = tmp_path / "results" / name
        folder.mkdir(parents=True)
        claims = [
            Claim("C1", "s", "r", verdict="reproduced", runs=c1_runs),
            Claim("C6", "s", "r", verdict="reproduced", runs=runs["C6"]),
        ]
        write_claims(folder, claims, Setting(scale, 3), {})
    marked = mark_same_runs(tmp_path / "results")
    # The smaller scale counts it; the other names it, and C1 (other runs) counts in both.
    assert marked == {"b-small": {"C6": "results/a-tiny"}}
    small = json.loads((tmp_path / "results" / "b-small" / "claims.json").read_text())
    assert [c["same_runs_as"] for c in small["claims"]] == ["", "results/a-tiny"]
    text = (tmp_path / "results" / "b-small" / "claims.md").read_text()
    assert "1 of 1 claims run reproduced (of the 2: 1 counted elsewhere)" in text
    assert "C6 (results/a-tiny)" in text
    assert "The same runs as results/a-tiny**, which counts this claim" in text
    assert mark_same_runs(tmp_path / "results") == marked  # marked once, the same again


def test_a_suite_is_published_without_its_tasks_runs(tmp_path):
    source = tmp_path / "suite"
    (source / "addition" / "runs" / "r").mkdir(parents=True)
    (source / "addition" / "runs" / "r" / "model.safetensors").write_bytes(b"weights")
    (source / "addition" / "compare.json").write_text("{}")
    (source / "results.csv").write_text("task,model\n")
    destination = tmp_path / "results" / "suite"
    publish(source, destination)
    copied = sorted(str(p.relative_to(destination)) for p in destination.rglob("*"))
    assert copied == ["addition", "addition/compare.json", "results.csv"]
