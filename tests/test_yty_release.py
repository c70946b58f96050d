"""Releasing ``y^T y`` with ``S~`` and ``z~`` (``release(..., yty=True)``): the release is
``release_bs``'s mechanism with ``release``'s options, and the CLT samplers read ``y^T y`` where every
party released it (the likelihood itself: ``tests/test_normalx_clt.py``)."""

from __future__ import annotations

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.model.densities import model_data
from bayes_dpreg.model.prior import Prior
from bayes_dpreg.privacy.gaussian import analytic_gaussian_sigma, bs_sensitivity
from bayes_dpreg.privacy.ledger import BudgetExceededError, PrivacyLedger
from bayes_dpreg.privacy.mechanisms import release_bs
from bayes_dpreg.samplers import normalx_clt as clt
from bayes_dpreg.samplers import normalx_pooled as pooled
from bayes_dpreg.stats import stack_stats


def _data(n: int = 400, d: int = 2, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, (n, d))
    return X, X @ np.linspace(0.5, -0.5, d) + 0.1 * rng.standard_normal(n)


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def test_release_with_yty_is_release_bs_with_releases_options(tmp_path):
    X, y = _data()
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=3)
    a, b = _quiet(bd.release, X, y, yty=True, **kw), _quiet(release_bs, X, y, **kw)
    assert a.mechanism == "bs" and a.u is not None
    np.testing.assert_array_equal(a.S, b.S)
    np.testing.assert_array_equal(a.z, b.z)
    assert a.u == b.u and a.sigma_u == b.sigma_u == a.sigma_S
    assert a.sigma_u == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5) * bs_sensitivity(1.0, 1.0))
    assert bd.load_stats(a.save(tmp_path / "a.json")) == a
    c = _quiet(bd.release, X, y, yty=True, intercept=True, bound_quantile=0.99, **kw)
    assert c.meta["intercept"] and c.bound_quantile == 0.99 and c.d == 3
    assert c.x_bound == pytest.approx(np.hypot(1.0, 1.0))  # the intercept column's norm, as release's
    assert c.sigma_u == pytest.approx(analytic_gaussian_sigma(1.0, 1e-5) * bs_sensitivity(np.hypot(1.0, 1.0), 1.0))


def test_release_with_yty_is_private_by_default_and_refuses_a_split_calibration():
    X, y = _data()
    s = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, yty=True)
    assert s.private and s.noise == "discrete" and s.mechanism == "bs"
    with pytest.raises(ValueError, match="calibration must be 'auto' or 'joint'"):
        bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, yty=True, calibration="split")


def test_the_ledger_charges_the_yty_release_once(tmp_path):
    X, y = _data()
    ledger = PrivacyLedger(tmp_path / "ledger.json", 1.05, 2e-5)
    bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, yty=True, ledger=ledger)
    assert [e.mechanism for e in PrivacyLedger(tmp_path / "ledger.json").entries] == ["bs"]
    with pytest.raises(BudgetExceededError):
        bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, yty=True, ledger=ledger)


def _stats(J: int, yty: bool = True) -> list:
    X, y = _data(n=300 * J, d=3)
    return [
        _quiet(bd.release, Xj, yj, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j, yty=yty)
        for j, (Xj, yj) in enumerate(bd.split_parties(X, y, J))
    ]


def test_model_data_carries_yty_only_where_every_party_released_it():
    st = stack_stats(_stats(3))
    data = model_data(st)
    np.testing.assert_array_equal(data.u_tilde, [s.u for s in _stats(3)])
    np.testing.assert_array_equal(data.sigma_u, [s.sigma_u for s in _stats(3)])
    mixed = stack_stats(_stats(3)[:2] + _stats(3, yty=False)[2:])
    assert mixed.u is None and model_data(mixed).u_tilde is None  # one party without it: not used


def test_pooled_groups_sum_yty_and_its_noise():
    data = model_data(stack_stats(_stats(5)))
    parts = [np.array([0, 2]), np.array([1, 3, 4])]
    out = pooled.pool_data(data, parts)
    for g, p in enumerate(parts):
        np.testing.assert_allclose(out.u_tilde[g], np.asarray(data.u_tilde)[p].sum())
        np.testing.assert_allclose(out.sigma_u[g], np.sqrt((np.asarray(data.sigma_u)[p] ** 2).sum()))


