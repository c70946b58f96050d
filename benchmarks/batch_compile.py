"""What a batch of chains (``run_batched``: SBC, the paper's experiments) costs to trace and compile,
and a digest of its draws, so that two commits can be compared on both:

    python -m benchmarks.batch_compile                      # every MCMC sampler with a kernel
    python -m benchmarks.batch_compile --methods normalx-nuts fixeds

For each method: the SBC simulation of :func:`bayes_dpreg.posterior.sbc.sbc` at d = 2, J = 2
(``n_j = 30``, eps = 1 noise; ``n_j = 3000`` and the bounded separation prior for ``normalx-clt``,
as ``tests/test_normalx_clt.py`` had it when ``batch_compile.md`` was measured: LKJ(2) correlations,
kept, so that the digests stay comparable), 8 replications x 2 chains x (50 warm-up + 20 draws,
thin 2), one call of :func:`bayes_dpreg.samplers.run_batched` in a fresh process-wide state (no
persistent compilation cache), timed whole, with the seconds JAX reports tracing
(``jaxpr_trace_duration``) and compiling (``backend_compile_duration``), and the first 16 hex digits
of the SHA-256 of its draws and sample statistics (the same digits: the same numbers, to the bit).
Runs with the suite's XLA options (:data:`bayes_dpreg.runtime.cache.FIT_OPTIONS`) and one XLA thread.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
import warnings
from typing import Any

import numpy as np

METHODS = ("fixeds", "normalx", "normalx-nuts", "normalx-clt", "normalx-intercept")


def _prior(method: str) -> Any:
    from bayes_dpreg.model.prior import Prior

    if method == "normalx-clt":
        return Prior(C=0.25, a=3.0, b=0.5, Lambda=2.0, eta=2.0, sigma2_max=0.4).resolve(2, None)
    if method == "normalx-intercept":
        return Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=1.0, kappa=5.0, mu_x=0.5, mu_x_cov=1.0).resolve_intercept(1)
    if method == "normalx-nuts":
        return Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=1.0, Sigma_x_prior="lkj", eta=2.0, sigma2_max=2.0).resolve(2)
    return Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=3.0, kappa=6.0).resolve(2)


def measure(method: str) -> tuple[float, float, float, str]:
    """``(seconds in all, tracing, compiling, digest)`` of one ``run_batched`` call."""
    import jax
    import jax.numpy as jnp

    import bayes_dpreg as bd
    from bayes_dpreg.posterior import sbc as sbc_mod
    from bayes_dpreg.samplers import get
    from bayes_dpreg.samplers.base import run_batched

    sampler = get(method)
    assert sampler.kernel is not None and sampler.settings is not None
    pr = _prior(method)
    clt = method == "normalx-clt"
    n = jnp.asarray([3000.0, 3000.0] if clt else [30.0, 30.0])
    sig = jnp.full(2, 200.0 if clt else bd.calibrate(1.0, 1e-5, 1.0, 1.0).sigma_S)
    settings, _ = sampler.settings({}, int(pr.m.shape[0]), 50)
    reps = 8
    keys = jax.random.split(jax.random.key(3), reps)
    # the simulation as sbc wrote it before 0adbac2 (not sbc._simulate), so that the script runs on commits before it
    if sampler.needs_intercept:
        one = lambda k: sbc_mod.simulate_intercept_from_prior(k, pr, n, sig, sig)
    else:
        one = lambda k: sbc_mod.simulate_from_prior(k, pr, n, sig, sig, fixed_S=sampler.sbc_exact_S)
    _, data = jax.jit(jax.vmap(one))(keys)
    prs = jax.tree.map(lambda a: jnp.broadcast_to(jnp.asarray(a), (reps,) + jnp.shape(a)), pr)
    SECONDS.clear()
    start = time.perf_counter()
    out = run_batched(
        sampler.kernel,
        data,
        prs,
        settings,
        jax.random.key(5),
        num_chains=2,
        num_warmup=50,
        num_samples=20,
        thin=2,
        keep=("theta", "sigma2"),
    )
    total = time.perf_counter() - start
    h = hashlib.sha256()
    for leaf in jax.tree.leaves(out):
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    trace, comp = SECONDS.get("jaxpr_trace_duration", 0.0), SECONDS.get("backend_compile_duration", 0.0)
    return total, trace, comp, h.hexdigest()[:16]


SECONDS: dict[str, float] = {}


def _on_event(event: str, duration_secs: float, **_: str | int) -> None:
    name = event.rsplit("/", 1)[-1]
    SECONDS[name] = SECONDS.get(name, 0.0) + duration_secs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    args = parser.parse_args()
    os.environ.setdefault("BAYES_DPREG_COMPILATION_CACHE", "0")
    from bayes_dpreg.runtime.cache import FIT_OPTIONS

    flags = " ".join(f"--{k}={str(v).lower()}" for k, v in FIT_OPTIONS.items())
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), flags]).strip()
    warnings.simplefilter("ignore")
    import jax

    import bayes_dpreg as bd
    from bayes_dpreg.runtime.threads import lapack_guard

    jax.monitoring.register_event_duration_secs_listener(_on_event)
    bd.enable_x64()
    bd.configure_threads()
    print("| method | seconds | tracing (s) | compiling (s) | draws' digest |")
    print("|---|---|---|---|---|")
    with lapack_guard():
        for method in args.methods:
            total, trace, comp, digest = measure(method)
            print(f"| {method} | {total:.1f} | {trace:.1f} | {comp:.1f} | `{digest}` |", flush=True)


if __name__ == "__main__":
    main()
