"""Does the fit's prior-sensitivity check flag the data sets whose intervals miss?

    python -m studies.prior_sensitivity [--reps 12] [--workers 2] [--cells CELL ...]
        [--out docs/results/coverage]

For replications of cells of ``studies/coverage.py`` (same data, split and release noise, seed
2026), ``normalx-nuts`` is fitted with the cell's prior and the fit's record of the power-scaling
sensitivity of ``theta`` to each prior factor (``bayes_dpreg.posterior.diagnostics.prior_sensitivity``,
``attrs["prior_sensitivity_Sigma_x"]``...) is set against the coverage of its intervals. Where
``Sigma_x``'s prior sways some coefficient (sensitivity >= 0.05, ``PriorSensitivityWarning``) the
fit is repeated with ``Prior(Lambda=bd.release_lambda(stats))``, the check the warning suggests.
Rows go to ``prior_sensitivity_replications.csv`` (a rerun skips what is there), the table to
``prior_sensitivity.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from lab.paths import DATA_DIR, REPO
from lab.rows import append_rows, read_rows
from lab.tasks import run_tasks
from studies import coverage as cov

SEED = 2026
CELLS = [
    "paper-d2-J10-eps1",
    "paper-d5-J1-eps5",
    "paper-d5-J10-eps5",
    "small-n300-eps1",
    "real-power_plant-blocks-default-tau0.2",
    "real-bike_sharing-random-default-tau0.2",
]
FIELDS = [
    "cell",
    "rep",
    "variant",
    "cover90",
    "cover50",
    "sq_error",
    "sens_Sigma_x",
    "sens_sigma2",
    "sens_theta",
    "warned",
    "seconds",
]


def _fit_row(cell: dict, rep: int, variant: str, stats: list, prior: Any, theta: np.ndarray) -> dict[str, Any]:
    import bayes_dpreg as bd

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = bd.fit(stats, "normalx-nuts", prior, seed=rep)
    m = cov._metrics(cell, rep, "normalx-nuts", idata, theta, time.perf_counter() - t0)
    at = idata.posterior.attrs
    return dict(
        cell=cell["id"],
        rep=rep,
        variant=variant,
        cover90=m["cover90"],
        cover50=m["cover50"],
        sq_error=m["sq_error"],
        sens_Sigma_x=at["prior_sensitivity_Sigma_x"],
        sens_sigma2=at["prior_sensitivity_sigma2"],
        sens_theta=at["prior_sensitivity_theta"],
        warned=int(any(issubclass(w.category, bd.PriorSensitivityWarning) for w in caught)),
        seconds=m["seconds"],
    )


def run_rep(cell_id: str, rep: int, data_dir: str) -> list[dict[str, Any]]:
    import bayes_dpreg as bd

    bd.enable_x64()
    cell = next(c for s in ("paper", "small", "real") for c in cov.cells(s) if c["id"] == cell_id)
    (X, y, s_noise), theta, prior = cov.replicate(cell, rep, SEED, data_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"})["ssp"]
    rows = [_fit_row(cell, rep, "default", stats, prior, theta)]
    if rows[0]["warned"]:
        pooled = dataclasses.replace(prior, Lambda=bd.release_lambda(stats))
        rows.append(_fit_row(cell, rep, "release_lambda", stats, pooled, theta))
    return rows


def _mean_se(x: list[float]) -> str:
    a = np.asarray(x, dtype=float)
    if a.size == 0:
        return "-"
    se = a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else float("nan")
    return f"{a.mean():.2f} ± {se:.2f}"


def summary(rows: list[dict[str, str]], order: list[str]) -> str:
    lines = [
        "| cell | fits | `Sigma_x` sensitivity (median, max) | fits warned | 90% coverage, unwarned fits "
        "| 90% coverage, warned fits | same fits with `release_lambda` | RMSE warned: default, `release_lambda` |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cid in order:
        base = [r for r in rows if r["cell"] == cid and r["variant"] == "default"]
        if not base:
            continue
        alt = {r["rep"]: r for r in rows if r["cell"] == cid and r["variant"] == "release_lambda"}
        warned = [r for r in base if r["warned"] == "1"]
        calm = [r for r in base if r["warned"] != "1"]
        sens = np.array([float(r["sens_Sigma_x"]) for r in base])

        def rmse(rs: list[dict[str, str]]) -> str:
            return f"{np.sqrt(np.mean([float(r['sq_error']) for r in rs])):.2f}" if rs else "-"

        paired = [alt[r["rep"]] for r in warned if r["rep"] in alt]
        lines.append(
            f"| {cid} | {len(base)} | {np.median(sens):.3f}, {sens.max():.3f} | {len(warned)} "
            f"| {_mean_se([float(r['cover90']) for r in calm])} | {_mean_se([float(r['cover90']) for r in warned])} "
            f"| {_mean_se([float(r['cover90']) for r in paired])} | {rmse(warned)}, {rmse(paired)} |"
        )
    return "\n".join(lines)


def run_reps(cell_id: str, reps: list[int], data_dir: str) -> list[dict[str, Any]]:
    """:func:`run_rep` for each of ``reps`` (:func:`lab.tasks.run_tasks`' calling convention)."""
    return [row for rep in reps for row in run_rep(cell_id, rep, data_dir)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", default=CELLS)
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    args = ap.parse_args()
    import bayes_dpreg as bd

    bd.configure_threads()  # one XLA CPU thread, inherited by the workers (bayes_dpreg.runtime.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "prior_sensitivity_replications.csv"
    done = {(r["cell"], int(r["rep"])) for r in read_rows(path)}
    todo = [(c, rep) for c in args.cells for rep in range(args.reps) if (c, rep) not in done]
    t0 = time.perf_counter()

    def written(c: str, reps: list[int], rows: list[dict[str, Any]], seconds: float) -> None:
        append_rows(path, rows, FIELDS)
        print(f"{c} rep {reps[0]} done ({seconds:.0f} s)", flush=True)

    run_tasks(run_reps, [(c, [rep]) for c, rep in todo], (args.data_dir,), args.workers, written)
    md = (
        f"command: `python -m studies.prior_sensitivity {' '.join(sys.argv[1:])}` (seed {SEED}; rows accumulate "
        f"over runs; last run {time.perf_counter() - t0:.0f} s with {args.workers} workers)\n\n"
        + summary(read_rows(path), list(dict.fromkeys(args.cells)))
        + "\n"
    )
    (out / "prior_sensitivity.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
