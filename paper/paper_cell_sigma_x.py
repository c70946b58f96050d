"""Why the default misses on the paper's simulation: the prior of Sigma_x, not the sampler or theta's prior.

    python -m paper.paper_cell_sigma_x [--reps 20] [--workers 2] [--out docs/results/coverage]

The paper's simulation cell of ``studies/coverage.py`` (d = 5, J = 5, n = 1e5, eps = 1,
seed 2026): ``Sigma_x ~ IW(V^T V, d + 1)`` with ``V`` a 5 x 5 standard normal matrix, so the
features are nearly collinear (smallest eigenvalue of ``X^T X / n`` 6e-4-9e-3 against
``sigma_S / n_j`` of 0.2-0.35), and ``theta ~ N(0, I)``. ``normalx-nuts`` is fitted on the
same releases under six priors that differ only where named:

* ``default``: ``Prior()`` (``C`` autoscaled, ``Lambda = diag(E[x_k^2])``, ``kappa = d + 1``);
* ``matched``: the generating prior for ``theta`` and ``Sigma_x`` (``C = I``, ``Lambda = V^T V``);
* ``matched Sigma_x``: only ``Lambda = V^T V`` (``C`` autoscaled);
* ``matched theta``: only ``C = I``;
* ``pooled``: ``Lambda`` = the pooled estimate of ``Sigma_x`` from the released ``S~_j``
  (:func:`bayes_dpreg.model.linalg.pooled_covariance`, full matrix; post-processing);
* ``diag / 10``: ``Lambda = diag(E[x_k^2]) / 10``.

Writes ``paper_cell_sigma_x.md`` (90% and 50% coverage with Monte-Carlo standard errors,
RMSE, share of fits with divergences or R-hat > 1.01) under ``--out``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import time
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np

from lab.paths import DATA_DIR, REPO
from studies import coverage as cov

CELL: dict[str, Any] = dict(id="paper-d5-J5-eps1", suite="paper", d=5, J=5, eps=1.0, n=100_000, prior="default")
VARIANTS = ("default", "matched", "matched Sigma_x", "matched theta", "pooled", "diag / 10")
SEED = 2026


def _generating_lambda(rep: int) -> np.ndarray:
    """``V^T V`` of replication ``rep`` (the first draw of ``coverage.replicate``'s data stream)."""
    from bayes_dpreg.datasets import paper_scale_matrix

    return paper_scale_matrix(CELL["d"], cov.streams(CELL, rep, SEED)[0])


def priors(stats: list, rep: int) -> dict:
    import bayes_dpreg as bd
    from bayes_dpreg.model.linalg import pooled_covariance
    from bayes_dpreg.stats import stack_stats

    bd.enable_x64()  # pooled_covariance is a low-level (JAX) function

    st = stack_stats(stats)
    ms = bd.prior_scales(st).feature_ms
    noise = float(np.sqrt(np.sum(np.asarray(st.sigma_S) ** 2)))
    scatter, dof = jnp.asarray(np.asarray(st.S).sum(0)), jnp.asarray(float(np.sum(st.n)))
    pooled = np.asarray(pooled_covariance(scatter, dof, jnp.asarray(noise)))
    Lam, kappa = _generating_lambda(rep), CELL["d"] + 1.0
    return {
        "default": bd.Prior(),
        "matched": bd.Prior(C=1.0, Lambda=Lam, kappa=kappa),
        "matched Sigma_x": bd.Prior(Lambda=Lam, kappa=kappa),
        "matched theta": bd.Prior(C=1.0),
        "pooled": bd.Prior(Lambda=pooled),
        "diag / 10": bd.Prior(Lambda=np.diag(ms) / 10),
    }


def run(reps: list[int], data_dir: str) -> list[dict]:
    return cov.fit_priors(CELL, reps, SEED, data_dir, priors, ("normalx-nuts",), "variant")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    rows: list[dict] = []
    with concurrent.futures.ProcessPoolExecutor(args.workers, mp_context=ctx) as pool:
        futs = [pool.submit(run, list(range(i, min(i + 2, args.reps))), args.data_dir) for i in range(0, args.reps, 2)]
        for f in concurrent.futures.as_completed(futs):
            rows += f.result()
    lines = [
        f"command: `python -m paper.paper_cell_sigma_x --reps {args.reps}` (seed {SEED}; "
        f"{time.perf_counter() - t0:.0f} s with {args.workers} workers)\n",
        "| prior | reps | 90% coverage | 50% coverage | RMSE | divergent fits | R-hat > 1.01 |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in VARIANTS:
        rs = [r for r in rows if r["variant"] == v]
        c90, c50 = np.array([r["cover90"] for r in rs]), np.array([r["cover50"] for r in rs])
        se = lambda a: a.std(ddof=1) / np.sqrt(len(a))  # noqa: E731
        lines.append(
            f"| {v} | {len(rs)} | {c90.mean():.3f} ± {se(c90):.3f} | {c50.mean():.3f} ± {se(c50):.3f} | "
            f"{np.sqrt(np.mean([r['sq_error'] for r in rs])):.3f} | "
            f"{np.mean([r['divergences'] > 0 for r in rs]):.2f} | {np.mean([r['max_rhat'] > 1.01 for r in rs]):.2f} |"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "paper_cell_sigma_x.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
