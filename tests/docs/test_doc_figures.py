"""The figures README.md and docs/reproduce.md quote agree with the committed results."""

import importlib.util
import json
from pathlib import Path

import pytest

from mixit.running.archive import archived_files

TOOL = Path(__file__).parents[2] / "docs" / "build" / "doc_figures.py"
spec = importlib.util.spec_from_file_location("doc_figures", TOOL)
doc_figures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(doc_figures)
from figures import common  # noqa: E402 (beside doc_figures.py, on the path it set)


def test_every_quoted_figure_agrees_with_its_result_file():
    assert doc_figures.stale() == []


@pytest.mark.parametrize("document", doc_figures.DOCUMENTS, ids=lambda p: p.name)
def test_each_document_quotes_generated_figures(document):
    assert doc_figures.BLOCK.search(document.read_text())


def test_a_figure_edited_by_hand_fails_the_check(tmp_path):
    readme = doc_figures.ROOT / "README.md"
    block = doc_figures.BLOCK.search(readme.read_text())
    body = block.group(3)
    digit = next(i for i, ch in enumerate(body) if ch.isdigit())
    edited = body[:digit] + str((int(body[digit]) + 1) % 10) + body[digit + 1 :]
    copy = tmp_path / "README.md"
    copy.write_text(readme.read_text().replace(body, edited))
    assert doc_figures.stale((copy,)) == [f"{copy}: block {block.group(2)}"]
    assert doc_figures.stale((readme,)) == []


def test_check_exits_1_naming_a_stale_block(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "doc.md"
    stale.write_text(
        "<!-- figures:reproductions -->\n| typed by hand |\n<!-- /figures:reproductions -->\n"
    )
    monkeypatch.setattr(doc_figures, "DOCUMENTS", (stale,))
    assert doc_figures.main(["--check"]) == 1
    assert "block reproductions" in capsys.readouterr().err
    assert doc_figures.main([]) == 0 and doc_figures.main(["--check"]) == 0
    assert "typed by hand" not in stale.read_text()


def test_fresh_seeds_sets_a_fresh_output_beside_its_seen_twin(tmp_path, monkeypatch):
    def output(name, first_seed, confirmed, verdict):
        out = tmp_path / name
        out.mkdir()
        claim = {"id": "C1", "verdict": verdict, "measured": {"x": first_seed}, "rule": ""}
        claims = {
            "scale": "tiny",
            "seeds": 3,
            "first_seed": first_seed,
            "overrides": {},
            "presets": "tuned (tiny.json)",
            "confirmed_on_seeds": confirmed,
            "claims": [claim],
        }
        (out / "claims.json").write_text(json.dumps(claims))

    output("seen", 0, [], "reproduced")
    output("fresh", 200, [200, 201, 202], "not reproduced")
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    block = doc_figures.fresh_seeds()
    assert "`results/fresh` (tuned presets, seeds 200-202) beside `results/seen`" in block
    assert "| C1 | reproduced | **not reproduced** | x = 0 | x = 200 |" in block
    assert "Confirmed on the fresh seeds: none." in block


def test_a_tuned_run_on_fresh_seeds_is_read_beside_the_untuned_seed_sets(tmp_path, monkeypatch):
    def output(name, first_seed, presets, verdicts):
        (tmp_path / name).mkdir()
        claims = {
            "scale": "small",
            "seeds": 3,
            "first_seed": first_seed,
            "overrides": {},
            "presets": presets,
            "confirmed_on_seeds": [first_seed] if presets else [],
            "claims": [
                {"id": claim, "verdict": verdict, "measured": {"x": 1}, "rule": ""}
                for claim, verdict in verdicts.items()
            ],
        }
        (tmp_path / name / "claims.json").write_text(json.dumps(claims))

    yes, no = "reproduced", "not reproduced"
    output("seen", 0, None, {"C1": no, "C2": yes, "C3": yes})
    output("other", 100, None, {"C1": no, "C2": no, "C3": yes})
    output("tuned", 200, "tuned (small.json)", {"C1": yes, "C2": yes, "C3": yes})
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    block = doc_figures.tuned_beside_untuned_seeds()
    assert "| C1 | not reproduced | not reproduced | reproduced | moved with the tuning |" in block
    assert "| C2 | not reproduced | reproduced | reproduced | the untuned seed sets" in block
    assert "| C3 | reproduced | reproduced | reproduced | unchanged |" in block


def test_an_output_that_judged_no_claim_is_not_a_reproduction(tmp_path, monkeypatch):
    for name, verdict in (("judged", "reproduced"), ("width", "not run")):
        (tmp_path / name).mkdir()
        claims = {"claims": [{"id": "C1", "verdict": verdict}]}
        (tmp_path / name / "claims.json").write_text(json.dumps(claims))
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    assert common._outputs() == [tmp_path / "judged"]


def test_a_width_tuning_shows_the_choice_and_only_the_kept_verdict_runs(tmp_path, monkeypatch):
    out = tmp_path / "width-depth-tuned"
    for name, seed, split, accuracy in (("v0", 0, "test", 0.9), ("t", 1000, "validation", 0.5)):
        run = out / "runs" / name
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps({"model": {"n_embd": 64}}))
        summary = {"model": "mixit", "seed": seed, "evaluated_on": split}
        summary["metrics"] = {"test_accuracy": accuracy}
        (run / "summary.json").write_text(json.dumps(summary))
    group = {
        "model": "mixit",
        "experiments": ["width-depth"],
        "run_overrides": {"model.n_embd": 64},
        "train.lr": 2e-4,
        "init": "fan-in",
        "edge": "bound",
        "steps": 1200,
        "budgets": [{"score": 0.7}, {"score": 0.95}],
    }
    (out / "tuning.json").write_text(json.dumps([group, {**group, "experiments": ["table6"]}]))
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    rows = [line for line in doc_figures.width_tuning().splitlines() if line.startswith("| 64")]
    assert rows == ["| 64 | mixit | 0.0002 | fan-in | bound | 1,200 | 0.950 | 0.900 |"]


