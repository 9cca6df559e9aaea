"""Multi-query associative recall (MQAR), as Zoology defines it (Arora et al., 2023;
``HazyResearch/zoology``, ``zoology/data/multiquery_ar.py`` at d88d6f5).

A sequence first lists ``num_pairs`` key-value pairs, then asks every key once more, each at
an even position of the rest of the sequence; the model must predict the key's value at the
key. The slot after a query holds no answer: like every other position of the query region
that is not a query, it holds a random token (``random_non_queries``), so no answer is ever
shown and none can be found by elimination. Keys come from {1..V/2-1} and values from
{V/2..V-1}, each distinct within a sequence. The query positions follow Zoology's power law:
the gap g (in two-token slots after the pairs) has weight a * (g + 1) ** (a - 1), drawn without
replacement, so most queries come soon after the pairs and a few far from them.

Zoology scores accuracy per row, then averages the rows; every row holds ``num_pairs``
queries, so that equals the token accuracy mixit reports.

mixit's earlier layout stays as options, all off by default: a subset of the keys asked
(``num_queries``), the answer written after each query (``show_answers``, which lets later
queries be solved by elimination), uniform query positions (``power_a=1``), padding instead of
random tokens (``random_non_queries=false``) and values drawn with replacement
(``distinct_values=false``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.common.errors import UsageError
from mixit.tasks.base import (
    IGNORE_INDEX,
    RECALL_TINY,
    TaskData,
    TaskSpec,
    check_positive,
    model_size,
    register,
    schedule,
)
from mixit.tasks.rows import sample_disjoint, side_by_side_split

PAD = 0


@dataclass(frozen=True)
class MQARConfig:
    # V: keys are tokens 1..V/2-1, values V/2..V-1. Zoology asserts V > seq_len (and an even
    # seq_len); the presets keep to it, other settings are the user's choice.
    vocab_size: int = 128
    num_pairs: int = 8  # key-value pairs listed first (Zoology's num_kv_pairs)
    seq_len: int = 64  # tokens per sequence: 2 x num_pairs of pairs, then the query region
    power_a: float = 0.01  # the query gaps' power law (Zoology's power_a); 1.0: uniform
    random_non_queries: bool = True  # a random token wherever the query region asks nothing
    num_queries: int = 0  # keys asked again: 0 for all of them (Zoology), else a random subset
    show_answers: bool = False  # write each query's value after it (mixit's earlier layout)
    distinct_values: bool = True  # values distinct within a sequence (Zoology)
    n_train: int = 20_000
    n_test: int = 1_000

    def validate(self) -> None:
        check_positive(self, "vocab_size", "num_pairs", "seq_len", "n_train", "n_test")
        if not 0 < self.power_a <= 1:
            raise UsageError(f"task.power_a={self.power_a} must be in (0, 1]; 1 is uniform")
        if self.num_pairs >= self.vocab_size // 2:
            raise UsageError(
                f"task.num_pairs={self.num_pairs} needs that many distinct keys, but "
                f"task.vocab_size={self.vocab_size} has {self.vocab_size // 2 - 1}"
            )
        if not 0 <= self.num_queries <= self.num_pairs:
            raise UsageError(
                f"task.num_queries={self.num_queries} must be 0 (every key) or at most "
                f"task.num_pairs={self.num_pairs}"
            )
        if self.queries > (self.seq_len - 2 * self.num_pairs) // 2:
            raise UsageError(
                f"task.seq_len={self.seq_len} leaves {(self.seq_len - 2 * self.num_pairs) // 2} "
                f"two-token slots after the pairs for {self.queries} queries"
            )

    @property
    def queries(self) -> int:
        return self.num_queries or self.num_pairs


def encode_mqar(
    keys: np.ndarray,
    values: np.ndarray,
    queried: np.ndarray,
    slots: np.ndarray,
    filler: np.ndarray,
    show_answers: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (N, T) and targets (N, T): the pairs k1 v1 ... kM vM, then the key of pair
    ``queried[:, q]`` at two-token slot ``slots[:, q]`` of the rest, with ``filler`` (N, T)
    everywhere else after the pairs (or the query's value in the slot's second token, with
    ``show_answers``). The target at each query is its value; IGNORE_INDEX elsewhere."""
    keys, values = np.asarray(keys), np.asarray(values)  # (N, M)
    queried, slots = np.asarray(queried), np.asarray(slots)  # (N, Q)
    n, m = keys.shape
    inputs = np.array(filler, dtype=np.int64)  # (N, T)
    inputs[:, : 2 * m] = np.stack([keys, values], axis=2).reshape(n, 2 * m)
    at = 2 * m + 2 * slots  # (N, Q): where each query's key goes
    index = np.arange(n)[:, None]
    answers = np.take_along_axis(values, queried, axis=1)  # (N, Q)
    inputs[index, at] = np.take_along_axis(keys, queried, axis=1)
    if show_answers:
        inputs[index, at + 1] = answers
    targets = np.full(inputs.shape, IGNORE_INDEX, dtype=np.int64)  # (N, T)
    targets[index, at] = answers
    return inputs, targets


def gap_weights(space: int, power_a: float) -> np.ndarray:
    """Zoology's law for a query's gap g in 0..space-1 (two-token slots after the pairs):
    proportional to a * (g + 1) ** (a - 1); uniform at a = 1."""
    weights = power_a * np.arange(1, space + 1) ** (power_a - 1)
    return weights / weights.sum()


