"""The directions of feature space the release cannot see (bayes_dpreg.posterior.diagnostics.resolution)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.posterior.diagnostics.resolution import noise_level, release_resolution, resolution_summary
from bayes_dpreg.stats import stack_stats


def _collinear(eps: float, gap: float = 0.01, n: int = 2000, J: int = 3, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n * J, 3))
    X = np.column_stack([z[:, 0], z[:, 0] + gap * z[:, 1], z[:, 2]])
    X /= np.abs(X).max()
    y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=n * J), -1, 1)
    xb = float(np.linalg.norm(X, axis=1).max())
    return [
        bd.release(
            X[j * n : (j + 1) * n],
            y[j * n : (j + 1) * n],
            epsilon=eps,
            delta=1e-5,
            x_bound=xb,
            y_bound=1.0,
            seed=j,
            name=f"p{j}",
        )
        for j in range(J)
    ]


def test_noise_level_bounds_the_spectral_norm_of_the_release_noise():
    rng = np.random.default_rng(1)
    for d in (1, 2, 5, 20):
        norms = []
        for _ in range(400):
            A = np.triu(rng.normal(size=(d, d)))
            norms.append(np.abs(np.linalg.eigvalsh(A + np.triu(A, 1).T)).max())
        assert np.quantile(norms, 0.95) < noise_level([1.0], d)


def test_a_nearly_collinear_pair_is_named_and_warned():
    # n_j = 6000: the paper's inverse-Wishart prior of Sigma_x, which rules out collinear features,
    # narrows the unresolved direction to a data share of 0.90-0.91 (fit seeds 0-5), above the
    # warning's 0.5; the default's uniform LKJ(1) correlations leave most of that interval to the prior
    # (0.23-0.41 over seeds 0-5 and over n_j, gap and eps around these), and are not warned here.
    # (LKJ(2), the default before 2026-11-28, gave 0.47-0.59: too near the threshold for a test.)
    stats = _collinear(eps=1.0, n=6000)
    res = release_resolution(stack_stats(stats), ["a", "b", "c"])
    assert res.unresolved == [0]
    u = res.vectors[:, 0]
    assert abs(abs(u @ np.array([1, -1, 0]) / np.sqrt(2)) - 1) < 0.01  # the difference of the pair
    kw = dict(coef_names=["a", "b", "c"], num_samples=300, num_warmup=300)
    with pytest.warns(bd.UnresolvedDirectionWarning, match=r"-?0\.\d\d a [+-] 0\.\d\d b"):
        idata = bd.fit(stats, prior=bd.Prior(Sigma_x_prior="iw"), **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bd.SeededReleaseWarning)
        warnings.simplefilter("error", bd.UnresolvedDirectionWarning)
        default = bd.fit(stats, **kw)
    for fitted in (idata, default):  # reported in either case: the release alone finds the direction
        (r,) = bd.unresolved_directions(fitted)
        w = np.array(r["weights"])
        assert abs(abs(w @ np.array([1, -1, 0]) / np.sqrt(2)) - 1) < 0.01 and r["variance"] < r["noise"]
        assert r["combination"] in resolution_summary(fitted.posterior.attrs)
    share = [bd.unresolved_directions(f)[0]["data_share"] for f in (idata, default)]
    assert share[0] > 0.5 > share[1], share


def test_a_release_that_resolves_every_direction_stays_quiet():
    stats = _collinear(eps=1e4, gap=0.5)
    assert release_resolution(stack_stats(stats)).unresolved == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", bd.UnresolvedDirectionWarning)
        idata = bd.fit(stats, method="fast")
    assert bd.unresolved_directions(idata) == []
    assert "every direction" in resolution_summary(idata.posterior.attrs)


def test_the_warning_names_the_first_directions_and_counts_the_rest():
    """With more borrowed directions than ``LISTED``, the message names the ``LISTED`` of smallest
    released variance and counts the others; the attributes keep them all."""
    import arviz as az

    from bayes_dpreg.posterior.diagnostics import resolution
    from bayes_dpreg.samplers import get

    rng = np.random.default_rng(1)
    d, n = 6, 200
    X = rng.normal(size=(n, d)) / 10
    stats = [
        bd.release(X, np.clip(X.sum(1), -1, 1), epsilon=0.05, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=j)
        for j in range(2)
    ]
    st = stack_stats(stats)
    theta = 1e-3 * rng.normal(size=(2, 50, d))  # far narrower than the prior along every direction
    names = [f"x{k}" for k in range(d)]
    idata = az.from_dict(posterior={"theta": theta}, coords={"coef": names}, dims={"theta": ["coef"]})
    found = resolution.check(idata, st, get("normalx-clt"), bd.Prior(C=1.0, b=0.01, Lambda=1.0).resolve(d, None))
    borrowed = [r for r in json.loads(found.attrs["unresolved_directions"]) if r["data_share"] > 0.5]
    assert len(borrowed) > resolution.LISTED
    assert found.message.count("released variance") == resolution.LISTED
    assert f"and {len(borrowed) - resolution.LISTED} more" in found.message
