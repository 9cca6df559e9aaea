"""Fuzzy in-context recall (MAD, Poli et al. 2024): recall where keys and values are spans.

Each key is a span of 1 to ``max_key_len`` key tokens and each value a span of 1 to
``max_value_len`` value tokens, so the model must find where a key ends and recall a value of
several tokens. A row shows ``num_pairs`` distinct keys with their values, then a marker, one
of those keys again, and its value, which is scored whole. Ids: 0 pads (rows differ in length
and are padded on the left), keys are 1..K, values K+1..K+V, the marker K+V+1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.errors import UsageError
from mixit.tasks.base import (
    IGNORE_INDEX,
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


@dataclass
class FuzzyRecallConfig:
    num_keys: int = 8  # K key token ids
    num_values: int = 8  # V value token ids
    max_key_len: int = 2  # a key spans 1..max_key_len tokens
    max_value_len: int = 2  # a value spans 1..max_value_len tokens
    num_pairs: int = 8  # distinct key-value pairs shown before the query
    n_train: int = 20_000
    n_test: int = 1_000

    @property
    def marker(self) -> int:
        return self.num_keys + self.num_values + 1

    @property
    def vocab_size(self) -> int:
        return self.marker + 1

    def validate(self) -> None:
        check_positive(self, "num_keys", "num_values", "max_key_len", "max_value_len")
        check_positive(self, "num_pairs", "n_train", "n_test")
        distinct = sum(self.num_keys**length for length in range(1, self.max_key_len + 1))
        if distinct < self.num_pairs:
            raise UsageError(
                f"task.num_pairs={self.num_pairs} needs that many distinct keys; "
                f"{self.num_keys} key ids of length <= {self.max_key_len} give {distinct}"
            )


def _compact(rows: np.ndarray) -> np.ndarray:
    """Move each row's pad tokens (0) to its left end, keeping the order of the others."""
    order = np.argsort(rows != 0, axis=1, kind="stable")  # pads first, then tokens in order
    return np.take_along_axis(rows, order, axis=1)


