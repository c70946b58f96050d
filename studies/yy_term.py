"""The ``yy`` variant's term (``studies/model_variants.py``) evaluated at a replication's *true*
Gram matrices: does the released ``||y_j||^2`` favour the truth's ``sigma_y^2``?

    python -m studies.yy_term real-bike_sharing-blocks-matched-tau0.2 25 [--data-dir ../shared/data]

Prints each party's ``||y_j||^2``, its release ``w~_j`` and noise sd, the split into
``q_j = z_j^T S_j^{-1} z_j`` and ``RSS_j`` (true ``S_j``, ``z_j``), then ``log p(w~ | z~, S,
sigma_y^2)`` at the true ``S_j`` over a grid of ``sigma_y^2`` (``docs/prior.md``, *Heterogeneous
parties*).
"""

from __future__ import annotations

import argparse
import warnings
from types import SimpleNamespace

import numpy as np

from lab.paths import DATA_DIR
from studies import coverage as cov
from studies import model_variants as mv

GRID = (0.005, 0.01, 0.05, 0.2, 0.75, 1.27)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cell")
    ap.add_argument("rep", type=int)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    args = ap.parse_args()
    import jax.numpy as jnp

    import bayes_dpreg as bd
    from bayes_dpreg.model.densities import model_data
    from bayes_dpreg.model.prior import prior_scales
    from bayes_dpreg.stats import stack_stats

    bd.enable_x64()
    cell = next(c for c in cov.cells(args.cell.split("-")[0]) if c["id"] == args.cell)
    (X, y, s_noise), _, prior = cov.replicate(cell, args.rep, mv.SEED, args.data_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stats = cov._releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"})["ssp"]
    mv.prepare("yy", cell, args.rep, args.data_dir, stats)
    parts = bd.split_parties(X, y, cell["J"])
    st = stack_stats(stats)
    pr = prior.resolve(st.d, prior_scales(st))
    S = np.stack([x.T @ x for x, _ in parts])
    z = np.stack([x.T @ v for x, v in parts])
    q = np.array([zz @ np.linalg.solve(s, zz) for s, zz in zip(S, z)])
    yy = np.array([v @ v for _, v in parts])
    n = np.array([len(v) for _, v in parts])
    print(f"{args.cell} replication {args.rep}: n_j {n.tolist()}, d = {st.d}")
    print("||y_j||^2      ", np.round(yy, 1).tolist())
    print("w~_j (released)", np.round(mv.YY["w"], 1).tolist(), "noise sd", np.round(mv.YY["sigma_w"], 1).tolist())
    print("q_j            ", np.round(q, 1).tolist())
    print("RSS_j / (n_j - d)", np.round((yy - q) / (n - st.d), 4).tolist())
    md = model_data(st)
    data = SimpleNamespace(
        z_tilde=md.z_tilde, sigma_z=md.sigma_z, n=md.n, w=jnp.asarray(mv.YY["w"]), sigma_w=jnp.asarray(mv.YY["sigma_w"])
    )
    print("| sigma_y^2 | log p(w~ given z~, true S, sigma_y^2) | E w~_j | sd w~_j |")
    print("|---|---|---|---|")
    for s2 in GRID:
        mean, cv = mv.yy_moments(jnp.asarray(S), s2, data, pr)
        lp = float(mv.yy_log_lik(jnp.asarray(S), s2, data, pr))
        print(
            f"| {s2:g} | {lp:.1f} | {np.round(np.asarray(mean)).astype(int).tolist()} | "
            f"{np.round(np.sqrt(np.diag(np.asarray(cv)))).astype(int).tolist()} |"
        )


if __name__ == "__main__":
    main()
