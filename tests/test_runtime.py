"""The XLA CPU thread-pool deadlock that :func:`bayes_dpreg.runtime.threads.lapack_guard` removes.

Two independent chains of batched Cholesky factorisations and triangular solves (400 matrices of
14 x 14, as in vmapped MCMC-normalX on bike sharing) inside a ``fori_loop``: with jaxlib 0.10.2 and
XLA's default intra-op pool on 2 cores this hangs, idle, in some fresh processes (2 of 8 here);
lowered under the guard it returns, on the same default pool. Each run is a fresh interpreter,
because the pool is created with the backend. ``import bayes_dpreg`` itself changes no
environment variable. The public entry points: ``tests/test_no_hang.py``.
"""

import os
import subprocess
import sys
import textwrap

import pytest

REPRO = textwrap.dedent("""
    import os
    import jax, jax.numpy as jnp
    from jax.scipy.linalg import solve_triangular
    from bayes_dpreg.runtime.threads import lapack_guard
    assert "NPROC" not in os.environ
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

    with lapack_guard():
        print(bool(jnp.isfinite(f(S)[0]).all()))
""")


def test_batched_lapack_in_loop_does_not_deadlock():
    env = {k: v for k, v in os.environ.items() if k != "NPROC"}
    res = subprocess.run([sys.executable, "-c", REPRO], env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"


def test_user_nproc_is_kept():
    env = dict(os.environ, NPROC="2")
    code = "import bayes_dpreg, os; print(bayes_dpreg.configure_threads(), os.environ['NPROC'])"
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "2 2"


def test_import_changes_no_environment_variable():
    env = {k: v for k, v in os.environ.items() if k != "NPROC"}
    code = "import os; before = dict(os.environ); import bayes_dpreg; print(dict(os.environ) == before)"
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"


def test_configure_threads(monkeypatch):
    from bayes_dpreg.runtime.threads import configure_threads

    monkeypatch.delenv("NPROC", raising=False)
    assert configure_threads() == "1"
    assert configure_threads(3) == "1"  # a value already set is kept
    assert configure_threads(3, override=True) == "3"
    with pytest.raises(ValueError):
        configure_threads(0)
