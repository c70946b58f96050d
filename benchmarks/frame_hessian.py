"""How far the default's Laplace frame whitens NUTS's target at its centre: the curvature of the target.

    python -m benchmarks.frame_hessian --sizes 20x20 50x5

The frame (:func:`bayes_dpreg.samplers.normalx_clt.laplace`) is built from the Hessian of the search's
objective, the posterior density in the separation prior's coordinates ``(log D, R)``, while NUTS targets
the density in the log-Cholesky coordinates ``v`` (:func:`~bayes_dpreg.samplers.normalx_clt.
white_log_density`); they differ by ``log |d (log D, R) / d v|``. For each ``d x J`` (the paper's
simulation as :mod:`benchmarks.speed` releases it), at the frame's centre: the eigenvalues (quantiles)
of the Hessian of NUTS's target in the dense whitening ``x = diag(w)^(1/2) V^T (z - mode)`` of the
objective's Hessian ``V diag(w) V^T`` (the frame below 300 coordinates; an exact whitening of the
target would give 1), the same for the objective (1, or below where curvatures are floored), and the
target's in the diagonal frame ``x = (z - mode) / T`` (the frame above 300 coordinates). Hessians by
forward differences of the compiled gradient, as the frame's own.
"""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import numpy as np


def curvatures(d: int, J: int) -> dict[str, np.ndarray]:
    import jax
    import jax.numpy as jnp

    from bayes_dpreg.samplers import normalx_clt as clt
    from benchmarks.gradient_cost import problem

    data, pr, ref = problem(d, J)
    ref = clt.laplace(data, pr, ref)  # the frame, as clt.prepare builds it
    objective = clt.frame_value_and_grad(data, pr, ref)
    _, _, w, V = clt._local(objective, np.asarray(ref.mode))
    T = V / np.sqrt(w)
    sds = np.sqrt((T**2).sum(1))
    out = {}
    for name, frame, f in (
        ("target, dense frame", ref._replace(T=jnp.asarray(T)), "target"),
        ("objective, dense frame", None, "objective"),
        ("target, diagonal frame", ref._replace(T=jnp.asarray(sds)), "target"),
    ):
        if f == "target":
            g = jax.jit(jax.grad(lambda x, fr=frame: -clt.white_log_density(x, data, pr, fr)))

            def grad_x(x: np.ndarray, g: Any = g) -> np.ndarray:
                return np.asarray(g(jnp.asarray(x)))

            out[name] = np.linalg.eigvalsh(clt.fd_hessian(grad_x, np.zeros(T.shape[0])))
        else:
            grad_z = lambda x: T.T @ objective(np.asarray(ref.mode) + T @ x)[1]
            out[name] = np.linalg.eigvalsh(clt.fd_hessian(grad_z, np.zeros(T.shape[0])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["20x20", "50x5"], help="d x J")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import bayes_dpreg as bd
    from lab.machine import describe

    bd.enable_x64()
    print(f"# {describe('jax')}")
    print("| d | J | Hessian at the frame's centre | eigenvalues 0 / 1 / 10 / 50 / 90 / 99 / 100% |")
    print("|---|---|---|---|")
    for size in args.sizes:
        d, J = (int(v) for v in size.lower().split("x"))
        for name, w in curvatures(d, J).items():
            q = " / ".join(f"{v:.3g}" for v in np.quantile(w, [0, 0.01, 0.1, 0.5, 0.9, 0.99, 1]))
            print(f"| {d} | {J} | {name} | {q} |", flush=True)


if __name__ == "__main__":
    main()
