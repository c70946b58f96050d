"""Coverage of credible intervals and error of the posterior mean, for every method, through ``bayes_dpreg.fit``.

    python -m studies.coverage --suite paper|small|real|correlated|many|tiny|boundary|units [--reps 200]
        [--workers 2] [--methods normalx-nuts fixeds ...] [--cells ID ...] [--out docs/results/coverage]

Every replication redraws the truth (where it is random), the data (where simulated) and
the release noise, then fits each method exactly as a user would (``fit`` with its
default settings and 4 chains). Per replication and method: the fraction of coefficients
inside the central 50/90/95% intervals, mean interval widths, squared error of the
posterior mean, max R-hat, min bulk ESS, divergences, and seconds per fit.

Suites (bounds at the data's maxima, as in the paper; ``delta = 1e-5``):

* ``paper``: the paper's simulation (Sec. 5.1): ``n = 1e5``, ``d`` in {2, 5}, ``J`` in
  {1, 5, 10}, eps in {0.5, 1, 5}; ``theta ~ N(0, I)``, ``Sigma_x ~ IW(V^T V, d + 1)``,
  ``sigma_y = 1``; fitted with the default (autoscaled) prior.
* ``small``: small parties, ``d = 3``, ``J = 3``, ``n_j`` in {100, 300, 1000}, eps in
  {0.3, 1, 3}; truth drawn from the prior the fit is given:
  ``theta ~ N(0, 0.5^2 I)``, ``sigma_y^2 ~ IG(3, 0.5)``, ``Sigma_x ~ IW(2 I, 6)``.
* ``correlated``: correlated features fitted with the *default* prior, the truth fixed by the
  simulation (issue 31): ``Sigma_x`` from an inverse Wishart ``IW(I, d + 1)`` (``iw``) or an LKJ(1)
  correlation with log-normal scales ``exp(N(0, 1))`` (``lkj``); ``theta_k`` Student-t (3 degrees
  of freedom) times ``0.5 / sqrt(d)`` and ``sigma_y`` uniform on ``(0.2, 1)`` times the signal's sd,
  neither of which the default prior matches. A half fraction of the ``2^5`` design over ``J`` in
  {3, 10}, ``n_j`` in {300, 3000}, eps in {0.5, 2}, the family, and the bounds (``max``: the
  data's maxima; ``quantile``: each party's own ``propose_bounds`` at eps = 2, OpenDP's quantiles,
  which no seed reproduces), defining relation ``bounds = J n_j eps family``, with ``d`` cycling
  through 3, 5, 10: 16 cells. Methods ``oracle`` and ``oracle-clt``: ``normalx-nuts`` and
  ``normalx-clt`` given the generating ``Sigma_x`` prior (:func:`oracle_prior`; paper and
  correlated cells; theta's and sigma_y's priors stay the default). Methods ``matched`` and
  ``matched-clt``: the same samplers given every generating prior (:func:`matched_prior`; paper
  cells): the truth is then a draw from the fit's prior, where intervals must cover at their rate
  if the sampler and its likelihood are right (up to ``sigma_y = 1``, a point mass the prior
  approximates by ``IG(200, 199)``).
* ``tiny``: the ``correlated`` suite's data and the default prior at parties smaller than
  ``max(100, 30 d)`` rows, where ``fit`` takes ``normalx-nuts`` (the ``small`` suite's parties, of
  100 rows and more, are ``normalx-clt``'s): four cells, d in {2, 3, 5}, J in {3, 5}, ``n_j`` 40-120,
  eps in {0.5, 1, 2}, both families, bounds at the data's maxima. Compare ``normalx-nuts`` with
  ``oracle``.
* ``boundary``: the ``correlated`` suite's data and the default prior at parties of exactly
  ``max(100, 30 d)`` rows, the smallest where ``fit`` takes ``normalx-clt`` (one row fewer and it takes
  ``normalx-nuts``): three cells, d in {2, 3, 5}, J = 3, eps = 1. Fit with both, each under its default
  prior (``theta``'s scaled by the sampled feature scales under ``normalx-nuts``, fixed under
  ``normalx-clt``), to measure what the switch at that size changes.
* ``units``: the ``correlated`` suite's data with each true coefficient divided by its feature's sd,
  ``theta_k = 0.5 / sqrt(d) t_3 / sqrt(Sigma_x,kk)`` (every other suite draws ``theta`` whatever the
  features' scales; here each contribution ``theta_k x_k`` is on one scale, as units would make it):
  four of the correlated suite's cells with bounds at the data's maxima. Fit with ``--theta-scale
  release`` and ``features`` to see which prior of ``theta`` such truths favour.
* ``real``: rows of power plant, bike sharing and air quality (``../shared/data``, the paper's
  preprocessing; air quality's mostly missing NMHC sensor dropped, then its rows with a missing reading,
  :data:`DATA_CLEANING`: 11 nearly collinear sensor features, heavy-tailed), ``J = 5`` consecutive
  blocks or a random split, eps = 1;
  ``sigma_y^2 ~ IG(3, 0.02)`` and ``theta ~ N(0, tau^2 I)``: ``matched`` (tau = 0.2, fitted with
  ``Prior(C=0.04, a=3, b=0.02)``) and ``default`` with tau in {0.04, 0.2, 1} (fitted with
  the default prior).

Outputs under ``--out``: ``{suite}_replications.csv`` (appended as replications finish; a
rerun skips what is there), ``coverage_{suite}.csv`` (per cell and method, with
Monte-Carlo standard errors over replications) and ``coverage_{suite}.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np

from lab.machine import describe
from lab.paths import DATA_DIR, REPO
from lab.rows import append_rows, read_rows, write_rows
from lab.tasks import pending, run_tasks

METHODS = (
    "normalx-nuts",
    "normalx-clt",
    "normalx",
    "fixeds",
    "fast",
    "bs",
    "adassp",
    "oracle",
    "oracle-clt",
    "matched",
    "matched-clt",
)
# the method an oracle row fits, with the generating Sigma_x prior (oracle_prior) or every generating prior
# (matched_prior)
ORACLE_OF = {
    "oracle": "normalx-nuts",
    "oracle-clt": "normalx-clt",
    "matched": "normalx-nuts",
    "matched-clt": "normalx-clt",
}
MATCHED = ("matched", "matched-clt")
SIGMA_Y_DOF = 200.0  # the paper suite's sigma_y = 1 is a point mass: matched_prior's IG(dof, dof - 1) has sd 0.07
LEVELS = (0.5, 0.9, 0.95)
SUITES = ("paper", "small", "real", "correlated", "many", "tiny", "boundary", "units")
CORRELATED = ("correlated", "many", "tiny", "boundary", "units")  # the suites whose data _correlated draws
RELEASE_OF = {"bs": "bs", "adassp": "adassp"}  # others use the plain SSP release
DATA_FILES = {
    "power_plant": "power_plant_energy.csv",
    "bike_sharing": "bike_sharing.csv",
    "air_quality": "air_quality.csv",
}
# air quality as an analyst would release it: NMHC (missing in 90% of rows) dropped, then every row with a missing
# reading (coded -200): 6,941 rows (5,552 for training), 11 sensor features, correlation eigenvalues 0.010-6.9
DATA_CLEANING: dict[str, dict[str, Any]] = {
    "air_quality": dict(drop_columns=(2,), na_values=(-200.0,), drop_na_rows=True),
}


def _correlated_cell(
    prefix: str, suite: str, d: int, J: int, nj: int, eps: float, fam: str, bounds: str = "max", truth: str = "free"
) -> dict[str, Any]:
    """A cell of the data :func:`_correlated` draws (``J`` parties of ``nj`` rows), fitted with the default prior;
    ``truth``: the coefficients' scale (:func:`_correlated`)."""
    return dict(
        id=f"{prefix}-{fam}-d{d}-J{J}-n{nj}-eps{eps:g}-{bounds}",
        suite=suite,
        d=d,
        J=J,
        n=J * nj,
        eps=eps,
        family=fam,
        bounds=bounds,
        prior="default",
        truth=truth,
    )


