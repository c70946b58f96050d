"""Streaming release: rows per second and peak memory against n, each release in a fresh process.

    python -m benchmarks.release_scaling [--sizes 1e6 1e7 1e8] [--d 20] [--sources generated parquet csv]

``generated``: ``release`` of an iterator of (X, y) batches drawn on the fly (nothing stored).
``parquet`` / ``csv``: one file of ``n`` rows (Parquet in row groups of ``--row-group`` rows),
written first (not timed) and then released from its path. Values are rounded to 3 decimals so
that the files stay small enough for the disk (about 2 GB of Parquet and 9 GB of CSV at 1e8
x 20); the reader still decodes every value. ``base`` is the same release of 100 rows: peak RSS
minus it is what the data cost. Peak RSS is the process's maximum resident set (``getrusage``),
which includes Python, NumPy, JAX and OpenDP (about 0.3 GB). Every release uses the default
(discrete, OpenDP) noise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from lab.machine import cpu_model

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
kind, n, d, path = sys.argv[1], int(float(sys.argv[2])), int(sys.argv[3]), sys.argv[4]
warnings.simplefilter("ignore")
import bayes_dpreg as bd

def gen():
    rng = np.random.default_rng(0)
    theta = np.linspace(-0.5, 0.5, d)
    left = n
    while left:
        m = min(65536, left)
        X = rng.standard_normal((m, d)) * (0.9 / np.sqrt(d))
        yield X, np.clip(X @ theta + 0.1 * rng.standard_normal(m), -1, 1)
        left -= m

t0 = time.perf_counter()
if kind == "generated":
    bd.release(gen(), None, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0)
else:
    bd.release(path, "y", epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0)
wall = time.perf_counter() - t0
print(json.dumps({"wall": wall, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(kind: str, n: float, d: int, path: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(n), str(d), path], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def chunks(n: int, d: int, rows: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(1)
    schema = pa.schema([(f"x{k}", pa.float64()) for k in range(d)] + [("y", pa.float64())])
    for i in range(0, n, rows):
        m = min(rows, n - i)
        X = np.round(rng.standard_normal((m, d)) * (0.9 / np.sqrt(d)), 3)
        cols = {f"x{k}": X[:, k] for k in range(d)} | {"y": np.round(np.clip(X.sum(1) * 0.1, -1, 1), 3)}
        yield pa.table(cols, schema=schema)


def write(kind: str, path: str, n: int, d: int, row_group: int) -> None:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    tables = chunks(n, d, row_group)
    first = next(tables)
    if kind == "parquet":
        with pq.ParquetWriter(path, first.schema) as w:
            w.write_table(first)
            for t in tables:
                w.write_table(t)
    else:
        with pcsv.CSVWriter(path, first.schema) as w:
            w.write_table(first)
            for t in tables:
                w.write_table(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7, 1e8])
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--row-group", type=int, default=100_000)
    ap.add_argument("--sources", nargs="+", default=["generated", "parquet", "csv"])
    ap.add_argument("--dir", default=None, help="where to write the files (default: a temporary directory)")
    args = ap.parse_args()
    import platform

    import pyarrow

    print(
        f"# {cpu_model()}, {len(os.sched_getaffinity(0))} CPUs, python {platform.python_version()}, pyarrow "
        f"{pyarrow.__version__}; d = {args.d}, Parquet row groups of {args.row_group} rows\n"
    )
    print("| source | rows | file (GB) | wall (s) | rows / s | peak RSS (MB) | over 100 rows (MB) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for kind in args.sources:
            path = f"{tmp}/t.{kind}"
            if kind != "generated":
                write(kind, path, 100, args.d, args.row_group)
            base = run(kind, 100, args.d, path)["rss_mb"]
            for n in args.sizes:
                size = 0.0
                if kind != "generated":
                    write(kind, path, int(n), args.d, args.row_group)
                    size = os.path.getsize(path) / 1e9
                r = run(kind, n, args.d, path)
                print(
                    f"| {kind} | {n:.0e} | {size:.2f} | {r['wall']:.1f} | {n / r['wall']:.3g} | "
                    f"{r['rss_mb']:.0f} | {r['rss_mb'] - base:+.0f} |",
                    flush=True,
                )
            if kind != "generated":
                os.unlink(path)


if __name__ == "__main__":
    main()
