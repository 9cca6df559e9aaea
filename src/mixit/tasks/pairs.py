"""A custom task's examples: (input, target) pairs, both text or both lists of token ids, read
from the lines of a JSONL file or checked as a generator gives them; each refusal is one line
that names the file and line, or the example."""

from __future__ import annotations

import json
from pathlib import Path

from mixit.common.errors import UsageError

# Integer-token data: every id up to the largest gets an embedding row, so ids past this many
# could not fit any machine's memory.
MAX_TOKEN_ID = 2**24


def read_pairs(path: Path) -> list[tuple[object, object]]:
    """(input, target) of every line of a JSONL file; one-line UsageErrors name file and line."""
    if not path.is_file():
        raise UsageError(f"{path} {'is not a file' if path.exists() else 'does not exist'}")
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a byte-order mark is not data
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{path}: not UTF-8 text (byte {error.start}); custom data files are JSON lines"
        ) from None
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise UsageError(f"{path}:{number}: not a JSON object") from None
        if not isinstance(record, dict) or "input" not in record or "target" not in record:
            raise UsageError(f'{path}:{number}: expected {{"input": ..., "target": ...}}')
        pairs.append(checked_pair((record["input"], record["target"]), f"{path}:{number}"))
    if not pairs:
        raise UsageError(f"{path} holds no examples")
    return pairs


def checked_pair(pair: tuple[object, object], where: str) -> tuple[object, object]:
    """An (input, target) example, both strings or both lists of token ids; ``where`` (a
    file's line, a generator's example) names it in the UsageError."""
    if not all(is_text(x) or is_int_list(x) for x in pair) or (
        is_text(pair[0]) != is_text(pair[1])
    ):
        raise UsageError(f"{where}: input and target must both be strings or both lists of ints")
    if not is_text(pair[0]) and max(max(pair[0]), max(pair[1])) >= MAX_TOKEN_ID:
        raise UsageError(
            f"{where}: token ids must be below {MAX_TOKEN_ID:,} (one embedding row each), got "
            f"{max(max(pair[0]), max(pair[1])):,}"
        )
    return pair


def is_text(value: object) -> bool:
    """A non-empty string: an example given as text."""
    return isinstance(value, str) and len(value) > 0


def is_int_list(value: object) -> bool:
    """A non-empty list of non-negative ints: an example given as token ids."""
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    )
