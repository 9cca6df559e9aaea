"""``model.frozen_seed``: what a variant freezes is drawn from its own seed, everything else
from the run's (#105)."""

import pytest
import torch

from mixit.common.errors import UsageError
from mixit.running.runs import run_dir_name
from mixit.training.resolve import resolve_config
from mixit.training.rundir import new_model

SIZES = {"model.vocab_size": 20, "model.block_size": 12}


def _model(variant: str, seed: int, **settings):
    return new_model(resolve_config("retrieval", variant, "tiny", seed, SIZES | settings))


def _frozen(model) -> set[str]:
    """The names of what does not train: frozen parameters and every buffer."""
    frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
    return frozen | {name for name, _ in model.named_buffers()}


@pytest.mark.parametrize("variant", ["mixit", "frozen-qk", "frozen-mlp", "random"])
def test_the_frozen_draw_changes_only_the_frozen_weights(variant):
    own = _model(variant, 0).state_dict()
    drawn = _model(variant, 0, **{"model.frozen_seed": 7})
    donor = _model(variant, 7).state_dict()
    frozen = _frozen(drawn) & own.keys()  # RoPE's tables are not saved: equal in every draw
    for name, tensor in drawn.state_dict().items():
        assert torch.equal(tensor, donor[name] if name in frozen else own[name]), name
    assert any(not torch.equal(own[name], donor[name]) for name in frozen)


def test_the_frozen_draw_leaves_the_runs_own_random_stream_where_its_seed_puts_it():
    """What is drawn after the model (batches drawn from the global generator, dropout) goes
    on from the run's seed, not from the frozen one."""
    _model("mixit", 0)
    after_own = torch.rand(4)
    _model("mixit", 0, **{"model.frozen_seed": 7})
    assert torch.equal(torch.rand(4), after_own)


def test_an_unset_frozen_seed_keeps_the_runs_name_and_a_set_one_makes_its_own():
    plain = resolve_config("retrieval", "mixit", "tiny", 0, {})
    unset = resolve_config("retrieval", "mixit", "tiny", 0, {"model.frozen_seed": None})
    drawn = resolve_config("retrieval", "mixit", "tiny", 0, {"model.frozen_seed": 3})
    assert "frozen_seed" not in plain.result_dict()["model"]
    assert run_dir_name(unset) == run_dir_name(plain) != run_dir_name(drawn)


def test_a_frozen_seed_out_of_range_is_one_clear_line():
    with pytest.raises(UsageError, match=r"model.frozen_seed must be in \[0, 2\^62\), got -1"):
        resolve_config("retrieval", "mixit", "tiny", 0, {"model.frozen_seed": -1})


@pytest.mark.parametrize("variant", ["standard", "uniform", "no-mixing", "mixit-learned"])
def test_a_variant_that_keeps_no_draw_ignores_the_frozen_seed(variant):
    """Nothing of it is drawn and kept: the key would rename a run that trains the same model."""
    drawn = resolve_config("retrieval", variant, "tiny", 0, {"model.frozen_seed": 3})
    assert drawn.model.frozen_seed is None
    assert run_dir_name(drawn) == run_dir_name(resolve_config("retrieval", variant, "tiny", 0))


def test_a_hybrid_with_a_mixit_layer_takes_the_frozen_seed():
    drawn = resolve_config("retrieval", "standard+mixit@0", "tiny", 0, {"model.frozen_seed": 3})
    assert drawn.model.frozen_seed == 3
