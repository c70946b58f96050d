"""Prior hyperparameters and model specifications (TOML files under ``models/``).

The hierarchical model (Alparslan et al. 2023, eqs. 4 and 10):

* ``theta ~ N(m, C)``
* ``sigma_y^2 ~ IG(a, b)`` (shape ``a``, scale ``b``)
* ``Sigma_x ~ IW(Lambda, kappa)``
* the conjugate non-private reference uses ``(theta, sigma_y^2) ~ NIG(m, Lambda_0, a, b)``,
  i.e. ``theta | sigma_y^2 ~ N(m, sigma_y^2 Lambda_0^{-1})``.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Prior", "ResolvedPrior", "ModelSpec", "load_model"]

Scalar_or_matrix = float | list | np.ndarray


def _vector(name: str, v: Any, d: int) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(d, float(arr))
    if arr.shape != (d,):
        raise ValueError(f"prior {name} must be a scalar or a length-{d} vector, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"prior {name} must be finite")
    return arr


def _spd(name: str, v: Any, d: int) -> np.ndarray:
    arr = np.asarray(v, dtype=np.float64)
    if arr.ndim == 0:
        arr = float(arr) * np.eye(d)
    elif arr.ndim == 1:
        if arr.shape != (d,):
            raise ValueError(f"prior {name} as a vector must have length {d}, got {arr.shape}")
        arr = np.diag(arr)
    if arr.shape != (d, d):
        raise ValueError(f"prior {name} must be a scalar, a length-{d} diagonal or a {d}x{d} matrix, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"prior {name} must be finite")
    if not np.allclose(arr, arr.T, rtol=1e-12, atol=0):
        raise ValueError(f"prior {name} must be symmetric")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(f"prior {name} must be positive definite") from None
    return 0.5 * (arr + arr.T)


class ResolvedPrior(NamedTuple):
    """A :class:`Prior` made concrete for dimension ``d`` (arrays, float64)."""

    m: np.ndarray
    C: np.ndarray
    a: float
    b: float
    Lambda: np.ndarray
    kappa: float
    nig_precision: np.ndarray
    mu_x: np.ndarray | None = None  # (d,) prior mean of the feature mean (intercept model)
    mu_x_cov: np.ndarray | None = None  # (d, d)


@dataclass(frozen=True)
class Prior:
    """Hyperparameters of the model; every one can be set.

    Scalars stand for multiples of the identity (``C = 10`` means ``10 I``);
    a vector is a diagonal; a nested list or array is a full matrix.

    Defaults (weakly informative for features and response of order one, as
    after the scaling that declared bounds encourage):

    * ``m = 0``, ``C = 10 I``: coefficients a priori within about +-6;
    * ``a = 2``, ``b = 0.5``: ``sigma_y^2`` has prior mean 0.5 and infinite variance;
    * ``Lambda = I``, ``kappa = d + 1`` (``None``): the vaguest proper inverse-Wishart;
    * ``nig_precision = None``: ``Lambda_0 = C^{-1}`` for the conjugate reference.
    * ``mu_x = 0``, ``mu_x_cov = 10 I``: the feature mean ``x_i ~ N(mu_x, Sigma_x)`` of the
      intercept model (App. B.2); with an intercept, ``m``, ``C`` and ``nig_precision`` are
      of dimension ``d + 1`` (intercept first) and ``Lambda`` of dimension ``d``.

    The paper's experimental settings are in ``models/alparslan2023.toml``.
    """

    m: Scalar_or_matrix = 0.0
    C: Scalar_or_matrix = 10.0
    a: float = 2.0
    b: float = 0.5
    Lambda: Scalar_or_matrix = 1.0
    kappa: float | None = None
    nig_precision: Scalar_or_matrix | None = None
    mu_x: Scalar_or_matrix = 0.0
    mu_x_cov: Scalar_or_matrix = 10.0

    def __post_init__(self) -> None:
        for name in ("a", "b"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"prior {name} must be a finite number > 0, got {v!r}")

    def resolve(self, d: int) -> ResolvedPrior:
        """Concrete arrays for dimension ``d``; checks shapes and definiteness."""
        kappa = d + 1.0 if self.kappa is None else float(self.kappa)
        if not kappa > d - 1:
            raise ValueError(f"prior kappa must exceed d - 1 = {d - 1}, got {kappa}")
        C = _spd("C", self.C, d)
        nig = np.linalg.inv(C) if self.nig_precision is None else _spd("nig_precision", self.nig_precision, d)
        return ResolvedPrior(
            m=_vector("m", self.m, d),
            C=C,
            a=float(self.a),
            b=float(self.b),
            Lambda=_spd("Lambda", self.Lambda, d),
            kappa=kappa,
            nig_precision=nig,
        )

    def resolve_intercept(self, d: int) -> ResolvedPrior:
        """Arrays for the intercept model (App. B.2) with ``d`` features: ``theta`` of
        dimension ``d + 1`` (intercept first), ``Sigma_x``, ``mu_x`` of dimension ``d``."""
        full = replace(self, Lambda=1.0, kappa=None).resolve(d + 1)
        feat = replace(self, m=0.0, C=1.0, nig_precision=None).resolve(d)
        return full._replace(Lambda=feat.Lambda, kappa=feat.kappa, mu_x=_vector("mu_x", self.mu_x, d),
                             mu_x_cov=_spd("mu_x_cov", self.mu_x_cov, d))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Prior":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown prior hyperparameters {sorted(unknown)}; known: {sorted(known)}")
        return cls(**data)

    @classmethod
    def from_toml(cls, path: str | os.PathLike) -> "Prior":
        """The ``[prior]`` table of a model specification file."""
        return load_model(path).prior


@dataclass(frozen=True)
class ModelSpec:
    """A model specification: the prior and default options for :func:`bayes_dpreg.fit`."""

    prior: Prior
    fit: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    description: str = ""


def load_model(path: str | os.PathLike) -> ModelSpec:
    """Read a TOML model specification (``[prior]`` and optional ``[fit]`` tables)."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: invalid TOML ({exc})") from None
    unknown = set(doc) - {"name", "description", "prior", "fit"}
    if unknown:
        raise ValueError(f"{path}: unknown top-level keys {sorted(unknown)}")
    try:
        prior = Prior.from_dict(doc.get("prior", {}))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    return ModelSpec(prior, dict(doc.get("fit", {})), doc.get("name", path.stem), doc.get("description", ""))
