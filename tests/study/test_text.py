"""How reports put our numbers beside the paper's: a gap beyond the stated factor is said."""

import doctest
from pathlib import Path

from mixit.paper import table7
from mixit.study import text
from mixit.study.text import against_paper


def test_the_examples_hold():
    result = doctest.testmod(text)
    assert result.attempted >= 2 and result.failed == 0


def test_a_gap_beyond_the_factor_says_by_how_much_and_which_way():
    assert against_paper(0.001, 0.001) == "within 3×"
    assert against_paper(0.0029, 0.001) == "within 3×"
    assert against_paper(0.0042, 0.001) == "4.2× larger"
    assert against_paper(-0.5, 0.5) == "the other sign"
    assert against_paper(0.0, 0.00088) == "0 (the paper: 0.00088)"


def test_table7_flags_a_planted_100x_gap_to_the_papers_covariance(tmp_path, monkeypatch):
    """MixiT planted 100 times below the paper at every depth, the random transformer at it."""
    planted = {
        model: [
            [{"covariance": paper * (0.01 if model == "mixit" else 1.0), "correlation": 0.1}]
            for paper in table7.PAPER[model]
        ]
        for model in table7.MODELS
    }
    monkeypatch.setattr(table7, "cached_measurement", lambda path, key, measure: planted)
    monkeypatch.setattr(table7, "TRAINED_DEPTHS", ())
    report = table7.report("tiny", range(1), {}, tmp_path, {})
    rows = {line.split(" | ")[0]: line for line in report.markdown.splitlines()}
    assert rows["| mixit covariance against the paper's"].count("100× smaller") == 5
    assert rows["| random covariance against the paper's"].count("within 3×") == 5
    assert "Beyond 3× from the paper's covariance: mixit (" in report.markdown


def test_the_committed_tiny_table7_report_flags_mixits_covariance():
    results = Path(__file__).resolve().parents[2] / "results" / "table7-tiny-seed100"
    report = (results / "table7" / "report.md").read_text()
    (row,) = [line for line in report.splitlines() if "mixit covariance against" in line]
    assert row.count("× smaller") == len(table7.DEPTHS)


def test_a_title_names_the_scale_and_the_seeds():
    assert text.ran("tiny", range(100, 103)) == "tiny, seeds 100-102"
    assert text.ran("small", range(0, 1)) == "small, seed 0"


def test_table7_says_when_training_reverses_the_claims_order(monkeypatch):
    """The committed tiny run's numbers after training: MixiT's tokens more correlated than the
    random transformer's at depth 8, the order the claim gives at initialisation reversed."""
    trained = {
        "random depth 8": {"covariance": 0.1957, "correlation": 0.191},
        "mixit depth 8": {"covariance": 8.8307, "correlation": 0.565},
    }
    monkeypatch.setattr(table7, "TRAINED_DEPTHS", (2, 8))
    note = table7.trained_order_note(trained)
    assert note.startswith("After training, the order at depth 8 contradicts the claim")
    assert "MixiT 0.565, the random transformer 0.191" in note
    kept = {**trained, "mixit depth 8": {"covariance": 0.1, "correlation": 0.05}}
    assert "is still the claim's" in table7.trained_order_note(kept)
    assert table7.trained_order_note({}) == ""