def _sample(rng: np.random.Generator, n: int, config: MQARConfig) -> np.ndarray:
    """``n`` random rows, inputs and targets side by side (n, 2T), so that drawing distinct
    rows compares both."""
    m, q, vocab = config.num_pairs, config.queries, config.vocab_size
    half = vocab // 2
    keys = 1 + np.argsort(rng.random((n, half - 1)), axis=1)[:, :m]  # (n, m), distinct
    if config.distinct_values:
        values = half + np.argsort(rng.random((n, vocab - half)), axis=1)[:, :m]
    else:
        values = rng.integers(half, vocab, size=(n, m))
    queried = np.argsort(rng.random((n, m)), axis=1)[:, :q]  # (n, q) distinct pairs
    space = (config.seq_len - 2 * m) // 2
    # Drawing without replacement in proportion to the weights: the q largest of
    # log(weight) + Gumbel noise (the Gumbel-top-k identity).
    noisy = np.log(gap_weights(space, config.power_a)) + rng.gumbel(size=(n, space))
    slots = np.argsort(-noisy, axis=1)[:, :q]  # (n, q)
    if config.random_non_queries:
        filler = rng.integers(0, vocab, size=(n, config.seq_len))
    else:
        filler = np.full((n, config.seq_len), PAD)
    inputs, targets = encode_mqar(keys, values, queried, slots, filler, config.show_answers)
    return np.concatenate([inputs, targets], axis=1)


def make_mqar_data(config: MQARConfig, seed: int) -> TaskData:
    """Pairs, then every key asked again at a power-law gap; scored on each query's value,
    predicted at the key.

    Example (vocab_size=16: keys 1..7, values 8..15; 2 pairs, seq_len 10, filler tokens shown
    as 0): pairs (3, 12) and (5, 9); pair 1 (key 5) queried in slot 0, pair 0 (key 3) in slot 2:

    >>> inputs, targets = encode_mqar([[3, 5]], [[12, 9]], [[1, 0]], [[0, 2]], np.zeros((1, 10)))
    >>> inputs.tolist()  # k v k v | q=5 _ _ _ q=3 _
    [[3, 12, 5, 9, 5, 0, 0, 0, 3, 0]]
    >>> targets.tolist()  # 9 at the query 5, 12 at the query 3; the answers are never shown
    [[-100, -100, -100, -100, 9, -100, -100, -100, 12, -100]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(lambda n: _sample(rng, n, config), config.n_train, config.n_test)
    return TaskData(side_by_side_split(train), side_by_side_split(test), config.vocab_size)


def context_value_guess(data: TaskData, config: MQARConfig) -> float:
    """Chance for MQAR: per query, the share of the sequence's listed values equal to the
    answer (1 / num_pairs with distinct values), what a model that cannot bind keys to values
    reaches by naming one of them; with ``show_answers``, also never naming a value already
    shown as an answer, which the layout makes possible (``elimination_guess``)."""
    if config.show_answers:
        return elimination_guess(data, config)
    inputs, targets = data.test.inputs, data.test.targets  # (N, T)
    listed = inputs[:, 1 : 2 * config.num_pairs : 2]  # (N, M): the pairs' values
    scored = targets >= 0  # (N, T)
    hits = (listed[:, None, :] == targets[:, :, None]).float().mean(-1)  # (N, T)
    return float(hits[scored].mean())


def elimination_guess(data: TaskData, config: MQARConfig) -> float:
    """The expected accuracy of guessing uniformly among the listed values not yet shown as
    an earlier query's answer (``show_answers`` writes each answer after its query)."""
    inputs, targets = data.test.inputs, data.test.targets  # (N, T)
    m = config.num_pairs
    listed = inputs[:, 1 : 2 * m : 2]  # (N, M)
    total, count = 0.0, 0
    for row_listed, row_targets in zip(listed.tolist(), targets.tolist(), strict=True):
        remaining = list(row_listed)
        for answer in (t for t in row_targets if t != IGNORE_INDEX):
            total += remaining.count(answer) / len(remaining)
            count += 1
            remaining.remove(answer)
    return total / max(count, 1)


register(
    TaskSpec(
        name="mqar",
        axis="task.num_pairs",
        # Zoology's sweep of pairs at a fixed length: at tiny's 64 tokens, 16 pairs and their
        # 16 queries fill the sequence, so the axis runs from a quarter to twice the preset's
        # 8 (the factors' 4x would not fit).
        axis_values={"tiny": (2, 4, 8, 16)},
        config_cls=MQARConfig,
        make_data=make_mqar_data,
        harder_with={
            "task.num_pairs": "more key-value pairs",
            "task.seq_len": "longer sequences",
            "task.vocab_size": "a larger vocabulary",
        },
        summary="multi-query associative recall (Zoology's): key-value pairs, then every key "
        "asked again at a power-law gap",
        metric="test_token_accuracy",
        chance=context_value_guess,
        chance_means="naming one of the values listed before the query",
        presets={
            # Zoology's base data (64 tokens, 8 pairs) with a vocabulary of 128 for tiny's
            # embedding table.
            "tiny": RECALL_TINY,
            "small": {
                "task.vocab_size": 512,
                "task.num_pairs": 32,
                "task.seq_len": 256,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses MQAR: this is Zoology's setting (vocabulary 8,192,
            # 512 tokens, 64 pairs) at a width its attention baselines solve.
            "paper": {
                "task.vocab_size": 8192,
                "task.num_pairs": 64,
                "task.seq_len": 512,
                **model_size(n_layer=2, n_embd=256, n_head=4),
                **schedule(batch_size=256, lr=1e-3, steps=20000, eval_every=1000),
            },
        },
    )
)
