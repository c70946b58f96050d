"""Tests of the Miao, Ding & Wu matrix-masking module (bayes_dpreg.systems.masking).

Every reference below is computed directly with NumPy on the unmasked ``X + Delta``
(lstsq for OLS, ``solve`` for ridge, ``eigh`` for PCA, an explicit loop for k-fold CV),
never with the module's own helpers.
"""

from __future__ import annotations

import dataclasses
import time
import tracemalloc

import numpy as np
import pytest

from bayes_dpreg.systems import masking as mm

RTOL = 1e-8


def _data(n: int, p: int, seed: int = 0, noise: float = 0.5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    X[:, 0] = 1.0  # intercept column
    beta = rng.standard_normal(p)
    y = X @ beta + noise * rng.standard_normal(n)
    return X, y


def _split_cols(X, K):
    return np.array_split(X, K, axis=1)


def _split_rows(X, y, sizes):
    cut = np.cumsum(sizes)[:-1]
    return np.split(X, cut), np.split(y, cut)


def _ols(X, y):
    return np.linalg.lstsq(X, y, rcond=None)[0]


def _ridge(X, y, lam):
    return np.linalg.solve(X.T @ X + lam * np.eye(X.shape[1]), X.T @ y)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _plain_cv(X, y, folds, lambdas):
    """Plain k-fold CV: folds are lists of row-index arrays."""
    n = X.shape[0]
    out = []
    for lam in lambdas:
        sse = 0.0
        for test in folds:
            train = np.setdiff1d(np.arange(n), test)
            b = _ridge(X[train], y[train], lam) if lam > 0 else _ols(X[train], y[train])
            r = y[test] - X[test] @ b
            sse += r @ r
        out.append(sse / n)
    return np.array(out)


# ----------------------------------------------------------------------------- vertical / horizontal fits
@pytest.mark.parametrize("K", [1, 2, 3, 5])
@pytest.mark.parametrize("noise_sd", [0.0, 0.7])
def test_vertical_ols_and_ridge_equal_plain(K, noise_sd):
    X, y = _data(700, 11, seed=K)
    prob, keys = mm.vertical_mask(_split_cols(X, K), y, seed=10 + K, noise_sd=noise_sd,
                                  block_size=64, response_party=K - 1)
    Xn = np.hstack(keys.noisy)
    assert (noise_sd == 0) == np.array_equal(Xn, X)
    assert prob.X.shape == X.shape and prob.Z.shape == (700, 3)
    # the released design is really masked
    assert np.max(np.abs(prob.X - Xn)) > 0.5
    fit = mm.masked_fit(prob, keys)
    assert _rel(fit.beta, _ols(Xn, y)) < RTOL
    assert fit.verified and fit.max_deviation < 1e-9
    np.testing.assert_allclose(fit.beta_s1, 1.0, atol=1e-9)
    for lam in (0.3, 25.0):
        rf = mm.masked_fit(prob, keys, lam)
        assert _rel(rf.beta, _ridge(Xn, y, lam)) < RTOL
        assert rf.verified  # augmented pseudo-data: beta_s1 == 1 for ridge too
        assert _rel(rf.beta_s2, _ridge(Xn, keys.responses[:, 2], lam)) < RTOL


@pytest.mark.parametrize("sizes", [[500], [260, 340], [150, 220, 180, 250, 120]])
@pytest.mark.parametrize("noise_sd", [0.0, 0.4])
def test_horizontal_ols_and_ridge_equal_plain(sizes, noise_sd):
    X, y = _data(sum(sizes), 9, seed=len(sizes))
    Xp, yp = _split_rows(X, y, sizes)
    prob, keys = mm.horizontal_mask(Xp, yp, seed=3, noise_sd=noise_sd, block_size=50)
    Xn = np.vstack(keys.noisy)
    K = len(sizes)
    assert prob.n_response_columns == 3 * K
    Zb = prob.z_blockdiag()  # block-diagonal stacking of the masked responses
    for i, rows in enumerate(prob.party_rows):
        off = np.delete(Zb[rows], np.s_[3 * i:3 * i + 3], axis=1)
        assert not off.any()
    fit = mm.masked_fit(prob, keys)
    assert _rel(fit.beta, _ols(Xn, y)) < RTOL
    assert fit.verified
    for lam in (0.5, 40.0):
        rf = mm.masked_fit(prob, keys, lam)
        assert _rel(rf.beta, _ridge(Xn, y, lam)) < RTOL
        assert rf.verified


def test_ridge_when_p_exceeds_n():
    X, y = _data(40, 60, seed=5)
    prob, keys = mm.vertical_mask(_split_cols(X, 3), y, seed=2, block_size=8)
    with pytest.raises(ValueError, match="positive definite"):
        mm.masked_fit(prob, keys)  # OLS impossible
    rf = mm.masked_fit(prob, keys, 2.0)
    assert _rel(rf.beta, _ridge(X, y, 2.0)) < RTOL and rf.verified


def test_paper_ridge_penalty_erratum():
    """The paper's penalty lam (B^T B)^{-1} does not decrypt to ridge; lam B^T B does."""
    X, y = _data(400, 6, seed=8)
    prob, keys = mm.vertical_mask(_split_cols(X, 2), y, seed=4, block_size=40)
    lam = 5.0
    G = prob.X.T @ prob.X
    rhs = prob.X.T @ prob.Z
    wrong = np.linalg.solve(G + lam * np.linalg.inv(prob.BtB), rhs)
    right = np.linalg.solve(G + lam * prob.BtB, rhs)
    ref = _ridge(X, y, lam)
    assert _rel(mm.decrypt(right, keys).beta, ref) < RTOL
    assert _rel(mm.decrypt(wrong, keys).beta, ref) > 1e-3


def test_seeds_reproducible():
    X, y = _data(300, 5)
    a, _ = mm.vertical_mask(_split_cols(X, 2), y, seed=7, block_size=30)
    b, _ = mm.vertical_mask(_split_cols(X, 2), y, seed=7, block_size=30)
    c, _ = mm.vertical_mask(_split_cols(X, 2), y, seed=8, block_size=30)
    np.testing.assert_array_equal(a.X, b.X)
    assert not np.allclose(a.X, c.X)


# ----------------------------------------------------------------------------- verification
def _vertical(K=3, seed=0):
    X, y = _data(600, 9, seed=seed)
    return mm.vertical_mask(_split_cols(X, K), y, seed=seed + 1, noise_sd=0.2, block_size=50, n_folds=4)


def test_tampered_party_block_is_detected():
    prob, keys = _vertical()
    assert mm.masked_fit(prob, keys).verified
    cols = keys.column_slices[1]
    Xt = prob.X.copy()
    Xt[:, cols] *= 1.001  # party 1 rescales its masked block
    fit = mm.masked_fit(dataclasses.replace(prob, X=Xt), keys)
    assert not fit.verified and fit.max_deviation > 1e-5
    Xt = prob.X.copy()
    Xt[:100, cols.start] += 0.01  # party 1 perturbs a few masked entries
    assert not mm.masked_fit(dataclasses.replace(prob, X=Xt), keys).verified
    rf = mm.masked_fit(dataclasses.replace(prob, X=Xt), keys, 3.0)
    assert not rf.verified  # our ridge check also catches it (the paper's Y_s1 = 0 would not)


def test_tampered_response_and_server_result_are_detected():
    prob, keys = _vertical()
    Zt = prob.Z.copy()
    Zt[:, 0] += 0.05 * np.random.default_rng(1).standard_normal(prob.n)
    assert not mm.masked_fit(dataclasses.replace(prob, Z=Zt), keys).verified
    beta_star = mm.server_solve(prob)
    assert mm.decrypt(beta_star, keys).verified
    for j in range(3):  # a wrong coefficient in any column is caught through C
        bad = beta_star.copy()
        bad[4, j] += 1e-3
        assert not mm.decrypt(bad, keys).verified
    bad_ridge = mm.server_solve(prob, 2.0)
    bad_ridge[0, 0] *= 1.01
    assert not mm.decrypt(bad_ridge, keys, lam=2.0).verified


def test_horizontal_tampering_is_detected():
    X, y = _data(600, 7, seed=3)
    Xp, yp = _split_rows(X, y, [200, 250, 150])
    prob, keys = mm.horizontal_mask(Xp, yp, seed=5, block_size=40, n_folds=3)
    assert mm.masked_fit(prob, keys).verified
    Xt = prob.X.copy()
    Xt[prob.party_rows[2]] *= 1.001
    assert not mm.masked_fit(dataclasses.replace(prob, X=Xt), keys).verified
    assert not mm.masked_cv(dataclasses.replace(prob, X=Xt), keys, [0.0, 1.0]).verified
    bad = mm.server_solve(prob)
    bad[2, 4] += 1e-3  # wrong coefficient in party 1's column block
    assert not mm.decrypt(bad, keys).verified


# ----------------------------------------------------------------------------- cross-validation
@pytest.mark.parametrize("K,k", [(1, 5), (3, 4)])
def test_vertical_cv_equals_plain(K, k):
    X, y = _data(530, 8, seed=K + k)
    prob, keys = mm.vertical_mask(_split_cols(X, K), y, seed=6, noise_sd=0.3, block_size=40, n_folds=k)
    Xn = np.hstack(keys.noisy)
    edges = mm.kfold_edges(530, k)
    folds = [np.arange(edges[f], edges[f + 1]) for f in range(k)]
    lambdas = [0.0, 0.5, 5.0, 100.0]
    cv = mm.masked_cv(prob, keys, lambdas)
    ref = _plain_cv(Xn, y, folds, lambdas)
    assert _rel(cv.cv_mse, ref) < RTOL
    assert cv.verified and cv.s1_max_residual < 1e-7
    assert cv.best_lambda == lambdas[int(np.argmin(ref))]
    # mask blocks never cross a fold edge
    starts, sizes = keys.A0.layout
    for e in edges[1:-1]:
        assert e in set(starts.tolist())
    # tampering a masked block shows up in the held-out pseudo-response
    Xt = prob.X.copy()
    Xt[:, -1] *= 1.001
    assert not mm.masked_cv(dataclasses.replace(prob, X=Xt), keys, lambdas).verified


def test_horizontal_cv_equals_plain():
    sizes = [170, 230, 140]
    X, y = _data(sum(sizes), 6, seed=2)
    Xp, yp = _split_rows(X, y, sizes)
    k = 4
    prob, keys = mm.horizontal_mask(Xp, yp, seed=9, noise_sd=0.25, block_size=20, n_folds=k)
    Xn = np.vstack(keys.noisy)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    folds = []
    for f in range(k):  # fold f = union of each party's f-th contiguous chunk
        idx = []
        for i, m in enumerate(sizes):
            e = mm.kfold_edges(m, k)
            idx.append(offs[i] + np.arange(e[f], e[f + 1]))
        folds.append(np.concatenate(idx))
    lambdas = [0.0, 2.0, 50.0]
    cv = mm.masked_cv(prob, keys, lambdas)
    assert _rel(cv.cv_mse, _plain_cv(Xn, y, folds, lambdas)) < RTOL
    assert cv.verified


# ----------------------------------------------------------------------------- PCA
def _match_up_to_sign(A, B):
    for j in range(A.shape[1]):
        s = np.sign(A[:, j] @ B[:, j])
        assert s != 0
        np.testing.assert_allclose(s * A[:, j], B[:, j], atol=1e-8 * np.max(np.abs(B[:, j])))


@pytest.mark.parametrize("partition", ["vertical", "horizontal"])
def test_pca_generalized_eigenproblem_equals_plain(partition):
    rng = np.random.default_rng(4)
    n, p = 500, 7
    X = rng.standard_normal((n, p)) @ np.diag(np.linspace(3, 0.5, p))
    if partition == "vertical":
        prob, keys = mm.vertical_mask(_split_cols(X, 3), rng.standard_normal(n), seed=1, noise_sd=0.1,
                                      block_size=30)
        Xn = np.hstack(keys.noisy)
    else:
        Xp, yp = _split_rows(X, rng.standard_normal(n), [180, 320])
        prob, keys = mm.horizontal_mask(Xp, yp, seed=1, noise_sd=0.1, block_size=30)
        Xn = np.vstack(keys.noisy)
    w, V = np.linalg.eigh(Xn.T @ Xn)
    w, V = w[::-1], V[:, ::-1]
    pca = mm.masked_pca(prob, keys)
    np.testing.assert_allclose(pca.eigenvalues, w, rtol=1e-9)
    _match_up_to_sign(pca.components, V)
    _match_up_to_sign(pca.scores, Xn @ V)
    top = mm.masked_pca(prob, keys, n_components=2)
    np.testing.assert_allclose(top.eigenvalues, w[:2], rtol=1e-9)
    # erratum: a plain eigendecomposition of X*^T X* (paper's Algorithm 2) gives other eigenvalues
    w_plain = np.linalg.eigvalsh(prob.X.T @ prob.X)[::-1]
    assert np.max(np.abs(w_plain - w) / w) > 0.1


# ----------------------------------------------------------------------------- block masks
def test_block_mask_is_orthogonal_and_respects_boundaries():
    mask = mm.BlockOrthogonalMask(n=203, block_size=16, seed=11, boundaries=(50, 130))
    starts, sizes = mask.layout
    assert sizes.sum() == 203 and starts[0] == 0
    assert {50, 130} <= set(starts.tolist())
    assert sizes.min() >= 16 and sizes.max() < 32
    A = mask.apply(np.eye(203))
    np.testing.assert_allclose(A.T @ A, np.eye(203), atol=1e-12)
    # block-diagonal: nothing outside the diagonal blocks
    inside = np.zeros((203, 203), dtype=bool)
    for s, b in zip(starts, sizes):
        inside[s:s + b, s:s + b] = True
    assert not A[~inside].any()
    np.testing.assert_allclose(A[starts[2]:starts[2] + sizes[2], starts[2]:starts[2] + sizes[2]], mask.block(2))
    # powers and transposes
    A3 = mask.apply(np.eye(203), [1, 2])
    np.testing.assert_allclose(A3, A @ A @ A, atol=1e-12)
    M = np.random.default_rng(0).standard_normal((203, 4))
    np.testing.assert_allclose(mask.apply(mask.apply(M, 3), 3, transpose=True), M, atol=1e-12)
    # a small segment (< block_size) becomes one block
    assert mm.block_layout(10, 16)[1].tolist() == [10]


def test_large_n_memory_is_linear():
    """n = 2e5: the n x n mask (320 GB dense) is never formed; peak memory ~ a few copies of the data."""
    n, p, b = 200_000, 6, 32
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, p))
    y = X @ np.arange(1.0, p + 1) + rng.standard_normal(n)
    t0 = time.perf_counter()
    tracemalloc.start()
    try:
        prob, keys = mm.vertical_mask([X[:, :3], X[:, 3:]], y, seed=1, block_size=b)
        fit = mm.masked_fit(prob, keys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - t0
    assert fit.verified
    assert _rel(fit.beta, _ols(X, y)) < RTOL
    data_bytes = n * (p + 3) * 8
    assert peak < 8 * data_bytes, f"peak {peak / 1e6:.0f} MB"
    # the orthogonal mask preserves column norms of the masked responses' unmasked part
    np.testing.assert_allclose(np.linalg.norm(prob.Z, axis=0), np.linalg.norm(keys.responses @ keys.C, axis=0),
                               rtol=1e-10)
    assert elapsed < 30


# ----------------------------------------------------------------------------- bad input
def test_bad_inputs():
    X, y = _data(100, 6)
    good = _split_cols(X, 2)
    with pytest.raises(ValueError, match="K .*>= 1"):
        mm.vertical_mask([], y, seed=0)
    with pytest.raises(ValueError, match="K .*>= 1"):
        mm.horizontal_mask([], [], seed=0)
    with pytest.raises(ValueError, match="party 1 has 99 rows"):
        mm.vertical_mask([X[:, :3], X[:99, 3:]], y, seed=0)
    with pytest.raises(ValueError, match="party 1 has 5 columns"):
        mm.horizontal_mask([X[:50], X[50:, :5]], [y[:50], y[50:]], seed=0)
    for bs in (0, 1, 2.5, True, -3):
        with pytest.raises(ValueError, match="block_size"):
            mm.vertical_mask(good, y, seed=0, block_size=bs)
    with pytest.raises(ValueError, match="block_size"):
        mm.BlockOrthogonalMask(10, 1, 0)
    Xnan = X.copy()
    Xnan[3, 2] = np.nan
    with pytest.raises(ValueError, match="party 0 data contains NaN"):
        mm.vertical_mask([Xnan[:, :3], X[:, 3:]], y, seed=0)
    ynan = y.copy()
    ynan[0] = np.inf
    with pytest.raises(ValueError, match="y contains NaN"):
        mm.vertical_mask(good, ynan, seed=0)
    with pytest.raises(ValueError, match=r"ys\[1\] contains NaN"):
        mm.horizontal_mask([X[:50], X[50:]], [y[:50], ynan[50:] * 0 + np.nan], seed=0)
    with pytest.raises(ValueError, match="2-D"):
        mm.vertical_mask([X[:, 0], X[:, 1:]], y, seed=0)
    with pytest.raises(ValueError, match="y has 99 entries"):
        mm.vertical_mask(good, y[:99], seed=0)
    with pytest.raises(ValueError, match="ys has 1 response vectors"):
        mm.horizontal_mask([X[:50], X[50:]], [y[:50]], seed=0)
    with pytest.raises(ValueError, match="response_party"):
        mm.vertical_mask(good, y, seed=0, response_party=2)
    with pytest.raises(ValueError, match="n_folds"):
        mm.vertical_mask(good, y, seed=0, n_folds=101)
    with pytest.raises(ValueError, match="noise_sd"):
        mm.vertical_mask(good, y, seed=0, noise_sd=-0.1)
    with pytest.raises(ValueError, match="seed"):
        mm.vertical_mask(good, y, seed=-1)
    prob, keys = mm.vertical_mask(good, y, seed=0, block_size=20, n_folds=3)
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="ridge lambda"):
            mm.masked_fit(prob, keys, bad)
    with pytest.raises(ValueError, match="ridge lambda"):
        mm.masked_cv(prob, keys, [0.0, -2.0])
    with pytest.raises(ValueError, match="masked estimate has shape"):
        mm.decrypt(np.zeros((6, 4)), keys)
    with pytest.raises(ValueError, match="n_components"):
        mm.masked_pca(prob, keys, n_components=7)
    with pytest.raises(ValueError, match="mask is 100 x 100"):
        keys.A0.apply(np.zeros((99, 2)))
    single, skeys = mm.vertical_mask(good, y, seed=0)
    with pytest.raises(ValueError, match="n_folds >= 2"):
        mm.masked_cv(single, skeys, [1.0])
    noB, nkeys = mm.vertical_mask(good, y, seed=0, release_btb=False)
    with pytest.raises(ValueError, match="release_btb"):
        mm.masked_fit(noB, nkeys, 1.0)


def test_docs_state_no_epsilon():
    doc = mm.__doc__
    assert "no epsilon" in doc.lower() and "no DP calibration" in doc
    for fn in (mm.vertical_mask, mm.horizontal_mask):
        assert "no epsilon" in fn.__doc__
    assert not any("epsilon" in f for f in mm.DecryptedFit._fields + mm.CVResult._fields)
