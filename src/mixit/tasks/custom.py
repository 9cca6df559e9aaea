"""The litmus test on your own data: ``task.data_files=train.jsonl,test.jsonl``.

Each line is ``{"input": ..., "target": ...}``: both strings (tokenized by characters, or by a
BPE trained on the training lines, or by a named HF tokenizer) or both lists of integer tokens.
The model reads input, a separator, then target, and is scored on the target tokens only:
``test_accuracy`` is exact match of the whole target, ``test_token_accuracy`` per target token.
Then ``mixit compare --task custom task.data_files=...`` tells which components the task needs.

A classification task (one-token targets: a label) can be read as a classifier reads it:
``task.readout=targets`` chooses the answer among the tokens the targets use (a k-class head,
as the authors' sentiment classifier has), and ``model.mixing_causal=false`` lets MixiT's
mixing read the whole input, as their classifier's does (the label is never an input).
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mixit.common.digest import source_files
from mixit.common.errors import UsageError
from mixit.common.trust import (
    TooSlow,
    no_hard_exit,
    require_trusted,
    said,
    time_limit,
    trusted_function,
)
from mixit.data import (
    default_cache_dir,
    encode_texts,
    file_fingerprint,
    task_tokenizer,
    tokenizer_vocab_size,
)
from mixit.data.vocabulary import Vocabulary, fast_tokenizer
from mixit.tasks.base import (
    TaskData,
    TaskSpec,
    check_choice,
    check_positive,
    model_size,
    register,
    schedule,
)
from mixit.tasks.pairs import checked_pair, is_int_list, is_text, read_pairs
from mixit.tasks.rows import answer_split

PAD, SEP, UNK = 0, 1, 2
GENERATOR_OPTION = "task.generator= on the command line"
READOUTS = ("vocabulary", "targets")
FIRST_SYMBOL = 3  # ids below are special; symbol i (a character, or integer token i) is 3 + i


# The BPE tokenizer's vocabulary when task.vocab_size is not set.
BPE_VOCABULARY = 1024


@dataclass(frozen=True)
class CustomConfig:
    data_files: str = ""  # train.jsonl,test.jsonl with {"input": ..., "target": ...} per line
    tokenizer: str = "chars"  # chars | bpe | words | an HF tokenizer name; int lists need none
    vocab_size: int = BPE_VOCABULARY  # the BPE tokenizer's size; no other tokenizer reads it
    cache_dir: str = ""  # BPE tokenizer cache; empty: $MIXIT_CACHE or ~/.cache/mixit
    readout: str = "vocabulary"  # vocabulary (every token) | targets (the tokens targets use)
    # Instead of files, MODULE:FUNCTION (MODULE a dotted name or a .py file):
    # FUNCTION(size=, n=, seed=) returns n (input, target) pairs at that size.
    generator: str = ""
    size: int = 0  # the generator's difficulty knob: `--axis task.size=...`, or `auto`
    n_train: int = 4000  # a generator's examples: distinct inputs, none in both splits
    n_test: int = 500
    data_seed: int = 0  # a generator's seed: every run of a comparison reads the same examples

    def validate(self) -> None:
        check_choice(self, "readout", READOUTS)
        if self.tokenizer != "bpe" and self.vocab_size != BPE_VOCABULARY:
            raise UsageError(
                f"task.vocab_size sets the size of the BPE tokenizer's vocabulary; with "
                f"task.tokenizer={self.tokenizer} it would change nothing (the vocabulary is "
                "the data's own tokens): drop it, or set task.tokenizer=bpe"
            )
        if self.generator:
            if self.data_files:
                raise UsageError("task custom takes task.data_files or task.generator, not both")
            check_positive(self, "size", "n_train", "n_test")
            return
        files = [f for f in self.data_files.split(",") if f.strip()]
        if len(files) != 2:
            raise UsageError(
                "task custom needs task.data_files=train.jsonl,test.jsonl (two JSONL files with "
                '{"input": ..., "target": ...} lines) or task.generator=MODULE:FUNCTION with '
                "task.size=N"
            )


# How many examples a generator is read for, per row the splits need: enough for inputs it
# repeats, and a bound on one that never stops (it was read whole: 6 GB in 31 s).
READ_AT_MOST = 10


def generated_pairs(config: CustomConfig) -> tuple[list, list]:
    """The training and test examples of ``task.generator`` at ``task.size``: the first
    ``n_train`` distinct inputs it returns, then the next ``n_test`` (so no input is in
    both). Its module is imported only when trusted (``mixit.common.trust``)."""
    setting = f"task.generator='{config.generator}'"
    function, _ = trusted_function(setting, config.generator, GENERATOR_OPTION)
    n = config.n_train + config.n_test
    try:  # an endless generator is read no further than READ_AT_MOST examples a row
        with time_limit(), no_hard_exit():
            given = function(size=config.size, n=n, seed=config.data_seed)
            examples = list(itertools.islice(given, READ_AT_MOST * n))
    except TooSlow as slow:
        raise UsageError(f"{setting} {slow} giving examples at task.size={config.size}") from None
    except (Exception, SystemExit) as error:  # the user's code refused, raised or exited
        raise UsageError(f"{setting} failed at task.size={config.size}: {said(error)}") from None
    distinct: dict[str, tuple[object, object]] = {}
    for number, example in enumerate(examples):
        if isinstance(example, Mapping) and {"input", "target"} <= example.keys():
            example = (example["input"], example["target"])
        if not isinstance(example, tuple | list) or len(example) != 2:
            raise UsageError(f"{setting}: example {number} is not an (input, target) pair")
        pair = checked_pair(tuple(example), f"{setting}, example {number}")
        distinct.setdefault(json.dumps(pair[0]), pair)
    pairs = list(distinct.values())
    if len(pairs) < config.n_train + config.n_test:
        raise UsageError(
            f"{setting} gave {len(pairs)} distinct inputs at task.size={config.size} (in the "
            f"first {READ_AT_MOST * n:,} examples it gave); the splits need task.n_train + "
            f"task.n_test = {n}"
        )
    return pairs[: config.n_train], pairs[config.n_train : config.n_train + config.n_test]


def encode_examples(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]], length: int
) -> tuple[np.ndarray, np.ndarray]:
    """Left-padded rows (N, length) of input ids, SEP, target ids, and the target mask."""
    rows = np.zeros((len(pairs), length), dtype=np.int64)  # (N, S)
    answer = np.zeros((len(pairs), length), dtype=bool)  # (N, S)
    for row, mask, (source, target) in zip(rows, answer, pairs, strict=True):
        tokens = [*source, SEP, *target]
        row[length - len(tokens) :] = tokens
        mask[length - len(target) :] = True
    return rows, answer


def make_custom_data(config: CustomConfig, seed: int) -> TaskData:
    """Your examples; scored on the target tokens.

    Example (tokenizer=chars, characters numbered in sorted order of the training text from 3:
    here "a" 3, "b" 4, "c" 5): the line ``{"input": "abc", "target": "cba"}`` in a file whose
    longest example is 8 tokens:

    >>> rows, answer = encode_examples([([3, 4, 5], [5, 4, 3])], length=8)
    >>> split = answer_split(rows, answer)
    >>> split.inputs.tolist()  # pad, a b c, separator, c b
    [[0, 3, 4, 5, 1, 5, 4]]
    >>> split.targets.tolist()  # predicts c b a from the separator on
    [[-100, -100, -100, -100, 5, 4, 3]]
    """
    train_ids, test_ids, vocab_size = encoded_pairs(config)
    length = max(len(a) + len(b) + 1 for a, b in train_ids + test_ids)
    return TaskData(
        answer_split(*encode_examples(train_ids, length)),
        answer_split(*encode_examples(test_ids, length)),
        vocab_size,
    )


def target_ids(config: CustomConfig, vocab_size: int) -> tuple[int, ...] | None:
    """The tokens the answer is chosen among: with ``task.readout=targets``, those the
    targets of either file use (a classifier's label set: which labels exist, not which
    example has which), every token (None) otherwise. A test label absent from the training
    file stays a possible answer, so no test row has an impossible target."""
    if config.readout == "vocabulary":
        return None
    train_ids, test_ids, _ = encoded_pairs(config)
    return tuple(sorted({token for _, target in train_ids + test_ids for token in target}))


Pairs = tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]


@dataclass(frozen=True)
class Encoded:
    """The files' (input ids, target ids) pairs, the vocabulary size, and the vocabulary that
    maps text to those ids (None for lists of ints, or a tokenizer with no fast backend)."""

    train: Pairs
    test: Pairs
    size: int
    vocabulary: Vocabulary | None


def encoded_pairs(config: CustomConfig) -> tuple[Pairs, Pairs, int]:
    """The (input ids, target ids) of the training and test files, and the vocabulary size.

    Training reads the files for its data and the model reads them again for a
    ``task.readout=targets`` label set; both get one reading and tokenization, kept while
    the files' size and modification time stay as they were."""
    encoded = _encoded(config)
    return encoded.train, encoded.test, encoded.size


