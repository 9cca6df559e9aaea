"""mixit.data: corpora (local files, offline packages, the hub offline), BPE, the array cache."""

import csv
import json
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mixit.common.errors import UsageError
from mixit.data import (
    EOS,
    PAD,
    SEP,
    SOTU_TEST_FROM_YEAR,
    cache_key,
    cached_array,
    corpora,
    decode,
    encode_texts,
    load_lm_texts,
    load_pretrained_tokenizer,
    load_sentiment,
    tokenizer_vocab_size,
    train_bpe,
)

DOCS = [f"Document {i}: the quick brown fox jumps over {i} lazy dogs." for i in range(200)]


def write(path: Path, texts: list[str], labels: list | None = None) -> Path:
    """Write texts (and labels) in the format the extension names."""
    rows = [
        {"text": t} if labels is None else {"text": t, "label": y}
        for t, y in zip(texts, labels or [None] * len(texts), strict=True)
    ]
    if path.suffix == ".txt":
        path.write_text("\n\n".join(texts), encoding="utf-8")
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif path.suffix == ".csv":
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def raises_one_line(call: Callable[[], object], match: str) -> str:
    with pytest.raises(UsageError, match=match) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


# ----------------------------------------------------------------------------- language modelling


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".parquet"])
def test_lm_table_files_train_then_test(tmp_path: Path, ext: str) -> None:
    train = write(tmp_path / f"train{ext}", DOCS[:150])
    test = write(tmp_path / f"test{ext}", DOCS[150:])
    assert load_lm_texts("files", f"{train},{test}") == (DOCS[:150], DOCS[150:])
    assert load_lm_texts("files", f"{train},{test}", max_documents=7)[0] == DOCS[:7]


def test_lm_txt_files_are_documents(tmp_path: Path) -> None:
    train = write(tmp_path / "train.txt", DOCS[:3])
    a = write(tmp_path / "a.txt", DOCS[3:5])
    b = write(tmp_path / "b.txt", DOCS[5:6])
    train_texts, test_texts = load_lm_texts("files", f"{train}, {a},{b}")
    assert train_texts == ["\n\n".join(DOCS[:3])]
    assert test_texts == ["\n\n".join(DOCS[3:5]), DOCS[5]]


@pytest.mark.parametrize("ext", [".txt", ".jsonl"])
def test_lm_single_file_split_is_fixed_and_disjoint(tmp_path: Path, ext: str) -> None:
    path = write(tmp_path / f"all{ext}", DOCS)
    train, test = load_lm_texts("files", str(path))
    assert sorted(train + test) == sorted(DOCS)
    assert not set(train) & set(test)
    assert 5 <= len(test) <= 40
    assert load_lm_texts("files", str(path)) == (train, test)


def test_sotu_splits_by_year_without_stage_markers() -> None:
    train, test = load_lm_texts("sotu")
    assert len(train) > 200 and 3 <= len(test) <= 20
    assert not set(train) & set(test)
    assert sum(map(len, train)) > 10_000_000
    joined = "\n".join(train + test)
    assert not re.search(r"\[(applause|laughter|see app note\.?)\]", joined, re.IGNORECASE)
    assert "  " not in joined
    assert load_lm_texts("sotu", max_documents=5)[0] == train[:5]
    assert SOTU_TEST_FROM_YEAR == 2017


# ----------------------------------------------------------------------------- sentiment


def test_rotten_tomatoes_offline() -> None:
    train_x, train_y, test_x, test_y = load_sentiment("rotten-tomatoes")
    assert 12_500 <= len(train_x) + len(test_x) <= 12_808
    assert 1_500 <= len(test_x) <= 2_500
    assert set(train_y) == set(test_y) == {0, 1}
    assert len(train_x) == len(train_y) and len(test_x) == len(test_y)
    assert not set(train_x) & set(test_x)


