"""A second fit with the same shapes and settings compiles nothing: data enter the compiled
samplers as arguments, never as constants (issue 14)."""

import logging
import warnings

import jax
import numpy as np
import pytest

import bayes_dpreg as bd


def _stats(seed, d=2):
    """Seven parties: a shape no other test uses, so the first fit here always compiles."""
    r = np.random.default_rng(seed)
    X = r.uniform(-0.5, 0.5, size=(3500, d))
    y = np.clip(X @ np.linspace(0.5, -0.2, d) + 0.1 * r.standard_normal(3500), -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [bd.release(a, b, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=[seed, j], name=f"p{j}")
                for j, (a, b) in enumerate(bd.split_parties(X, y, 7))]


class _Compiles(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        if "ompil" in record.getMessage():
            self.messages.append(record.getMessage())


@pytest.fixture
def compiles():
    handler, logger = _Compiles(), logging.getLogger("jax")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    jax.config.update("jax_log_compiles", True)
    yield handler
    jax.config.update("jax_log_compiles", False)
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.mark.parametrize("method", ["fast", "fixeds", "normalx-nuts", "normalx-clt"])
def test_second_fit_with_new_data_compiles_nothing(method, compiles):
    kw = dict(num_samples=61, num_warmup=59, num_chains=2)
    # chains that diverge run again at another target acceptance, programs of their own compiled once a process
    # (the second fit of normalx-clt here diverges; test_a_retry_compiles_its_programs_once below)
    kw |= {"retry": False} if method.startswith("normalx") else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bd.fit(_stats(1), method, seed=0, **kw)
        assert compiles.messages, "the first fit of new shapes should compile (else this test cannot fail)"
        compiles.messages.clear()
        bd.fit(_stats(2), method, seed=1, **kw)  # other data, other seed, same shapes
    assert compiles.messages == []


def test_a_retry_compiles_its_programs_once(compiles):
    """A fit whose chains diverge compiles the retry's programs (another target acceptance); a later fit of the
    same shapes that retries too compiles nothing."""
    kw = dict(num_samples=61, num_warmup=59, num_chains=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = bd.fit(_stats(2), "normalx-clt", seed=1, **kw)  # 10 divergent transitions, then none at 0.95
        assert first.posterior.attrs["retried"] == 1 and compiles.messages
        compiles.messages.clear()
        again = bd.fit(_stats(2), "normalx-clt", seed=1, **kw)
    assert again.posterior.attrs["retried"] == 1 and compiles.messages == []


def test_post_processing_compiles_nothing_for_another_number_of_draws(compiles):
    """The InferenceData's programs (log-likelihood, predictive, log-prior) run on fixed-size
    chunks of draws, so a fit with more draws (an extended fit has twice as many) reuses them."""
    from bayes_dpreg.posterior.idata import CHUNK_DRAWS

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bd.fit(_stats(3), "fixeds", seed=0, num_samples=53, num_warmup=50, num_chains=2)
        compiles.messages.clear()
        idata = bd.fit(_stats(4), "fixeds", seed=1, num_samples=CHUNK_DRAWS + 17, num_warmup=50, num_chains=2)
    assert idata.log_likelihood["z_tilde"].shape == (2, CHUNK_DRAWS + 17, 7)
    assert np.all(np.isfinite(idata.log_prior["theta"].values))
    compiled = {m.split(" with ")[0] for m in compiles.messages if m.startswith("Compiling")}
    # jit(call): a program loaded from its exported copy; the others: the same programs jitted directly
    assert not compiled & {"Compiling jit(call)", "Compiling jit(_predictive_draws)", "Compiling jit(<lambda>)"}


_FRESH_FITS = """
import logging, sys, warnings
import jax
import jax.numpy as jnp
sys.path.insert(0, {tests!r})
from test_compile_once import _stats
import bayes_dpreg as bd

names = []
class Names(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        if message.startswith("Compiling "):
            names.append(message.split()[1][4:-1])  # "jit(name)"
logging.getLogger("jax").addHandler(Names())
logging.getLogger("jax").setLevel(logging.DEBUG)
jax.config.update("jax_log_compiles", True)
warnings.simplefilter("ignore")
for method in ("normalx-clt", "fixeds", "fast"):
    bd.fit(_stats(5), method, seed=0, num_samples=61, num_warmup=59, num_chains=2)
one_op = [n for n in names if n in dir(jnp) or n.lstrip("_") in dir(jax.lax) or n.startswith("_threefry")
          or n in ("stage", "unstack", "_squeeze", "_einsum", "_normal", "_solve_triangular")]
print("programs", len(names), "one-op", one_op)
"""


def test_a_fresh_process_runs_no_one_operation_programs():
    """A fit in a new process runs its work in a few compiled programs: no key, conversion or
    array operation run eagerly, each of which is a program of its own to trace, lower and compile
    or load (``bayes_dpreg.runtime.keys``; a default fit ran about twenty). The default sampler,
    MCMC-fixedS and Bayes-fixedS-fast, at the shapes and settings of the test above (whose
    programs the suite's persistent cache may hold)."""
    import subprocess
    import sys
    from pathlib import Path

    code = _FRESH_FITS.format(tests=str(Path(__file__).parent))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("programs")][-1]
    assert line.endswith("one-op []"), line
    assert int(line.split()[1]) >= 10, line  # the handler saw the fits' programs (else this test cannot fail)
