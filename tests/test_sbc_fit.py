"""``fit`` as a user calls it is calibrated under its default prior: simulation-based calibration
through ``bayes_dpreg.fit`` itself, the truths drawn from ``Prior()`` made concrete at a public scale
(:mod:`studies.sbc_fit`; the study's runs at 300-400 releases a case are in
``docs/results/sbc/default_prior/``)."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_dpreg.model.prior import Prior
from bayes_dpreg.posterior.sbc import uniformity_pvalue
from bayes_dpreg.samplers import get as get_sampler
from studies.sbc_fit import CASES, default_prior, run
from studies.sbc_rounds import L


def test_the_study_prior_is_the_default_at_its_scale():
    """The study's prior is ``Prior()`` with ``"auto"`` made concrete, nothing else changed: ``IG(1, (y_bound /
    10)^2)``, ``theta_k ~ N(0, y_bound^2 / (4 d))``, the separation prior centred at the features' unit scale."""
    case = CASES["clt-d2"]
    pr = default_prior(case)
    assert (pr.a, pr.b, pr.sigma2_max, pr.eta, pr.scale_sd) == (1.0, (case.y_bound / 10) ** 2, np.inf, 1.0, 1.0)
    np.testing.assert_allclose(pr.C, np.eye(2) * case.y_bound**2 / 8)
    np.testing.assert_allclose(pr.Lambda, np.eye(2))
    assert pr.Sigma_x_prior == Prior().for_sampler(get_sampler(case.method)).Sigma_x_prior  # fit's choice


def test_fit_is_calibrated_under_the_default_prior():
    """60 releases from the default prior at the size where ``fit`` picks ``normalx-clt`` (d = 2, J = 3,
    n_j = 3000, eps = 1): the ranks of ``theta``, ``sigma_y^2`` and ``Sigma_x[0,1]`` among ``fit``'s draws are
    uniform (the smallest p-value 0.014, ``theta[0]``'s), with its rounds exercised: 44 fits stopped at 250 draws
    a chain, 16 went on to 500 (``fit``'s stopping rule, which ``test_sbc_of_the_rounds_stopping_rule`` checks at
    100 data sets under ``-m slow``). Given ``b`` twice the truth's (``run(..., fit_prior=...)``), ``sigma2``'s
    p-value on these releases is 2.5e-6 (checked when this test was written)."""
    res = run(CASES["clt-d2"], 60, seed=1)
    assert set(res.methods) == {"normalx-clt"}
    assert (res.draws_per_chain == 250).any() and (res.draws_per_chain > 250).any(), res.draws_per_chain
    assert set(res.ranks) == {"theta[0]", "theta[1]", "sigma2", "Sigma_x[0,1]"}
    pvalues = {k: uniformity_pvalue(r, L) for k, r in res.ranks.items()}
    assert min(pvalues.values()) > 1e-3, pvalues


@pytest.mark.slow
def test_clt_is_calibrated_with_theta_scaled_by_the_features():
    """``normalx-clt`` under ``Prior(theta_scale="features")`` at the smallest parties ``fit`` takes it for
    (d = 2, J = 3, n_j = 100), truths drawn from that prior: 150 releases, 3 minutes (``pytest -m slow``; the
    study's 300 are in ``docs/results/sbc/clt_features/``)."""
    res = run(CASES["clt-d2-n100"], 150, seed=0, theta_scale="features")
    assert set(res.methods) == {"normalx-clt"}
    pvalues = {k: uniformity_pvalue(r, L) for k, r in res.ranks.items()}
    assert min(pvalues.values()) > 1e-3, pvalues
