"""The screening tasks against their peers' generators (tests/fixtures/peers/, recorded by
make_fixture.py from the peers' own code), and chance levels no trivial strategy beats."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from mixit.tasks import get_task
from mixit.tasks.base import IGNORE_INDEX
from mixit.tasks.mqar import MQARConfig

PEERS = Path(__file__).parents[1] / "fixtures" / "peers"
spec = importlib.util.spec_from_file_location("make_fixture", PEERS / "make_fixture.py")
fixture = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixture)
ZOOLOGY = json.loads((PEERS / "mqar.json").read_text())
# What the layouts must share exactly; the rates below are compared within sampling error.
EXACT = (
    "scored_per_row",
    "queries_at_even_positions",
    "every_key_asked_once",
    "label_is_the_keys_value",
    "key_range",
    "value_range",
    "rows_with_a_repeated_value",
    "rows_with_a_repeated_key",
    "filler_token_range",
)


def mixit_mqar(case: dict) -> tuple[np.ndarray, np.ndarray]:
    config = MQARConfig(
        vocab_size=case["vocab_size"],
        seq_len=case["input_seq_len"],
        num_pairs=case["num_kv_pairs"],
        n_train=fixture.ROWS,
        n_test=16,
    )
    data = get_task("mqar").make_data(config, 0)
    return data.train.inputs.numpy(), data.train.targets.numpy()


@pytest.mark.parametrize("case", sorted(ZOOLOGY["cases"]))
def test_mqar_is_zoologys(case):
    peer = ZOOLOGY["cases"][case]
    pairs = peer["config"]["num_kv_pairs"]
    ours = fixture.mqar_statistics(*mixit_mqar(peer["config"]), pairs)
    assert {k: ours[k] for k in EXACT} == {k: peer[k] for k in EXACT}
    # The power law of the query gaps: total variation distance between the histograms.
    distance = 0.5 * np.abs(np.subtract(ours["gap_histogram"], peer["gap_histogram"])).sum()
    assert distance < 0.03
    for rate in ("answer_shown_after_its_query", "zero_share_where_nothing_is_asked"):
        assert ours[rate] == pytest.approx(peer[rate], abs=0.01)


def baselines(inputs: torch.Tensor, targets: torch.Tensor, pairs: int) -> dict[str, float]:
    """The accuracy of strategies that do not bind keys to values, on a MQAR split."""
    scored = targets != IGNORE_INDEX  # (N, T)
    rows, cols = torch.nonzero(scored, as_tuple=True)
    listed = inputs[:, 1 : 2 * pairs : 2]  # (N, M)
    answers = targets[rows, cols]
    guesses = {
        "first listed value": listed[rows, 0],
        "last listed value": listed[rows, -1],
        "copy the last token": inputs[rows, cols],
        "most frequent answer in training": torch.full_like(answers, int(answers.mode().values)),
    }
    shown_before = []  # the most frequent listed value already shown in the query region
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
        seen = inputs[r, 2 * pairs : c]
        counts = [(int((seen == v).sum()), -i, int(v)) for i, v in enumerate(listed[r])]
        shown_before.append(max(counts)[2])
    guesses["most frequent listed value shown so far"] = torch.tensor(shown_before)
    return {name: float((guess == answers).float().mean()) for name, guess in guesses.items()}


def test_no_trivial_strategy_beats_mqars_chance_level():
    config = MQARConfig(n_train=64, n_test=1000)
    spec = get_task("mqar")
    data = spec.make_data(config, 0)
    chance = spec.chance(data, config)
    assert chance == pytest.approx(1 / config.num_pairs)
    scores = baselines(data.test.inputs, data.test.targets, config.num_pairs)
    assert max(scores.values()) <= chance + 0.01, scores


def test_mqars_earlier_layout_is_scored_against_elimination():
    # With each answer written after its query, guessing among the values not yet shown beats
    # 1 / num_pairs: the chance level is that guess.
    config = MQARConfig(num_queries=4, show_answers=True, n_train=64, n_test=1000)
    spec = get_task("mqar")
    data = spec.make_data(config, 0)
    assert spec.chance(data, config) > 1.2 / config.num_pairs


@pytest.mark.parametrize("preset", ["tiny", "small", "paper"])
def test_mqars_presets_keep_zoologys_constraint(preset):
    from mixit.training.resolve import resolve_config

    task = resolve_config("mqar", "standard", preset, 0).task
    assert task.vocab_size > task.seq_len and task.seq_len % 2 == 0


NOISY = json.loads((PEERS / "noisy-recall.json").read_text())
RECALL_EXACT = (
    "input_length",
    "last_position_scored",
    "scored_only_at_keys",
    "key_range",
    "keys_below",
    "value_range",
    "noise_range",
    "scored_is_a_shown_keys_value",
    "train_targets_are_the_next_tokens",
)


def test_noisy_recall_is_mads():
    from mixit.tasks.base import next_token_targets
    from mixit.tasks.noisy_recall import NoisyRecallConfig

    peer = NOISY["cases"]["base"]
    case = {k: v for k, v in peer["config"].items()}
    config = NoisyRecallConfig(**case, n_train=fixture.NOISY_ROWS, n_test=fixture.NOISY_ROWS)
    data = get_task("noisy-recall").make_data(config, 0)
    test = data.test.inputs.numpy(), data.test.targets.numpy()
    train = data.train.inputs.numpy(), next_token_targets(data.train).numpy()
    ours = fixture.recall_statistics(test, train, case)
    assert {k: ours[k] for k in RECALL_EXACT} == {k: peer[k] for k in RECALL_EXACT}
    assert ours["noise_slot_share"] == pytest.approx(peer["noise_slot_share"], abs=0.01)
    assert ours["scored_per_row_mean"] == pytest.approx(peer["scored_per_row_mean"], rel=0.02)


def test_the_macro_accuracy_is_mads():
    from mixit.training.scoring import macro_accuracy

    for case in json.loads((PEERS / "mad-accuracy.json").read_text())["cases"]:
        targets, predictions = torch.tensor(case["targets"]), torch.tensor(case["predictions"])
        scored = targets != IGNORE_INDEX
        targets, predictions = targets[scored], predictions[scored]
        vocab = case["vocab"]
        classes = torch.stack(
            [
                torch.bincount(targets[predictions == targets], minlength=vocab),
                torch.bincount(targets, minlength=vocab),
                torch.bincount(predictions, minlength=vocab),
            ]
        )
        assert macro_accuracy(classes) == pytest.approx(case["accuracy"], abs=1e-6)


def recall_baselines(inputs: torch.Tensor, targets: torch.Tensor, k: int, values: int) -> dict:
    """Key-blind strategies on a noisy-recall split: their accuracy over the queries."""
    rows, cols = torch.nonzero(targets != IGNORE_INDEX, as_tuple=True)
    answers = targets[rows, cols]
    guesses = {"the most frequent answer": torch.full_like(answers, int(answers.mode().values))}
    uniform, last_value = [], []
    for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
        seen = inputs[r, :c]
        shown = seen[(seen >= k) & (seen < k + values)]
        distinct = shown.unique()
        uniform.append(float((distinct == answers[len(uniform)]).float().mean()))
        last_value.append(int(shown[-1]))
    guesses["the last value shown"] = torch.tensor(last_value)
    scores = {name: float((g == answers).float().mean()) for name, g in guesses.items()}
    scores["a value shown, uniformly"] = float(np.mean(uniform))
    return scores


def test_no_key_blind_strategy_beats_noisy_recalls_chance_level():
    from mixit.tasks.noisy_recall import NoisyRecallConfig

    config = NoisyRecallConfig(n_train=64, n_test=300)
    spec = get_task("noisy-recall")
    data = spec.make_data(config, 0)
    chance = spec.chance(data, config)
    scores = recall_baselines(
        data.test.inputs, data.test.targets, config.num_keys, config.num_values
    )
    assert max(scores.values()) <= chance + 0.01, (chance, scores)


COPYING = json.loads((PEERS / "selective-copying.json").read_text())
COPYING_EXACT = (
    "length",
    "scored_positions",
    "content_per_row",
    "copy_token_position",
    "answer_inputs_are_blanks",
    "targets_are_the_tokens_in_order",
    "content_range",
    "last_token_next_to_copy",
    "rows_with_a_repeated_token",
)


def test_selective_copying_is_mads():
    from mixit.tasks.selective_copying import SelectiveCopyingConfig

    peer = COPYING["cases"]["base"]
    config = SelectiveCopyingConfig(**peer["config"], n_train=fixture.NOISY_ROWS, n_test=16)
    data = get_task("selective-copying").make_data(config, 0)
    ours = fixture.copying_statistics(
        data.train.inputs.numpy(), data.train.targets.numpy(), peer["config"]
    )
    assert {k: ours[k] for k in COPYING_EXACT} == {k: peer[k] for k in COPYING_EXACT}
    # Blanks before each token: about (C - K) / K for every token, the first included.
    assert ours["mean_blanks_before_each_token"] == pytest.approx(
        peer["mean_blanks_before_each_token"], abs=0.6
    )


def test_no_trivial_strategy_beats_selective_copyings_chance_level():
    from mixit.tasks.selective_copying import SelectiveCopyingConfig

    config = SelectiveCopyingConfig(n_train=64, n_test=500)
    spec = get_task("selective-copying")
    data = spec.make_data(config, 0)
    chance = spec.chance(data, config)
    inputs, answers = data.test.inputs, data.test.targets[:, -config.num_tokens_to_copy :]
    stretch = inputs[:, : config.context_len]
    content = stretch != config.blank
    last = torch.stack([row[mask][-1] for row, mask in zip(stretch, content, strict=True)])
    first = torch.stack([row[mask][0] for row, mask in zip(stretch, content, strict=True)])
    scores = {
        "a token at random": 1 / (config.vocab_size - 2),
        "the last token before the copy token": float((answers == last[:, None]).float().mean()),
        "the first token": float((answers == first[:, None]).float().mean()),
        "the most frequent answer": float(
            (answers == answers.flatten().mode().values).float().mean()
        ),
    }
    assert max(scores.values()) <= chance + 0.01, (chance, scores)
    assert chance > 1.5 / (config.vocab_size - 2)  # tokens repeat: better than at random


COMPRESSION = json.loads((PEERS / "compression.json").read_text())


def test_compression_is_mads():
    from mixit.tasks.compression import CompressionConfig

    peer = COMPRESSION["cases"]["base"]
    config = CompressionConfig(**peer["config"], n_train=2000, n_test=16)
    data = get_task("compression").make_data(config, 0)
    inputs, targets = data.train.inputs, data.train.targets
    content = inputs[:, :-1]
    assert inputs.shape[1] == peer["length"]
    assert sorted(set(inputs[:, -1].tolist())) == peer["last_token"]
    assert [int(content.min()), int(content.max())] == peer["content_range"]
    assert bool((targets == inputs).all()) == peer["targets_are_the_inputs"]
    share = torch.bincount(content.flatten()) / content.numel()
    assert share.tolist() == pytest.approx(peer["content_share_of_each_id"], abs=0.01)


@pytest.mark.parametrize("size", sorted(COMPRESSION["cases"]["sincos"]))
def test_the_bottleneck_readouts_positions_are_mads(size):
    from mixit.models.readout import sincos_positions

    length, width = map(int, size.split("x"))
    expected = torch.tensor(COMPRESSION["cases"]["sincos"][size])
    assert torch.allclose(sincos_positions(length, width), expected, atol=1e-6)


def test_the_bottleneck_readout_is_mads_decoder():
    # MAD's: norm, Linear(d, d), GELU, norm, Linear(d, d), GELU, then norm and Linear(d, V).
    from mixit.models.readout import BottleneckReadout

    d, vocab = 8, 16
    readout = BottleneckReadout(torch.nn.Identity(), d, 32, vocab)
    shapes = [tuple(p.shape) for p in readout.parameters()]
    assert shapes == [(d,), (d, d), (d,), (d,), (d, d), (d,), (d,), (vocab, d), (vocab,)]
    assert not any(p.requires_grad for p in readout.buffers())  # fixed positions


def test_no_trivial_strategy_beats_compressions_chance_level():
    from mixit.tasks.compression import CompressionConfig

    config = CompressionConfig(n_train=64, n_test=500)
    spec = get_task("compression")
    data = spec.make_data(config, 0)
    chance = spec.chance(data, config)
    inputs, targets = data.test.inputs, data.test.targets
    scored = targets != IGNORE_INDEX
    last_content = inputs[:, -2:-1].expand_as(inputs)
    guesses = {
        "a content id at random": torch.randint(0, config.compress, inputs.shape),
        "the last content token everywhere": last_content,
        "the most frequent answer": torch.full_like(inputs, int(targets[:, 0].mode().values)),
    }
    scores = {
        name: float((guess[scored] == targets[scored]).float().mean())
        for name, guess in guesses.items()
    }
    assert max(scores.values()) <= chance + 0.01, (chance, scores)
    assert chance > 1.5 / config.compress  # the row's histogram beats a uniform guess


FUZZY = json.loads((PEERS / "fuzzy-recall.json").read_text())
FUZZY_EXACT = (
    "length",
    "pad",
    "a_key_keeps_its_value",
    "last_position_scored",
    "final_key_lengths",
    "scored_values_are_those_of_keys_seen_before",
)
FUZZY_RATES = (
    ("leading_pads_mean", 0.5),
    ("pairs_per_row_mean", 0.5),
    ("pairs_whose_key_came_before", 0.02),
    ("scored_per_row_mean", 0.3),
)


@pytest.mark.parametrize("split", ["train", "test"])
def test_fuzzy_recall_is_mads(split):
    from mixit.tasks.fuzzy_recall import FuzzyRecallConfig

    peer = FUZZY["cases"][split]
    config = FuzzyRecallConfig(**peer["config"], n_train=fixture.NOISY_ROWS, n_test=500)
    data = get_task("fuzzy-recall").make_data(config, 0)
    rows = data.train if split == "train" else data.test
    targets = None if split == "train" else rows.targets.numpy()
    ours = fixture.fuzzy_statistics(rows.inputs.numpy(), targets, config.num_keys)
    assert {k: ours[k] for k in FUZZY_EXACT if k in peer} == {
        k: peer[k] for k in FUZZY_EXACT if k in peer
    }
    for key in ("key_span_lengths", "value_span_lengths"):
        assert ours[key] == pytest.approx(peer[key], abs=0.03)
    for key, tolerance in FUZZY_RATES:
        if key in peer:
            assert ours[key] == pytest.approx(peer[key], abs=tolerance), key


def test_no_key_blind_strategy_beats_fuzzy_recalls_chance_level():
    from mixit.tasks.fuzzy_recall import FuzzyRecallConfig

    config = FuzzyRecallConfig(n_train=64, n_test=300)
    spec = get_task("fuzzy-recall")
    data = spec.make_data(config, 0)
    chance = spec.chance(data, config)
    scores = recall_baselines(
        data.test.inputs, data.test.targets, config.num_keys, config.num_values
    )
    assert max(scores.values()) <= chance + 0.01, (chance, scores)
