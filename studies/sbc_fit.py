"""Simulation-based calibration of ``fit`` as a user calls it, under the default prior.

    python -m studies.sbc_fit --case clt-d2 --reps 400 --out docs/results/sbc/default_prior
    python -m studies.sbc_fit --case all --reps 200 --out docs/results/sbc/default_prior

The SBC tests of the samplers (``tests/test_normalx_clt.py``, ``tests/test_samplers.py``,
:mod:`studies.sbc`, :mod:`studies.sbc_rounds`) draw their truths from priors of their own
(``IG(3, 0.5)`` bounded at 0.4, ``IW(3 I, 6)``, ...), chosen so that every draw gives a well-posed data
set. The default prior is not among them: ``sigma_y^2 ~ IG(1, (y_bound/10)^2)`` has no mean and a
heavy right tail, ``theta``'s prior is scaled to the release, ``Sigma_x = D R D`` with
``log D_kk ~ N(log E[x_k^2] / 2, 1)`` and ``R ~ LKJ(1)`` (:meth:`~bayes_dpreg.Prior.autoscaled`). This
study draws the truths from exactly that prior, made concrete at a declared public scale (``y_bound``,
``E[x_k^2] = 1``; a prior that ``fit`` resolved from each release would depend on the data, and SBC needs
a fixed one), simulates the parties' statistics from the model (the exact Wishart ``S_j``, Prop. 3.1,
and the release noise of eq. 8 at the sd the analytic Gaussian mechanism gives for ``epsilon``,
``delta`` and the bounds), wraps them as :class:`~bayes_dpreg.NoisyStats` and calls
``bayes_dpreg.fit(stats, prior=<that prior>, seed=r)`` with every other setting at its default: the
method ``fit`` chooses by size (:func:`~bayes_dpreg.samplers.default_method`), 4 chains, the method's
warm-up and its rounds of draws. The rank of each true ``theta_k``, ``sigma_y^2`` and ``Sigma_x[0,1]``
among L = 99 draws (25 evenly spaced a chain, the last dropped) is tested for uniformity on 10 bins (chi-square,
:func:`~bayes_dpreg.posterior.sbc.uniformity_pvalue`). Each case is a size where ``fit`` picks a
different default: ``normalx-clt`` (parties of at least ``max(100, 30 d)`` rows), ``normalx-nuts``
(smaller parties), ``normalx-pooled`` (more than ``1 + ceil(200 / d)`` parties).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import bayes_dpreg as bd
from bayes_dpreg.model.prior import THETA_SCALES, Prior, PriorScales
from bayes_dpreg.posterior.sbc import simulate_from_prior, summaries, uniformity_pvalue
from bayes_dpreg.privacy.noisy_stats import NoisyStats
from bayes_dpreg.samplers import get as get_sampler
from studies.sbc_rounds import L, thinned_ranks

bd.enable_x64()  # the simulation calls the model's distributions directly


class Case(NamedTuple):
    """A size at which ``fit`` picks its default method, and the release's public parameters."""

    d: int
    J: int
    n: int
    method: str  # what fit's default is expected to be at this size (checked)
    epsilon: float = 1.0
    delta: float = 1e-5
    x_bound: float = 3.0
    y_bound: float = 3.0


RANKED = ("theta", "sigma2", "Sigma_x")  # every method ``fit`` picks has ``Sigma_x`` in ``latent_posterior``

CASES = {
    "clt-d2": Case(d=2, J=3, n=3000, method="normalx-clt"),
    "clt-d5": Case(d=5, J=5, n=1000, method="normalx-clt"),
    "clt-d2-n100": Case(d=2, J=3, n=100, method="normalx-clt"),  # the smallest parties fit takes it for
    "nuts-d2": Case(d=2, J=3, n=50, method="normalx-nuts"),
    "pooled-d5": Case(d=5, J=50, n=300, method="normalx-pooled"),
}


