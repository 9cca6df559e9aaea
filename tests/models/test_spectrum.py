"""``mixit.spectrum`` on Hugging Face models built from config: what each variant freezes, and
MixiT's fixed mixing."""

import pytest
import torch

pytest.importorskip("transformers")
from transformers import GPT2Config, LlamaConfig

from mixit.common.errors import UsageError
from mixit.config.schema import ModelConfig
from mixit.models.adapters import MODELS, FixedMixingAttention, spectrum
from mixit.models.decoder import Decoder
from mixit.models.variants import VARIANTS

GPT2 = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=50, n_positions=16)
LLAMA = LlamaConfig(
    num_hidden_layers=2,
    hidden_size=32,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=64,
    vocab_size=50,
    max_position_embeddings=16,
)
EXPECTED_FROZEN = {
    "gpt2": {
        "standard": set(),
        "frozen-qk": {
            f"transformer.h.{i}.attn.c_attn.{m}.{p}"
            for i in range(2)
            for m in ("query", "key")
            for p in ("weight", "bias")
        },
        "frozen-mlp": {
            f"transformer.h.{i}.mlp.{m}.{p}"
            for i in range(2)
            for m in ("c_fc", "c_proj")
            for p in ("weight", "bias")
        },
        "mixit": set(),
    },
    "llama": {
        "standard": set(),
        "frozen-qk": {
            f"model.layers.{i}.self_attn.{m}_proj.weight" for i in range(2) for m in "qk"
        },
        "frozen-mlp": {
            f"model.layers.{i}.mlp.{m}_proj.weight"
            for i in range(2)
            for m in ("gate", "up", "down")
        },
        "mixit": set(),
    },
}


def frozen(model):
    return {name for name, p in model.named_parameters() if not p.requires_grad}


@pytest.mark.parametrize("name, config", [("gpt2", GPT2), ("llama", LLAMA)])
def test_each_variant_freezes_exactly_its_tensors(name, config):
    models = spectrum(config)
    assert list(models) == list(MODELS)
    for variant, expected in EXPECTED_FROZEN[name].items():
        assert frozen(models[variant]) == expected, variant
    blocks, final_norm = {
        "gpt2": ("transformer.h.", "transformer.ln_f."),
        "llama": ("model.layers.", "model.norm."),
    }[name]
    in_blocks = {n for n, _ in models["random"].named_parameters() if n.startswith(blocks)}
    final = {n for n, _ in models["random"].named_parameters() if n.startswith(final_norm)}
    assert frozen(models["random"]) == in_blocks | final and in_blocks and final
    mixit_names = {n for n, _ in models["mixit"].named_parameters()}
    assert not any("query" in n or "q_proj" in n or "k_proj" in n for n in mixit_names)


@pytest.mark.parametrize("config", [GPT2, LLAMA])
def test_every_variant_starts_from_the_same_weights(config):
    models = spectrum(config)
    reference = dict(models["standard"].named_parameters())
    for variant in ("frozen-qk", "frozen-mlp", "random"):
        for name, p in models[variant].named_parameters():
            assert torch.equal(p, reference[name]), (variant, name)


def test_gpt2s_split_projections_compute_what_the_fused_one_did():
    from transformers import GPT2LMHeadModel

    torch.manual_seed(0)
    fused = GPT2LMHeadModel(GPT2).eval()
    split = spectrum(GPT2, models=["standard"])["standard"].eval()
    ids = torch.randint(0, 50, (2, 10))
    assert torch.allclose(split(ids).logits, fused(ids).logits, atol=1e-5)


@pytest.mark.parametrize("config", [GPT2, LLAMA])
def test_mixit_mixes_values_with_its_fixed_matrices(config):
    model = spectrum(config, models=["mixit"])["mixit"].eval()
    attention = [m for m in model.modules() if isinstance(m, FixedMixingAttention)]
    assert len(attention) == 2
    first = attention[0]
    x = torch.randn(3, 7, 32)
    v = first.value(x).view(3, 7, first.kv_heads, -1)  # (B, T, H_kv, hs)
    v = v.repeat_interleave(first.heads // first.kv_heads, dim=2)  # (B, T, H, hs)
    by_hand = torch.stack(
        [first.mixing[h, :7, :7] @ v[:, :, h] for h in range(first.heads)], dim=2
    )  # (B, T, H, hs)
    expected = first.output(by_hand.reshape(3, 7, 32))
    assert torch.allclose(first(x)[0], expected, atol=1e-5)
    assert torch.equal(first.mixing.triu(1), torch.zeros_like(first.mixing))  # causal
    ids = torch.randint(0, 50, (2, 9))
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 50
    with torch.no_grad():
        assert torch.allclose(model(ids).logits[:, :-1], model(changed).logits[:, :-1])


def test_a_model_no_adapter_knows_needs_its_parts():
    with pytest.raises(UsageError, match="describe its parts"):
        spectrum(lambda: torch.nn.Linear(2, 2), models=["standard"])


@pytest.mark.parametrize("config", [GPT2, LLAMA])
def test_the_random_transformer_trains_what_the_decoders_does(config):
    """One definition of the spectrum: on a Hugging Face model as on mixit's decoder, the
    random transformer trains its token and position embeddings and its output head only."""
    small = ModelConfig(vocab_size=50, n_layer=2, n_embd=32, n_head=4)
    decoder = Decoder(small, VARIANTS["random"])
    groups = decoder.param_groups()
    trained = {g for g, params in groups.items() if params and params[0].requires_grad}
    assert trained == {"embed", "unembed"} | ({"pos"} if groups["pos"] else set())

    model = spectrum(config, models=["random"])["random"]
    tables = [model.get_input_embeddings(), model.get_output_embeddings()]
    tables += [model.transformer.wpe] if isinstance(config, GPT2Config) else []
    expected = {id(p) for table in tables for p in table.parameters()}
    assert {id(p) for p in model.parameters() if p.requires_grad} == expected


def test_a_model_without_a_hugging_face_form_is_refused_before_it_trains(monkeypatch):
    """Every variant of today's spectrum has an --arch form; a variant whose mixer has none
    (a mixer added to the decoder only) is refused when its config is validated, not built
    as if it were softmax attention."""
    from mixit.training import resolve

    assert {"standard", "frozen-qk", "frozen-mlp", "mixit", "random"} <= set(MODELS)
    monkeypatch.setattr(resolve, "SPECTRUM_MODELS", ("standard",))
    with pytest.raises(UsageError, match="exists on mixit's decoder only"):
        resolve.resolve_config("addition", "mixit", "tiny", 0, {"model.arch": "hf:llama"})
