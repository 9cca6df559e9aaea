"""Parentheses balancing, Dyck-1 (paper appendix C.1): is a string of '(' and ')' balanced?

Half of the strings are balanced (uniform over balanced strings, drawn by the cycle lemma).
The other half are unbalanced, mostly *hard* negatives with as many '(' as ')' that fail only
because some prefix closes more than it opened, so counting alone cannot solve the task; a
``unequal_fraction`` of them have unequal counts instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.common.errors import UsageError
from mixit.tasks.base import TaskData, TaskSpec, check_positive, model_size, register, schedule
from mixit.tasks.rows import sample_disjoint, suffix_split

OPEN = 1  # '('
CLOSE = 2  # ')'
EQUALS = 3
FALSE = 4
TRUE = 5
VOCAB_SIZE = 6


@dataclass(frozen=True)
class DyckConfig:
    length: int = 40  # parentheses per string (even, so that balanced strings exist)
    n_train: int = 100_000  # training strings
    n_test: int = 4_000  # test strings, none of them among the training strings
    # Share of the unbalanced strings whose '(' and ')' counts differ; the others have equal
    # counts and go negative on some prefix.
    unequal_fraction: float = 0.25

    def validate(self) -> None:
        check_positive(self, "length", "n_train", "n_test")
        if self.length % 2:
            raise UsageError(f"task.length must be even, got {self.length}")
        if not 0.0 <= self.unequal_fraction <= 1.0:
            raise UsageError(
                f"task.unequal_fraction must be in [0, 1], got {self.unequal_fraction}"
            )


def is_balanced(steps: np.ndarray) -> np.ndarray:
    """Whether each row of ``steps`` (N, L), +1 for '(' and -1 for ')', is balanced: (N,)."""
    depth = np.cumsum(steps, axis=1)  # (N, L)
    return (depth.min(axis=1, initial=0) >= 0) & (depth[:, -1] == 0)


def encode_dyck(steps: np.ndarray) -> np.ndarray:
    """Token sequences (N, L + 2): the parentheses, '=', then True or False."""
    steps = np.asarray(steps, dtype=np.int64)
    parens = np.where(steps > 0, OPEN, CLOSE)  # (N, L)
    label = np.where(is_balanced(steps), TRUE, FALSE)[:, None]  # (N, 1)
    return np.concatenate([parens, np.full_like(label, EQUALS), label], axis=1)


def _shuffled(rng: np.random.Generator, row: np.ndarray, n: int) -> np.ndarray:
    """``n`` independent random permutations of ``row`` (S,): (n, S)."""
    return rng.permuted(np.tile(row, (n, 1)), axis=1)


def _balanced(rng: np.random.Generator, n: int, length: int) -> np.ndarray:
    """``n`` balanced strings (n, length), uniform among all balanced strings (cycle lemma).

    A random arrangement of length/2 '(' and length/2 + 1 ')' sums to -1; exactly one of its
    rotations, the one starting just after its first minimum prefix sum, keeps every proper
    prefix >= 0 and ends on the surplus ')'. Dropping that ')' leaves a balanced string, and each
    balanced string arises from the same number of arrangements.
    """
    half = length // 2
    walks = _shuffled(rng, np.repeat(np.array([1, -1]), [half, half + 1]), n)  # (n, length + 1)
    start = np.argmin(np.cumsum(walks, axis=1), axis=1) + 1  # (n,) first minimum, plus one
    rotation = (start[:, None] + np.arange(length + 1)) % (length + 1)  # (n, length + 1)
    return np.take_along_axis(walks, rotation, axis=1)[:, :-1]


def _equal_counts_unbalanced(rng: np.random.Generator, n: int, length: int) -> np.ndarray:
    """``n`` unbalanced strings (n, length) with as many '(' as ')' (hard negatives)."""
    row = np.repeat(np.array([1, -1]), length // 2)
    steps = _shuffled(rng, row, n)
    # Only about 1 in length/2 + 1 arrangements is balanced: redraw those until none is left.
    while (redraw := is_balanced(steps)).any():
        steps[redraw] = _shuffled(rng, row, int(redraw.sum()))
    return steps


def _unequal_counts(rng: np.random.Generator, n: int, length: int) -> np.ndarray:
    """``n`` strings (n, length) whose number of '(' (binomial, near length/2) is not length/2."""
    half = length // 2
    opens = rng.binomial(length, 0.5, size=n)
    opens = np.where(opens == half, half + rng.choice([-1, 1], size=n), opens)  # (n,)
    steps = np.where(np.arange(length) < opens[:, None], 1, -1)  # (n, length)
    return rng.permuted(steps, axis=1)


def make_dyck_data(config: DyckConfig, seed: int) -> TaskData:
    """Strings of ``length`` parentheses; scored on the True/False token after '='.

    Example (length=4): "())(" has equal counts but the prefix "())" closes too many, so False.
    '(' is 1, ')' is 2, '=' is 3, False is 4, True is 5:

    >>> split = suffix_split(encode_dyck([[1, -1, -1, 1]]), answer_len=1)
    >>> split.inputs.tolist()  # ( ) ) ( =
    [[1, 2, 2, 1, 3]]
    >>> split.targets.tolist()  # predicts False at '='
    [[-100, -100, -100, -100, 4]]
    """
    config.validate()
    rng = np.random.default_rng(seed)

    def sample(n: int) -> np.ndarray:
        n_balanced = n // 2
        n_unequal = round((n - n_balanced) * config.unequal_fraction)
        steps = np.concatenate(
            [
                _balanced(rng, n_balanced, config.length),
                _equal_counts_unbalanced(rng, n - n_balanced - n_unequal, config.length),
                _unequal_counts(rng, n_unequal, config.length),
            ]
        )  # (n, length)
        return encode_dyck(steps[rng.permutation(n)])

    train, test = sample_disjoint(sample, config.n_train, config.n_test)
    return TaskData(suffix_split(train, 1), suffix_split(test, 1), VOCAB_SIZE)


register(
    TaskSpec(
        name="dyck",
        axis="task.length",
        config_cls=DyckConfig,
        make_data=make_dyck_data,
        harder_with={"task.length": "longer strings"},
        summary="is a string of parentheses balanced? half balanced, mostly hard negatives",
        presets={
            "tiny": {
                "task.length": 24,
                "task.n_train": 20_000,
                "task.n_test": 2_000,
                **model_size(n_layer=2, n_embd=64, n_head=4),
                "model.mixing_scale": "sequence",
                **schedule(batch_size=128, lr=2e-3, steps=1000, eval_every=250),
            },
            "small": {
                "task.length": 40,
                **model_size(n_layer=4, n_embd=128, n_head=4),
                **schedule(batch_size=256, lr=1e-3, steps=4000, eval_every=500),
            },
            # Appendix C.1 data, Table 9 hyper-parameters; the paper gives no step count.
            "paper": {
                "model.construction": "authors",
                "task.length": 40,
                "task.n_train": 100_000,
                "task.n_test": 4_000,
                **model_size(n_layer=4, n_embd=512, n_head=64),
                "train.batch_size": 512,
                "train.lr": 1e-3,
                "train.steps": 10_000,
            },
        },
    )
)