def cells(suite: str) -> list[dict[str, Any]]:
    if suite == "paper":
        return [
            dict(id=f"paper-d{d}-J{J}-eps{eps:g}", suite=suite, d=d, J=J, eps=eps, n=100_000, prior="default")
            for d in (2, 5)
            for J in (1, 5, 10)
            for eps in (0.5, 1.0, 5.0)
        ]
    if suite == "small":
        return [
            dict(id=f"small-n{nj}-eps{eps:g}", suite=suite, d=3, J=3, eps=eps, n=3 * nj, prior="matched")
            for nj in (100, 300, 1000)
            for eps in (0.3, 1.0, 3.0)
        ]
    if suite == "correlated":
        out = []
        for i, (J, nj, eps, fam) in enumerate(
            (J, nj, eps, fam) for J in (3, 10) for nj in (300, 3000) for eps in (0.5, 2.0) for fam in ("iw", "lkj")
        ):
            odd = (J == 10) ^ (nj == 3000) ^ (eps == 2.0) ^ (fam == "lkj")
            bounds = "quantile" if odd else "max"
            d = (3, 5, 10)[i % 3]
            out.append(_correlated_cell("corr", suite, d, J, nj, eps, fam, bounds))
        return out
    if suite == "boundary":  # parties of clt_min_rows(d) rows, the smallest where fit takes normalx-clt
        from bayes_dpreg.samplers.sizes import clt_min_rows

        return [
            _correlated_cell("boundary", suite, d, 3, clt_min_rows(d), 1.0, fam)
            for d, fam in ((2, "lkj"), (3, "iw"), (5, "lkj"))
        ]
    if suite == "units":  # correlated cells with each coefficient in its feature's units, ~ 1 / sd(x_k)
        return [
            _correlated_cell("units", suite, d, J, nj, eps, fam, truth="units")
            for d, J, nj, eps, fam in (
                (3, 3, 300, 0.5, "iw"),
                (3, 3, 300, 2.0, "lkj"),
                (5, 10, 300, 2.0, "iw"),
                (3, 10, 3000, 0.5, "iw"),
            )
        ]
    if suite == "tiny":  # parties below clt_min_rows(d), where fit takes normalx-nuts: the correlated suite's data
        return [
            _correlated_cell("tiny", suite, d, J, nj, eps, fam)
            for d, J, nj, eps, fam in (
                (2, 3, 50, 1.0, "lkj"),
                (3, 3, 40, 0.5, "iw"),
                (3, 5, 80, 2.0, "iw"),
                (5, 3, 120, 1.0, "lkj"),
            )
        ]
    if suite == "many":  # issue 32's sizes: the correlated suite's data, d = 20, many parties (a fraction)
        return [
            _correlated_cell("many", suite, 20, J, nj, eps, fam)
            for J, nj, eps, fam in (
                (20, 1000, 0.5, "iw"),
                (50, 1000, 2.0, "lkj"),
                (20, 3000, 2.0, "lkj"),
                (50, 3000, 0.5, "iw"),
            )
        ]
    if suite == "real":
        out = []
        for name in DATA_FILES:
            for split in ("blocks", "random"):
                for prior, tau in (("matched", 0.2), ("default", 0.04), ("default", 0.2), ("default", 1.0)):
                    out.append(
                        dict(
                            id=f"real-{name}-{split}-{prior}-tau{tau:g}",
                            suite=suite,
                            data=name,
                            split=split,
                            J=5,
                            eps=1.0,
                            tau=tau,
                            prior=prior,
                        )
                    )
        return out
    raise ValueError(f"unknown suite {suite!r}")


