"""A content lookup at any length, as a data generator for the custom task.

    mixit compare --task custom task.generator=examples/lookup/lookup.py:examples \
        task.size=10 --seeds 3 --axis auto --out runs/lookup

The input is ``size`` letters from a-p, then ``?`` and a query letter that occurs among them
but not last; the target is the letter that follows the query's first occurrence. Which
position to read depends on what the letters are, not on where they stand, so a fixed mixing
matrix cannot serve it at every length; at ten letters a small model of any kind may still
manage, which is what ``--axis auto`` finds out.

Example (size 6): ``{"input": "kdakpm?a", "target": "k"}`` (``a`` first occurs third, and
``k`` follows it).
"""

from __future__ import annotations

import random

LETTERS = "abcdefghijklmnop"


def examples(size: int, n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` (input, target) pairs at ``size`` letters, drawn with ``random.Random(seed)``;
    mixit keeps the distinct inputs and splits them into training and test."""
    if size < 2:
        raise ValueError("a lookup needs at least two letters")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n + n // 10):  # a few more than asked, for inputs drawn twice
        letters = "".join(rng.choices(LETTERS, k=size))
        at = rng.randrange(size - 1)
        query = letters[at]
        first = letters.index(query)
        pairs.append((f"{letters}?{query}", letters[first + 1]))
    return pairs
