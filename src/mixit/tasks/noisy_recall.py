"""Noisy in-context recall, as MAD defines it (Poli et al., 2024; ``athms/mad-lab``,
``mad/data/instances.py`` at 0f49a45, ``configs/tasks/noisy-in-context-recall.yml``).

A sequence is ``seq_len / 2`` two-token slots. Each slot but the last is, with probability
``frac_noise``, two noise tokens, else a key and its value: keys are drawn with repetition, and
a key that comes back keeps the value it was first shown with. The last slot asks one of the
keys shown again. Every key that comes back is a query (``multi_query``, MAD's default): the
model is scored on predicting its value at the key, from the second showing on. As MAD does,
training fits every next token and only the test scores the queries alone
(``train_every_token``). Ids, as MAD numbers them: keys 0..K-1 and values K..2K-1, where
2K = vocab_size - noise_vocab_size, then the noise tokens.

With ``multi_query=false``, as in MAD, only the last slot is asked, after a copy token (the
last id of the vocabulary, which then holds one key and one value fewer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.common.errors import UsageError
from mixit.tasks.base import (
    IGNORE_INDEX,
    RECALL_TINY,
    KeyValueIds,
    TaskData,
    TaskSpec,
    check_positive,
    model_size,
    most_frequent_shown_guess,
    register,
    schedule,
)
from mixit.tasks.rows import sample_disjoint, side_by_side_split


@dataclass(frozen=True)
class NoisyRecallConfig(KeyValueIds):
    vocab_size: int = 32  # keys, values and noise ids (and the copy id without multi_query)
    noise_vocab_size: int = 16  # noise ids, the last of the vocabulary's content
    seq_len: int = 128  # tokens, slots of two; the model reads seq_len - 1
    frac_noise: float = 0.2  # the chance that a slot is noise
    multi_query: bool = True  # every key that comes back is asked; else the last slot only
    train_every_token: bool = True  # train on every next token, score only the queries
    n_train: int = 12_800
    n_test: int = 1_280

    @property
    def content_ids(self) -> int:
        """Ids for keys and values: the vocabulary less the noise ids and the copy id."""
        return self.vocab_size - self.noise_vocab_size - (0 if self.multi_query else 1)

    def validate(self) -> None:
        check_positive(self, "vocab_size", "noise_vocab_size", "seq_len", "n_train", "n_test")
        if not 0 <= self.frac_noise < 1:
            raise UsageError(f"task.frac_noise={self.frac_noise} must be in [0, 1)")
        if self.seq_len % 2 or self.seq_len < 4:
            raise UsageError(f"task.seq_len={self.seq_len} must be even and at least 4")
        if self.num_keys < 1:
            raise UsageError(
                f"task.vocab_size={self.vocab_size} leaves no key and value ids beside "
                f"task.noise_vocab_size={self.noise_vocab_size}"
            )


def encode_noisy_recall(
    slots: np.ndarray, is_noise: np.ndarray, final: np.ndarray, config: NoisyRecallConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (N, T) and test targets (N, T), T = seq_len - 1 (+1 with the copy token): the
    slots (N, S, 2) as they are, then the copy token without ``multi_query``, then the last
    slot ``final`` (N, 2), a key shown before and its value. A pair slot's value is its
    target at its key when the key was shown in an earlier pair (``multi_query``); the last
    slot's value always is."""
    slots, is_noise = np.asarray(slots), np.asarray(is_noise)
    n, s, _ = slots.shape
    keys = np.where(is_noise, -1, slots[..., 0])  # (N, S): -1 at noise
    one_hot = keys[..., None] == np.arange(config.num_keys)  # (N, S, K)
    shown_before = (np.cumsum(one_hot, axis=1) - one_hot).astype(bool)  # (N, S, K)
    asked = (one_hot & shown_before).any(-1) & config.multi_query  # (N, S)
    final = np.asarray(final)  # (N, 2)
    copy = np.full((n, 0 if config.multi_query else 1), config.vocab_size - 1)
    rows = np.concatenate([slots.reshape(n, 2 * s), copy, final], axis=1)  # (N, T + 1)
    targets = np.full(rows.shape, IGNORE_INDEX, dtype=np.int64)  # at the position predicted
    targets[:, 1 : 2 * s : 2] = np.where(asked, slots[..., 1], IGNORE_INDEX)
    targets[:, -1] = final[:, 1]
    return rows[:, :-1], targets[:, 1:]


