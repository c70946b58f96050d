"""The prior of ``Sigma_x`` on the coverage study's cells: the default (separation prior), the
earlier inverse-Wishart default, the oracle (the generating ``Sigma_x`` prior) and ``fixeds``.

    python -m studies.sigma_x_prior CELL ... [--reps 0 20] [--variants default iw oracle fixeds]
        [--workers 2] [--out docs/results/coverage/sigma_x_prior.csv]
    python -m studies.sigma_x_prior --summary [--out ...] [--beside CSV ...] [--oracle oracle-clt]
        # the markdown table from the CSV (with ``--beside``, coverage.py's rows of the same cells)

Each replication draws the data and the release exactly as ``studies/coverage.py`` does (same seed
streams; the ``quantile`` cells' private bounds come from OpenDP and no seed reproduces them), then
fits ``normalx-nuts`` under each ``Sigma_x`` prior (theta's and sigma_y's priors stay the default):

* ``default``: ``bd.Prior()``, i.e. ``Sigma_x = D R D``, ``log D_kk ~ N(log E[x_k^2] / 2, 1)``,
  ``R ~ LKJ(eta)`` (``eta = 2`` when this study's results were made, 1 since 2026-11-28);
* ``iw``: the earlier default ``IW(diag(E[x_k^2]), d + 1)`` (``Prior(Sigma_x_prior="iw")``);
* ``oracle``: the generating prior (``coverage.oracle_prior``; paper and correlated cells only);
* ``fixeds``: MCMC-fixedS under the default prior;
* ``oracle-elsewhere``: the oracle's family with the scale matrix of another replication
  (``rep + 100000``): what knowing the family, but not this replication's ``V^T V``, is worth;
* ``theta-xK``: the default with theta's prior sd ``K`` times the autoscaled one (``theta-x2``);
* ``etaE``: the default with ``R ~ LKJ(E)`` (``eta1``: uniform correlations).

A ``clt-`` prefix fits ``normalx-clt`` instead of ``normalx-nuts`` (``clt-default``, ``clt-eta1``).

A variant may carry NUTS's target acceptance after ``@`` (``default@0.8``). Rows are appended to
``--out`` as replications finish (one per fit, ``studies/coverage.py``'s columns).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lab.paths import DATA_DIR, REPO
from lab.rows import append_rows, read_rows
from lab.tasks import run_tasks
from studies import coverage as cov

SEED = 2026
OUT = REPO / "docs/results/coverage/sigma_x_prior.csv"
ELSEWHERE = 100_000


def _cell(cell_id: str) -> dict[str, Any]:
    suite = {"corr": "correlated"}.get(cell_id.split("-")[0], cell_id.split("-")[0])
    return next(c for c in cov.cells(suite) if c["id"] == cell_id)


def _prior(variant: str, cell: dict[str, Any], rep: int, stats: Any = None) -> tuple[str, Any]:
    import bayes_dpreg as bd

    sampler, clt, base = "normalx-nuts", variant.startswith("clt-"), variant.removeprefix("clt-")
    if clt:
        sampler = "normalx-clt"
    if base == "oracle":
        return sampler, cov.oracle_prior(cell, rep, SEED)
    if base == "oracle-elsewhere":  # the generating family with another replication's scale matrix
        return sampler, cov.oracle_prior(cell, rep + ELSEWHERE, SEED)
    if base == "iw":
        return sampler, bd.Prior(Sigma_x_prior="iw")
    if base.startswith("theta-x"):  # the default with theta's prior sd times K: ``theta-x2``
        from bayes_dpreg.stats import stack_stats

        k = float(base.removeprefix("theta-x"))
        return sampler, bd.Prior(C=k**2 * np.asarray(bd.Prior().autoscaled(bd.prior_scales(stack_stats(stats))).C))
    if base.startswith("eta"):  # the default with another LKJ concentration: ``eta1``, ``eta1.5``
        return sampler, bd.Prior(eta=float(base[3:]))
    return ("fixeds" if base == "fixeds" else sampler), bd.Prior()


def replication(task: tuple[str, int, tuple[str, ...]]) -> list[dict[str, Any]]:
    """Fit every variant on replication ``rep`` of ``cell`` (in a worker process)."""
    import bayes_dpreg as bd

    cell_id, rep, variants = task
    cell = _cell(cell_id)
    (X, y, s_noise), theta, _ = cov.replicate(cell, rep, SEED, str(DATA_DIR))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"}, cell.get("bounds", "max"))["ssp"]
    rows = []
    for variant in variants:
        base, _, accept = variant.partition("@")
        method, prior = _prior(base, cell, rep, stats)
        if prior is None:
            continue
        options: dict[str, Any] = {"target_accept_prob": float(accept)} if accept else {}
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = bd.fit(stats, method, prior, seed=rep, **options)
        rows.append(cov._metrics(cell, rep, variant, idata, theta, time.perf_counter() - t0))
    return rows


def summary(path: Path, beside: Sequence[Path] = (), oracle: str = "oracle") -> str:
    """Per cell and variant: coverage (± Monte Carlo se), RMSE and its ratios to the oracle's and
    ``fixeds``' (over the replications both have), fits with divergences or R-hat > 1.01, seconds
    per fit."""
    rows = read_rows(path)
    cells_here = {r["cell"] for r in rows}
    here = {r["method"] for r in rows}
    for other in beside:  # the same seeded replications fitted by other methods (coverage.py's rows)
        extra = read_rows(other)
        rows += [r for r in extra if r["cell"] in cells_here and r["method"] not in here and not r.get("error")]
    out = [
        "| cell | variant | reps | 90% | 50% | RMSE | / oracle | / fixeds | fits with divergences | R-hat > 1.01 "
        "| s / fit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cells = list(dict.fromkeys(r["cell"] for r in rows))
    for cell in cells:
        by: dict[str, list[dict[str, str]]] = {}
        for r in rows:
            if r["cell"] == cell:
                by.setdefault(r["method"], []).append(r)
        sq = {v: {int(r["rep"]): float(r["sq_error"]) for r in rs} for v, rs in by.items()}
        for v in list(sq):  # the references by their base name (``oracle@0.8`` -> ``oracle``)
            sq.setdefault(v.partition("@")[0], sq[v])
        rmse = {v: float(np.sqrt(np.mean(list(e.values())))) for v, e in sq.items()}

        def ratio(variant: str, ref: str, sq: dict[str, dict[int, float]] = sq) -> str:
            """RMSE over the replications both have."""
            if ref not in sq:
                return ""
            common = sorted(set(sq[variant]) & set(sq[ref]))
            mine, theirs = (np.sqrt(np.mean([sq[v][k] for k in common])) for v in (variant, ref))
            return f"{mine / theirs:.2f}"

        for variant, rs in by.items():
            c90, c50 = (np.array([float(r[k]) for r in rs]) for k in ("cover90", "cover50"))
            se = lambda a: a.std(ddof=1) / np.sqrt(len(a)) if len(a) > 1 else float("nan")  # noqa: E731
            div = np.mean([float(r["divergences"] or 0) > 0 for r in rs])
            rhat = np.mean([float(r["max_rhat"] or 1) > 1.01 for r in rs])
            secs = np.median([float(r["seconds"]) for r in rs])
            out.append(
                f"| {cell} | {variant} | {len(rs)} | {c90.mean():.3f} ± {se(c90):.3f} "
                f"| {c50.mean():.3f} ± {se(c50):.3f} | {rmse[variant]:.3f} | {ratio(variant, oracle)} "
                f"| {ratio(variant, 'fixeds')} | {div:.2f} | {rhat:.2f} | {secs:.1f} |"
            )
    return "\n".join(out) + "\n"


def replications(cell_id: str, reps: list[int], variants: tuple[str, ...]) -> list[dict[str, Any]]:
    """:func:`replication` for each of ``reps`` (:func:`lab.tasks.run_tasks`' calling convention)."""
    return [row for r in reps for row in replication((cell_id, r, variants))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cells", nargs="*", help="cell ids of studies/coverage.py")
    ap.add_argument("--reps", type=int, nargs=2, default=[0, 20], metavar=("FIRST", "STOP"))
    ap.add_argument("--variants", nargs="+", default=["default", "iw", "oracle", "fixeds"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--summary", action="store_true", help="print the markdown table of --out and exit")
    ap.add_argument("--beside", type=Path, nargs="*", default=[], help="with --summary: coverage.py rows to add")
    ap.add_argument("--oracle", default="oracle", help="with --summary: the method the RMSE ratio divides by")
    a = ap.parse_args(argv)
    if a.summary:
        print(summary(a.out, a.beside, a.oracle))
        return 0

    def written(c: str, reps: list[int], rows: list[dict[str, Any]], seconds: float) -> None:
        append_rows(a.out, rows, cov.FIELDS, ignore_extra=True)
        print(c, reps[0], [(r["method"], r.get("cover90"), r.get("divergences")) for r in rows], flush=True)

    tasks = [(c, [r]) for r in range(*a.reps) for c in a.cells]
    run_tasks(replications, tasks, (tuple(a.variants),), a.workers, written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
