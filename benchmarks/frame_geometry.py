"""What keeps NUTS's steps short at large d: the stiff directions of the default's target, term by term,
and the chain in the separation prior's own coordinates.

    python -m benchmarks.frame_geometry --sizes 30x20 50x5 --draws 200

For each ``d x J`` (the paper's simulation as :mod:`benchmarks.speed` releases it), one NumPyro NUTS chain
on the default's (``normalx-clt``) target in its Laplace frame, as :mod:`benchmarks.frame_steps` runs it
(``--warmup`` iterations from a dispersed start, then ``--draws``). At ``--points`` of its draws: the
Hessian of the potential (forward differences of its compiled gradient) in the scale of the adapted
mass matrix, ``A = M^{-1/2} H M^{-1/2}``, whose largest eigenvalues bound the step size (a leapfrog step
is stable below ``2 / sqrt(lambda_max)``); along its three top eigenvectors ``u``, the share of
``u^T H u`` that each term of :func:`~bayes_dpreg.samplers.normalx_clt.log_density` contributes:
``Sigma_x``'s prior with its log-Cholesky Jacobian, ``theta``'s prior with ``|d theta / d b|``,
``sigma_y^2``'s prior with its coordinate's Jacobian, and the release likelihood.

Then the same chain in the separation prior's coordinates ``(log s, c, b, log sigma_y^2)`` (``Sigma_x =
D R D``, ``D = diag(s)``; ``c`` the unconstrained coordinates of ``chol(R)``, NumPyro's
``CorrCholeskyTransform``), where that prior is a Gaussian in ``log s`` times ``LKJCholesky`` with the
transform's Jacobian, and the rest of the density is the default's at the same ``Sigma_x``; its frame a
dense Laplace one, ``y = mode + V diag(w)^(-1/2) x`` (L-BFGS-B from the default's centre, JAX's exact
Hessian, curvatures floored as the default's). Both chains' leapfrog steps (the last 50 warm-up
iterations', all warm-up's, the draws'), the step size, milliseconds a step over the draws (one chain,
XLA's default pool), and the quantiles over coordinates of the draws' sds of ``x`` (1 where the frame
whitens the bulk). Separation priors only (the default's).
"""

from __future__ import annotations

import argparse
import functools
import time
import warnings
from typing import Any

import numpy as np

TERMS = ("Sigma_x prior", "theta prior", "sigma2 prior", "likelihood")


def setup(d: int, J: int) -> tuple[Any, Any, Any]:
    """``(data, prior, frame)`` of the default on the paper's simulation (:func:`benchmarks.gradient_cost.problem`),
    its Laplace frame as ``fit`` makes it (:func:`~bayes_dpreg.samplers.normalx_clt.prepare`: ``laplace``
    of the reference)."""
    from bayes_dpreg.samplers import normalx_clt as clt
    from benchmarks.gradient_cost import problem

    data, pr, ref = problem(d, J)
    return data, pr, clt.laplace(data, pr, ref)


def terms(x: Any, data: Any, pr: Any, ref: Any) -> dict[str, Any]:
    """:func:`~bayes_dpreg.samplers.normalx_clt.log_density` at the frame's point ``x``, term by term
    (they sum to it)."""
    from bayes_dpreg.samplers import normalx_clt as clt

    z = clt._ravel(ref.W.shape[-1] - 1)(clt.frame_point(x, ref))
    L, theta, log_jac_theta, sigma2 = clt.unpack(z, ref, data.n, pr)
    Sigma_t = clt.sigma_tilde(L @ L.T, theta, sigma2)
    return {
        "Sigma_x prior": clt.sigma_x_log_density(L, pr, ref.Q),
        "theta prior": clt.theta_log_prior(theta, ref, pr, L @ L.T) + log_jac_theta,
        "sigma2 prior": clt.prior_dist(pr, "sigma2").log_prob(sigma2) + clt.sigma2_of(z["ls2"], pr)[1],
        "likelihood": clt.release_log_lik(Sigma_t, data, ref),
    }


