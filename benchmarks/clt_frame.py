"""``normalx-clt``'s Laplace frame and fits at one size, on the data of ``benchmarks/speed.py``.

    python -m benchmarks.clt_frame --d 20 --J 100 [--fits 1] [--target-accept 0.8] [--frame]

Prints, per fit of the same release (seeds 0, 1, ...): wall time (the first includes compiling),
max R-hat, min bulk ESS, divergent transitions and the mean leapfrog steps an iteration. With
``--frame``, first BFGS (``jax.scipy``, 500 iterations) on the posterior density in the sampler's
coordinates ``v`` and in the separation prior's ``(log D_kk, R)``
(:func:`bayes_dpreg.samplers.normalx_clt.separation_log_jacobian`): its status, iterations, the
smallest feature scale ``D_kk`` it ends at, and the largest coordinate (``docs/samplers.md``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from benchmarks.speed import prepared, releases


def frame(stats: list) -> None:
    import jax
    import jax.numpy as jnp
    from jax.scipy.optimize import minimize

    from bayes_dpreg.model.densities import model_data
    from bayes_dpreg.samplers import normalx_clt as clt

    jax.config.update("jax_enable_x64", True)  # as fit computes
    _, st, pr = prepared("normalx-clt", stats)
    data = model_data(st)
    ref = clt.reference(data, pr)
    for name, prior_coordinates in (("v", False), ("(log D, R)", True)):
        fn, x0 = clt.frame_objective(data, pr, ref, prior_coordinates)
        t = time.perf_counter()
        res = jax.jit(lambda s, fn=fn: minimize(fn, s, method="BFGS", options={"maxiter": 500}))(x0)
        L = clt.unpack(clt._ravel(st.d)(res.x), ref, data.n, pr)[0]
        scales = np.sqrt(np.diagonal(np.asarray(ref.Q @ (L @ L.T) @ ref.Q.T)))
        print(
            f"BFGS in {name}: {time.perf_counter() - t:.1f} s, status {int(res.status)}, {int(res.nit)} iterations, "
            f"smallest D_kk {scales.min():.3g}, largest |coordinate| {float(jnp.abs(res.x).max()):.3g}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--J", type=int, default=100)
    ap.add_argument("--fits", type=int, default=1)
    ap.add_argument("--target-accept", type=float, default=None, help="default: the sampler's")
    ap.add_argument("--frame", action="store_true", help="first compare BFGS in the two coordinates")
    args = ap.parse_args(argv)
    import bayes_dpreg as bd

    stats = releases("normalx-clt", args.d, args.J, 0)
    if args.frame:
        frame(stats)
    opts = {} if args.target_accept is None else {"target_accept_prob": args.target_accept}
    for seed in range(args.fits):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = bd.fit(stats, "normalx-clt", seed=seed, **opts)
        at, ss = idata.posterior.attrs, idata.sample_stats
        print(
            f"d={args.d} J={args.J} seed {seed}: {time.perf_counter() - t:.1f} s, "
            f"max R-hat {float(at['max_rhat']):.4f}, "
            f"min bulk ESS {int(at['min_ess_bulk'])}, divergences {at['divergences']}, "
            f"steps an iteration {float(ss['n_steps'].mean()):.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