@pytest.mark.parametrize("d", [2, clt.EXACT_NOISE_MAX_D + 1])
def test_the_sampler_hands_the_likelihood_yty_as_released(d):
    """Through :func:`clt.reference`: at d <= EXACT_NOISE_MAX_D the last diagonal entry of ``W~_j`` is the
    released ``u~_j`` and its deficit ``2 s2 - sigma_u^2`` joins the diagonal's; above, it carries the
    orthogonal ensemble's added noise; either way the likelihood moves with ``u~``."""
    X, y = _data(n=900, d=d)
    stats = [
        _quiet(bd.release, Xj, yj, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j, yty=True)
        for j, (Xj, yj) in enumerate(bd.split_parties(X, y, 3))
    ]
    data = model_data(stack_stats(stats))
    pr = Prior(C=1.0, b=0.5, Lambda=1.0).resolve(d)
    ref = clt._reference_program()(data, pr)
    u = np.array([s.u for s in stats])
    if clt.exact_noise(d):
        np.testing.assert_allclose(ref.W[:, d, d], u, rtol=1e-14)
        assert ref.delta.shape == (3, d + 1)
        np.testing.assert_allclose(ref.delta[:, d], [s.sigma_u**2 for s in stats], rtol=1e-12)  # 2 s2 - s2
    else:
        assert not np.allclose(ref.W[:, d, d], u, rtol=1e-6)  # the ensemble's added noise
        np.testing.assert_allclose(ref.W[:, d, d], u, atol=6 * stats[0].sigma_u)
    Sigma_t = clt.sigma_tilde(jnp.eye(d), jnp.full(d, 0.1), jnp.asarray(0.05))
    moved = data._replace(u_tilde=data.u_tilde + 10 * stats[0].sigma_u)
    ref2 = clt._reference_program()(moved, pr)
    assert float(clt.release_log_lik(Sigma_t, data, ref)) != pytest.approx(float(clt.release_log_lik(Sigma_t, moved, ref2)))


@pytest.mark.filterwarnings("ignore::bayes_dpreg.ConvergenceWarning")  # short chains: what the fit read is tested
def test_a_fit_of_a_yty_release_says_it_read_yty():
    from bayes_dpreg.report import _privacy_section

    short = dict(num_samples=100, num_warmup=100, num_chains=2, seed=0)
    with_yty = _quiet(bd.fit, _stats(2), **short)
    without = _quiet(bd.fit, _stats(2, yty=False), **short)
    assert with_yty.posterior.attrs["yty_used"] == 1 and without.posterior.attrs["yty_used"] == 0
    accept = lambda idata: idata.posterior.attrs["target_accept_prob"]
    assert accept(with_yty) == clt.TARGET_ACCEPT_YTY and accept(without) == clt.target_accept(2)  # the funnel's
    text = lambda idata: _privacy_section(idata)["notes"][0]["text"]
    assert "yⱼᵀ yⱼ" in text(with_yty) and "yⱼᵀ yⱼ" not in text(without)
    fixeds = _quiet(bd.fit, _stats(2), "fixeds", num_samples=100, seed=0)
    assert fixeds.posterior.attrs["yty_used"] == 0  # a method that does not read it


def _unused_yty_messages(stats: list, method: str | None) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bd.fit(stats, method, num_samples=50, num_warmup=50, num_chains=1, seed=0)
    return [str(w.message) for w in caught if issubclass(w.category, bd.UnusedStatisticWarning)]


def test_a_fit_that_leaves_a_released_yty_unread_says_why():
    """Releasing ``y^T y`` costs privacy (``y_bound^4`` in the squared sensitivity): where the fit does not
    read it (a method without it, a party without it, the default for small parties) ``fit`` says so."""
    (msg,) = _unused_yty_messages(_stats(2), "fixeds")
    assert "method 'fixeds' does not read it (normalx-clt, normalx-pooled, bs do)" in msg
    (msg,) = _unused_yty_messages(_stats(2)[:1] + _stats(2, yty=False)[1:], "normalx-clt")
    assert "only parties [0] of 2 released it" in msg
    X, y = _data(n=120, d=3)
    small = [
        _quiet(bd.release, Xj, yj, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j, yty=True)
        for j, (Xj, yj) in enumerate(bd.split_parties(X, y, 2))
    ]
    (msg,) = _unused_yty_messages(small, None)  # 60 rows a party: the default is normalx-nuts
    assert "method 'normalx-nuts' does not read it" in msg and "max(100, 30 d) = 100 rows" in msg
    assert _unused_yty_messages(_stats(2), "normalx-clt") == []
    assert _unused_yty_messages(_stats(2, yty=False), "fixeds") == []


def test_the_noise_variance_warning_tells_a_released_yty_from_none():
    from bayes_dpreg.posterior.diagnostics.prior_sensitivity import noise_variance_message

    attrs = {"prior_sensitivity_sigma2": 0.2, "method": "normalx-nuts"}
    assert "y^T y is not released" in noise_variance_message(attrs)
    released = noise_variance_message({**attrs, "yty_released": 1})
    assert "y^T y is released, but method 'normalx-nuts' does not read it" in released
    assert "y^T y" not in noise_variance_message({**attrs, "yty_released": 1, "yty_used": 1})