def custom_vocabulary(config: CustomConfig) -> Vocabulary | None:
    """How the run's text maps to ids, saved with the run (``mixit generate --prompt``)."""
    return _encoded(config).vocabulary


def _encoded(config: CustomConfig) -> Encoded:
    config.validate()
    if config.generator:
        return _encoded_generated(config)
    fingerprint = tuple(tuple(entry) for entry in file_fingerprint(config.data_files))
    return _encoded_files(
        config.data_files, config.tokenizer, config.vocab_size, config.cache_dir, fingerprint
    )


@functools.lru_cache(maxsize=4)
def _encoded_files(
    data_files: str, tokenizer: str, vocab_size: int, cache_dir: str, fingerprint: tuple
) -> Encoded:
    config = CustomConfig(data_files, tokenizer, vocab_size, cache_dir)
    train_path, test_path = (Path(f.strip()) for f in data_files.split(","))
    train, test = read_pairs(train_path), read_pairs(test_path)
    return _encode(config, train, test, f"{train_path} and {test_path}")


def _encode(config: CustomConfig, train: list, test: list, source: str) -> Encoded:
    """Both splits' examples as ids, by the tokenizer ``config`` names fitted to ``train``."""
    text = is_text(train[0][0])
    for split, pairs in (("training", train), ("test", test)):
        odd = next((i for i, (given, _) in enumerate(pairs, 1) if is_text(given) != text), None)
        if odd is not None:  # one tokenizer reads every example: text, or ids
            raise UsageError(
                f"{source} mix strings and lists of ints: {split} example {odd} is "
                f"{'a list' if text else 'a string'}, the first training example "
                f"{'a string' if text else 'a list'}"
            )
    encode, size, vocabulary = _tokenizer(config, train)

    def encoded(pairs: list[tuple[object, object]]) -> Pairs:
        return tuple((tuple(encode(a)), tuple(encode(b))) for a, b in pairs)

    return Encoded(encoded(train), encoded(test), size, vocabulary)


