"""Fuzzy in-context recall, as MAD defines it (Poli et al., 2024; ``athms/mad-lab``,
``mad/data/instances.py`` at 0f49a45, ``configs/tasks/fuzzy-in-context-recall.yml``): recall
where keys and values are spans of tokens, with nothing between them to mark where one ends.

A key is a span of distinct key tokens, a value a span of distinct value tokens; in training
rows keys span 1 to ``k_motif_size`` tokens, in test rows always ``k_motif_size``; values span
1 to ``v_motif_size`` in both. Key-value pairs follow each other, keys drawn with repetition
(a key keeps the value it was first shown with), until the row is nearly full; one pair, the
probe, is placed at a random point of the row and asked again at its end. Every value whose
key was shown before is scored, token by token, at the tokens before it (``multi_query``,
MAD's default), as is the probe's value at the end. Rows are padded on the left to
``seq_len`` tokens. As MAD does, training fits every next token, padding included, and only
the test scores the values (``train_every_token``). Ids, as MAD numbers them: keys 0..K-1,
values K..2K (K = (vocab_size - 1) // 2), the pad the last id.

With ``multi_query=false``, as in MAD, only the probe is asked, after a copy token (the last
id; the pad the one before it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mixit.common.errors import UsageError
from mixit.tasks.base import (
    IGNORE_INDEX,
    RECALL_TINY,
    KeyValueIds,
    TaskData,
    TaskSpec,
    check_positive,
    model_size,
    most_frequent_shown_guess,
    register,
    schedule,
)
from mixit.tasks.rows import sample_disjoint, side_by_side_split


@dataclass(frozen=True)
class FuzzyRecallConfig(KeyValueIds):
    vocab_size: int = 16  # keys, values and the pad (and the copy id without multi_query)
    seq_len: int = 128  # tokens after left padding; the model reads seq_len
    k_motif_size: int = 3  # a key spans 1..k_motif_size tokens (always k_motif_size in tests)
    v_motif_size: int = 3  # a value spans 1..v_motif_size tokens
    multi_query: bool = True  # every key shown again is asked; else the probe only
    train_every_token: bool = True  # train on every next token, score only the values
    n_train: int = 12_800
    n_test: int = 1_280

    @property
    def content_ids(self) -> int:
        return self.vocab_size - (1 if self.multi_query else 2)

    @property
    def pad(self) -> int:
        return self.vocab_size - (1 if self.multi_query else 2)

    def validate(self) -> None:
        check_positive(self, "vocab_size", "seq_len", "k_motif_size", "v_motif_size")
        check_positive(self, "n_train", "n_test")
        if self.num_keys < self.k_motif_size or self.num_values < self.v_motif_size:
            raise UsageError(
                f"task.vocab_size={self.vocab_size} gives {self.num_keys} key and "
                f"{self.num_values} value ids: spans of task.k_motif_size={self.k_motif_size} "
                f"and task.v_motif_size={self.v_motif_size} distinct tokens do not fit"
            )
        room = self.seq_len - 2 * (self.k_motif_size + self.v_motif_size)
        if room < 1:
            raise UsageError(
                f"task.seq_len={self.seq_len} leaves no room for pairs beside the probe: it must "
                f"exceed {2 * (self.k_motif_size + self.v_motif_size)}"
            )


def span_code(tokens: np.ndarray, size: np.ndarray, base: int) -> np.ndarray:
    """One integer per span (...): its first ``size`` tokens (..., L) as digits 1..base."""
    digits = np.where(np.arange(tokens.shape[-1]) < size[..., None], tokens + 1, 0)
    return (digits * base ** np.arange(tokens.shape[-1])).sum(-1)


def encode_fuzzy_recall(
    keys: np.ndarray,
    values: np.ndarray,
    scored: np.ndarray,
    final: tuple[np.ndarray, np.ndarray],
    config: FuzzyRecallConfig,
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (N, seq_len) and test targets (N, seq_len) from the pairs' key spans and value
    spans (N, P, L), each padded on the right with -1, the pairs whose values are scored
    (N, P), and the probe's key and value spans ``final`` (N, L): the pairs in order, the copy
    token without ``multi_query``, the probe (its value scored), all padded on the left."""
    keys, values, scored = np.asarray(keys), np.asarray(values), np.asarray(scored)
    n = len(keys)
    probe_key, probe_value = (np.asarray(f) for f in final)
    copy = np.full((n, 0 if config.multi_query else 1), config.vocab_size - 1)
    parts = [np.concatenate([keys, values], axis=2).reshape(n, -1), copy, probe_key, probe_value]
    tokens = np.concatenate([part.astype(np.int16) for part in parts], axis=1)  # (N, W)
    value_scored = (values >= 0) & scored[..., None]  # (N, P, L)
    pair_answers = np.concatenate([np.zeros(keys.shape, bool), value_scored], axis=2)
    answers = np.concatenate(
        [
            pair_answers.reshape(n, -1),
            np.zeros(copy.shape, bool),
            np.zeros(probe_key.shape, bool),
            probe_value >= 0,
        ],
        axis=1,
    )  # (N, W)
    width = config.seq_len + 1  # one more: the shift to next-token targets drops one
    # Left padding: each real token (the spans leave room, -1, after theirs) goes to its rank
    # among the row's real tokens, offset by the row's padding.
    real = tokens >= 0  # (N, W)
    count = real.sum(1, keepdims=True)  # (N, 1)
    place = width - count + np.cumsum(real, axis=1, dtype=np.int16) - 1  # (N, W): its place
    rows = np.broadcast_to(np.arange(n)[:, None], real.shape)
    sequence = np.full((n, width), config.pad, dtype=np.int64)
    sequence[rows[real], place[real]] = tokens[real]
    targets = np.full((n, width), IGNORE_INDEX, dtype=np.int64)
    asked = real & answers
    targets[rows[asked], place[asked]] = tokens[asked]
    return sequence[:, :-1], targets[:, 1:]


