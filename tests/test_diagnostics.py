"""MMD against closed forms; the 'as published' calibration against NOTES.md."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.model.closed_form import nig_posterior
from bayes_dpreg.posterior.diagnostics import calibration, median_bandwidth, mmd2_unbiased
from bayes_dpreg.privacy.gaussian import as_published_gaussian_sigma, gaussian_delta


def _gauss_mmd2(delta_mu, s, h, d):
    """Exact MMD^2 between N(mu1, s^2 I) and N(mu2, s^2 I) for the Gaussian kernel of bandwidth h."""
    c = (h**2 / (h**2 + 2 * s**2)) ** (d / 2)
    return 2 * c * (1 - np.exp(-delta_mu**2 / (2 * (h**2 + 2 * s**2))))


def test_mmd_matches_the_gaussian_closed_form():
    rng = np.random.default_rng(0)
    d, s, h = 2, 1.0, 1.5
    x = rng.normal(size=(4000, d)) * s
    y = rng.normal(size=(4000, d)) * s + np.array([0.8, 0.0])
    assert mmd2_unbiased(x, y, h) == pytest.approx(_gauss_mmd2(0.8, s, h, d), rel=0.08)


def test_mmd_is_unbiased_near_zero_for_equal_distributions():
    rng = np.random.default_rng(1)
    vals = [mmd2_unbiased(rng.normal(size=(300, 2)), rng.normal(size=(300, 2)), 1.0) for _ in range(40)]
    assert abs(np.mean(vals)) < 3 * np.std(vals) / np.sqrt(len(vals))
    assert min(vals) < 0  # unbiased, so not clipped at zero


def test_mmd_blocking_is_exact():
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(1003, 3)), rng.normal(size=(517, 3)) + 0.3
    assert mmd2_unbiased(x, y, 0.9, block=7) == pytest.approx(mmd2_unbiased(x, y, 0.9, block=4096), rel=1e-12)


def test_mmd_bad_input():
    with pytest.raises(ValueError, match="same d"):
        mmd2_unbiased(np.zeros((5, 2)), np.zeros((5, 3)), 1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        mmd2_unbiased(np.zeros((5, 2)), np.zeros((5, 2)), 0.0)


def test_calibration_against_the_exact_posterior():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2))
    y = X @ [0.5, -0.5] + rng.normal(size=200)
    ref = nig_posterior(jnp.asarray(X.T @ X), jnp.asarray(X.T @ y), y @ y, 200, jnp.zeros(2), jnp.eye(2), 2.0, 1.0)
    draws = np.asarray(ref.sample(jax.random.key(9), 20000)[0]).reshape(4, 5000, 2)
    import arviz as az

    same = calibration(az.from_dict(posterior={"theta": draws}), ref, thin=5)
    shifted = calibration(az.from_dict(posterior={"theta": draws + 0.2}), ref, thin=5)
    assert abs(same) < 0.01 < shifted
    assert median_bandwidth(draws.reshape(-1, 2), draws.reshape(-1, 2)) > 0


def test_as_published_sigma_reproduces_the_authors_values():
    # NOTES.md: 5.043, 1.487, 0.441 at delta = 1e-5, with real delta about 0.04, 0.03 and 2e-4
    for eps, ref, real in [(0.1, 5.043, 0.04), (1.0, 1.487, 0.03), (10.0, 0.441, 2e-4)]:
        s = as_published_gaussian_sigma(eps, 1e-5)
        assert s == pytest.approx(ref, abs=5e-4)
        assert gaussian_delta(s, eps) == pytest.approx(real, rel=0.35)
        assert s < bd.analytic_gaussian_sigma(eps, 1e-5)


def test_as_published_release_is_flagged_and_round_trips(tmp_path):
    from bayes_dpreg.privacy.gaussian import NotPrivateWarning, calibrate, ssp_sensitivity

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 2)) * 0.2
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ [1.0, -1.0] + 0.1 * rng.normal(size=500), -1, 1)
    with pytest.warns(NotPrivateWarning, match="does NOT give"):
        s = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, calibration="as_published", seed=0)
    joint = as_published_gaussian_sigma(1.0, 1e-5) * ssp_sensitivity(1.0, 1.0, "add_remove")["joint"]
    assert s.calibration == "as_published" and s.neighbouring == "add_remove"
    assert min(s.sigma_S, s.sigma_z) <= joint and s.sigma_S < calibrate(1.0, 1e-5, 1.0, 1.0).sigma_S
    path = s.save(tmp_path / "p.json")
    with pytest.warns(NotPrivateWarning):
        assert bd.load_stats(path) == s
    # never chosen automatically
    for yb in (0.01, 1.0, 10.0):
        assert calibrate(1.0, 1e-5, 1.0, yb).kind in ("joint", "split")


# -- the registry of checks that fit, the CLI and the report loop over -------------------------


def _check_fits():
    """A normalx-nuts fit (every check but the fixed-S noise) and a fixeds fit (the noise check),
    three parties of noisy releases."""
    from _shared import unit_releases

    stats, _, _ = unit_releases(3000, 2, 3, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {
            m: (stats, bd.fit(stats, m, num_samples=200, num_warmup=200, num_chains=2, seed=0))
            for m in ("normalx-nuts", "fixeds")
        }


@pytest.fixture(scope="module")
def check_fits():
    return _check_fits()


def test_every_check_has_a_name_and_a_summary_and_records_its_attrs(check_fits):
    from bayes_dpreg.model.prior import Prior, prior_scales
    from bayes_dpreg.posterior.diagnostics import CHECKS, run_checks
    from bayes_dpreg.samplers import get as get_sampler
    from bayes_dpreg.stats import stack_stats

    names = [c.name for c in CHECKS]
    assert all(names) and len(set(names)) == len(names)
    assert all(callable(c.summary) and c.summary({}) is None and not c.flagged({}) for c in CHECKS)
    ran = set()
    for method, (stats, idata) in check_fits.items():
        sampler, st = get_sampler(method), stack_stats(stats)
        pr = Prior().for_sampler(sampler).resolve(st.d, prior_scales(st))
        fresh = idata.copy()
        fresh.posterior.attrs = {k: v for k, v in idata.posterior.attrs.items() if k in ("method",)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            findings = run_checks(fresh, st, sampler, pr)
        assert [f.check for f in findings] == sorted((f.check for f in findings), key=names.index)
        for c in CHECKS:
            if not c.applies(sampler) or c.name == "bounds" and "sigma2" not in idata.posterior:
                continue
            (f,) = [f for f in findings if f.check == c.name]
            assert f.attrs and all(fresh.posterior.attrs[k] == v for k, v in f.attrs.items()), c.name
            # fit recorded the same numbers (its checks are these)
            assert all(idata.posterior.attrs[k] == v for k, v in f.attrs.items()), c.name
            # a problem found is a problem the CLI and the report print
            assert f.ok or (c.flagged(fresh.posterior.attrs) and c.summary(fresh.posterior.attrs)), c.name
            assert (f.warning is not None) == bool(f.message)
            ran.add(c.name)
    assert ran == set(names)  # the two fits exercised every check


def test_a_check_added_to_the_registry_is_run_by_fit_and_printed(monkeypatch, capsys):
    from _shared import unit_releases

    from bayes_dpreg.cli import _print_fit
    from bayes_dpreg.posterior import diagnostics
    from bayes_dpreg.posterior.diagnostics import Check, Finding
    from bayes_dpreg.report import _method_notes

    class ProbeWarning(UserWarning):
        pass

    seen = []

    def check(idata, st, sampler, pr):
        seen.append(sampler.name)
        return Finding("probe", False, {"probe_parties": st.J}, f"probe: {st.J} parties", ProbeWarning)

    probe = Check(
        "probe",
        applies=lambda sampler: sampler.kind != "point",
        check=check,
        summary=lambda at: f"Probe: {at['probe_parties']} parties." if "probe_parties" in at else None,
        flagged=lambda at: "probe_parties" in at,
        warning=ProbeWarning,
    )
    monkeypatch.setattr(diagnostics, "CHECKS", [*diagnostics.CHECKS, probe])
    stats, _, _ = unit_releases(2000, 2, 3, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bd.NoiseWarning)
        warnings.simplefilter("ignore", bd.SeededReleaseWarning)
        with pytest.warns(ProbeWarning, match="probe: 3 parties"):
            idata = bd.fit(stats, "fast", num_samples=50, num_chains=2)
    assert seen == ["fast"] and idata.posterior.attrs["probe_parties"] == 3
    assert {"kind": "warn", "text": "Probe: 3 parties."} in _method_notes(idata)
    _print_fit(idata, [])
    assert "probe: 3 parties." in capsys.readouterr().out
    # where the check does not apply, fit does not run it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adassp = bd.fit(unit_releases(2000, 2, 3, 1.0, release=bd.release_adassp)[0], "adassp")
    assert seen == ["fast"] and "probe_parties" not in adassp.posterior.attrs


def test_the_noise_warning_recommends_the_default_method():
    from bayes_dpreg.posterior.diagnostics.noise import MODELS_NOISE
    from bayes_dpreg.samplers import DEFAULT_METHOD, SAMPLERS

    assert MODELS_NOISE == DEFAULT_METHOD and SAMPLERS[DEFAULT_METHOD].models_release_noise
