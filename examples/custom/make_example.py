"""Writes the custom-task example: reverse a string of five letters from a-h.

    python examples/custom/make_example.py   # writes train.jsonl and test.jsonl beside this file

Each output position reads one earlier position that depends only on where it is, never on
what the letters are, so the routing is input-independent: a fixed mixing matrix can serve it,
and the litmus test says so (README).
"""

import json
import random
from pathlib import Path

LETTERS = "abcdefgh"
LENGTH = 5


def main() -> None:
    rng = random.Random(0)
    words = sorted({"".join(rng.choices(LETTERS, k=LENGTH)) for _ in range(6000)})
    rng.shuffle(words)
    here = Path(__file__).parent
    for name, part in (("train", words[:4000]), ("test", words[4000:4500])):
        lines = (json.dumps({"input": w, "target": w[::-1]}) for w in part)
        (here / f"{name}.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
