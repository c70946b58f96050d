"""The typed statistics object: what fit needs from the releases, validated once."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.stats import stack_stats

KW = dict(epsilon=1.0, delta=1e-5, x_bound=4.0, y_bound=8.0)


def _parties(J: int = 3, **kw):
    rng = np.random.default_rng(0)
    out = []
    for j in range(J):
        X = rng.normal(size=(200, 2))
        y = X @ np.array([1.0, -0.5]) + rng.normal(size=200)
        out.append(bd.release(X, y, name=f"site{j}", columns=["age", "dose"], **KW, **kw))
    return out


def test_stacked_statistics_carry_the_labels_fit_needs():
    stats = _parties()
    st = stack_stats(stats)
    assert st.mechanisms == ("ssp",) * 3
    assert st.parties == ("site0", "site1", "site2")
    assert st.feature_names() == ("age", "dose")
    assert st.release_ids == tuple(s.release_id for s in stats)
    assert not st.intercept
    assert st.S.shape == (3, 2, 2) and st.J == 3 and st.d == 2


def test_parties_that_disagree_are_refused_by_name():
    a, b = _parties(2)
    b2 = bd.release(np.ones((50, 2)) * 0.1, np.ones(50), name="other", columns=["dose", "age"], **KW)
    with pytest.raises(ValueError, match="different feature names"):
        stack_stats([a, b2]).feature_names()
    c = bd.release(np.ones((50, 1)) * 0.1, np.ones(50), intercept=True, **KW)
    with pytest.raises(ValueError, match="intercept=True and some without"):
        stack_stats([a, c])
    del b


def test_arrays_are_a_numeric_pytree_for_batching():
    st = stack_stats(_parties(2)).arrays()
    leaves = jax.tree.leaves(st)
    assert all(np.issubdtype(np.asarray(x).dtype, np.number) or np.asarray(x).dtype == bool for x in leaves)
    batched = jax.tree.map(lambda *a: np.stack(a), st, st)
    assert batched.S.shape == (2, 2, 2, 2)
