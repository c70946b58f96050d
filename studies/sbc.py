"""Full simulation-based calibration study of the samplers (Talts et al. 2018).

    python -m studies.sbc [--reps 500] [--nuts-reps 500] [--out docs/results/sbc]

d = 2, J = 2, n_j = 30, release noise of eps = 1, delta = 1e-5 with bounds 1 (sigma = 7.91);
prior theta ~ N(0, I), sigma2 ~ IG(3, 2), Sigma_x ~ IW(3 I, 6). For each sampler: rank of
theta, sigma2, one Sigma_x entry and one S entry among L = 99 draws thinned by 10 after
500 warm-up iterations; chi-square test of uniformity on 10 bins. Prints the p-value table
(markdown) and writes it with rank histograms to --out.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import jax
import numpy as np

import bayes_dpreg as bd
from bayes_dpreg.model.prior import Prior
from bayes_dpreg.posterior.sbc import sbc

bd.enable_x64()  # this script calls the low-level modules (kernels, closed forms) directly

CASES = {
    "normalx": ("normalx", {}),
    "normalx (Algorithm 1 as published)": ("normalx", {"collapse_theta": False, "level_moves": False}),
    "fixeds": ("fixeds", {}),
    "normalx-nuts (default)": ("normalx-nuts", {}),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--nuts-reps", type=int, default=500)
    ap.add_argument("--thin", type=int, default=10)
    ap.add_argument("--out", default="docs/results/sbc")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pr = Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=3.0, kappa=6.0).resolve(2)
    sig = bd.calibrate(1.0, 1e-5, 1.0, 1.0).sigma_S
    results = {}
    for label, (method, extra) in CASES.items():
        nuts = method == "normalx-nuts"
        reps = args.nuts_reps if nuts else args.reps
        thin = max(1, args.thin // 5) if nuts else args.thin
        t0 = time.perf_counter()
        res = sbc(
            jax.random.key(args.seed),
            method,
            pr,
            np.array([30, 30]),
            sig,
            sig,
            replications=reps,
            num_draws=99,
            thin=thin,
            num_warmup=500,
            options=extra,
        )
        results[label] = (res, reps, thin, time.perf_counter() - t0)
        print(f"{label}: {reps} replications in {results[label][3]:.0f} s", flush=True)
    names = ["theta[0]", "theta[1]", "sigma2", "Sigma_x[0,1]", "S[0][0,0]"]
    lines = [
        "| sampler | reps | thin | " + " | ".join(names) + " | time (s) |",
        "|---|---|---|" + "---|" * len(names) + "---|",
    ]
    for label, (res, reps, thin, sec) in results.items():
        cells = [f"{res.pvalues[n]:.3f}" if n in res.pvalues else "n/a" for n in names]
        lines.append(f"| {label} | {reps} | {thin} | " + " | ".join(cells) + f" | {sec:.0f} |")
    table = "\n".join(lines)
    print("\nchi-square p-values of rank uniformity (10 bins):\n" + table)
    (out / "pvalues.md").write_text(
        f"Command: `python -m studies.sbc --reps {args.reps} --nuts-reps {args.nuts_reps} --thin {args.thin}` "
        f"(seed {args.seed})\n\n{table}\n"
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), len(names), figsize=(2.6 * len(names), 2.0 * len(results)), squeeze=False)
    for r, (label, (res, reps, _, _)) in enumerate(results.items()):
        for c, n in enumerate(names):
            ax = axes[r][c]
            if n in res.ranks:
                ax.hist(res.ranks[n], bins=10, range=(0, 100), color="tab:blue", alpha=0.7)
                ax.axhline(reps / 10, color="k", lw=1)
                ax.set_title(f"{n}  p={res.pvalues[n]:.2f}", fontsize=8)
            else:
                ax.axis("off")
            if c == 0:
                ax.set_ylabel(label, fontsize=7)
            ax.set_yticks([])
    fig.tight_layout()
    fig.savefig(out / "ranks.png", dpi=110)
    print(f"wrote {out / 'pvalues.md'} and {out / 'ranks.png'}")


if __name__ == "__main__":
    from bayes_dpreg import configure_threads

    configure_threads()  # one XLA CPU thread before JAX computes anything (bayes_dpreg.runtime.threads)
    main()
