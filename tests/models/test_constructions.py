"""The authors' construction: each option does what its docs say, and the bundle sets them."""

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from mixit.common.errors import UsageError
from mixit.config.schema import ModelConfig
from mixit.models.attention import attention_sink_matrix, mixing_matrices
from mixit.models.decoder import Decoder
from mixit.models.variants import VARIANTS
from mixit.training.resolve import resolve_config
from mixit.training.step import lr_multiplier


def build(config: ModelConfig, name: str) -> Decoder:
    torch.manual_seed(0)
    return Decoder(config, VARIANTS[name])


def test_non_causal_row_sum_over_position_leaves_a_constant_offset_per_row():
    weights = torch.randn(2, 5, 5)
    mixing = mixing_matrices(weights, causal=False, centering="row-sum-over-position")
    offset = weights.sum(-1, keepdim=True) / torch.arange(1, 6)[:, None]  # (2, 5, 1)
    torch.testing.assert_close(mixing, torch.eye(5) + weights - offset)
    # Row i sums to 1 + rowsum * (1 - T / (i + 1)): only the last row sums to 1.
    sums = mixing.sum(-1)
    torch.testing.assert_close(sums[:, -1], torch.ones(2))
    assert not torch.allclose(sums[:, 0], torch.ones(2))


def test_non_causal_row_mean_rows_sum_to_one_and_are_full():
    mixing = mixing_matrices(torch.randn(2, 5, 5), causal=False)
    torch.testing.assert_close(mixing.sum(-1), torch.ones(2, 5))
    assert (mixing.triu(1) != 0).any()


def test_under_the_causal_mask_both_centerings_agree():
    weights = torch.randn(3, 6, 6)
    torch.testing.assert_close(
        mixing_matrices(weights), mixing_matrices(weights, centering="row-sum-over-position")
    )


def test_without_identity_the_mixing_is_the_centred_weights():
    weights = torch.randn(2, 4, 4)
    torch.testing.assert_close(
        mixing_matrices(weights, identity=False), mixing_matrices(weights) - torch.eye(4)
    )


def test_authors_sink_puts_half_on_token_zero_in_row_zero():
    sink = attention_sink_matrix(4, first_row_weight=0.5)
    assert sink[0].tolist() == [0.5, 0.0, 0.0, 0.0]
    assert sink[2].tolist() == [0.5, 0.0, 0.5, 0.0]


def test_bias_option_adds_biases_to_every_block_projection_and_groups_them(small_config):
    small_config = dataclasses.replace(small_config, bias=True)
    model = build(small_config, "standard")
    block = model.blocks[0]
    projections = [block.attn.w_q, block.attn.w_k, block.attn.w_v, block.attn.w_o]
    projections += [block.mlp.w_g, block.mlp.w_u, block.mlp.w_d]
    assert all(p.bias is not None and not p.bias.any() for p in projections)
    assert model.head.bias is None
    assert any(p is block.attn.w_q.bias for p in model.param_groups()["qk"])
    assert any(p is block.mlp.w_d.bias for p in model.param_groups()["mlp"])


def test_width_scaling_multiplies_each_projection_by_sqrt_base_over_fan_in(small_config):
    small_config = dataclasses.replace(small_config, width_scaling=True, width_base=512.0)
    mlp = build(small_config, "mixit").blocks[0].mlp
    n = small_config.n_embd
    assert mlp.w_g.multiplier == pytest.approx(math.sqrt(512 / n))
    assert mlp.w_d.multiplier == pytest.approx(math.sqrt(1 / (4 * n)))
    x = torch.randn(3, n)
    torch.testing.assert_close(mlp.w_g(x), math.sqrt(512 / n) * (x @ mlp.w_g.weight.T))


def test_activation_gain_multiplies_the_shaped_leaky_relu(small_config):
    shaped = {"mlp_activation": "shaped-leaky-relu", "leaky_relu_c": 1.0, "activation_gain": True}
    small_config = dataclasses.replace(small_config, **shaped)
    mlp = build(small_config, "mixit").blocks[0].mlp
    slope = 1 + 1 / math.sqrt(small_config.n_embd)
    x = torch.tensor([-2.0, 3.0])
    expected = math.sqrt(2 / (1 + slope**2)) * torch.tensor([-2.0 * slope, 3.0])
    torch.testing.assert_close(mlp.phi(x), expected)


def test_depth_scaled_residual_keeps_the_stream_and_scales_the_branch(small_config):
    small_config = dataclasses.replace(
        small_config, residual_depth_alpha=1.0, residual_depth_base=4.0
    )
    block = build(small_config, "standard").blocks[0]
    assert block.shaped == (1.0, 4.0 / small_config.n_layer)


def test_two_residual_rules_at_once_are_bad_input(small_config):
    small_config = dataclasses.replace(small_config, residual_lambda=0.5, residual_depth_alpha=1.0)
    with pytest.raises(UsageError, match="two residual rules"):
        small_config.validate()


