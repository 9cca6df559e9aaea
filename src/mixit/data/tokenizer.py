"""Tokenizers trained on a corpus (byte-level BPE, word-level) or pretrained ones found locally.

Two kinds of tokenizer object flow through the helpers below: a ``tokenizers.Tokenizer`` (what
``train_bpe`` and ``train_words`` return, or a ``tokenizer.json`` loaded directly) and a
``transformers`` tokenizer. ``encode_texts``, ``decode`` and ``tokenizer_vocab_size`` accept both.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError
from mixit.data.cache import building, cache_key

PAD, SEP, EOS = "<pad>", "<sep>", "<eos>"
SPECIAL_TOKENS = (PAD, SEP, EOS)  # ids 0, 1, 2 in every tokenizer mixit trains
UNK = "<unk>"  # id 3 in word-level tokenizers


def _is_fast_tokenizer(tokenizer: Any) -> bool:
    import tokenizers

    return isinstance(tokenizer, tokenizers.Tokenizer)


def _trained_or_saved(path: Path, texts: list[str], build: Callable[[list[str]], Any]) -> Any:
    """The tokenizer saved at ``path``, or ``build(texts)`` saved there atomically."""
    path = Path(path)
    if (saved := _saved(path)) is not None:
        return saved
    if not texts:
        raise UsageError("cannot train a tokenizer on no text: the training corpus is empty")
    with building(path):
        if (saved := _saved(path)) is not None:  # trained while this process waited
            return saved
        tokenizer = build(texts)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            tokenizer.save(str(tmp))
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    return tokenizer


def _saved(path: Path) -> Any:
    """The tokenizer saved at ``path``, or None where there is none or it is damaged (then it
    is trained again and overwritten)."""
    import tokenizers

    try:
        return tokenizers.Tokenizer.from_file(str(path)) if path.exists() else None
    except Exception:
        return None


def train_bpe(texts: list[str], vocab_size: int, path: Path) -> Any:
    """Train a byte-level BPE on ``texts`` and save it to ``path``; reuse ``path`` if it exists.

    The caller is responsible for putting everything the tokenizer depends on (corpus, vocab
    size) into ``path``'s name, e.g. with ``cache_key``.
    """
    if vocab_size < 256 + len(SPECIAL_TOKENS):
        raise UsageError(
            f"BPE vocab_size {vocab_size} is too small: it must be at least "
            f"{256 + len(SPECIAL_TOKENS)} (256 bytes + {len(SPECIAL_TOKENS)} special tokens)"
        )

    def build(texts: list[str]) -> Any:
        import tokenizers
        from tokenizers import decoders, models, pre_tokenizers, trainers

        tokenizer = tokenizers.Tokenizer(models.BPE())
        # No prefix space, so decode(encode(x)) == x exactly.
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=list(SPECIAL_TOKENS),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte encodable
            show_progress=False,
        )
        tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
        return tokenizer

    return _trained_or_saved(path, texts, build)


def train_words(texts: list[str], vocab_size: int, path: Path) -> Any:
    """A word-level tokenizer: the ``vocab_size`` most frequent lower-cased words and
    punctuation runs of ``texts``, everything else ``<unk>``; saved to and reused from ``path``.

    Short texts (review snippets) carry their meaning in whole words; a word vocabulary keeps a
    review short in tokens, which matters when the model reads a fixed number of them.
    """
    if vocab_size <= len(SPECIAL_TOKENS) + 1:
        raise UsageError(
            f"word vocab_size {vocab_size} is too small: it must exceed "
            f"{len(SPECIAL_TOKENS) + 1} (the special tokens and {UNK})"
        )

    def build(texts: list[str]) -> Any:
        import tokenizers
        from tokenizers import models, normalizers, pre_tokenizers, trainers

        tokenizer = tokenizers.Tokenizer(models.WordLevel(unk_token=UNK))
        tokenizer.normalizer = normalizers.Lowercase()
        tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()  # words and punctuation runs
        trainer = trainers.WordLevelTrainer(
            vocab_size=vocab_size, special_tokens=[*SPECIAL_TOKENS, UNK], show_progress=False
        )
        tokenizer.train_from_iterator(texts, trainer=trainer, length=len(texts))
        return tokenizer

    return _trained_or_saved(path, texts, build)


def special_token_id(tokenizer: Any, token: str) -> int | None:
    """Id of ``SEP`` or ``EOS`` in a trained tokenizer, or the pretrained one's equivalent."""
    if _is_fast_tokenizer(tokenizer):
        return tokenizer.token_to_id(token)
    if token == SEP:
        return getattr(tokenizer, "sep_token_id", None) or getattr(tokenizer, "eos_token_id", None)
    return getattr(tokenizer, "eos_token_id", None)


