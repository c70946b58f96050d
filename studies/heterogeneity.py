"""The release-only heterogeneity check (``posterior.diagnostics.party_heterogeneity``) on the coverage cells.

    python -m studies.heterogeneity [--reps 6] [--out docs/results/coverage]

For the first ``--reps`` replications of each cell of ``studies/coverage.py`` named below
(same data, splits and release noise as the coverage runs, seed 2026), the dispersion of the
parties' ``S~_j`` against one shared ``Sigma_x`` and its bootstrap p-value. Cells simulated
from the model (``paper``, ``small``) show the check's behaviour under its null; consecutive
blocks of bike sharing are the heterogeneous case. Writes ``heterogeneity.md``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

from lab.paths import DATA_DIR, REPO
from studies import coverage as cov

CELLS = (
    "real-bike_sharing-blocks-matched-tau0.2",
    "real-bike_sharing-random-matched-tau0.2",
    "real-power_plant-blocks-matched-tau0.2",
    "real-power_plant-random-matched-tau0.2",
    "paper-d5-J5-eps1",
    "paper-d2-J10-eps5",
    "small-n300-eps1",
    "small-n1000-eps3",
)


def main() -> None:
    from bayes_dpreg.posterior.diagnostics import party_heterogeneity
    from bayes_dpreg.stats import stack_stats

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    lines = [
        f"command: `python -m studies.heterogeneity --reps {args.reps}` (seed 2026)\n",
        "| cell | J | d | dispersion per replication | bootstrap p per replication |",
        "|---|---|---|---|---|",
    ]
    for cid in CELLS:
        cell = next(c for c in cov.cells(cid.split("-")[0]) if c["id"] == cid)
        res = []
        for rep in range(args.reps):
            (X, y, s_noise), _, _ = cov.replicate(cell, rep, 2026, args.data_dir)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                st = stack_stats(cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"})["ssp"])
            res.append(party_heterogeneity(st.S, st.n, st.sigma_S))
        lines.append(
            f"| {cid} | {st.J} | {st.d} | {' '.join(f'{h.dispersion:.2f}' for h in res)} | "
            f"{' '.join(f'{h.p_value:.3f}' for h in res)} |"
        )
        print(lines[-1], flush=True)
    lines.append(f"\n{time.perf_counter() - t0:.0f} s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "heterogeneity.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
