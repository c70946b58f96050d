"""Per-party DP release of the summary statistics (Alparslan et al. 2023, eq. 8).

A data holder calls :func:`release` on its own ``(X_j, y_j)`` and publishes
the returned :class:`NoisyStats` (``NoisyStats.save``); the analyst loads all
parties' files with :func:`load_stats` and calls :func:`bayes_dpreg.fit`.

The file is JSON (floats written with ``repr``, so it round-trips exactly) and
holds only released quantities and public metadata: the noisy ``S~``, ``z~``,
the row count ``n`` (public under replacement neighbouring), the noise sds and
the declared bounds and privacy parameters. On loading, the noise sds are
recomputed from the declared parameters and must match, the SHA-256 digest of
the payload must match, and ``S~`` must be symmetric and finite.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, Sequence

import numpy as np

from .privacy import (
    CalibrationKind,
    NotPrivateWarning,
    analytic_gaussian_sigma,
    calibrate,
    check_privacy_parameters,
    calibrate_bs,
    clip,
    warn_if_clipped,
)

__all__ = [
    "NoisyStats",
    "release",
    "release_adassp",
    "release_bs",
    "average_rows",
    "load_stats",
    "StatsFileError",
    "StackedStats",
    "stack_stats",
    "as_stats_list",
    "FORMAT",
]

FORMAT = "bayes_dpreg.noisy_stats"
FORMAT_VERSION = 1
_REL_TOL = 1e-12

Mechanism = Literal["ssp", "adassp", "bs"]


class StatsFileError(ValueError):
    """A statistics file is malformed, inconsistent or has been tampered with."""


def _as_float_array(name: str, a: Any, ndim: int) -> np.ndarray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} contains NaN or inf (first at index {tuple(int(i) for i in bad)})")
    return arr


def validate_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Check a party's private data: finite, ``X`` of shape (n, d), ``y`` of shape (n,), n >= d."""
    X = _as_float_array("X", X, 2)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    y = _as_float_array("y", y, 1)
    n, d = X.shape
    if y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries")
    if d < 1:
        raise ValueError("X must have at least one column")
    if n < d:
        raise ValueError(f"a party needs at least d = {d} rows, got n = {n}")
    return X, y


