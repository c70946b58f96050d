"""Cost of ``NPROC=1`` (one XLA intra-op thread, set by ``import bayes_dpreg``; see its docstring).

Times the batched MCMC-normalX chains of one Fig. 2 cell (50 replications, d = 5, J = 10,
eps = 1, n = 1e5) in fresh interpreters with ``NPROC=1`` and with ``NPROC`` = the number of
CPUs (XLA's default pool size). This cell's batched LAPACK calls are small enough not to be
split over the pool, so the default pool does not deadlock here and the two can be compared.

    python benchmarks/bench_threads.py [--iterations 2000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

CHILD = """
import sys, time, warnings
sys.path.insert(0, {paper!r})  # paper/experiments.py, the paper's batched runner (not in the wheel)
import experiments as ex
warnings.simplefilter("ignore")
reps = ex.make_replicates(n=100_000, d=5, J=10, epsilon=1.0, reps=50, seed=0)
t = time.perf_counter()
ex.run_methods(reps, ["normalx"], num_iterations={iterations}, seed=0)
print(f"{{time.perf_counter() - t:.1f}}")
"""
PAPER = Path(__file__).resolve().parents[1] / "paper"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=2000)
    a = p.parse_args()
    print(f"MCMC-normalX, 50 chains, d = 5, J = 10, {a.iterations} iterations (compilation included)\n")
    print("| NPROC | seconds |")
    print("|---|---|")
    for nproc in ("1", str(os.cpu_count())):
        env = dict(os.environ, NPROC=nproc)
        res = subprocess.run([sys.executable, "-c", CHILD.format(iterations=a.iterations, paper=str(PAPER))], env=env,
                             capture_output=True, text=True, check=True)
        print(f"| {nproc} | {res.stdout.strip()} |", flush=True)


if __name__ == "__main__":
    main()
