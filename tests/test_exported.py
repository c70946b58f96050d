"""A fit's programs kept on disk as exported StableHLO (bayes_dpreg.runtime.exported): written by
the first use, loaded by later ones instead of being traced, the same numbers either way, and
never a reason for a fit to fail."""

import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_dpreg.runtime import exported
from bayes_dpreg.runtime.cache import fit_jit


def _program(S, v):
    """A while loop, an eigendecomposition and a Cholesky solve: the operations of the samplers."""
    lam, U = jnp.linalg.eigh(S)
    x = jax.lax.fori_loop(0, 5, lambda i, x: U @ (U.T @ x) / (1.0 + lam.max()) + v, v)
    return {"x": x, "sol": jax.scipy.linalg.cho_solve((jnp.linalg.cholesky(S), True), x)}


def _args(seed):
    r = np.random.default_rng(seed)
    A = r.standard_normal((4, 4))
    return A @ A.T + 4 * np.eye(4), r.standard_normal(4)


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(exported, "export_dir", lambda: tmp_path / "exported")
    return tmp_path / "exported"


def test_a_program_is_written_once_then_loaded_with_the_same_results(folder, monkeypatch):
    first = fit_jit(_program, key=("test", 1))(*_args(0))
    (path,) = folder.iterdir()

    def no_export(*a, **k):
        raise AssertionError("the program should come from its file, not be exported again")

    monkeypatch.setattr(jax.export, "export", no_export)
    second = fit_jit(_program, key=("test", 1))  # a new wrapper: as in a new process
    out = second(*_args(0))
    plain = jax.jit(_program)(*_args(0))
    for k in plain:
        np.testing.assert_array_equal(out[k], first[k])
        np.testing.assert_allclose(out[k], plain[k], rtol=1e-12)
    assert list(folder.iterdir()) == [path]
    np.testing.assert_allclose(second(*_args(1))["sol"], jax.jit(_program)(*_args(1))["sol"], rtol=1e-12)


def test_other_keys_or_shapes_get_their_own_files(folder):
    fit_jit(_program, key=("test", 1))(*_args(0))
    fit_jit(_program, key=("test", 2))(*_args(0))
    fit_jit(_program, key=("test", 1))(np.eye(3), np.ones(3))
    assert len(list(folder.iterdir())) == 3


def test_a_damaged_file_is_replaced_and_the_call_still_answers(folder):
    expected = jax.jit(_program)(*_args(0))["sol"]
    fit_jit(_program, key=("test", 3))(*_args(0))
    (path,) = folder.iterdir()
    path.write_bytes(b'["no.such:Class"]\ngarbage')
    np.testing.assert_allclose(fit_jit(_program, key=("test", 3))(*_args(0))["sol"], expected, rtol=1e-12)
    assert path.read_bytes() != b'["no.such:Class"]\ngarbage'


def test_a_program_that_cannot_be_exported_runs_jitted(folder, monkeypatch):
    def fails(*a, **k):
        raise RuntimeError("cannot export")

    monkeypatch.setattr(jax.export, "export", fails)
    out = fit_jit(_program, key=("test", 4))(*_args(0))
    np.testing.assert_allclose(out["sol"], jax.jit(_program)(*_args(0))["sol"], rtol=1e-12)
    assert not folder.exists() or not list(folder.iterdir())


def test_no_file_without_a_key_or_with_the_cache_off(folder, monkeypatch):
    fit_jit(_program)(*_args(0))
    assert not folder.exists()
    monkeypatch.setattr(exported, "export_dir", lambda: None)
    fit_jit(_program, key=("test", 5))(*_args(0))
    assert not folder.exists()


def test_a_program_that_fails_on_its_first_call_is_removed_and_jitted(folder, monkeypatch):
    """A file exported for another platform loads but fails when called: the call still answers."""
    expected = jax.jit(_program)(*_args(0))["sol"]
    fit_jit(_program, key=("test", 6))(*_args(0))
    (path,) = folder.iterdir()
    real = jax.export.Exported.call

    def broken(self, *a, **k):
        raise ValueError("exported for platforms ('cuda',) but it is used on ('cpu',)")

    monkeypatch.setattr(jax.export.Exported, "call", broken)
    out = fit_jit(_program, key=("test", 6))(*_args(0))
    np.testing.assert_allclose(out["sol"], expected, rtol=1e-12)
    assert not path.exists()
    monkeypatch.setattr(jax.export.Exported, "call", real)


