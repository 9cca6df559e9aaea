"""The rows past the paper's five (docs/rows.md): MixiT with its matrix trained, the causal
mean, and no mixing. Each is causal, trains the groups it is defined by, and decodes
incrementally as it computes in one pass."""

import pytest
import torch

from mixit.config.schema import ModelConfig
from mixit.models.decoder import Decoder
from mixit.models.variants import SPECTRUM, VARIANTS
from mixit.study.litmus import MECHANISM_SEEDS, _reading
from mixit.tuning.sweep import _split_name

NEW = ("mixit-learned", "uniform", "no-mixing")
SHAPE = ModelConfig(vocab_size=20, block_size=10, n_embd=16, n_head=2, n_layer=2)


def built(name: str, seed: int = 0, **fields) -> Decoder:
    torch.manual_seed(seed)
    shape = ModelConfig(**{**SHAPE.__dict__, **fields}) if fields else SHAPE
    return Decoder(shape, VARIANTS[name])


def tokens(seed: int = 1) -> torch.Tensor:
    return torch.randint(1, 20, (3, 10), generator=torch.Generator().manual_seed(seed))


def patterns(model: Decoder, x: torch.Tensor) -> list[torch.Tensor]:
    """Each layer's (B, H, T, T) mixing pattern, read through its tap."""
    seen: list[torch.Tensor] = []
    hooks = [
        block.attn.hook_pattern.register_forward_hook(lambda m, i, out: seen.append(out))
        for block in model.blocks
    ]
    model(x)
    for hook in hooks:
        hook.remove()
    return seen


def test_the_default_spectrum_is_the_papers_five():
    assert SPECTRUM == ("standard", "frozen-qk", "frozen-mlp", "mixit", "random")
    assert all(VARIANTS[name].beyond_paper for name in NEW)


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("j", [0, 4, 9])
def test_a_change_at_position_j_changes_nothing_before_it(name, j):
    model = built(name)
    x = tokens()
    changed = x.clone()
    changed[:, j] = x[:, j] % 19 + 1
    before, after = model(x), model(changed)
    assert torch.equal(before[:, :j], after[:, :j])
    assert not torch.allclose(before[:, j], after[:, j])


def test_no_mixing_reads_each_position_alone():
    """A change at j changes position j's output and no other, before or after it."""
    model = built("no-mixing")
    x = tokens()
    changed = x.clone()
    changed[:, 4] = x[:, 4] % 19 + 1
    moved = (model(x) - model(changed)).abs().amax(dim=(0, 2))  # (T,)
    assert moved[4] > 0 and torch.count_nonzero(moved) == 1


def test_uniform_averages_the_positions_up_to_each():
    (pattern, _) = patterns(built("uniform"), tokens())
    T = pattern.shape[-1]
    expected = torch.ones(T, T).tril() / torch.arange(1, T + 1)[:, None]  # (T, T)
    assert torch.allclose(pattern, expected.expand_as(pattern))


def test_uniform_with_pads_averages_the_real_positions_only():
    model = built("uniform", pad_masking=True)
    x = tokens()
    x[0, 2] = 0  # a pad
    (pattern, _) = patterns(model, x)
    row = pattern[0, 0, 5]  # position 5 of the first example sees 0, 1, 3, 4, 5
    assert row[2] == 0 and torch.allclose(row[[0, 1, 3, 4, 5]], torch.full((5,), 0.2))


def test_mixit_learned_starts_as_mixit_on_the_same_seed():
    x = tokens()
    assert torch.allclose(built("mixit")(x), built("mixit-learned")(x), atol=1e-6)


@pytest.mark.parametrize(
    ("name", "trained"),
    [("mixit-learned", {"vo", "mix"}), ("uniform", {"vo"}), ("no-mixing", {"vo"})],
)
def test_each_row_trains_the_groups_it_is_defined_by(name, trained):
    model = built(name)
    groups = model.param_groups()
    mixing = {g for g in ("qk", "vo", "mix") if groups[g]}
    assert mixing == trained
    assert all(p.requires_grad for params in groups.values() for p in params)
    assert model.traits.matrices == ("trained" if "mix" in trained else "fixed")


def test_a_trained_mixing_matrix_moves_and_stays_causal():
    model = built("mixit-learned")
    weights = model.blocks[0].attn.weights
    start = weights.detach().clone()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        model(tokens()).logsumexp(-1).mean().backward()
        optimizer.step()
    assert not torch.allclose(weights.tril(), start.tril())
    assert torch.count_nonzero(weights.detach().triu(1)) == 0


@pytest.mark.parametrize("name", ("uniform", "no-mixing"))
def test_a_parameter_free_matrix_stays_put_in_training(name):
    model = built(name)
    matrix = model.blocks[0].attn.mixing.clone()
    assert not model.blocks[0].attn.mixing.requires_grad
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    optimizer.zero_grad()
    model(tokens()).logsumexp(-1).mean().backward()
    optimizer.step()
    assert torch.equal(model.blocks[0].attn.mixing, matrix)


@pytest.mark.parametrize("name", NEW)
def test_decoding_one_token_at_a_time_matches_one_pass(name):
    model = built(name)
    x = tokens()
    caches = model.new_caches()
    stepped = torch.cat([model(x[:, t : t + 1], caches=caches) for t in range(10)], dim=1)
    assert torch.allclose(stepped, model(x), atol=1e-5)


@pytest.mark.parametrize("name", NEW)
def test_each_row_has_its_own_litmus_sentences(name):
    variant = VARIANTS[name]
    assert _reading(name, True, MECHANISM_SEEDS, tuned=True) == variant.if_matches
    assert _reading(name, False, MECHANISM_SEEDS, tuned=True) == variant.if_short
    assert variant.if_matches != VARIANTS["mixit"].if_matches


def test_a_study_name_finds_the_longest_model_it_begins_with():
    assert _split_name("retrieval-mixit-learned-tiny") == ("retrieval", "mixit-learned", "tiny")
    assert _split_name("retrieval-mixit-tiny") == ("retrieval", "mixit", "tiny")
