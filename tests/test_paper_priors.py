"""The prior variants of ``studies/paper_priors.py`` and ``studies.coverage.matched_prior``: each
replaces exactly the factor it names by the paper simulation's generating one."""

import dataclasses

import numpy as np
import pytest

FACTORS = {"sigma2": {"a", "b"}, "theta": {"m", "C"}, "sigma_x": {"Lambda", "kappa", "Sigma_x_prior"}}


def _differs(a, b) -> set[str]:
    """The fields in which two priors differ (``eta`` not where one is an inverse Wishart: it has no effect there)."""
    out = set()
    for f in dataclasses.fields(a):
        if f.name == "eta" and "iw" in (a.Sigma_x_prior, b.Sigma_x_prior):
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if type(x) is not type(y) or not np.array_equal(np.asarray(x, dtype=object), np.asarray(y, dtype=object)):
            out.add(f.name)
    return out


def _release(d: int, y_bound: float = 3.0) -> list:
    """A small release of ``d`` features declared with ``y_bound`` (what the studied sigma_y^2 scale reads)."""
    import bayes_dpreg as bd

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (400, d))
    return [bd.release(X, np.clip(X.sum(1), -1, 1), epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=y_bound, seed=1)]


@pytest.mark.parametrize("d", [2, 5])
def test_variants_replace_one_factor(d):
    import bayes_dpreg as bd
    from studies import coverage as cov
    from studies import paper_priors as pp

    cell = next(c for c in cov.cells("paper") if c["id"] == f"paper-d{d}-J5-eps5")
    stats = _release(d)
    # the default these studies measured: LKJ(2) and sigma_y^2 ~ IG(1, (y_bound / 20)^2) (bd.Prior() has LKJ(1) and
    # IG(1, (y_bound / 10)^2) now)
    default = bd.Prior(eta=pp.STUDIED_ETA, b=(3.0 / 20.0) ** 2)
    vp = lambda variant, rep=3, cell=cell: pp.variant_prior(variant, cell, rep, 2026, stats=stats)
    assert _differs(vp("default"), default) == set()
    for variant, fields in FACTORS.items():
        assert _differs(vp(variant), default) == fields, variant
    for variant, eta in (("eta1", 1.0), ("eta2", 2.0)):  # the separation prior's correlations by name
        named = vp(variant)
        assert named.eta == eta and _differs(named, default) == ({"eta"} if default.eta != eta else set())
    # the default since 2026-12-06 and its oracle: sigma_y^2's scale is y_bound / 10, nothing else moves
    assert vp("sigma2_b10") == dataclasses.replace(default, eta=1.0, b=(3.0 / 10.0) ** 2)
    assert _differs(vp("sigma_x_b10"), dataclasses.replace(vp("sigma_x"), b=(3.0 / 10.0) ** 2)) == set()
    assert _differs(vp("sigma_x_b10"), vp("sigma_x")) == {"b"}
    with pytest.raises(ValueError, match="give stats"):
        pp.variant_prior("default", cell, 3, 2026)
    matched = next(c for c in cov.cells("real") if c["prior"] == "matched")  # its theta and sigma_y priors, kept
    assert vp("eta1", 0, matched) == bd.Prior(**cov.REAL_MATCHED_PRIOR, eta=1.0)
    assert vp("default", 0, matched) == bd.Prior(**cov.REAL_MATCHED_PRIOR, eta=2.0)
    full = vp("all")
    assert _differs(full, default) == set().union(*FACTORS.values())
    assert full.b / (full.a - 1) == pytest.approx(1.0)  # the mean of sigma_y^2 ~ IG(a, b): the truth, 1
    np.testing.assert_array_equal(full.C, np.eye(d))
    np.testing.assert_array_equal(full.m, np.zeros(d))
    assert (full.kappa, full.Sigma_x_prior) == (d + 1.0, "iw")
    # the generating Sigma_x prior is the replication's own IW(V^T V, d + 1): V the first draws of its data stream
    from bayes_dpreg.datasets import paper_scale_matrix

    own = paper_scale_matrix(d, np.random.default_rng(cov.streams(cell, 3, 2026)[0]))
    np.testing.assert_array_equal(full.Lambda, own)
    assert not np.array_equal(own, cov.matched_prior(cell, 4, 2026).Lambda)
    assert cov.matched_prior(next(c for c in cov.cells("small")), 0, 2026) is None


