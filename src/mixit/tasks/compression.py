"""Compression, as MAD defines it (Poli et al., 2024; ``athms/mad-lab``,
``mad/data/instances.py`` at 0f49a45, ``configs/tasks/compression.yml``): squeeze a random
sequence into one vector.

A row is ``seq_len - 1`` tokens drawn uniformly from the ``vocab_size - 1`` content ids, then
the compression token (the last id). The model's output is read only at the compression token,
by the bottleneck readout (``mixit.models.readout``, MAD's autoencoder decoder): it must rebuild
every token of the row, the compression token included, from that one state and the position it is
asked for. Nothing repeats across rows, so the model cannot memorise: its mixing and MLPs must
write the whole sequence into the last position.

mixit's earlier set-up stays as options, off by default: the compression token left unscored
(``score_compression_token=false``) and the learned, 4x-wide readout (``wide_readout``).
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
    schedule,
)
from mixit.tasks.rows import sample_disjoint


@dataclass(frozen=True)
class CompressionConfig:
    vocab_size: int = 16  # content ids 0..V-2, the compression token V-1 (MAD's)
    seq_len: int = 32  # tokens, the compression token included
    score_compression_token: bool = True  # MAD scores it too
    wide_readout: bool = False  # mixit's earlier readout: learned positions, a 4x-wide MLP
    n_train: int = 12_800
    n_test: int = 1_280

    @property
    def compress(self) -> int:
        return self.vocab_size - 1

    def validate(self) -> None:
        check_positive(self, "vocab_size", "seq_len", "n_train", "n_test")


def compression_split(rows: np.ndarray, compress: int, score_compression_token: bool) -> Split:
    """Inputs (N, L + 1): the rows (N, L), then the compression token. Targets (N, L + 1):
    target t is input token t itself (the readout rebuilds it), the compression token's own
    included when it is scored."""
    rows = np.asarray(rows)
    n = len(rows)
    last = np.full((n, 1), compress)
    inputs = np.concatenate([rows, last], axis=1)  # (N, L + 1)
    scored_last = last if score_compression_token else np.full((n, 1), IGNORE_INDEX)
    targets = np.concatenate([rows, scored_last], axis=1)  # (N, L + 1)
    return Split(torch.as_tensor(inputs).long(), torch.as_tensor(targets).long())


def make_compression_data(config: CompressionConfig, seed: int) -> TaskData:
    """Random rows and a compression token; every token is scored, through the bottleneck.

    Example (vocab_size 5: content ids 0-3, compression token 4; rows of 3 and the token):

    >>> split = compression_split([[3, 1, 0]], compress=4, score_compression_token=True)
    >>> split.inputs.tolist()  # the row, then the compression token
    [[3, 1, 0, 4]]
    >>> split.targets.tolist()  # rebuilt from the last position's state alone
    [[3, 1, 0, 4]]
    """
    config.validate()
    rng = np.random.default_rng(seed)

    def sample(n: int) -> np.ndarray:
        return rng.integers(0, config.compress, (n, config.seq_len - 1))  # (n, L)

    train, test = sample_disjoint(sample, config.n_train, config.n_test)
    score = config.score_compression_token
    return TaskData(
        compression_split(train, config.compress, score),
        compression_split(test, config.compress, score),
        config.vocab_size,
    )


def most_frequent_token_guess(data: TaskData, config: CompressionConfig) -> float:
    """Chance per token: writing the row's most frequent content id at every position (a
    histogram fits in one vector more easily than the order; it beats a uniform guess), the
    compression token right at the end when it is scored."""
    inputs, targets = data.test.inputs, data.test.targets  # (N, T)
    content = inputs[:, :-1]  # (N, L)
    guess = torch.nn.functional.one_hot(content, config.compress).sum(1).argmax(-1)  # (N,)
    hits = (content == guess[:, None]).sum() + (targets[:, -1] == config.compress).sum()
    return float(hits / (targets != IGNORE_INDEX).sum())


register(
    TaskSpec(
        name="compression",
        axis="task.seq_len",
        config_cls=CompressionConfig,
        make_data=make_compression_data,
        harder_with={"task.seq_len": "longer sequences", "task.vocab_size": "a larger vocabulary"},
        summary="MAD's compression: random tokens, then a compression token: rebuild them "
        "all from its state",
        # Exact match of a whole random row sits near 0 for every model; tokens show progress.
        metric="test_token_accuracy",
        chance=most_frequent_token_guess,
        chance_means="writing the row's most frequent token at every scored position",
        bottleneck_readout=True,
        reports_macro_accuracy=True,
        presets={
            # MAD's layout at 8 tokens (MAD's base: 32).
            "tiny": {**RECALL_TINY, "task.seq_len": 8},
            "small": {
                "task.seq_len": 16,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses it: MAD's base setting (16 ids, 32 tokens) at MAD's
            # width and rate.
            "paper": {
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=5e-4, steps=20000, eval_every=1000),
            },
        },
    )
)
