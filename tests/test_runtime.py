"""The XLA CPU thread-pool deadlock that ``import bayes_dpreg`` guards against (see the package docstring).

Two independent chains of batched Cholesky factorisations and triangular solves (400 matrices of
14 x 14, as in vmapped MCMC-normalX on bike sharing) inside a ``fori_loop``: with jaxlib 0.10.2 and
XLA's default intra-op pool on 2 cores this never finishes; with the package imported first it
takes about 1.5 s. Each run is a fresh interpreter, because the pool is created with the backend.
"""

import os
import subprocess
import sys
import textwrap

REPRO = textwrap.dedent("""
    import bayes_dpreg, os
    import jax, jax.numpy as jnp
    from jax.scipy.linalg import solve_triangular
    assert os.environ["NPROC"] == "1", os.environ["NPROC"]
    B, d = 400, 14
    A = jnp.eye(d) * 2.0 + 0.01 * jax.random.normal(jax.random.key(0), (B, d, d))
    S = A @ jnp.swapaxes(A, -1, -2)

    @jax.jit
    def f(S):
        def body(i, c):
            out = []
            for k, M in enumerate(c):
                M = M + 1e-3 * k * jnp.eye(d)
                out.append(M + 1e-6 * solve_triangular(jnp.linalg.cholesky(M), M, lower=True))
            return tuple(out)
        return jax.lax.fori_loop(0, 500, body, (S, S))

    print(bool(jnp.isfinite(f(S)[0]).all()))
""")


def test_batched_lapack_in_loop_does_not_deadlock():
    env = {k: v for k, v in os.environ.items() if k != "NPROC"}
    res = subprocess.run([sys.executable, "-c", REPRO], env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"


def test_user_nproc_is_kept():
    env = dict(os.environ, NPROC="2")
    res = subprocess.run([sys.executable, "-c", "import bayes_dpreg, os; print(os.environ['NPROC'])"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "2"
