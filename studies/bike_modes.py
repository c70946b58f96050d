"""What a non-converged default fit on bike sharing split into consecutive blocks looks like.

    python studies/bike_modes.py REP [REP ...]

Refits replication ``REP`` of the coverage cell ``real-bike_sharing-blocks-matched-tau0.2``
(``studies/coverage.py``, seed 2026) with ``normalx-nuts`` and prints, per chain, the mean
of ``theta``'s first coefficients and of ``sigma2``, the step size and the mean log density,
with R-hat of ``theta`` and ``sigma2`` and the release-only heterogeneity check.
Replications 25, 40, 45 and 48 had R-hat > 1.2 in the coverage run.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import coverage as cov  # noqa: E402  (studies/coverage.py)

CELL = "real-bike_sharing-blocks-matched-tau0.2"


def main(reps: list[int]) -> None:
    import arviz as az

    import bayes_dpreg as bd

    cell = next(c for c in cov.cells("real") if c["id"] == CELL)
    for rep in reps:
        (X, y, s_noise), theta, prior = cov.replicate(cell, rep, 2026, str(cov.REPO.parent / "shared" / "data"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            stats = cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"})["ssp"]
            t0 = time.perf_counter()
            idata = bd.fit(stats, "normalx-nuts", prior, seed=rep)
        p, ss = idata.posterior, idata.sample_stats
        rhat = az.rhat(idata, var_names=["theta", "sigma2"])
        print(f"rep {rep} ({time.perf_counter() - t0:.0f} s): R-hat theta max {float(rhat['theta'].max()):.3f}, "
              f"sigma2 {float(rhat['sigma2']):.3f}; party dispersion {p.attrs['party_dispersion']:.2f}; "
              f"truth theta[:3] {np.round(theta[:3], 3)}")
        for c in range(p.sizes["chain"]):
            print(f"  chain {c}: theta[:3] {np.round(p['theta'].values[c].mean(0)[:3], 3)}  "
                  f"sigma2 {p['sigma2'].values[c].mean():.4g}  step size {float(ss['step_size'].values[c].mean()):.3f}  "
                  f"lp {float(ss['lp'].values[c].mean()):.1f}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [25])
