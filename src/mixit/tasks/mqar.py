"""Multi-query associative recall (MQAR; Arora et al., "Zoology", 2023).

A sequence first lists ``num_pairs`` key-value pairs, then asks ``num_queries`` of the keys
again, each at a random two-token slot of the rest of the sequence (the other slots are
padding). Every query is followed by its value, which the model must predict at the query: a
row is scored at ``num_queries`` positions, so one sequence measures several recalls at
different distances from their pair. Keys come from the upper half of the vocabulary
{V/2..V-1}, distinct within a sequence; values from the lower half {1..V/2-1}; 0 pads.

Unlike retrieval (one query, at the end), a model has to recall while more pairs and queries
go by, which is what separates attention from fixed-size recurrent states in Zoology.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.errors import UsageError
from mixit.tasks.base import (
    RECALL_TINY,
    TaskData,
    TaskSpec,
    answer_split,
    check_positive,
    model_size,
    register,
    sample_disjoint,
    schedule,
)

PAD = 0


@dataclass
class MQARConfig:
    vocab_size: int = 64  # V: values are tokens 1..V/2-1, keys V/2..V-1
    num_pairs: int = 8  # key-value pairs listed first
    num_queries: int = 4  # keys asked again, each once
    seq_len: int = 64  # tokens per sequence: 2 x num_pairs of pairs, then the query slots
    n_train: int = 20_000
    n_test: int = 1_000

    def validate(self) -> None:
        check_positive(self, "vocab_size", "num_pairs", "num_queries", "seq_len")
        check_positive(self, "n_train", "n_test")
        if self.num_pairs > self.vocab_size - self.vocab_size // 2 or self.vocab_size < 4:
            raise UsageError(
                f"task.num_pairs={self.num_pairs} needs that many distinct keys, but "
                f"task.vocab_size={self.vocab_size} has {self.vocab_size - self.vocab_size // 2}"
            )
        slots = (self.seq_len - 2 * self.num_pairs) // 2
        if self.num_queries > min(self.num_pairs, slots):
            raise UsageError(
                f"task.num_queries={self.num_queries} must be at most task.num_pairs "
                f"({self.num_pairs}) and the {slots} two-token slots that task.seq_len="
                f"{self.seq_len} leaves after the pairs"
            )


def encode_mqar(
    keys: np.ndarray, values: np.ndarray, queried: np.ndarray, slots: np.ndarray, seq_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """Sequences (N, seq_len) and their answer mask: the pairs k1 v1 ... kM vM, then query q
    of pair ``queried[:, q]`` written as its key and value at two-token slot ``slots[:, q]``
    of the rest (padding elsewhere); the answers are the queries' values."""
    keys, values = np.asarray(keys), np.asarray(values)  # (N, M)
    queried, slots = np.asarray(queried), np.asarray(slots)  # (N, Q)
    n, m = keys.shape
    rows = np.full((n, seq_len), PAD, dtype=np.int64)  # (N, T)
    rows[:, : 2 * m] = np.stack([keys, values], axis=2).reshape(n, 2 * m)
    at = 2 * m + 2 * slots  # (N, Q): where each query's key goes
    index = np.arange(n)[:, None]
    rows[index, at] = np.take_along_axis(keys, queried, axis=1)
    rows[index, at + 1] = np.take_along_axis(values, queried, axis=1)
    answers = np.zeros(rows.shape, dtype=bool)
    answers[index, at + 1] = True
    return rows, answers


def _sample(rng: np.random.Generator, n: int, config: MQARConfig) -> np.ndarray:
    """``n`` random sequences (n, seq_len); where their answers are follows from the rows
    (``_answer_mask``)."""
    m, q = config.num_pairs, config.num_queries
    first_key = config.vocab_size // 2
    keys = first_key + np.argsort(rng.random((n, config.vocab_size - first_key)), axis=1)[:, :m]
    values = rng.integers(1, first_key, size=(n, m))
    queried = np.argsort(rng.random((n, m)), axis=1)[:, :q]  # (n, q) distinct pairs
    free = (config.seq_len - 2 * m) // 2
    slots = np.sort(np.argsort(rng.random((n, free)), axis=1)[:, :q], axis=1)  # (n, q)
    rows, _ = encode_mqar(keys, values, queried, slots, config.seq_len)
    return rows


def _answer_mask(rows: np.ndarray, num_pairs: int) -> np.ndarray:
    """The values of the query region: every non-pad token there at an odd offset."""
    mask = np.zeros(rows.shape, dtype=bool)
    region = rows[:, 2 * num_pairs :]
    offset = np.arange(region.shape[1]) % 2 == 1
    mask[:, 2 * num_pairs :] = (region != PAD) & offset
    return mask


def make_mqar_data(config: MQARConfig, seed: int) -> TaskData:
    """Pairs, then queries in slots; scored on every query's value, predicted at its key.

    Example (vocab_size=16: keys 8..15, values 1..7; 2 pairs, 2 queries, seq_len 10): pairs
    (12, 5) and (9, 3); query pair 1 (key 9) in slot 0 and pair 0 (key 12) in slot 2:

    >>> rows, answers = encode_mqar([[12, 9]], [[5, 3]], [[1, 0]], [[0, 2]], seq_len=10)
    >>> rows.tolist()  # k v k v | q=9 3 _ _ q=12 5
    [[12, 5, 9, 3, 9, 3, 0, 0, 12, 5]]
    >>> split = answer_split(rows, answers)
    >>> split.targets.tolist()  # predicts 3 at the query 9 and 5 at the query 12
    [[-100, -100, -100, -100, 3, -100, -100, -100, 5]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(lambda n: _sample(rng, n, config), config.n_train, config.n_test)
    return TaskData(
        answer_split(train, _answer_mask(train, config.num_pairs)),
        answer_split(test, _answer_mask(test, config.num_pairs)),
        config.vocab_size,
    )


def context_value_guess(data: TaskData, config: MQARConfig) -> float:
    """Chance for MQAR: per query, the share of the sequence's listed values equal to the
    answer (about 1 / num_pairs), what a model that cannot bind keys to values can reach."""
    inputs, targets = data.test.inputs, data.test.targets  # (N, T)
    listed = inputs[:, 1 : 2 * config.num_pairs : 2]  # (N, M): the pairs' values
    scored = targets >= 0  # (N, T)
    hits = (listed[:, None, :] == targets[:, :, None]).float().mean(-1)  # (N, T)
    return float(hits[scored].mean())


register(
    TaskSpec(
        name="mqar",
        config_cls=MQARConfig,
        make_data=make_mqar_data,
        summary="multi-query associative recall: key-value pairs, then several keys asked again",
        metric="test_token_accuracy",
        chance=context_value_guess,
        presets={
            "tiny": RECALL_TINY,
            "small": {
                "task.vocab_size": 256,
                "task.num_pairs": 32,
                "task.num_queries": 16,
                "task.seq_len": 256,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses MQAR: this is Zoology's setting (vocabulary 8,192,
            # 512 tokens, 64 pairs) at a width its attention baselines solve.
            "paper": {
                "task.vocab_size": 8192,
                "task.num_pairs": 64,
                "task.num_queries": 64,
                "task.seq_len": 512,
                **model_size(n_layer=2, n_embd=256, n_head=4),
                **schedule(batch_size=256, lr=1e-3, steps=20000, eval_every=1000),
            },
        },
    )
)
