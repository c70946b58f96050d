"""``normalx-pooled``: the groups it sums, the sums themselves, that it is ``normalx-clt`` where no
parties pool, and calibration (SBC) where they do."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _shared import clt_sbc_pvalues
from entry_points import parties

import bayes_dpreg as bd
from bayes_dpreg.model.densities import model_data
from bayes_dpreg.samplers import normalx_pooled as pooled
from bayes_dpreg.stats import stack_stats as stack


def _groups(n, sigma, d):
    return [g.tolist() for g in pooled.groups(np.array(n, float), np.array(sigma, float), np.array(sigma, float), d)]


def test_groups_keep_enough_parties_apart_for_sigma2_and_pool_like_noise_per_row():
    assert pooled.min_groups(50, 100) == 5 and pooled.min_groups(20, 100) == 11 and pooled.min_groups(5, 10) == 10
    assert _groups([1000] * 5, [5.0] * 5, 5) == [[0], [1], [2], [3], [4]]  # G = J: nothing pooled
    parts = _groups([1000] * 100, [5.0] * 100, 50)
    assert len(parts) == 5 and sorted(sum(parts, [])) == list(range(100)) and {len(p) for p in parts} == {20}
    # one large party, four of 100 rows (noise per row 100 times the large one's), twenty of 1000
    parts = _groups([10000] + [100] * 4 + [1000] * 20, [5.0] * 25, 50)
    assert [0] in parts and [1, 2, 3, 4] in parts and len(parts) == 6
    assert all(set(p) <= set(range(5, 25)) for p in parts if p[0] >= 5)
    # within a factor of 2 of noise per row the parties pool; the rows of the groups are balanced
    parts = _groups([1000, 1500, 1900, 1200, 1100, 1000, 1800, 1300], [5.0] * 8, 200)
    assert len(parts) == 2
    rows = [sum([1000, 1500, 1900, 1200, 1100, 1000, 1800, 1300][j] for j in p) for p in parts]
    assert max(rows) - min(rows) <= 300
    # noiseless parties in a bin of their own
    assert _groups([1000] * 4, [0.0, 0.0, 5.0, 5.0], 200) == [[0, 1], [2, 3]]


def test_pool_data_is_the_release_of_the_sums():
    st = stack(parties(d=3, J=5, n=200))
    data = model_data(st)
    parts = [np.array([0, 2]), np.array([1, 3, 4])]
    out = pooled.pool_data(data, parts)
    for g, p in enumerate(parts):
        np.testing.assert_allclose(out.S_tilde[g], np.asarray(data.S_tilde)[p].sum(0))
        np.testing.assert_allclose(out.z_tilde[g], np.asarray(data.z_tilde)[p].sum(0))
        assert out.n[g] == np.asarray(data.n)[p].sum()
        np.testing.assert_allclose(out.sigma_S[g], np.sqrt((np.asarray(data.sigma_S)[p] ** 2).sum()))
        np.testing.assert_allclose(out.sigma_z[g], np.sqrt((np.asarray(data.sigma_z)[p] ** 2).sum()))
    batched = jax.tree.map(lambda a: np.stack([a, a]), data)  # leading batch axes, as SBC's
    np.testing.assert_allclose(pooled.pool_data(batched, parts).S_tilde[1], out.S_tilde)
    with pytest.raises(ValueError, match="partition"):
        pooled.pool_data(data, [np.array([0, 1])])


def test_the_compile_notice_names_the_groups_not_the_parties():
    from bayes_dpreg.samplers import normalx_clt
    from bayes_dpreg.samplers.base import _describe

    st = stack(parties(d=3, J=5, n=200))
    data = pooled.pool_data(model_data(st), [np.array([0, 2]), np.array([1, 3, 4])])
    notice = _describe(normalx_clt.KERNEL, data, st.J)
    assert notice == "the sampler normalx_clt for the 5 parties' releases summed in 2 groups, d = 3"
    assert _describe(normalx_clt.KERNEL, model_data(st), st.J) == "the sampler normalx_clt for J = 5 parties, d = 3"


@pytest.mark.filterwarnings("ignore::bayes_dpreg.ConvergenceWarning")  # short chains: only their equality is tested
def test_where_no_parties_pool_it_is_normalx_clt():
    stats = parties(d=3, J=4, n=300)
    a = bd.fit(stats, "normalx-clt", seed=3, num_samples=100, num_warmup=100, num_chains=2)
    b = bd.fit(stats, "normalx-pooled", seed=3, num_samples=100, num_warmup=100, num_chains=2)
    np.testing.assert_array_equal(a.posterior["theta"].values, b.posterior["theta"].values)
    assert b.posterior.attrs["pooled_groups"] == "0; 1; 2; 3"


def test_sbc_where_parties_pool(monkeypatch):
    """Simulated from the exact normalX model with four parties summed in two groups (``POOL_DOF``
    lowered so that d = 2 pools): the ranks of ``theta``, ``sigma2``, ``Sigma_x`` are uniform."""
    monkeypatch.setattr(pooled, "POOL_DOF", 2)
    assert _groups([1500] * 4, [200.0] * 4, 2) == [[0, 2], [1, 3]]
    pvalues = clt_sbc_pvalues("normalx-pooled", jax.random.key(11), [1500, 1500, 1500, 1500])
    assert min(pvalues.values()) > 1e-3, pvalues
