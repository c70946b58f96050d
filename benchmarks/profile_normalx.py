"""Where one MCMC-normalX iteration spends its time: each part of ``samplers.normalx.normalx_step`` timed
alone, vectorised over chains as the chain driver runs it, on the paper's simulation (the data of
``benchmarks/speed.py``), with the compiled step's XLA cost analysis and its LAPACK calls.

    python -m benchmarks.profile_normalx                 # d = 5, J = 5, 4 chains
    python -m benchmarks.profile_normalx --d 2 --J 5 --chains 64 --out docs/results/speed

Each row is one function called ``--iterations`` times inside one compiled ``fori_loop``
(``vmap`` over chains), best of three, in microseconds per chain and call; the parts overlap
(``_level_moves`` contains ``_group_move``, ``_eigen_moves`` and ``_noncentred_move``; every
move evaluates ``_level_rest``, whose cost is dominated by ``party_terms``), so the rows do not
add up to the full step. ``calls / step`` says how often a step evaluates each.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from pathlib import Path

from lab.machine import describe


def _bench(fn, state, iterations: int, chains: int) -> float:
    import jax
    import jax.numpy as jnp

    def loop(s):
        def body(i, acc):
            keys = jax.vmap(lambda k: jax.random.fold_in(k, i))(s.rng_key)
            out = jax.vmap(fn)(s, keys)
            return acc + sum(jnp.sum(x) for x in jax.tree.leaves(out) if jnp.issubdtype(x.dtype, jnp.floating))

        return jax.lax.fori_loop(0, iterations, body, 0.0)

    f = jax.jit(loop)
    jax.block_until_ready(f(state))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        jax.block_until_ready(f(state))
        best = min(best, time.perf_counter() - t)
    return best / iterations / chains * 1e6


def parts(data, pr, settings):
    """``(name, calls per step, fn(state, key))`` for each part of the step."""
    import jax
    import jax.numpy as jnp

    from bayes_dpreg.model.closed_form import party_terms
    from bayes_dpreg.samplers import normalx as K

    d = data.z_tilde.shape[-1]
    jitter = lambda k: 1.0 + 1e-12 * jax.random.uniform(k)  # keeps XLA from hoisting the call out of the loop

    def level(s):
        return K._Level(s.z["S"], s.z["Sigma_x"], K._level_rest(s.z["S"], s.z["Sigma_x"], s.z["sigma2"], data, pr))

    def am_chol(s):
        return jnp.linalg.cholesky(s.adapt.am_cov + 1e-10 * jnp.eye(s.adapt.am_cov.shape[-1]))

    lv = settings.level_moves
    return [
        ("normalx_step (full)", 1, lambda s, k: K.normalx_step(s._replace(rng_key=k), data, pr, settings).z),
        ("_sigma_x_draw (eq. 11)", 1, lambda s, k: K._sigma_x_draw(k, s.z["S"], data, pr)),
        (
            "_S_move_collapsed",
            1,
            lambda s, k: K._S_move_collapsed(k, s.z["S"], s.adapt.log_alpha, s.z["sigma2"], s.z["Sigma_x"], data, pr),
        ),
        (
            "  _wishart_proposal",
            1,
            lambda s, k: K._wishart_proposal(k, s.z["S"], s.adapt.log_alpha, s.z["Sigma_x"], data),
        ),
        (
            "_level_moves",
            int(lv),
            lambda s, k: K._level_moves(
                k, s.z["S"], s.z["Sigma_x"], s.z["sigma2"], s.adapt, s.iteration, data, pr, settings
            )[:2],
        ),
        (
            "  _group_move",
            int(lv),
            lambda s, k: K._group_move(k, level(s), s.z["sigma2"], s.adapt.log_group_step, data, pr),
        ),
        (
            "  _eigen_moves (d moves)",
            int(lv),
            lambda s, k: K._eigen_moves(k, level(s), s.z["sigma2"], s.adapt.basis, s.adapt.log_eigen_step, data, pr),
        ),
        (
            "  _noncentred_move",
            int(lv),
            lambda s, k: K._noncentred_move(k, level(s), s.z["sigma2"], am_chol(s), data, pr),
        ),
        (
            "_update_theta_sigma2",
            1,
            lambda s, k: K._update_theta_sigma2(
                k, s.z["S"], s.z["theta"], s.z["sigma2"], s.adapt.log_step, data, pr, settings
            ),
        ),
        (
            "_level_rest",
            (d + 3) * int(lv),
            lambda s, k: K._level_rest(s.z["S"], s.z["Sigma_x"], s.z["sigma2"] * jitter(k), data, pr),
        ),
        (
            "party_terms (J parties)",
            2 + (d + 3) * int(lv) + 3,
            lambda s, k: party_terms(s.z["S"], data.z_tilde, s.z["sigma2"] * jitter(k), data.sigma_z**2),
        ),
        ("jnp.linalg.cholesky (J matrices)", None, lambda s, k: jnp.linalg.cholesky(s.z["S"] * jitter(k))),
        ("jnp.linalg.eigh (d x d)", 2 * int(lv), lambda s, k: jnp.linalg.eigh(s.z["Sigma_x"] * jitter(k))),
    ]


def static_profile(data, pr, settings, state) -> tuple[dict, collections.Counter]:
    import jax

    from bayes_dpreg.samplers import normalx as K

    step = jax.jit(jax.vmap(lambda s: K.normalx_step(s, data, pr, settings)))
    comp = step.lower(state).compile()
    cost = comp.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    calls = collections.Counter(re.findall(r'custom_call_target="([^"]+)"', comp.as_text() or ""))
    return dict(cost or {}), calls


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--J", type=int, default=5)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--out", type=Path, default=None, help="also write profile_normalx_d{d}_J{J}_c{chains}.md here")
    args = ap.parse_args(argv)

    import jax

    import bayes_dpreg as bd

    bd.enable_x64()
    bd.configure_threads()
    from bayes_dpreg.samplers import normalx as K
    from benchmarks import speed

    sampler, st, pr = speed.prepared("normalx", speed.releases("normalx", args.d, args.J, 1))
    settings, _ = sampler.settings({}, args.d, 1000)
    data = sampler.data(st)
    keys = jax.random.split(jax.random.key(0), args.chains)
    state = jax.jit(jax.vmap(lambda k: K.normalx_init(k, data, pr, settings)))(keys)
    # the state after warm-up, so that the proposals have their adapted scales
    state = jax.jit(
        jax.vmap(lambda s: jax.lax.fori_loop(0, 1000, lambda i, x: K.normalx_step(x, data, pr, settings), s))
    )(state)

    t0 = time.perf_counter()
    rows = []
    for name, calls, fn in parts(data, pr, settings):
        us = _bench(fn, state, args.iterations, args.chains)
        rows.append((name, calls, us))
        print(f"{name:34s} {us:9.1f} us", file=sys.stderr, flush=True)
    cost, lapack = static_profile(data, pr, settings, state)
    lines = [
        f"# Profile of one MCMC-normalX iteration (d = {args.d}, J = {args.J}, {args.chains} chains)",
        "",
        f"command: `python -m benchmarks.profile_normalx --d {args.d} --J {args.J} --chains {args.chains}"
        f" --iterations {args.iterations}`",
        "",
        f"- machine: {describe()}; "
        f"jax {jax.__version__} ({jax.default_backend()}); XLA CPU threads NPROC={os.environ.get('NPROC', 'unset')}",
        f"- data: the paper's simulation as in `benchmarks/speed.py` (n = 1e5, eps = 1); level moves "
        f"{'on' if settings.level_moves else 'off'}; state after 1,000 iterations; wall time "
        f"{time.perf_counter() - t0:.0f} s",
        f"- compiled step (all chains): {cost.get('flops', 0):.3g} flops, "
        f"{cost.get('bytes accessed', 0):.3g} bytes accessed, {cost.get('transcendentals', 0):.3g} "
        "transcendentals (XLA cost analysis)",
        "- LAPACK/custom calls in the compiled step: "
        + (", ".join(f"{k} x {v}" for k, v in sorted(lapack.items())) or "none"),
        "",
        "| part | calls / step | us per chain and call |",
        "|---|---|---|",
    ]
    lines += [f"| {n} | {'' if c is None else c} | {us:.1f} |" for n, c, us in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"profile_normalx_d{args.d}_J{args.J}_c{args.chains}.md"
        path.write_text(text)
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
