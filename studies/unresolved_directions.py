"""Does the default miss where the release leaves a direction of the features unresolved?

    python -m studies.unresolved_directions [CELL ...] [--out docs/results/coverage]

For each replication of the coverage study's cells (same data and release noise, seed 2026; no
refit), the smallest eigenvalue of the pooled released scatter ``sum_j S~_j`` is compared with the
release noise's own spectral scale ``2 sqrt(d) sigma``, ``sigma = sqrt(sum_j sigma_S,j^2)`` (the
largest eigenvalue of a symmetric d x d Gaussian matrix with entries of sd ``sigma`` is about
``2 sqrt(d) sigma``). Below it, the release does not resolve the features' covariance along that
direction. The default's 90% coverage (``normalx-nuts`` rows of ``{suite}_replications.csv``) is
then split by that flag. Writes ``unresolved_directions.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

from lab.paths import DATA_DIR, REPO
from lab.rows import read_rows
from studies import coverage as cov

SEED = 2026
CELLS = (
    "paper-d2-J1-eps5",
    "paper-d2-J10-eps1",
    "paper-d5-J1-eps5",
    "paper-d5-J5-eps1",
    "paper-d5-J10-eps5",
    "real-power_plant-blocks-default-tau0.2",
    "real-power_plant-random-default-tau0.2",
    "real-bike_sharing-random-default-tau0.2",
)


def resolution(cell: dict, rep: int, data_dir: str) -> tuple[float, float]:
    """``lambda_min(sum_j S~_j) / (2 sqrt(d) sigma)`` for the release and for the exact ``X^T X``."""
    (X, y, s_noise), _, _ = cov.replicate(cell, rep, SEED, data_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"})["ssp"]
    scale = 2.0 * np.sqrt(X.shape[1]) * np.sqrt(sum(float(s.sigma_S) ** 2 for s in stats))
    released = np.linalg.eigvalsh(sum(np.asarray(s.S, dtype=np.float64) for s in stats))[0]
    return released / scale, np.linalg.eigvalsh(X.T @ X)[0] / scale


def _mean(cover: np.ndarray, mask: np.ndarray) -> str:
    return f"{cover[mask].mean():.3f} ({mask.sum()})" if mask.any() else "-"


def main() -> None:
    import bayes_dpreg as bd

    bd.configure_threads()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cells", nargs="*", default=list(CELLS))
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    args = ap.parse_args()
    out = Path(args.out)
    lines = [
        f"command: `python -m studies.unresolved_directions {' '.join(sys.argv[1:])}` (seed {SEED}; the "
        "default's coverage from the coverage study's rows)",
        "",
        "| cell | reps | unresolved | 90% coverage, unresolved | 90% coverage, resolved | median ratio, release "
        "| median ratio, exact X^T X |",
        "|---|---|---|---|---|---|---|",
    ]
    for cid in args.cells:
        suite = cid.split("-")[0]
        cell = next(c for c in cov.cells(suite) if c["id"] == cid)
        rows = {
            int(r["rep"]): r
            for r in read_rows(out / f"{suite}_replications.csv")
            if r["cell"] == cid and r["method"] == "normalx-nuts" and not r.get("error")
        }
        reps = sorted(rows)
        ratio = np.array([resolution(cell, rep, args.data_dir) for rep in reps])
        cover = np.array([float(rows[r]["cover90"]) for r in reps])
        low = ratio[:, 0] < 1.0
        lines.append(
            f"| {cid} | {len(reps)} | {low.mean():.2f} | {_mean(cover, low)} | {_mean(cover, ~low)} | "
            f"{np.median(ratio[:, 0]):.2f} | {np.median(ratio[:, 1]):.2f} |"
        )
        print(lines[-1], flush=True)
    (out / "unresolved_directions.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
