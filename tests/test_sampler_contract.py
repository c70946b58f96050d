"""The contract of every registered sampler (issue 33): what ``fit``, SBC and the replication
studies rely on, checked for each entry of :data:`bayes_dpreg.samplers.SAMPLERS` on a tiny problem
(d = 2, J = 2, a few iterations)."""

import inspect

import jax
import numpy as np
import pytest
from _shared import sampler_problem

from bayes_dpreg.samplers import SAMPLERS
from bayes_dpreg.samplers.base import MethodResult, run_chains

NAMES = sorted(SAMPLERS)
# the chain driver's own options (run_chains: thin, progress_bar, extend), with their defaults
RUN_DEFAULTS = {"thinning": 1, "progress_bar": False, "extend": 0, "retry": True}
CHAINS, WARMUP, DRAWS = 2, 5, 5
# valid values other than the defaults that halve a compilation (the level moves: tests/test_samplers.py)
CHEAP = {"level_moves": False}
# compiling the NUTS samplers takes 6-15 s of CPU each at d = 2 (test_normalx_nuts.py, test_normalx_clt.py and
# test_intercept.py run them): their run here is on demand (pytest -m slow), the checks without a run are not
SLOW = {"normalx-nuts", "normalx-clt", "normalx-intercept"}
RUNS = [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in NAMES]


def _defaults(sampler, d: int) -> dict:
    """A valid value of every declared option: its default in ``run``'s signature, in the
    sampler's settings, or of the chain driver (:data:`RUN_DEFAULTS`). An option with none of
    these is a declared option that nothing takes."""
    params = inspect.signature(sampler.run).parameters
    known = sampler.settings({}, d, WARMUP)[0] if sampler.settings is not None else None
    values = {}
    for opt in sampler.options:
        if opt in params and params[opt].default is not inspect.Parameter.empty:
            values[opt] = params[opt].default
        elif known is not None and opt in getattr(known, "_fields", ()):
            values[opt] = getattr(known, opt)
        elif opt in RUN_DEFAULTS:
            values[opt] = RUN_DEFAULTS[opt]
        else:
            pytest.fail(f"{sampler.name}: declared option {opt!r} has no default in run or in its settings")
    return values


@pytest.mark.parametrize("name", NAMES)
def test_registry_entry_is_well_formed(name):
    sampler = SAMPLERS[name]
    assert sampler.name == name
    assert sampler.kind in {"mcmc", "exact", "point"}
    assert isinstance(sampler.options, tuple) and all(isinstance(o, str) for o in sampler.options)
    assert len(set(sampler.options)) == len(sampler.options), "an option declared twice"
    assert callable(sampler.run) and sampler.label and sampler.summary
    if sampler.kernel is not None:
        assert sampler.kind == "mcmc"
        assert callable(sampler.data) and callable(sampler.settings)
        k = sampler.kernel
        assert all(callable(f) for f in (k.init, k.step, k.draws, k.info))
        hash(k)  # the chain driver caches compiled programs per kernel


@pytest.mark.parametrize("name", NAMES)
def test_declared_options_are_accepted_and_others_refused(name):
    """``run`` takes every declared option (at its default) and refuses an undeclared one by
    name, before any sampling: a declared option that ``run`` does not take is named instead."""
    sampler = SAMPLERS[name]
    st, pr = sampler_problem(sampler)
    options = {**_defaults(sampler, st.d), "not_an_option": 1}  # the unknown one last
    with pytest.raises(TypeError) as err:
        sampler.run(st, pr, jax.random.key(0), CHAINS, DRAWS, WARMUP, **options)
    message = str(err.value)
    assert "not_an_option" in message
    assert not [o for o in sampler.options if repr(o) in message or f"'{o}'" in message], message


def test_the_option_check_catches_an_option_that_run_does_not_take():
    """The check above fails for a sampler that declares an option its ``run`` does not take."""
    from dataclasses import replace

    sampler = replace(SAMPLERS["fixeds"], options=SAMPLERS["fixeds"].options + ("target_accept_S_typo",))
    with pytest.raises(pytest.fail.Exception, match="target_accept_S_typo"):
        _defaults(sampler, 2)
    sampler = replace(SAMPLERS["fast"], options=SAMPLERS["fast"].options + ("thinning",))
    st, pr = sampler_problem(sampler)
    with pytest.raises(TypeError, match="thinning"):
        sampler.run(st, pr, jax.random.key(0), CHAINS, DRAWS, WARMUP, **_defaults(sampler, st.d))


@pytest.mark.parametrize("name", RUNS)
def test_run_and_the_chain_kernel_give_finite_draws(name):
    """``run`` with every declared option (at its default, or :data:`CHEAP`) gives draws with leading ``(chain, draw)``
    axes; a chain kernel, where there is one, runs under :func:`run_chains` with the settings its
    ``settings`` reads off those options (the program ``run`` compiled), and its sample statistics
    have the same leading axes."""
    sampler = SAMPLERS[name]
    st, pr = sampler_problem(sampler)
    options = _defaults(sampler, st.d)
    options.update({k: v for k, v in CHEAP.items() if k in options})
    res = sampler.run(st, pr, jax.random.key(0), CHAINS, DRAWS, WARMUP, **options)
    assert isinstance(res, MethodResult)
    theta = np.asarray(res.posterior["theta"])
    assert theta.shape[:2] == ((1, 1) if sampler.kind == "point" else (CHAINS, DRAWS))
    assert np.isfinite(theta).all()
    if sampler.kernel is None:
        return
    settings, rest = sampler.settings(options, st.d, WARMUP)
    assert set(rest) <= set(RUN_DEFAULTS), f"options neither settings nor the driver's: {sorted(rest)}"
    draws, info = run_chains(sampler.kernel, sampler.data(st), pr, settings, jax.random.key(1), num_chains=CHAINS,
                             num_warmup=WARMUP, num_samples=DRAWS)
    theta = np.asarray(draws["theta"])
    assert theta.shape[:2] == (CHAINS, DRAWS) and np.isfinite(theta).all()
    assert all(np.shape(v)[:2] == (CHAINS, DRAWS) for v in info.values())