def test_sentiment_files_string_and_int_labels(tmp_path: Path) -> None:
    train = write(tmp_path / "train.csv", ["good", "bad", "fine"], ["pos", "neg", "pos"])
    test = write(tmp_path / "test.jsonl", ["awful"], ["neg"])
    assert load_sentiment("files", f"{train},{test}") == (
        ["good", "bad", "fine"],
        [1, 0, 1],
        ["awful"],
        [0],
    )
    # CSV "1" and JSON 1 are the same label; -1/1 map in numeric order.
    train = write(tmp_path / "train2.parquet", ["a", "b"], [1, -1])
    test = write(tmp_path / "test2.csv", ["c"], ["1"])
    assert load_sentiment("files", f"{train},{test}")[1::2] == ([1, 0], [1])


# ----------------------------------------------------------------------------- bad input


def test_bad_lm_files(tmp_path: Path) -> None:
    good = write(tmp_path / "good.jsonl", DOCS[:3])
    raises_one_line(lambda: load_lm_texts("files", f"{tmp_path / 'no.txt'},{good}"), "not found")
    (tmp_path / "empty.txt").write_text("")
    raises_one_line(lambda: load_lm_texts("files", f"{tmp_path / 'empty.txt'},{good}"), "empty")
    (tmp_path / "x.docx").write_text("hello")
    raises_one_line(lambda: load_lm_texts("files", str(tmp_path / "x.docx")), "unknown file type")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n\n{"body": "no text"}\n')
    raises_one_line(lambda: load_lm_texts("files", f"{bad},{good}"), r"bad.jsonl line 3: no 'text'")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("body,label\nhello,1\n")
    raises_one_line(
        lambda: load_lm_texts("files", f"{bad_csv},{good}"), "columns found: body, label"
    )
    raises_one_line(
        lambda: load_lm_texts("files", str(write(tmp_path / "one.txt", ["x"]))), "too few"
    )
    raises_one_line(lambda: load_lm_texts("files", ""), "data_files")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café".encode("latin-1"))
    raises_one_line(lambda: load_lm_texts("files", f"{latin1},{good}"), "not UTF-8")
    raises_one_line(lambda: load_lm_texts("nope"), "accepted: sotu, wikitext-103")


def test_bad_sentiment_files(tmp_path: Path) -> None:
    train = write(tmp_path / "train.csv", ["a", "b", "c"], [0, 1, 2])
    test = write(tmp_path / "test.csv", ["d"], [0])
    raises_one_line(lambda: load_sentiment("files", f"{train},{test}"), "exactly two distinct")
    one = write(tmp_path / "one.jsonl", ["a", "b"], ["pos", "pos"])
    raises_one_line(lambda: load_sentiment("files", f"{one},{one}"), "found 1")
    no_label = write(tmp_path / "nolabel.parquet", ["a"])
    raises_one_line(lambda: load_sentiment("files", f"{no_label},{test}"), "no 'label' column")
    raises_one_line(lambda: load_sentiment("files", str(test)), "exactly two files")
    raises_one_line(lambda: load_sentiment("imdb"), "accepted: rotten-tomatoes")


def test_hub_unreachable_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    # Whatever this machine's network, behave as if the hub were down.
    monkeypatch.setattr(corpora, "_hub_reachable", lambda timeout=3.0: False)
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.setenv(key, "1")
    start = time.monotonic()
    raises_one_line(lambda: load_lm_texts("wikitext-103"), "cannot reach the Hugging Face hub")
    raises_one_line(lambda: load_sentiment("yelp-polarity"), "task.dataset=rotten-tomatoes")
    assert time.monotonic() - start < 15


# ----------------------------------------------------------------------------- tokenizers


