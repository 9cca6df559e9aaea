"""A marker lookup at any length, as a data generator for the custom task.

    mixit compare --task custom task.generator=examples/lookup/lookup.py:examples \
        task.size=10 --seeds 3 --tune lr --axis auto --out runs/lookup

The input is ``size`` characters: letters from a-h with one or two ``X`` markers, none last;
the target is the letter right after the first ``X``. Where to read depends on where the
marker stands, which changes from input to input, so a fixed mixing of positions has to keep
every position apart to serve it; at ten characters a small model of any kind manages, and
``--axis auto`` doubles the length until the models part.

Example (size 6): ``{"input": "cXhaXb", "target": "h"}`` (the first ``X`` is second, ``h``
follows it).
"""

from __future__ import annotations

import random

LETTERS = "abcdefgh"
MARKER = "X"


def examples(size: int, n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` (input, target) pairs at ``size`` characters, drawn with ``random.Random(seed)``;
    mixit keeps the distinct inputs and splits them into training and test."""
    if size < 3:
        raise ValueError("a marker lookup needs at least three characters")
    rng = random.Random(seed)
    pairs = []
    while len(pairs) < n + n // 10:  # a few more than asked, for inputs drawn twice
        letters = rng.choices(LETTERS, k=size)
        for at in rng.sample(range(size - 1), k=rng.choice((1, 2))):
            letters[at] = MARKER
        text = "".join(letters)
        target = text[text.index(MARKER) + 1]
        if target != MARKER:  # two markers side by side: drawn again, so the target is a letter
            pairs.append((text, target))
    return pairs
