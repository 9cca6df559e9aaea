"""k-hop induction heads, hop_k (Sanford, Hsu & Telgarsky 2024; paper appendix C.1).

For a sequence X, find(X, i) = max{j < i : X[j-1] == X[i]}: the position just after the last
earlier occurrence of X[i] (an induction head's lookup). hop_k(X) = X[find^k(len(X) - 1)],
k applications of find from the last position. For X = "adcada": find(5) = 4, X[4] = "d" is
the 1-hop answer; find(4) = 2, X[2] = "c" is the 2-hop answer.

When a chain reaches a symbol with no earlier occurrence, find is undefined and the answer is
the NONE token. Resampling those sequences instead would teach the model that every chain
resolves, and bias the data towards sequences whose chains are short.

The alphabet defaults to 4 symbols: every symbol then recurs about every 4 positions, so chains
of up to 16 hops mostly stay inside a sequence of 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from mixit.tasks.base import TaskData, TaskSpec, check_positive, model_size, register, schedule
from mixit.tasks.rows import sample_disjoint, suffix_split

SYMBOL0 = 1  # symbol s in [0, alphabet_size) is token SYMBOL0 + s (0 is PAD)
NO_ANSWER = -1  # hop_k_batch's answer where the chain runs off the start of the sequence
# The summary metric of k-hop's test accuracy at k hops: HOPS_METRIC + str(k).
HOPS_METRIC = "test_accuracy_hops_"


@dataclass(frozen=True)
class KHopConfig:
    seq_len: int = 100  # symbols per sequence (Sanford et al.; paper C.2)
    max_hops: int = 16  # k ~ U{1..max_hops} per sequence (paper C.2)
    alphabet_size: int = 4  # distinct symbols (see module doc)
    n_train: int = 100_000  # training sequences (paper C.2)
    n_test: int = 100  # test sequences, none of them among the training ones (paper C.2)

    def validate(self) -> None:
        check_positive(self, "seq_len", "max_hops", "alphabet_size", "n_train", "n_test")


def hop_k(seq: Sequence[Any], k: int) -> Any | None:
    """Reference hop_k at the last position: the answer symbol, or None if a hop finds nothing.

    >>> hop_k("adcada", 1), hop_k("adcada", 2)
    ('d', 'c')
    """
    i = len(seq) - 1
    for _ in range(k):
        i = max((j for j in range(1, i) if seq[j - 1] == seq[i]), default=None)
        if i is None:
            return None
    return seq[i]


def hop_k_batch(symbols: np.ndarray, hops: np.ndarray, alphabet_size: int) -> np.ndarray:
    """hop_k for each row of ``symbols`` (N, L) in [0, alphabet_size) with k = ``hops`` (N,).

    Returns the answer symbols (N,), NO_ANSWER where a hop finds no earlier occurrence.
    """
    n, length = symbols.shape
    rows = np.arange(n)
    # find (N, L): find(X, i) for every position, NO_ANSWER where undefined. last_seen holds,
    # per symbol, its last position <= i - 2, so that j = position + 1 < i.
    find = np.full((n, length), NO_ANSWER)
    last_seen = np.full((n, alphabet_size), NO_ANSWER)  # (N, alphabet_size)
    for i in range(length):
        if i >= 2:
            last_seen[rows, symbols[:, i - 2]] = i - 2
        previous = last_seen[rows, symbols[:, i]]  # (N,)
        find[:, i] = np.where(previous >= 0, previous + 1, NO_ANSWER)
    position = np.full(n, length - 1)
    for hop in range(int(hops.max(initial=0))):
        step = (hops > hop) & (position >= 0)
        position = np.where(step, find[rows, np.maximum(position, 0)], position)
    return np.where(position >= 0, symbols[rows, np.maximum(position, 0)], NO_ANSWER)


def encode_khop(
    symbols: np.ndarray, hops: np.ndarray, alphabet_size: int, max_hops: int
) -> np.ndarray:
    """Token sequences (N, L + 2): the token for k, the L symbols, then the hop_k answer.

    Symbols are tokens 1..A, k is token A + k (A + 1..A + max_hops) and NONE, the answer when a
    hop finds no earlier occurrence, is A + max_hops + 1.
    """
    symbols = np.asarray(symbols, dtype=np.int64)
    hops = np.asarray(hops, dtype=np.int64)
    answer = hop_k_batch(symbols, hops, alphabet_size)
    answer = np.where(answer == NO_ANSWER, alphabet_size + max_hops + 1, answer + SYMBOL0)
    hop_token = alphabet_size + hops
    return np.concatenate([hop_token[:, None], symbols + SYMBOL0, answer[:, None]], axis=1)


def accuracy_by_hops(
    correct: torch.Tensor, inputs: torch.Tensor, config: KHopConfig
) -> list[float | None]:
    """Exact-match accuracy for k = 1..max_hops (None for a k no row has), from each row's
    correctness (N,) and its inputs (N, T), whose first token is k's (``encode_khop``).

    >>> rows = torch.tensor(encode_khop([[0, 1, 0], [0, 1, 0], [1, 1, 1]], [1, 1, 2], 4, 3))
    >>> accuracy_by_hops(torch.tensor([True, False, True]), rows[:, :-1], KHopConfig(max_hops=3))
    [0.5, 1.0, None]
    """
    hops = inputs[:, 0].long() - config.alphabet_size  # (N,)
    return [
        correct[hops == k].float().mean().item() if bool((hops == k).any()) else None
        for k in range(1, config.max_hops + 1)
    ]


def hops_metrics(
    correct: torch.Tensor, inputs: torch.Tensor, config: KHopConfig
) -> dict[str, float]:
    """``test_accuracy_hops_K`` for each k some row has (``accuracy_by_hops``), in the summary.

    >>> rows = torch.tensor(encode_khop([[0, 1, 0], [0, 1, 0], [1, 1, 1]], [1, 1, 2], 4, 3))
    >>> hops_metrics(torch.tensor([True, False, True]), rows[:, :-1], KHopConfig(max_hops=3))
    {'test_accuracy_hops_1': 0.5, 'test_accuracy_hops_2': 1.0}
    """
    by_hops = accuracy_by_hops(correct, inputs, config)
    return {f"{HOPS_METRIC}{k}": v for k, v in enumerate(by_hops, start=1) if v is not None}


def make_khop_data(config: KHopConfig, seed: int) -> TaskData:
    """Random sequences with k ~ U{1..max_hops} up front; scored on hop_k at the last symbol.

    Example (the paper's): X = "adcada", k = 2, answer "c". With the defaults (alphabet 4,
    max_hops 16) a..d are tokens 1..4, k = 2 is token 4 + 2 = 6 and NONE would be 21:

    >>> seqs = encode_khop([[0, 3, 2, 0, 3, 0]], [2], alphabet_size=4, max_hops=16)
    >>> split = suffix_split(seqs, answer_len=1)
    >>> split.inputs.tolist()  # k=2 a d c a d a
    [[6, 1, 4, 3, 1, 4, 1]]
    >>> split.targets.tolist()  # predicts c at the last symbol
    [[-100, -100, -100, -100, -100, -100, 3]]
    """
    config.validate()
    rng = np.random.default_rng(seed)

    def sample(n: int) -> np.ndarray:
        symbols = rng.integers(0, config.alphabet_size, size=(n, config.seq_len))
        hops = rng.integers(1, config.max_hops + 1, size=n)
        return encode_khop(symbols, hops, config.alphabet_size, config.max_hops)

    train, test = sample_disjoint(sample, config.n_train, config.n_test)
    vocab_size = config.alphabet_size + config.max_hops + 2
    return TaskData(suffix_split(train, 1), suffix_split(test, 1), vocab_size)


register(
    TaskSpec(
        name="khop",
        axis="task.max_hops",
        config_cls=KHopConfig,
        make_data=make_khop_data,
        harder_with={"task.max_hops": "more hops", "task.seq_len": "longer sequences"},
        summary="k-hop induction heads: follow 'the token after the last occurrence' k times",
        row_metrics=hops_metrics,
        presets={
            # Two layers limit the hops a model can compose (accuracies in docs/presets.md).
            "tiny": {
                "task.seq_len": 32,
                "task.max_hops": 4,
                "task.n_test": 1000,
                **model_size(n_layer=2, n_embd=64, n_head=4),
                "model.mixing_scale": "sequence",
                **schedule(batch_size=64, lr=1e-3, steps=3000, eval_every=500),
            },
            "small": {
                "task.seq_len": 64,
                "task.max_hops": 8,
                "task.n_test": 1000,
                **model_size(n_layer=5, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=1e-3, steps=5000, eval_every=500),
            },
            # Appendix C.2 data and step count, Table 9 hyper-parameters.
            "paper": {
                "model.construction": "authors",
                "task.seq_len": 100,
                "task.max_hops": 16,
                "task.n_train": 100_000,
                "task.n_test": 100,
                **model_size(n_layer=5, n_embd=512, n_head=8),
                "train.batch_size": 128,
                "train.lr": 1e-4,
                "train.steps": 5000,
            },
        },
    )
)
