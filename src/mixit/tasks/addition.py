"""Decimal addition (paper appendix C.1): add two integers with the same number of digits.

The sum is emitted least-significant digit first by default (``reverse_answer``): each output
digit then depends only on operand digits already in context and on the carry out of the digit
emitted just before it, so the model never has to look ahead to resolve a carry. Written
most-significant first, the first output digit already depends on the carry chain through every
lower digit.

Four options rebuild the authors' layout (``task_additionstream.py`` 28-42 and 50-70;
``model.construction=authors`` sets all four):

- ``task.reverse_operands``: the operands too are written least-significant digit first;
- ``task.answer_ids=separate``: the sum's digits are tokens of their own, not the operands';
- ``task.stop_token``: the sum is written at its own length (no leading zero) and followed by a
  stop token, then padding;
- ``task.scored_tokens=after-answer``: the loss and the accuracy cover the token after each
  token of the sum (their ``labels[:-1] >= 20``): every digit of the sum but the first, the stop
  token, and the pad after it when there is one. ``answer`` covers the sum (and stop) itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.common.errors import UsageError
from mixit.tasks.base import (
    PAD,
    TaskData,
    TaskSpec,
    check_choice,
    check_positive,
    model_size,
    register,
    schedule,
)
from mixit.tasks.rows import answer_split, sample_disjoint

DIGIT0 = 1  # digit d is token DIGIT0 + d (0 is PAD)
PLUS = 11
EQUALS = 12
ANSWER_DIGIT0 = 13  # with task.answer_ids=separate, a digit of the sum is token 13 + d
MAX_DIGITS = 18  # a + b must fit in int64
ANSWER_IDS = ("digits", "separate")
SCORED_TOKENS = ("answer", "after-answer")


@dataclass(frozen=True)
class AdditionConfig:
    num_digits: int = 10  # digits of each operand; the leading digit is never 0
    n_train: int = 50_000  # training pairs (sampled uniformly, with replacement)
    n_test: int = 4_000  # test pairs, none of them among the training pairs
    reverse_answer: bool = True  # emit the sum least-significant digit first (see module doc)
    reverse_operands: bool = False  # write the operands least-significant digit first too
    answer_ids: str = "digits"  # digits: the sum reuses the operands' digit tokens | separate
    stop_token: bool = False  # the sum at its own length, then a stop token, then padding
    scored_tokens: str = "answer"  # answer: the sum's tokens | after-answer: the token after each

    def validate(self) -> None:
        check_positive(self, "num_digits", "n_train", "n_test")
        check_choice(self, "answer_ids", ANSWER_IDS)
        check_choice(self, "scored_tokens", SCORED_TOKENS)
        if self.num_digits > MAX_DIGITS:
            raise UsageError(f"task.num_digits must be <= {MAX_DIGITS}, got {self.num_digits}")

    @property
    def stop_id(self) -> int:
        """The stop token: the first id after the digits, '+', '=' (and the sum's digits)."""
        return ANSWER_DIGIT0 + (10 if self.answer_ids == "separate" else 0)

    @property
    def vocab_size(self) -> int:
        return self.stop_id + int(self.stop_token)


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
    return encode_addition_as(a, b, AdditionConfig(num_digits, reverse_answer=reverse_answer))


def encode_addition_as(a: np.ndarray, b: np.ndarray, config: AdditionConfig) -> np.ndarray:
    """Token sequences of ``a + b`` in ``config``'s layout (see the module doc): (N, 3n + 3),
    or (N, 3n + 4) with a stop token, for n = ``config.num_digits``."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    n = config.num_digits
    total = _digits(a + b, n + 1)  # (N, n + 1), most significant first
    operands = [_digits(a, n), _digits(b, n)]  # 2 x (N, n)
    if config.reverse_answer:
        total = total[:, ::-1]
    if config.reverse_operands:
        operands = [digits[:, ::-1] for digits in operands]
    first_answer = ANSWER_DIGIT0 if config.answer_ids == "separate" else DIGIT0
    answer = total + first_answer  # (N, n + 1)
    if config.stop_token:
        # Drop the sum's leading zero (the last digit written when reversed), then stop, pad.
        stop = np.full((len(a), 1), config.stop_id)
        answer = np.concatenate([answer, stop], axis=1)  # (N, n + 2)
        keep = np.ones(answer.shape, dtype=bool)  # (N, n + 2)
        keep[:, n if config.reverse_answer else 0] = a + b >= 10**n
        order = np.argsort(~keep, axis=1, kind="stable")  # kept tokens first, in order
        answer = np.take_along_axis(answer, order, axis=1)
        answer[np.arange(answer.shape[1]) >= keep.sum(axis=1, keepdims=True)] = PAD
    column = np.ones((len(a), 1), dtype=np.int64)  # (N, 1)
    parts = [operands[0] + DIGIT0, PLUS * column, operands[1] + DIGIT0, EQUALS * column, answer]
    return np.concatenate(parts, axis=1)


def scored_mask(rows: np.ndarray, config: AdditionConfig) -> np.ndarray:
    """(N, S) True at the tokens ``config.scored_tokens`` scores: the sum's tokens (after '=',
    not padding), or with ``after-answer`` each token that follows one of them."""
    answer = np.arange(rows.shape[1]) > 2 * config.num_digits + 1  # (S,) after '='
    answer = answer & (rows != PAD)  # (N, S)
    if config.scored_tokens == "answer":
        return answer
    after = np.zeros_like(answer)
    after[:, 1:] = answer[:, :-1]
    return after


def make_addition_data(config: AdditionConfig, seed: int) -> TaskData:
    """Pairs of ``num_digits``-digit integers; the model is scored on every digit of the sum.

    Example (num_digits=3): 357 + 468 = 825, written 0825 and emitted reversed as 5 2 8 0.
    Digit d is token d + 1, '+' is 11, '=' is 12; the loss sees only the sum's digits:

    >>> rows = encode_addition([357], [468], num_digits=3)
    >>> split = answer_split(rows, scored_mask(rows, AdditionConfig(3)))
    >>> split.inputs.tolist()  # 3 5 7 + 4 6 8 = 5 2 8
    [[4, 6, 8, 11, 5, 7, 9, 12, 6, 3, 9]]
    >>> split.targets.tolist()  # predicts 5 2 8 0 from '=' onwards
    [[-100, -100, -100, -100, -100, -100, -100, 6, 3, 9, 1]]

    The authors' layout (reversed operands, the sum's digit d as token 13 + d, stop token 23,
    the token after each of the sum's tokens scored) writes 357 + 468 as 7 5 3 + 8 6 4 = 5 2 8
    stop, then a pad (825 has no fourth digit):

    >>> authors = AdditionConfig(
    ...     3, reverse_operands=True, answer_ids="separate", stop_token=True,
    ...     scored_tokens="after-answer")
    >>> rows = encode_addition_as([357], [468], authors)
    >>> split = answer_split(rows, scored_mask(rows, authors))
    >>> split.inputs.tolist()  # 7 5 3 + 8 6 4 = 5 2 8 stop
    [[8, 6, 4, 11, 9, 7, 5, 12, 18, 15, 21, 23]]
    >>> split.targets.tolist()  # after each token of the sum: 2 8 stop pad (never the 5)
    [[-100, -100, -100, -100, -100, -100, -100, -100, 15, 21, 23, 0]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    low, high = 10 ** (config.num_digits - 1), 10**config.num_digits

    def sample(n: int) -> np.ndarray:
        a, b = rng.integers(low, high, size=(2, n))
        return encode_addition_as(a, b, config)

    train, test = sample_disjoint(sample, config.n_train, config.n_test)
    train_split = answer_split(train, scored_mask(train, config))
    test_split = answer_split(test, scored_mask(test, config))
    return TaskData(train_split, test_split, config.vocab_size)


register(
    TaskSpec(
        name="addition",
        axis="task.num_digits",
        config_cls=AdditionConfig,
        make_data=make_addition_data,
        harder_with={"task.num_digits": "more digits"},
        summary="a + b for two num_digits-digit integers; exact digits of the (reversed) sum",
        authors_settings={
            "task.reverse_operands": True,
            "task.answer_ids": "separate",
            "task.stop_token": True,
            "task.scored_tokens": "after-answer",
        },
        presets={
            # Small enough that standard and MixiT both solve it on a CPU (docs/presets.md).
            "tiny": {
                "task.num_digits": 3,
                **model_size(n_layer=2, n_embd=128, n_head=4),
                "model.mixing_scale": "sequence",
                **schedule(batch_size=128, lr=2e-3, steps=900, eval_every=300),
            },
            "small": {
                "task.num_digits": 5,
                **model_size(n_layer=4, n_embd=256, n_head=4),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # Appendix C.1 data, Table 9 hyper-parameters; the paper gives no step count.
            "paper": {
                "model.construction": "authors",
                "task.num_digits": 10,
                "task.n_train": 50_000,
                "task.n_test": 4_000,
                **model_size(n_layer=8, n_embd=512, n_head=64),
                "train.batch_size": 128,
                "train.lr": 1e-3,
                "train.steps": 10_000,
            },
        },
    )
)