def _distinct_spans(rng: np.random.Generator, ids: int, length: int, *shape: int) -> np.ndarray:
    """(*shape, length) distinct ids in 0..ids-1 in random order: the first tokens of a random
    permutation, each drawn among the ids not taken yet."""
    taken: list[np.ndarray] = []
    for j in range(length):
        token = rng.integers(0, ids - j, shape)
        for used in np.sort(np.stack(taken), axis=0) if taken else []:
            token += token >= used  # skip each taken id, smallest first
        taken.append(token)
    return np.stack(taken, axis=-1)


def _sample(
    rng: np.random.Generator, n: int, config: FuzzyRecallConfig, training: bool
) -> np.ndarray:
    """``n`` random rows, inputs and test targets side by side (n, 2 seq_len), built pair by
    pair as MAD's loop builds them, for all rows at once."""
    k, v, lk, lv = config.num_keys, config.num_values, config.k_motif_size, config.v_motif_size
    smallest_key = 1 if training else lk
    slots = config.seq_len // 2 + 1  # more pairs than fit: every pair spans 2 tokens or more

    key_size = rng.integers(smallest_key, lk + 1, (n, slots))
    value_size = rng.integers(1, lv + 1, (n, slots))
    key_tokens = _distinct_spans(rng, k, lk, n, slots)
    value_tokens = k + _distinct_spans(rng, v, lv, n, slots)
    probe_size = rng.integers(smallest_key, lk + 1, n), rng.integers(1, lv + 1, n)
    probe_key, probe_value = _distinct_spans(rng, k, lk, n), k + _distinct_spans(rng, v, lv, n)
    probe_length = probe_size[0] + probe_size[1]
    probe_at = np.floor(rng.random(n) * (config.seq_len - 2 * probe_length)).astype(int)
    limit = config.seq_len - probe_length - (lk + lv)
    probe_code = span_code(probe_key, probe_size[0], k + 1)

    keys = np.full((n, slots, lk), -1, dtype=np.int16)
    values = np.full((n, slots, lv), -1, dtype=np.int16)
    scored = np.zeros((n, slots), bool)
    codes = np.full((n, slots), -1)
    length, placed = np.zeros(n, int), np.zeros(n, bool)
    used = slots
    for slot in range(slots):
        a = np.flatnonzero(length < limit)  # the rows still filling, and only those
        if not len(a):
            used = slot
            break
        probe_now = (length[a] >= probe_at[a]) & ~placed[a]
        size = np.where(probe_now, probe_size[0][a], key_size[a, slot])
        key = np.where(probe_now[:, None], probe_key[a], key_tokens[a, slot])
        code = span_code(key, size, k + 1)
        same = codes[a, :slot] == code[:, None]  # (a, slot): earlier pairs with this key
        seen = same.any(1)
        first = values[a, same.argmax(1)] if slot else values[a, 0]  # the first of them's
        is_probe = code == probe_code[a]
        value = np.where(seen[:, None], first, value_tokens[a, slot])
        value_length = np.where(seen, (first >= 0).sum(1), value_size[a, slot])
        value = np.where(is_probe[:, None], probe_value[a], value)
        value_length = np.where(is_probe, probe_size[1][a], value_length)
        keys[a, slot] = np.where(np.arange(lk) < size[:, None], key, -1)
        values[a, slot] = np.where(np.arange(lv) < value_length[:, None], value, -1)
        scored[a, slot] = seen & ~probe_now & config.multi_query
        codes[a, slot] = code
        placed[a] |= is_probe
        length[a] += size + value_length
    final_key = np.where(np.arange(lk) < probe_size[0][:, None], probe_key, -1)
    final_value = np.where(np.arange(lv) < probe_size[1][:, None], probe_value, -1)
    pairs = keys[:, :used], values[:, :used], scored[:, :used]  # the slots some row filled
    inputs, targets = encode_fuzzy_recall(*pairs, (final_key, final_value), config)
    return np.concatenate([inputs, targets], axis=1)