def default_prior(case: Case, theta_scale: str = "auto") -> Prior:
    """``Prior()`` made concrete at the case's public scale, as ``fit`` resolves ``"auto"`` for a release
    whose features have mean square 1 and whose response is bounded by ``y_bound``, and for the case's
    method (:meth:`~bayes_dpreg.Prior.for_sampler`); ``theta_scale``: ``Prior.theta_scale``, if not the
    method's default."""
    prior = Prior(theta_scale=theta_scale).for_sampler(get_sampler(case.method))
    return prior.autoscaled(PriorScales(y_bound=case.y_bound, feature_ms=np.ones(case.d)), case.d)


def simulate(
    case: Case, key: jax.Array, reps: int, theta_scale: str = "auto"
) -> tuple[dict[str, np.ndarray], list[list[NoisyStats]]]:
    """``reps`` truths from the default prior (``theta_scale``: :func:`default_prior`) and the parties'
    released statistics given each."""
    cal = bd.calibrate(case.epsilon, case.delta, case.x_bound, case.y_bound)
    pr = default_prior(case, theta_scale).resolve(case.d)
    n = jnp.full(case.J, float(case.n))
    sS, sz = jnp.full(case.J, cal.sigma_S), jnp.full(case.J, cal.sigma_z)
    draw = jax.jit(jax.vmap(lambda k: simulate_from_prior(k, pr, n, sS, sz)))
    params, data = draw(jax.random.split(key, reps))
    S, z = np.asarray(data.S_tilde), np.asarray(data.z_tilde)
    S = (S + np.swapaxes(S, -1, -2)) / 2.0  # symmetric to the last bit, as a release is

    def party(r: int, j: int) -> NoisyStats:
        return NoisyStats(
            S=S[r, j], z=z[r, j], n=case.n, d=case.d, sigma_S=cal.sigma_S, sigma_z=cal.sigma_z,
            epsilon=case.epsilon, delta=case.delta, x_bound=case.x_bound, y_bound=case.y_bound,
            calibration=cal.kind, neighbouring=cal.neighbouring, reproducible_seed=True,
        )  # fmt: skip

    truths = {k: np.asarray(params[k]) for k in RANKED}
    return truths, [[party(r, j) for j in range(case.J)] for r in range(reps)]


class Run(NamedTuple):
    ranks: dict[str, np.ndarray]
    methods: list[str]
    draws_per_chain: np.ndarray
    divergent_fits: int
    unconverged_fits: int
    seconds: float


def run(
    case: Case, reps: int, seed: int, fit_prior: Prior | None = None, theta_scale: str = "auto", **options: Any
) -> Run:
    """Ranks of the truths among ``fit``'s draws over ``reps`` simulated releases; ``fit_prior``: the prior
    ``fit`` is given, if not the one the truths are drawn from (to see that a wrong one shows);
    ``theta_scale``: the prior's (:func:`default_prior`); ``options``: method options passed to ``fit``
    (``target_accept_prob``: to compare a setting with the default's)."""
    k_sim = jax.random.fold_in(jax.random.key(seed), case.d * 1000 + case.J)
    truths, releases = simulate(case, k_sim, reps, theta_scale)
    prior = default_prior(case, theta_scale) if fit_prior is None else fit_prior
    ranks: dict[str, list[int]] = {}
    methods, per_chain, divergent, unconverged = [], [], 0, 0
    start = time.perf_counter()
    for r, stats in enumerate(releases):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fits' own warnings: the ranks are what is measured
            idata = bd.fit(stats, prior=prior, seed=r, **options)
        post, attrs = idata.posterior, idata.posterior.attrs
        draws = summaries({k: (idata.latent_posterior if k == "Sigma_x" else post)[k].values for k in RANKED})
        truth = summaries({k: v[r] for k, v in truths.items()})
        for name, rank in thinned_ranks(draws, truth).items():
            ranks.setdefault(name, []).append(rank)
        methods.append(attrs["method"])
        per_chain.append(post.sizes["draw"])
        divergent += int(attrs.get("divergences", 0) > 0)
        unconverged += int(not attrs.get("converged", 1))
    seconds = time.perf_counter() - start
    return Run(
        {k: np.array(v) for k, v in ranks.items()}, methods, np.array(per_chain), divergent, unconverged, seconds
    )


