"""What the default's non-converged fits on bike-sharing blocks look like, chain by chain.

    python -m studies.stuck_chains CELL [--reps 25 48 ...] [--variant V] [--num-warmup 500]
        [--num-samples 500] [--max-rhat 1.01] [--out docs/results/coverage]

Refits ``normalx-nuts`` exactly as ``studies/coverage.py`` did (same data, split, release noise and
seed, the cell's prior, ``fit`` defaults) on the replications given, by default those whose max
R-hat in the coverage run exceeded ``--max-rhat``, and prints per chain the mean of ``sigma_y^2`` and of the
log density NUTS targets (``lp``, theta integrated out). With ``--variant`` the fit is patched as
in ``studies/model_variants.py`` first (e.g. ``sigma2-cap``); with ``--num-warmup`` or
``--num-samples`` other than 500 the chains run longer (the label says so). Rows go to ``stuck_chains.md`` under
``--out`` (a rerun of a replication and variant replaces its row).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from lab.paths import DATA_DIR, REPO
from lab.rows import read_rows
from studies import coverage as cov
from studies import model_variants as mv

HEADER = (
    "| cell | rep | variant | y_bound^2 | max R-hat | min bulk ESS | sigma_y^2 per chain (mean) "
    "| lp per chain (mean) | outlier's lp - others' | divergences | 90% coverage | s |"
)
PREAMBLE = (
    "command: `python -m studies.stuck_chains CELL [--variant V] [--num-samples N]` (seed 2026; one row per "
    "refit, 4 chains x (500 + 500) draws unless the variant says otherwise; lp: the log density NUTS samples, "
    "theta integrated out; the outlier is the chain whose "
    "sigma_y^2 is farthest from the median chain's)\n\n"
)


def failing_reps(cid: str, out: Path, threshold: float = 1.01) -> list[int]:
    """Replications of ``cid`` whose default fit in the coverage run had max R-hat above ``threshold``."""
    rows = read_rows(out / f"{cid.split('-')[0]}_replications.csv")
    return sorted(
        int(r["rep"])
        for r in rows
        if r["cell"] == cid and r["method"] == "normalx-nuts" and cov._num(r, "max_rhat") > threshold
    )


def refit(
    cell: dict,
    rep: int,
    data_dir: str,
    variant: str | None,
    num_samples: int = 500,
    num_warmup: int = 500,
    extend: int = 0,
) -> dict:
    """One refit of replication ``rep``; per-chain summaries of ``sigma_y^2`` and ``lp``."""
    import arviz as az

    import bayes_dpreg as bd

    (X, y, s_noise), theta, prior = cov.replicate(cell, rep, mv.SEED, data_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"})["ssp"]
        mv.prepare(variant, cell, rep, data_dir, stats)
        extra: dict[str, Any] = {"extend": extend} if extend else {}
        t0 = time.perf_counter()
        idata = bd.fit(
            stats,
            "normalx-nuts",
            mv.variant_prior(prior, stats, variant),
            seed=rep,
            num_samples=num_samples,
            num_warmup=num_warmup,
            **extra,
        )
        seconds = time.perf_counter() - t0
    post, ss = idata.posterior, idata.sample_stats
    rhat, ess = az.rhat(post), az.ess(post, method="bulk")
    lp = ss["lp"].values.mean(1)
    s2 = post["sigma2"].values.mean(1)
    far = int(np.argmax(np.abs(np.log(s2) - np.median(np.log(s2)))))
    lo, hi = np.quantile(post["theta"].values.reshape(-1, theta.size), [0.05, 0.95], axis=0)
    return dict(
        rep=rep,
        y_bound2=float(np.max([s.y_bound for s in stats])) ** 2,
        rhat=float(max(rhat[v].max() for v in post.data_vars)),
        ess=float(min(ess[v].min() for v in post.data_vars)),
        s2=s2,
        lp=lp,
        lp_gap=float(lp[far] - np.delete(lp, far).mean()),
        div=int(ss["diverging"].values.sum()),
        cover90=float(np.mean((lo <= theta) & (theta <= hi))),
        seconds=seconds,
        extensions=int(post.attrs.get("extensions", 0)),
    )


def row(cid: str, variant: str, r: dict) -> str:
    s2 = ", ".join(f"{v:.3g}" for v in r["s2"])
    lp = ", ".join(f"{v:.0f}" for v in r["lp"])
    return (
        f"| {cid} | {r['rep']} | {variant} | {r['y_bound2']:.2f} | {r['rhat']:.3f} | {r['ess']:.0f} "
        f"| {s2} | {lp} | {r['lp_gap']:+.0f} | {r['div']} | {r['cover90']:.2f} | {r['seconds']:.0f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cell")
    ap.add_argument("--reps", type=int, nargs="*", help="default: the coverage run's fits with max R-hat > 1.01")
    ap.add_argument("--variant", choices=mv.VARIANTS)
    ap.add_argument("--num-warmup", type=int, default=500, help="warm-up iterations per chain")
    ap.add_argument("--num-samples", type=int, default=500, help="draws per chain after the warm-up")
    ap.add_argument("--max-rhat", type=float, default=1.01, help="refit the coverage run's fits above this")
    ap.add_argument("--extend", type=int, default=0, help="fit's extend: continue slowly mixing chains up to N times")
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    args = ap.parse_args()
    import bayes_dpreg as bd

    bd.configure_threads()
    bd.enable_x64()
    if args.variant:
        mv._patch(args.variant)
    out = Path(args.out)
    cell = next(c for c in cov.cells(args.cell.split("-")[0]) if c["id"] == args.cell)
    md = out / "stuck_chains.md"
    label = (
        (args.variant or "default")
        + (f", {args.num_warmup} warm-up" if args.num_warmup != 500 else "")
        + (f", {args.num_samples} draws" if args.num_samples != 500 else "")
        + (f", extend={args.extend}" if args.extend else "")
    )
    for rep in args.reps or failing_reps(args.cell, out, args.max_rhat):
        fitted = refit(cell, rep, args.data_dir, args.variant, args.num_samples, args.num_warmup, args.extend)
        line = row(args.cell, label + (f" ({fitted['extensions']} used)" if args.extend else ""), fitted)
        print(line, flush=True)
        key = [f"| {args.cell}", str(rep), label]  # a rerun replaces the row, however many extensions it used

        def same(x: str, key: list[str] = key) -> bool:
            cells = x.split(" | ")[:3]
            return cells[:2] == key[:2] and cells[2].split(" (")[0] == label

        lines = [x for x in (md.read_text().splitlines()[4:] if md.exists() else []) if not same(x)]
        md.write_text(PREAMBLE + "\n".join([HEADER, "|---" * (HEADER.count("|") - 1) + "|", *lines, line]) + "\n")


if __name__ == "__main__":
    main()
