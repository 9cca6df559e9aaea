"""The width question (docs/width.md): the arithmetic behind it, the budget rule its runs
follow, and the device script at toy size."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from mixit.config.schema import ModelConfig
from mixit.models.decoder import Decoder
from mixit.models.heads import attention_patterns, logit_spread
from mixit.models.variants import VARIANTS
from mixit.paper import reproduce, table1, table4, table6, width, width_reading
from mixit.paper.runner import plan_reproduction
from mixit.study.experiment import Reproduction

TOOL = Path(__file__).parents[2] / "studies" / "width_device.py"


@pytest.mark.parametrize("n", [64, 256])
def test_the_logit_spread_at_initialisation_is_about_n_sigma_squared(n):
    """Under N(0, sigma^2) weights (the authors' 0.02) a query and a key entry have variance
    n sigma^2 each, so a logit q.k / sqrt(n_h) has standard deviation n sigma^2: 0.026 at 64,
    0.10 at 256. Frozen at that spread, attention stays near uniform at laptop width."""
    torch.manual_seed(0)
    config = ModelConfig(n_layer=1, n_embd=n, n_head=4, vocab_size=64, block_size=64, init="gpt2")
    model = Decoder(config, VARIANTS["frozen-qk"])
    with torch.no_grad():
        patterns = attention_patterns(model, torch.randint(0, 64, (16, 64)))  # (L, B, H, T, T)
    assert logit_spread(patterns) == pytest.approx(n * width.INIT_STD**2, rel=0.15)


def test_uniform_attention_has_no_logit_spread():
    causal = torch.ones(4, 4).tril()
    uniform = (causal / causal.sum(-1, keepdim=True))[None, None, None]  # (1, 1, 1, T, T)
    assert logit_spread(uniform) == pytest.approx(0.0, abs=1e-6)


def test_a_width_run_is_its_questions_run_with_only_the_width_changed():
    """The budget rule: every setting but model.n_embd (and, for retrieval, the construction
    asked about) is the question's own run's at the scale."""
    seeds = range(1)
    base = {
        ("retrieval", "frozen-qk"): next(
            r
            for r in table1.plan("tiny", seeds)
            if r.task == "retrieval" and r.model == "frozen-qk"
        ),
        ("addition", "random"): table6._runs("tiny", "random", width.DEPTH, seeds)[0],
        ("memorization", "mixit"): next(
            r for r in table4.plan("tiny", seeds) if r.model == "mixit"
        ),
    }
    planned = width.plan("tiny", seeds)
    for (task, model), own in base.items():
        own_config = own.config("tiny").to_dict()
        for run in planned:
            if (run.task, run.model) != (task, model):
                continue
            if dict(run.overrides).get("model.construction", "equations") != "equations":
                continue
            config = run.config("tiny").to_dict()
            assert config["model"].pop("n_embd") == dict(run.overrides)["model.n_embd"]
            reference = {**own_config, "model": dict(own_config["model"])}
            reference["model"].pop("n_embd")
            assert config == reference, (task, model)


def test_width_is_asked_by_name_and_is_not_part_of_all():
    experiments, _ = plan_reproduction(["all"], Reproduction("tiny", seeds=1))
    assert "width" not in [e.name for e in experiments]
    experiments, configs = plan_reproduction(["width"], Reproduction("tiny", seeds=1))
    assert [e.name for e in experiments] == ["width"]
    widths = {c.model.n_embd for c in configs.values()}
    assert widths == set(width.WIDTHS["tiny"])


def test_width_depth_asks_the_depth_question_alone_tuned_as_table6():
    how = Reproduction("tiny", seeds=1)
    _, every = plan_reproduction(["width"], how)
    experiments, configs = plan_reproduction(["width-depth"], how)
    assert {r.task for r in configs} == {"addition"}
    depth = {r: c for r, c in every.items() if r.task == "addition"}
    assert configs == depth
    assert experiments[0].tune_inits == table6.EXPERIMENT.tune_inits


def test_a_one_question_report_reads_only_its_claim(tmp_path, monkeypatch):
    monkeypatch.setitem(width.WIDTHS, "tiny", (16, 32))
    steps = {"train.steps": 2, "train.eval_every": 2, "train.eval_examples": 64}
    reproduce(["width-depth"], Reproduction("tiny", seeds=1, out=tmp_path, overrides=steps))
    results = json.loads((tmp_path / "width-depth" / "results.json").read_text())
    assert "depth_accuracy" in results
    assert not {"retrieval_accuracy", "bits_per_param"} & set(results)
    rows = _reading_rows(results)
    assert {row.split(" | ")[0] for row in rows.values()} == {"| C8"}
    assert "depth.png" in (tmp_path / "width-depth" / "report.md").read_text()


def test_the_device_script_runs_at_toy_size_on_the_cpu(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("width_device", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    monkeypatch.setitem(width.WIDTHS, "tiny", width.WIDTHS["tiny"])  # the tool sets it
    assert tool.main(["--toy", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "width" / "results.json").read_text())
    assert results["widths"] == [16, 32]
    spread = results["frozen_attention_at_init"]["authors"]
    assert [s[0]["logit_spread"] < 0.05 for s in spread] == [True, True]
    report = (tmp_path / "width" / "report.md").read_text()
    assert report.count("n = 16") >= 4 and "| C6 | verdict;" in report


def test_the_device_script_passes_tune_on_to_the_reproduction(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("width_device", TOOL)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    monkeypatch.setitem(width.WIDTHS, "tiny", width.WIDTHS["tiny"])
    asked = []
    monkeypatch.setattr(tool, "reproduce", lambda experiments, how: asked.append(how.tune))
    for flags in ([], ["--tune"]):
        assert tool.main(["--toy", "--out", str(tmp_path), *flags]) == 0
    assert asked == [False, True]


def test_a_change_inside_twice_the_seed_spread_is_flat():
    assert width_reading.direction([0.30, 0.32, 0.31], [0.90, 0.92, 0.91], floor=0.05) == "rises"
    assert width_reading.direction([0.30, 0.32, 0.31], [0.34, 0.36, 0.35], floor=0.05) == "flat"
    assert width_reading.direction([0.1, 0.9, 0.5], [0.0, 0.2, 0.1], floor=0.05) == "flat"
    assert width_reading.direction([0.9], [0.5], floor=0.05) == "falls"


FLAT, RISING = [[0.99] * 3] * 3, [[0.30, 0.31, 0.29], [0.6] * 3, [0.95, 0.96, 0.94]]


def _planted() -> dict:
    """Width results in which every reading is measurable: the standard model learns
    retrieval at every width and no model stores every memorization pair."""
    return {
        "widths": [64, 128, 256],
        "retrieval_accuracy": {
            "standard (equations)": FLAT,
            "standard (authors)": FLAT,
            "frozen-qk (equations)": FLAT,
            "frozen-qk (authors)": RISING,
        },
        "retrieval_chance": 0.27,
        "depth_accuracy": {"mixit": FLAT, "random": RISING},
        "bits_per_param": {
            "standard": [[2.0] * 3] * 3,
            "frozen-qk": [[1.9] * 3] * 3,
            "mixit": [[1.4] * 3, [1.6] * 3, [1.85] * 3],
            "frozen-mlp": [[1.0] * 3] * 3,
        },
        "memorization_accuracy": {m: [[0.8] * 3] * 3 for m in table4.MODELS},
    }


def _reading_rows(results: dict) -> dict[str, str]:
    return {line.split(" | ")[1]: line for line in width_reading.reading(results).splitlines()[2:]}


def test_frozen_qk_is_not_read_against_width_where_the_standard_model_did_not_learn():
    results = _planted()
    results["retrieval_accuracy"]["standard (authors)"] = [[0.99] * 3, [0.29] * 3, [0.28] * 3]
    rows = _reading_rows(results)
    assert (
        "| no reading: standard did not learn it at n = 256 (chance 0.270;"
        in rows["frozen-qk (authors)"]
    )
    assert rows["frozen-qk (equations)"].endswith("| flat: does not move |")


def test_c6_is_not_read_against_width_where_a_model_stored_every_pair():
    results = _planted()
    results["memorization_accuracy"]["standard"] = [[0.8] * 3, [1.0] * 3, [1.0] * 3]
    c6 = next(line for line in _reading_rows(results).values() if line.startswith("| C6"))
    assert c6.endswith(
        "| no reading: every pair stored at n = 128 (standard); n = 256 (standard) |"
    )


def test_the_width_reading_says_which_way_each_claim_moves():
    """Planted: Frozen-QK under the authors' construction learns retrieval only when wide, the
    random transformer's depth-16 accuracy rises with width, and C6's slack turns positive."""
    results = _planted()
    rows = _reading_rows(results)
    assert rows["frozen-qk (authors)"].endswith("| rises: towards the paper |")
    assert rows["frozen-qk (equations)"].endswith("| flat: does not move |")
    assert "standard (authors)" not in rows
    assert rows[f"mixit at depth {width.DEPTH}"].endswith("| flat: does not move |")
    assert rows[f"random at depth {width.DEPTH}"].endswith("| rises: away from the paper |")
    c6 = next(line for line in rows.values() if line.startswith("| C6"))
    assert c6.endswith("| not reproduced → reproduced |")
