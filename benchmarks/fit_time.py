"""Wall time of one ``bayes_dpreg.fit`` with the default method, in fresh processes.

    python benchmarks/fit_time.py [--d 5] [--J 5] [--eps 1] [--reps 3]

For each data set (the paper's simulation, n = 1e5, and a well-conditioned one with
unit-variance features, n = 2e4; bounds at the data maxima) it starts new Python processes
and times, after ``import bayes_dpreg`` and the releases:

* ``cold``: the first fit in the process, compilation included, empty JAX compilation cache;
* ``cold, cache``: the same in a second process whose persistent compilation cache
  (``JAX_COMPILATION_CACHE_DIR``) the first one filled;
* ``warm``: a second fit in the same process on new data of the same shapes (compiles nothing).

Every fit runs the default 4 chains x (500 warm-up + 500 draws). Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, sys, time, warnings
t0 = time.perf_counter()
import numpy as np
import bayes_dpreg as bd
t_import = time.perf_counter() - t0
warnings.simplefilter("ignore")
kind, d, J, eps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])

def stats(seed):
    if kind == "paper":
        sim = bd.simulate(100_000, d, seed)
        X, y = sim.X, sim.y
    else:
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((20_000, d))
        y = X @ (0.3 * rng.standard_normal(d)) + 0.5 * rng.standard_normal(20_000)
    xb, yb = np.linalg.norm(X, axis=1).max(), np.abs(y).max()
    return [bd.release(a, b, epsilon=eps, delta=1e-5, x_bound=xb, y_bound=yb, seed=j)
            for j, (a, b) in enumerate(bd.split_parties(X, y, J))]

out = {"import": t_import}
for label, seed in (("first", 1), ("second", 2)):
    s = stats(seed)
    t = time.perf_counter()
    idata = bd.fit(s, seed=seed)
    out[label] = time.perf_counter() - t
    out[label + "_converged"] = idata.posterior.attrs["converged"]
    out[label + "_steps"] = float(idata.sample_stats["n_steps"].mean())
print(json.dumps(out))
"""


def child(kind: str, d: int, J: int, eps: float, cache: str | None) -> dict:
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["BAYES_DPREG_COMPILATION_CACHE"] = "0"  # bayes_dpreg.cache's opt-in stays off; the cache row sets JAX's own
    if cache:
        env.update(JAX_COMPILATION_CACHE_DIR=cache, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    res = subprocess.run([sys.executable, "-c", CHILD, kind, str(d), str(J), str(eps)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--J", type=int, default=5)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=3, help="fresh processes per row (the median is shown)")
    args = ap.parse_args()
    import jax

    print(f"# {platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}, jax {jax.__version__}; "
          f"d = {args.d}, J = {args.J}, eps = {args.eps:g}; median of {args.reps} processes")
    print("| data | import (s) | cold fit (s) | cold fit, persistent cache (s) | warm fit (s) | NUTS steps / iteration "
          "| converged |")
    print("|---|---|---|---|---|---|---|")
    for kind in ("paper", "unit"):
        rows = []
        for _ in range(args.reps):
            with tempfile.TemporaryDirectory() as cache:
                a = child(kind, args.d, args.J, args.eps, cache)
                b = child(kind, args.d, args.J, args.eps, cache)
            rows.append((a["import"], a["first"], b["first"], a["second"], a["first_steps"],
                         a["first_converged"] and a["second_converged"] and b["first_converged"]))
        med = lambda k: sorted(r[k] for r in rows)[len(rows) // 2]
        label = "paper's simulation, n = 1e5" if kind == "paper" else "unit-variance features, n = 2e4"
        print(f"| {label} | {med(0):.1f} | {med(1):.1f} | {med(2):.1f} | {med(3):.1f} | {med(4):.0f} | "
              f"{sum(r[5] for r in rows)}/{len(rows)} |", flush=True)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n(wall time {time.perf_counter() - t0:.0f} s)")