def chain(potential: Any, k: int, d: int, warmup: int, draws: int) -> dict[str, Any]:
    """One NUTS chain on ``potential`` (the default's target acceptance, start ``x ~ N(0, I)``)."""
    import jax
    from numpyro.infer import MCMC, NUTS

    from bayes_dpreg.samplers import normalx_clt as clt

    kernel = NUTS(potential_fn=potential, target_accept_prob=clt.target_accept(d))
    mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, progress_bar=False)
    x0 = jax.random.normal(jax.random.key(1), (k,))
    mcmc.warmup(jax.random.key(0), init_params=x0, extra_fields=("num_steps",), collect_warmup=True)
    warm = np.asarray(mcmc.get_extra_fields()["num_steps"])
    start = time.perf_counter()
    mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps",))
    x = np.asarray(mcmc.get_samples())
    steps = np.asarray(mcmc.get_extra_fields()["num_steps"])
    return {
        "x": x,
        "inverse_mass": np.asarray(mcmc.last_state.adapt_state.inverse_mass_matrix),
        "last50": float(warm[-50:].mean()),
        "warm_steps": int(warm.sum()),
        "step_size": float(mcmc.last_state.adapt_state.step_size),
        "steps": float(steps.mean()),
        "ms": 1e3 * (time.perf_counter() - start) / steps.sum(),
        "x_sd": np.quantile(x.std(0), [0.1, 0.5, 0.9]),
    }


def stiff_rows(run: dict, data: Any, pr: Any, ref: Any, points: int) -> list[dict]:
    """At ``points`` draws of ``run``: the top three eigenvalues of the mass-scaled Hessian and each term's share."""
    import jax
    import jax.numpy as jnp

    from bayes_dpreg.model.linalg import symmetrize
    from bayes_dpreg.samplers.normalx_clt import fd_hessian

    potential = lambda x: -sum(terms(x, data, pr, ref).values())
    grad = jax.jit(jax.grad(potential))

    def hvp(t: str) -> Any:  # H_t u: the derivative of the term's gradient along u
        return jax.jit(lambda x, u: jax.jvp(jax.grad(lambda y: -terms(y, data, pr, ref)[t]), (x,), (u,))[1])

    curvature = {t: hvp(t) for t in TERMS}
    scale = np.sqrt(run["inverse_mass"])
    rows = []
    for i in np.linspace(0, len(run["x"]) - 1, points).astype(int):
        H = fd_hessian(grad, run["x"][i])
        lam, U = np.linalg.eigh(np.asarray(symmetrize(scale[:, None] * H * scale[None, :])))
        share = dict.fromkeys(TERMS, 0.0)
        for u in (U[:, -1] * scale, U[:, -2] * scale, U[:, -3] * scale):
            for t in TERMS:
                share[t] += float(u @ np.asarray(curvature[t](jnp.asarray(run["x"][i]), jnp.asarray(u))))
        total = lam[-3:].sum()
        rows.append({"draw": int(i), "top": lam[-3:][::-1], **{t: share[t] / total for t in TERMS}})
    return rows


def separation_potential(data: Any, pr: Any, ref: Any) -> tuple[Any, np.ndarray]:
    """``(-log p(y), y at the default's frame centre)`` in the coordinates ``y = (log s, c, b, log sigma_y^2)``."""
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.distributions.transforms import CorrCholeskyTransform

    from bayes_dpreg.model.linalg import from_log_cholesky, log_cholesky, symmetrize
    from bayes_dpreg.samplers import normalx_clt as clt

    d = ref.Q.shape[0]
    m = d * (d - 1) // 2
    prior, corr = clt.prior_dist(pr, "Sigma_x"), CorrCholeskyTransform()
    lkj = dist.LKJCholesky(d, concentration=pr.eta)

    def log_p(y: Any) -> Any:
        log_s, c, rest = y[:d], y[d : d + m], y[d + m :]
        L_R = corr(c)
        F = jnp.exp(log_s)[:, None] * L_R  # Sigma_x = F F^T
        v = (log_cholesky(symmetrize(ref.Q.T @ F @ F.T @ ref.Q)) - ref.v0) / ref.v_scale
        z = {"v": v, "b": rest[:d], "ls2": rest[d]}
        L = from_log_cholesky(ref.v0 + ref.v_scale * v, d)
        others = clt.log_density(z, data, pr, ref) - clt.sigma_x_log_density(L, pr, ref.Q)
        scales = dist.Normal(prior.loc, prior.scale_sd).log_prob(log_s).sum()
        return scales + lkj.log_prob(L_R) + corr.log_abs_det_jacobian(c, L_R) + others

    z = clt._ravel(d)(ref.mode)
    L = from_log_cholesky(ref.v0 + ref.v_scale * z["v"], d)
    Sigma = ref.Q @ L @ L.T @ ref.Q.T
    s = jnp.sqrt(jnp.diagonal(Sigma))
    c = corr.inv(jnp.linalg.cholesky(Sigma / s[:, None] / s[None, :]))
    return (lambda y: -log_p(y)), np.asarray(jnp.concatenate([jnp.log(s), c, z["b"], z["ls2"][None]]))


