"""Which factor of the default prior costs coverage in the paper's cells? One generating prior at a time.

    python -m studies.paper_priors [--cells paper-d2-J1-eps5 ...] [--reps 100] [--workers 2]
        [--out docs/results/coverage/paper_priors]
    python -m studies.paper_priors --suite correlated --cells corr-... --variants default eta1 --out ...

The default (``normalx-clt``) covers less in the paper's low-noise cells (eps = 5) than in its
noisy ones (``docs/results/coverage/criteria.md``), where the truth is not a draw from the fit's
prior: ``theta ~ N(0, I)``, ``Sigma_x ~ IW(V^T V, d + 1)``, ``sigma_y = 1``. On the same seeded
releases as :mod:`studies.coverage` (same cells, replications and fit seeds), this fits the
default with each of its three factors replaced by the generating one
(:func:`studies.coverage.matched_prior`'s): ``sigma2`` (``sigma_y^2 ~ IG(200, 199)``, mean 1),
``theta`` (``N(0, I)``), ``sigma_x`` (the generating inverse Wishart: the coverage study's
``oracle-clt``), ``all`` (``matched-clt``), and ``default``: the default prior as these studies
measured it, with LKJ(2) correlations (``STUDIED_ETA``; ``bd.Prior()`` has had LKJ(1) since
2026-11-28, so that the committed commands still reproduce their rows); and, not generating
factors, the separation prior's correlations by name: ``eta1``, LKJ(1) (uniform; the default since
it was measured here), and ``eta2``, LKJ(2) (the same prior as ``default``); and ``pooled``: ``eta1``'s
prior fitted by ``normalx-pooled`` (the parties' releases summed within groups) instead of
``normalx-clt`` (``--ref eta1`` pairs the pooled table with it); ``nuts``: the same, fitted by the
exact ``normalx-nuts``; ``yty``: ``eta1``'s prior and sampler on a release of ``y^T y`` too
(``release(..., yty=True)``: one Gaussian mechanism on ``[upper(S), z, y^T y]``, its noise drawn after
the other variants' releases from the same stream), which identifies ``sigma_y^2`` with one party;
``features`` (the real suite's oracle for ``Sigma_x``): ``eta1``'s prior with ``Sigma_x ~ IW`` of mean the data
set's own ``X^T X / n`` over all its rows and ``FEATURES_DOF`` degrees of freedom beyond d + 1, nearly a point
mass: what a fit would do if it knew the features' covariance, which a random split's parties share;
``sigma2_a05`` and ``sigma2_b10``: ``eta1``'s prior with ``sigma_y^2 ~ IG(0.5, (y_bound/20)^2)`` (a heavier
upper tail) and ``IG(1, (y_bound/10)^2)`` (four times the scale), probes of the noise variance's prior where
the release leaves it open; ``sigma2_b10`` is the default since 2026-12-06 (``bd.Prior()``: LKJ(1) and
``IG(1, (y_bound/10)^2)``), and ``sigma_x_b10`` is its oracle: ``sigma_x`` with that ``sigma_y^2`` prior;
``theta_features``: ``sigma2_b10`` (the default) with ``theta``'s prior scaled by the sampled feature
scales (``Prior(theta_scale="features")``, ``normalx-nuts``'s default at small parties), fitted by
``normalx-clt``. Every other variant keeps ``sigma_y^2 ~ IG(1, (y_bound/20)^2)`` where the cell's prior
leaves ``b = "auto"``, the default when they were measured (``STUDIED_SIGMA2_DIVISOR``). Per fit,
beside the coverage study's columns, the posterior median of ``sigma_y^2`` (the truth is 1). Rows are
appended to ``paper_priors_replications.csv`` as tasks finish (a rerun skips what is there); the
summary, over every row there of the given cells and variants, per cell and variant, is
``paper_priors.md``. With ``--suite correlated`` or ``real`` (and ``--cells`` of that suite) only
``default``, ``eta1``, ``eta2``, ``pooled``, ``nuts``, ``yty``, the sigma2 probes, (real) ``features`` and
(correlated) the oracles ``sigma_x`` and ``sigma_x_b10`` apply; in the real suite's ``matched`` cells
(``theta``'s and ``sigma_y^2``'s generating priors, the default's ``Sigma_x``) these are that cell's prior with
the default's correlations, LKJ(1) and LKJ(2) (not the sigma2 probes, which replace that cell's prior of
``sigma_y^2``).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from pathlib import Path
from typing import Any

import numpy as np

from bayes_dpreg.model.prior import prior_scales
from bayes_dpreg.stats import stack_stats
from lab.paths import DATA_DIR, REPO
from lab.rows import append_rows, read_rows
from lab.tasks import pending, run_tasks
from studies import coverage as cov

VARIANTS = (
    "default",
    "sigma2",
    "theta",
    "sigma_x",
    "all",
    "eta1",
    "eta2",
    "pooled",
    "nuts",
    "yty",
    "features",
    "sigma2_a05",
    "sigma2_b10",
    "sigma_x_b10",
    "theta_features",
)
GENERATING_VARIANTS = ("sigma2", "theta", "sigma_x", "all", "sigma_x_b10")  # a factor swapped for the truth's
# the variants outside the paper suite: no generating prior to swap in
ETA_VARIANTS = tuple(v for v in VARIANTS if v not in GENERATING_VARIANTS)
ORACLE_VARIANTS = ("sigma_x", "sigma_x_b10")  # the generating Sigma_x prior: paper and correlated cells
RELEASE = {"yty": "bs"}  # the variants fitted to another release: y^T y released too (release(..., yty=True))
METHOD = {"pooled": "normalx-pooled", "nuts": "normalx-nuts"}  # the variants not fitted by normalx-clt
EPS5_CELLS = [f"paper-d{d}-J{J}-eps5" for d in (2, 5) for J in (1, 5, 10)]
FIELDS = [*cov.FIELDS, "variant", "sigma2_median"]
STUDIED_ETA = 2.0  # the default's LKJ concentration when these studies ran (bd.Prior(): 1.0 since 2026-11-28)
# sigma_y^2 ~ IG(1, (y_bound / divisor)^2) with b = "auto" when these studies ran (bd.Prior(): 10 since 2026-12-06)
STUDIED_SIGMA2_DIVISOR = 20.0
# sigma_y^2 ~ IG(a, (y_bound / divisor)^2); sigma2_b10 is the default since 2026-12-06
SIGMA2_PROBES = {"sigma2_a05": (0.5, 20.0), "sigma2_b10": (1.0, 10.0)}
FEATURES_DOF = 1e4  # ``features``: the inverse Wishart's degrees of freedom beyond d + 1 (sd of an entry ~1% of it)


def variant_prior(
    variant: str, cell: dict[str, Any], rep: int, seed: int, data_dir: str = str(DATA_DIR), stats: Any = None
) -> Any:
    """The default prior with the generating factor ``variant`` (module docstring). ``default`` (and the
    base of ``sigma2`` and ``theta``) is the default as these studies measured it, LKJ(2) correlations
    and ``sigma_y^2 ~ IG(1, (y_bound / 20)^2)`` (:data:`STUDIED_SIGMA2_DIVISOR`), and every variant not
    named for its ``sigma_y^2`` prior keeps that scale: the committed commands reproduce their rows, and a
    run that continues one pairs like with like. ``stats``: the release, whose ``y_bound`` sets that scale."""
    base = dataclasses.replace(cov.cell_prior(cell), eta=STUDIED_ETA)
    if variant == "default":
        return _sigma2_scaled(base, stats)
    if variant in ("eta1", "eta2"):  # not generating factors: the separation prior's correlations LKJ(1), LKJ(2)
        return _sigma2_scaled(dataclasses.replace(base, eta=float(variant[-1])), stats)
    if variant in ("pooled", "nuts", "yty"):  # eta1's prior, another sampler or release
        return _sigma2_scaled(dataclasses.replace(base, eta=1.0), stats)
    if variant in ORACLE_VARIANTS:  # the generating Sigma_x prior, sigma_y^2's as studied or the default since
        divisor = SIGMA2_PROBES["sigma2_b10"][1] if variant == "sigma_x_b10" else STUDIED_SIGMA2_DIVISOR
        return _sigma2_scaled(cov.oracle_prior(cell, rep, seed), stats, divisor)
    if variant in SIGMA2_PROBES:  # eta1's prior with another sigma_y^2 prior, from the release's y_bound
        a, divisor = SIGMA2_PROBES[variant]
        return _sigma2_scaled(dataclasses.replace(base, eta=1.0, a=a), stats, divisor)
    if variant == "theta_features":  # the default (sigma2_b10) with theta's prior scaled by the sampled Sigma_x
        a, divisor = SIGMA2_PROBES["sigma2_b10"]
        return _sigma2_scaled(dataclasses.replace(base, eta=1.0, a=a, theta_scale="features"), stats, divisor)
    if variant == "features":
        Sx = features_second_moment(cell["data"], data_dir)
        kappa = Sx.shape[0] + 1.0 + FEATURES_DOF
        prior = dataclasses.replace(base, eta=1.0, Sigma_x_prior="iw", Lambda=Sx * FEATURES_DOF, kappa=kappa)
        return _sigma2_scaled(prior, stats)
    full = cov.matched_prior(cell, rep, seed)
    if variant == "all":
        return full
    keep = {"sigma2": ("a", "b"), "theta": ("m", "C")}[variant]
    return _sigma2_scaled(dataclasses.replace(base, **{k: getattr(full, k) for k in keep}), stats)


def _sigma2_scaled(prior: Any, stats: Any, divisor: float = STUDIED_SIGMA2_DIVISOR) -> Any:
    """``prior`` with ``b = "auto"`` made concrete as ``(y_bound / divisor)^2``, ``y_bound`` the release's
    (:func:`~bayes_dpreg.model.prior.prior_scales`, as ``fit`` resolves ``"auto"``); a ``b`` given stays."""
    if not isinstance(prior.b, str):
        return prior
    if stats is None:
        raise ValueError("the studied sigma_y^2 prior is scaled to the release's y_bound: give stats")
    y_bound = float(prior_scales(stack_stats(stats)).y_bound)
    return dataclasses.replace(prior, b=(y_bound / divisor) ** 2)


@functools.cache
def features_second_moment(name: str, data_dir: str) -> np.ndarray:
    """``X^T X / n`` over every row of real data set ``name``: the ``Sigma_x`` whose Wishart the parties'
    ``S_j`` of a random split follow in the mean (``S_j ~ n_j`` times it up to sampling)."""
    X = cov._real_data(name, data_dir)
    return X.T @ X / len(X)


def run(cell: dict[str, Any], reps: list[int], variants: tuple[str, ...], seed: int, data_dir: str) -> list[dict]:
    """:func:`studies.coverage.fit_priors` with the variants' priors and the posterior median of ``sigma_y^2``."""
    priors = lambda stats, rep: {v: variant_prior(v, cell, rep, seed, data_dir, stats) for v in variants}
    sigma2 = lambda idata: {"sigma2_median": float(np.median(idata.posterior["sigma2"].values))}
    method_of = lambda v: (METHOD.get(v, "normalx-clt"),)
    release_of = lambda v: RELEASE.get(v, "ssp")
    return cov.fit_priors(
        cell,
        reps,
        seed,
        data_dir,
        priors,
        (),
        "variant",
        sigma2,
        keep_errors=True,
        method_of=method_of,
        release_of=release_of,
    )