def _sample(rng: np.random.Generator, n: int, config: NoisyRecallConfig) -> np.ndarray:
    """``n`` random rows, inputs and test targets side by side (n, 2T)."""
    k = config.num_keys
    s = config.seq_len // 2 - 1  # the slots before the last
    value_of = k + rng.integers(0, config.num_values, (n, k))  # (n, K): each key's value
    keys = rng.integers(0, k, (n, s))  # (n, s)
    pairs = np.stack([keys, np.take_along_axis(value_of, keys, axis=1)], axis=2)  # (n, s, 2)
    is_noise = rng.random((n, s)) < config.frac_noise
    # As MAD: one slot index of s + 1 is kept a pair (the last, asked anyway, when drawn).
    kept = rng.integers(0, s + 1, n)
    is_noise[(kept < s).nonzero()[0], kept[kept < s]] = False
    is_noise[~(~is_noise).any(1), 0] = False  # a row of noise alone has nothing to ask
    noise = config.content_ids + rng.integers(0, config.noise_vocab_size, (n, s, 2))
    slots = np.where(is_noise[..., None], noise, pairs)
    # The last slot asks one of the distinct keys shown, uniformly, as MAD's choice does.
    shown = ((keys[..., None] == np.arange(k)) & ~is_noise[..., None]).any(1)  # (n, K)
    probe = np.where(shown, rng.random((n, k)), -1.0).argmax(axis=1)  # (n,)
    final = np.stack([probe, value_of[np.arange(n), probe]], axis=1)  # (n, 2)
    inputs, targets = encode_noisy_recall(slots, is_noise, final, config)
    return np.concatenate([inputs, targets], axis=1)


def make_noisy_recall_data(config: NoisyRecallConfig, seed: int) -> TaskData:
    """Slots of key-value pairs and noise, then a key shown before; every key shown again is
    scored on its value (``multi_query``).

    Example (vocab_size=8, noise_vocab_size=4: keys 0-1, values 2-3, noise 4-7; seq_len 8):
    the pair (1, 3), a noise slot (6, 4), the pair (1, 3) again; the last slot asks key 1:

    >>> config = NoisyRecallConfig(vocab_size=8, noise_vocab_size=4, seq_len=8)
    >>> slots, noise = [[[1, 3], [6, 4], [1, 3]]], [[False, True, False]]
    >>> inputs, targets = encode_noisy_recall(slots, noise, [[1, 3]], config)
    >>> inputs.tolist()  # k v | noise noise | k v | q=1 (its value is the last token)
    [[1, 3, 6, 4, 1, 3, 1]]
    >>> targets.tolist()  # 3 at the second showing of key 1 and at the query
    [[-100, -100, -100, -100, 3, -100, 3]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(lambda n: _sample(rng, n, config), config.n_train, config.n_test)
    return TaskData(
        side_by_side_split(train),
        side_by_side_split(test),
        config.vocab_size,
        train_on_every_token=config.train_every_token,
    )


def most_frequent_value_guess(data: TaskData, config: NoisyRecallConfig) -> float:
    """Chance for noisy recall: naming, at each query, the value shown most often so far
    (``most_frequent_shown_guess``), at least 1 / V. It beats guessing uniformly among the
    values shown, because a value held by several keys, or by a frequent key, comes back more
    often."""
    k, values = config.num_keys, config.num_values
    return most_frequent_shown_guess(data.test, k, values, 1 / values)


register(
    TaskSpec(
        name="noisy-recall",
        axis="task.seq_len",
        config_cls=NoisyRecallConfig,
        make_data=make_noisy_recall_data,
        harder_with={
            "task.frac_noise": "more noise",
            "task.seq_len": "longer sequences",
            "task.vocab_size": "a larger vocabulary",
        },
        summary="MAD's noisy in-context recall: key-value pairs among noise, every key shown "
        "again asked for its value",
        metric="test_token_accuracy",
        chance=most_frequent_value_guess,
        chance_means="naming at each query the value shown most often so far",
        reports_macro_accuracy=True,
        presets={
            # MAD's base data (vocabulary 32 with 16 noise ids, 128 tokens, 20 % noise).
            "tiny": RECALL_TINY,
            "small": {
                "task.vocab_size": 80,
                "task.seq_len": 256,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses it: MAD's base setting at MAD's width (128) and rate.
            "paper": {
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=5e-4, steps=20000, eval_every=1000),
            },
        },
    )
)
