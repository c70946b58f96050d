"""The default's Sigma_x prior against a release-based one, on the same replications as the coverage study.

    python -m studies.lambda_rule CELL [CELL ...] [--reps 25] [--target-accept 0.8]
        [--out docs/results/coverage]

For each cell of ``studies/coverage.py`` (same data, split and release noise, seed 2026),
``normalx-nuts`` is refitted with the cell's prior except ``Lambda``, which becomes the pooled
estimate of ``Sigma_x`` from the release (``bd.release_lambda``: the nearest PSD
matrix to ``sum_j S~_j / n`` plus a ridge of the noise's size; post-processing, no privacy
cost). The default is ``IW(diag(E[x_k^2]), d + 1)``: it holds every eigenvalue of ``Sigma_x``
near the features' scale, while the release-based ``Lambda`` lets the prior follow
collinear features down to what the noise can resolve. Rows are appended to
``lambda_rule_replications.csv`` (a rerun skips what is there); ``lambda_rule.md`` compares
them with the default's rows of the coverage run (``{suite}_replications.csv`` under ``--out``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

from lab.paths import DATA_DIR, REPO
from lab.rows import append_rows, read_rows
from studies import coverage as cov

SEED = 2026


def _pooled_prior(cell: dict, data_dir: str):
    def priors(stats: list, rep: int) -> dict:
        import bayes_dpreg as bd

        bd.enable_x64()
        pooled = bd.release_lambda(stats)
        return {"pooled": dataclasses.replace(cov.replicate(cell, rep, SEED, data_dir)[2], Lambda=pooled)}

    return priors


def _row(cid: str, name: str, ta: str, rows: list[dict]) -> str:
    def col(k: str) -> np.ndarray:
        return np.array([float(r[k]) for r in rows])

    def ms(k: str) -> str:
        return f"{col(k).mean():.3f} ± {col(k).std(ddof=1) / np.sqrt(len(rows)):.3f}"

    return (
        f"| {cid} | {name} | {ta} | {len(rows)} | {ms('cover90')} | {ms('cover50')} | "
        f"{np.sqrt(col('sq_error').mean()):.3f} | {(col('divergences') > 0).mean():.2f} | "
        f"{(col('max_rhat') > 1.01).mean():.2f} | {col('seconds').mean():.1f} |"
    )


def _summary(out: Path) -> str:
    new = read_rows(out / "lambda_rule_replications.csv")
    lines = [
        "| cell | Lambda | target accept | reps | 90% coverage | 50% coverage | RMSE | fits with divergences "
        "| R-hat > 1.01 | s / fit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cid in dict.fromkeys(r["cell"] for r in new):
        base = {
            int(r["rep"]): r
            for r in read_rows(out / f"{cid.split('-')[0]}_replications.csv")
            if r["cell"] == cid and r["method"] == "normalx-nuts"
        }
        variants = {"default": ("0.8", base)}
        for ta in dict.fromkeys(r["variant"] for r in new if r["cell"] == cid):
            variants[f"pooled {ta}"] = (ta, {int(r["rep"]): r for r in new if r["cell"] == cid and r["variant"] == ta})
        reps = sorted(set.intersection(*(set(rows) for _, rows in variants.values())))
        lines += [_row(cid, name.split()[0], ta, [src[i] for i in reps]) for name, (ta, src) in variants.items()]
    return "\n".join(lines)


def main() -> None:
    import bayes_dpreg as bd

    bd.configure_threads()  # before JAX computes anything (bayes_dpreg.runtime.threads)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cells", nargs="+")
    ap.add_argument("--reps", type=int, default=25)
    ap.add_argument("--target-accept", type=float, default=0.8)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    args = ap.parse_args()
    out = Path(args.out)
    path = out / "lambda_rule_replications.csv"
    ta = f"{args.target_accept:g}"
    done = {(r["cell"], int(r["rep"]), r["variant"]) for r in read_rows(path)}
    fit = bd.fit
    bd.fit = lambda *a, **k: fit(*a, target_accept_prob=args.target_accept, **k)  # the one option changed
    fields = cov.FIELDS + ["variant"]
    for cid in args.cells:
        cell = next(c for c in cov.cells(cid.split("-")[0]) if c["id"] == cid)
        for rep in range(args.reps):
            if (cid, rep, ta) in done:
                continue
            t0 = time.perf_counter()
            rows = cov.fit_priors(
                cell, [rep], SEED, args.data_dir, _pooled_prior(cell, args.data_dir), ("normalx-nuts",), "variant"
            )
            for r in rows:
                r["variant"] = ta
            append_rows(path, rows, fields)
            print(f"{cid} rep {rep} ({time.perf_counter() - t0:.1f} s)", flush=True)
    md = (
        f"commands: `python -m studies.lambda_rule CELL ... [--target-accept A]` (seed {SEED}; the rows "
        f"accumulate over runs, last: `{' '.join(sys.argv[1:])}`); the default's rows are the coverage "
        f"study's, on the same replications\n\n" + _summary(out) + "\n"
    )
    (out / "lambda_rule.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
