"""Selective copying, as MAD defines it (Poli et al., 2024, after Gu and Dao's Mamba;
``athms/mad-lab``, ``mad/data/instances.py`` at 0f49a45, ``configs/tasks/selective-copying.yml``).

``num_tokens_to_copy`` content tokens, drawn with repetition, sit among blanks; after a copy
token the model must write them out in order, one per position. The positions after the copy
token hold blanks as inputs (not the tokens already copied), so each answer has to be found by
its rank among the content tokens: the model must select by content and count. As MAD inserts
them, every blank goes before one of the content tokens, chosen uniformly: the stretches of
blanks between tokens vary, and the last content token always sits just before the copy token.
Ids, as MAD numbers them: content tokens 0..V-3, the blank V-2, the copy token V-1.

mixit's earlier layout stays as an option, off by default: the content tokens at uniformly
random distinct positions of the stretch (``uniform_positions``), blanks after the last one
included.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

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


@dataclass(frozen=True)
class SelectiveCopyingConfig:
    vocab_size: int = 16  # V: content tokens 0..V-3, blank V-2, copy token V-1
    seq_len: int = 256  # tokens: the content and its blanks, the copy token, the answers
    num_tokens_to_copy: int = 16  # K content tokens
    uniform_positions: bool = False  # the tokens at uniform positions (mixit's earlier layout)
    n_train: int = 12_800
    n_test: int = 1_280

    @property
    def blank(self) -> int:
        return self.vocab_size - 2

    @property
    def copy(self) -> int:
        return self.vocab_size - 1

    @property
    def context_len(self) -> int:
        """The stretch before the copy token: the content tokens and their blanks."""
        return self.seq_len - self.num_tokens_to_copy - 1

    def validate(self) -> None:
        check_positive(self, "vocab_size", "seq_len", "num_tokens_to_copy", "n_train", "n_test")
        if self.vocab_size < 3 or self.seq_len <= 2 * self.num_tokens_to_copy + 1:
            raise UsageError(
                f"task.seq_len={self.seq_len} must exceed 2 x task.num_tokens_to_copy + 1 "
                f"({2 * self.num_tokens_to_copy + 1}) as MAD asserts, and task.vocab_size="
                f"{self.vocab_size} must leave content ids beside the blank and the copy token"
            )


def encode_selective_copying(
    tokens: np.ndarray, where: np.ndarray, config: SelectiveCopyingConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (N, seq_len) and targets (N, seq_len): the content ``tokens`` (N, K) at
    positions ``where`` (N, K, increasing) of a stretch of blanks, the copy token, then K
    blanks scored on the tokens in order (no shift: the copy token and the blanks prompt)."""
    tokens, where = np.asarray(tokens), np.asarray(where)
    n, k = tokens.shape
    stretch = np.full((n, config.context_len), config.blank, dtype=np.int64)
    np.put_along_axis(stretch, where, tokens, axis=1)
    copy = np.full((n, 1), config.copy)
    answers = np.full((n, k), config.blank)
    inputs = np.concatenate([stretch, copy, answers], axis=1)  # (N, seq_len)
    targets = np.full(inputs.shape, IGNORE_INDEX, dtype=np.int64)
    targets[:, -k:] = tokens
    return inputs, targets


def _sample(rng: np.random.Generator, n: int, config: SelectiveCopyingConfig) -> np.ndarray:
    """``n`` random rows, inputs and targets side by side (n, 2 seq_len)."""
    k, c = config.num_tokens_to_copy, config.context_len
    tokens = rng.integers(0, config.vocab_size - 2, (n, k))
    if config.uniform_positions:
        where = np.sort(np.argsort(rng.random((n, c)), axis=1)[:, :k], axis=1)
    else:
        # Each blank goes before a content token chosen uniformly (MAD's np.insert at
        # randint(0, K)): token i sits after the blanks sent before tokens 0..i.
        before = rng.integers(0, k, (n, c - k))  # (n, blanks)
        gaps = np.zeros((n, k), dtype=np.int64)
        np.add.at(gaps, (np.arange(n)[:, None], before), 1)  # (n, k): blanks before each
        where = np.cumsum(gaps, axis=1) + np.arange(k)  # (n, k)
    inputs, targets = encode_selective_copying(tokens, where, config)
    return np.concatenate([inputs, targets], axis=1)


def make_selective_copying_data(config: SelectiveCopyingConfig, seed: int) -> TaskData:
    """Content tokens among blanks, a copy token, then the tokens in order, each predicted at
    a blank.

    Example (vocab_size 8: content 0..5, blank 6, copy 7; 3 tokens, seq_len 10): 5, 3 and 0
    at positions 1, 2 and 5 of the 6-token stretch (MAD's layout ends it with a token):

    >>> config = SelectiveCopyingConfig(vocab_size=8, seq_len=10, num_tokens_to_copy=3)
    >>> inputs, targets = encode_selective_copying([[5, 3, 0]], [[1, 2, 5]], config)
    >>> inputs.tolist()  # _ 5 3 _ _ 0 | copy _ _ _
    [[6, 5, 3, 6, 6, 0, 7, 6, 6, 6]]
    >>> targets.tolist()  # scored on 5, 3, 0 at the blanks after the copy token
    [[-100, -100, -100, -100, -100, -100, -100, 5, 3, 0]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(lambda n: _sample(rng, n, config), config.n_train, config.n_test)
    return TaskData(side_by_side_split(train), side_by_side_split(test), config.vocab_size)


def most_frequent_token_guess(data: TaskData, config: SelectiveCopyingConfig) -> float:
    """Chance for selective copying: the accuracy of writing the row's most frequent content
    token at every answer (tokens repeat, so this beats a token at random), or 1 / (V - 2)
    where higher."""
    inputs, targets = data.test.inputs, data.test.targets  # (N, T)
    content = config.vocab_size - 2
    stretch = inputs[:, : config.context_len]  # (N, C)
    counts = torch.nn.functional.one_hot(stretch, config.vocab_size)[..., :content].sum(1)
    guess = counts.argmax(-1)  # (N,)
    answers = targets[:, -config.num_tokens_to_copy :]  # (N, K)
    hits = (answers == guess[:, None]).float().mean()
    return max(float(hits), 1 / content)


register(
    TaskSpec(
        name="selective-copying",
        axis="task.seq_len",
        config_cls=SelectiveCopyingConfig,
        make_data=make_selective_copying_data,
        harder_with={
            "task.num_tokens_to_copy": "more tokens to copy",
            "task.seq_len": "longer sequences",
            "task.vocab_size": "a larger vocabulary",
        },
        summary="MAD's selective copying: tokens among blanks, written out in order after a "
        "copy token",
        metric="test_token_accuracy",
        chance=most_frequent_token_guess,
        chance_means="writing the row's most frequent content token at every answer",
        reports_macro_accuracy=True,
        presets={
            # MAD's layout, shortened for a CPU: 8 tokens in 64 (MAD's base: 16 in 256).
            "tiny": {**RECALL_TINY, "task.seq_len": 64, "task.num_tokens_to_copy": 8},
            "small": {
                "task.seq_len": 128,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses it: MAD's base setting (vocabulary 16, 16 tokens,
            # 256 positions) at MAD's width and rate.
            "paper": {
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=5e-4, steps=20000, eval_every=1000),
            },
        },
    )
)
