"""Layer 2: real-data plumbing: corpora (hub, local files, offline fallbacks), tokenizers,
array cache. It imports only ``common``.

Heavy packages (datasets, tokenizers, transformers, pyarrow) are imported only when used.
"""

from mixit.data.cache import cache_key, cached_array, default_cache_dir, file_fingerprint
from mixit.data.corpora import (
    LM_SOURCES,
    SENTIMENT_SOURCES,
    SOTU_TEST_FROM_YEAR,
    load_lm_texts,
    load_sentiment,
)
from mixit.data.tokenizer import (
    EOS,
    PAD,
    SEP,
    decode,
    encode_texts,
    load_pretrained_tokenizer,
    special_token_id,
    task_tokenizer,
    tokenizer_vocab_size,
    train_bpe,
    train_words,
)

__all__ = [
    "EOS",
    "LM_SOURCES",
    "PAD",
    "SENTIMENT_SOURCES",
    "SEP",
    "SOTU_TEST_FROM_YEAR",
    "cache_key",
    "cached_array",
    "decode",
    "default_cache_dir",
    "encode_texts",
    "file_fingerprint",
    "load_lm_texts",
    "load_pretrained_tokenizer",
    "load_sentiment",
    "special_token_id",
    "task_tokenizer",
    "tokenizer_vocab_size",
    "train_bpe",
    "train_words",
]
