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

PEERS = Path(__file__).parent / "fixtures" / "peers"
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
    from mixit.resolve import resolve_config

    task = resolve_config("mqar", "standard", preset, 0).task
    assert task.vocab_size > task.seq_len and task.seq_len % 2 == 0
