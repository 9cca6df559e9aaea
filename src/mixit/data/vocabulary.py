"""A run's vocabulary: how text becomes the token ids its model reads, and back.

Tasks that read text (language modelling, sentiment, custom JSONL data) number their tokens
their own way: a tokenizer's ids, shifted past the task's special ids, or characters in
sorted order. A run saves that numbering beside its weights (``vocab.json``, and the
tokenizer as ``tokenizer.json``), so that ``mixit generate --prompt TEXT`` can encode a prompt
and decode the answer long after the corpus or the tokenizer cache is gone.

A prompt is framed as the task frames an input: a custom task's model answers after the
separator, so the separator follows the prompt (``suffix``); the ids the task gives a meaning
of its own (padding, separator, labels) decode to their names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from mixit.common.errors import UsageError
from mixit.common.io import write_json, write_text
from mixit.data.tokenizer import decode, encode_texts

VOCAB_FILE, TOKENIZER_FILE = "vocab.json", "tokenizer.json"


class VocabularyRecord(TypedDict):
    """``vocab.json``: what ``Vocabulary`` holds, the tokenizer aside (``tokenizer.json``)."""

    size: int
    offset: int
    symbols: list[str]
    specials: dict[str, str]
    unknown: int | None
    prefix: list[int]
    suffix: list[int]
    tokenizer: bool


@dataclass(frozen=True)
class Vocabulary:
    """Token id ``offset + i`` is symbol ``i`` (a character) or the tokenizer's id ``i``.

    Example (a custom task's characters "a", "b", "c" from id 3, its separator 1 after the
    prompt):

    >>> v = Vocabulary(size=6, offset=3, symbols=("a", "b", "c"), specials={1: "<sep>"},
    ...                unknown=2, suffix=(1,))
    >>> v.prompt("cab")
    [5, 3, 4, 1]
    >>> v.decode([5, 3, 4, 1, 4])
    'cab<sep>b'
    """

    size: int
    offset: int = 0
    symbols: tuple[str, ...] = ()
    specials: Mapping[int, str] = field(default_factory=dict)
    unknown: int | None = None  # the id of a character outside ``symbols``
    prefix: tuple[int, ...] = ()  # ids the task puts before an input (a BOS token)
    suffix: tuple[int, ...] = ()  # ids the task puts after an input (a separator)
    tokenizer: Any = field(default=None, compare=False)  # a tokenizers.Tokenizer

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` alone."""
        if self.tokenizer is not None:
            return [self.offset + i for i in encode_texts(self.tokenizer, [text])[0]]
        index = {symbol: self.offset + i for i, symbol in enumerate(self.symbols)}
        if self.unknown is None and any(c not in index for c in text):
            missing = sorted({c for c in text if c not in index})
            raise UsageError(f"the run's vocabulary has no symbol for {missing}")
        return [index.get(c, self.unknown) for c in text]

    def prompt(self, text: str) -> list[int]:
        """The ids of ``text`` framed as the task frames an input."""
        return [*self.prefix, *self.encode(text), *self.suffix]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``: a run of tokenizer ids decodes together, a special id to its name."""
        pieces, run = [], []
        for token in ids:
            inner = int(token) - self.offset
            if int(token) not in self.specials and 0 <= inner < self._inner_size():
                run.append(inner)
                continue
            pieces.append(self._decode_inner(run))
            run = []
            pieces.append(self.specials.get(int(token), f"<{int(token)}>"))
        pieces.append(self._decode_inner(run))
        return "".join(pieces)

    def _inner_size(self) -> int:
        return self.size - self.offset if self.tokenizer is not None else len(self.symbols)

    def _decode_inner(self, ids: list[int]) -> str:
        if not ids:
            return ""
        if self.tokenizer is not None:
            return decode(self.tokenizer, ids)
        return "".join(self.symbols[i] for i in ids)

    def record(self) -> VocabularyRecord:
        return VocabularyRecord(
            size=self.size,
            offset=self.offset,
            symbols=list(self.symbols),
            specials={str(k): v for k, v in self.specials.items()},
            unknown=self.unknown,
            prefix=list(self.prefix),
            suffix=list(self.suffix),
            tokenizer=self.tokenizer is not None,
        )


def fast_tokenizer(tokenizer: Any) -> Any:
    """The ``tokenizers.Tokenizer`` behind ``tokenizer`` (itself, or a fast ``transformers``
    tokenizer's backend), or None for a tokenizer that has none."""
    import tokenizers

    if isinstance(tokenizer, tokenizers.Tokenizer):
        return tokenizer
    return getattr(tokenizer, "backend_tokenizer", None)


def save_vocabulary(folder: Path, vocabulary: Vocabulary) -> None:
    """Write ``vocab.json`` (and ``tokenizer.json``) into ``folder``, each atomically."""
    if vocabulary.tokenizer is not None:
        write_text(folder / TOKENIZER_FILE, vocabulary.tokenizer.to_str())
    write_json(folder / VOCAB_FILE, vocabulary.record())


def load_vocabulary(folder: str | Path) -> Vocabulary | None:
    """The vocabulary a run saved, or None where it saved none (a task of ids, an older run)."""
    folder = Path(folder)
    if not (folder / VOCAB_FILE).is_file():
        return None
    try:
        record: VocabularyRecord = json.loads((folder / VOCAB_FILE).read_text())
        tokenizer = None
        if record["tokenizer"]:
            import tokenizers

            tokenizer = tokenizers.Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        return Vocabulary(
            size=int(record["size"]),
            offset=int(record["offset"]),
            symbols=tuple(record["symbols"]),
            specials={int(k): v for k, v in record["specials"].items()},
            unknown=record["unknown"],
            prefix=tuple(record["prefix"]),
            suffix=tuple(record["suffix"]),
            tokenizer=tokenizer,
        )
    except (
        Exception
    ) as error:  # a torn or foreign file; the tokenizers library raises plain Exception
        raise UsageError(
            f"{folder / VOCAB_FILE} is not a vocabulary mixit wrote: {error}"
        ) from None