def make_fuzzy_recall_data(config: FuzzyRecallConfig, seed: int) -> TaskData:
    """Key spans with value spans, then the probe's key again; every value whose key came
    before is scored token by token.

    Example (vocab_size 7: keys 0-2, values 3-5, pad 6; seq_len 12): key (0, 1) with value
    (4,), key (2,) with value (3, 5), key (0, 1) again; the probe asks key (2,):

    >>> config = FuzzyRecallConfig(vocab_size=7, seq_len=12, k_motif_size=2, v_motif_size=2)
    >>> keys = [[[0, 1], [2, -1], [0, 1]]]  # spans padded on the right with -1
    >>> values = [[[4, -1], [3, 5], [4, -1]]]
    >>> probe = ([[2, -1]], [[3, 5]])
    >>> inputs, targets = encode_fuzzy_recall(keys, values, [[False, False, True]], probe, config)
    >>> inputs.tolist()  # pad | k k v | k v v | k k v | k v (the last value token: a target)
    [[6, 0, 1, 4, 2, 3, 5, 0, 1, 4, 2, 3]]
    >>> targets.tolist()  # 4 after the second (0, 1); 3, 5 after the probe's key
    [[-100, -100, -100, -100, -100, -100, -100, -100, 4, -100, 3, 5]]
    """
    config.validate()
    rng = np.random.default_rng(seed)
    train, test = sample_disjoint(
        lambda n: _sample(rng, n, config, training=True),
        config.n_train,
        config.n_test,
        sample_test=lambda n: _sample(rng, n, config, training=False),
    )
    return TaskData(
        side_by_side_split(train),
        side_by_side_split(test),
        config.vocab_size,
        train_on_every_token=config.train_every_token,
    )


def most_frequent_value_guess(data: TaskData, config: FuzzyRecallConfig) -> float:
    """Chance for fuzzy recall: naming, at each scored token, the value token shown most often
    so far (``most_frequent_shown_guess``), at least one in the value ids."""
    k, values = config.num_keys, config.num_values
    return most_frequent_shown_guess(data.test, k, values, 1 / values)


register(
    TaskSpec(
        name="fuzzy-recall",
        axis="task.seq_len",
        config_cls=FuzzyRecallConfig,
        make_data=make_fuzzy_recall_data,
        harder_with={"task.seq_len": "longer sequences", "task.vocab_size": "a larger vocabulary"},
        summary="MAD's fuzzy in-context recall: key spans with value spans, every key shown "
        "again asked for its value, token by token",
        metric="test_token_accuracy",
        chance=most_frequent_value_guess,
        chance_means="naming at each query the value shown most often so far",
        reports_macro_accuracy=True,
        presets={
            # MAD's layout at 64 tokens (MAD's base: vocabulary 16, 128 tokens, spans up to 3).
            "tiny": {**RECALL_TINY, "task.seq_len": 64},
            "small": {
                "task.vocab_size": 32,
                **model_size(n_layer=2, n_embd=128, n_head=2),
                **schedule(batch_size=128, lr=1e-3, steps=6000, eval_every=500),
            },
            # No result of the paper uses it: MAD's base setting at MAD's width and rate.
            "paper": {
                **model_size(n_layer=2, n_embd=128, n_head=4),
                **schedule(batch_size=128, lr=5e-4, steps=20000, eval_every=1000),
            },
        },
    )
)
