"""Modular addition (paper appendix C.1): predict (a + b) mod p for a prime p.

Training and test pairs are a random partition of all p * p pairs (a, b), so the test set
measures generalisation to unseen pairs rather than recall.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.common.errors import UsageError
from mixit.tasks.base import TaskData, TaskSpec, check_positive, model_size, register, schedule
from mixit.tasks.rows import suffix_split

NUMBER0 = 1  # the number x in [0, p) is token NUMBER0 + x (0 is PAD); '=' is token p + 1


@dataclass(frozen=True)
class ModularAdditionConfig:
    p: int = 599  # the modulus (the paper's prime)
    n_train: int = 40_000  # distinct training pairs (a, b), a and b in [0, p)
    n_test: int = 4_000  # test pairs from the rest; capped to the p * p - n_train left over
    # When > 0: train on this fraction of all p * p pairs and test on every other pair,
    # in place of n_train and n_test (the authors' split: 0.95, modadd_exp.py:110-126).
    train_fraction: float = 0.0

    def validate(self) -> None:
        check_positive(self, "p", "n_train", "n_test")
        if not 0.0 <= self.train_fraction < 1.0:
            raise UsageError(f"task.train_fraction must be in [0, 1), got {self.train_fraction}")
        if self.train_fraction and int(self.p * self.p * self.train_fraction) < 1:
            raise UsageError(
                f"task.train_fraction={self.train_fraction} leaves no training pair of p*p="
                f"{self.p**2}"
            )
        if not self.train_fraction and self.n_train >= self.p * self.p:
            raise UsageError(
                f"task.n_train={self.n_train} leaves no test pairs out of p*p={self.p**2}"
            )


def encode_modular_addition(a: np.ndarray, b: np.ndarray, p: int) -> np.ndarray:
    """Token sequences (N, 4): [a, b, '=', (a + b) mod p], numbers shifted by NUMBER0."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    equals = np.full_like(a, p + 1)
    return np.stack([a + NUMBER0, b + NUMBER0, equals, (a + b) % p + NUMBER0], axis=1)


def make_modular_addition_data(config: ModularAdditionConfig, seed: int) -> TaskData:
    """A random partition of the p * p pairs (a, b); scored on the residue after '='.

    Example (p=7): 5 + 4 = 9 = 2 (mod 7). Number x is token x + 1 and '=' is p + 1 = 8:

    >>> split = suffix_split(encode_modular_addition([5], [4], p=7), answer_len=1)
    >>> split.inputs.tolist()  # 5 4 =
    [[6, 5, 8]]
    >>> split.targets.tolist()  # predicts 2 at '='
    [[-100, -100, 3]]
    """
    config.validate()
    p = config.p
    pairs = np.random.default_rng(seed).permutation(p * p)  # pair index a * p + b
    if config.train_fraction:
        n_train = int(p * p * config.train_fraction)
        train, test = pairs[:n_train], pairs[n_train:]
    else:
        train = pairs[: config.n_train]
        test = pairs[config.n_train : config.n_train + config.n_test]
    splits = [suffix_split(encode_modular_addition(x // p, x % p, p), 1) for x in (train, test)]
    return TaskData(splits[0], splits[1], vocab_size=p + 2)


register(
    TaskSpec(
        name="modular-addition",
        config_cls=ModularAdditionConfig,
        make_data=make_modular_addition_data,
        harder_with={
            "task.p": "a larger modulus",
            "task.train_fraction": "a smaller training fraction",
        },
        summary="(a + b) mod p on a random 'seen' subset of all pairs; test on unseen pairs",
        authors_settings={"task.train_fraction": 0.95},
        presets={
            # 40 % of the 3481 pairs seen, tested on the other 60 %: generalisation, not recall
            # (accuracies per model in docs/presets.md).
            "tiny": {
                "task.p": 59,
                "task.n_train": 1392,
                "task.n_test": 2089,
                **model_size(n_layer=1, n_embd=64, n_head=4),
                "model.mixing_scale": "sequence",
                **schedule(batch_size=1392, lr=3e-3, weight_decay=3.0, steps=1200, eval_every=200),
            },
            # p=113 (the usual grokking prime), 40 % of the pairs for training, full batch.
            "small": {
                "task.p": 113,
                "task.n_train": 5107,
                "task.n_test": 4000,
                **model_size(n_layer=1, n_embd=128, n_head=4),
                **schedule(batch_size=5107, lr=3e-3, weight_decay=1.0, steps=4000, eval_every=200),
            },
            # Appendix C.1 data, Table 9 hyper-parameters; the paper gives no step count.
            "paper": {
                "model.construction": "authors",
                "task.p": 599,
                "task.n_train": 40_000,
                "task.n_test": 4_000,
                **model_size(n_layer=2, n_embd=512, n_head=32),
                "train.batch_size": 256,
                "train.lr": 1e-3,
                "train.steps": 10_000,
            },
        },
    )
)