def test_every_figure_under_docs_figures_is_its_committed_result():
    figures = Path(__file__).resolve().parents[2] / "docs" / "figures"
    sources = json.loads((figures / "sources.json").read_text())
    assert sorted(sources) == sorted(p.name for p in figures.glob("*.png"))
    for name, source in sources.items():
        committed = figures.parents[1] / source
        assert (figures / name).read_bytes() == committed.read_bytes(), name
        vector, output = (
            committed.with_suffix(".pdf"),
            figures.parents[1].joinpath(*source.split("/")[:2]),
        )
        packed = {name for name, _ in archived_files(output)}  # records pack --figures
        kept = vector.is_file() or str(vector.relative_to(output)) in packed
        assert kept, f"{source} has no vector copy"


def _planted_value(axis: Path, value: int, litmus: dict) -> None:
    """A value folder of an axis with the fields of compare.json that its table reads."""
    folder = axis / f"task.num_pairs={value}"
    folder.mkdir(parents=True)
    tuned = {
        "standard": {"train.lr": 0.002, "steps": 2400, "learned": True},
        "mixit": {"train.lr": 0.0063, "steps": 2400, "learned": False},
    }
    compare = {
        "metric": "test_token_accuracy",
        "chance": 1 / value,
        "seeds": [0, 1],
        "rows": [
            {"model": "standard", "values": [0.99, 0.97], "mean": 0.98},
            {"model": "mixit", "values": [0.31, 0.25], "mean": 0.28},
        ],
        "tuned": tuned,
        "litmus": litmus,
    }
    (folder / "compare.json").write_text(json.dumps(compare))


def test_an_axis_readme_tables_each_value_in_order_from_its_compare_file(tmp_path):
    from figures.axes import axis_values

    short = {"model": "mixit", "difference": -0.7, "matches": False, "reading": "needs attention"}
    _planted_value(tmp_path, 16, {"tolerance": 0.02, "rows": [short]})
    _planted_value(
        tmp_path,
        2,
        {"tolerance": 0.02, "rows": [], "no_reference": ["seed 1 at chance"], "next": "more"},
    )
    (tmp_path / "task.num_pairs=4").mkdir()  # a value still training: no compare.json yet
    table = axis_values(tmp_path)
    assert table.index("task.num_pairs=2") < table.index("task.num_pairs=16")
    assert "task.num_pairs=4" not in table
    assert "(test_token_accuracy; chance 0.0625; budget 2,400 steps)" in table
    assert "  | standard | 0.002 | 0.990, 0.970 | 0.980 | reference |" in table
    assert (
        "  | mixit | 0.0063 (learned at no rate) | 0.310, 0.250 | 0.280 "
        "| falls short (-0.700): needs attention |"
    ) in table
    assert "| 0.280 | no verdict |" in table
    assert "standard model is no reference here (seed 1 at chance; next: more)" in table


def test_an_axis_under_way_is_named_in_the_docs_with_the_values_it_has(tmp_path, monkeypatch):
    from figures import axes

    axis = tmp_path / "axis-planted"
    short = {"model": "mixit", "difference": -0.7, "matches": False, "reading": "needs attention"}
    _planted_value(axis, 2, {"tolerance": 0.02, "rows": [short]})
    (axis / "README.md").write_text("# planted\n")
    monkeypatch.setattr(axes, "RESULTS", tmp_path)
    assert axes.axis_results() == (
        "**`results/axis-planted`**: under way, no reading over the axis yet; values compared "
        "so far: task.num_pairs=2 (its README has their tables)."
    )


def test_no_time_is_typed_outside_a_generated_block_or_a_dated_record():
    assert [line for doc in doc_figures.PROSE for line in doc_figures.undated_times(doc)] == []


def test_a_time_typed_in_an_undated_section_is_found(tmp_path, monkeypatch):
    """A minute or more typed by hand is found unless a heading above it names its day; the
    same time inside a generated block, or under 60 s, is not (#104)."""
    monkeypatch.setattr(doc_figures, "ROOT", tmp_path)
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Guide\n\nIt takes 76 s.\nA log line every 30 s.\n"
        "<!-- figures:demo -->\nIt took 9 min.\n<!-- /figures:demo -->\n"
        "## Measured (2026-11-23)\n\nIt took 2 h 36 min.\n### Below it\n\n1,200 s.\n"
        "## Later\n\nAbout 1.5 hours.\n"
    )
    found = doc_figures.undated_times(doc)
    assert found == ["doc.md:3: It takes 76 s.", "doc.md:16: About 1.5 hours."]
