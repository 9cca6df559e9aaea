"""Decoding with caches: the same tokens as recomputing everything, and MixiT's cache holds
values only (half a softmax layer's)."""

import pytest
import torch

from mixit.config.schema import ModelConfig
from mixit.inference.generate import cache_bytes_per_token, generate
from mixit.models.adapters import get_variant
from mixit.models.decoder import Decoder


def model_of(variant: str) -> Decoder:
    torch.manual_seed(0)
    config = ModelConfig(
        **{
            **get_variant(variant).model_defaults,
            "vocab_size": 50,
            "block_size": 24,
            "n_embd": 32,
            "n_head": 4,
            "n_layer": 2,
            "init": "fan-in",  # a random model whose argmax varies from token to token
        }
    )
    return Decoder(config, get_variant(variant)).eval()


@pytest.mark.parametrize("variant", ["standard", "mixit"])
def test_cached_decoding_equals_recomputation(variant):
    model = model_of(variant)
    prompt = torch.randint(0, 50, (3, 5), generator=torch.Generator().manual_seed(1))
    cached = generate(model, prompt, 15, use_cache=True)
    assert torch.equal(cached, generate(model, prompt, 15, use_cache=False))
    assert cached.shape == (3, 20) and torch.equal(cached[:, :5], prompt)
    assert len(set(cached[0, 5:].tolist())) > 1  # not a constant stream


@pytest.mark.parametrize("variant", ["standard", "mixit"])
def test_cached_logits_match_the_full_forward(variant):
    model = model_of(variant)
    ids = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(2))
    caches = model.new_caches()
    with torch.no_grad():
        pieces = [model(ids[:, :7], caches=caches), model(ids[:, 7:], caches=caches)]
        torch.testing.assert_close(torch.cat(pieces, 1), model(ids), atol=1e-5, rtol=1e-5)
    assert caches[0].length == 12 and (caches[0].k is None) == (variant == "mixit")


def test_mixit_cache_is_half_of_a_softmax_cache():
    assert 2 * cache_bytes_per_token(model_of("mixit")) == cache_bytes_per_token(
        model_of("standard")
    )
    assert cache_bytes_per_token(model_of("standard")) == 2 * 2 * 32 * 4


def test_generate_command_continues_token_ids(tmp_path, capsys):
    from mixit.cli import main
    from mixit.training.train import train

    run_dir = tmp_path / "run"
    overrides = {"train.steps": 3, "model.n_embd": 32, "task.n_test": 100}
    train("addition", "mixit", out=run_dir, overrides=overrides, progress=False)
    assert main(["generate", str(run_dir), "--prompt-ids", "3,4,5", "--max-new-tokens", "4"]) == 0
    prompt, added = capsys.readouterr().out.strip().split(" ‖ ")  # where the prompt ends
    assert prompt.split() == ["3", "4", "5"] and len(added.split()) == 4
    assert main(["generate", str(run_dir), "--prompt", "hello"]) == 2  # not an lm run
    assert main(["generate", str(run_dir), "--prompt-ids", "3,x"]) == 2
    assert main(["generate", str(run_dir), "--prompt-ids", "3,,4"]) == 2  # not 3,4
