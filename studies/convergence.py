"""Convergence of MCMC-normalX on the paper's simulation: n = 1e5, d = 5, J = 5, eps = 1.

    python -m studies.convergence [--seeds 1 2 3 4 5] [--out docs/results/convergence]

Data from the paper's generative model (Sigma_x ~ IW(V^T V, d + 1)), bounds set to the
data's maxima as in the paper, delta = 1/n, the paper's prior (a = 20, b = 0.5, C = 38 I,
the simulation's Lambda, kappa = d + 1). ``fit(method="normalx")`` with 4 chains x (1000
warm-up + 5000 draws); the same for Algorithm 1 as published. Prints R-hat and bulk/tail
ESS of every theta, writes a table and trace/rank plots.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import arviz as az
import numpy as np

import bayes_dpreg as bd
from bayes_dpreg.datasets import paper_scale_matrix
from bayes_dpreg.model.prior import Prior

bd.enable_x64()  # this script calls the low-level modules (kernels, closed forms) directly

VARIANTS = {"normalx": {}, "Algorithm 1 as published": {"collapse_theta": False, "level_moves": False}}


def run(seed: int, variant: dict, d=5, J=5, n=100_000, warmup=1000, draws=5000):
    Lam = paper_scale_matrix(d, 1000 + seed)
    sim = bd.simulate(n, d, seed=seed, Lambda=Lam)
    xb, yb = np.linalg.norm(sim.X, axis=1).max(), np.abs(sim.y).max()
    stats = [
        bd.release(X, y, epsilon=1.0, delta=1 / n, x_bound=xb, y_bound=yb, seed=100 * seed + j)
        for j, (X, y) in enumerate(bd.split_parties(sim.X, sim.y, J))
    ]
    t0 = time.perf_counter()
    idata = bd.fit(
        stats,
        method="normalx",
        prior=Prior(a=20.0, b=0.5, C=38.0, Lambda=Lam),
        num_warmup=warmup,
        num_samples=draws,
        num_chains=4,
        seed=seed,
        **variant,
    )
    return idata, time.perf_counter() - t0, sim


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--out", default="docs/results/convergence")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        "| seed | sampler | max R-hat | min bulk ESS | min tail ESS | wall (s) | pass |",
        "|---|---|---|---|---|---|---|",
    ]
    for seed in args.seeds:
        for label, variant in VARIANTS.items():
            idata, sec, sim = run(seed, variant)
            summ = az.summary(idata, var_names=["theta"], kind="diagnostics")
            rhat, ess_b, ess_t = summ["r_hat"].max(), summ["ess_bulk"].min(), summ["ess_tail"].min()
            ok = rhat <= 1.01 and ess_b >= 400
            lines.append(
                f"| {seed} | {label} | {rhat:.3f} | {ess_b:.0f} | {ess_t:.0f} | {sec:.0f} | {'yes' if ok else 'no'} |"
            )
            print(lines[-1], flush=True)
            if seed == args.seeds[0]:
                import matplotlib

                matplotlib.use("Agg")
                import matplotlib.pyplot as plt

                tag = "normalx" if not variant else "algorithm1"
                az.plot_trace(idata, var_names=["theta"], compact=True)
                plt.gcf().suptitle(f"{label}, seed {seed}", fontsize=10)
                plt.savefig(out / f"trace_{tag}.png", dpi=90)
                plt.close("all")
                az.plot_rank(idata, var_names=["theta"])
                plt.savefig(out / f"rank_{tag}.png", dpi=80)
                plt.close("all")
    table = "\n".join(lines)
    (out / "table.md").write_text(
        "Command: `python -m studies.convergence --seeds " + " ".join(map(str, args.seeds)) + "`\n\n"
        "n = 1e5, d = 5, J = 5, eps = 1, delta = 1/n; 4 chains x (1000 warm-up + 5000 draws); "
        "pass = max R-hat <= 1.01 and min bulk ESS >= 400 over theta.\n\n" + table + "\n"
    )
    print(table)


if __name__ == "__main__":
    main()