def separation_run(data: Any, pr: Any, ref: Any, d: int, warmup: int, draws: int) -> dict:
    """The chain in the separation coordinates with its dense Laplace frame."""
    import jax
    import jax.numpy as jnp
    import scipy.optimize

    from bayes_dpreg.samplers import normalx_clt as clt

    neg, y0 = separation_potential(data, pr, ref)
    value_and_grad = jax.jit(jax.value_and_grad(neg))
    fun = lambda y: tuple(np.asarray(a) for a in value_and_grad(y))
    options = {"maxiter": 800, "maxcor": 30, "ftol": 1e-15}
    mode = scipy.optimize.minimize(fun, y0, jac=True, method="L-BFGS-B", options=options).x
    w, V = np.linalg.eigh(np.asarray(jax.jit(jax.hessian(neg))(mode)))
    T = jnp.asarray(V / np.sqrt(np.maximum(np.abs(w), clt.CURVATURE_FLOOR)))
    return chain(lambda x: neg(mode + T @ x), mode.shape[0], d, warmup, draws)


def _white_potential(x: Any, data: Any, pr: Any, ref: Any) -> Any:
    from bayes_dpreg.samplers import normalx_clt as clt

    return -clt.white_log_density(x, data, pr, ref)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["30x20", "50x5"], help="d x J")
    ap.add_argument("--warmup", type=int, default=250)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--points", type=int, default=4, help="draws at which the Hessian is taken")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from bayes_dpreg.samplers import normalx_clt as clt
    from lab.machine import describe

    bd.enable_x64()
    print(f"# {describe('jax')}; one chain a row, {args.warmup} warm-up iterations, {args.draws} draws")
    stiff, chains = [], []
    for size in args.sizes:
        d, J = (int(v) for v in size.lower().split("x"))
        data, pr, ref = setup(d, J)
        k = ref.mode.shape[0]
        frame = "diagonal" if k > clt.DENSE_FRAME_MAX_DIM else "dense"
        potential = functools.partial(_white_potential, data=data, pr=pr, ref=ref)
        default = chain(potential, k, d, args.warmup, args.draws)
        stiff += [(d, J, r) for r in stiff_rows(default, data, pr, ref, args.points)]
        chains += [(d, J, f"log-Cholesky (the default's), {frame} frame", default)]
        chains += [(d, J, "separation, dense frame", separation_run(data, pr, ref, d, args.warmup, args.draws))]
    print("\n| d | J | draw | top 3 eigenvalues of the mass-scaled Hessian | " + " | ".join(TERMS) + " |")
    print("|---" * (4 + len(TERMS)) + "|")
    for d, J, r in stiff:
        top = " / ".join(f"{v:.1f}" for v in r["top"])
        print(f"| {d} | {J} | {r['draw']} | {top} | " + " | ".join(f"{r[t]:.2f}" for t in TERMS) + " |")
    print(
        "\n| d | J | coordinates | steps, last 50 of warm-up | steps, all warm-up | step size | steps a draw "
        "| ms a step | sd of x 10/50/90% |"
    )
    print("|---" * 9 + "|")
    for d, J, name, r in chains:
        sd = " / ".join(f"{v:.2f}" for v in r["x_sd"])
        print(
            f"| {d} | {J} | {name} | {r['last50']:.1f} | {r['warm_steps']} | {r['step_size']:.3f} "
            f"| {r['steps']:.1f} | {r['ms']:.2f} | {sd} |"
        )


if __name__ == "__main__":
    main()
