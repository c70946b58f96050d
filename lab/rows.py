"""Rows of results in CSV files: read, appended as replications finish, or written at once."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows of the CSV file ``path`` (its header's keys, string values); none if it does not exist."""
    path = Path(path)
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def append_rows(
    path: str | Path, rows: Iterable[Mapping[str, Any]], fields: Sequence[str], ignore_extra: bool = False
) -> None:
    """Append ``rows`` to the CSV file ``path`` (columns ``fields``, the header first where the file
    is new) and sync it to disk, so that a run stopped later keeps them. A key outside ``fields``
    raises ``ValueError`` unless ``ignore_extra``."""
    path = Path(path)
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(fields), extrasaction="ignore" if ignore_extra else "raise")
        if new:
            w.writeheader()
        w.writerows(rows)
        f.flush()
        os.fsync(f.fileno())


def write_rows(path: str | Path, rows: Sequence[Mapping[str, Any]], fields: Sequence[str] | None = None) -> Path:
    """Write ``rows`` (columns ``fields``, by default the keys of every row in order of appearance)
    to the CSV file ``path`` atomically: a temporary file beside it, then a rename. Returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = list(fields) if fields is not None else list(dict.fromkeys(k for r in rows for k in r))
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)
    return path
