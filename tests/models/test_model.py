"""The model spectrum: freezing by group, parameter counts, causality, MixiT's matrices."""

import dataclasses

import pytest
import torch

from mixit.config.schema import ModelConfig
from mixit.models.attention import mixing_matrices
from mixit.models.decoder import PARAM_GROUPS, Decoder
from mixit.models.variants import VARIANTS
from mixit.training.resolve import resolve_config
from mixit.training.scoring import sequence_loss
from mixit.training.step import make_optimizer

ALL = list(VARIANTS)


def build(config: ModelConfig, name: str, seed: int = 0) -> Decoder:
    torch.manual_seed(seed)
    return Decoder(config, VARIANTS[name])


def expected_trainable(c: ModelConfig, name: str) -> int:
    n, V, T, L = c.n_embd, c.vocab_size, c.block_size, c.n_layer
    qk, vo, mlp, norms = 2 * n * n, 2 * n * n, 3 * n * c.mlp_ratio * n, 2 * n * L + n
    counts = {
        "standard": L * (qk + vo + mlp) + norms + 2 * V * n,
        "frozen-qk": L * (vo + mlp) + norms + 2 * V * n,
        "frozen-mlp": L * (qk + vo) + norms + 2 * V * n,
        "mixit": L * (vo + mlp) + norms + 2 * V * n + T * n,
        "random": 2 * V * n,
        "mixit-learned": L * (vo + mlp + c.n_head * T * T) + norms + 2 * V * n + T * n,
        "uniform": L * (vo + mlp) + norms + 2 * V * n + T * n,
        "no-mixing": L * (vo + mlp) + norms + 2 * V * n + T * n,
    }
    return counts[name]


@pytest.mark.parametrize("name", ALL)
def test_trainable_parameter_count(small_config, name):
    model = build(small_config, name)
    assert sum(p.numel() for p in model.trainable_parameters()) == expected_trainable(
        small_config, name
    )


@pytest.mark.parametrize("name", ALL)
def test_every_parameter_is_in_exactly_one_group(small_config, name):
    model = build(small_config, name)
    grouped = [id(p) for params in model.param_groups().values() for p in params]
    assert sorted(grouped) == sorted(id(p) for p in model.parameters())
    assert set(model.param_groups()) == set(PARAM_GROUPS)


@pytest.mark.parametrize("name", ALL)
def test_optimizer_holds_only_trainable_parameters(small_config, name):
    model = build(small_config, name)
    run_config = dataclasses.replace(resolve_config("retrieval", name), model=small_config)
    optimizer = make_optimizer(model, run_config)
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    assert held == {id(p) for p in model.trainable_parameters()}