def summary(rows: list[dict[str, str]], cell_ids: list[str], variants: tuple[str, ...], ref: str | None = None) -> str:
    lines = [
        "| cell | variant | reps | 90% | 50% | RMSE | posterior median of sigma_y^2: 10/50/90% over replications "
        "| median s / fit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cid in cell_ids:
        for v in variants:
            rs = [r for r in rows if r["cell"] == cid and r["variant"] == v and not r.get("error")]
            if not rs:
                continue
            col = lambda k, rs=rs: np.array([float(r[k]) for r in rs])
            c90, c50, s2 = col("cover90"), col("cover50"), col("sigma2_median")  # rows with an error: skipped
            se = lambda a: a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else float("nan")
            q = " / ".join(f"{x:.3g}" for x in np.quantile(s2, [0.1, 0.5, 0.9]))
            lines.append(
                f"| {cid} | {v} | {len(rs)} | {c90.mean():.3f} ± {se(c90):.3f} | {c50.mean():.3f} ± {se(c50):.3f} "
                f"| {np.sqrt(col('sq_error').mean()):.4f} | {q} | {np.median(col('seconds')):.2f} |"
            )
    return "\n".join(lines) + "\n\n" + pooled(rows, cell_ids, variants, ref)


def pooled(rows: list[dict[str, str]], cell_ids: list[str], variants: tuple[str, ...], ref: str | None = None) -> str:
    """Over all the given cells, each variant against ``ref`` (by default ``default``, or ``eta2``, the
    default before, where ``default`` is not among ``variants``) on the replications both fitted:
    90% and 50% coverage, the mean paired difference of 90% coverage (± its standard error), the
    RMSE ratio, the fraction of fits with a divergent transition and the median seconds a fit."""
    fits = {
        (r["cell"], int(r["rep"]), r["variant"]): r
        for r in rows
        if r["cell"] in cell_ids and r["variant"] in variants and not r.get("error")
    }
    if ref is None:
        ref = "default" if "default" in variants or "eta2" not in variants else "eta2"
    lines = [
        f"Over these cells, paired with `{ref}` on the replications both fitted:",
        "",
        f"| variant | paired fits | 90% | 90% minus {ref}'s | 50% | RMSE / {ref}'s | fits with a divergence "
        "| median s / fit |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in variants:
        keys = [k[:2] for k in fits if k[2] == v and (*k[:2], ref) in fits]
        if not keys:
            continue
        col = lambda k, var, keys=keys: np.array([float(fits[(*key, var)][k]) for key in keys])
        diff = col("cover90", v) - col("cover90", ref)
        se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
        ratio = np.sqrt(col("sq_error", v).mean() / col("sq_error", ref).mean())
        divergent = np.mean([float(fits[(*key, v)]["divergences"] or 0) > 0 for key in keys])
        lines.append(
            f"| {v} | {len(keys)} | {col('cover90', v).mean():.3f} | {diff.mean():+.3f} ± {se:.3f} "
            f"| {col('cover50', v).mean():.3f} | {ratio:.3f} | {divergent:.3f} | {np.median(col('seconds', v)):.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="paper", choices=["paper", "correlated", "real", "many"])
    ap.add_argument("--cells", nargs="+", default=EPS5_CELLS)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=5)
    ap.add_argument(
        "--max-minutes", type=float, help="after this long cancel the pending tasks (started and queued ones finish)"
    )
    ap.add_argument("--ref", help="the variant the pooled table pairs with (default: default, else eta2)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage" / "paper_priors"))
    args = ap.parse_args(argv)
    from bayes_dpreg import configure_threads

    configure_threads()
    by_id = {c["id"]: c for c in cov.cells(args.suite)}
    unknown = [c for c in args.cells if c not in by_id]
    if unknown:
        ap.error(f"not cells of the {args.suite} suite: {unknown}")
    # the real suite's matched cells (theta's and sigma_y's generating priors, the default's Sigma_x) take
    # the correlation variants; every other cell fitted with a prior not the default takes none
    eta_only = set(args.variants) <= set(ETA_VARIANTS)
    other = lambda c: cov.own_prior(by_id[c]) and not (eta_only and by_id[c]["suite"] == "real")
    not_default = [c for c in args.cells if other(c)]
    if not_default:
        ap.error(f"cells fitted with a prior other than the default: {not_default}")
    allowed = ETA_VARIANTS + (ORACLE_VARIANTS if args.suite in cov.CORRELATED else ())
    if args.suite != "paper" and not set(args.variants) <= set(allowed):
        ap.error(f"in the {args.suite} suite only the variants {', '.join(allowed)} (no other generating prior)")
    given = [c for c in args.cells if cov.own_prior(by_id[c])]
    if given and set(args.variants) & set(SIGMA2_PROBES):
        ap.error(f"the sigma2 probes replace the default's sigma_y^2 prior; these cells have another: {given}")
    if "features" in args.variants and args.suite != "real":
        ap.error("the variant features is the real suite's (the features' own second moment as Sigma_x)")
    variants = tuple(args.variants)
    if args.ref is not None and args.ref not in variants:
        ap.error(f"--ref {args.ref} is not among --variants {list(variants)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "paper_priors_replications.csv"
    done = {(r["cell"], int(r["rep"]), r["variant"]) for r in read_rows(path)}
    keys = lambda c, r: [(c["id"], r, v) for v in variants]
    tasks = pending([by_id[c] for c in args.cells], args.reps, args.chunk, keys, done)

    def written(c: dict[str, Any], reps: list[int], rows: list[dict[str, Any]], seconds: float) -> None:
        append_rows(path, [r for r in rows if (r["cell"], r["rep"], r["variant"]) not in done], FIELDS)
        print(f"{c['id']} reps {reps[0]}-{reps[-1]} done ({seconds:.0f} s)", flush=True)

    run_tasks(run, tasks, (variants, args.seed, args.data_dir), args.workers, written, args.max_minutes)
    command = "python -m studies.paper_priors " + " ".join(sys.argv[1:] if argv is None else argv)
    text = f"# The default prior's variants in the {args.suite} suite's cells\n\ncommand: `{command}`\n\n"
    text += summary(read_rows(path), args.cells, variants, args.ref)
    (out / "paper_priors.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
