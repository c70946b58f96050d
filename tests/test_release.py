"""Per-party release, the statistics file format, and bad input."""

import json
import os

import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.privacy.noisy_stats import NoisyStats, StatsFileError, load_stats
from bayes_dpreg.privacy.mechanisms import release, release_adassp
from bayes_dpreg.privacy.gaussian import ClippingWarning, calibrate


def _data(n=50, d=3, seed=0, scale=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale
    y = X @ rng.normal(size=d) * 0.5 + 0.1 * rng.normal(size=n)
    return X, np.clip(y, -1, 1)


KW = dict(epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0)


def test_release_fields_and_symmetry():
    X, y = _data()
    s = release(X, y, seed=3, **KW)
    cal = calibrate(1.0, 1e-5, 2.0, 1.0)
    assert (s.n, s.d) == X.shape
    assert (s.sigma_S, s.sigma_z, s.calibration) == (cal.sigma_S, cal.sigma_z, cal.kind)
    assert (s.epsilon, s.delta, s.x_bound, s.y_bound) == (1.0, 1e-5, 2.0, 1.0)
    np.testing.assert_array_equal(s.S, s.S.T)
    assert not s.S.flags.writeable


def test_noise_has_the_calibrated_distribution():
    """Upper triangle and z entries iid N(0, sigma^2); lower triangle mirrors the upper one."""
    X, y = _data(d=3)
    S, z = X.T @ X, X.T @ y
    reps = 3000
    out = [release(X, y, seed=k, **KW) for k in range(reps)]
    sig = out[0].sigma_S
    iu = np.triu_indices(3)
    eS = np.array([(o.S - S)[iu] for o in out]) / sig
    ez = np.array([o.z - z for o in out]) / out[0].sigma_z
    E = np.hstack([eS, ez])  # (reps, 9) should be iid N(0, 1)
    se = 1 / np.sqrt(reps)
    assert np.all(np.abs(E.mean(0)) < 4.5 * se)
    assert np.all(np.abs(E.std(0, ddof=1) - 1) < 4.5 * se * np.sqrt(0.5) * 1.5)
    C = np.corrcoef(E.T) - np.eye(E.shape[1])
    assert np.abs(C).max() < 4.5 * se * 1.5


def test_seed_reproducible_and_os_entropy_by_default():
    X, y = _data()
    assert release(X, y, seed=11, **KW) == release(X, y, seed=11, **KW)
    a, b = release(X, y, **KW), release(X, y, **KW)
    assert not np.array_equal(a.S, b.S)


def test_data_outside_bounds_is_clipped_before_release():
    X, y = _data(scale=3.0)
    y = y * 5
    with pytest.warns(ClippingWarning, match="rows were scaled, x and y together"):
        s = release(X, y, seed=5, **KW)
    from bayes_dpreg.privacy.gaussian import clip

    Xc, yc, _ = clip(X, y, KW["x_bound"], KW["y_bound"])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", ClippingWarning)
        s2 = release(Xc, yc, seed=5, **KW)
    np.testing.assert_array_equal(s.S, s2.S)
    np.testing.assert_array_equal(s.z, s2.z)


@pytest.mark.parametrize("fn", [release, release_adassp])
def test_save_load_round_trip_exact(tmp_path, fn):
    X, y = _data()
    s = fn(X, y, seed=2, name="hospital A", **KW)
    path = s.save(tmp_path / "a.json")
    t = load_stats(path)
    assert t == s
    np.testing.assert_array_equal(t.S, s.S)
    np.testing.assert_array_equal(t.z, s.z)
    assert t.lambda_min == s.lambda_min and t.mechanism == s.mechanism
    doc = json.loads(path.read_text())
    assert doc["version"] == 3 and doc["format"] == "bayes_dpreg.noisy_stats"
    # only released quantities: no raw data, no clipping counts
    assert set(doc["payload"]) == set(NoisyStats.__dataclass_fields__) | {"private"}
    assert doc["payload"]["private"] is False  # a seeded release


def _rewrite(path, mutate, fix_checksum=True):
    from bayes_dpreg.privacy.noisy_stats import _digest

    doc = json.loads(path.read_text())
    mutate(doc)
    if fix_checksum:
        doc["sha256"] = _digest(doc["payload"])
    path.write_text(json.dumps(doc))


@pytest.fixture
def saved(tmp_path):
    X, y = _data()
    return release(X, y, seed=1, **KW).save(tmp_path / "s.json")


def test_tampered_value_is_detected(saved):
    _rewrite(saved, lambda d: d["payload"]["S"][0].__setitem__(0, 1.0), fix_checksum=False)
    with pytest.raises(StatsFileError, match="checksum"):
        load_stats(saved)


def test_understated_noise_is_rejected_even_with_valid_checksum(saved):
    _rewrite(saved, lambda d: d["payload"].__setitem__("sigma_S", d["payload"]["sigma_S"] / 2))
    with pytest.raises(StatsFileError, match="do not match the declared privacy parameters"):
        load_stats(saved)


def test_changed_epsilon_is_rejected(saved):
    _rewrite(saved, lambda d: d["payload"].__setitem__("epsilon", 5.0))
    with pytest.raises(StatsFileError, match="do not match"):
        load_stats(saved)


def test_asymmetric_S_is_rejected(saved):
    _rewrite(saved, lambda d: d["payload"]["S"][0].__setitem__(1, 123.0))
    with pytest.raises(StatsFileError, match="not symmetric"):
        load_stats(saved)


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda d: d.__setitem__("version", 99), "unsupported format version"),
        (lambda d: d.__setitem__("format", "other"), "not a bayes_dpreg statistics file"),
        (lambda d: d["payload"].pop("z"), "wrong fields"),
        (lambda d: d["payload"].__setitem__("extra", 1), "wrong fields"),
        (lambda d: d["payload"].__setitem__("z", [1.0, 2.0]), "z must have shape"),
        (lambda d: d["payload"].__setitem__("n", 2), "n must be an integer in \\[d, 1e12\\]"),
        (lambda d: d["payload"].__setitem__("delta", 1.5), "delta"),
    ],
)
def test_malformed_files_are_rejected(saved, mutate, match):
    _rewrite(saved, mutate)
    with pytest.raises(StatsFileError, match=match):
        load_stats(saved)


