"""Compression (MAD, Poli et al. 2024): squeeze a random sequence into one vector.

A row is ``seq_len`` tokens drawn uniformly from ``num_tokens`` ids, then a compression
token. The model's output is read only at the compression token, by the bottleneck readout
(``mixit.readout``): an MLP must rebuild every token of the row from that one state and the
position it is asked for. Nothing repeats across rows, so the model cannot memorise: its
mixing and MLPs must write the whole sequence into the last position. Ids: tokens 1..V, the
compression token V + 1 (0 is unused).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

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


@dataclass
class CompressionConfig:
    num_tokens: int = 16  # V token ids
    seq_len: int = 8  # tokens to compress
    n_train: int = 20_000
    n_test: int = 1_000

    @property
    def compress(self) -> int:
        return self.num_tokens + 1

    @property
    def vocab_size(self) -> int:
        return self.compress + 1

    def validate(self) -> None:
        check_positive(self, "num_tokens", "seq_len", "n_train", "n_test")


def compression_split(rows: np.ndarray, compress: int) -> Split:
    """Inputs (N, L + 1): the rows (N, L), then the compression token. Targets (N, L + 1):
    target t is input token t itself (the readout rebuilds it), none at the last position."""
    rows = np.asarray(rows)
    n = len(rows)
    inputs = np.concatenate([rows, np.full((n, 1), compress)], axis=1)  # (N, L + 1)
    targets = np.concatenate([rows, np.full((n, 1), IGNORE_INDEX)], axis=1)  # (N, L + 1)
    return Split(torch.as_tensor(inputs).long(), torch.as_tensor(targets).long())


def make_compression_data(config: CompressionConfig, seed: int) -> TaskData:
    """Random rows and a compression token; every token is scored, through the bottleneck.

    Example (tokens 1-4, compression token 5, rows of 3):

    >>> split = compression_split([[3, 1, 4]], compress=5)
    >>> split.inputs.tolist()  # the row, then the compression token
    [[3, 1, 4, 5]]
    >>> split.targets.tolist()  # rebuilt from the last position's state alone
    [[3, 1, 4, -100]]
    """
    config.validate()
    rng = np.random.default_rng(seed)

    def sample(n: int) -> np.ndarray:
        return 1 + rng.integers(0, config.num_tokens, (n, config.seq_len))  # (n, L)

    train, test = sample_disjoint(sample, config.n_train, config.n_test)
    return TaskData(
        compression_split(train, config.compress),
        compression_split(test, config.compress),
        config.vocab_size,
    )


def uniform_guess(data: TaskData, config: CompressionConfig) -> float:
    """Chance per token: guessing among V equally likely ids, 1 / V."""
    return 1 / config.num_tokens


register(
    TaskSpec(
        name="compression",
        config_cls=CompressionConfig,
        make_data=make_compression_data,
        summary="random tokens, then a compression token: rebuild them all from its state",
        # Exact match of a whole random row sits near 0 for every model; tokens show progress.
        metric="test_token_accuracy",
        chance=uniform_guess,
        bottleneck_readout=True,
        presets={
            "tiny": RECALL_TINY,
            "small": {
                "task.seq_len": 16,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses it: MAD's setting (16 ids, 32 tokens).
            "paper": {
                "task.seq_len": 31,
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=5e-4, steps=20000, eval_every=1000),
            },
        },
    )
)
