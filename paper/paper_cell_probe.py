"""Is the default's miscalibration on the paper's simulation the sampler or the posterior?

    python -m paper.paper_cell_probe [--reps 2 3 5]

The paper's simulation cell of ``studies/coverage.py`` (d = 5, J = 5, n = 1e5, eps = 1,
seed 2026), replications 2, 3 and 5 (among the first six, those with the largest error of
``normalx-nuts``'s posterior mean): each is fitted by ``normalx-nuts`` (4 x (500 + 500)), by the
Metropolis ``normalx`` (4 x (2000 + 2000)), two different samplers of the same posterior,
and by ``fixeds``. Prints the truth, the eigenvalues of the features' second moment
``X^T X / n``, the release's ``sigma_S``, and per method the posterior means, sds and
``(mean - truth) / sd``.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np

from lab.paths import DATA_DIR
from studies import coverage as cov

CELL: dict[str, Any] = dict(id="paper-d5-J5-eps1", suite="paper", d=5, J=5, eps=1.0, n=100_000, prior="default")


def main() -> None:
    import bayes_dpreg as bd

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, nargs="+", default=[2, 3, 5])
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    np.set_printoptions(precision=2, suppress=True)
    for rep in args.reps:
        (X, y, s_noise), theta, _ = cov.replicate(CELL, rep, 2026, args.data_dir)
        stats = cov._releases(X, y, CELL["J"], CELL["eps"], s_noise, {"ssp"})["ssp"]
        ev = np.linalg.eigvalsh(X.T @ X / len(X))
        print(
            f"rep {rep}: truth {theta}, eigenvalues of X^T X / n {np.array2string(ev, precision=4)}, "
            f"sigma_S {stats[0].sigma_S:.0f}"
        )
        runs: list[tuple[str, dict[str, Any]]] = [
            ("normalx-nuts", {}),
            ("normalx", dict(num_samples=2000, num_warmup=2000)),
            ("fixeds", {}),
        ]
        for method, kw in runs:
            post = bd.fit(stats, method, seed=rep, **kw).posterior["theta"]
            m, sd = post.mean(("chain", "draw")).values, post.std(("chain", "draw")).values
            print(f"  {method:<13} mean {m}  sd {sd}  z {(m - theta) / sd}", flush=True)


if __name__ == "__main__":
    main()
