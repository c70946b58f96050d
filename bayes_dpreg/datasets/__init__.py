"""Data: the paper's simulation model, party splits and real-data preprocessing."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = [
    "Simulated",
    "simulate",
    "paper_scale_matrix",
    "split_parties",
    "Dataset",
    "load_dataset",
    "load_power_plant",
    "read_numeric_csv",
]


class Simulated(NamedTuple):
    X: np.ndarray
    y: np.ndarray
    theta: np.ndarray
    Sigma_x: np.ndarray


def paper_scale_matrix(d: int, seed: int | np.random.SeedSequence | None) -> np.ndarray:
    """``Lambda = V^T V`` with ``V`` a d x d matrix of iid N(0, 1) (paper Sec. 5.1)."""
    V = np.random.default_rng(seed).standard_normal((d, d))
    return V.T @ V


def simulate(
    n: int,
    d: int,
    seed: int | np.random.SeedSequence | None,
    *,
    Lambda: np.ndarray | None = None,
    kappa: float | None = None,
    sigma_y: float = 1.0,
) -> Simulated:
    """Draw a data set from the paper's generative model (Sec. 5.1).

    ``theta ~ N(0, I_d)``, ``Sigma_x ~ IW(Lambda, kappa)`` (``kappa = d + 1``),
    ``x_i ~ N(0, Sigma_x)`` iid, ``y_i = x_i^T theta + N(0, sigma_y^2)``.
    Without ``Lambda``, ``Lambda = paper_scale_matrix(d, child seed 0 of seed)``;
    pass it explicitly to use the same scale matrix in the prior.
    """
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be positive, got n={n}, d={d}")
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    ss_lambda, ss_data = ss.spawn(2)
    if Lambda is None:
        Lambda = paper_scale_matrix(d, ss_lambda)
    Lambda = np.asarray(Lambda, dtype=np.float64)
    if Lambda.shape != (d, d):
        raise ValueError(f"Lambda must be {d} x {d}, got {Lambda.shape}")
    kappa = d + 1.0 if kappa is None else float(kappa)
    rng = np.random.default_rng(ss_data)
    theta = rng.standard_normal(d)
    from scipy.stats import invwishart

    Sigma_x = np.atleast_2d(invwishart.rvs(df=kappa, scale=Lambda, random_state=rng))
    L = np.linalg.cholesky(Sigma_x)
    X = rng.standard_normal((n, d)) @ L.T
    y = X @ theta + sigma_y * rng.standard_normal(n)
    return Simulated(X, y, theta, Sigma_x)


def split_parties(X: np.ndarray, y: np.ndarray, J: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split rows into ``J`` consecutive blocks of (nearly) equal size, as in the paper.

    With ``n = q J + r`` the first ``r`` blocks get ``q + 1`` rows.
    """
    X = np.asarray(X)
    y = np.asarray(y)
    if not isinstance(J, (int, np.integer)) or J < 1:
        raise ValueError(f"J must be a positive integer, got {J!r}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if J > X.shape[0]:
        raise ValueError(f"cannot split {X.shape[0]} rows into J = {J} parties")
    return [(Xb, yb) for Xb, yb in zip(np.array_split(X, J), np.array_split(y, J))]


class Dataset(NamedTuple):
    """A preprocessed real data set: training and test parts."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str


def read_numeric_csv(source: str | os.PathLike | io.TextIOBase, na_values: Sequence[float] = ()) -> np.ndarray:
    """Read a headerless numeric CSV as MATLAB's ``load`` does in the authors' code.

    Lines whose fields are all empty are dropped, columns that are empty on
    every remaining line are dropped, any other empty field (and any value in
    ``na_values``) becomes 0. Non-numeric fields are an error.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, newline="") as fh:
            rows = list(csv.reader(fh))
    else:
        rows = list(csv.reader(source))
    rows = [[f.strip() for f in r] for r in rows]
    rows = [r for r in rows if any(r)]
    if not rows:
        raise ValueError(f"{source}: no data rows")
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    keep = [k for k in range(width) if any(r[k] for r in rows)]
    out = np.zeros((len(rows), len(keep)))
    for i, r in enumerate(rows):
        for jj, k in enumerate(keep):
            f = r[k]
            if f:
                try:
                    out[i, jj] = float(f)
                except ValueError:
                    raise ValueError(f"{source}: line {i + 1}, column {k + 1}: not a number: {f!r}") from None
    for v in na_values:
        out[out == v] = 0.0
    return out


def load_dataset(
    path: str | os.PathLike,
    *,
    train_fraction: float = 0.8,
    na_values: Sequence[float] = (),
    drop_columns: Sequence[int] = (),
    drop_na_rows: bool = False,
    name: str | None = None,
) -> Dataset:
    """Load one of the paper's real data sets with its preprocessing (Sec. 5.2).

    The last column is ``y``; missing values are 0 (:func:`read_numeric_csv`);
    features are z-scored (sample sd, as MATLAB's ``zscore``), ``y`` is centred
    and divided by its largest absolute value, over the whole file; the first
    ``train_fraction`` of the rows (rounded down) are the training set.

    ``drop_columns``: columns (0-based, of the file once its empty columns are dropped) left out first;
    ``drop_na_rows``: rows holding a value of ``na_values`` are dropped instead of those values set to 0
    (the paper keeps air quality's ``-200`` codes as values; ``drop_columns=(2,), na_values=(-200,),
    drop_na_rows=True`` drops its mostly missing NMHC sensor, then every row with a missing reading).

    The scaling uses the data's own means and sds, as in the paper. A real
    release must take them from public knowledge instead (NOTES.md).
    """
    data = read_numeric_csv(path, () if drop_na_rows else na_values)
    if drop_columns:
        data = np.delete(data, list(drop_columns), axis=1)
    if drop_na_rows:
        data = data[~np.isin(data, np.asarray(na_values, dtype=float)).any(axis=1)]
    return _preprocess(data, train_fraction, name or Path(path).stem)


def _preprocess(data: np.ndarray, train_fraction: float, name: str) -> Dataset:
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must lie in (0, 1), got {train_fraction}")
    if data.shape[1] < 2:
        raise ValueError(f"{name}: need at least one feature column and the response")
    X, y = data[:, :-1], data[:, -1]
    sd = X.std(axis=0, ddof=1)
    sd[sd == 0] = 1.0
    X = (X - X.mean(axis=0)) / sd
    y = y - y.mean()
    y = y / np.abs(y).max()
    n_train = int(np.floor(train_fraction * X.shape[0]))
    return Dataset(X[:n_train], y[:n_train], X[n_train:], y[n_train:], name)


def load_power_plant(train_fraction: float = 0.8) -> Dataset:
    """The UCI Combined Cycle Power Plant data bundled with the package (demo data).

    9568 rows; features: temperature, exhaust vacuum, ambient pressure,
    relative humidity; response: net electrical output.
    """
    ref = resources.files("bayes_dpreg") / "datasets" / "power_plant_energy.csv"
    with resources.as_file(ref) as path, open(path, newline="") as fh:
        data = read_numeric_csv(fh)
    return _preprocess(data, train_fraction, "power_plant")


POWER_PLANT_FEATURES = ("temperature", "exhaust_vacuum", "ambient_pressure", "humidity")
