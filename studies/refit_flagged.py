"""Refit replications of a coverage cell with the default and show what their chains did: R-hat of ``theta`` and
``sigma2``, draws a chain, each chain's mean and sd of ``sigma2`` and of the worst coefficient, and the fit's
heterogeneity check (``party_dispersion``), the fit's seconds (the first fit's include compiling) and, with
``--extend``, the max R-hat over the first 1,000, 1,250, ... draws a chain: what a fit whose rounds stopped there
would report. For fits that :mod:`studies.criteria` flags on R-hat: separate modes
(chains whose means differ by many of their sds) or slow mixing within one wide posterior.

    python -m studies.refit_flagged --suite real --cell real-air_quality-blocks-default-tau1 --reps 29 24 22

The releases and fit seeds are :mod:`studies.coverage`'s (``--seed`` its seed), so a replication refits as the
study fitted it on a machine of the same kind (another CPU's floating point takes the chains elsewhere: on the AMD
EPYC, rows fitted on the Intel Xeon did not repeat).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from typing import Any

import numpy as np

from bayes_dpreg.samplers.normalx_clt import NUM_SAMPLES
from lab.paths import DATA_DIR
from studies import coverage as cov

FIRST = 1000  # draws a chain where the rounds stopped before 2026-12-07 (three after the first 250)


def chains(cell: dict, rep: int, seed: int, data_dir: str, extend: int | None = None) -> dict[str, Any]:
    """One replication refitted with the default (``normalx-clt`` settings as the study's; ``extend``: fit's
    ``extend``, the sampler's own where ``None``)."""
    import arviz as az

    import bayes_dpreg as bd

    (X, y, s_noise), _theta, prior = cov.replicate(cell, rep, seed, data_dir)
    fp = cov.study_prior("normalx-clt", cell, rep, seed, prior)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded releases, clipping, the fit's own warnings
        rel = cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"}, cell.get("bounds", "max"))
        options: dict[str, Any] = {} if extend is None else {"extend": extend}
        t0 = time.perf_counter()
        idata = bd.fit(rel["ssp"], "normalx-clt", fp, seed=rep, **options)
        seconds = time.perf_counter() - t0
    post = idata.posterior
    rh = az.rhat(post, var_names=["theta", "sigma2"], method="rank")
    k = int(np.argmax(rh["theta"].values))
    worst = post["theta"].values[..., k]
    s2 = post["sigma2"].values
    return dict(
        rep=rep,
        rhat_theta=float(rh["theta"].max()),
        coef=str(post["theta"].coords["coef"].values[k]),
        rhat_sigma2=float(rh["sigma2"]),
        draws=int(post.sizes["draw"]),
        sigma2_means=s2.mean(1),
        sigma2_sds=s2.std(1),
        worst_means=worst.mean(1),
        worst_sds=worst.std(1),
        dispersion=float(post.attrs.get("party_dispersion", math.nan)),
        dispersion_p=float(post.attrs.get("party_dispersion_p", math.nan)),
        seconds=seconds,
        rounds=rhat_by_draws(post),
    )


def rhat_by_draws(post: Any, step: int = NUM_SAMPLES) -> list[tuple[int, float]]:
    """Max rank R-hat of ``theta`` and ``sigma2`` over the first 1,000, 1,250, ... draws a chain: what a fit
    whose ``extend`` stopped there would report (the rounds' draws do not depend on how many may follow)."""
    import arviz as az

    n = int(post.sizes["draw"])
    out = []
    for m in range(FIRST, n + 1, step):
        rh = az.rhat(post[["theta", "sigma2"]].isel(draw=slice(0, m)), method="rank")
        out.append((m, max(float(rh["theta"].max()), float(rh["sigma2"]))))
    return out


def _fmt(a: np.ndarray) -> str:
    return ", ".join(f"{v:.3g}" for v in a)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", required=True, choices=list(cov.SUITES))
    ap.add_argument("--cell", required=True)
    ap.add_argument("--reps", type=int, nargs="+", required=True)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument(
        "--extend",
        type=int,
        help="fit's extend (default: the sampler's); the table then adds the max R-hat at every 250 draws from 1,000",
    )
    args = ap.parse_args(argv)
    cell = next((c for c in cov.cells(args.suite) if c["id"] == args.cell), None)
    if cell is None:
        ap.error(f"no cell {args.cell!r} in suite {args.suite!r}")
    reps = " ".join(map(str, args.reps))
    more = "" if args.extend is None else f" --extend {args.extend}"
    print(f"`python -m studies.refit_flagged --suite {args.suite} --cell {args.cell} --reps {reps}{more}`")
    print()
    print(
        "| rep | max R-hat, theta (coef) | R-hat, sigma2 | draws a chain | sigma2: chain means | sigma2: chain sds "
        "| worst coef: chain means | its chain sds | party dispersion (p) | seconds "
        "| max R-hat at 1000, 1250, ... draws |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for rep in args.reps:
        r = chains(cell, rep, args.seed, args.data_dir, args.extend)
        rounds = ", ".join(f"{v:.3f}" for _, v in r["rounds"]) or "-"
        print(
            f"| {rep} | {r['rhat_theta']:.3f} ({r['coef']}) | {r['rhat_sigma2']:.3f} | {r['draws']} "
            f"| {_fmt(r['sigma2_means'])} | {_fmt(r['sigma2_sds'])} | {_fmt(r['worst_means'])} "
            f"| {_fmt(r['worst_sds'])} | {r['dispersion']:.2f} ({r['dispersion_p']:.3g}) "
            f"| {r['seconds']:.1f} | {rounds} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
