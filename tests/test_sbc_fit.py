"""``fit`` as a user calls it is calibrated under its default prior: simulation-based calibration
through ``bayes_dpreg.fit`` itself, the truths drawn from ``Prior()`` made concrete at a public scale
(:mod:`studies.sbc_fit`; the study's runs at 300-400 releases a case are in
``docs/results/sbc/default_prior/``)."""

from __future__ import annotations

import numpy as np

from bayes_dpreg.model.prior import Prior
from bayes_dpreg.posterior.sbc import uniformity_pvalue
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
    assert pr.Sigma_x_prior == Prior().Sigma_x_prior


def test_fit_is_calibrated_under_the_default_prior():
    """60 releases from the default prior at the size where ``fit`` picks ``normalx-clt`` (d = 2, J = 3,
    n_j = 3000, eps = 1): the ranks of ``theta`` and ``sigma_y^2`` among ``fit``'s draws, with its rounds, are
    uniform (the smallest p-value 0.014, ``theta[0]``'s). Given ``b`` twice the truth's (``run(...,
    fit_prior=...)``), ``sigma2``'s p-value on these releases is 2.5e-6 (checked when this test was written)."""
    res = run(CASES["clt-d2"], 60, seed=1)
    assert set(res.methods) == {"normalx-clt"}
    pvalues = {k: uniformity_pvalue(r, L) for k, r in res.ranks.items()}
    assert min(pvalues.values()) > 1e-3, pvalues
