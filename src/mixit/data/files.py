"""The user's own data files (``task.data_files``): paths checked, and the columns of a .jsonl,
.csv or .parquet file read."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

from mixit.common.errors import UsageError


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def split_files(data_files: str) -> list[Path]:
    paths = [Path(p.strip()).expanduser() for p in data_files.split(",") if p.strip()]
    if not paths:
        raise UsageError(
            "task.dataset=files needs task.data_files: comma-separated paths, e.g. "
            "task.data_files=train.txt,test.txt"
        )
    return paths


def check_file(path: Path, extensions: tuple[str, ...]) -> None:
    if path.suffix.lower() not in extensions:
        raise UsageError(
            f"{path}: unknown file type {path.suffix or '(none)'!r}; accepted: "
            + ", ".join(extensions)
        )
    if not path.is_file():
        raise UsageError(f"data file not found: {path}")
    if path.stat().st_size == 0:
        raise UsageError(f"data file is empty: {path}")


def read_columns(path: Path, columns: tuple[str, ...]) -> dict[str, list[Any]]:
    """The named columns of a .jsonl, .csv or .parquet file (already checked to exist)."""
    try:
        return _read_columns_unchecked(path, columns)
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except csv.Error as e:
        raise UsageError(f"{path}: malformed CSV ({first_line(e)})") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None


def _read_columns_unchecked(path: Path, columns: tuple[str, ...]) -> dict[str, list[Any]]:
    reader = {".jsonl": _jsonl_columns, ".csv": _csv_columns}.get(path.suffix.lower())
    out = (reader or _parquet_columns)(path, columns)
    for c, values in out.items():
        if not values:
            raise UsageError(f"{path}: no rows")
        if c == "text":
            for row, value in enumerate(values, start=1):
                if not isinstance(value, str):
                    raise UsageError(
                        f"{path} row {row}: 'text' must be a string, found {type(value).__name__}"
                    )
    return out


def _jsonl_columns(path: Path, columns: tuple[str, ...]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {c: [] for c in columns}
    with open(path, encoding="utf-8-sig") as f:  # -sig: a byte-order mark is not data
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise UsageError(f"{path} line {number}: not valid JSON ({e.msg})") from None
            for c in columns:
                if not isinstance(record, dict) or c not in record:
                    raise UsageError(
                        f"{path} line {number}: no {c!r} field; each line must be a JSON "
                        f"object with fields {', '.join(columns)}"
                    )
                out[c].append(record[c])
    return out


def _csv_columns(path: Path, columns: tuple[str, ...]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {c: [] for c in columns}
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # documents can be long
    with open(path, encoding="utf-8-sig", newline="") as f:  # as spreadsheets save it
        reader = csv.DictReader(f)
        _check_columns(path, columns, reader.fieldnames or [])
        for row in reader:
            for c in columns:
                if row[c] is None:
                    raise UsageError(f"{path} line {reader.line_num}: missing {c!r} value")
                out[c].append(row[c])
    return out


def _parquet_columns(path: Path, columns: tuple[str, ...]) -> dict[str, list[Any]]:
    import pyarrow.parquet as pq

    try:
        _check_columns(path, columns, pq.read_schema(path).names)
        table = pq.read_table(path, columns=list(columns))
    except UsageError:
        raise
    except Exception as e:
        raise UsageError(f"{path}: not a readable parquet file ({first_line(e)})") from None
    return {c: table.column(c).to_pylist() for c in columns}


def _check_columns(path: Path, columns: tuple[str, ...], found: list[str]) -> None:
    missing = [c for c in columns if c not in found]
    if missing:
        raise UsageError(f"{path}: no {missing[0]!r} column; columns found: {', '.join(found)}")