@dataclass(frozen=True, eq=False)
class NoisyStats:
    """What one party releases: ``S~ = S + sigma_S M``, ``z~ = z + sigma_z v`` (eq. 8).

    ``M`` is symmetric with its upper triangle (diagonal included) iid N(0, 1);
    ``v ~ N(0, I_d)``. For ``mechanism="adassp"`` the budget is split in thirds
    (App. C.2): ``S~, z~`` at ``(2 eps/3, 2 delta/3)`` and the noisy smallest
    eigenvalue ``lambda_min`` at ``(eps/3, delta/3)``. For ``mechanism="bs"`` (MCMC-B&S,
    App. C.1, eq. 13) ``u~ = y^T y + sigma_u w`` is released too, with one Gaussian
    mechanism on ``[upper(S), z, y^T y]`` (``sigma_S = sigma_z = sigma_u``).
    """

    S: np.ndarray
    z: np.ndarray
    n: int
    d: int
    sigma_S: float
    sigma_z: float
    epsilon: float
    delta: float
    x_bound: float
    y_bound: float
    calibration: str
    neighbouring: str = "replace"
    mechanism: str = "ssp"
    lambda_min: float | None = None
    sigma_lambda: float | None = None
    u: float | None = None
    sigma_u: float | None = None
    name: str = ""
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        S = np.array(self.S, dtype=np.float64)
        z = np.array(self.z, dtype=np.float64)
        S.setflags(write=False)
        z.setflags(write=False)
        object.__setattr__(self, "S", S)
        object.__setattr__(self, "z", z)
        _check_stats(self)

    # -- file format ---------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The released payload as plain JSON-able Python objects."""
        return {
            "S": self.S.tolist(),
            "z": self.z.tolist(),
            "n": int(self.n),
            "d": int(self.d),
            "sigma_S": float(self.sigma_S),
            "sigma_z": float(self.sigma_z),
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "x_bound": float(self.x_bound),
            "y_bound": float(self.y_bound),
            "calibration": self.calibration,
            "neighbouring": self.neighbouring,
            "mechanism": self.mechanism,
            "lambda_min": None if self.lambda_min is None else float(self.lambda_min),
            "sigma_lambda": None if self.sigma_lambda is None else float(self.sigma_lambda),
            "u": None if self.u is None else float(self.u),
            "sigma_u": None if self.sigma_u is None else float(self.sigma_u),
            "name": self.name,
            "meta": dict(self.meta),
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write the statistics as JSON, atomically (a temporary file then a rename)."""
        payload = self.to_dict()
        doc = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "payload": payload,
            "sha256": _digest(payload),
        }
        text = json.dumps(doc, indent=1, allow_nan=False)
        path = Path(path)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent or ".")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NoisyStats):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (
            f"NoisyStats(name={self.name!r}, n={self.n}, d={self.d}, eps={self.epsilon}, "
            f"delta={self.delta:g}, sigma_S={self.sigma_S:.4g}, sigma_z={self.sigma_z:.4g}, "
            f"calibration={self.calibration!r}, mechanism={self.mechanism!r})"
        )


def _digest(payload: dict[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL_TOL, abs_tol=0.0)


def _expected_sigmas(s: NoisyStats) -> tuple[float, float, float | None]:
    """Noise sds implied by the declared parameters of ``s`` (public information);
    the third is ``sigma_lambda`` (adassp) or ``sigma_u`` (bs)."""
    if s.mechanism == "bs":
        sig = calibrate_bs(s.epsilon, s.delta, s.x_bound, s.y_bound, s.calibration)  # type: ignore[arg-type]
        return sig, sig, sig
    if s.mechanism == "ssp":
        eps, delta = s.epsilon, s.delta
    else:
        eps, delta = 2.0 * s.epsilon / 3.0, 2.0 * s.delta / 3.0
    cal = calibrate(eps, delta, s.x_bound, s.y_bound, s.calibration, s.neighbouring)  # type: ignore[arg-type]
    sigma_lambda = None
    if s.mechanism == "adassp":
        sigma_lambda = analytic_gaussian_sigma(s.epsilon / 3.0, s.delta / 3.0, s.x_bound**2)
    return cal.sigma_S, cal.sigma_z, sigma_lambda


def _check_stats(s: NoisyStats) -> None:
    """Consistency of a NoisyStats: shapes, finiteness, symmetry, privacy metadata."""
    check_privacy_parameters(s.epsilon, s.delta)
    for name in ("x_bound", "y_bound", "sigma_S", "sigma_z"):
        v = getattr(s, name)
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if isinstance(s.d, bool) or not isinstance(s.d, (int, np.integer)) or s.d < 1:
        raise ValueError(f"d must be a positive integer, got {s.d!r}")
    if isinstance(s.n, bool) or not isinstance(s.n, (int, np.integer)) or s.n < s.d:
        raise ValueError(f"n must be an integer >= d = {s.d}, got {s.n!r}")
    if s.S.shape != (s.d, s.d):
        raise ValueError(f"S must have shape ({s.d}, {s.d}), got {s.S.shape}")
    if s.z.shape != (s.d,):
        raise ValueError(f"z must have shape ({s.d},), got {s.z.shape}")
    if not (np.all(np.isfinite(s.S)) and np.all(np.isfinite(s.z))):
        raise ValueError("S and z must be finite (no NaN or inf)")
    if not np.array_equal(s.S, s.S.T):
        raise ValueError("S is not symmetric: a released S~ is symmetric by construction")
    if s.calibration not in ("joint", "split", "as_published"):
        raise ValueError(f"calibration must be 'joint', 'split' or 'as_published', got {s.calibration!r}")
    if s.calibration == "as_published" and s.neighbouring != "add_remove":
        raise ValueError("the 'as_published' calibration uses add/remove sensitivities")
    if s.neighbouring not in ("replace", "add_remove"):
        raise ValueError(f"neighbouring must be 'replace' or 'add_remove', got {s.neighbouring!r}")
    if s.mechanism not in ("ssp", "adassp", "bs"):
        raise ValueError(f"mechanism must be 'ssp', 'adassp' or 'bs', got {s.mechanism!r}")
    if s.mechanism == "bs" and s.calibration not in ("joint", "as_published"):
        raise ValueError(f"a bs release uses the 'joint' or 'as_published' calibration, got {s.calibration!r}")
    sig_S, sig_z, sig_l = _expected_sigmas(s)
    if not (_close(s.sigma_S, sig_S) and _close(s.sigma_z, sig_z)):
        raise ValueError(
            f"noise sds (sigma_S={s.sigma_S!r}, sigma_z={s.sigma_z!r}) do not match the declared "
            f"privacy parameters, which imply sigma_S={sig_S!r}, sigma_z={sig_z!r}"
        )
    if s.mechanism == "adassp":
        if s.lambda_min is None or s.sigma_lambda is None:
            raise ValueError("an adassp release must carry lambda_min and sigma_lambda")
        if not (math.isfinite(s.lambda_min) and s.lambda_min >= 0):
            raise ValueError(f"lambda_min must be finite and >= 0, got {s.lambda_min!r}")
        if not _close(s.sigma_lambda, sig_l):
            raise ValueError(f"sigma_lambda={s.sigma_lambda!r} does not match the declared parameters ({sig_l!r})")
    elif s.lambda_min is not None or s.sigma_lambda is not None:
        raise ValueError("lambda_min is only released by the adassp mechanism")
    if s.mechanism == "bs":
        if s.u is None or s.sigma_u is None:
            raise ValueError("a bs release must carry u (the noisy y^T y) and sigma_u")
        if not math.isfinite(s.u):
            raise ValueError(f"u must be finite, got {s.u!r}")
        if not _close(s.sigma_u, sig_l):
            raise ValueError(f"sigma_u={s.sigma_u!r} does not match the declared parameters ({sig_l!r})")
    elif s.u is not None or s.sigma_u is not None:
        raise ValueError("u = y^T y is only released by the bs mechanism")


def load_stats(path: str | os.PathLike) -> NoisyStats:
    """Read a file written by :meth:`NoisyStats.save`, rejecting anything malformed."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StatsFileError(f"{path}: not a valid JSON statistics file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise StatsFileError(f"{path}: not a bayes_dpreg statistics file (missing format {FORMAT!r})")
    if doc.get("version") != FORMAT_VERSION:
        raise StatsFileError(f"{path}: unsupported format version {doc.get('version')!r} (this is {FORMAT_VERSION})")
    payload = doc.get("payload")
    if not isinstance(payload, dict):
        raise StatsFileError(f"{path}: missing payload")
    try:
        digest = _digest(payload)
    except ValueError:
        raise StatsFileError(f"{path}: contains NaN or infinity") from None
    if doc.get("sha256") != digest:
        raise StatsFileError(f"{path}: checksum mismatch, the file was modified after it was written")
    expected = set(NoisyStats.__dataclass_fields__)
    if set(payload) != expected:
        missing, extra = expected - set(payload), set(payload) - expected
        raise StatsFileError(f"{path}: wrong fields (missing {sorted(missing)}, unexpected {sorted(extra)})")
    try:
        stats = NoisyStats(**payload)
    except (ValueError, TypeError) as exc:
        raise StatsFileError(f"{path}: {exc}") from None
    _warn_if_not_private(stats)
    return stats


def _warn_if_not_private(stats: "NoisyStats") -> None:
    if stats.calibration == "as_published":
        warnings.warn(
            f"{stats.name or 'statistics'}: released with the authors' 'as published' noise, which does NOT "
            f"give ({stats.epsilon}, {stats.delta})-DP; for reproducing published figures only",
            NotPrivateWarning, stacklevel=3)


def _symmetric_noise(rng: np.random.Generator, d: int) -> np.ndarray:
    """``M``: symmetric, upper triangle (with diagonal) iid N(0, 1)."""
    iu = np.triu_indices(d)
    M = np.zeros((d, d))
    M[iu] = rng.standard_normal(iu[0].size)
    return M + np.triu(M, 1).T


def _exact_stats(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    S = X.T @ X
    return 0.5 * (S + S.T), X.T @ y


def average_rows(X: np.ndarray, y: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """App. B.1: ``X_av = A X``, ``y_av = A y`` with ``A`` summing consecutive blocks of ``k`` rows
    and dividing by ``sqrt(k)`` (so ``A A^T = I`` and the noise variance of ``y`` is kept).
    The ``n mod k`` trailing rows are dropped. Each original row enters one averaged row, so
    a release that is DP for the averaged rows (with bounds on *them*) is DP for the original ones."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"average_rows must be a positive integer, got {k!r}")
    m = X.shape[0] // k
    if m < 1:
        raise ValueError(f"average_rows = {k} exceeds the number of rows ({X.shape[0]})")
    scale = 1.0 / math.sqrt(k)
    return (X[: m * k].reshape(m, k, -1).sum(1) * scale, y[: m * k].reshape(m, k).sum(1) * scale)


def _prepare(X: Any, y: Any, x_bound: float, y_bound: float, intercept: bool,
             average: int) -> tuple[np.ndarray, np.ndarray, float, dict[str, Any]]:
    """Validate, average rows (B.1), clip to the declared bounds, and append the intercept
    column (B.2): the rows that are released and the bound of their norm."""
    X, y = validate_data(X, y)
    meta: dict[str, Any] = {}
    if isinstance(average, bool) or not isinstance(average, (int, np.integer)) or average < 1:
        raise ValueError(f"average_rows must be a positive integer, got {average!r}")
    if average != 1:
        if intercept:
            raise ValueError("average_rows and intercept cannot be combined (App. B.1 assumes centred features)")
        X, y = average_rows(X, y, average)
        validate_data(X, y)
        meta["average_rows"] = int(average)
    Xc, yc, report = clip(X, y, x_bound, y_bound)
    warn_if_clipped(report)
    if intercept:
        Xc = np.column_stack([np.ones(Xc.shape[0]), Xc])
        x_bound = math.hypot(1.0, x_bound)
        meta["intercept"] = True
    return Xc, yc, x_bound, meta


def release(
    X: Any,
    y: Any,
    *,
    epsilon: float,
    delta: float,
    x_bound: float,
    y_bound: float,
    calibration: CalibrationKind = "auto",
    seed: int | np.random.SeedSequence | None = None,
    name: str = "",
    intercept: bool = False,
    average_rows: int = 1,
) -> NoisyStats:
    """Release ``(S~, z~)`` of one party under (epsilon, delta)-DP (replacement neighbours).

    Rows with ``||x|| > x_bound`` are scaled onto the ball and ``y`` is clipped
    to ``[-y_bound, y_bound]`` first; a :class:`~bayes_dpreg.privacy.ClippingWarning`
    tells the caller how many (this count is *not* released). The noise sds
    come from :func:`~bayes_dpreg.privacy.calibrate`; ``calibration="as_published"``
    (the authors' under-calibrated noise, for reproductions only) is not private and
    warns with :class:`~bayes_dpreg.privacy.NotPrivateWarning`. Without ``seed`` the
    noise generator is seeded from the operating system's entropy; pass a seed
    only for experiments, never for a real release.

    ``intercept=True`` (App. B.2) releases the statistics of ``[1, x_i]``: the features are
    clipped to ``x_bound`` and the released rows have norm at most ``sqrt(1 + x_bound^2)``,
    the ``x_bound`` recorded in the result. ``average_rows=k`` (App. B.1) releases the
    statistics of :func:`average_rows` instead (for non-normal features); ``x_bound`` and
    ``y_bound`` then bound the *averaged* rows, which are clipped to them. (The paper's
    remark that averaged statistics keep the sensitivities of the originals holds only
    under such bounds: an averaged row of ``k`` rows bounded by ``B`` can have norm ``sqrt(k) B``.)
    """
    check_privacy_parameters(epsilon, delta)
    Xc, yc, x_bound, meta = _prepare(X, y, x_bound, y_bound, intercept, average_rows)
    cal = calibrate(epsilon, delta, x_bound, y_bound, calibration)
    S, z = _exact_stats(Xc, yc)
    rng = np.random.default_rng(seed)
    d = Xc.shape[1]
    out = NoisyStats(
        S=S + cal.sigma_S * _symmetric_noise(rng, d),
        z=z + cal.sigma_z * rng.standard_normal(d),
        n=int(Xc.shape[0]),
        d=int(d),
        sigma_S=cal.sigma_S,
        sigma_z=cal.sigma_z,
        epsilon=float(epsilon),
        delta=float(delta),
        x_bound=float(x_bound),
        y_bound=float(y_bound),
        calibration=cal.kind,
        neighbouring=cal.neighbouring,
        name=name,
        meta=meta,
    )
    _warn_if_not_private(out)
    return out


def release_adassp(
    X: Any,
    y: Any,
    *,
    epsilon: float,
    delta: float,
    x_bound: float,
    y_bound: float,
    calibration: CalibrationKind = "auto",
    seed: int | np.random.SeedSequence | None = None,
    name: str = "",
) -> NoisyStats:
    """The distributed adaSSP release of one party (Alparslan et al., App. C.2; Wang 2018).

    ``S~, z~`` are released as in :func:`release` at ``(2 eps/3, 2 delta/3)``;
    the smallest eigenvalue of ``S`` at ``(eps/3, delta/3)``:
    ``lambda~ = max(lambda_min(S) + sigma_l v - sqrt(ln(6/delta)) sigma_l, 0)``.
    By Weyl's inequality replacing a row moves ``lambda_min(S)`` by at most
    ``x_bound^2``, so ``sigma_l`` is the analytic Gaussian sd for that
    sensitivity (Wang's ``sqrt(ln(6/delta)) x_bound^2/(eps/3)`` replaced by the
    exact calibration); the downward shift keeps ``lambda~ <= lambda_min`` with
    high probability, as in Wang (2018, Alg. 2).
    """
    X, y = validate_data(X, y)
    check_privacy_parameters(epsilon, delta)
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    ss_stats, ss_lambda = ss.spawn(2)
    base = release(
        X, y, epsilon=2.0 * epsilon / 3.0, delta=2.0 * delta / 3.0, x_bound=x_bound,
        y_bound=y_bound, calibration=calibration, seed=ss_stats, name=name,
    )
    rng = np.random.default_rng(ss_lambda)
    Xc, _, _ = clip(X, y, x_bound, y_bound)
    lam = float(np.linalg.eigvalsh(_exact_stats(Xc, y)[0])[0])
    sigma_l = analytic_gaussian_sigma(epsilon / 3.0, delta / 3.0, x_bound**2)
    lam_noisy = max(lam + sigma_l * rng.standard_normal() - math.sqrt(math.log(6.0 / delta)) * sigma_l, 0.0)
    fields = base.to_dict()
    fields.update(
        epsilon=float(epsilon), delta=float(delta), mechanism="adassp",
        lambda_min=lam_noisy, sigma_lambda=sigma_l,
    )
    return NoisyStats(**fields)


def release_bs(
    X: Any,
    y: Any,
    *,
    epsilon: float,
    delta: float,
    x_bound: float,
    y_bound: float,
    calibration: Literal["joint", "as_published"] = "joint",
    seed: int | np.random.SeedSequence | None = None,
    name: str = "",
) -> NoisyStats:
    """The MCMC-B&S release of one party (App. C.1, eq. 13; Bernstein & Sheldon 2019):
    ``S~ = S + sigma M``, ``z~ = z + sigma v``, ``u~ = y^T y + sigma w`` with one noise sd
    ``sigma = sigma(eps, delta) Delta_ss`` (:func:`~bayes_dpreg.privacy.calibrate_bs`).
    Clipping, seeding and the ``"as_published"`` warning as in :func:`release`. Its ``S~, z~``
    are a valid input to every other method too (with more noise than :func:`release`'s)."""
    check_privacy_parameters(epsilon, delta)
    sigma = calibrate_bs(epsilon, delta, x_bound, y_bound, calibration)
    Xc, yc, _, _ = _prepare(X, y, x_bound, y_bound, False, 1)
    S, z = _exact_stats(Xc, yc)
    rng = np.random.default_rng(seed)
    d = Xc.shape[1]
    out = NoisyStats(
        S=S + sigma * _symmetric_noise(rng, d), z=z + sigma * rng.standard_normal(d),
        u=float(yc @ yc + sigma * rng.standard_normal()), sigma_u=sigma, n=int(Xc.shape[0]), d=int(d),
        sigma_S=sigma, sigma_z=sigma, epsilon=float(epsilon), delta=float(delta), x_bound=float(x_bound),
        y_bound=float(y_bound), calibration=calibration,
        neighbouring="add_remove" if calibration == "as_published" else "replace", mechanism="bs", name=name,
    )
    _warn_if_not_private(out)
    return out


class StackedStats(NamedTuple):
    """The parties' released statistics stacked on a leading party axis (float64)."""

    S: np.ndarray  # (J, d, d)
    z: np.ndarray  # (J, d)
    n: np.ndarray  # (J,)
    sigma_S: np.ndarray  # (J,)
    sigma_z: np.ndarray  # (J,)
    epsilon: np.ndarray  # (J,)
    delta: np.ndarray  # (J,)
    x_bound: np.ndarray  # (J,)
    y_bound: np.ndarray  # (J,)
    lambda_min: np.ndarray | None = None  # (J,), adassp releases only
    u: np.ndarray | None = None  # (J,), bs releases only: noisy y^T y

    @property
    def J(self) -> int:
        return int(self.S.shape[0])

    @property
    def d(self) -> int:
        return int(self.S.shape[-1])


def as_stats_list(stats: "NoisyStats | Sequence[NoisyStats]") -> list[NoisyStats]:
    """Validate the analyst's input: one or more NoisyStats of a common dimension."""
    if isinstance(stats, NoisyStats):
        stats = [stats]
    stats = list(stats)
    if not stats:
        raise ValueError("need the statistics of at least one party")
    for j, s in enumerate(stats):
        if not isinstance(s, NoisyStats):
            raise TypeError(f"party {j}: expected NoisyStats (see bayes_dpreg.load_stats), got {type(s).__name__}")
    dims = [s.d for s in stats]
    if len(set(dims)) > 1:
        raise ValueError(f"the parties' statistics have different dimensions d = {dims}")
    return stats


def stack_stats(stats: "NoisyStats | Sequence[NoisyStats]") -> StackedStats:
    """Stack validated per-party statistics into arrays with a leading party axis."""
    stats = as_stats_list(stats)
    col = lambda name: np.array([getattr(s, name) for s in stats], dtype=np.float64)
    return StackedStats(
        S=np.stack([s.S for s in stats]),
        z=np.stack([s.z for s in stats]),
        n=np.array([s.n for s in stats], dtype=np.int64),
        sigma_S=col("sigma_S"),
        sigma_z=col("sigma_z"),
        epsilon=col("epsilon"),
        delta=col("delta"),
        x_bound=col("x_bound"),
        y_bound=col("y_bound"),
        lambda_min=col("lambda_min") if all(s.lambda_min is not None for s in stats) else None,
        u=col("u") if all(s.u is not None for s in stats) else None,
    )
