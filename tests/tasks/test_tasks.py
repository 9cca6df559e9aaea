"""Task generators: docstring examples, determinism, disjoint splits, labels, speed."""

from __future__ import annotations

import dataclasses
import doctest
import math
import time

import numpy as np
import pytest
import torch

from mixit.tasks import (
    IGNORE_INDEX,
    PRESET_NAMES,
    TASKS,
    addition,
    compression,
    dyck,
    fuzzy_recall,
    khop,
    memorization,
    modular_addition,
    mqar,
    noisy_recall,
    retrieval,
    selective_copying,
)
from mixit.tasks.base import most_frequent_row, next_token_targets

MODULES = [
    addition,
    modular_addition,
    dyck,
    retrieval,
    khop,
    memorization,
    mqar,
    selective_copying,
    noisy_recall,
    fuzzy_recall,
    compression,
]
DISJOINT_TASKS = [
    "addition",
    "modular-addition",
    "dyck",
    "retrieval",
    "khop",
    "mqar",
    "selective-copying",
    "noisy-recall",
    "fuzzy-recall",
    "compression",
]

# Small configs so that each test runs in well under a second.
SMALL = {
    "addition": {"num_digits": 4, "n_train": 3000, "n_test": 500},
    "modular-addition": {"p": 31, "n_train": 400, "n_test": 300},
    "dyck": {"length": 12, "n_train": 3000, "n_test": 500},
    "retrieval": {"vocab_size": 32, "max_pairs": 6, "n_train": 3000, "n_test": 500},
    "khop": {"seq_len": 24, "max_hops": 4, "n_train": 3000, "n_test": 500},
    "memorization": {"num_values": 32, "num_pairs": 1000},
    "mqar": {"vocab_size": 64, "num_pairs": 6, "seq_len": 32, "n_test": 500},
    "selective-copying": {"num_tokens_to_copy": 4, "seq_len": 17, "n_train": 3000, "n_test": 500},
    "noisy-recall": {"seq_len": 32, "n_train": 3000, "n_test": 500},
    "fuzzy-recall": {"seq_len": 32, "n_train": 3000, "n_test": 500},
    "compression": {"seq_len": 7, "n_train": 3000, "n_test": 500},
}
# Sizes for the speed check: 100k examples of each task.
LARGE = {
    "addition": {"n_train": 100_000},
    "modular-addition": {"n_train": 100_000},
    "dyck": {"n_train": 100_000},
    "retrieval": {"n_train": 100_000},
    "khop": {"n_train": 100_000},
    "memorization": {"num_pairs": 100_000},
    "mqar": {"n_train": 100_000},
    "selective-copying": {"n_train": 100_000},
    "noisy-recall": {"n_train": 100_000},
    "fuzzy-recall": {"n_train": 100_000},
    "compression": {"n_train": 100_000},
}


def make(task: str, seed: int = 0, **overrides):
    spec = TASKS[task]
    return spec.make_data(spec.config_cls(**{**SMALL[task], **overrides}), seed)


