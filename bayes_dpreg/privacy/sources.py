"""A party's table for a release, read in batches: ``S = X^T X`` and ``z = X^T y`` of the
clipped rows accumulated over Arrow record batches, so that memory stays flat in ``n``.

Sources (:func:`batches`): a CSV or Parquet file or a directory of them (``pyarrow.dataset``;
for CSV an optional header line, detected when a field of the first line is not a number),
a ``pyarrow.Table``/``RecordBatchReader``/``Dataset`` (Polars and DuckDB hand these over),
any iterable of ``(X, y)`` array batches, or a Dask DataFrame (a party whose table
outgrows one machine: each partition is clipped and summed on the cluster by
:func:`_dask_partials`, and only the ``d x d`` partial sums come back; the noise is added
once, on the caller's side). ``y`` names the response column (an index for a
headerless CSV, default the last); the features are ``columns`` or all others, in order.
Every batch is checked (numeric, no nulls, finite) with an error naming the column, and
clipped row by row to the declared bounds before it enters the sums, which are exact
(:mod:`bayes_dpreg.privacy.gram`). Files are read with bounded read-ahead (a Parquet file one row group
at a time, a CSV file in blocks of :data:`CSV_BLOCK` bytes), so that peak memory does not grow
with ``n`` (``benchmarks/release_scaling.py``). Errors name the file and column, never a value
or a row: the data are a party's private records.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .gaussian import ClipReport, clip
from .gram import Gram

__all__ = [
    "batches",
    "accumulate",
    "Accumulated",
    "clipped_sums",
    "is_table_source",
    "feature_names",
    "validate_data",
]

BATCH_ROWS = 1 << 16
CSV_BLOCK = 1 << 20  # bytes per CSV block: the reader holds a few decoded blocks (4 MB blocks: 270-310 MB)


def _real_array(name: str, a: Any) -> np.ndarray:
    """``a`` as an array of real numbers: booleans, complex numbers, strings, objects and masked
    arrays (whose mask ``np.asarray`` would drop) are refused."""
    if isinstance(a, np.ma.MaskedArray):
        raise ValueError(f"{name} is a masked array: fill or drop the masked entries first (the mask would be ignored)")
    arr = np.asarray(a)
    if arr.dtype.kind not in "iuf":
        kind = {"b": "booleans", "c": "complex numbers", "O": "Python objects", "U": "strings", "S": "bytes"}
        raise ValueError(
            f"{name} must hold real numbers, got {kind.get(arr.dtype.kind, arr.dtype.name)} (dtype {arr.dtype})"
        )
    return arr


def _as_float_array(name: str, a: Any, ndim: int) -> np.ndarray:
    arr = np.asarray(_real_array(name, a), dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} contains NaN or inf (first at index {tuple(int(i) for i in bad)})")
    return arr


def validate_data(X: Any, y: Any, min_rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Check a party's private data: finite, ``X`` of shape (n, d), ``y`` of shape (n,), n >= d
    (``n >= min_rows`` for one batch of a streamed table)."""
    X = _as_float_array("X", X, 2)
    y = np.asarray(_real_array("y", y), dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    y = _as_float_array("y", y, 1)
    n, d = X.shape
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries")
    if d < 1:
        raise ValueError("X must have at least one column")
    if n < (d if min_rows is None else min_rows):
        raise ValueError(f"a party needs at least d = {d} rows, got n = {n}")
    return X, y


def is_table_source(X: Any) -> bool:
    """Whether ``release`` should stream ``X`` (a path, an Arrow object, a Dask DataFrame or a batch iterator)."""
    if isinstance(X, (str, os.PathLike)):
        return True
    if _is_dask_frame(X):
        return True
    mod = type(X).__module__
    if mod.startswith("pyarrow"):
        return True
    return isinstance(X, Iterator) or (
        isinstance(X, Iterable) and not hasattr(X, "__array__") and not isinstance(X, (list, tuple))
    )


def _is_dask_frame(X: Any) -> bool:
    return type(X).__module__.startswith("dask") and hasattr(X, "to_delayed") and hasattr(X, "columns")


def _dask_y_column(frame: Any, y: Any) -> Any:
    """The response column's name in a Dask DataFrame (``y`` a name or an index)."""
    return list(frame.columns)[y] if isinstance(y, int) else y


def _frame_arrays(frame: Any, y: Any, columns: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)`` of one pandas partition, read through Arrow like every other table batch."""
    import pyarrow as pa

    return _column_arrays(pa.RecordBatch.from_pandas(frame, preserve_index=False), y, columns)


def _partition_sums(
    frame: Any, x_bound: float, y_bound: float, y: Any, columns: list[str] | None, intercept: bool
) -> tuple[Gram, ClipReport] | None:
    """The exact Gram of one pandas partition's clipped rows (runs on a Dask worker)."""
    if len(frame) == 0:
        return None
    X, yv = validate_data(*_frame_arrays(frame, y, columns), min_rows=1)
    return clipped_sums(X, yv, x_bound, y_bound, intercept)


def clipped_sums(
    X: np.ndarray, y: np.ndarray, x_bound: float, y_bound: float, intercept: bool
) -> tuple[Gram, ClipReport]:
    """The exact Gram (``S``, ``z``, ``y^T y``, :mod:`bayes_dpreg.privacy.gram`) of validated rows clipped
    to the bounds, with a leading column of ones when ``intercept`` (App. B.2)."""
    Xc, yc, rep = clip(X, y, x_bound, y_bound)
    return Gram.of_rows(Xc, yc, x_bound, y_bound, intercept), rep


def _dask_partials(
    frame: Any, x_bound: float, y_bound: float, y: Any, columns: list[str] | None, intercept: bool
) -> list[tuple[Gram, ClipReport]]:
    """Per-partition clipped sums of a Dask DataFrame, computed where the partitions live
    (the active ``distributed`` client, else Dask's default scheduler)."""
    import dask

    parts = [dask.delayed(_partition_sums)(p, x_bound, y_bound, y, columns, intercept) for p in frame.to_delayed()]
    return [r for r in dask.compute(*parts) if r is not None]


def _csv_header(path: Path) -> bool:
    """Whether the first line is a header: some field of it is neither empty nor a number (a headerless
    file's first row may have empty fields, e.g. lines that end with a comma)."""
    with open(path, newline="") as fh:
        first = fh.readline()
    return not all(_is_number(f) for f in first.rstrip("\r\n").split(",") if f.strip())


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _arrow_batches(obj: Any, batch_rows: int) -> Iterator[Any]:
    import pyarrow as pa
    import pyarrow.dataset as ds

    if isinstance(obj, pa.Table):
        yield from obj.to_batches(max_chunksize=batch_rows)
    elif isinstance(obj, pa.RecordBatch):
        yield obj
    elif isinstance(obj, pa.RecordBatchReader):
        yield from obj
    elif isinstance(obj, ds.Dataset):  # bounded read-ahead: the scanner's defaults buffer 800 MB per 2e6 x 20 rows
        yield from obj.to_batches(batch_size=batch_rows, batch_readahead=0, fragment_readahead=0, use_threads=False)
    else:
        raise TypeError(f"unsupported Arrow source {type(obj).__name__}")


def _parquet_batches(path: Path, batch_rows: int) -> Iterator[Any]:
    """A Parquet file one row group at a time (``iter_batches`` over the whole file keeps every
    row group it has read: 2 GB for 1e7 x 20 float64 rows, against 80 MB this way)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path, buffer_size=1 << 20)
    for i in range(pf.metadata.num_row_groups):
        yield from pf.iter_batches(batch_size=batch_rows, row_groups=[i], use_threads=False)


def _csv_schema(path: Path) -> tuple[Any, list[str]]:
    """The read options of a CSV file and its column names (``f0, f1, ...`` without a header),
    from its first block."""
    import pyarrow.csv as pcsv

    read = pcsv.ReadOptions(autogenerate_column_names=not _csv_header(path), block_size=CSV_BLOCK, use_threads=False)
    with pcsv.open_csv(path, read_options=read) as first:
        return read, list(first.schema.names)


def _csv_batches(path: Path) -> Iterator[Any]:
    """A CSV file in blocks of :data:`CSV_BLOCK` bytes, every column read as float64 (inferring
    the types from the first block would reject a later block that holds a decimal point)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    read, names = _csv_schema(path)
    convert = pcsv.ConvertOptions(column_types={c: pa.float64() for c in names}, strings_can_be_null=False)
    try:
        yield from pcsv.open_csv(path, read_options=read, convert_options=convert)
    except pa.ArrowInvalid as exc:
        raise ValueError(f"{path}: {_safe_arrow_message(exc, names)}") from None


def _path_batches(path: Path, batch_rows: int) -> Iterator[Any]:
    """The record batches of a CSV or Parquet file, or of the Parquet files of a directory."""
    import pyarrow.dataset as ds

    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    suffix = path.suffix.lower() if path.is_file() else ""
    if suffix == ".csv":
        yield from _csv_batches(path)
    elif suffix in (".parquet", ".pq"):
        yield from _parquet_batches(path, batch_rows)
    elif path.is_dir():
        for f in sorted(ds.dataset(path, format="parquet").files):
            yield from _parquet_batches(Path(f), batch_rows)
    else:
        raise ValueError(f"{path}: a release reads CSV (.csv) or Parquet (.parquet, or a directory of them)")


_ARROW_SAFE = re.compile(r"Expected \d+ columns?, got \d+")
_ARROW_COLUMN = re.compile(r"In CSV column #(\d+)")


def _safe_arrow_message(exc: Exception, names: list[str] | None = None) -> str:
    """Arrow's error without the data it quotes (a CSV row, an invalid value): the data are private."""
    text = str(exc)
    col = _ARROW_COLUMN.search(text)
    if col is not None and names is not None and int(col.group(1)) < len(names):
        return f"column {names[int(col.group(1))]!r} is not numeric (the value is not shown: it is private data)"
    safe = _ARROW_SAFE.search(text)
    what = safe.group(0) if safe else type(exc).__name__
    return f"cannot read it as a numeric table ({what}; the offending row is not shown: it is private data)"


def _response_name(names: list[str], y: Any) -> Any:
    """The response column's name: ``y`` itself, or the name at index ``y`` (an error past the table)."""
    if isinstance(y, (int, np.integer)) and not isinstance(y, bool):
        if not -len(names) <= y < len(names):
            raise ValueError(f"response column index {y} is out of range: the table has {len(names)} columns")
        return names[y]
    return y


def _column_arrays(batch: Any, y: Any, columns: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.schema.names
    y_name = _response_name(names, y)
    if y_name not in names:
        raise ValueError(f"no response column {y!r}; the table has {names}")
    feats = columns if columns is not None else [c for c in names if c != y_name]
    missing = [c for c in feats if c not in names]
    if missing:
        raise ValueError(f"no feature column(s) {missing}; the table has {names}")
    out, nulls = [], {}
    for c in [*feats, y_name]:
        col = batch.column(names.index(c))
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise ValueError(f"column {c!r} is {col.type}, not numeric")
        if col.null_count:
            nulls[c] = col.null_count
        out.append(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False))
    if nulls:
        raise ValueError(_missing_message(nulls, batch.num_rows))
    arr = np.column_stack(out)
    return arr[:, :-1], arr[:, -1]


def _missing_message(nulls: dict[str, int], rows: int) -> str:
    """The error for columns with missing values (empty fields, NaN) in a block of ``rows`` rows."""
    by_count: dict[int, list[str]] = {}
    for c, k in nulls.items():
        by_count.setdefault(k, []).append(repr(c))
    where = "; ".join(
        ("every row of " if k == rows else f"{k} in ") + ("column " if len(cs) == 1 else "columns ") + ", ".join(cs)
        for k, cs in by_count.items()
    )
    hint = (
        "; an empty column often comes from lines that end with a comma: name the response and the features "
        "(y=, columns=; --y-column, --columns in the CLI)"
        if rows in by_count
        else ""
    )
    return (
        f"missing values (empty or NaN) in a block of {rows} rows: {where}. The release takes complete numeric "
        f"rows: drop or impute the incomplete ones first{hint}"
    )


def _schema_names(source: Any) -> list[str] | None:
    """The column names of a table source without reading its rows (``None``: a headerless CSV or
    an iterable of arrays, whose columns have no names)."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    if _is_dask_frame(source):
        return [str(c) for c in source.columns]
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.suffix.lower() == ".csv":
            return _csv_schema(path)[1] if _csv_header(path) else None
        if path.is_dir():
            return list(ds.dataset(path, format="parquet").schema.names)
        return list(pq.ParquetFile(path).schema_arrow.names)
    if isinstance(source, (pa.Table, pa.RecordBatch, pa.RecordBatchReader, ds.Dataset)):
        return list(source.schema.names)
    return None


def feature_names(source: Any, y: Any = -1, columns: list[str] | None = None) -> list[str] | None:
    """The names of the features ``release`` reads from a table source: ``columns``, else every
    column but the response (``None`` where the columns have no names)."""
    if columns is not None:
        return [str(c) for c in columns]
    try:
        names = _schema_names(source)
    except Exception:  # an unreadable source fails with a clear error where the rows are read
        return None
    if names is None:
        return None
    y_name = _response_name(names, y)
    return [c for c in names if c != y_name]


def batches(
    source: Any, y: Any = -1, columns: list[str] | None = None, batch_rows: int = BATCH_ROWS
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(X, y)`` float64 batches of ``source`` (see the module docstring)."""
    label = str(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
    if _is_dask_frame(source):  # one partition at a time, on the caller's side
        y_col = _dask_y_column(source, y)
        for i in range(source.npartitions):
            frame = source.get_partition(i).compute()
            if len(frame):
                yield _frame_arrays(frame, y_col, columns)
        return
    if isinstance(source, (str, os.PathLike)) or type(source).__module__.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(source, (str, os.PathLike)):
            it = _path_batches(Path(source), batch_rows)
        else:
            it = _arrow_batches(source, batch_rows)
        try:
            for b in it:
                if b.num_rows:
                    yield _column_arrays(b, y, columns)
        except pa.ArrowException as exc:
            raise ValueError(f"{label}: {_safe_arrow_message(exc)}") from None
        return
    for item in source:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError("an iterable source must yield (X, y) pairs of arrays")
        yield item


class Accumulated:
    """The exact Gram of the clipped (scaled) rows (``S``, ``z``, ``y^T y``) and the clipping counts."""

    def __init__(self) -> None:
        self.gram: Gram | None = None
        self.x_clipped = self.y_clipped = self.scaled = 0
        self.max_x_norm = self.max_abs_y = 0.0

    def add(self, gram: Gram, rep: ClipReport) -> None:
        if self.gram is None:
            self.gram = gram
        else:
            self.gram.merge(gram)
        self.x_clipped += rep.n_x_clipped
        self.y_clipped += rep.n_y_clipped
        self.scaled += rep.n_scaled
        self.max_x_norm = max(self.max_x_norm, rep.max_x_norm)
        self.max_abs_y = max(self.max_abs_y, rep.max_abs_y)

    @property
    def n(self) -> int:
        return 0 if self.gram is None else self.gram.n

    @property
    def report(self) -> ClipReport:
        return ClipReport(
            n_rows=self.n,
            n_x_clipped=self.x_clipped,
            n_y_clipped=self.y_clipped,
            max_x_norm=self.max_x_norm,
            max_abs_y=self.max_abs_y,
            n_scaled=self.scaled,
        )


def accumulate(
    source: Any,
    x_bound: float,
    y_bound: float,
    *,
    y: Any = -1,
    columns: list[str] | None = None,
    intercept: bool = False,
    batch_rows: int = BATCH_ROWS,
    progress: bool = False,
) -> Accumulated:
    """Clip every row of every batch to the bounds and sum its contributions to ``S`` and ``z``."""
    acc = Accumulated()
    if _is_dask_frame(source):
        for part in _dask_partials(source, x_bound, y_bound, _dask_y_column(source, y), columns, intercept):
            acc.add(*part)
    else:
        it: Iterable = batches(source, y, columns, batch_rows)
        if progress:
            from tqdm.auto import tqdm

            it = tqdm(it, unit=" batches", desc="release")
        for Xb, yb in it:
            acc.add(*clipped_sums(*validate_data(Xb, yb, min_rows=1), x_bound, y_bound, intercept))
    if acc.gram is None:
        raise ValueError("the source has no rows")
    return acc
