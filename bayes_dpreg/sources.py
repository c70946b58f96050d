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
clipped row by row to the declared bounds before it enters the sums (float64, one BLAS
``syrk``-like product per batch).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .privacy import ClipReport, clip

__all__ = ["batches", "accumulate", "Accumulated", "clipped_sums", "is_table_source"]

BATCH_ROWS = 1 << 16


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
) -> tuple[np.ndarray, np.ndarray, int, ClipReport, float] | None:
    """Clipped ``S``, ``z``, ``y^T y`` of one pandas partition (runs on a Dask worker)."""
    from .release import validate_data

    if len(frame) == 0:
        return None
    X, yv = validate_data(*_frame_arrays(frame, y, columns), min_rows=1)
    return clipped_sums(X, yv, x_bound, y_bound, intercept)


def clipped_sums(
    X: np.ndarray, y: np.ndarray, x_bound: float, y_bound: float, intercept: bool
) -> tuple[np.ndarray, np.ndarray, int, ClipReport, float]:
    """``(X_c^T X_c, X_c^T y_c, n, report, y_c^T y_c)`` of validated rows clipped to the bounds,
    ``X_c`` with a leading column of ones when ``intercept`` (App. B.2). ``X_c^T X_c`` is as
    BLAS returns it, not symmetrised."""
    Xc, yc, rep = clip(X, y, x_bound, y_bound)
    if intercept:
        Xc = np.column_stack([np.ones(Xc.shape[0]), Xc])
    return Xc.T @ Xc, Xc.T @ yc, Xc.shape[0], rep, float(yc @ yc)


def _dask_partials(
    frame: Any, x_bound: float, y_bound: float, y: Any, columns: list[str] | None, intercept: bool
) -> list[tuple[np.ndarray, np.ndarray, int, ClipReport, float]]:
    """Per-partition clipped sums of a Dask DataFrame, computed where the partitions live
    (the active ``distributed`` client, else Dask's default scheduler)."""
    import dask

    parts = [dask.delayed(_partition_sums)(p, x_bound, y_bound, y, columns, intercept) for p in frame.to_delayed()]
    return [r for r in dask.compute(*parts) if r is not None]


def _csv_header(path: Path) -> bool:
    with open(path, newline="") as fh:
        first = fh.readline()
    try:
        [float(f) for f in first.rstrip("\r\n").split(",")]
        return False
    except ValueError:
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
    elif isinstance(obj, ds.Dataset):
        yield from obj.to_batches(batch_size=batch_rows)
    else:
        raise TypeError(f"unsupported Arrow source {type(obj).__name__}")


def _path_dataset(path: Path, batch_rows: int) -> Any:
    import pyarrow.csv as pcsv
    import pyarrow.dataset as ds

    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    suffix = path.suffix.lower() if path.is_file() else ""
    if suffix == ".csv":
        header = _csv_header(path)
        fmt = ds.CsvFileFormat(
            read_options=pcsv.ReadOptions(autogenerate_column_names=not header, block_size=1 << 22),
            convert_options=pcsv.ConvertOptions(strings_can_be_null=False),
        )
        return ds.dataset(path, format=fmt)
    if suffix in (".parquet", ".pq") or path.is_dir():
        return ds.dataset(path, format="parquet")
    raise ValueError(f"{path}: a release reads CSV (.csv) or Parquet (.parquet, or a directory of them)")


def _column_arrays(batch: Any, y: Any, columns: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc

    names = batch.schema.names
    y_name = names[y] if isinstance(y, int) else y
    if y_name not in names:
        raise ValueError(f"no response column {y!r}; the table has {names}")
    feats = columns if columns is not None else [c for c in names if c != y_name]
    missing = [c for c in feats if c not in names]
    if missing:
        raise ValueError(f"no feature column(s) {missing}; the table has {names}")
    out = []
    for c in [*feats, y_name]:
        col = batch.column(names.index(c))
        if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise ValueError(f"column {c!r} is {col.type}, not numeric")
        if col.null_count:
            raise ValueError(f"column {c!r} has {col.null_count} missing value(s) in this batch")
        out.append(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False))
    arr = np.column_stack(out)
    return arr[:, :-1], arr[:, -1]


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

        try:
            if isinstance(source, (str, os.PathLike)):
                source = _path_dataset(Path(source), batch_rows)
            for b in _arrow_batches(source, batch_rows):
                if b.num_rows:
                    yield _column_arrays(b, y, columns)
        except pa.ArrowException as exc:
            raise ValueError(f"{label}: {exc}") from None
        return
    for item in source:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError("an iterable source must yield (X, y) pairs of arrays")
        yield item


class Accumulated:
    """Exact ``S``, ``z`` of the clipped rows, the row count and the clipping counts."""

    def __init__(self) -> None:
        self.S: np.ndarray | None = None
        self.z: np.ndarray | None = None
        self.n = 0
        self.yy = 0.0  # y^T y of the clipped responses (the B&S release)
        self.x_clipped = self.y_clipped = 0
        self.max_x_norm = self.max_abs_y = 0.0

    def add(self, S: np.ndarray, z: np.ndarray, rows: int, rep: ClipReport, yy: float = 0.0) -> None:
        if self.S is None:
            self.S, self.z = np.zeros_like(S), np.zeros_like(z)
        elif S.shape != self.S.shape:
            raise ValueError(f"a batch has {S.shape[0]} columns where earlier ones had {self.S.shape[0]}")
        self.S += S
        self.z += z
        self.yy += yy
        self.n += rows
        self.x_clipped += rep.n_x_clipped
        self.y_clipped += rep.n_y_clipped
        self.max_x_norm = max(self.max_x_norm, rep.max_x_norm)
        self.max_abs_y = max(self.max_abs_y, rep.max_abs_y)

    @property
    def report(self) -> ClipReport:
        return ClipReport(
            n_rows=self.n,
            n_x_clipped=self.x_clipped,
            n_y_clipped=self.y_clipped,
            max_x_norm=self.max_x_norm,
            max_abs_y=self.max_abs_y,
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
    from .release import validate_data

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
    if acc.S is None:
        raise ValueError("the source has no rows")
    acc.S = 0.5 * (acc.S + acc.S.T)
    return acc