def test_lr_scaling_is_base_depth_over_depth_times_base_width_over_width():
    config = resolve_config("retrieval", "mixit", overrides={"train.lr_scaling": "true"})
    m = config.model
    assert lr_multiplier(config) == pytest.approx((4.0 / m.n_layer) * (512.0 / m.n_embd))
    assert lr_multiplier(resolve_config("retrieval", "mixit")) == 1.0


def test_equations_construction_changes_nothing():
    plain = resolve_config("retrieval", "mixit")
    named = resolve_config("retrieval", "mixit", overrides={"model.construction": "equations"})
    assert plain.to_dict() == named.to_dict()


def test_authors_construction_sets_the_mixing_parametrisation_for_mixit_only():
    mixit = resolve_config("retrieval", "mixit", overrides={"model.construction": "authors"})
    m = mixit.model
    assert (m.mixing_scale, m.attention_sink, m.sink_first_row_weight) == (
        "per-head-spread",
        1,
        0.5,
    )
    assert m.width_scaling and m.bias and m.activation_gain and m.init == "gpt2"
    assert (m.mlp_activation, m.leaky_relu_c) == ("shaped-leaky-relu", 1.0)
    standard = resolve_config("retrieval", "standard", overrides={"model.construction": "authors"})
    s = standard.model
    assert s.bias and s.init == "gpt2"
    assert not s.width_scaling and s.mlp_activation == "silu" and s.residual_lambda is None


def test_an_option_the_user_sets_wins_over_the_construction():
    overrides = {"model.construction": "authors", "model.attention_sink": "false"}
    assert not resolve_config("retrieval", "mixit", overrides=overrides).model.attention_sink


def test_authors_sentiment_is_the_non_causal_right_padded_classifier():
    config = resolve_config("sentiment", "mixit", overrides={"model.construction": "authors"})
    assert not config.model.mixing_causal and config.task.padding == "right"
    assert config.task.bos_token and config.task.readout == "labels"


def test_the_label_readout_scores_among_the_two_labels_and_trains_the_decoders_weights():
    from mixit.models.readout import AnswerReadout
    from mixit.training.rundir import new_model
    from mixit.training.scoring import sequence_loss

    config = resolve_config("sentiment", "mixit", overrides={"task.readout": "labels"})
    config = config.with_model(vocab_size=40, block_size=12)  # 37 tokens, 2 labels, BOS none
    model = new_model(config)
    assert isinstance(model, AnswerReadout)
    ids = torch.randint(1, 37, (3, 12))
    logits = model(ids)  # (B, T, V)
    assert torch.isfinite(logits[..., 38:]).all() and torch.isinf(logits[..., :38]).all()
    targets = torch.full((3, 12), -100)
    targets[:, -1] = torch.tensor([38, 39, 38])
    loss = sequence_loss(model, ids, targets)
    loss.backward()
    two_class = F.cross_entropy(model.body(ids)[:, -1, 38:], targets[:, -1] - 38)
    assert loss.item() == pytest.approx(two_class.item(), rel=1e-6)
    head = model.body.head.weight.grad  # (V, n)
    assert torch.isfinite(head).all() and head[38:].abs().sum() > 0 and not head[:38].any()
    assert set(model.state_dict()) == {f"body.{k}" for k in model.body.state_dict()}


def test_bos_token_goes_right_before_the_review_with_either_padding():
    from mixit.tasks.sentiment import with_bos

    rows = np.array([[0, 0, 5, 6, 1, 9], [5, 6, 7, 1, 9, 0]])
    assert with_bos(rows, bos=11).tolist() == [[0, 0, 11, 5, 6, 1, 9], [11, 5, 6, 7, 1, 9, 0]]


def test_non_causal_mixing_reads_later_positions(small_config):
    small_config = dataclasses.replace(small_config, mixing_causal=False)
    model = build(small_config, "mixit").eval()
    ids = torch.randint(0, small_config.vocab_size, (1, small_config.block_size))
    changed = ids.clone()
    changed[0, -1] = (ids[0, -1] + 1) % small_config.vocab_size
    assert not torch.allclose(model(ids)[0, 0], model(changed)[0, 0])
    assert not model.traits.causal


def test_non_causal_mixing_is_refused_on_a_task_scored_at_many_positions():
    config = resolve_config(
        "addition", "mixit", overrides={"model.mixing_causal": "false", "train.steps": "1"}
    )
    from mixit.training.train import run

    with pytest.raises(UsageError, match="non-causal mixing"):
        run(config)


def test_unknown_construction_is_bad_input():
    with pytest.raises(UsageError, match="construction"):
        resolve_config("retrieval", "mixit", overrides={"model.construction": "mine"})


def test_authors_modular_addition_trains_on_95_percent_of_all_pairs():
    from mixit.tasks.modular_addition import ModularAdditionConfig, make_modular_addition_data

    data = make_modular_addition_data(ModularAdditionConfig(p=11, train_fraction=0.95), seed=0)
    assert (len(data.train), len(data.test)) == (int(121 * 0.95), 121 - int(121 * 0.95))
    config = resolve_config(
        "modular-addition", "standard", overrides={"model.construction": "authors"}
    )
    assert config.task.train_fraction == 0.95


