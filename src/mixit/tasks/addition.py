"""Decimal addition (paper appendix C.1): add two integers with the same number of digits.

The sum is emitted least-significant digit first by default (``reverse_answer``): each output
digit then depends only on operand digits already in context and on the carry out of the digit
emitted just before it, so the model never has to look ahead to resolve a carry. Written
most-significant first, the first output digit already depends on the carry chain through every
lower digit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.errors import UsageError
from mixit.tasks.base import (
    TaskData,
    TaskSpec,
    check_positive,
    register,
    sample_disjoint,
    suffix_split,
)

DIGIT0 = 1  # digit d is token DIGIT0 + d (0 is PAD)
PLUS = 11
EQUALS = 12
VOCAB_SIZE = 13
MAX_DIGITS = 18  # a + b must fit in int64


@dataclass
class AdditionConfig:
    num_digits: int = 10  # digits of each operand; the leading digit is never 0
    n_train: int = 50_000  # training pairs (sampled uniformly, with replacement)
    n_test: int = 4_000  # test pairs, none of them among the training pairs
    reverse_answer: bool = True  # emit the sum least-significant digit first (see module doc)

    def validate(self) -> None:
        check_positive(self, "num_digits", "n_train", "n_test")
        if self.num_digits > MAX_DIGITS:
            raise UsageError(f"task.num_digits must be <= {MAX_DIGITS}, got {self.num_digits}")


def _digits(x: np.ndarray, width: int) -> np.ndarray:
    """Decimal digits (N, width) of ``x`` (N,), most significant first, zero-padded."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return (x[:, None] // powers) % 10


def encode_addition(
    a: np.ndarray, b: np.ndarray, num_digits: int, reverse_answer: bool = True
) -> np.ndarray:
    """Token sequences (N, 3 * num_digits + 3): a digits, '+', b digits, '=', sum digits.

    The sum always has num_digits + 1 digits (zero-padded), reversed if ``reverse_answer``.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    total = _digits(a + b, num_digits + 1)  # (N, num_digits + 1)
    if reverse_answer:
        total = total[:, ::-1]
    column = np.ones((len(a), 1), dtype=np.int64)  # (N, 1)
    parts = [_digits(a, num_digits) + DIGIT0, PLUS * column, _digits(b, num_digits) + DIGIT0]
    return np.concatenate([*parts, EQUALS * column, total + DIGIT0], axis=1)


def make_addition_data(config: AdditionConfig, seed: int) -> TaskData:
    """Pairs of ``num_digits``-digit integers; the model is scored on every digit of the sum.

    Example (num_digits=3): 357 + 468 = 825, written 0825 and emitted reversed as 5 2 8 0.
    Digit d is token d + 1, '+' is 11, '=' is 12; the loss sees only the sum's digits:

    >>> split = suffix_split(encode_addition([357], [468], num_digits=3), answer_len=4)
    >>> split.inputs.tolist()  # 3 5 7 + 4 6 8 = 5 2 8
    [[4, 6, 8, 11, 5, 7, 9, 12, 6, 3, 9]]
    >>> split.targets.tolist()  # predicts 5 2 8 0 from '=' onwards
    [[-100, -100, -100, -100, -100, -100, -100, 6, 3, 9, 1]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    low, high = 10 ** (config.num_digits - 1), 10**config.num_digits

    def sample(n: int) -> np.ndarray:
        a, b = rng.integers(low, high, size=(2, n))
        return encode_addition(a, b, config.num_digits, config.reverse_answer)

    train, test = sample_disjoint(sample, config.n_train, config.n_test)
    answer_len = config.num_digits + 1
    return TaskData(suffix_split(train, answer_len), suffix_split(test, answer_len), VOCAB_SIZE)


register(
    TaskSpec(
        name="addition",
        config_cls=AdditionConfig,
        make_data=make_addition_data,
        summary="a + b for two num_digits-digit integers; exact digits of the (reversed) sum",
        presets={
            # Measured (docs/presets.md): standard 1.0, mixit 1.0 in 1000 steps.
            "tiny": {
                "task.num_digits": 3,
                "model.n_layer": 2,
                "model.n_embd": 128,
                "model.n_head": 4,
                "model.mixing_scale": "sequence",
                "train.batch_size": 128,
                "train.lr": 2e-3,
                "train.steps": 900,
                "train.eval_every": 300,
            },
            "small": {
                "task.num_digits": 5,
                "model.n_layer": 4,
                "model.n_embd": 256,
                "model.n_head": 4,
                "train.batch_size": 128,
                "train.lr": 1e-3,
                "train.steps": 6000,
                "train.eval_every": 500,
            },
            # Appendix C.1 data, Table 9 hyper-parameters; the paper gives no step count.
            "paper": {
                "model.construction": "authors",
                "task.num_digits": 10,
                "task.n_train": 50_000,
                "task.n_test": 4_000,
                "model.n_layer": 8,
                "model.n_embd": 512,
                "model.n_head": 64,
                "train.batch_size": 128,
                "train.lr": 1e-3,
                "train.steps": 10_000,
            },
        },
    )
)
