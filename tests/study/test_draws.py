"""``compare --frozen-draws K``: draws of what the variants keep untrained, crossed with the data
seeds, and the reading over them (#105 item 1)."""

import json
import statistics

import pytest

from mixit.cli import main
from mixit.study.draws import draw_seeds, draws_estimate_line, read_draws, split_spread

SHORT = ["model.n_layer=2", "model.n_embd=16", "model.n_head=2", "train.steps=4"]
SHORT += ["train.eval_every=4", "task.n_test=50", "task.n_train=200"]


def test_the_crossed_design_splits_a_planted_spread_into_draw_and_seed():
    """A table made of a draw effect plus a seed effect, nothing else: the split finds each
    effect's std and no residual; with the seed effect alone, no draw part."""
    draw_effect, seed_effect = [0.0, 0.3, 0.1], [0.0, 0.02, 0.01, 0.05]
    table = [[0.5 + d + s for s in seed_effect] for d in draw_effect]
    spread = split_spread(table)
    assert spread.draw == pytest.approx(statistics.stdev(draw_effect))
    assert spread.seed == pytest.approx(statistics.stdev(seed_effect))
    assert spread.residual == pytest.approx(0.0, abs=1e-9)
    seeds_only = split_spread([[0.5 + s for s in seed_effect] for _ in draw_effect])
    assert seeds_only.draw == pytest.approx(0.0, abs=1e-9)
    assert seeds_only.seed == pytest.approx(statistics.stdev(seed_effect))


def _result(verdict, values):
    rows = [{"model": "standard", "mean": 1.0, "values": [1.0, 1.0]}]
    rows += [{"model": "mixit", "mean": statistics.fmean(values), "values": values}]
    litmus = {"tolerance": 0.02, "rows": [{"model": "mixit", "matches": verdict}]}
    return {"rows": rows, "litmus": litmus}


def test_a_verdict_held_on_every_draw_and_draws_that_disagree():
    one, two = draw_seeds(2)
    agree = read_draws({one: _result(False, [0.3, 0.31]), two: _result(False, [0.29, 0.3])})
    (mixit,) = agree  # standard keeps no draw: it is not read over them
    assert mixit.holds and mixit.reading == "falls short on every draw (2)"
    disagree = read_draws({one: _result(True, [1.0, 0.99]), two: _result(False, [0.3, 0.31])})
    assert not disagree[0].holds
    assert disagree[0].reading.startswith("the draws disagree (matches on 1, falls short on 1")
    ragged = read_draws({one: _result(False, [0.3, 0.31]), two: _result(False, [0.3, 0.3, 0.2])})
    assert ragged[0].spread is None  # seeds that differ between draws: no crossed table
    half_open = read_draws({one: _result(True, [1.0, 0.99]), two: _result(None, [0.9, 1.0])})
    assert half_open[0].reading.startswith("matches on 1, inconclusive on 1 of 2: no draw falls")
    lost = _result(None, [0.3, 0.31])
    lost["litmus"] |= {"rows": [], "no_reference": ["standard reaches 0.04"]}
    unread = read_draws({one: _result(False, [0.3, 0.31]), two: lost})
    assert unread[0].reading.startswith(f"no verdict: the reference did not learn on draw {two}")


def test_compare_frozen_draws_trains_each_draw_and_shares_the_reference(tmp_path, capsys):
    out = tmp_path / "draws"
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--seeds", "2"]
    assert main([*argv, "--frozen-draws", "2", "--out", str(out), *SHORT]) == 0
    printed = capsys.readouterr().out
    assert "model.frozen_seed=10000:" in printed and "over the frozen draws" in printed
    (reading,) = json.loads((out / "draws.json").read_text())["draws"]
    assert (out / "draws.png").stat().st_size > 10_000 and (out / "draws.pdf").is_file()
    assert reading["model"] == "mixit" and reading["draws"] == [10000, 10001]
    assert len(reading["values"]) == 2 and all(len(v) == 2 for v in reading["values"])
    first, second = (
        sorted(p.name for p in (out / f"draw-{s}" / "runs").iterdir()) for s in (10000, 10001)
    )
    shared = [name for name in first if name.startswith("retrieval-standard-")]
    assert len(shared) == 2 and set(shared) <= set(second)  # one standard run per seed, read twice
    assert not set(first) - set(shared) & set(second)  # MixiT's runs differ by draw


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--frozen-draws", "1"], "give 2 or more draws"),
        (["--frozen-draws", "2", "--models", "standard,uniform"], "keeps a random draw"),
        (["--frozen-draws", "2", "--axis", "task.max_pairs=2,4"], "leave out --axis"),
        (["--frozen-draws", "2", "model.frozen_seed=3"], "leave out the override"),
        (["--models", "standard,uniform", "model.frozen_seed=3"], "it would change nothing"),
    ],
)
def test_a_bad_frozen_draws_is_one_line_and_exit_2(extra, says, tmp_path, capsys):
    out = tmp_path / "cmp"
    code = main(["compare", "--task", "retrieval", *extra, "--out", str(out), *SHORT])
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_the_estimate_prices_the_further_draws_of_the_models_that_keep_one():
    rows = [
        {"model": "standard", "runs": 3, "run_seconds": 100.0},
        {"model": "mixit", "runs": 3, "run_seconds": 20.0},
    ]
    line = draws_estimate_line(rows, 5)
    assert line.startswith(
        "plus --frozen-draws 5: mixit again on 4 more draws, up to about 4.0 min"
    )


def test_train_refuses_a_frozen_seed_its_model_does_not_read(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--task", "retrieval", "--model", "standard", "--out", str(out)]
    assert main([*argv, "model.frozen_seed=3", *SHORT]) == 2
    assert "standard keeps none" in capsys.readouterr().err and not out.exists()


def test_a_draw_left_open_by_a_rising_run_prints_the_extension_of_the_whole_command(
    tmp_path, monkeypatch, capsys
):
    """Each draw is its own comparison: one still rising asks for --extend, which every draw
    then runs (the command printed is the draws' own, with --extend added)."""
    import mixit.cli.compare as command
    from mixit.common.io import write_json

    rising = _result(None, [0.9, 1.0])
    rising["litmus"]["rows"][0]["still_rising"] = True
    planted = {10000: _result(True, [1.0, 1.0]), 10001: rising}

    def trained(count, out, overrides, compare_point):
        for seed, result in planted.items():
            write_json(out / f"draw-{seed}" / "compare.json", result)
        return read_draws(planted)

    monkeypatch.setattr(command, "along_draws", trained)
    out = tmp_path / "draws"
    argv = ["compare", "--task", "retrieval", "--models", "standard,mixit", "--seeds", "2"]
    assert main([*argv, "--frozen-draws", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith("next, to decide what is open: mixit compare --task retrieval")
    assert printed[-1].endswith("--extend") and "--frozen-draws 2" in printed[-1]