def test_authors_construction_sets_each_tasks_layout_for_every_model():
    expected = {
        "retrieval": {"padding": "right", "key_pool": "max-pairs", "query_ids": "separate"},
        "memorization": {"layout": "positional"},
        "addition": {
            "reverse_operands": True,
            "answer_ids": "separate",
            "stop_token": True,
            "scored_tokens": "after-answer",
        },
    }
    for task, options in expected.items():
        for model in ("standard", "mixit"):
            config = resolve_config(task, model, overrides={"model.construction": "authors"})
            assert {k: getattr(config.task, k) for k in options} == options, (task, model)


def test_authors_retrieval_layout_asks_for_the_value_where_the_query_sits():
    from mixit.tasks.retrieval import RetrievalConfig, make_retrieval_data

    config = RetrievalConfig(64, 8, 500, 100, "right", "max-pairs", "separate")
    split = make_retrieval_data(config, seed=0).train
    rows, targets = split.inputs.numpy(), split.targets.numpy()
    at = (targets != -100).argmax(axis=1)  # (N,) the only scored position: the query
    assert ((targets != -100).sum(axis=1) == 1).all()
    query = rows[np.arange(len(rows)), at]
    assert ((query >= 32 + 8) & (query < 32 + 16)).all()  # queries: their own ids
    for row, q, t, a in zip(rows, query, targets, at, strict=True):
        keys, values = row[:a:2], row[1:a:2]
        assert ((keys >= 32) & (keys < 40)).all()  # keys from the first max_pairs ids
        assert values[list(keys).index(q - 8)] == t[a]
        assert (row[a + 1 :] == 0).all()  # padding after the query


def test_authors_memorization_layout_gives_x_and_y_their_own_ids():
    from mixit.tasks.memorization import MemorizationConfig, make_memorization_data

    data = make_memorization_data(MemorizationConfig(64, 8, "positional"), seed=0)
    inputs, targets = data.train.inputs, data.train.targets[:, -1]
    assert data.vocab_size == 16 and inputs.shape[1] == 2
    assert (inputs[:, 0] < 8).all() and (inputs[:, 1] >= 8).all() and (targets < 8).all()


def test_authors_addition_scores_the_token_after_each_token_of_the_sum():
    from mixit.tasks.addition import AdditionConfig, make_addition_data

    config = AdditionConfig(3, 500, 100, True, True, "separate", True, "after-answer")
    data = make_addition_data(config, seed=0)
    rows = torch.cat([data.train.inputs, data.train.targets[:, -1:]], dim=1).numpy()  # (N, 13)
    for row, target in zip(rows, data.train.targets.numpy(), strict=True):
        a = int("".join(str(t - 1) for t in row[0:3][::-1]))
        b = int("".join(str(t - 1) for t in row[4:7][::-1]))
        answer = [t for t in row[8:] if 13 <= t < 23]
        assert int("".join(str(t - 13) for t in answer[::-1])) == a + b  # no leading zero
        assert row[8 + len(answer)] == 23  # the stop token
        scored = [int(t) for t in target[8:] if t != -100]
        assert scored == [*answer[1:], 23, *([0] if len(answer) == 3 else [])]
    assert data.vocab_size == 24


def test_query_ids_of_their_own_need_room_above_the_keys():
    with pytest.raises(UsageError, match="query_ids=separate"):
        resolve_config("retrieval", "mixit", overrides={"task.query_ids": "separate"})


@pytest.mark.parametrize("model_name", ["standard", "mixit"])
def test_pad_masking_leaves_every_real_row_reading_no_pad(small_config, model_name):
    from mixit.models.taps import run_with_taps

    small_config = dataclasses.replace(small_config, pad_masking=True)
    model = build(small_config, model_name).eval()
    ids = torch.randint(1, small_config.vocab_size, (2, 10))
    ids[0, :3] = 0  # left padding
    names = [f"blocks.{layer}.attn.hook_pattern" for layer in range(small_config.n_layer)]
    logits, taps = run_with_taps(model, ids, names)
    for pattern in taps.values():  # (B, H, T, T)
        rows = pattern[0, :, 3:]  # (H, 7, T): the real rows of the padded example
        assert rows[..., :3].abs().max() == 0  # no weight on a pad
        assert torch.allclose(rows.sum(-1), torch.ones(()))
    plain = build(dataclasses.replace(small_config, pad_masking=False), model_name).eval()
    assert torch.allclose(logits[1], plain(ids)[1], atol=1e-5)  # no pad: nothing changes


def test_masked_mixing_without_pads_is_the_mixing_itself():
    from mixit.models.attention import mask_pads

    for causal in (True, False):
        mixing = mixing_matrices(torch.randn(2, 6, 6), causal=causal)
        masked = mask_pads(mixing, torch.ones(3, 6, dtype=torch.bool), causal)  # (3, 2, 6, 6)
        assert torch.allclose(masked, mixing.expand(3, 2, 6, 6), atol=1e-6)