def test_the_studied_sigma2_scale_resolves_as_fit_resolves_auto():
    """A variant's pinned ``b`` is the float ``fit`` makes of ``b = "auto"`` with the same divisor, so rows
    fitted before the default moved reproduce bit for bit."""
    import bayes_dpreg as bd
    from bayes_dpreg.model.prior import prior_scales
    from bayes_dpreg.stats import stack_stats
    from studies import coverage as cov
    from studies import paper_priors as pp

    cell = next(c for c in cov.cells("paper") if c["id"] == "paper-d2-J5-eps5")
    stats = _release(2, y_bound=2.7)
    scales = prior_scales(stack_stats(stats))
    new = pp.variant_prior("sigma2_b10", cell, 0, 2026, stats=stats)
    assert new.b == (scales.y_bound / 10.0) ** 2
    assert new.b == bd.Prior().autoscaled(scales).b  # the default's sigma_y^2 prior since 2026-12-06
    old = pp.variant_prior("eta1", cell, 0, 2026, stats=stats)
    assert old.b == (scales.y_bound / pp.STUDIED_SIGMA2_DIVISOR) ** 2 == new.b / 4.0


def test_run_chunk_fits_each_method_with_its_prior(monkeypatch):
    """``run_chunk`` gives ``oracle-clt`` the generating ``Sigma_x`` prior only, ``matched-clt`` every
    generating prior and ``normalx-clt`` the cell's default (the fit itself is replaced by a recorder)."""
    import bayes_dpreg as bd
    from studies import coverage as cov

    seen = {}

    def record(stats, method, prior, seed):
        seen[len(seen)] = (method, prior)
        raise ValueError("recorded")

    monkeypatch.setattr(bd, "fit", record)
    cell = next(c for c in cov.cells("paper") if c["id"] == "paper-d2-J1-eps5")
    rows = cov.run_chunk(cell, [0], ("normalx-clt", "oracle-clt", "matched-clt"), 2026, str(cov.DATA_DIR))
    assert [r["method"] for r in rows] == ["normalx-clt", "oracle-clt", "matched-clt"]
    (m0, p0), (m1, p1), (m2, p2) = (seen[i] for i in range(3))
    assert (m0, m1, m2) == ("normalx-clt", "normalx-clt", "normalx-clt")
    assert p0 == dataclasses.replace(bd.Prior(), sigma2_max=np.inf)
    assert _differs(p1, p0) == FACTORS["sigma_x"]
    assert _differs(p2, p0) == set().union(*FACTORS.values())


def test_pooled_pairs_with_eta2_where_default_is_not_fitted():
    from studies import paper_priors as pp

    row = lambda rep, v, c90, sq: dict(
        cell="c", rep=rep, variant=v, cover90=c90, cover50=0.5, sq_error=sq, divergences=0, seconds=2.0 + c90
    )
    rows = [row(r, "eta2", 0.0, 1.0) for r in range(4)] + [row(r, "eta1", 1.0, 4.0) for r in range(3)]
    text = pp.pooled(rows, ["c"], ("eta1", "eta2"))
    assert "paired with `eta2`" in text
    assert "| eta1 | 3 | 1.000 | +1.000 ± 0.000 | 0.500 | 2.000 | 0.000 | 3.00 |" in text
    # another reference by name
    text = pp.pooled(rows, ["c"], ("eta1", "eta2"), ref="eta1")
    assert "paired with `eta1`" in text
    assert "| eta2 | 3 | 0.000 | -1.000 ± 0.000 | 0.500 | 0.500 | 0.000 | 2.00 |" in text


