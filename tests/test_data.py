"""Simulation, party splits and the paper's real-data preprocessing."""

import hashlib
import io

import numpy as np
import pytest

from bayes_dpreg.datasets import load_dataset, load_power_plant, read_numeric_csv, simulate, split_parties

MD5 = {
    "air_quality.csv": "516ab7e5b20d9e84f581159fa39e9073",
    "bike_sharing.csv": "aee658b2496785d3d359b84853befd56",
    "power_plant_energy.csv": "44bca187a40d751f98490d2b797bc0cc",
}


def test_simulate_is_reproducible_and_follows_the_model():
    a = simulate(20000, 3, seed=4)
    b = simulate(20000, 3, seed=4)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert a.X.shape == (20000, 3) and a.y.shape == (20000,)
    beta = np.linalg.lstsq(a.X, a.y, rcond=None)[0]
    resid = a.y - a.X @ beta
    cov_beta = np.linalg.inv(a.X.T @ a.X) * resid.var()
    z = (beta - a.theta) / np.sqrt(np.diag(cov_beta))
    assert np.all(np.abs(z) < 4.5)
    assert resid.var() == pytest.approx(1.0, rel=0.05)
    emp = np.cov(a.X.T)
    se = np.sqrt((a.Sigma_x**2 + np.outer(np.diag(a.Sigma_x), np.diag(a.Sigma_x))) / 20000)
    assert np.all(np.abs(emp - a.Sigma_x) < 5 * se)
    assert not np.array_equal(simulate(10, 3, seed=5).theta, a.theta)


def test_simulate_with_given_scale_matrix():
    L = np.diag([1.0, 2.0])
    s = simulate(10, 2, seed=0, Lambda=L)
    assert s.Sigma_x.shape == (2, 2)
    with pytest.raises(ValueError, match="Lambda must be 2 x 2"):
        simulate(10, 2, seed=0, Lambda=np.eye(3))


def test_split_parties_consecutive_blocks():
    X = np.arange(22.0).reshape(11, 2)
    y = np.arange(11.0)
    parts = split_parties(X, y, 3)
    assert [p[0].shape[0] for p in parts] == [4, 4, 3]
    np.testing.assert_array_equal(np.vstack([p[0] for p in parts]), X)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), y)
    with pytest.raises(ValueError, match="J must be a positive integer"):
        split_parties(X, y, 0)
    with pytest.raises(ValueError, match="cannot split"):
        split_parties(X, y, 12)
    with pytest.raises(ValueError, match="rows"):
        split_parties(X, y[:-1], 2)


def test_read_numeric_csv_matlab_rules():
    text = "1,2,,\n3,,5,\n,,,\n\n6,7,8,\n"
    out = read_numeric_csv(io.StringIO(text))
    np.testing.assert_array_equal(out, [[1, 2, 0], [3, 0, 5], [6, 7, 8]])
    with pytest.raises(ValueError, match="not a number"):
        read_numeric_csv(io.StringIO("1,abc\n"))


@pytest.mark.parametrize(
    "name,rows,d",
    [("power_plant_energy.csv", 9568, 4), ("bike_sharing.csv", 17379, 14), ("air_quality.csv", 9357, 12)],
)
def test_load_dataset_paper_preprocessing(shared_data, name, rows, d):
    path = shared_data / name
    assert hashlib.md5(path.read_bytes()).hexdigest() == MD5[name]
    ds = load_dataset(path)
    n_train = int(np.floor(0.8 * rows))
    assert ds.X_train.shape == (n_train, d) and ds.X_test.shape == (rows - n_train, d)
    X = np.vstack([ds.X_train, ds.X_test])
    y = np.concatenate([ds.y_train, ds.y_test])
    np.testing.assert_allclose(X.mean(0), 0, atol=1e-10)
    np.testing.assert_allclose(X.std(0, ddof=1), 1, rtol=1e-10)
    assert abs(y.mean()) < 1e-12 and np.abs(y).max() == pytest.approx(1.0)
    # the first 80% are the training rows, in file order
    raw = read_numeric_csv(path)
    np.testing.assert_allclose(ds.X_train[:, 0] * raw[:, 0].std(ddof=1) + raw[:, 0].mean(), raw[:n_train, 0])


def test_load_dataset_can_drop_a_column_and_the_rows_with_missing_codes(shared_data):
    # air quality's NMHC sensor (column 2) is -200 in 90% of rows; without it, 6,941 rows have every reading
    path = shared_data / "air_quality.csv"
    raw = np.delete(read_numeric_csv(path), 2, axis=1)
    ds = load_dataset(path, drop_columns=(2,), na_values=(-200,), drop_na_rows=True)
    kept = raw[(raw != -200).all(axis=1)]
    assert len(kept) == 6941 and ds.X_train.shape == (5552, 11)
    np.testing.assert_allclose(ds.X_train[:, 0] * kept[:, 0].std(ddof=1) + kept[:, 0].mean(), kept[:5552, 0])
    zeroed = load_dataset(path, na_values=(-200,))  # the codes set to 0 instead, every row kept
    assert zeroed.X_train.shape == (7485, 12)


def test_bundled_power_plant_matches_the_shared_file(shared_data):
    a = load_power_plant()
    b = load_dataset(shared_data / "power_plant_energy.csv")
    for u, v in zip(a[:4], b[:4]):
        np.testing.assert_array_equal(u, v)
