"""The prior variants of ``studies/paper_priors.py`` and ``studies.coverage.matched_prior``: each
replaces exactly the factor it names by the paper simulation's generating one."""

import dataclasses

import numpy as np
import pytest

FACTORS = {"sigma2": {"a", "b"}, "theta": {"m", "C"}, "sigma_x": {"Lambda", "kappa", "Sigma_x_prior"}}


def _differs(a, b) -> set[str]:
    out = set()
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if type(x) is not type(y) or not np.array_equal(np.asarray(x, dtype=object), np.asarray(y, dtype=object)):
            out.add(f.name)
    return out


@pytest.mark.parametrize("d", [2, 5])
def test_variants_replace_one_factor(d):
    import bayes_dpreg as bd
    from studies import coverage as cov
    from studies import paper_priors as pp

    cell = next(c for c in cov.cells("paper") if c["id"] == f"paper-d{d}-J5-eps5")
    default = bd.Prior()
    assert _differs(pp.variant_prior("default", cell, 3, 2026), default) == set()
    for variant, fields in FACTORS.items():
        assert _differs(pp.variant_prior(variant, cell, 3, 2026), default) == fields, variant
    full = pp.variant_prior("all", cell, 3, 2026)
    assert _differs(full, default) == set().union(*FACTORS.values())
    assert full.b / (full.a - 1) == pytest.approx(1.0)  # the mean of sigma_y^2 ~ IG(a, b): the truth, 1
    np.testing.assert_array_equal(full.C, np.eye(d))
    # the generating Sigma_x prior is the replication's own: IW(V^T V, d + 1), V from the data stream
    sim_lambda = cov.oracle_prior(cell, 3, 2026).Lambda
    np.testing.assert_array_equal(full.Lambda, sim_lambda)
    assert not np.array_equal(sim_lambda, cov.oracle_prior(cell, 4, 2026).Lambda)
    assert cov.matched_prior(next(c for c in cov.cells("small")), 0, 2026) is None
