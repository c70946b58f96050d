"""Streaming release: rows per second and peak memory against n, each size in a fresh process.

    python benchmarks/release_scaling.py [--sizes 1e6 1e7 1e8] [--d 20] [--batch 65536]

``generated``: ``release`` of an iterator of (X, y) batches drawn on the fly (nothing
stored), discrete noise, so the data never exist in memory at once. ``parquet``: a Parquet
file of the first size (row groups of ``--batch``) streamed by ``release`` against reading
the same file with ``pyarrow.dataset`` alone. Peak RSS is the process's maximum resident
set (``getrusage``), which includes Python, NumPy, JAX and OpenDP (about 0.3-0.4 GB).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
kind, n, d, batch, path = sys.argv[1], int(float(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
warnings.simplefilter("ignore")
import bayes_dpreg as bd

def gen():
    rng = np.random.default_rng(0)
    theta = np.linspace(-0.5, 0.5, d)
    left = n
    while left:
        m = min(batch, left)
        X = rng.standard_normal((m, d)) * (0.9 / np.sqrt(d))
        yield X, np.clip(X @ theta + 0.1 * rng.standard_normal(m), -1, 1)
        left -= m

t0 = time.perf_counter()
if kind == "generated":
    s = bd.release(gen(), None, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0)
elif kind == "parquet":
    s = bd.release(path, "y", epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0)
elif kind == "pyarrow":
    import pyarrow.dataset as ds
    rows = sum(b.num_rows for b in ds.dataset(path, format="parquet").to_batches(batch_size=batch))
else:
    raise SystemExit(kind)
wall = time.perf_counter() - t0
print(json.dumps({"wall": wall, "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""


def run(kind: str, n: float, d: int, batch: int, path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, str(n), str(d), str(batch), path],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_parquet(path: str, n: int, d: int, batch: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    schema = pa.schema([(f"x{k}", pa.float64()) for k in range(d)] + [("y", pa.float64())])
    with pq.ParquetWriter(path, schema) as w:
        for i in range(0, n, batch):
            m = min(batch, n - i)
            X = rng.standard_normal((m, d)) * (0.9 / np.sqrt(d))
            cols = {f"x{k}": X[:, k] for k in range(d)} | {"y": np.clip(X.sum(1) * 0.1, -1, 1)}
            w.write_table(pa.table(cols, schema=schema))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 1e7, 1e8])
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--batch", type=int, default=65536)
    args = ap.parse_args()
    import jax

    print(f"# {platform.machine()}, {len(__import__('os').sched_getaffinity(0))} CPUs, python "
          f"{platform.python_version()}, jax {jax.__version__}; d = {args.d}, batches of {args.batch} rows\n")
    print("| source | rows | wall (s) | rows / s | peak RSS (GB) |\n|---|---|---|---|---|")
    for n in args.sizes:
        r = run("generated", n, args.d, args.batch, "")
        print(f"| generated on the fly | {n:.0e} | {r['wall']:.1f} | {n / r['wall']:.3g} | {r['rss_gb']:.2f} |",
              flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/t.parquet"
        n = int(args.sizes[0])
        write_parquet(path, n, args.d, args.batch)
        for kind, label in (("pyarrow", "Parquet, pyarrow.dataset read only"), ("parquet", "Parquet, release")):
            r = run(kind, n, args.d, args.batch, path)
            print(f"| {label} | {n:.0e} | {r['wall']:.1f} | {n / r['wall']:.3g} | {r['rss_gb']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
