"""Hybrids, layer by layer (docs/rows.md): ``BASE+OTHER@LAYERS`` builds BASE's model with
OTHER's mixer and frozen groups in the layers named, on mixit's decoder, through ``--arch
hf:*`` and through ``mixit.convert``."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mixit
from mixit.cli import main
from mixit.common.errors import UsageError
from mixit.config.schema import ModelConfig
from mixit.cost.predict import flops_per_token
from mixit.inference.generate import cache_bytes_per_token
from mixit.models.adapters import get_variant, parameter_groups, parts_of
from mixit.models.attention import FixedMixing, SoftmaxAttention
from mixit.models.decoder import Decoder
from mixit.models.mixers import LearnedMixing
from mixit.models.variants import VARIANTS, variant_named
from mixit.training.resolve import resolve_config

SHAPE = ModelConfig(vocab_size=20, block_size=10, n_embd=16, n_head=2, n_layer=4)


def built(name: str) -> Decoder:
    torch.manual_seed(0)
    return Decoder(SHAPE, get_variant(name))


def trainable(params) -> bool:
    return all(p.requires_grad for p in params)


@pytest.mark.parametrize(
    ("name", "mixers"),
    [
        ("mixit+standard@3", [FixedMixing, FixedMixing, FixedMixing, SoftmaxAttention]),
        ("standard+mixit@0-1.3", [FixedMixing, FixedMixing, SoftmaxAttention, FixedMixing]),
        ("frozen-qk+mixit-learned@2", [SoftmaxAttention] * 2 + [LearnedMixing, SoftmaxAttention]),
    ],
)
def test_a_hybrids_layers_are_the_variants_asked_for(name, mixers):
    model = built(name)
    assert [type(block.attn) for block in model.blocks] == mixers
    # Learned positions wherever a layer of MixiT's family needs them.
    assert (model.pos_emb is not None) == any(m is not SoftmaxAttention for m in mixers)


def test_each_layer_freezes_what_its_own_variant_freezes():
    model = built("random+standard@1")
    for layer, block in enumerate(model.blocks):
        held = [p for params in block.param_groups().values() for p in params]
        assert trainable(held) == (layer == 1)
    assert not model.norm_final.weight.requires_grad  # the base's (random's) final norm
    assert model.tok_emb.weight.requires_grad and model.head.weight.requires_grad
    qk = built("frozen-qk+standard@0")
    assert [trainable(b.attn.param_groups()["qk"]) for b in qk.blocks] == [True] + [False] * 3


def test_the_costs_count_each_layers_mixer():
    def flops(name: str) -> float:
        config = resolve_config("retrieval", name, "tiny", 0, {"model.n_layer": 4})
        return flops_per_token(config, 64)

    assert flops("mixit") < flops("mixit+standard@3") < flops("standard")
    assert flops("mixit") < flops("mixit-learned")
    # Decoding keeps keys and values in the two softmax layers, values alone in the others.
    assert cache_bytes_per_token(built("mixit+standard@1.3")) == (2 + 2 + 1 + 1) * 16 * 4


def test_a_hybrid_decodes_one_token_at_a_time_as_in_one_pass():
    model = built("mixit+standard@1.3")
    x = torch.randint(1, 20, (2, 10), generator=torch.Generator().manual_seed(1))
    caches = model.new_caches()
    stepped = torch.cat([model(x[:, t : t + 1], caches=caches) for t in range(10)], dim=1)
    assert torch.allclose(stepped, model(x), atol=1e-5)
    assert [c.k is not None for c in caches] == [False, True, False, True]


@given(
    base=st.sampled_from(sorted(VARIANTS)),
    layers=st.dictionaries(st.integers(0, 11), st.sampled_from(sorted(VARIANTS)), max_size=6),
)
@settings(max_examples=15, deadline=None)
def test_a_hybrid_name_builds_each_layer_it_names(base, layers):
    """Any BASE+OTHER@LAYERS name, each layer written alone, parses to those layers."""
    name = base + "".join(f"+{other}@{layer}" for layer, other in layers.items())
    variant = variant_named(name)
    for layer in range(12):
        expected = VARIANTS[layers[layer]] if layer in layers else VARIANTS[base]
        assert variant.at(layer).attention == expected.attention
        assert variant.at(layer).frozen == expected.frozen
    assert variant.rows == (base, *(layers[layer] for layer in sorted(layers)))


@pytest.mark.parametrize(
    "name",
    [
        "mixit+",
        "mixit+standard",
        "mixit+standard@x",
        "mixit+standard@3-1",
        "foo+standard@1",
        "mixit+standard@1+random@1",
    ],
)
def test_a_malformed_hybrid_is_refused_with_the_syntax(name):
    with pytest.raises(ValueError, match=r"or a hybrid BASE\+OTHER@LAYERS"):
        variant_named(name)


@pytest.mark.parametrize(
    ("model", "says"),
    [("mixit+standard@9", "names layer 9"), ("mixit+standrd@1", "'standrd' is not a model")],
)
def test_a_bad_hybrid_on_the_command_line_is_one_line_and_exit_2(model, says, tmp_path, capsys):
    code = main(["train", "--task", "retrieval", "--model", model, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and says in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


transformers = pytest.importorskip("transformers")
from test_spectrum import GPT2, LLAMA  # noqa: E402  (two layers each)

HF = {"gpt2": GPT2, "llama": LLAMA}


def fresh(kind: str):
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(HF[kind])


def count(params) -> int:
    return sum(p.numel() for p in params)


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_convert_applies_a_hybrid_with_the_expected_parameter_counts(kind):
    reference = fresh(kind)
    parts = parts_of(reference, None)
    if parts.split is not None:
        parts.split(reference)
    qk = count(parameter_groups(reference, parts)["qk"]) // 2  # one layer's W_Q and W_K
    total = count(reference.parameters())
    # Layer 0 loses its queries and keys to fixed mixing; a Llama gains a position table (16
    # positions x 32), which a GPT-2 has already.
    positions = 16 * 32 if kind == "llama" else 0
    hybrid = mixit.convert(fresh(kind), "mixit+standard@1")
    assert count(hybrid.parameters()) == total - qk + positions
    frozen_qk = mixit.convert(fresh(kind), "frozen-qk+standard@1")
    assert count(p for p in frozen_qk.parameters() if p.requires_grad) == total - qk
    # The layer-by-layer freezing is recorded, so mixit.freeze applies it again after loading.
    for p in frozen_qk.parameters():
        p.requires_grad_(True)
    mixit.freeze(frozen_qk)
    assert count(p for p in frozen_qk.parameters() if p.requires_grad) == total - qk


def test_convert_refuses_a_hybrid_with_a_decoder_only_row():
    with pytest.raises(UsageError, match="for a model of any architecture"):
        mixit.convert(fresh("gpt2"), "mixit+uniform@1")


def test_an_arch_run_trains_a_hybrid(tmp_path):
    sizes = ["model.n_layer=2", "model.n_embd=16", "model.n_head=2", "train.steps=2"]
    sizes += ["train.eval_every=2", "task.n_test=50"]
    out = tmp_path / "run"
    args = ["train", "--task", "retrieval", "--model", "mixit+standard@1", "--arch", "hf:llama"]
    assert main([*args, "--out", str(out), "--no-progress", *sizes]) == 0
    assert (out / "summary.json").exists()
