"""``mixit.convert`` and ``mixit.freeze``: the spectrum on a model the user already has."""

import pytest
import torch

pytest.importorskip("transformers")

import transformers

import mixit
from mixit.cli import main
from mixit.common.errors import UsageError
from mixit.models.adapters import FixedMixingAttention
from mixit.models.build import hf_settings
from mixit.training.resolve import resolve_config
from mixit.training.rundir import new_model

SIZES = {"model.n_layer": "2", "model.n_embd": "16", "model.n_head": "2"}
SIZES |= {"model.vocab_size": "20", "model.block_size": "16"}


def trainable(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def fresh(name, config):
    """A fresh Hugging Face model of ``name`` at the run config's sizes."""
    settings = hf_settings(name, config.model)
    hf_config = transformers.AutoConfig.for_model(name, **settings)
    return transformers.AutoModelForCausalLM.from_config(hf_config)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize("variant", ["standard", "frozen-qk", "frozen-mlp", "random", "mixit"])
def test_a_converted_model_trains_what_the_arch_build_trains(name, variant):
    config = resolve_config("retrieval", variant, "tiny", 0, {**SIZES, "model.arch": f"hf:{name}"})
    built = new_model(config)
    converted = mixit.convert(fresh(name, config), variant)
    assert trainable(converted) == trainable(built) > 0
    total = sum(p.numel() for p in converted.parameters())
    assert total == sum(p.numel() for p in built.parameters())


def test_a_converted_llama_fed_past_its_positions_says_so():
    """A Llama (rotary positions) reads any length; converted to MixiT, its mixing matrices
    hold block_size positions: more tokens is one clear error, not a torch shape mismatch
    (#103). A GPT-2 refuses them in its own position table, converted or not."""
    config = resolve_config("retrieval", "mixit", "tiny", 0, {**SIZES, "model.arch": "hf:llama"})
    converted = mixit.convert(fresh("llama", config), "mixit")
    assert converted(torch.zeros(1, 16, dtype=torch.long)).logits.shape == (1, 16, 20)
    with pytest.raises(ValueError, match="17 tokens, and this model's fixed mixing matrices"):
        converted(torch.zeros(1, 17, dtype=torch.long))


def test_convert_changes_the_model_in_place_unless_asked_for_a_copy():
    config = resolve_config("retrieval", "mixit", "tiny", 0, {**SIZES, "model.arch": "hf:llama"})
    original = fresh("llama", config)
    copied = mixit.convert(original, "mixit", copy=True)
    assert not any(isinstance(m, FixedMixingAttention) for m in original.modules())
    assert sum(isinstance(m, FixedMixingAttention) for m in copied.modules()) == 2
    ids = torch.randint(0, 20, (2, 16))
    assert copied(ids).logits.shape == (2, 16, 20)
    assert mixit.convert(original, "frozen-qk") is original
    frozen = {n for n, p in original.named_parameters() if not p.requires_grad}
    assert frozen and all(n.endswith(("q_proj.weight", "k_proj.weight")) for n in frozen)


def test_converting_twice_splits_gpt2_once():
    config = resolve_config("retrieval", "frozen-qk", "tiny", 0, {**SIZES, "model.arch": "hf:gpt2"})
    model = mixit.convert(mixit.convert(fresh("gpt2", config), "frozen-qk"), "frozen-qk")
    assert trainable(model) == trainable(new_model(config))


def test_bad_conversions_are_one_line_errors():
    config = resolve_config("retrieval", "standard", "tiny", 0, {**SIZES, "model.arch": "hf:llama"})
    with pytest.raises(
        UsageError,
        match=r"unknown model 'frozen-q' \(did you mean frozen-qk\?\) for a model of any",
    ):
        mixit.convert(fresh("llama", config), "frozen-q")
    with pytest.raises(UsageError, match=r"has no Hugging Face config\.model_type"):
        mixit.convert(torch.nn.Linear(2, 2), "frozen-qk")
    with pytest.raises(UsageError, match=r"convert takes a torch nn\.Module"):
        mixit.convert("gpt2", "frozen-qk")
    with pytest.raises(UsageError, match="unknown mixing_scale 'bogus'; choose one of: paper"):
        mixit.convert(fresh("llama", config), "mixit", mixing_scale="bogus")
    odd = fresh("llama", config)
    del odd.model.layers[0].self_attn.q_proj
    with pytest.raises(UsageError, match="no attention blocks where its parts say"):
        mixit.convert(odd, "frozen-qk")
    with pytest.raises(UsageError, match="records no frozen groups"):
        mixit.freeze(fresh("llama", config))
    with pytest.raises(UsageError, match="unknown group 'q'"):
        mixit.freeze(fresh("llama", config), groups=["q"])
    with pytest.raises(UsageError, match="groups is a list of group names"):
        mixit.freeze(fresh("llama", config), "qk")  # once read letter by letter: group 'k'
    with pytest.raises(UsageError, match=r"freeze takes a torch nn\.Module"):
        mixit.freeze(None, ["qk"])


def test_an_exported_llama_is_frozen_again_by_freeze(tmp_path):
    overrides = {"train.steps": 2, "train.eval_every": 2, "model.n_embd": 16, "task.n_test": 50}
    mixit.train("addition", "frozen-qk", out=tmp_path / "run", overrides=overrides, progress=False)
    assert main(["export-hf", str(tmp_path / "run"), str(tmp_path / "hf"), "--as", "llama"]) == 0
    loaded = transformers.LlamaForCausalLM.from_pretrained(tmp_path / "hf")
    assert loaded.config.mixit_frozen == ["qk"] and trainable(loaded) == sum(
        p.numel() for p in loaded.parameters()
    )
    mixit.freeze(loaded)
    frozen = {n for n, p in loaded.named_parameters() if not p.requires_grad}
    assert frozen == {f"model.layers.{i}.self_attn.{w}_proj.weight" for i in (0, 1) for w in "qk"}
    # A hand-edited config is one line that names the key it read (#103).
    for edited, said in [("qk", "is a list of group names"), (["nope"], "unknown group 'nope'")]:
        loaded.config.mixit_frozen = edited
        with pytest.raises(UsageError) as raised:
            mixit.freeze(loaded)
        assert "its config's mixit_frozen" in str(raised.value) and said in str(raised.value)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize("variant", ["standard", "frozen-qk", "frozen-mlp", "random"])
def test_a_converted_model_survives_save_pretrained_and_freeze(tmp_path, name, variant):
    """GPT-2's split queries, keys and values are saved as its fused c_attn, so a plain
    from_pretrained loads them; the config records the frozen groups for freeze."""
    config = resolve_config("retrieval", variant, "tiny", 0, {**SIZES, "model.arch": f"hf:{name}"})
    torch.manual_seed(0)
    converted = mixit.convert(fresh(name, config), variant).eval()
    tokens = torch.randint(0, 20, (2, 8))
    with torch.no_grad():
        before = converted(tokens).logits
    converted.save_pretrained(tmp_path)
    loaded = mixit.freeze(transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval())
    with torch.no_grad():
        assert torch.allclose(loaded(tokens).logits, before, atol=1e-5)

    def frozen(model):
        return sorted(n for n, p in model.named_parameters() if not p.requires_grad)

    assert frozen(loaded) == frozen(converted)


@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize("variant", ["mixit", "mixit+standard@1", "frozen-qk+mixit@0"])
def test_every_converted_model_survives_save_pretrained_and_load_converted(tmp_path, name, variant):
    """MixiT's fixed mixing replaces the architecture's attention, which its own
    from_pretrained cannot build (it builds attention and leaves it untrained: logits off by
    0.4 on a tiny Llama, #103); load_converted rebuilds the variant the config records and
    loads every saved tensor, mixing matrices included, with the frozen groups frozen again.
    (The variants without fixed mixing survive the architecture's own from_pretrained: above.)"""
    config = resolve_config("retrieval", "mixit", "tiny", 0, {**SIZES, "model.arch": f"hf:{name}"})
    torch.manual_seed(0)
    converted = mixit.convert(fresh(name, config), variant, seed=7).eval()
    tokens = torch.randint(0, 20, (2, 8))
    with torch.no_grad():
        before = converted(tokens).logits
    converted.save_pretrained(tmp_path)
    loaded = mixit.load_converted(tmp_path)
    with torch.no_grad():
        assert torch.allclose(loaded(tokens).logits, before, atol=1e-5)

    def frozen(model):
        return sorted(n for n, p in model.named_parameters() if not p.requires_grad)

    assert frozen(loaded) == frozen(converted) and not loaded.training
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(UsageError, match="holds no model"):
        mixit.load_converted(tmp_path)