def encode_fuzzy_recall(
    keys: np.ndarray, values: np.ndarray, query: np.ndarray, marker: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows (N, S) and answer masks (N, S) from keys (N, P, Lk) and values (N, P, Lv), each
    span padded on the right with 0, and the pair each row asks about ``query`` (N,): the
    pairs, the marker, the queried key, its value (the answer), padded on the left."""
    keys, values, query = np.asarray(keys), np.asarray(values), np.asarray(query)
    n = len(keys)
    pairs = np.concatenate([keys, values], axis=2).reshape(n, -1)  # (N, P (Lk + Lv))
    asked = np.arange(n), query
    tail = np.concatenate(
        [np.full((n, 1), marker), keys[asked], values[asked]], axis=1
    )  # (N, 1 + Lk + Lv)
    rows = _compact(np.concatenate([pairs, tail], axis=1))  # (N, S)
    answer_len = (values[asked] != 0).sum(1)  # (N,)
    width = rows.shape[1]
    answer = np.arange(width)[None, :] >= width - answer_len[:, None]  # (N, S)
    return rows, answer


def _spans(rng: np.random.Generator, shape: tuple[int, int], max_len: int, first: int, ids: int):
    lengths = rng.integers(1, max_len + 1, shape)  # (N, P)
    tokens = first + rng.integers(0, ids, (*shape, max_len))  # (N, P, L)
    return np.where(np.arange(max_len) < lengths[..., None], tokens, 0)  # (N, P, L)


def _distinct_keys(rng: np.random.Generator, n: int, config: FuzzyRecallConfig) -> np.ndarray:
    """Keys (n, P, Lk) with no key twice in a row (rows with a repeat are drawn again)."""
    shape = (n, config.num_pairs)
    keys = _spans(rng, shape, config.max_key_len, 1, config.num_keys)
    while True:
        same = (keys[:, :, None, :] == keys[:, None, :, :]).all(-1)  # (n, P, P)
        repeated = np.triu(same, k=1).any(axis=(1, 2))  # (n,)
        if not repeated.any():
            return keys
        redraw = (int(repeated.sum()), config.num_pairs)
        keys[repeated] = _spans(rng, redraw, config.max_key_len, 1, config.num_keys)


def _sample(rng: np.random.Generator, n: int, config: FuzzyRecallConfig) -> np.ndarray:
    keys = _distinct_keys(rng, n, config)
    shape = (n, config.num_pairs)
    values = _spans(rng, shape, config.max_value_len, 1 + config.num_keys, config.num_values)
    query = rng.integers(0, config.num_pairs, n)
    rows, answer = encode_fuzzy_recall(keys, values, query, config.marker)
    return np.concatenate([rows, answer], axis=1).astype(np.int64)  # rows beside their masks


def make_fuzzy_recall_data(config: FuzzyRecallConfig, seed: int) -> TaskData:
    """Key spans with value spans, a marker, a key again; scored on its whole value.

    Example (keys 1-2, values 3-4, marker 5; two pairs): key (1, 2) has value (4,), key (2,)
    has value (3, 3); the row asks key (1, 2):

    >>> keys = [[[1, 2], [2, 0]]]  # spans padded on the right with 0
    >>> values = [[[4, 0], [3, 3]]]
    >>> rows, answer = encode_fuzzy_recall(keys, values, [0], marker=5)
    >>> rows.tolist()  # pads | k k v | k v v | marker k k | v
    [[0, 0, 0, 1, 2, 4, 2, 3, 3, 5, 1, 2, 4]]
    >>> answer_split(rows, answer).targets.tolist()  # predicts 4 after the queried key
    [[-100, -100, -100, -100, -100, -100, -100, -100, -100, -100, -100, 4]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(lambda n: _sample(rng, n, config), config.n_train, config.n_test)
    width = train.shape[1] // 2
    splits = [answer_split(rows[:, :width], rows[:, width:].astype(bool)) for rows in (train, test)]
    return TaskData(splits[0], splits[1], config.vocab_size)


def spans(tokens: list[int], first: int, last: int) -> list[tuple[int, ...]]:
    """The maximal runs of ids in [first, last] in ``tokens``, in order: a row's key spans
    (ids of keys) or value spans (ids of values)."""
    runs, run = [], []
    for token in [*tokens, 0]:
        if first <= token <= last:
            run.append(token)
        elif run:
            runs.append(tuple(run))
            run = []
    return runs


def shown_value_guess(data: TaskData, config: FuzzyRecallConfig) -> float:
    """Chance: answering one of the values a row shows, at random (what a model that finds
    value spans but cannot match keys can do): the mean share of its shown values that are
    the answer."""
    first, last = config.num_keys + 1, config.num_keys + config.num_values
    shares = []
    for inputs, targets in zip(data.test.inputs.tolist(), data.test.targets.tolist(), strict=True):
        answer = tuple(t for t in targets if t != IGNORE_INDEX)
        shown = spans(inputs[: inputs.index(config.marker)], first, last)
        shares.append(shown.count(answer) / max(1, len(shown)))
    return sum(shares) / len(shares) if shares else 0.0


register(
    TaskSpec(
        name="fuzzy-recall",
        config_cls=FuzzyRecallConfig,
        make_data=make_fuzzy_recall_data,
        summary="key spans with value spans, then a key span again: emit its whole value",
        chance=shown_value_guess,
        presets={
            "tiny": RECALL_TINY,
            "small": {
                "task.num_keys": 16,
                "task.num_values": 16,
                "task.max_key_len": 3,
                "task.max_value_len": 3,
                "task.num_pairs": 16,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses it: MAD's setting (7 key and 7 value ids, spans of
            # up to 3 tokens, about 128 tokens) at a width its attention baselines solve.
            "paper": {
                "task.num_keys": 7,
                "task.num_values": 7,
                "task.max_key_len": 3,
                "task.max_value_len": 3,
                "task.num_pairs": 20,
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=5e-4, steps=20000, eval_every=1000),
            },
        },
    )
)
