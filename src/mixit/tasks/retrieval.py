"""Needle in a haystack, or associative recall (paper appendix C.1).

A sequence lists m ~ U{1..max_pairs} key-value pairs, then repeats one of the keys; the model
must emit that key's value. Keys come from the upper half of the vocabulary {V/2..V-1} and
values from the lower half {1..V/2-1} (0 is PAD). Keys are distinct within a sequence: the
paper draws them iid, but a repeated key with two different values would make the answer
ambiguous. Sequences are left-padded to 2 * max_pairs + 1 tokens, so the query is always last.

The authors' streams (``task_condattendstream.py`` 22-33) lay the same task out differently,
and three options rebuild their layout (``model.construction=authors`` sets all three):
``task.padding=right`` (pairs, query and answer first, then padding, so the query sits at a
different position in each row), ``task.key_pool=max-pairs`` (the keys of every sequence come
from the same max_pairs ids, V/2..V/2+max_pairs-1) and ``task.query_ids=separate`` (the query
is its own token, its key's id plus the number of keys, instead of a repeat of the key).

Test sequences are distinct from training ones; at small vocabularies this removes most
single-pair test sequences (there are only (V/2) * (V/2 - 1) of them), so m = 1 is then
under-represented in the test set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mixit.common.errors import UsageError
from mixit.tasks.base import (
    PADDINGS,
    TaskData,
    TaskSpec,
    check_choice,
    check_positive,
    constant_answer_accuracy,
    model_size,
    register,
    schedule,
)
from mixit.tasks.rows import last_token_split, move_padding_right, sample_disjoint, suffix_split

PAD = 0
KEY_POOLS = ("upper-half", "max-pairs")
QUERY_IDS = ("key", "separate")


@dataclass(frozen=True)
class RetrievalConfig:
    vocab_size: int = 256  # V: values are tokens 1..V/2-1, keys V/2..V-1
    max_pairs: int = 30  # m_max: a sequence holds m ~ U{1..m_max} key-value pairs
    n_train: int = 40_000  # training sequences
    n_test: int = 4_000  # test sequences, none of them among the training sequences
    padding: str = "left"  # left: the query is the last input | right: padding after the answer
    key_pool: str = "upper-half"  # upper-half: keys V/2..V-1 | max-pairs: V/2..V/2+max_pairs-1
    query_ids: str = "key"  # key: the query repeats its key | separate: key id + number of keys

    @property
    def n_keys(self) -> int:
        """How many key ids sequences draw their keys from."""
        if self.key_pool == "max-pairs":
            return self.max_pairs
        return self.vocab_size - self.vocab_size // 2

    def validate(self) -> None:
        check_positive(self, "vocab_size", "max_pairs", "n_train", "n_test")
        check_choice(self, "padding", PADDINGS)
        check_choice(self, "key_pool", KEY_POOLS)
        check_choice(self, "query_ids", QUERY_IDS)
        upper_half = self.vocab_size - self.vocab_size // 2
        if self.vocab_size < 4 or self.max_pairs > upper_half:
            raise UsageError(
                f"task.max_pairs={self.max_pairs} needs that many distinct keys, but "
                f"task.vocab_size={self.vocab_size} has {upper_half} (and needs >= 4 tokens)"
            )
        if self.query_ids == "separate" and 2 * self.n_keys > upper_half:
            raise UsageError(
                f"task.query_ids=separate needs {2 * self.n_keys} ids above V/2 for "
                f"{self.n_keys} keys and their queries; task.vocab_size={self.vocab_size} has "
                f"{upper_half} (use task.key_pool=max-pairs or a larger vocabulary)"
            )


def value_positions(inputs: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """(N, T) True where ``inputs`` holds a value token (1..V/2-1): the positions whose previous
    token is their key, where an induction circuit needs a previous-token head."""
    return (inputs > PAD) & (inputs < vocab_size // 2)


def context_value_guess(data: TaskData, config: RetrievalConfig) -> float:
    """Chance for retrieval: the test accuracy of answering a value drawn at random from the
    sequence's own values, what a model without an induction circuit can still learn (about
    H(m_max) / m_max with m ~ U{1..m_max}), or the most frequent answer where that is higher."""
    inputs, targets = data.test.inputs, data.test.targets  # (N, T)
    answer = targets.max(dim=1).values  # (N,): the one scored token of each row
    values = value_positions(inputs, config.vocab_size)  # (N, T)
    hits = (values & (inputs == answer[:, None])).sum(1)  # (N,)
    guess = float((hits / values.sum(1).clamp(min=1)).mean())
    return max(guess, constant_answer_accuracy(data))


def encode_retrieval(
    keys: np.ndarray, values: np.ndarray, query: np.ndarray, query_offset: int = 0
) -> np.ndarray:
    """Token sequences (N, 2M + 2): k1 v1 ... kM vM, the query, then the query's value.

    ``keys`` and ``values`` (N, M) hold PAD in unused (leading) slots; ``query`` (N,) must match
    exactly one key of its row, and is written as its key's id plus ``query_offset``.
    """
    keys, values = np.asarray(keys), np.asarray(values)
    query = np.asarray(query)[:, None]  # (N, 1)
    match = (keys == query) & (keys != PAD)  # (N, M)
    if not (match.sum(axis=1) == 1).all():
        raise ValueError("every query must match exactly one key of its sequence")
    answer = np.take_along_axis(values, match.argmax(axis=1)[:, None], axis=1)  # (N, 1)
    pairs = np.stack([keys, values], axis=2).reshape(len(keys), -1)  # (N, 2M) k1 v1 k2 v2 ...
    return np.concatenate([pairs, query + query_offset, answer], axis=1).astype(np.int64)


def _sample(rng: np.random.Generator, n: int, config: RetrievalConfig) -> np.ndarray:
    """``n`` random sequences (n, 2 * max_pairs + 2), pairs in the last m of max_pairs slots."""
    first_key, slots = config.vocab_size // 2, config.max_pairs
    # Distinct keys per row: the max_pairs smallest of iid uniforms, in the order of their draws.
    draws = rng.random((n, config.n_keys))  # (n, number of keys)
    chosen = np.argpartition(draws, slots - 1, axis=1)[:, :slots]  # (n, slots), unordered
    order = np.argsort(np.take_along_axis(draws, chosen, axis=1), axis=1)
    keys = first_key + np.take_along_axis(chosen, order, axis=1)  # (n, slots)
    values = rng.integers(1, first_key, size=(n, slots))
    m = rng.integers(1, slots + 1, size=n)  # (n,) pairs in each sequence
    used = np.arange(slots) >= (slots - m)[:, None]  # (n, slots): left padding
    query_slot = slots - m + rng.integers(0, m)  # (n,)
    query = keys[np.arange(n), query_slot]
    offset = config.n_keys if config.query_ids == "separate" else 0
    rows = encode_retrieval(np.where(used, keys, PAD), np.where(used, values, PAD), query, offset)
    return move_padding_right(rows, PAD) if config.padding == "right" else rows


def make_retrieval_data(config: RetrievalConfig, seed: int) -> TaskData:
    """Key-value pairs then a query key; scored on the query's value, predicted at the query.

    Example (vocab_size=16, so keys 8..15 and values 1..7; max_pairs=3): the pairs (12, 5) and
    (9, 3), query 12, answer 5. Token ids are the symbols themselves; 0 pads the missing pair:

    >>> seqs = encode_retrieval(keys=[[0, 12, 9]], values=[[0, 5, 3]], query=[12])
    >>> split = suffix_split(seqs, answer_len=1)
    >>> split.inputs.tolist()  # _ _ k=12 v=5 k=9 v=3 q=12
    [[0, 0, 12, 5, 9, 3, 12]]
    >>> split.targets.tolist()  # predicts 5 at the query
    [[-100, -100, -100, -100, -100, -100, 5]]

    The authors' layout (``task.padding=right``, ``task.key_pool=max-pairs``,
    ``task.query_ids=separate``) with the same pairs: keys come from 8..10, so take keys 10 and
    8; the query of key 10 is 10 + 3 = 13, and the answer is read where the query is:

    >>> seqs = move_padding_right(encode_retrieval([[0, 10, 8]], [[0, 5, 3]], [10], 3))
    >>> split = last_token_split(seqs)
    >>> split.inputs.tolist()  # k=10 v=5 k=8 v=3 q=13 _ _
    [[10, 5, 8, 3, 13, 0, 0]]
    >>> split.targets.tolist()  # predicts 5 at the query
    [[-100, -100, -100, -100, 5, -100, -100]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(lambda n: _sample(rng, n, config), config.n_train, config.n_test)
    to_split = last_token_split if config.padding == "right" else lambda rows: suffix_split(rows, 1)
    return TaskData(to_split(train), to_split(test), config.vocab_size)


# ``--axis default`` and Figure 2 (``reproduce figure2``): the largest number of pairs, by
# preset. The tiny preset has 8 pairs; the paper's x axis reaches 30 (Table 1 uses
# m_max = 30). The axis starts at 3: under the authors' layout (task.key_pool=max-pairs)
# m_max = 2 leaves two keys, and tiny's and small's vocabularies then hold too few distinct
# rows for a test set that training never saw.
FIGURE2_PAIRS = {"tiny": (3, 4, 8), "small": (3, 4, 8), "paper": (5, 10, 20, 30)}


register(
    TaskSpec(
        name="retrieval",
        axis="task.max_pairs",
        axis_values=FIGURE2_PAIRS,
        config_cls=RetrievalConfig,
        make_data=make_retrieval_data,
        harder_with={"task.max_pairs": "more pairs", "task.vocab_size": "a larger vocabulary"},
        summary="key-value pairs then a query key: emit the value stored with that key",
        chance=context_value_guess,
        chance_means="naming one of the values in the context",
        authors_settings={
            "task.padding": "right",
            "task.key_pool": "max-pairs",
            "task.query_ids": "separate",
        },
        presets={
            # Small enough for a CPU, large enough that only learned attention solves it
            # (accuracies per model in docs/presets.md).
            "tiny": {
                "task.vocab_size": 64,
                "task.max_pairs": 8,
                **model_size(n_layer=2, n_embd=64, n_head=2),
                "model.mixing_scale": "sequence",
                "train.batch_size": 128,
                "train.lr": 2e-3,
                # A ceiling, not a budget: a run that solves the task stops at 0.99, and a
                # slow seed still gets there (docs/presets.md).
                "train.steps": 2400,
                "train.stop_at": 0.99,
                "train.eval_every": 400,
            },
            # 12 pairs: as many as this width learns in a CPU budget (docs/presets.md).
            "small": {
                "task.vocab_size": 128,
                "task.max_pairs": 12,
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # Appendix C.1 data; width 1024, 4 heads, 2 layers (C.2, Figure 2) and Table 9's
            # learning rate and batch; the paper gives no step count.
            "paper": {
                "model.construction": "authors",
                "task.vocab_size": 256,
                "task.max_pairs": 30,
                "task.n_train": 40_000,
                "task.n_test": 4_000,
                **model_size(n_layer=2, n_embd=1024, n_head=4),
                "train.batch_size": 1024,
                "train.lr": 1e-4,
                "train.steps": 10_000,
            },
        },
    )
)
