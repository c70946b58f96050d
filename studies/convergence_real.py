"""Convergence on real features: the Metropolis normalX sampler against normalx-nuts.

    python -m studies.convergence_real [--data bike_sharing] [--seeds 1 2 3] [--out docs/results/convergence]

Bike sharing (d = 14) or power plant (d = 4) training rows in J = 5 consecutive blocks,
``theta ~ N(0, 0.2^2 I)``, ``sigma_y^2 ~ IG(3, 0.02)``, eps = 1, bounds at the data maxima,
the default prior. Each sampler runs 4 chains at its default settings (``normalx``:
1000 + 1000 iterations, level moves as ``level_moves="auto"`` and forced on;
``normalx-nuts``: 500 + 500). Reported per fit: max R-hat and min bulk ESS over theta,
over sigma2 and over the eigenvalues of Sigma_x (rank-normalised, ArviZ), and wall time.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import arviz as az
import numpy as np

from lab.paths import DATA_DIR, REPO
from studies import coverage as cov

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "normalx": ("normalx", {}),
    "normalx, level moves on": ("normalx", {"level_moves": True}),
    "normalx-nuts": ("normalx-nuts", {}),
}


def diagnostics(idata) -> dict[str, tuple[float, float]]:
    post = idata.posterior
    ev = np.linalg.eigvalsh(idata.latent_posterior["Sigma_x"].values)
    ds = az.convert_to_dataset({"theta": post["theta"].values, "sigma2": post["sigma2"].values, "eig_Sigma_x": ev})
    rh, ess = az.rhat(ds, method="rank"), az.ess(ds, method="bulk")
    return {k: (float(rh[k].max()), float(ess[k].min())) for k in ("theta", "sigma2", "eig_Sigma_x")}


def main() -> None:
    import bayes_dpreg as bd

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="bike_sharing", choices=list(cov.DATA_FILES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "convergence"))
    args = ap.parse_args()
    cell = dict(
        id=f"real-{args.data}-blocks-default-tau0.2",
        suite="real",
        data=args.data,
        split="blocks",
        J=5,
        eps=1.0,
        tau=0.2,
        prior="default",
    )
    lines = [
        f"command: `python -m studies.convergence_real --data {args.data} --seeds {' '.join(map(str, args.seeds))}`\n",
        "| seed | sampler | theta: max R-hat / min ESS | sigma2 | eigenvalues of Sigma_x | wall (s) |",
        "|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for seed in args.seeds:
        (X, y, s_noise), _, _ = cov.replicate(cell, seed, 2026, args.data_dir)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stats = cov._releases(X, y, 5, 1.0, s_noise, {"ssp"})["ssp"]
            for label, (method, options) in VARIANTS.items():
                t0 = time.perf_counter()
                idata = bd.fit(stats, method, seed=seed, **options)
                wall = time.perf_counter() - t0
                dg = diagnostics(idata)
                cells = " | ".join(f"{dg[k][0]:.3f} / {dg[k][1]:.0f}" for k in ("theta", "sigma2", "eig_Sigma_x"))
                lines.append(f"| {seed} | {label} | {cells} | {wall:.0f} |")
                print(lines[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"real_{args.data}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
