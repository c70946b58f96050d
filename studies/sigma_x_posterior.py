"""Where ``Sigma_x``'s posterior sits in its smallest direction, against the truth and the prior's scale.

    python -m studies.sigma_x_posterior CELL REP [--variant lambda/100]
    python -m studies.sigma_x_posterior --scales

With ``CELL REP``: refits one replication of ``studies/coverage.py`` (seed 2026; ``--variant`` one
of ``studies/model_variants.py``'s, none for the default) and prints the smallest eigenvalue of
the features' covariance (``X^T X / n``), the prior mode's scale ``Lambda / (kappa + d + 1)``
(``kappa = d + 1``, the default) on the same diagonal, and the quantiles of the posterior's
smallest eigenvalue of ``Sigma_x``, over all draws and at the divergent transitions. With
``--scales``: for power plant and bike sharing, the features' smallest eigenvalue against the
default prior mode's scale, the features' mean square over ``2d + 2``.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from lab.paths import DATA_DIR
from studies import coverage as cov
from studies import model_variants as mv

SEED = 2026


def scales(data_dir: str) -> None:
    for name in cov.DATA_FILES:
        X = cov._real_data(name, data_dir)
        n, d = X.shape
        ms = np.diag(X.T @ X / n)
        print(
            f"{name}: d = {d}, smallest eigenvalue of X^T X / n {np.linalg.eigvalsh(X.T @ X / n)[0]:.4f}, "
            f"default prior mode's scale mean(E[x_k^2]) / (2d + 2) = {ms.mean() / (2 * d + 2):.4f}"
        )


def refit(cid: str, rep: int, variant: str | None, data_dir: str) -> None:
    import bayes_dpreg as bd
    from bayes_dpreg.model.prior import prior_scales
    from bayes_dpreg.stats import stack_stats

    if variant:
        mv._patch(variant)
    cell = next(c for c in cov.cells(cid.split("-")[0]) if c["id"] == cid)
    (X, y, s_noise), theta, prior = cov.replicate(cell, rep, SEED, data_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"})["ssp"]
        ms = prior_scales(stack_stats(stats)).feature_ms
        shrink = mv.lambda_shrink(variant)
        prior = mv.variant_prior(prior, stats, variant)
        idata = bd.fit(stats, "normalx-nuts", prior, seed=rep)
    pr = idata.posterior.attrs
    d = X.shape[1]
    ev = np.linalg.eigvalsh(idata.latent_posterior["Sigma_x"].values)[..., 0]
    div = idata.sample_stats["diverging"].values
    q = [0.05, 0.5, 0.95]
    print(
        f"{cid} rep {rep} ({variant or 'default'}): smallest eigenvalue of X^T X / n "
        f"{np.linalg.eigvalsh(X.T @ X / len(X))[0]:.3g}; prior mode Lambda / (kappa + d + 1) on the diagonal "
        f"{ms.mean() / shrink / (2 * d + 2):.3g}"
    )
    print(
        f"  posterior smallest eigenvalue of Sigma_x, log10 quantiles {q}: {np.round(np.log10(np.quantile(ev, q)), 2)}"
    )
    if div.any():
        print(f"  at the {int(div.sum())} divergent transitions: {np.round(np.log10(np.quantile(ev[div], q)), 2)}")
    lo, hi = np.quantile(idata.posterior["theta"].values.reshape(-1, d), [0.05, 0.95], axis=0)
    print(f"  max R-hat {pr['max_rhat']:.3f}, 90% coverage of theta {np.mean((lo <= theta) & (theta <= hi)):.2f}")


def main() -> None:
    import bayes_dpreg as bd

    bd.configure_threads()
    bd.enable_x64()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cell", nargs="?")
    ap.add_argument("rep", nargs="?", type=int)
    ap.add_argument("--variant", default=None, choices=mv.VARIANTS)
    ap.add_argument("--scales", action="store_true")
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    args = ap.parse_args()
    if args.scales:
        scales(args.data_dir)
    if args.cell:
        refit(args.cell, args.rep, args.variant, args.data_dir)


if __name__ == "__main__":
    main()