def rows(split) -> set[tuple[int, ...]]:
    """Each example as one tuple: its inputs and its last target (the rest follows from them)."""
    full = torch.cat([split.inputs, split.targets[:, -1:]], dim=1)
    return set(map(tuple, full.tolist()))


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_encoder_matches_docstring_example(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 3 and result.failed == 0


@pytest.mark.parametrize("task", sorted(SMALL))
def test_generator_is_deterministic_per_seed(task):
    a, b, c = make(task, seed=1), make(task, seed=1), make(task, seed=2)
    assert torch.equal(a.train.inputs, b.train.inputs)
    assert torch.equal(a.test.targets, b.test.targets)
    assert not torch.equal(a.train.inputs, c.train.inputs)


@pytest.mark.parametrize("task", DISJOINT_TASKS)
def test_train_and_test_are_disjoint(task):
    data = make(task)
    assert len(data.test) == SMALL[task]["n_test"]
    assert not rows(data.train) & rows(data.test)


@pytest.mark.parametrize("task", sorted(SMALL))
def test_every_row_has_a_scored_target_and_tokens_fit_the_vocabulary(task):
    data = make(task)
    for split in (data.train, data.test):
        scored = split.targets != IGNORE_INDEX
        assert scored.any(dim=1).all()
        assert split.inputs.min() >= 0 and split.inputs.max() < data.vocab_size
        assert split.targets[scored].min() >= 0 and split.targets[scored].max() < data.vocab_size


def test_every_task_has_the_three_presets_with_known_keys():
    for spec in TASKS.values():
        assert set(spec.presets) == set(PRESET_NAMES)
        fields = {f.name for f in dataclasses.fields(spec.config_cls)}
        for overrides in spec.presets.values():
            for key in overrides:
                section, name = key.split(".")
                assert section in ("task", "model", "train")
                assert section != "task" or name in fields


def test_dyck_labels_are_correct_and_half_balanced():
    data = make("dyck", n_train=4000)
    inputs, label = data.train.inputs.numpy(), data.train.targets[:, -1].numpy()
    depth = np.cumsum(np.where(inputs[:, :-1] == dyck.OPEN, 1, -1), axis=1)  # (N, L)
    balanced = (depth.min(axis=1) >= 0) & (depth[:, -1] == 0)
    assert np.array_equal(label == dyck.TRUE, balanced)
    assert np.array_equal(label == dyck.FALSE, ~balanced)
    assert abs(balanced.mean() - 0.5) < 0.02
    # Most negatives have equal counts (hard): only unequal_fraction of them differ in counts.
    unequal = depth[~balanced, -1] != 0
    assert abs(unequal.mean() - 0.25) < 0.05


def test_retrieval_answer_is_the_value_stored_with_the_query_key():
    data = make("retrieval")
    inputs, answer = data.train.inputs.numpy(), data.train.targets[:, -1].numpy()
    keys, values, query = inputs[:, 0:-1:2], inputs[:, 1:-1:2], inputs[:, -1]  # (N, M) (N, M)
    match = keys == query[:, None]
    assert (match.sum(axis=1) == 1).all()
    assert np.array_equal(values[match], answer)
    assert (data.train.targets[:, :-1] == IGNORE_INDEX).all()
    used = keys != retrieval.PAD
    assert all(len(set(k[u])) == u.sum() for k, u in zip(keys, used, strict=True))  # distinct keys


def test_mqar_scores_each_query_on_the_value_listed_with_its_key():
    data = make("mqar")
    inputs, targets = data.test.inputs, data.test.targets  # (N, T)
    pairs = 6
    for row, target in zip(inputs[:50].tolist(), targets[:50].tolist(), strict=True):
        listed = dict(zip(row[0 : 2 * pairs : 2], row[1 : 2 * pairs : 2], strict=True))
        scored = [(row[t], target[t]) for t in range(len(row)) if target[t] != IGNORE_INDEX]
        assert len(scored) == pairs and all(listed[key] == value for key, value in scored)


def test_selective_copying_asks_for_the_scattered_tokens_in_order_at_blanks():
    data = make("selective-copying")
    config = selective_copying.SelectiveCopyingConfig(**SMALL["selective-copying"])
    inputs, targets = data.test.inputs, data.test.targets  # (N, 12 + 1 + 4)
    scored = targets != IGNORE_INDEX
    assert (scored.sum(1) == 4).all() and (inputs[scored] == config.blank).all()
    context = inputs[:, :12]
    for row, target in zip(context.tolist(), targets[:, -4:].tolist(), strict=True):
        assert [t for t in row if t != config.blank] == target
    assert (inputs[:, 12] == config.copy).all()
    assert (inputs[:, 11] != config.blank).all()  # MAD: the last token is next to the copy


def test_noisy_recall_asks_every_key_shown_again_and_trains_on_every_token():
    data = make("noisy-recall")
    config = noisy_recall.NoisyRecallConfig(**SMALL["noisy-recall"])
    k, noise_from = config.num_keys, config.content_ids
    for row, target in zip(data.test.inputs.tolist(), data.test.targets.tolist(), strict=True):
        value_of: dict[int, int] = {}
        for t in range(0, len(row), 2):
            if row[t] >= noise_from:
                assert target[t] == IGNORE_INDEX
                continue
            assert 0 <= row[t] < k
            expected = value_of.get(row[t], IGNORE_INDEX)  # asked from its second showing on
            assert target[t] == expected or (t == len(row) - 1 and target[t] in value_of.values())
            if t + 1 < len(row):
                assert value_of.setdefault(row[t], row[t + 1]) == row[t + 1]  # keeps its value
        assert target[-1] == value_of[row[-1]]  # the last slot asks a key shown before
    assert data.train_on_every_token
    trained_on = next_token_targets(data.train)
    assert torch.equal(trained_on[:, :-1], data.train.inputs[:, 1:])
    noise = (data.test.inputs[:, 0:-1:2] >= noise_from).float().mean()
    assert 0.1 < noise < 0.3  # 20 % of the slots


def test_fuzzy_recall_scores_the_values_of_keys_shown_before_and_asks_a_whole_key():
    config = fuzzy_recall.FuzzyRecallConfig(**SMALL["fuzzy-recall"])
    data = make("fuzzy-recall")
    k, values = config.num_keys, (config.num_keys, config.num_keys + config.num_values)
    inputs, targets = data.test.inputs, data.test.targets
    scored = targets != IGNORE_INDEX
    assert scored[:, -1].all()  # the probe's value ends every row
    assert ((targets[scored] >= values[0]) & (targets[scored] < values[1])).all()

    def key_run_lengths(split) -> set[int]:
        is_key = torch.nn.functional.pad((split.inputs < k).int(), (1, 1))  # (N, T + 2)
        edges = is_key.diff(dim=1)  # +1 where a run of key ids starts, -1 after it ends
        starts, ends = (edges == 1).nonzero()[:, 1], (edges == -1).nonzero()[:, 1]
        return set((ends - starts).tolist())

    assert key_run_lengths(data.test) == {config.k_motif_size}  # test keys: whole length
    assert key_run_lengths(data.train) == set(range(1, config.k_motif_size + 1))
    assert data.train_on_every_token and (inputs[:, 0] == config.pad).all()


def test_compression_rebuilds_every_token_from_the_last_position_only():
    from mixit.training.resolve import resolve_config
    from mixit.training.rundir import new_model

    data = make("compression")
    assert torch.equal(data.train.targets, data.train.inputs)  # MAD scores the last token too
    assert (data.train.inputs[:, -1] == 15).all() and (data.train.inputs[:, :-1] < 15).all()
    for wide in ("false", "true"):
        sizes = {"model.vocab_size": "16", "model.block_size": "7", "task.wide_readout": wide}
        model = new_model(resolve_config("compression", "standard", "tiny", 0, sizes)).eval()
        body, inputs = model.body, data.test.inputs[:4]
        features = body.features(inputs)  # (4, 7, n)
        body.features = lambda ids, f=features: f.masked_fill(torch.arange(7)[:, None] < 6, 0.0)
        rebuilt = model.head(model.decoder(features[:, -1:] + model.positions[:7]))
        assert torch.equal(model(inputs), rebuilt)


def test_hop_k_reference_on_the_papers_example():
    assert khop.hop_k("adcada", 1) == "d"
    assert khop.hop_k("adcada", 2) == "c"
    assert khop.hop_k("abc", 1) is None


def test_hop_k_batch_matches_the_reference():
    rng = np.random.default_rng(0)
    symbols = rng.integers(0, 3, size=(300, 20))
    hops = rng.integers(1, 7, size=300)
    batch = khop.hop_k_batch(symbols, hops, alphabet_size=3)
    reference = [khop.hop_k(list(s), int(k)) for s, k in zip(symbols, hops, strict=True)]
    assert [None if a == khop.NO_ANSWER else a for a in batch.tolist()] == reference
    assert khop.NO_ANSWER in batch.tolist()  # the no-occurrence case is exercised


def test_memorization_scores_the_training_set_and_reports_bits_per_param():
    data = make("memorization")
    assert data.test_is_train and data.test is data.train
    keys = data.train.inputs[:, :2]
    assert len(set(map(tuple, keys.tolist()))) == len(keys)
    config = memorization.MemorizationConfig(num_pairs=512 * 512, num_values=512)
    extra = TASKS["memorization"].extra_metrics
    bits = extra({"train_accuracy": 0.5, "test_accuracy": 0.1}, 1_000_000, config)
    assert bits["bits_per_param"] == pytest.approx(9 * 512**2 * 0.5 / 1_000_000)
    fallback = extra({"test_accuracy": 1.0}, 9 * 512**2, config)["bits_per_param"]
    assert math.isclose(fallback, 1.0)


@pytest.mark.slow  # a wall-clock bound: a busy machine fails it, so not in `make test`
@pytest.mark.parametrize("task", sorted(LARGE))
def test_100k_examples_generate_quickly(task):
    spec = TASKS[task]
    start = time.perf_counter()
    data = spec.make_data(spec.config_cls(**LARGE[task]), 0)
    assert time.perf_counter() - start < 5.0
    assert len(data.train) == 100_000


def test_impossible_configs_are_usage_errors():
    from mixit.common.errors import UsageError

    for task, overrides in [
        ("dyck", {"length": 11}),
        ("retrieval", {"vocab_size": 8, "max_pairs": 6}),
        ("modular-addition", {"p": 5, "n_train": 25}),
        ("addition", {"num_digits": 1, "n_train": 100, "n_test": 100}),
    ]:
        with pytest.raises(UsageError):
            make(task, **overrides)


def test_retrieval_value_positions_mark_the_values_only():
    # vocab 16: values 1..7, keys 8..15; "_ k=12 v=5 k=9 v=3 q=12"
    inputs = torch.tensor([[0, 12, 5, 9, 3, 12]])
    marked = retrieval.value_positions(inputs, vocab_size=16)
    assert marked.tolist() == [[False, False, True, False, True, False]]


def test_most_frequent_row_packs_rows_without_changing_the_answer():
    generator = torch.Generator().manual_seed(0)
    rows = torch.randint(0, 4, (500, 3), generator=generator)
    rows[rows == 3] = IGNORE_INDEX
    answers, counts = torch.unique(rows, dim=0, return_counts=True)
    assert torch.equal(most_frequent_row(rows), answers[counts.argmax()])
    wide = torch.randint(0, 2**20, (50, 4), generator=generator)  # too wide to pack: unique(dim)
    wide[7] = wide[3]
    assert torch.equal(most_frequent_row(wide), wide[3])
