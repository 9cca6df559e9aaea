"""A task's splits built from its rows of token ids: the answer tokens scored and the rest
masked (``answer_split``, ``last_token_split``, ``suffix_split``, ``side_by_side_split``), and
the rows of a train and a test split kept distinct (``unique_rows``, ``disjoint_test``,
``sample_disjoint``)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from mixit.common.errors import UsageError
from mixit.tasks.base import IGNORE_INDEX, Split


def answer_split(sequences: np.ndarray, answer_mask: np.ndarray) -> Split:
    """Turn full sequences (N, S) and a mask of answer tokens (N, S) into a next-token Split.

    inputs = sequences[:, :-1]; targets[t] = sequences[t + 1] where that token is an answer
    token, IGNORE_INDEX elsewhere, so the model is scored only on producing the answer.
    """
    inputs = sequences[:, :-1]  # (N, S-1)
    targets = np.where(answer_mask[:, 1:], sequences[:, 1:], IGNORE_INDEX)  # (N, S-1)
    return Split(
        torch.as_tensor(inputs, dtype=torch.long), torch.as_tensor(targets, dtype=torch.long)
    )


def side_by_side_split(rows: np.ndarray) -> Split:
    """A Split from rows (N, 2T) that hold inputs and targets side by side: tasks whose
    targets do not follow from the sequence draw them so, and distinct rows then compare
    both."""
    inputs, targets = np.split(rows, 2, axis=1)
    return Split(
        torch.as_tensor(inputs, dtype=torch.long), torch.as_tensor(targets, dtype=torch.long)
    )


def unique_rows(rows: np.ndarray) -> np.ndarray:
    """Boolean mask (N,) that keeps the first occurrence of each distinct row of ``rows`` (N, S)."""
    if rows.shape[1] == 0 or len(rows) == 0:
        return np.arange(len(rows)) < 1
    if rows.min() >= 0:
        # Token ids are small: compare them as 1- or 2-byte values, several times faster.
        rows = rows.astype(np.min_scalar_type(rows.max()))
    rows = np.ascontiguousarray(rows)
    # One opaque bytes value per row, so np.unique sorts N keys instead of N x S columns.
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()  # (N,)
    _, first = np.unique(keys, return_index=True)
    keep = np.zeros(rows.shape[0], dtype=bool)
    keep[first] = True
    return keep


def disjoint_test(train_rows: np.ndarray, test_rows: np.ndarray) -> np.ndarray:
    """Boolean mask (M,) of test rows that are distinct and do not occur among the train rows."""
    both = np.concatenate([train_rows, test_rows])
    keep = unique_rows(both)[train_rows.shape[0] :]
    return keep


def move_padding_right(rows: np.ndarray, pad: int = 0) -> np.ndarray:
    """``rows`` (N, S) whose padding leads each row, with that padding moved to the row's end
    and the tokens kept in order (padding only ever leads: no pad inside the content)."""
    lead = (rows != pad).argmax(axis=1)  # (N,) leading pads of each row
    columns = (np.arange(rows.shape[1]) + lead[:, None]) % rows.shape[1]  # (N, S)
    return np.take_along_axis(rows, columns, axis=1)


def last_token_split(rows: np.ndarray, pad: int = 0) -> Split:
    """Next-token inputs and targets of right-padded rows (N, S), scored on each row's last
    non-pad token. That token never appears among the inputs (a pad takes its place), so a
    non-causal model cannot read the answer."""
    answer_at = (rows != pad).cumsum(-1).argmax(-1)  # (N,) position of each row's answer
    answer_mask = np.zeros(rows.shape, dtype=bool)  # (N, S)
    answer_mask[np.arange(len(rows)), answer_at] = True
    split = answer_split(rows, answer_mask)
    split.inputs[:, 1:][torch.as_tensor(answer_mask[:, 1:-1])] = pad  # (N, S - 1)
    return split


def suffix_split(sequences: np.ndarray, answer_len: int) -> Split:
    """``answer_split`` for tasks whose answer is the last ``answer_len`` tokens of every row."""
    answer_mask = np.zeros(sequences.shape, dtype=bool)  # (N, S)
    answer_mask[:, -answer_len:] = True
    return answer_split(sequences, answer_mask)


def sample_disjoint(
    sample: Callable[[int], np.ndarray],
    n_train: int,
    n_test: int,
    max_rounds: int = 20,
    sample_test: Callable[[int], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``n_train`` training rows and ``n_test`` distinct test rows absent from training.

    ``sample(n)`` returns ``n`` fresh rows (n, S); ``sample_test``, where given, draws the test
    rows instead (a task whose test rows differ in kind, as fuzzy recall's keys do). Test
    candidates are drawn with a surplus and redrawn until enough survive; a space too small to
    hold them is a UsageError.
    """
    draw_test = sample_test or sample
    train = sample(n_train)  # (n_train, S)
    test = train[:0]
    for _ in range(max_rounds):
        missing = n_test - len(test)
        if missing <= 0:
            break
        candidates = np.concatenate([test, draw_test(2 * missing + 16)])
        test = candidates[disjoint_test(train, candidates)]
    if len(test) < n_test:
        raise UsageError(
            f"could not draw {n_test} test examples unseen in training (found {len(test)}): "
            "the task's example space is too small for n_train + n_test"
        )
    return train, test[:n_test]