def report(
    name: str, case: Case, reps: int, seed: int, res: Run, target_accept: float | None = None, theta_scale: str = "auto"
) -> str:
    """Markdown: the case, the command, the p-values of uniformity."""
    cal = bd.calibrate(case.epsilon, case.delta, case.x_bound, case.y_bound)
    pr = default_prior(case, theta_scale).resolve(case.d)
    used = sorted(set(res.methods))
    ta = "" if target_accept is None else f" --target-accept {target_accept:g}"
    ta += "" if theta_scale == "auto" else f" --theta-scale {theta_scale}"
    rows = ["| quantity | p-value | rank quartiles (of 0-99) |", "|---|---|---|"]
    for q, r in res.ranks.items():
        quart = ", ".join(f"{v:.0f}" for v in np.percentile(r, [25, 50, 75]))
        rows.append(f"| {q} | {uniformity_pvalue(r, L):.3f} | {quart} |")
    draws = ", ".join(f"{k}: {(res.draws_per_chain == k).sum()}" for k in sorted(set(res.draws_per_chain.tolist())))
    return (
        f"# SBC of `fit` under the default prior: {name} ({', '.join(used)}; d = {case.d}, J = {case.J}, "
        f"n_j = {case.n})\n\n"
        f"command: `python -m studies.sbc_fit --case {name} --reps {reps} --seed {seed}{ta}`\n\n"
        f"{reps} releases simulated from the default prior at `y_bound = {case.y_bound}`, `E[x_k^2] = 1`: "
        f"`theta ~ N(0, {float(np.asarray(pr.C)[0, 0]):.4g} I)`"
        + ("" if pr.theta_ms is None else " at `Sigma_x,kk = 1`, `theta_k | Sigma_x` scaled by `Sigma_x,kk^(-1/2)`")
        + ", "
        f"`sigma_y^2 ~ IG({float(pr.a):g}, {float(pr.b):.4g})` (no bound), "
        f"`Sigma_x = D R D`, `log D_kk ~ N(0, 1)`, `R ~ LKJ(1)`; release noise sd {cal.sigma_S:.4g} on `S~_j` and "
        f"`z~_j` (eps = {case.epsilon:g}, delta = {case.delta:g}, bounds {case.x_bound:g} and {case.y_bound:g}). "
        f"`fit`'s choices: method {', '.join(used)}; draws a chain (by rounds) {draws}; fits with a divergence "
        f"{res.divergent_fits}, not converged by fit's rule {res.unconverged_fits}; {res.seconds:.0f} s "
        f"({res.seconds / reps:.2f} s a fit). Ranks among L = {L} draws; chi-square test of uniformity on 10 bins.\n\n"
        + "\n".join(rows)
        + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=[*CASES, "all"], default="clt-d2")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="also write sbc_fit_<case>.md here")
    ap.add_argument("--target-accept", type=float, default=None, help="fit target_accept_prob")
    ap.add_argument(
        "--theta-scale",
        choices=THETA_SCALES,
        default="auto",
        help="the prior's theta_scale (Prior.theta_scale), truths and fits alike: auto (the method's default)",
    )
    args = ap.parse_args(argv)
    for name in CASES if args.case == "all" else [args.case]:
        case = CASES[name]
        opts = {} if args.target_accept is None else {"target_accept_prob": args.target_accept}
        res = run(case, args.reps, args.seed, theta_scale=args.theta_scale, **opts)
        if set(res.methods) != {case.method}:
            raise RuntimeError(f"{name}: fit chose {sorted(set(res.methods))}, the case is for {case.method}")
        text = report(name, case, args.reps, args.seed, res, args.target_accept, args.theta_scale)
        print(text, flush=True)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            suffix = "" if args.theta_scale == "auto" else f"-{args.theta_scale}"
            (args.out / f"sbc_fit_{name}{suffix}.md").write_text(text)


if __name__ == "__main__":
    main()
