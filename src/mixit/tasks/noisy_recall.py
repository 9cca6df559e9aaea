"""Noisy in-context recall (MAD, Poli et al. 2024).

A sequence holds ``num_slots`` two-token slots. Each slot is, with probability ``noise``, two
noise tokens, else a key and its value: keys are drawn with repetition from the key ids, and a
key that comes back keeps the value it had. At the end one of the keys shown is asked again
and the model must emit its value. The noise tokens carry nothing: the model must learn to
look past them. Ids: 0 is unused (padding elsewhere), keys are 1..K, values K+1..K+V, noise
tokens K+V+1..K+V+N.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.errors import UsageError
from mixit.tasks.base import (
    RECALL_TINY,
    TaskData,
    TaskSpec,
    check_positive,
    model_size,
    register,
    sample_disjoint,
    schedule,
    suffix_split,
)


@dataclass
class NoisyRecallConfig:
    num_keys: int = 8  # K key ids
    num_values: int = 8  # V value ids
    num_noise: int = 8  # N noise ids
    num_slots: int = 16  # two-token slots before the query
    noise: float = 0.4  # the chance that a slot is noise
    n_train: int = 20_000
    n_test: int = 1_000

    @property
    def vocab_size(self) -> int:
        return 1 + self.num_keys + self.num_values + self.num_noise

    def validate(self) -> None:
        check_positive(self, "num_keys", "num_values", "num_noise", "num_slots")
        check_positive(self, "n_train", "n_test")
        if not 0 <= self.noise < 1:
            raise UsageError(f"task.noise={self.noise} must be in [0, 1)")


def encode_noisy_recall(
    slots: np.ndarray, query_slot: np.ndarray, values_of: np.ndarray
) -> np.ndarray:
    """Rows (N, 2S + 2): the slots (N, S, 2) as they are, then the key of slot ``query_slot``
    and the value ``values_of`` (N, K + 1), indexed by key id, holds for it."""
    slots = np.asarray(slots)
    n = len(slots)
    key = slots[np.arange(n), np.asarray(query_slot), 0]  # (N,)
    answer = np.asarray(values_of)[np.arange(n), key]  # (N,)
    return np.concatenate([slots.reshape(n, -1), key[:, None], answer[:, None]], axis=1)


def _sample(rng: np.random.Generator, n: int, config: NoisyRecallConfig) -> np.ndarray:
    k, v, s = config.num_keys, config.num_values, config.num_slots
    values_of = np.concatenate(
        [np.zeros((n, 1), dtype=np.int64), 1 + k + rng.integers(0, v, (n, k))], axis=1
    )  # (n, K + 1): each key's value in this sequence
    keys = 1 + rng.integers(0, k, (n, s))  # (n, s)
    slots = np.stack([keys, np.take_along_axis(values_of, keys, axis=1)], axis=2)  # (n, s, 2)
    noisy = rng.random((n, s)) < config.noise
    noisy[np.arange(n), rng.integers(0, s, n)] = False  # at least one pair per sequence
    noise = 1 + k + v + rng.integers(0, config.num_noise, (n, s, 2))
    slots = np.where(noisy[..., None], noise, slots)
    pair_slots = np.where(~noisy, rng.random((n, s)), -1.0).argmax(axis=1)  # a random pair
    return encode_noisy_recall(slots, pair_slots, values_of).astype(np.int64)


def make_noisy_recall_data(config: NoisyRecallConfig, seed: int) -> TaskData:
    """Slots of key-value pairs and noise, then a key shown before; scored on its value.

    Example (2 keys: ids 1-2; 2 values: 3-4; noise ids 5-6; 3 slots): the pair (1, 4), a noisy
    slot (6, 5), the pair (2, 3); the query asks the key of slot 0:

    >>> values_of = [[0, 4, 3]]  # key 1 -> 4, key 2 -> 3 (index 0 unused)
    >>> rows = encode_noisy_recall([[[1, 4], [6, 5], [2, 3]]], [0], values_of)
    >>> rows.tolist()  # k v | noise noise | k v | q=1 4
    [[1, 4, 6, 5, 2, 3, 1, 4]]
    >>> suffix_split(rows, answer_len=1).targets.tolist()  # predicts 4 at the query
    [[-100, -100, -100, -100, -100, -100, 4]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(lambda n: _sample(rng, n, config), config.n_train, config.n_test)
    return TaskData(suffix_split(train, 1), suffix_split(test, 1), config.vocab_size)


def context_value_guess(data: TaskData, config: NoisyRecallConfig) -> float:
    """Chance for noisy recall: answering one of the values the sequence shows, at random (a
    model without a key-to-value circuit can still learn that), or 1 / V where higher."""
    inputs, targets = data.test.inputs, data.test.targets  # (N, T)
    answer = targets.max(dim=1).values  # (N,): the one scored token of each row
    first, last = config.num_keys + 1, config.num_keys + config.num_values
    shown = (inputs >= first) & (inputs <= last)  # (N, T)
    hits = (shown & (inputs == answer[:, None])).sum(1) / shown.sum(1).clamp(min=1)  # (N,)
    return max(float(hits.mean()), 1 / config.num_values)


register(
    TaskSpec(
        name="noisy-recall",
        config_cls=NoisyRecallConfig,
        make_data=make_noisy_recall_data,
        summary="key-value pairs among noise tokens, then a key again: emit its value",
        chance=context_value_guess,
        presets={
            "tiny": RECALL_TINY,
            "small": {
                "task.num_keys": 32,
                "task.num_values": 32,
                "task.num_noise": 16,
                "task.num_slots": 64,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses it: MAD's setting (vocabulary 32 with 16 noise ids,
            # 128 tokens, 40 % noise) at a width its attention baselines solve.
            "paper": {
                "task.num_keys": 8,
                "task.num_values": 8,
                "task.num_noise": 15,
                "task.num_slots": 63,
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=5e-4, steps=20000, eval_every=1000),
            },
        },
    )
)
