"""Memorization (paper appendix C.1, after Zhong & Andreas): store random key -> value pairs.

Keys are distinct pairs (x, y) of symbols in [num_values] (all num_values^2 of them in the
paper's setting), each mapped to an independent uniform value in [num_values]. Nothing about a
value can be inferred from its key, so accuracy measures pure storage; it is scored on the
training set itself and reported as bits per trainable parameter.

``task.layout`` picks the token layout: ``equals`` writes [x, y, '=', value] with one symbol
table shared by every position; ``positional`` is the authors' (``hdmemorize_exp.py`` 84-88):
[x, y + num_values, value], so x and y have separate ids, the value shares x's, there is no '='
and the value is predicted at y. ``model.construction=authors`` sets ``positional``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mixit.common.errors import UsageError
from mixit.tasks.base import (
    TaskData,
    TaskSpec,
    check_choice,
    check_positive,
    model_size,
    register,
    schedule,
)
from mixit.tasks.rows import suffix_split

SYMBOL0 = 1  # layout equals: symbol s is token SYMBOL0 + s (0 is PAD); '=' is num_values + 1
LAYOUTS = ("equals", "positional")


@dataclass(frozen=True)
class MemorizationConfig:
    num_pairs: int = 512 * 512  # distinct keys (x, y) to memorize
    num_values: int = 512  # keys' symbols and values both range over [num_values]
    layout: str = "equals"  # equals: [x, y, '=', value] | positional: [x, y + num_values, value]

    def validate(self) -> None:
        check_positive(self, "num_pairs", "num_values")
        check_choice(self, "layout", LAYOUTS)
        if self.num_pairs > self.num_values**2:
            raise UsageError(
                f"task.num_pairs={self.num_pairs} exceeds the {self.num_values**2} distinct keys"
            )


def encode_memorization(
    x: np.ndarray, y: np.ndarray, value: np.ndarray, num_values: int
) -> np.ndarray:
    """Token sequences (N, 4): [x, y, '=', value], symbols shifted by SYMBOL0."""
    x, y, value = (np.asarray(v, dtype=np.int64) for v in (x, y, value))
    equals = np.full_like(x, num_values + 1)
    return np.stack([x + SYMBOL0, y + SYMBOL0, equals, value + SYMBOL0], axis=1)


def encode_memorization_positional(
    x: np.ndarray, y: np.ndarray, value: np.ndarray, num_values: int
) -> np.ndarray:
    """Token sequences (N, 3): [x, y + num_values, value], the authors' layout (no PAD)."""
    x, y, value = (np.asarray(v, dtype=np.int64) for v in (x, y, value))
    return np.stack([x, y + num_values, value], axis=1)


def make_memorization_data(config: MemorizationConfig, seed: int) -> TaskData:
    """``num_pairs`` random keys with random values; the test split is the training split.

    Example (num_values=8): key (3, 6) stores value 2. Symbol s is token s + 1, '=' is 9:

    >>> split = suffix_split(encode_memorization([3], [6], [2], num_values=8), answer_len=1)
    >>> split.inputs.tolist()  # 3 6 =
    [[4, 7, 9]]
    >>> split.targets.tolist()  # predicts 2 at '='
    [[-100, -100, 3]]

    With ``task.layout=positional`` the same key and value are written [3, 6 + 8, 2]:

    >>> split = suffix_split(encode_memorization_positional([3], [6], [2], 8), answer_len=1)
    >>> split.inputs.tolist(), split.targets.tolist()  # predicts 2 at y
    ([[3, 14]], [[-100, 2]])
    """
    config.validate()
    rng = np.random.default_rng(seed)
    v = config.num_values
    keys = rng.choice(v * v, size=config.num_pairs, replace=False)  # (N,) key index x * v + y
    values = rng.integers(0, v, size=config.num_pairs)
    if config.layout == "positional":
        rows, vocab_size = encode_memorization_positional(keys // v, keys % v, values, v), 2 * v
    else:
        rows, vocab_size = encode_memorization(keys // v, keys % v, values, v), v + 2
    split = suffix_split(rows, answer_len=1)
    return TaskData(split, split, vocab_size=vocab_size, test_is_train=True)


def memorization_metrics(
    metrics: dict[str, float], params_trainable: int, config: MemorizationConfig
) -> dict[str, float]:
    """Bits per parameter: log2(num_values) * num_pairs * train accuracy / trainable params."""
    accuracy = metrics.get("train_accuracy", metrics.get("test_accuracy"))
    if accuracy is None or params_trainable <= 0:
        return {}
    total_bits = math.log2(config.num_values) * config.num_pairs
    return {"bits_per_param": total_bits * accuracy / params_trainable}


register(
    TaskSpec(
        name="memorization",
        config_cls=MemorizationConfig,
        make_data=make_memorization_data,
        harder_with={"task.num_pairs": "more key-value pairs"},
        summary="random (x, y) -> value table; training accuracy as bits per trainable parameter",
        extra_metrics=memorization_metrics,
        authors_settings={"task.layout": "positional"},
        presets={
            # 16384 pairs * 7 bits = 115 kbit against ~41k trainable weights: accuracy stays
            # below 100 %, so bits per parameter measures capacity (docs/presets.md). The
            # paper's 10,000 steps: at 2,500 every model was still far from its capacity.
            "tiny": {
                "task.num_values": 128,
                "task.num_pairs": 16384,
                **model_size(n_layer=2, n_embd=32, n_head=4),
                "model.mixing_scale": "sequence",
                **schedule(
                    batch_size=256, lr=3e-3, weight_decay=0.0, steps=10_000, eval_every=2500
                ),
                "train.eval_examples": 16384,
            },
            "small": {
                "task.num_values": 128,
                "task.num_pairs": 16_384,
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=256, lr=1e-3, steps=6000, eval_every=1000),
            },
            # Appendix C.1 data; C.2 (Table 4): L=2, 4 heads, lr 0.005, 10,000 steps; Table 9
            # width and batch.
            "paper": {
                "model.construction": "authors",
                "task.num_values": 512,
                "task.num_pairs": 512 * 512,
                **model_size(n_layer=2, n_embd=1024, n_head=4),
                "train.batch_size": 256,
                "train.lr": 5e-3,
                "train.steps": 10_000,
            },
        },
    )
)
