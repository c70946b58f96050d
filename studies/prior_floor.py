"""Where the release resolves no feature's scale: the autoscaled prior of ``theta`` against the truth.

    python -m studies.prior_floor [--suite tiny] [--reps 100] [--out DIR]  # writes DIR/prior_floor_<suite>.md

The default prior scales ``theta_k ~ N(0, y_bound^2 / (4 d E[x_k^2]))`` with ``E[x_k^2]`` read off the
pooled released ``diag(sum_j S~_j) / n``, kept above a floor of twice that estimate's noise sd
(:func:`~bayes_dpreg.model.prior.prior_scales`). Where the noise swamps ``S_j`` (few rows, small eps,
bounds at heavy-tailed data's maxima) the floor binds and sets the feature's scale, whatever the
features' true mean square. Per cell of ``studies.coverage`` (the same seeded replications, no fits):
how often the floor binds, the estimate over the true mean square of the rows, and how often the truth
``theta_k`` lies outside the prior's own central 90% interval (0.10 if the prior's scale matched the
truth's spread).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from lab.paths import DATA_DIR
from studies import coverage as cov


def cell_summary(cell: dict, reps: int, seed: int) -> dict[str, float]:
    """Per-feature statistics pooled over ``reps`` replications of ``cell``."""
    from bayes_dpreg.model.prior import Prior, feature_ms_floor, prior_scales
    from bayes_dpreg.stats import stack_stats

    bound, ratio, outside = [], [], []
    for rep in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seeded releases (a study)
            (X, y, s_noise), theta, _ = cov.replicate(cell, rep, seed, str(DATA_DIR))
            st = stack_stats(
                cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"}, cell.get("bounds", "max"))["ssp"]
            )
        sc = prior_scales(st)
        floor = feature_ms_floor(st)
        sd = np.sqrt(np.diag(np.asarray(Prior().autoscaled(sc, cell["d"]).C)))  # theta's prior, as fit scales it
        bound.extend(np.isclose(sc.feature_ms, floor))
        ratio.extend(sc.feature_ms / (X**2).mean(0))
        outside.extend(np.abs(theta) > 1.645 * sd)
    return dict(
        floor_binds=float(np.mean(bound)),
        ms_ratio_median=float(np.median(ratio)),
        truth_outside_prior90=float(np.mean(outside)),
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="tiny")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", type=Path, default=None, help="also write prior_floor_<suite>.md here")
    args = ap.parse_args(argv)
    lines = [
        f"command: `python -m studies.prior_floor --suite {args.suite} --reps {args.reps} --seed {args.seed}`",
        "",
        "| cell | features where the floor binds | E[x_k^2] read / the rows' own (median) | truths outside the "
        "prior's 90% interval |",
        "|---|---|---|---|",
    ]
    for cell in cov.cells(args.suite):
        s = cell_summary(cell, args.reps, args.seed)
        lines.append(
            f"| {cell['id']} | {s['floor_binds']:.2f} | {s['ms_ratio_median']:.2f} | {s['truth_outside_prior90']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"prior_floor_{args.suite}.md").write_text(text)


if __name__ == "__main__":
    main()