def test_bpe_round_trip_and_reuse(tmp_path: Path) -> None:
    path = tmp_path / "tok" / "bpe.json"
    tok = train_bpe(DOCS, 300, path)
    assert [tok.token_to_id(t) for t in (PAD, SEP, EOS)] == [0, 1, 2]
    assert tokenizer_vocab_size(tok) <= 300
    texts = ["Hello, world!  Two spaces.", " leading space\nand a newline", "café ✓"]
    ids = encode_texts(tok, texts)
    assert [decode(tok, i) for i in ids] == texts
    assert 0 not in {i for seq in ids for i in seq}  # no special tokens added
    again = train_bpe(["entirely different text"], 300, path)
    assert encode_texts(again, texts) == ids
    assert load_pretrained_tokenizer(str(path)).get_vocab() == tok.get_vocab()
    tok.save(str(tmp_path / "tokenizer.json"))  # a directory holding tokenizer.json
    assert load_pretrained_tokenizer(str(tmp_path)).get_vocab() == tok.get_vocab()


# Text where whitespace runs of every kind sit before words: a BPE trained on it merges them.
SPACY = st.text(alphabet=st.sampled_from(list("ab1.\n \t\u00e9")), max_size=60)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(SPACY, max_size=4))
def test_a_bpe_cut_at_lines_encodes_as_in_one_piece(tmp_path: Path, texts: list[str]) -> None:
    corpus = [f"a \n\n b{i} \n\t\n1 \n a\n\n  \u00e9.{' ' * (i % 5)}\n1" for i in range(50)]
    tok = train_bpe(corpus, 300, tmp_path / "spacy.json")
    whole = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    assert encode_texts(tok, texts) == whole


def test_unknown_tokenizer_and_bad_vocab(tmp_path: Path) -> None:
    raises_one_line(lambda: load_pretrained_tokenizer("no-such/tokenizer-xyz"), "no-such")
    raises_one_line(lambda: train_bpe(DOCS, 100, tmp_path / "t.json"), "at least 259")


# ----------------------------------------------------------------------------- cache


def test_a_cache_file_being_built_is_waited_for_not_built_twice(tmp_path: Path) -> None:
    """Two builders of one file (threads here; processes hold the same file lock): the second
    waits for the first and reads its array."""
    started, calls = threading.Event(), []

    def build() -> np.ndarray:
        calls.append(1)
        started.set()
        time.sleep(0.3)  # the second caller arrives while this one builds
        return np.arange(10, dtype=np.int32)

    path = tmp_path / "c" / "shared.npy"
    results: list[np.ndarray] = []
    first = threading.Thread(target=lambda: results.append(cached_array(path, build, ndim=1)))
    first.start()
    assert started.wait(10)
    second = cached_array(path, build, ndim=1)
    first.join()
    assert len(calls) == 1
    assert np.array_equal(second, results[0]) and np.array_equal(second, np.arange(10))


def test_cached_array_reused_and_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def build() -> np.ndarray:
        calls.append(1)
        return np.arange(1000, dtype=np.int32)

    path = tmp_path / "c" / f"{cache_key(corpus='x', vocab=300)}.npy"
    assert cache_key(vocab=300, corpus="x") == cache_key(corpus="x", vocab=300)
    first = cached_array(path, build, ndim=1)
    second = cached_array(path, build, ndim=1)
    assert len(calls) == 1 and isinstance(second, np.memmap)
    assert np.array_equal(first, second)
    with open(path, "r+b") as f:
        f.truncate(100)
    assert np.array_equal(cached_array(path, build, ndim=1), np.arange(1000))
    assert len(calls) == 2
    np.save(path, np.zeros((3, 4), dtype=np.float32))  # another shape and type: not ours
    assert np.array_equal(cached_array(path, build, ndim=1), np.arange(1000))
    assert len(calls) == 3
    left = sorted(p.name for p in path.parent.iterdir())
    assert left == [f".{path.name}.lock", path.name]  # the lock, and no temp files
    monkeypatch.setenv("MIXIT_CACHE", str(tmp_path / "mc"))
    from mixit.data import default_cache_dir

    assert default_cache_dir() == tmp_path / "mc"