@pytest.mark.parametrize("name", ALL)
def test_frozen_groups_stay_bit_identical_and_trainable_ones_move(small_config, name):
    model = build(small_config, name)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    buffers = {n: b.clone() for n, b in model.named_buffers()}
    config = dataclasses.replace(resolve_config("retrieval", name), model=small_config)
    optimizer = make_optimizer(model, config)
    generator = torch.Generator().manual_seed(0)
    for _ in range(3):
        tokens = torch.randint(0, small_config.vocab_size, (8, 12), generator=generator)
        loss = sequence_loss(model, tokens[:, :-1], tokens[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    frozen = {id(p) for g in VARIANTS[name].frozen for p in model.param_groups()[g]}
    for n, p in model.named_parameters():
        if id(p) in frozen:
            assert torch.equal(p, before[n]), f"{name}: frozen {n} changed"
            assert not p.requires_grad
        else:
            assert not torch.equal(p, before[n]), f"{name}: trainable {n} did not change"
    for n, b in model.named_buffers():
        assert torch.equal(b, buffers[n]), f"{name}: buffer {n} changed"


@pytest.mark.parametrize("name", ALL)
def test_changing_token_t_never_changes_earlier_logits(small_config, name):
    model = build(small_config, name).eval()
    tokens = torch.randint(0, small_config.vocab_size, (2, 16))
    changed = tokens.clone()
    t = 9
    changed[:, t] = (changed[:, t] + 1) % small_config.vocab_size
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    torch.testing.assert_close(a[:, :t], b[:, :t], rtol=0, atol=0)
    assert not torch.allclose(a[:, t:], b[:, t:])


def test_mixit_rows_sum_to_one_and_are_causal(small_config):
    model = build(small_config, "mixit")
    for block in model.blocks:
        mixing = block.attn.mixing  # (H, T, T)
        torch.testing.assert_close(mixing.sum(-1), torch.ones(mixing.shape[:2]))
        upper = torch.ones_like(mixing[0], dtype=torch.bool).triu(1)
        assert (mixing[:, upper] == 0).all()
        assert not (mixing[:, ~upper] == 0).all()


def test_mixit_shorter_sequences_use_the_top_left_block():
    weights = torch.randn(3, 10, 10)
    torch.testing.assert_close(
        mixing_matrices(weights)[:, :6, :6], mixing_matrices(weights[:, :6, :6])
    )


def test_mixit_entries_have_the_paper_scale():
    config = ModelConfig(vocab_size=8, block_size=64, n_embd=64, n_head=4)
    mixing = build(config, "mixit").blocks[0].attn.mixing  # (H, T, T)
    off_diagonal = mixing[:, 40:, :20]  # rows with many visible entries, far from the diagonal
    expected = 1.0 / (config.n_embd * config.block_size) ** 0.5
    assert abs(off_diagonal.std().item() / expected - 1) < 0.1


def test_mixit_heads_differ_and_layers_differ(small_config):
    model = build(small_config, "mixit")
    first, second = model.blocks[0].attn.mixing, model.blocks[1].attn.mixing
    assert not torch.equal(first[0], first[1])
    assert not torch.equal(first, second)


def test_attention_sink_option_sets_head_zero(small_config):
    small_config = dataclasses.replace(small_config, attention_sink=True)
    mixing = build(small_config, "mixit").blocks[0].attn.mixing
    assert mixing[0, 5, 5] == 0.5 and mixing[0, 5, 0] == 0.5
    torch.testing.assert_close(mixing.sum(-1), torch.ones(mixing.shape[:2]))


def test_shaped_residual_is_the_mixit_default(small_config):
    lam = resolve_config("addition", "mixit", "tiny").model.residual_lambda
    assert lam == pytest.approx(0.5**0.5)
    small_config = dataclasses.replace(small_config, residual_lambda=lam)
    block = build(small_config, "mixit").blocks[0]
    h, update = torch.randn(2, 3, small_config.n_embd), torch.randn(2, 3, small_config.n_embd)
    # Section 2's shaped residual: lam h + sqrt(1 - lam^2) f(h).
    torch.testing.assert_close(block.residual(h, update), lam * h + (1 - lam**2) ** 0.5 * update)


def test_plain_residual_is_the_sum(small_config):
    small_config = dataclasses.replace(small_config, residual_lambda=None)
    block = build(small_config, "standard").blocks[0]
    h, update = torch.randn(2, 3, small_config.n_embd), torch.randn(2, 3, small_config.n_embd)
    assert block.shaped is None
    assert torch.equal(block.residual(h, update), h + update)


def test_same_seed_same_model_and_other_seed_differs(small_config):
    tokens = torch.randint(0, small_config.vocab_size, (2, 16))
    with torch.no_grad():
        a = build(small_config, "mixit", seed=1)(tokens)
        b = build(small_config, "mixit", seed=1)(tokens)
        c = build(small_config, "mixit", seed=2)(tokens)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_attention_pattern_tap_reads_causal_rows_that_sum_to_one(small_config):
    model = build(small_config, "frozen-qk").eval()
    seen = []
    model.blocks[0].attn.hook_pattern.register_forward_hook(lambda m, i, out: seen.append(out))
    tokens = torch.randint(0, small_config.vocab_size, (2, 16))
    with torch.no_grad():
        tapped = model(tokens)
    (pattern,) = seen
    assert pattern.shape == (2, small_config.n_head, 16, 16)
    torch.testing.assert_close(pattern.sum(-1), torch.ones(2, small_config.n_head, 16))
    assert (pattern.triu(1) == 0).all()
    plain = build(small_config, "frozen-qk").eval()
    with torch.no_grad():
        torch.testing.assert_close(plain(tokens), tapped, rtol=1e-5, atol=1e-5)
