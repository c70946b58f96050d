"""Clipping as a weighting: how far bounds below the data move the regression, by clipping rule.

    python -m studies.clipping [--reps 200] [--out docs/results/bounds]

The data of the ``correlated`` coverage cells (``studies/coverage.py``: ``Sigma_x`` from
``IW(I, d + 1)`` or an LKJ(1) correlation with log-normal scales, Student-t coefficients, a
noise share uniform on ``(0.2, 1)``), one party of ``n`` rows, bounds at the ``q`` quantile of the
row norms and of ``|y|`` with ``q`` what :func:`~bayes_dpreg.propose_bounds` aims at with eps = 2
(:func:`~bayes_dpreg.privacy.bounds.auto_quantile`: 0.73 at n = 300, 0.97 at n = 3,000). No
release noise: the least-squares estimate ``S^{-1} z`` of the clipped rows against the truth, in
units of the unclipped data's own OLS standard errors, so that 1 is the sampling error every
method has and anything above it is what the clipping adds. Rules:

* ``rows`` (:func:`bayes_dpreg.privacy.gaussian.clip`): each row ``(x_i, y_i)`` scaled by
  ``c_i = min(1, x_bound / ||x_i||, y_bound / |y_i|)``, a weighted least squares;
* ``separate`` (the rule before): ``x_i`` scaled onto the ball, ``y_i`` clipped to the interval;
* ``none``: the unclipped rows (the floor).

Writes ``clipping.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from lab.machine import describe
from lab.paths import REPO

SIZES = ((3, 300), (5, 300), (10, 300), (5, 3000), (10, 3000))
RULES = ("rows", "separate", "none")


def clipped(X: np.ndarray, y: np.ndarray, xb: float, yb: float, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows a release with bounds ``(xb, yb)`` sums under ``rule``."""
    from bayes_dpreg.privacy.gaussian import clip, row_norms

    if rule == "none":
        return X, y
    if rule == "separate":
        return X * np.minimum(1.0, xb / row_norms(X))[:, None], np.clip(y, -yb, yb)
    Xc, yc, _ = clip(X, y, xb, yb)
    return Xc, yc


def standardised_errors(family: str, d: int, n: int, reps: int, seed: int = 2026) -> dict[str, np.ndarray]:
    """Per rule, ``(estimate - theta) / se`` over ``reps`` data sets (``reps x d`` values)."""
    from bayes_dpreg.privacy.bounds import auto_quantile
    from bayes_dpreg.privacy.gaussian import row_norms
    from studies.coverage import _correlated

    q = auto_quantile(n, 2.0)
    cell = dict(d=d, n=n, family=family)
    out: dict[str, list[np.ndarray]] = {r: [] for r in RULES}
    for rep in range(reps):
        rng = np.random.default_rng([seed, d, n, rep, family == "lkj"])
        X, y, theta = _correlated(cell, rng)
        xb = float(np.quantile(row_norms(X), q))
        yb = float(np.quantile(np.abs(y), q))
        G = X.T @ X
        ols = np.linalg.solve(G, X.T @ y)
        se = np.sqrt(np.mean((y - X @ ols) ** 2) * np.diag(np.linalg.inv(G)))
        for rule in RULES:
            Xc, yc = clipped(X, y, xb, yb, rule)
            out[rule].append((np.linalg.solve(Xc.T @ Xc, Xc.T @ yc) - theta) / se)
    return {r: np.concatenate(v) for r, v in out.items()}


def table(reps: int) -> list[str]:
    from bayes_dpreg.privacy.bounds import auto_quantile

    lines = [
        "| family | d | n | quantile | " + " | ".join(f"RMS error / se: {r}" for r in RULES) + " |",
        "|---|---|---|---|" + "---|" * len(RULES),
    ]
    for family in ("iw", "lkj"):
        for d, n in SIZES:
            errs = standardised_errors(family, d, n, reps)
            rms = {r: float(np.sqrt(np.mean(errs[r] ** 2))) for r in RULES}
            lines.append(
                f"| {family} | {d} | {n} | {auto_quantile(n, 2.0):.3f} | "
                + " | ".join(f"{rms[r]:.2f}" for r in RULES)
                + " |"
            )
            print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "bounds"))
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    lines = table(args.reps)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    head = [
        "# Clipping rules: what bounds below the data do to the regression",
        "",
        f"command: `python -m studies.clipping --reps {args.reps}` "
        f"({time.perf_counter() - t0:.0f} s; {describe('numpy')})",
        "",
        "RMS over coefficients and data sets of the clipped rows' least-squares error in units of the",
        "unclipped data's OLS standard errors (no release noise; 1 is the floor). `rows`: each row",
        "`(x, y)` scaled as a whole onto the bounds (the release's rule); `separate`: `x` onto the ball",
        "and `y` clipped (the rule before); `none`: no bounds. Bounds at the quantile `propose_bounds`",
        "aims at with eps = 2 (`auto_quantile`).",
        "",
    ]
    (out / "clipping.md").write_text("\n".join(head + lines) + "\n")


if __name__ == "__main__":
    main()
