"""``mixit compare --per-layer VARIANT``: the placements it trains, and the necessity map read
from them (docs/rows.md, "Which layer needs what")."""

import json

import pytest

from mixit.cli import main
from mixit.models.attention import SoftmaxAttention
from mixit.models.mixers import MIXERS
from mixit.models.variants import variant_named
from mixit.study.litmus import reading
from mixit.study.per_layer import (
    format_necessity,
    necessity_map,
    per_layer_models,
    placements,
    write_necessity,
)


def test_the_placements_of_a_variant_in_three_layers():
    models = per_layer_models("mixit", 3)
    assert models == [
        "standard",
        "mixit",
        "mixit+standard@1.2",  # mixit in layer 0 only
        "mixit+standard@0",  # mixit in every layer but 0
        "mixit+standard@0.2",
        "mixit+standard@1",
        "mixit+standard@0.1",
        "mixit+standard@2",
    ]
    # With two layers "mixit in layer 0 only" is "standard in layer 1 only": trained once.
    assert per_layer_models("mixit", 2) == [
        "standard",
        "mixit",
        "mixit+standard@1",
        "mixit+standard@0",
    ]
    assert len(placements("mixit", 2)) == 4


def planted(layers: int, needed: int) -> dict:
    """A comparison on a planted task that only layer ``needed`` needs attention for: a model
    scores 1.0 on every seed where that layer is softmax attention, else 0.3."""
    rows = []
    for model in per_layer_models("mixit", layers):
        kind = MIXERS[variant_named(model).at(needed).attention]
        score = 1.0 if kind is SoftmaxAttention else 0.3
        rows.append({"model": model, "mean": score, "values": [score] * 3})
    result = {"task": "retrieval", "metric": "test_accuracy", "higher_is_better": True}
    result |= {"seeds": [0, 1, 2], "rows": rows}
    result["litmus"] = reading(result, 0.02, 100)
    return result


@pytest.mark.parametrize(("layers", "needed"), [(2, 1), (3, 1), (4, 3)])
def test_the_map_of_a_planted_task_finds_the_one_layer_that_needs_attention(layers, needed):
    found = necessity_map(planted(layers, needed), "mixit", layers)
    needs = [c["layer"] for c in found["layers"] if c["only_matches"] is False]
    rescues = [c["layer"] for c in found["layers"] if c["all_but_matches"] is True]
    assert needs == rescues == [needed]
    assert found["variant_matches"] is False
    text = format_necessity(found)
    assert f"layers that need standard's mixer: {needed}" in text
    assert f"one standard layer rescues mixit: {needed}" in text


def test_the_map_is_written_with_its_figure(tmp_path):
    found = necessity_map(planted(3, 1), "mixit", 3)
    write_necessity(found, tmp_path)
    assert json.loads((tmp_path / "necessity.json").read_text()) == found
    assert (tmp_path / "necessity.png").stat().st_size > 0
    assert (tmp_path / "necessity.pdf").exists()


SHORT = ["model.n_layer=2", "model.n_embd=16", "model.n_head=2", "train.steps=4"]
SHORT += ["train.eval_every=4", "task.n_test=50", "task.n_train=200"]


def test_compare_per_layer_trains_the_placements_and_draws_the_map(tmp_path, capsys):
    out = tmp_path / "cmp"
    args = ["compare", "--task", "retrieval", "--per-layer", "mixit", "--out", str(out)]
    assert main([*args, "--no-progress", *SHORT]) == 0
    result = json.loads((out / "compare.json").read_text())
    assert [row["model"] for row in result["rows"]] == per_layer_models("mixit", 2)
    assert (out / "necessity.json").exists() and (out / "necessity.png").exists()
    assert "per layer (mixit against standard" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--per-layer", "mixit", "--models", "standard"], "leave out --models"),
        (["--per-layer", "standard"], "--per-layer standard: name one of"),
        (["--per-layer", "mixit+standard@1"], "name one of"),
    ],
)
def test_a_bad_per_layer_is_one_line_and_exit_2(extra, says, tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(["compare", "--task", "retrieval", *extra, "--out", str(out), *SHORT])
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1
    assert not out.exists()