def _encoded_generated(config: CustomConfig) -> Encoded:
    # Checked on every call, not once per cached reading: trust can be withdrawn.
    setting = f"task.generator='{config.generator}'"
    require_trusted(setting, config.generator.partition(":")[0], GENERATOR_OPTION)
    key = (config.generator, config.size, config.n_train, config.n_test, config.data_seed)
    return _encoded_generator(*key, config.tokenizer, config.vocab_size, config.cache_dir)


@functools.lru_cache(maxsize=4)
def _encoded_generator(
    generator: str, size: int, n_train: int, n_test: int, data_seed: int, *tokenizer: Any
) -> Encoded:
    config = CustomConfig("", *tokenizer, generator=generator, size=size, n_train=n_train,
                          n_test=n_test, data_seed=data_seed)  # fmt: skip
    source = f"the examples of task.generator='{generator}'"
    return _encode(config, *generated_pairs(config), source)


SPECIALS = {PAD: "<pad>", SEP: "<sep>", UNK: "<unk>"}


def _tokenizer(config: CustomConfig, train: list[tuple[object, object]]):
    """An ``encode(value) -> ids`` function for the data's kind, the vocabulary size, and the
    vocabulary of text data."""
    if is_int_list(train[0][0]):
        largest = max(max(max(a), max(b)) for a, b in train)
        return (lambda ids: [FIRST_SYMBOL + min(i, largest + 1) for i in ids]), largest + 5, None
    frame = {"offset": FIRST_SYMBOL, "specials": SPECIALS, "suffix": (SEP,)}
    if config.tokenizer == "chars":
        symbols = tuple(sorted({c for a, b in train for c in a + b}))
        vocabulary = Vocabulary(FIRST_SYMBOL + len(symbols), symbols=symbols, unknown=UNK, **frame)
        return vocabulary.encode, vocabulary.size, vocabulary

    source: dict[str, Any] = {"task": "custom"}
    if config.generator:
        source.update(generator=config.generator, size=config.size, seed=config.data_seed)
    else:
        source["files"] = file_fingerprint(config.data_files)
    tokenizer = task_tokenizer(
        config.tokenizer,
        config.vocab_size,
        default_cache_dir(config.cache_dir),
        source,
        lambda: [a + b for a, b in train],
    )
    # Token ids shift by FIRST_SYMBOL so that PAD, SEP and UNK keep their own ids.
    size = FIRST_SYMBOL + tokenizer_vocab_size(tokenizer)
    backend = fast_tokenizer(tokenizer)
    vocabulary = None if backend is None else Vocabulary(size, tokenizer=backend, **frame)

    def encode(text: str) -> list[int]:
        return [FIRST_SYMBOL + t for t in encode_texts(tokenizer, [text])[0]]

    return encode, size, vocabulary


def custom_files(config: CustomConfig) -> tuple[Path, ...]:
    """The data files, or the generator's source file, the examples come from."""
    if config.generator:
        return source_files(config.generator.partition(":")[0])
    return tuple(Path(name.strip()) for name in config.data_files.split(",") if name.strip())


register(
    TaskSpec(
        name="custom",
        synthetic=False,
        axis="task.size",
        config_cls=CustomConfig,
        make_data=make_custom_data,
        answer_ids=target_ids,
        vocabulary=custom_vocabulary,
        read_files=custom_files,
        summary="your own input -> target pairs from JSONL files (the paper's litmus test)",
        presets={
            "tiny": {
                **model_size(n_layer=2, n_embd=64, n_head=4),
                "model.mixing_scale": "sequence",
                **schedule(batch_size=64, lr=2e-3, steps=1000, eval_every=250),
            },
            "small": {
                **model_size(n_layer=4, n_embd=256, n_head=8),
                **schedule(batch_size=128, lr=1e-3, steps=5000, eval_every=500),
            },
            "paper": {
                "model.construction": "authors",
                **model_size(n_layer=4, n_embd=512, n_head=8),
                **schedule(batch_size=256, lr=5e-4, steps=10000, eval_every=1000),
            },
        },
    )
)
