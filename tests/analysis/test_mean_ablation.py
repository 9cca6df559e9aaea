"""``mixit analyze ablate``: each head and MLP mean-ablated in turn, and the drop in the metric
(#105 item 4)."""

import json

import torch

import mixit.analysis.ablation as ablation
from mixit.cli import main
from mixit.models.heads import decoder_of
from mixit.training.resolve import fit_model_to_data, resolve_config
from mixit.training.rundir import new_model
from mixit.training.train import train

SIZES = {"model.n_layer": 2, "model.n_embd": 16, "model.n_head": 2, "task.n_test": 64}


def _planted(monkeypatch):
    """A standard model whose layer-0 head 1 writes nothing (its W_O columns are zero), scored
    by a planted metric: the share of rows whose predictions match the unablated model's."""
    config = resolve_config("retrieval", "standard", "tiny", 0, SIZES)
    data = config.task_spec.make_data(config.task, config.seed)
    config = fit_model_to_data(config, data)
    model = new_model(config).eval()
    decoder = decoder_of(model)
    size = config.model.n_embd // config.model.n_head
    with torch.no_grad():
        decoder.blocks[0].attn.w_o.weight[:, size : 2 * size] = 0.0
        reference = model(data.test.inputs).argmax(-1)  # (N, T)

    def agreement(scored, data, config):
        predicted = scored(data.test.inputs).argmax(-1)  # (N, T)
        rows = reference[: len(predicted)]
        return {"test_accuracy": (predicted == rows).all(-1).double().mean().item()}

    monkeypatch.setattr(ablation, "evaluate_run", agreement)
    return model, config


def test_ablating_a_planted_head_drops_a_planted_metric_and_a_silent_one_does_not(monkeypatch):
    model, config = _planted(monkeypatch)
    found = ablation.ablate(model, config, sequences=64)
    assert found.unablated == 1.0
    drops = {c.component: c.drop for c in found.components}
    assert set(drops) == {"L0.H0", "L0.H1", "L0.MLP", "L1.H0", "L1.H1", "L1.MLP"}
    assert drops["L0.H1"] == 0.0  # it writes nothing: its mean changes nothing
    assert drops["L0.H0"] > 0.0  # the head that writes is what the predictions rest on
    assert [c.drop for c in found.components] == sorted(drops.values(), reverse=True)
    head = next(c for c in found.components if c.component == "L0.H0")
    assert 0.0 <= head.previous_token <= 1.0 and 0.0 <= head.induction <= 1.0


def test_analyze_ablate_writes_the_drops_of_a_trained_run(tmp_path, capsys):
    run_dir = tmp_path / "run"
    overrides = {"train.steps": 5, **SIZES}
    train("retrieval", "standard", out=run_dir, overrides=overrides, progress=False)
    assert main(["analyze", "ablate", str(run_dir), "--sequences", "32"]) == 0
    found = json.loads((run_dir / "analysis" / "ablation.json").read_text())
    assert found["metric"] == "test_accuracy" and len(found["components"]) == 6
    assert "component  ablated" in capsys.readouterr().out