def test_the_lapack_guard_and_random_bits_are_part_of_the_key(folder):
    """The guard rewrites batched LAPACK calls when a program is lowered, and an exported program keeps
    its lowering: a program exported under the guard is never used outside it, nor the reverse."""
    from bayes_dpreg.runtime.threads import lapack_guard

    fit_jit(_program, key=("test", 7))(*_args(0))
    with lapack_guard():
        fit_jit(_program, key=("test", 7))(*_args(0))
    with jax.threefry_partitionable(not jax.config.jax_threefry_partitionable):
        fit_jit(_program, key=("test", 7))(*_args(0))
    assert len(list(folder.iterdir())) == 3


def test_a_program_exported_under_the_lapack_guard_keeps_no_call_that_can_deadlock(folder):
    """20,000 Cholesky factorisations in one call (the size that hung ``fit(method="normalx")``):
    exported outside the guard the file holds a call jaxlib may split over its thread pool; under
    the guard (every public function's context) it holds none, and that is the file later fits load."""
    from bayes_dpreg.runtime.threads import lapack_guard, split_lapack_calls

    A = np.broadcast_to(np.eye(5) * 2.0, (20_000, 5, 5)).copy()
    # two function objects, so that JAX's in-process lowering cache cannot hand one's lowering to the other
    fit_jit(lambda A: jnp.linalg.cholesky(A), key=("test", 8))(A)
    (outside,) = folder.iterdir()
    assert split_lapack_calls(exported._load(outside).mlir_module())  # else this test could not fail
    with lapack_guard():
        L = fit_jit(lambda A: jnp.linalg.cholesky(A), key=("test", 8))(A)
    (inside,) = set(folder.iterdir()) - {outside}
    assert split_lapack_calls(exported._load(inside).mlir_module()) == []
    np.testing.assert_allclose(np.asarray(L)[0], np.sqrt(2.0) * np.eye(5))


def test_stable_keys_name_functions_and_refuse_addresses():
    from bayes_dpreg.samplers.normalx_clt import KERNEL
    from bayes_dpreg.samplers.normalx_nuts import NutsSettings

    key = exported.stable_key(("advance", KERNEL, NutsSettings(), 100, False, None))
    assert key is not None and "bayes_dpreg.samplers.normalx_clt.step" in repr(key)
    assert exported.stable_key(("x", object())) is None
    assert exported.stable_key(("x", np.zeros(2000))) is None  # an array's repr is abbreviated


def test_a_new_process_loads_the_sampler_instead_of_tracing_it(tmp_path):
    """Two fresh processes on one cache directory: the second finds every program of the chains
    on disk, and its draws equal the first's (the programs are the same)."""
    code = r"""
import json, warnings, numpy as np
warnings.simplefilter("ignore")
import jax
import bayes_dpreg as bd
from bayes_dpreg.runtime import exported
calls = []
real = jax.export.export
jax.export.export = lambda *a, **k: calls.append(1) or real(*a, **k)
r = np.random.default_rng(0)
X = r.uniform(-0.5, 0.5, size=(900, 2)); y = np.clip(X @ [0.5, -0.2] + 0.1 * r.standard_normal(900), -1, 1)
st = [bd.release(a, b, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j)
      for j, (a, b) in enumerate(bd.split_parties(X, y, 3))]
idata = bd.fit(st, "fixeds", num_samples=30, num_warmup=30, num_chains=2, seed=3)
print(json.dumps({"exports": len(calls), "theta": idata.posterior["theta"].values.ravel().tolist()}))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_COMPILATION_CACHE", "BAYES_DPREG"))}
    import json

    def run(cache):
        env["BAYES_DPREG_COMPILATION_CACHE"] = cache
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])

    runs = [run(str(tmp_path / "cache")) for _ in range(2)]
    plain = run("0")  # no cache, so nothing exported: the programs jitted directly
    assert runs[0]["exports"] >= 3  # prepare or init, the chains' chunk, the post-processing programs
    assert runs[1]["exports"] == 0 and plain["exports"] == 0
    assert runs[1]["theta"] == runs[0]["theta"] == plain["theta"]
    assert len(list((tmp_path / "cache" / "exported").iterdir())) == runs[0]["exports"]
