"""Choosing the declared bounds: release noise against clipping bias, and the DP bound proposal's reliability.

    python -m studies.bounds_tradeoff [--reps 30] [--data-dir ../shared/data] [--out docs/results/bounds]

1. **Trade-off** (real data: power plant and bike sharing from ``../shared/data``, their own
   response, J = 5 parties of consecutive rows, eps = 1, delta = 1e-5): for bounds at
   the ``q``-quantile of the row norms and of ``|y|`` (the same ``q`` for both;
   ``q = 1`` is the data's maxima, and ``1.5x``/``3x`` the maxima are looser declared
   bounds), the error of the posterior mean of ``fixeds`` (S~ taken at face value, the
   estimate the bound moves most) against the non-private OLS fit of all rows, split
   into the clipping bias (``fixeds`` on the clipped data with no noise: OLS of the clipped
   rows) and the total over ``--reps`` releases. Also the DP proposal
   (:func:`bayes_dpreg.propose_bounds` at eps = 0.5 per party, default quantile) as a
   vertical line. Writes ``bounds_tradeoff.png`` and ``bounds_tradeoff.md``.
2. **Reliability** of the private quantile (OpenDP's exponential mechanism over the
   default candidate grid): how often the proposal lands above 1.5x the maximum norm,
   against ``(1 - q) n eps_q``, 40 draws each; the basis of
   :func:`bayes_dpreg.privacy.bounds.auto_quantile`.

Every release here is seeded (reproducible study; not private) except the proposals,
which use OpenDP's secure sampler and so vary between runs.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from lab.machine import cpu_model
from lab.paths import DATA_DIR, REPO

DATA = {"power_plant": "power_plant_energy.csv", "bike_sharing": "bike_sharing.csv"}
QUANTILES = (0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 1.0)
LOOSER = (1.5, 3.0)
J, EPS, DELTA, PROPOSAL_EPS = 5, 1.0, 1e-5, 0.5


def _ols(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(X, y, rcond=None)[0]


def tradeoff(name: str, data_dir: str, reps: int) -> list[dict]:
    import bayes_dpreg as bd
    from bayes_dpreg.privacy.gaussian import clip

    ds = bd.load_dataset(Path(data_dir) / DATA[name], name=name)
    X, y = ds.X_train, ds.y_train
    norms, ay = np.linalg.norm(X, axis=1), np.abs(y)
    target = _ols(X, y)
    settings = [(f"q{q:g}", np.quantile(norms, q), np.quantile(ay, q)) for q in QUANTILES]
    settings += [(f"{m:g}x max", m * norms.max(), m * ay.max()) for m in LOOSER]
    rows = []
    for label, xb, yb in settings:
        xb, yb = float(xb) * (1 + 1e-12), float(yb) * (1 + 1e-12)
        Xc, yc, rep = clip(X, y, xb, yb)
        bias = float(np.sum((_ols(Xc, yc) - target) ** 2))
        errs = []
        for r in range(reps):
            seeds = np.random.SeedSequence([2026, r]).spawn(J)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stats = [
                    bd.release(Xj, yj, epsilon=EPS, delta=DELTA, x_bound=xb, y_bound=yb, seed=s)
                    for (Xj, yj), s in zip(bd.split_parties(X, y, J), seeds)
                ]
                post = bd.fit(stats, "fixeds", seed=r, num_samples=300, num_warmup=300, num_chains=2)
            m = post.posterior["theta"].mean(("chain", "draw")).values
            errs.append(float(np.sum((m - target) ** 2)))
        rows.append(
            dict(
                data=name,
                bound=label,
                x_bound=xb,
                y_bound=yb,
                clipped=(rep.n_x_clipped + rep.n_y_clipped) / (2 * rep.n_rows),
                x_clipped=rep.n_x_clipped / rep.n_rows,
                y_clipped=rep.n_y_clipped / rep.n_rows,
                sigma_S=stats[0].sigma_S,
                bias2=bias,
                mse=float(np.mean(errs)),
                mse_se=float(np.std(errs, ddof=1) / np.sqrt(len(errs))),
            )
        )
        print(
            f"  {name:<13} {label:<9} x_bound {xb:9.4g}  y_bound {yb:9.4g}  clipped {rows[-1]['clipped']:.4f}  "
            f"sigma_S {rows[-1]['sigma_S']:9.4g}  bias^2 {bias:.4g}  mse {rows[-1]['mse']:.4g}",
            flush=True,
        )
    proposals = []
    for _ in range(5):
        pbs = [bd.propose_bounds(Xj, yj, epsilon=PROPOSAL_EPS) for Xj, yj in bd.split_parties(X, y, J)]
        proposals.append((max(p.x_bound for p in pbs), max(p.y_bound for p in pbs)))
    for row in rows:
        row["proposal_x"] = float(np.median([p[0] for p in proposals]))
        row["proposal_y"] = float(np.median([p[1] for p in proposals]))
    return rows


def reliability() -> list[dict]:
    from bayes_dpreg.privacy.bounds import DEFAULT_RANGE, _private_quantile, bound_candidates

    rng = np.random.default_rng(2026)
    cands = bound_candidates(*DEFAULT_RANGE)
    out = []
    for n, eq in ((2000, 0.5), (5000, 0.1), (20000, 0.1)):
        v = np.linalg.norm(rng.standard_normal((n, 5)), axis=1)
        for t in (20, 40, 80):
            q = 1 - t / (n * eq)
            r = np.array([_private_quantile(v, cands, q, eq) for _ in range(40)])
            out.append(
                dict(
                    n=n,
                    eps_q=eq,
                    tail=t,
                    q=q,
                    above=float(np.mean(r > 1.5 * v.max())),
                    median=float(np.median(r)),
                    true_q=float(np.quantile(v, q)),
                )
            )
    return out


def _figure(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({r["data"] for r in rows})
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4))
    for ax, name in zip(np.atleast_1d(axes), names):
        rs = [r for r in rows if r["data"] == name]
        xb = np.array([r["x_bound"] for r in rs])
        order = np.argsort(xb)
        mse, bias = np.array([r["mse"] for r in rs])[order], np.array([r["bias2"] for r in rs])[order]
        ax.plot(xb[order], mse, "o-", label="total error (fixeds, eps = 1)")
        ax.plot(xb[order], bias, "s--", label="clipping bias (no noise)")
        ax.plot(xb[order], np.maximum(mse - bias, 1e-12), "^:", label="noise part (total - bias)")
        for r in rs:
            ax.annotate(r["bound"], (r["x_bound"], r["mse"]), fontsize=7, xytext=(2, 4), textcoords="offset points")
        ax.axvline(rs[0]["proposal_x"], color="k", lw=0.8, label=f"DP proposal (eps = {PROPOSAL_EPS:g})")
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="declared x_bound",
            ylabel="||theta_hat - theta_OLS||^2",
            title=f"{name}: J = {J}, eps = {EPS:g}",
        )
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "bounds"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    rows = [r for name in DATA for r in tradeoff(name, args.data_dir, args.reps)]
    rel = reliability()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    _figure(rows, out / "bounds_tradeoff.png")
    lines = [
        f"command: `python -m studies.bounds_tradeoff --reps {args.reps}` ({time.perf_counter() - t0:.0f} s, "
        f"{cpu_model()})\n",
        f"Error of `fixeds`' posterior mean against the non-private OLS fit, J = {J}, eps = {EPS:g}, "
        f"{args.reps} releases per bound; clipping bias = OLS of the clipped rows, no noise.\n",
        "| data | bound | x_bound | y_bound | rows clipped (x, y) | sigma_S | clipping bias^2 | total error^2 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['data']} | {r['bound']} | {r['x_bound']:.4g} | {r['y_bound']:.4g} | "
            f"{r['x_clipped']:.3f}, {r['y_clipped']:.3f} | {r['sigma_S']:.4g} | {r['bias2']:.3g} | "
            f"{r['mse']:.3g} ± {r['mse_se']:.2g} |"
        )
    for name in DATA:
        r = next(r for r in rows if r["data"] == name)
        lines.append(
            f"\n{name}: DP proposal (eps = {PROPOSAL_EPS:g} per party, largest over the {J} parties, "
            f"median of 5 draws): x_bound {r['proposal_x']:.4g}, y_bound {r['proposal_y']:.4g}"
        )
    lines += [
        "\nReliability of the private quantile (default grid, 40 draws each):\n",
        "| n | eps per query | (1 - q) n eps_q | q | share above 1.5x max | median proposal | true quantile |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rel:
        lines.append(
            f"| {r['n']} | {r['eps_q']:g} | {r['tail']} | {r['q']:.4f} | {r['above']:.3f} | "
            f"{r['median']:.4g} | {r['true_q']:.4g} |"
        )
    (out / "bounds_tradeoff.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