def load_pretrained_tokenizer(name: str) -> Any:
    """A tokenizer available on this machine: a ``tokenizer.json`` path, a directory holding
    one, or a ``transformers`` name/directory already in the local cache (never downloads)."""
    import tokenizers

    local = Path(name).expanduser()
    json_file = local / "tokenizer.json" if local.is_dir() else local
    if json_file.suffix == ".json" and json_file.is_file():
        try:
            return tokenizers.Tokenizer.from_file(str(json_file))
        except Exception as e:
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise UsageError(f"cannot read tokenizer file {json_file}: {first}") from None
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise UsageError(
            f"tokenizer {name!r} not found: give a tokenizer.json path or a directory holding "
            "one, or pip install transformers to use a locally cached Hugging Face tokenizer"
        ) from None
    try:
        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception:
        raise UsageError(
            f"tokenizer {name!r} not found locally (the Hugging Face hub is not used): give a "
            "tokenizer.json path, a local directory, or a name already in the local HF cache"
        ) from None


# Where a byte-level BPE's text may be cut without changing its ids: before a newline that a
# letter or digit follows. GPT-2's pre-tokenizing pattern ends every piece there (a whitespace
# run stops before its last character when a word follows, and that newline then stands
# alone), and BPE never merges across pieces.
LINE_START = re.compile(r"(?=\n[A-Za-z0-9])")


def encode_texts(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    """Token ids of each text, without special tokens (the caller adds SEP/EOS itself).

    A byte-level BPE encodes each text line by line and joins the ids: the same ids, about
    2.5 times faster on documents as long as a speech, which the tokenizers library encodes
    in one piece in more than linear time."""
    if not _is_fast_tokenizer(tokenizer):
        return [list(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]
    if not _cut_at_lines(tokenizer):
        return [e.ids for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]
    lines = [LINE_START.split(text) for text in texts]
    encoded = iter(
        tokenizer.encode_batch([ln for ls in lines for ln in ls], add_special_tokens=False)
    )
    return [[i for _ in text_lines for i in next(encoded).ids] for text_lines in lines]


def _cut_at_lines(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` pre-tokenizes as GPT-2's byte-level BPE does, with nothing
    before (no normaliser, no prefix space): the case ``LINE_START`` holds for."""
    from tokenizers import pre_tokenizers

    split = tokenizer.pre_tokenizer
    return (
        tokenizer.normalizer is None
        and isinstance(split, pre_tokenizers.ByteLevel)
        and split.use_regex
        and not split.add_prefix_space
    )


def decode(tokenizer: Any, ids: list[int]) -> str:
    """Text of ``ids``; special tokens are kept (shown as ``<eos>`` etc.)."""
    return tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)


def tokenizer_vocab_size(tokenizer: Any) -> int:
    """Number of distinct ids the tokenizer can produce, added/special tokens included."""
    if _is_fast_tokenizer(tokenizer):
        return tokenizer.get_vocab_size(with_added_tokens=True)
    return len(tokenizer)


def task_tokenizer(
    name: str,
    vocab_size: int,
    cache: Path,
    source: dict[str, Any],
    training_texts: Callable[[], list[str]],
) -> Any:
    """The tokenizer a task asked for: ``"bpe"``, ``"words"`` or the name of a pretrained one.

    A trained tokenizer is cached under a key of ``source`` (what the corpus is) and
    ``vocab_size``; the training texts are read only when no saved tokenizer exists yet.
    """
    trainers = {"bpe": train_bpe, "words": train_words}
    if name not in trainers:
        return load_pretrained_tokenizer(name)

    path = cache / f"{name}-{cache_key(**source, vocab_size=vocab_size)}.json"
    return trainers[name]([] if path.exists() else training_texts(), vocab_size, path)