def test_run_fits_each_variant_with_its_method_on_one_release(monkeypatch):
    """``pooled`` is fitted by ``normalx-pooled``, the others by ``normalx-clt``, all on the release
    of the replication made once (the fit itself is replaced by a recorder)."""
    import bayes_dpreg as bd
    from studies import coverage as cov
    from studies import paper_priors as pp

    seen, releases = [], []

    def record(stats, method, prior, seed):
        seen.append((method, id(stats)))
        raise ValueError("recorded")

    made = cov._releases
    monkeypatch.setattr(cov, "_releases", lambda *a, **k: releases.append(1) or made(*a, **k))
    monkeypatch.setattr(bd, "fit", record)
    cell = next(c for c in cov.cells("paper") if c["id"] == "paper-d2-J1-eps5")
    rows = pp.run(cell, [0], ("eta1", "pooled", "eta2"), 2026, str(cov.DATA_DIR))
    assert [(r["variant"], r["method"]) for r in rows] == [
        ("eta1", "normalx-clt"),
        ("pooled", "normalx-pooled"),
        ("eta2", "normalx-clt"),
    ]
    assert [m for m, _ in seen] == ["normalx-clt", "normalx-pooled", "normalx-clt"]
    assert len(releases) == 1 and len({s for _, s in seen}) == 1


def test_the_tiny_suite_is_where_fit_takes_the_exact_sampler():
    """``studies.coverage``'s ``tiny`` cells measure the default where ``fit`` takes ``normalx-nuts`` (every
    party below ``max(100, 30 d)`` rows), the ``small`` suite's where it takes ``normalx-clt``; both
    families, and an oracle prior for each (the sampler given the generating ``Sigma_x`` prior)."""
    from bayes_dpreg.samplers import default_method
    from studies import coverage as cov

    tiny, small = cov.cells("tiny"), cov.cells("small")
    assert {default_method(c["d"], c["J"], c["n"] // c["J"]) for c in tiny} == {"normalx-nuts"}
    assert {default_method(c["d"], c["J"], c["n"] // c["J"]) for c in small} == {"normalx-clt"}
    assert {c["family"] for c in tiny} == {"iw", "lkj"} and len(tiny) >= 4
    assert all(cov.oracle_prior(c, 0, 2026) is not None for c in tiny)


def test_the_boundary_suite_sits_where_fit_switches_from_the_exact_sampler():
    """``boundary`` cells have the fewest rows a party at which ``fit`` takes ``normalx-clt``; one fewer and it
    takes ``normalx-nuts``, whose default prior scales ``theta`` by the sampled feature scales."""
    from bayes_dpreg import Prior
    from bayes_dpreg.samplers import default_method, get
    from studies import coverage as cov

    for c in cov.cells("boundary"):
        nj = c["n"] // c["J"]
        assert default_method(c["d"], c["J"], nj) == "normalx-clt"
        assert default_method(c["d"], c["J"], nj - 1) == "normalx-nuts"
    assert Prior().for_theta_scale(get("normalx-nuts").theta_scales, "normalx-nuts").theta_scale == "features"
    assert Prior().for_theta_scale(get("normalx-clt").theta_scales, "normalx-clt").theta_scale == "release"


def test_the_units_suite_puts_each_coefficient_in_its_features_units():
    """``units`` cells draw the correlated suite's data and coefficients, each divided by its feature's sd
    (``theta_k x_k`` on one scale); the other correlated suites' coefficients ignore the features' scales."""
    import numpy as np

    from studies import coverage as cov

    free, units = (cov._correlated_cell("x", "correlated", 3, 3, 300, 0.5, "lkj", truth=t) for t in ("free", "units"))
    X_f, _, theta_f = cov._correlated(free, np.random.default_rng(5))
    X_u, _, theta_u = cov._correlated(units, np.random.default_rng(5))
    Sx = cov.generating_sigma_x(free, np.random.default_rng(5))
    assert not np.allclose(np.diag(Sx), 1.0)  # log-normal scales: the two truths differ
    np.testing.assert_array_equal(X_u, X_f)
    np.testing.assert_allclose(theta_u, theta_f / np.sqrt(np.diag(Sx)), rtol=1e-14)
    assert [c["truth"] for c in cov.cells("units")] == ["units"] * 4
    assert {c["truth"] for c in cov.cells("correlated") + cov.cells("tiny")} == {"free"}
