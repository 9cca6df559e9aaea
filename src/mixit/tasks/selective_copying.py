"""Selective copying (MAD, Poli et al. 2024; after Gu and Dao's Mamba).

``num_tokens`` content tokens sit at random positions of a ``context_len``-token stretch of
blanks; after a copy marker the model must write them out in order, one per position. The
positions after the marker hold blanks as inputs (not the tokens already copied), so each
answer has to be found by where it sat among the blanks: the model must select by content
and count. Ids: 0 is the blank, 1 the copy marker, content tokens are 2..V-1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mixit.errors import UsageError
from mixit.tasks.base import (
    IGNORE_INDEX,
    RECALL_TINY,
    Split,
    TaskData,
    TaskSpec,
    check_positive,
    model_size,
    register,
    sample_disjoint,
    schedule,
)

BLANK, COPY = 0, 1
FIRST_TOKEN = 2


@dataclass
class SelectiveCopyingConfig:
    vocab_size: int = 16  # V: content tokens 2..V-1
    num_tokens: int = 8  # tokens to copy
    context_len: int = 32  # the stretch the tokens are scattered in
    n_train: int = 20_000
    n_test: int = 1_000

    def validate(self) -> None:
        check_positive(self, "vocab_size", "num_tokens", "context_len", "n_train", "n_test")
        if self.vocab_size <= FIRST_TOKEN or self.num_tokens > self.context_len:
            raise UsageError(
                f"task.num_tokens={self.num_tokens} must fit task.context_len="
                f"{self.context_len}, and task.vocab_size={self.vocab_size} must leave content "
                "tokens after the blank (0) and the copy marker (1)"
            )


def encode_selective_copying(context: np.ndarray) -> np.ndarray:
    """Rows (N, C + 1 + K): the context (N, C) with its K content tokens among blanks, the
    copy marker, then the content tokens in order (the answers)."""
    context = np.asarray(context)
    kept = context != BLANK  # (N, C)
    count = kept.sum(axis=1)
    if not (count == count[0]).all():
        raise ValueError("every context must hold the same number of content tokens")
    tokens = context[kept].reshape(len(context), -1)  # (N, K) in order of position
    marker = np.full((len(context), 1), COPY)
    return np.concatenate([context, marker, tokens], axis=1).astype(np.int64)


def copying_split(rows: np.ndarray, num_tokens: int) -> Split:
    """Inputs with blanks where the answers go, scored there on the answers:
    inputs[t] predicts targets[t] (no shift: the marker and the blanks are the prompts)."""
    inputs = rows.copy()
    inputs[:, -num_tokens:] = BLANK
    targets = np.full(rows.shape, IGNORE_INDEX)
    targets[:, -num_tokens:] = rows[:, -num_tokens:]
    return Split(torch.as_tensor(inputs), torch.as_tensor(targets))


def _sample(rng: np.random.Generator, n: int, config: SelectiveCopyingConfig) -> np.ndarray:
    c, k = config.context_len, config.num_tokens
    where = np.sort(np.argsort(rng.random((n, c)), axis=1)[:, :k], axis=1)  # (n, k)
    context = np.full((n, c), BLANK, dtype=np.int64)
    np.put_along_axis(context, where, rng.integers(FIRST_TOKEN, config.vocab_size, (n, k)), 1)
    return encode_selective_copying(context)


def make_selective_copying_data(config: SelectiveCopyingConfig, seed: int) -> TaskData:
    """Scattered tokens, a copy marker, then the tokens in order, each predicted at a blank.

    Example (3 tokens in a 6-token context): 5, 3 and 7 at positions 1, 2 and 4:

    >>> rows = encode_selective_copying([[0, 5, 3, 0, 7, 0]])
    >>> rows.tolist()  # _ 5 3 _ 7 _ | copy 5 3 7
    [[0, 5, 3, 0, 7, 0, 1, 5, 3, 7]]
    >>> split = copying_split(rows, num_tokens=3)
    >>> split.inputs.tolist()  # the answers' places hold blanks
    [[0, 5, 3, 0, 7, 0, 1, 0, 0, 0]]
    >>> split.targets.tolist()  # scored on 5, 3, 7 there
    [[-100, -100, -100, -100, -100, -100, -100, 5, 3, 7]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(lambda n: _sample(rng, n, config), config.n_train, config.n_test)
    return TaskData(
        copying_split(train, config.num_tokens),
        copying_split(test, config.num_tokens),
        config.vocab_size,
    )


def token_guess(data: TaskData, config: SelectiveCopyingConfig) -> float:
    """Chance for selective copying: a content token guessed at random, 1 / (V - 2)."""
    return 1 / (config.vocab_size - FIRST_TOKEN)


register(
    TaskSpec(
        name="selective-copying",
        config_cls=SelectiveCopyingConfig,
        make_data=make_selective_copying_data,
        summary="tokens scattered among blanks: after a copy marker, write them out in order",
        metric="test_token_accuracy",
        chance=token_guess,
        presets={
            "tiny": RECALL_TINY,
            "small": {
                "task.num_tokens": 16,
                "task.context_len": 128,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses it: MAD's setting (vocabulary 16, 16 tokens, 256
            # positions) at a width its attention baselines solve.
            "paper": {
                "task.num_tokens": 16,
                "task.context_len": 239,
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=5e-4, steps=20000, eval_every=1000),
            },
        },
    )
)