def test_nan_in_file_is_rejected(saved):
    text = saved.read_text()
    doc = json.loads(text)
    doc["payload"]["z"][0] = float("nan")
    saved.write_text(json.dumps(doc))  # Python's json writes NaN, which is not valid JSON
    with pytest.raises(StatsFileError, match="NaN or infinity"):
        load_stats(saved)


def test_not_json(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("S,z\n1,2\n")
    with pytest.raises(StatsFileError, match="not a valid JSON"):
        load_stats(p)


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    X, y = _data()
    s = release(X, y, seed=1, **KW)

    def boom(*a, **k):
        raise OSError("disk full")

    for fn in ("replace", "link"):  # overwrite=True renames into place, the default links (never overwrites)
        monkeypatch.setattr(os, fn, boom)
    for overwrite in (False, True):
        with pytest.raises(OSError, match="disk full"):
            s.save(tmp_path / "s.json", overwrite=overwrite)
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "X,y,kw,match",
    [
        (np.full((10, 2), np.nan), np.zeros(10), {}, "X contains NaN or inf"),
        (np.zeros((10, 2)), np.r_[np.zeros(9), np.inf], {}, "y contains NaN or inf"),
        (np.zeros((10, 2)), np.zeros(9), {}, "X has 10 rows but y has 9"),
        (np.zeros(10), np.zeros(10), {}, "X must be 2-dimensional"),
        (np.zeros((2, 3)), np.zeros(2), {}, "at least d = 3 rows"),
        (np.zeros((10, 2)), np.zeros(10), {"epsilon": 0.0}, "epsilon must be > 0"),
        (np.zeros((10, 2)), np.zeros(10), {"epsilon": -1.0}, "epsilon must be > 0"),
        (np.zeros((10, 2)), np.zeros(10), {"delta": 1.0}, r"delta must lie in \(0, 1\)"),
        (np.zeros((10, 2)), np.zeros(10), {"delta": 0.0}, r"delta must lie in \(0, 1\)"),
        (np.zeros((10, 2)), np.zeros(10), {"x_bound": 0.0}, "x_bound must be"),
        (np.zeros((10, 2)), np.zeros(10), {"y_bound": -1.0}, "y_bound must be"),
    ],
)
@pytest.mark.parametrize("fn", [release, release_adassp])
def test_bad_input(fn, X, y, kw, match):
    with pytest.raises(ValueError, match=match):
        fn(X, y, **{**KW, **kw})


def test_noisystats_constructor_checks():
    X, y = _data()
    good = release(X, y, seed=0, **KW).to_dict()
    bad_S = np.array(good["S"])
    bad_S[0, 1] += 1
    with pytest.raises(ValueError, match="not symmetric"):
        NoisyStats(**{**good, "S": bad_S})
    with pytest.raises(ValueError, match="S must have shape"):
        NoisyStats(**{**good, "S": np.eye(2)})
    with pytest.raises(ValueError, match="lambda_min is only released by the adassp"):
        NoisyStats(**{**good, "lambda_min": 1.0})


def test_adassp_release_budget_split():
    X, y = _data(n=400)
    s = release_adassp(X, y, seed=0, **KW)
    cal = calibrate(2 / 3, 2e-5 / 3, 2.0, 1.0)
    assert (s.sigma_S, s.sigma_z) == (cal.sigma_S, cal.sigma_z)
    assert s.sigma_lambda == bd.analytic_gaussian_sigma(1 / 3, 1e-5 / 3, 4.0)
    assert s.lambda_min >= 0 and s.mechanism == "adassp" and s.epsilon == 1.0


def test_adassp_lambda_min_sensitivity():
    """Weyl: replacing one row moves lambda_min(S) by at most x_bound^2."""
    rng = np.random.default_rng(0)
    for _ in range(300):
        d = rng.integers(1, 5)
        X = rng.normal(size=(rng.integers(d, 8), d))
        X /= np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True))
        X2 = X.copy()
        v = rng.normal(size=d)
        X2[0] = v / max(1, np.linalg.norm(v))
        lm = lambda A: np.linalg.eigvalsh(A.T @ A)[0]
        assert abs(lm(X) - lm(X2)) <= 1 + 1e-12
