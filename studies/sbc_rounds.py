"""Simulation-based calibration of the default's stopping rule: the chains draw in rounds until they pass.

    python -m studies.sbc_rounds [--reps 200] [--d 2] [--out docs/results/sbc]

``normalx-clt`` draws 250 a chain after 250 warm-up iterations and goes on, 250 at a time and up to
three times, while ``theta``'s or ``sigma2``'s R-hat is above 1.01 or their bulk or tail ESS below 100 a
chain (``normalx_clt.NUM_SAMPLES``, ``EXTEND``; :func:`~bayes_dpreg.samplers.convergence.needs_more_draws`).
How many draws a fit keeps thus depends on the draws, and a rule that stops when the chains look
converged could, in principle, favour some posteriors over others. :mod:`bayes_dpreg.posterior.sbc` runs
a fixed number of draws (vmapped replications), so it does not test the rule; this does. For each of
``--reps`` data sets drawn from the prior (the exact Wishart model, Prop. 3.1, and the release's noise,
eq. 8; the setting of ``tests/_shared.py::clt_sbc_pvalues``: J = 2, n_j = 3000, noise sd 200 on ``S~`` and
``z~``, ``Prior(C=0.25, a=3, b=0.5, Lambda=2, eta=1, sigma2_max=0.4)``), the default's chain driver runs
exactly as ``fit`` runs it (4 chains on threads, ``base.run_chains`` with ``extend`` and
``needs_more_draws``); each chain's kept draws are thinned evenly to 25 and the first 99 of the 100 give the
rank of each true value (``theta``, ``sigma2``, ``Sigma_x[0, 1]``), tested for uniformity on 10 bins (chi-square,
:func:`~bayes_dpreg.posterior.sbc.uniformity_pvalue`). Also: how many rounds each fit ran, and the p-values
of the fits that stopped after one round and of those that went on, separately.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import bayes_dpreg as bd
from bayes_dpreg.model.prior import Prior
from bayes_dpreg.posterior.sbc import simulate_from_prior, summaries, uniformity_pvalue
from bayes_dpreg.samplers import normalx_clt as clt
from bayes_dpreg.samplers.base import run_chains
from bayes_dpreg.samplers.convergence import needs_more_draws

bd.enable_x64()  # this script calls the chain driver directly

L = 99  # draws a rank is taken among
PER_CHAIN = 25  # draws kept a chain, evenly spaced, before the last is dropped (4 x 25 - 1 = L)


def thinned_ranks(draws: dict[str, Any], truth: dict[str, Any]) -> dict[str, int]:
    """Rank of each true value among ``L`` draws: :data:`PER_CHAIN` evenly spaced in each chain's kept draws
    (``draws[name]``: ``(chain, draw)``), the chains in turn, the last dropped."""
    out = {}
    for name, a in draws.items():
        idx = np.linspace(0, a.shape[1] - 1, PER_CHAIN).round().astype(int)
        out[name] = int((np.concatenate([a[c, idx] for c in range(a.shape[0])])[:L] < truth[name]).sum())
    return out


def _ranks(draws: dict, truth: dict) -> dict[str, int]:
    """:func:`thinned_ranks` of ``theta``'s entries, ``sigma2`` and ``Sigma_x[0, 1]`` (:func:`summaries`)."""
    pick = lambda z: summaries({k: z[k] for k in ("theta", "sigma2", "Sigma_x")})
    return thinned_ranks(pick(draws), pick(truth))


def run(reps: int, d: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray, float]:
    """``(ranks by quantity, rounds a fit ran, seconds)`` over ``reps`` data sets."""
    pr = Prior(C=0.25, a=3.0, b=0.5, Lambda=2.0, eta=1.0, sigma2_max=0.4).resolve(d, None)
    n, noise = jnp.full(2, 3000.0), jnp.full(2, 200.0)
    k_sim, k_run = jax.random.split(jax.random.key(seed))
    simulate = jax.jit(jax.vmap(lambda k: simulate_from_prior(k, pr, n, noise, noise)))
    params, data = simulate(jax.random.split(k_sim, reps))
    settings, _ = clt.settings({}, d, clt.NUM_WARMUP)
    ranks: dict[str, list[int]] = {}
    rounds = []
    start = time.perf_counter()
    for r, key in enumerate(jax.random.split(k_run, reps)):
        data_r = jax.tree.map(lambda a, r=r: a[r], data)
        truth = {k: np.asarray(v[r]) for k, v in params.items()}
        draws, _ = run_chains(
            clt.KERNEL,
            data_r,
            pr,
            settings,
            key,
            num_chains=4,
            num_warmup=clt.NUM_WARMUP,
            num_samples=clt.NUM_SAMPLES,
            extend=clt.EXTEND,
            more=needs_more_draws,
        )
        rounds.append(draws["theta"].shape[1] // clt.NUM_SAMPLES)
        for name, rank in _ranks(draws, truth).items():
            ranks.setdefault(name, []).append(rank)
    return {k: np.array(v) for k, v in ranks.items()}, np.array(rounds), time.perf_counter() - start


def table(ranks: dict[str, np.ndarray], rounds: np.ndarray) -> str:
    """p-values of uniformity: all fits, those that stopped after one round, those that went on."""
    rows = ["| quantity | p-value, all fits | one round | more rounds |", "|---|---|---|---|"]
    one = rounds == 1
    p = lambda r: f"{uniformity_pvalue(r, L):.3f}" if r.size >= 20 else "(fewer than 20 fits)"
    for name, r in ranks.items():
        rows.append(f"| {name} | {p(r)} | {p(r[one])} | {p(r[~one])} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None, help="also write sbc_rounds_d{d}.md here")
    args = ap.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fits' own warnings: the ranks are what is measured
        ranks, rounds, seconds = run(args.reps, args.d, args.seed)
    counts = ", ".join(f"{k} round(s): {(rounds == k).sum()}" for k in range(1, clt.EXTEND + 2))
    text = (
        f"# SBC of the default's rounds (normalx-clt, d = {args.d}, J = 2, n_j = 3000)\n\n"
        f"command: `python -m studies.sbc_rounds --reps {args.reps} --d {args.d} --seed {args.seed}`\n\n"
        f"{args.reps} data sets from the prior, {seconds:.0f} s; rounds a fit ran: {counts}. Ranks among "
        f"L = {L} draws; chi-square test of uniformity on 10 bins.\n\n{table(ranks, rounds)}\n"
    )
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"sbc_rounds_d{args.d}.md").write_text(text)


if __name__ == "__main__":
    main()
