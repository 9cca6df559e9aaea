"""A token mixer and a variant defined here, and nowhere else in mixit, train and are judged
through the study loop like the paper's five (docs/architecture.md, "Where new work goes")."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import mixit
from mixit.config.schema import ModelConfig
from mixit.models.attention import MixerTraits, Tap, projection
from mixit.models.mixers import MIXERS
from mixit.models.variants import VARIANTS, Variant
from mixit.study.litmus import litmus
from mixit.training.rundir import load_run


class CausalMean(nn.Module):
    """Each position averages the values of the positions up to it: a causal mean, with no
    parameters of its own beyond W_V and W_O."""

    def __init__(self, config) -> None:
        super().__init__()
        self.w_v = projection(config, config.n_embd, config.n_embd)
        self.w_o = projection(config, config.n_embd, config.n_embd)
        self.hook_pattern = Tap()

    @staticmethod
    def traits(config) -> MixerTraits:
        return MixerTraits(
            positions="learned",
            cached=("v",),
            causal=True,
            exportable=False,
            projections=2,
            matrices="none",
        )

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        return {"vo": [*self.w_v.parameters(), *self.w_o.parameters()]}

    def forward(self, x, cache=None, real=None) -> torch.Tensor:
        T = x.shape[1]
        visible = torch.ones(T, T, device=x.device).tril()  # (T, T)
        pattern = self.hook_pattern(visible / visible.sum(-1, keepdim=True))  # (T, T)
        return self.w_o(pattern @ self.w_v(x))  # (B, T, n)


MEAN = Variant(
    "causal-mean",
    "causal-mean",
    frozenset(),
    "each position averages the ones before it",
    if_matches="a causal mean suffices",
    if_short="the task needs more than a causal mean",
)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(MIXERS, "causal-mean", CausalMean)
    monkeypatch.setitem(VARIANTS, "causal-mean", MEAN)


# A retrieval the standard model learns in a few hundred steps, so that a reading is made.
SMALL = {
    "task.vocab_size": 24,
    "task.max_pairs": 4,
    "task.n_train": 4000,
    "task.n_test": 500,
    "model.n_embd": 32,
    "model.n_head": 2,
    "model.n_layer": 2,
    "train.steps": 400,
    "train.eval_every": 200,
    "train.batch_size": 64,
    "train.lr": 3e-3,
    "train.eval_examples": 500,
}


def test_a_mixer_and_variant_of_a_test_train_and_are_judged(registered, tmp_path):
    result = mixit.compare(
        "retrieval", ["standard", "causal-mean"], out=tmp_path, overrides=SMALL, tune=[]
    )
    rows = {row["model"]: row for row in result["rows"]}
    assert set(rows) == {"standard", "causal-mean"}
    assert 0.0 <= rows["causal-mean"]["mean"] <= 1.0
    (reading,) = result["litmus"]["rows"]  # read against the standard model, as any variant
    assert reading["model"] == "causal-mean"
    # One seed: the reading says what was compared; three, tuned, give the variant's sentence.
    compared = "reaches" if reading["matches"] else "falls short of"
    assert reading["reading"].startswith(f"causal-mean {compared} the reference on 1 seed")
    planted = {"metric": "test_accuracy", "higher_is_better": True, "seeds": [0, 1, 2]}
    planted["tuned"] = {
        key: {"steps": 100, "edge": "edge", "train.lr": 0.001}
        for key in ["standard", "causal-mean"]
    }
    planted["rows"] = [
        {"model": "standard", "mean": 1.0, "values": [1.0, 1.0, 1.0]},
        {"model": "causal-mean", "mean": 0.5, "values": [0.5, 0.5, 0.5]},
    ]
    assert [r.reading for r in litmus(planted, 0.02)] == [MEAN.if_short]
    (run_dir,) = (tmp_path / "runs").glob("retrieval-causal-mean-*")
    model, config = load_run(run_dir)
    assert config.variant == "causal-mean"
    assert all(isinstance(block.attn, CausalMean) for block in model.blocks)
    # Its one declared group trains, and no queries or keys exist.
    assert all(p.requires_grad for p in model.param_groups()["vo"])
    assert not model.param_groups()["qk"]


def test_the_causal_mean_reads_only_the_past(registered):
    mixer = CausalMean(ModelConfig(n_embd=8, n_head=2))
    x = torch.randn(1, 5, 8)
    changed = x.clone()
    changed[:, 3:] += 1.0
    assert torch.allclose(mixer(x)[:, :3], mixer(changed)[:, :3])