SMALL_PRIOR: dict[str, Any] = dict(m=0.0, C=0.25, a=3.0, b=0.5, Lambda=2.0, kappa=6.0)
REAL_MATCHED_PRIOR: dict[str, Any] = dict(C=0.04, a=3.0, b=0.02)


@functools.cache
def _real_data(name: str, data_dir: str) -> np.ndarray:
    import bayes_dpreg as bd

    return bd.load_dataset(Path(data_dir) / DATA_FILES[name], name=name, **DATA_CLEANING.get(name, {})).X_train


def streams(cell: dict[str, Any], rep: int, seed: int) -> list[np.random.SeedSequence]:
    """The seed streams of replication ``rep`` of ``cell``: data, release noise, random split."""
    return np.random.SeedSequence(seed, spawn_key=(sum(map(ord, cell["id"])), len(cell["id"]), rep)).spawn(3)


def fit_priors(
    cell: dict[str, Any],
    reps: list[int],
    seed: int,
    data_dir: str,
    priors: Any,
    methods: tuple[str, ...],
    label: str,
    extra: Callable[[Any], dict[str, Any]] | None = None,
    keep_errors: bool = False,
    method_of: Callable[[str], tuple[str, ...]] | None = None,
    release_of: Callable[[str], str] | None = None,
) -> list[dict[str, Any]]:
    """Fit ``methods`` under each prior of ``priors(stats, rep) -> {name: Prior}`` on the same
    releases of replications ``reps`` of ``cell`` (``method_of(name)`` instead of ``methods``
    where given: a method for each prior); one :func:`_metrics` row per fit, with
    ``row[label]`` the prior's name (for the prior studies) and the columns ``extra(idata)``
    where given. With ``keep_errors`` a fit that raises ``FloatingPointError`` or ``ValueError``
    gives a row with its ``error`` (as :func:`run_chunk`'s) instead of ending the task. ``release_of(name)``:
    the release a prior's fits take, ``"ssp"`` (default) or ``"bs"`` (``y^T y`` released too); the ``bs``
    releases are drawn after the ``ssp`` ones from the replication's noise stream, so that the ``ssp``
    releases stay those of every other study."""
    import bayes_dpreg as bd

    rows = []
    for rep in reps:
        (X, y, s_noise), theta, _ = replicate(cell, rep, seed, data_dir)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bounds = cell.get("bounds", "max")
            released = {"ssp": _releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"}, bounds)["ssp"]}
            stats = released["ssp"]
            for name, prior in priors(stats, rep).items():
                kind = "ssp" if release_of is None else release_of(name)
                if kind not in released:
                    released[kind] = _releases(X, y, cell["J"], cell["eps"], s_noise, {kind}, bounds)[kind]
                for m in methods if method_of is None else method_of(name):
                    t0 = time.perf_counter()
                    try:
                        idata = bd.fit(released[kind], m, prior, seed=rep)
                    except (FloatingPointError, ValueError) as exc:
                        if not keep_errors:
                            raise
                        rows.append(_error_row(cell, rep, m, exc) | {label: name})
                        continue
                    row = dict(_metrics(cell, rep, m, idata, theta, time.perf_counter() - t0), **{label: name})
                    rows.append(row | (extra(idata) if extra else {}))
    return rows


def replicate(cell: dict[str, Any], rep: int, seed: int, data_dir: str) -> tuple[Any, np.ndarray, Any]:
    """Data, truth and the prior given to the fit for replication ``rep`` of ``cell``."""
    from scipy.stats import invwishart

    import bayes_dpreg as bd
    from bayes_dpreg.datasets import paper_scale_matrix

    s_data, s_noise, s_split = streams(cell, rep, seed)
    rng = np.random.default_rng(s_data)
    if cell["suite"] == "paper":
        # the data stream continues after Lambda (numpy takes a Generator as a seed; the annotation omits it)
        Lam = paper_scale_matrix(cell["d"], cast(Any, rng))
        sim = bd.simulate(cell["n"], cell["d"], int(rng.integers(2**32)), Lambda=Lam)
        X, y, theta = sim.X, sim.y, sim.theta
    elif cell["suite"] in CORRELATED:
        X, y, theta = _correlated(cell, rng)
    elif cell["suite"] == "small":
        d, n = cell["d"], cell["n"]
        p = SMALL_PRIOR
        theta = np.sqrt(p["C"]) * rng.standard_normal(d)
        s2 = p["b"] / rng.gamma(p["a"])
        Sx = np.atleast_2d(invwishart.rvs(df=p["kappa"], scale=p["Lambda"] * np.eye(d), random_state=rng))
        X = rng.standard_normal((n, d)) @ np.linalg.cholesky(Sx).T
        y = X @ theta + np.sqrt(s2) * rng.standard_normal(n)
    else:
        X = _real_data(cell["data"], data_dir)
        n, d = X.shape
        theta = cell["tau"] * rng.standard_normal(d)
        s2 = 0.02 / rng.gamma(3.0)
        y = X @ theta + np.sqrt(s2) * rng.standard_normal(n)
        if cell["split"] == "random":
            perm = np.random.default_rng(s_split).permutation(n)
            X, y = X[perm], y[perm]
    return (X, y, s_noise), theta, cell_prior(cell)


def cell_prior(cell: dict[str, Any]) -> Any:
    """The prior ``cell``'s fits are given: the small suite's generating prior, the real suite's
    matched cells' ``theta`` and ``sigma_y^2`` priors, else the default."""
    import bayes_dpreg as bd

    if cell["suite"] == "small":
        return bd.Prior(**SMALL_PRIOR)
    if cell["suite"] == "real" and cell["prior"] == "matched":
        return bd.Prior(**REAL_MATCHED_PRIOR)
    return bd.Prior()


def own_prior(cell: dict[str, Any]) -> bool:
    """Whether ``cell``'s fits are given a prior of its own (:func:`cell_prior`: the small suite's generating
    prior, the real suite's matched cells'), not the default, so that a change of the default leaves them."""
    return cell.get("prior", "default") != "default"


def generating_sigma_x(cell: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """The feature covariance of one replication of a ``correlated`` cell (drawn first from ``rng``)."""
    from scipy.stats import invwishart

    d = cell["d"]
    if cell["family"] == "iw":
        return np.atleast_2d(invwishart.rvs(df=d + 1, scale=np.eye(d), random_state=rng))
    # LKJ(1) by the onion method (Lewandowski, Kurowicka & Joe 2009, sec. 3.2), in Cholesky rows
    L = np.zeros((d, d))
    L[0, 0] = 1.0
    beta = d / 2.0  # eta + (d - 2) / 2 with eta = 1
    if d > 1:
        r = 2.0 * rng.beta(beta, beta) - 1.0
        L[1, :2] = r, np.sqrt(1.0 - r * r)
    for k in range(2, d):
        beta -= 0.5
        yk = rng.beta(k / 2.0, beta)
        w = rng.standard_normal(k)
        L[k, :k] = np.sqrt(yk) * w / np.linalg.norm(w)
        L[k, k] = np.sqrt(1.0 - yk)
    scales = np.exp(rng.standard_normal(d))
    return (scales[:, None] * (L @ L.T)) * scales[None, :]


def _correlated(cell: dict[str, Any], rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d, n = cell["d"], cell["n"]
    Sx = generating_sigma_x(cell, rng)
    theta = 0.5 / np.sqrt(d) * rng.standard_t(3, size=d)
    if cell.get("truth") == "units":  # each contribution theta_k x_k on one scale, as units would make it
        theta = theta / np.sqrt(np.diag(Sx))
    X = rng.standard_normal((n, d)) @ np.linalg.cholesky(Sx).T
    signal = X @ theta
    y = signal + rng.uniform(0.2, 1.0) * signal.std() * rng.standard_normal(n)
    return X, y, theta


def _releases(
    X: np.ndarray, y: np.ndarray, J: int, eps: float, s_noise: Any, kinds: set[str], bounds: str = "max"
) -> dict[str, list]:
    import bayes_dpreg as bd
    from bayes_dpreg.privacy.mechanisms import release_bs

    parts = bd.split_parties(X, y, J)
    qs: list[float | None] = [None] * J
    if bounds == "quantile":  # each party's own private bounds (OpenDP; not reproducible by a seed)
        pb = [bd.propose_bounds(Xj, yj, epsilon=2.0) for Xj, yj in parts]
        xbs, ybs, qs = [b.x_bound for b in pb], [b.y_bound for b in pb], [b.quantile for b in pb]
    else:
        xbs = [float(np.linalg.norm(X, axis=1).max()) * (1 + 1e-12)] * J
        ybs = [float(np.abs(y).max()) * (1 + 1e-12)] * J
    fns: dict[str, Callable[..., Any]] = {"ssp": bd.release, "adassp": bd.release_adassp, "bs": release_bs}
    out = {}
    for kind, sk in zip(sorted(kinds), s_noise.spawn(len(kinds))):
        out[kind] = [
            fns[kind](
                Xj,
                yj,
                epsilon=eps,
                delta=1e-5,
                x_bound=xb,
                y_bound=yb,
                seed=sj,
                **({"bound_quantile": q} if q is not None and kind == "ssp" else {}),
            )
            for (Xj, yj), xb, yb, q, sj in zip(parts, xbs, ybs, qs, sk.spawn(J))
        ]
    return out


def oracle_prior(cell: dict[str, Any], rep: int, seed: int) -> Any:
    """The default prior with the generating ``Sigma_x`` prior (``None`` where the sampler cannot take
    it): the paper's ``IW(V^T V, d + 1)``, the ``iw`` cells' ``IW(I, d + 1)``, the ``lkj`` cells'
    LKJ(1) correlation with scales ``exp(N(0, 1))`` (``Prior(Sigma_x_prior="lkj", Lambda=1, eta=1,
    scale_sd=1)``)."""
    import bayes_dpreg as bd
    from bayes_dpreg.datasets import paper_scale_matrix

    if cell["suite"] == "paper":
        s_data, _, _ = streams(cell, rep, seed)
        return bd.Prior(
            Lambda=paper_scale_matrix(cell["d"], s_data),
            kappa=cell["d"] + 1.0,
            Sigma_x_prior="iw",
        )
    if cell["suite"] in CORRELATED and cell["family"] == "iw":
        return bd.Prior(Lambda=np.eye(cell["d"]), kappa=cell["d"] + 1.0, Sigma_x_prior="iw")
    if cell["suite"] in CORRELATED:
        return bd.Prior(Lambda=1.0, Sigma_x_prior="lkj", eta=1.0, scale_sd=1.0)
    return None


def matched_prior(cell: dict[str, Any], rep: int, seed: int) -> Any:
    """Every generating prior of a paper cell (``None`` elsewhere): :func:`oracle_prior`'s ``Sigma_x``,
    ``theta ~ N(0, I)`` and, for the simulation's ``sigma_y^2 = 1`` (a point mass no sampler takes),
    ``IG(SIGMA_Y_DOF, SIGMA_Y_DOF - 1)``: mean 1, sd 0.07."""
    if cell["suite"] != "paper":
        return None
    d = cell["d"]
    return dataclasses.replace(
        oracle_prior(cell, rep, seed), m=np.zeros(d), C=np.eye(d), a=SIGMA_Y_DOF, b=SIGMA_Y_DOF - 1.0
    )


def _prior_for(method: str, cell: dict[str, Any], rep: int, seed: int, prior: Any) -> Any:
    """The prior ``method`` fits replication ``rep`` of ``cell`` with: ``prior`` (the cell's), or an
    oracle's (:func:`oracle_prior`, :func:`matched_prior`; ``None`` where the cell has none)."""
    if method not in ORACLE_OF:
        return prior
    return (matched_prior if method in MATCHED else oracle_prior)(cell, rep, seed)


def study_prior(
    method: str,
    cell: dict[str, Any],
    rep: int,
    seed: int,
    prior: Any,
    sigma2_max: float | str = math.inf,
    theta_scale: str = "auto",
) -> Any:
    """The prior :func:`run_chunk` fits ``method`` with on replication ``rep``: :func:`_prior_for`'s, with
    ``sigma2_max`` and ``theta_scale`` (``None`` where the cell has none for ``method``)."""
    fit_prior = _prior_for(method, cell, rep, seed, prior)
    if fit_prior is None:
        return None
    return dataclasses.replace(fit_prior, sigma2_max=sigma2_max, theta_scale=theta_scale)


def run_chunk(
    cell: dict[str, Any],
    reps: list[int],
    methods: tuple[str, ...],
    seed: int,
    data_dir: str,
    sigma2_max: float | str = math.inf,
    theta_scale: str = "auto",
) -> list[dict[str, Any]]:
    """Fit every method on replications ``reps`` of ``cell`` (in a worker process), the priors with
    ``sigma2_max`` (``Prior.sigma2_max``; ``--sigma2-max``) and ``theta_scale`` (``Prior.theta_scale``;
    ``--theta-scale``)."""
    import bayes_dpreg as bd
    from bayes_dpreg.privacy.gaussian import ClippingWarning

    rows = []
    for rep in reps:
        (X, y, s_noise), theta, prior = replicate(cell, rep, seed, data_dir)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClippingWarning)
            rel = _releases(
                X,
                y,
                cell["J"],
                cell["eps"],
                s_noise,
                {RELEASE_OF.get(m, "ssp") for m in methods},
                cell.get("bounds", "max"),
            )
        for m in methods:
            fit_prior = study_prior(m, cell, rep, seed, prior, sigma2_max, theta_scale)
            if fit_prior is None:
                continue
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    idata = bd.fit(rel[RELEASE_OF.get(m, "ssp")], ORACLE_OF.get(m, m), fit_prior, seed=rep)
                except (FloatingPointError, ValueError) as exc:
                    rows.append(_error_row(cell, rep, m, exc))
                    continue
            row = _metrics(cell, rep, m, idata, theta, time.perf_counter() - t0)
            row["warned_unresolved"] = int(any(issubclass(w.category, bd.UnresolvedDirectionWarning) for w in caught))
            rows.append(row)
    return rows


def _error_row(cell: dict[str, Any], rep: int, method: str, exc: Exception) -> dict[str, Any]:
    """The row of a fit that raised ``exc`` (its message, cut at 200 characters)."""
    return dict(cell=cell["id"], rep=rep, method=method, error=str(exc)[:200])


def _metrics(cell: dict[str, Any], rep: int, method: str, idata: Any, theta: np.ndarray, seconds: float) -> dict:
    post = idata.posterior
    th = post["theta"].values.reshape(-1, theta.size)
    at = post.attrs
    row: dict[str, Any] = dict(
        cell=cell["id"],
        rep=rep,
        method=method,
        d=theta.size,
        sq_error=float(((th.mean(0) - theta) ** 2).mean()),
        truth_ms=float((theta**2).mean()),
        seconds=seconds,
        prior_sd=float(np.sqrt(np.mean(np.square(at["prior_theta_sd"])))),
    )
    if th.shape[0] > 1:
        for level in LEVELS:
            lo, hi = np.quantile(th, [(1 - level) / 2, (1 + level) / 2], axis=0)
            row[f"cover{int(level * 100)}"] = float(((lo <= theta) & (theta <= hi)).mean())
            row[f"width{int(level * 100)}"] = float((hi - lo).mean())
    if "max_rhat" in at:
        row.update(
            max_rhat=float(at["max_rhat"]),
            min_ess_bulk=float(at["min_ess_bulk"]),
            min_ess_tail=float(at["min_ess_tail"]),
            converged=int(at["converged"]),
            divergences=int(at.get("divergences", 0)),
        )
    if "noise_to_signal" in at:
        row["noise_to_signal"] = float(max(at["noise_to_signal"]))
    if "prior_sensitivity_sigma2" in at:  # NoiseVariancePriorWarning's rule, from the recorded attrs
        from bayes_dpreg.posterior.diagnostics import sigma2_sensitive

        row["prior_sensitivity_sigma2"] = float(at["prior_sensitivity_sigma2"])
        row["sigma2_prior_contraction"] = float(at.get("sigma2_prior_contraction", math.nan))
        row["warned_sigma2"] = int(sigma2_sensitive(at))
    return row


FIELDS = [
    "cell",
    "rep",
    "method",
    "d",
    "cover50",
    "cover90",
    "cover95",
    "width50",
    "width90",
    "width95",
    "sq_error",
    "truth_ms",
    "prior_sd",
    "max_rhat",
    "min_ess_bulk",
    "min_ess_tail",
    "converged",
    "divergences",
    "noise_to_signal",
    "seconds",
    "error",
    "warned_unresolved",
    "prior_sensitivity_sigma2",
    "sigma2_prior_contraction",
    "warned_sigma2",
]


def _num(r: dict, k: str) -> float:
    v = r.get(k, "")
    return float(v) if v not in ("", None) else math.nan


def summarise(rows: list[dict[str, Any]], cell_order: list[str], methods: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per cell and method: means over replications with Monte-Carlo standard errors (the sd of the
    per-replication values over sqrt(R): coefficients of one replication are not independent)."""
    out = []
    for cid in cell_order:
        for m in methods:
            rs = [r for r in rows if r["cell"] == cid and r["method"] == m]
            if not rs:
                continue
            ok = [r for r in rs if not r.get("error")]
            s: dict[str, Any] = dict(cell=cid, method=m, reps=len(rs), errors=len(rs) - len(ok))
            for k in ("cover50", "cover90", "cover95"):
                v = np.array([_num(r, k) for r in ok])
                v = v[np.isfinite(v)]
                s[k] = float(v.mean()) if v.size else math.nan
                s[k + "_se"] = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else math.nan
            for k in ("width50", "width90"):
                v = np.array([_num(r, k) for r in ok])
                s[k] = float(np.nanmean(v)) if np.isfinite(v).any() else math.nan
            se = np.array([_num(r, "sq_error") for r in ok])
            s["rmse"] = float(np.sqrt(se.mean())) if se.size else math.nan
            s["rmse_se"] = float(se.std(ddof=1) / np.sqrt(se.size) / (2 * s["rmse"])) if se.size > 1 else math.nan
            s["rmse_prior_mean"] = float(np.sqrt(np.mean([_num(r, "truth_ms") for r in ok]))) if ok else math.nan
            s["truth_over_prior_sd"] = (
                float(np.mean([np.sqrt(_num(r, "truth_ms")) / _num(r, "prior_sd") for r in ok])) if ok else math.nan
            )
            rh = np.array([_num(r, "max_rhat") for r in ok])
            if np.isfinite(rh).any():
                s["rhat_gt_1.01"] = float((rh > 1.01).mean())
                s["ess_lt_400"] = float((np.array([_num(r, "min_ess_bulk") for r in ok]) < 400).mean())
                s["divergent_fits"] = float((np.array([_num(r, "divergences") for r in ok]) > 0).mean())
            s["seconds_median"] = float(np.median([_num(r, "seconds") for r in ok])) if ok else math.nan
            out.append(s)
    return out


def markdown(summary: list[dict[str, Any]]) -> str:
    head = (
        "| cell | method | reps | 50% | 90% | 95% | width 90% | RMSE | RMSE of 0 | R-hat > 1.01 | ESS < 400 | s / fit |"
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    f = lambda v, nd=3: "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{nd}f}"
    for s in summary:
        cov = lambda k, s=s: "" if math.isnan(s[k]) else f"{s[k]:.3f} ± {s[k + '_se']:.3f}"
        lines.append(
            f"| {s['cell']} | {s['method']} | {s['reps']} | {cov('cover50')} | {cov('cover90')} | "
            f"{cov('cover95')} | {f(s['width90'])} | {f(s['rmse'], 4)} ± {f(s['rmse_se'], 4)} | "
            f"{f(s['rmse_prior_mean'], 4)} | {f(s.get('rhat_gt_1.01', math.nan), 3)} | "
            f"{f(s.get('ess_lt_400', math.nan), 3)} | {f(s['seconds_median'], 1)} |"
        )
    return "\n".join(lines) + "\n"


def write_summary(
    out: Path, suite: str, rows: list[dict], cell_order: list[str], methods: tuple[str, ...], header: str
) -> None:
    summary = summarise(rows, cell_order, methods)
    if not summary:
        return
    write_rows(out / f"coverage_{suite}.csv", summary)
    (out / f"coverage_{suite}.md").write_text(header + "\n" + markdown(summary))


def main(argv: list[str] | None = None) -> int:
    from bayes_dpreg.model.prior import THETA_SCALES

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", required=True, choices=list(SUITES))
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 1)))
    ap.add_argument("--chunk", type=int, default=10, help="replications per task")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--cells", nargs="+", default=None, help="cell ids (default: all of the suite)")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(REPO / "docs" / "results" / "coverage"))
    ap.add_argument(
        "--sigma2-max", default="inf", help="the priors' bound on sigma_y^2: inf (the default prior's), auto, a number"
    )
    ap.add_argument(
        "--theta-scale",
        default="auto",
        choices=THETA_SCALES,
        help="the priors' theta_scale (Prior.theta_scale): auto (the default prior's), theta's prior at the "
        "release's feature scales, or scaled by the sampled Sigma_x (normalx-nuts, normalx-clt)",
    )
    args = ap.parse_args(argv)
    sigma2_max = args.sigma2_max if args.sigma2_max == "auto" else float(args.sigma2_max)
    from bayes_dpreg import Prior, configure_threads

    configure_threads()  # one XLA CPU thread, inherited by the workers (bayes_dpreg.runtime.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    methods = tuple(args.methods)
    all_cells = cells(args.suite)
    todo_cells = [c for c in all_cells if args.cells is None or c["id"] in args.cells]
    path = out / f"{args.suite}_replications.csv"
    done = {(r["cell"], int(r["rep"]), r["method"]) for r in read_rows(path)}
    fitted = {c["id"]: [m for m in methods if _prior_for(m, c, 0, args.seed, Prior()) is not None] for c in todo_cells}
    tasks = pending(todo_cells, args.reps, args.chunk, lambda c, r: [(c["id"], r, m) for m in fitted[c["id"]]], done)
    command = "python -m studies.coverage " + " ".join(sys.argv[1:] if argv is None else argv)
    header = (
        f"# Coverage, suite `{args.suite}`\n\ncommand: `{command}`\n\nmachine: {describe('jax')}\n\n"
        f"Coverage: mean over replications of the fraction of coefficients inside the central interval, "
        f"± Monte-Carlo standard error. RMSE: root mean squared error of the posterior mean per coefficient "
        f"(RMSE of 0: the prior mean's). R-hat/ESS: fraction of fits over the thresholds.\n"
    )
    print(f"{len(tasks)} tasks ({sum(len(t[1]) for t in tasks)} replications) over {args.workers} workers", flush=True)
    order = [c["id"] for c in all_cells]

    def written(c: dict[str, Any], reps: list[int], rows: list[dict[str, Any]], seconds: float) -> None:
        append_rows(path, [r for r in rows if (r["cell"], r["rep"], r["method"]) not in done], FIELDS)
        print(f"{c['id']} reps {reps[0]}-{reps[-1]} done ({seconds:.0f} s)", flush=True)
        write_summary(out, args.suite, read_rows(path), order, methods, header)

    run_tasks(
        run_chunk, tasks, (methods, args.seed, args.data_dir, sigma2_max, args.theta_scale), args.workers, written
    )
    write_summary(out, args.suite, read_rows(path), order, methods, header)
    print((out / f"coverage_{args.suite}.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
