"""The full SBC study (``pytest -m slow``; minutes): more replications and longer chains."""

import jax
import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.model.prior import Prior
from bayes_dpreg.posterior.sbc import sbc

CASES = {
    "normalx": ("normalx", {}, 500, 10),
    "normalx-algorithm1": ("normalx", {"collapse_theta": False, "level_moves": False}, 500, 10),
    "fixeds": ("fixeds", {}, 500, 10),
    "normalx-nuts": ("normalx-nuts", {}, 500, 2),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_sbc_full(case):
    method, extra, reps, thin = CASES[case]
    pr = Prior(m=0.0, C=1.0, a=3.0, b=2.0, Lambda=3.0, kappa=6.0).resolve(2)
    sig = bd.calibrate(1.0, 1e-5, 1.0, 1.0).sigma_S
    res = sbc(jax.random.key(2026), method, pr, np.array([30, 30]), sig, sig, replications=reps, thin=thin,
              num_warmup=500, options=extra)
    # five tests per sampler: a family-wise 1% level
    assert min(res.pvalues.values()) > 0.002, res.pvalues
