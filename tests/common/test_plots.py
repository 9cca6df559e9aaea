"""Every figure kind mixit writes, read back as matplotlib figures: a title, labelled axes and
colour bars, and a PDF beside each PNG."""

import math

import matplotlib.figure
import pytest
import torch

from mixit.analysis.attention import plot_attention_maps
from mixit.common.plots import bar_plot, line_plot
from mixit.paper import theorem21
from mixit.paper.verdicts import tuning_caption
from mixit.study.setting import Setting
from mixit.study.suite import heatmap
from mixit.study.text import ran, trained_as


@pytest.fixture
def drawn(monkeypatch):
    """The figures saved while the test runs, each with the paths it was saved to."""
    figures: dict[int, tuple[matplotlib.figure.Figure, list[str]]] = {}
    original = matplotlib.figure.Figure.savefig

    def savefig(fig, path, **kwargs):
        figures.setdefault(id(fig), (fig, []))[1].append(str(path))
        return original(fig, path, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    return figures


def _colour_bar(ax) -> bool:
    return hasattr(ax, "_colorbar")


def _text(label) -> str:
    return label.get_text() if label is not None else ""


def _check(fig: matplotlib.figure.Figure) -> None:
    """Each plot titled (or its figure), each axis labelled (or the figure's, for a grid)."""
    title, xlabel, ylabel = (_text(fig._suptitle), _text(fig._supxlabel), _text(fig._supylabel))
    for ax in fig.axes:
        if _colour_bar(ax):
            assert ax.get_ylabel() or ax.get_xlabel(), "a colour bar without a label"
            continue
        assert ax.get_title() or title, "a plot without a title"
        assert ax.get_xlabel() or xlabel, f"no x label in {ax.get_title()!r}"
        assert ax.get_ylabel() or ylabel, f"no y label in {ax.get_title()!r}"


def test_every_figure_kind_has_a_title_labelled_axes_and_a_vector_copy(tmp_path, drawn):
    seeds = [[0.2, 0.3], [0.5, 0.6], [0.9, 0.8]]
    line_plot(tmp_path / "line.png", [4, 8, 16], {"mixit": seeds}, "t", "pairs", "accuracy")
    bar_plot(tmp_path / "bars.png", {"standard": [3.0, 3.1], "mixit": [2.0]}, "t", "bits")
    rows = [{"model": m, "mean": 0.5} for m in ("standard", "mixit", "random")]
    reading = {"rows": [{"model": "mixit", "matches": False}, {"model": "random", "matches": None}]}
    results = {"retrieval": {"rows": rows, "litmus": reading, "preset": "tiny", "seeds": [0]}}
    scores = {"retrieval": {"standard": 1.0, "mixit": -0.2, "random": math.nan}}
    heatmap(tmp_path / "heatmap.png", scores, results)
    patterns = torch.softmax(torch.randn(2, 2, 30, 30), dim=-1)  # (L, H, T, T)
    plot_attention_maps(patterns, [f"t{i}" for i in range(30)], tmp_path / "maps.png", "maps")
    trace = [[[0.1 * i, 0.05 * i] for i in range(11)]]
    theorem21._plot_paths(tmp_path / "paths.png", {"recursion": trace, "sde": trace})
    assert len(drawn) == 5
    for fig, paths in drawn.values():
        _check(fig)
        assert sorted(p.rsplit(".", 1)[1] for p in paths) == ["pdf", "png"]
    assert all((tmp_path / f"{name}.pdf").stat().st_size > 1000 for name in ("line", "heatmap"))


def test_bars_beyond_the_paper_are_hatched_under_one_legend_entry(tmp_path, drawn):
    values = {"standard": [3.0], "frozen-mlp": [3.2, 3.3], "mixit-learned": [3.4]}
    beyond = dict.fromkeys(["frozen-mlp", "mixit-learned"], "beyond the paper")
    bar_plot(tmp_path / "bars.png", values, "t", "log perplexity", hatched=beyond)
    ((fig, _),) = drawn.values()
    (ax,) = fig.axes
    assert [bar.get_hatch() for bar in ax.patches] == [None, "//", "//"]
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["beyond the paper"]


def test_the_heatmap_extends_its_scale_to_every_score_and_marks_the_verdicts(tmp_path, drawn):
    rows = [{"model": m, "mean": 0.5} for m in ("standard", "mixit")]
    reading = {"rows": [{"model": "mixit", "matches": False}]}
    results = {"t": {"rows": rows, "litmus": reading, "preset": "tiny", "seeds": [0, 1, 2]}}
    heatmap(tmp_path / "h.png", {"t": {"standard": 1.0, "mixit": -0.11}}, results)
    ((fig, _),) = drawn.values()
    (image,) = fig.axes[0].images
    assert image.norm.vmin == pytest.approx(-0.11) and image.norm.vmax == 1.0  # no clipping
    assert [t.get_text() for t in fig.axes[0].texts] == ["-0.11 ✗"]  # standard left out
    # A narrow (one-task) heatmap wraps its title to its width.
    title = fig.axes[0].get_title()
    assert " ".join(title.split()) == "Suite: mixit's decoder, preset tiny, 3 seeds, untuned"
    assert image.get_cmap().name.startswith("cividis")


def test_a_figure_title_says_how_its_runs_were_trained():
    assert ran("tiny", range(100, 103)) == "tiny, seeds 100-102"
    with trained_as("tuned presets"):
        assert ran("tiny", range(100, 103)) == "tiny, seeds 100-102, tuned presets"
    assert ran("small", range(7, 8)) == "small, seed 7"
    presets = Setting("tiny", 3, presets="tiny.json")
    assert tuning_caption(presets) == "tuned presets"
    assert tuning_caption(presets, covered=False) == "untuned"
    assert tuning_caption(Setting("tiny", 3, tune="protocol")) == "tuned here"
    assert tuning_caption(Setting("tiny", 3, tuned="sweeps/best.json")) == "rates of best.json"


def test_a_model_keeps_its_colour_and_marker_whatever_else_a_figure_plots(tmp_path, drawn):
    seeds = [[0.9, 1.0], [0.95, 1.0]]
    line_plot(tmp_path / "a.png", [2, 4], {"standard": seeds, "mixit": seeds}, "t", "x", "y")
    models = {"random": seeds, "frozen-qk": seeds, "mixit": seeds}
    line_plot(tmp_path / "b.png", [2, 4], models, "t", "x", "y", bounds=(0.0, 1.0))
    (first, _), (second, _) = drawn.values()
    styles = [
        {c.get_label(): (c.lines[0].get_color(), c.lines[0].get_marker()) for c in ax.containers}
        for ax in (first.axes[0], second.axes[0])
    ]
    assert styles[0]["mixit"] == styles[1]["mixit"]
    assert len({*styles[0].values(), *styles[1].values()}) == 4  # four models, four styles
    # Two series on the same values stand apart, and no error bar passes accuracy 1.0.
    drawn_bars = second.axes[0].containers
    assert len({tuple(c.lines[0].get_xdata()) for c in drawn_bars}) == 3
    tops = [
        seg[:, 1].max() for c in drawn_bars for bars in c.lines[2] for seg in bars.get_segments()
    ]
    assert max(tops) <= 1.0
    # The legend sits below the axes, off the data.
    assert second.axes[0].get_legend().get_bbox_to_anchor().y0 < second.axes[0].bbox.y0


def test_attention_maps_name_positions_with_their_tokens_where_they_fit(tmp_path, drawn):
    patterns = torch.softmax(torch.randn(1, 1, 4, 4), dim=-1)  # (L, H, T, T)
    plot_attention_maps(patterns, ["a", "b", "c", "d"], tmp_path / "maps.png", "maps")
    ((fig, _),) = drawn.values()
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0 a", "1 b", "2 c", "3 d"]
    assert "position" in fig._supxlabel.get_text()
