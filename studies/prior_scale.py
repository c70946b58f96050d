"""Which scale for the default prior on theta? Coverage and error of four rules on the same replications.

    python -m studies.prior_scale [--reps 30] [--workers 2] [--out docs/results/coverage]

Rules for ``theta_k ~ N(0, s_k^2)`` (everything else as in ``Prior()``):

* ``bounds``: ``s = y_bound / x_bound`` for every coefficient (public bounds only);
* ``auto`` (the default): ``s_k = y_bound / (2 sqrt(d E[x_k^2]))``, ``E[x_k^2]`` from the release;
* ``auto-wide``: ``s_k = y_bound / sqrt(d E[x_k^2])``;
* ``vague``: ``s = sqrt(10)`` (the package's earlier default, ``C = 10 I``).

Cells (``studies/coverage.py``'s replications, seed 2026): the paper's simulation
(d = 5, J = 5, eps = 1: features on very different scales, ``theta ~ N(0, I)``), and power
plant and bike sharing in J = 5 blocks with ``theta ~ N(0, 0.2^2 I)``. Methods
``normalx-nuts`` and ``fixeds``. Writes ``prior_scale.md``/``.csv`` under ``--out``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from lab.paths import DATA_DIR, REPO
from lab.rows import write_rows
from lab.tasks import run_tasks
from studies import coverage as cov

RULES = ("bounds", "auto", "auto-wide", "vague")
CELLS = [
    dict(id="paper-d5-J5-eps1", suite="paper", d=5, J=5, eps=1.0, n=100_000, prior="default"),
    dict(
        id="real-power_plant-blocks-default-tau0.2",
        suite="real",
        data="power_plant",
        split="blocks",
        J=5,
        eps=1.0,
        tau=0.2,
        prior="default",
    ),
    dict(
        id="real-bike_sharing-blocks-default-tau0.2",
        suite="real",
        data="bike_sharing",
        split="blocks",
        J=5,
        eps=1.0,
        tau=0.2,
        prior="default",
    ),
]


def prior_for(rule: str, stats: list) -> object:
    import bayes_dpreg as bd
    from bayes_dpreg.stats import stack_stats

    st = stack_stats(stats)
    sc = bd.prior_scales(st)
    d = st.d
    auto = np.diagonal(bd.Prior().autoscaled(sc, d).C)  # the default rule, y_bound^2 / (4 d E[x_k^2])
    C = {
        "bounds": np.full(d, (sc.y_bound / float(st.x_bound.max())) ** 2),
        "auto": auto,
        "auto-wide": 4.0 * auto,
        "vague": np.full(d, 10.0),
    }[rule]
    return bd.Prior(C=np.diag(C))


def _rules(stats: list, rep: int) -> dict:
    return {rule: prior_for(rule, stats) for rule in RULES}


def run(cell: dict, reps: list[int], seed: int, data_dir: str) -> list[dict]:
    return cov.fit_priors(cell, reps, seed, data_dir, _rules, ("normalx-nuts", "fixeds"), "rule")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows: list[dict] = []
    tasks = [(c, list(range(i, min(i + 5, args.reps)))) for c in CELLS for i in range(0, args.reps, 5)]
    run_tasks(run, tasks, (args.seed, args.data_dir), args.workers, lambda c, reps, rs, t: rows.extend(rs))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = []
    for c in CELLS:
        for rule in RULES:
            for m in ("normalx-nuts", "fixeds"):
                rs = [r for r in rows if r["cell"] == c["id"] and r["rule"] == rule and r["method"] == m]
                c90 = np.array([r["cover90"] for r in rs])
                se = np.array([r["sq_error"] for r in rs])
                summary.append(
                    dict(
                        cell=c["id"],
                        rule=rule,
                        method=m,
                        reps=len(rs),
                        cover90=c90.mean(),
                        cover90_se=c90.std(ddof=1) / np.sqrt(len(rs)),
                        rmse=np.sqrt(se.mean()),
                        rmse_prior_mean=np.sqrt(np.mean([r["truth_ms"] for r in rs])),
                        prior_sd=np.mean([r["prior_sd"] for r in rs]),
                        not_converged=np.mean([r.get("converged", 1) == 0 for r in rs]),
                    )
                )
    write_rows(out / "prior_scale.csv", summary)
    lines = [
        f"command: `python -m studies.prior_scale --reps {args.reps}` (seed {args.seed}; "
        f"{time.perf_counter() - t0:.0f} s with {args.workers} workers)\n",
        "| cell | prior rule | method | 90% coverage | RMSE | RMSE of 0 | mean prior sd | not converged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        lines.append(
            f"| {s['cell']} | {s['rule']} | {s['method']} | {s['cover90']:.3f} ± {s['cover90_se']:.3f} | "
            f"{s['rmse']:.4f} | {s['rmse_prior_mean']:.4f} | {s['prior_sd']:.3f} | {s['not_converged']:.2f} |"
        )
    (out / "prior_scale.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
