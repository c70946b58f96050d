"""Per-party DP release of the summary statistics (Alparslan et al. 2023, eq. 8).

A data holder calls :func:`release` on its own ``(X_j, y_j)`` and publishes
the returned :class:`NoisyStats` (``NoisyStats.save``); the analyst loads all
parties' files with :func:`load_stats` and calls :func:`bayes_dpreg.fit`.

The file is JSON (floats written with ``repr``, so it round-trips exactly) and
holds only released quantities and public metadata: the noisy ``S~``, ``z~``,
the row count ``n`` (public under replacement neighbouring), the noise sds and
the declared bounds and privacy parameters, a random ``release_id`` and whether
the noise came from a caller's seed (``reproducible_seed``). On loading, only a
regular file under a size cap is read; the noise sds are recomputed from the
declared parameters and must match, the SHA-256 digest of the payload must
match, and ``S~`` must be symmetric and finite. Saving is atomic (a temporary
file in the same directory, fsync, then a link or rename) and refuses to
overwrite unless asked.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import stat
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from .entry import public
from .gram import Gram
from .ledger import reserve
from .privacy import (
    Calibration,
    CalibrationKind,
    NoiseKind,
    NotPrivateWarning,
    adassp_lambda_sigma,
    analytic_gaussian_sigma,
    bs_sensitivity,
    calibrate,
    calibrate_bs,
    check_privacy_parameters,
    discrete_bs,
    discrete_gaussian,
    ssp_sensitivity,
    warn_if_clipped,
)
from .sources import _real_array, validate_data

if TYPE_CHECKING:
    from .ledger import PrivacyLedger

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
    "MAX_FILE_BYTES",
    "SeededReleaseWarning",
    "FloatNoiseWarning",
    "check_distinct",
    "warn_if_not_private",
]

FORMAT = "bayes_dpreg.noisy_stats"
FORMAT_VERSION = 3  # 2 adds release_id and reproducible_seed, 3 private; versions 1 and 2 are still read
MAX_FILE_BYTES = 64 * 2**20
MAX_ROWS = 10**12
_REL_TOL = 1e-12

Mechanism = Literal["ssp", "adassp", "bs"]


class StatsFileError(ValueError):
    """A statistics file is malformed, inconsistent or has been tampered with."""


class SeededReleaseWarning(NotPrivateWarning):
    """Noise drawn from a caller's seed: anyone who learns the seed can subtract it."""


class FloatNoiseWarning(NotPrivateWarning):
    """Floating-point Gaussian noise (``noise="float"``): its low-order bits can reveal the data."""


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
    release_id: str = ""
    reproducible_seed: bool = False
    noise: str = "float"
    features: tuple[str, ...] | None = None  # the feature columns' names (a header, a DataFrame, columns=)

    def __post_init__(self) -> None:
        S = np.array(_real_array("S", self.S), dtype=np.float64)
        z = np.array(_real_array("z", self.z), dtype=np.float64)
        S.setflags(write=False)
        z.setflags(write=False)
        object.__setattr__(self, "S", S)
        object.__setattr__(self, "z", z)
        if self.features is not None:
            object.__setattr__(self, "features", tuple(self.features))
        _check_stats(self)

    @property
    def private(self) -> bool:
        """Whether the release is (epsilon, delta)-DP as declared: discrete noise from OpenDP's
        CSPRNG. Floating-point noise (seeded or not) and the "as published" noise are not."""
        return self.noise == "discrete" and self.calibration != "as_published" and not self.reproducible_seed

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
            "release_id": self.release_id,
            "reproducible_seed": bool(self.reproducible_seed),
            "noise": self.noise,
            "features": None if self.features is None else list(self.features),
        }

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write the statistics as JSON, atomically: a temporary file in the target's directory,
        flushed to disk, then linked into place (or, with ``overwrite=True``, renamed over an
        existing file). Nothing is left behind on failure; an existing file is kept unless
        ``overwrite``."""
        payload = self.to_dict() | {"private": self.private}
        doc = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "payload": payload,
            "sha256": _digest(payload),
        }
        text = json.dumps(doc, indent=1, allow_nan=False)
        path = Path(path)
        if path.exists() and not overwrite:
            raise FileExistsError(f"{path} exists; pass overwrite=True (CLI: --force) to replace it")
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent if str(path.parent) else ".")
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            if overwrite:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)  # fails if the path appeared meanwhile: never overwrites
                os.unlink(tmp)
            _fsync_dir(path.parent)
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


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory if str(directory) else ".", os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _digest(payload: dict[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL_TOL, abs_tol=0.0)


def _expected_calibration(s: NoisyStats) -> tuple[Calibration, float | None]:
    """The calibration implied by the declared parameters of ``s`` (public information) and
    the third sd: ``sigma_lambda`` (adassp) or ``sigma_u`` (bs)."""
    if s.mechanism == "bs":
        if s.noise == "discrete":
            sig, k = discrete_bs(s.epsilon, s.delta, s.x_bound, s.y_bound, s.d, s.n)
            return Calibration(sig, sig, "joint", "replace", "discrete", k, k), sig
        sig = calibrate_bs(s.epsilon, s.delta, s.x_bound, s.y_bound, s.calibration)  # type: ignore[arg-type]
        return Calibration(sig, sig, "joint", "replace"), sig
    if s.mechanism == "ssp":
        eps, delta = s.epsilon, s.delta
    else:
        eps, delta = 2.0 * s.epsilon / 3.0, 2.0 * s.delta / 3.0
    cal = calibrate(
        eps,
        delta,
        s.x_bound,
        s.y_bound,
        s.calibration,  # type: ignore[arg-type]
        s.neighbouring,  # type: ignore[arg-type]
        noise=s.noise,  # type: ignore[arg-type]
        d=s.d,
        n=s.n,
    )
    sigma_lambda = None
    if s.mechanism == "adassp":
        sigma_lambda = adassp_lambda_sigma(s.epsilon, s.delta, s.x_bound, s.noise, s.n)[0]  # type: ignore[arg-type]
    return cal, sigma_lambda


def _on_grid(values: np.ndarray, k: int | None) -> bool:
    return k is None or bool(np.all(np.fmod(np.asarray(values), 2.0**k) == 0.0))


def _check_stats(s: NoisyStats) -> None:
    """Consistency of a NoisyStats: shapes, finiteness, symmetry, privacy metadata."""
    check_privacy_parameters(s.epsilon, s.delta)
    for name in ("x_bound", "y_bound", "sigma_S", "sigma_z"):
        v = getattr(s, name)
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    if isinstance(s.d, bool) or not isinstance(s.d, (int, np.integer)) or s.d < 1:
        raise ValueError(f"d must be a positive integer, got {s.d!r}")
    if isinstance(s.n, bool) or not isinstance(s.n, (int, np.integer)) or not s.d <= s.n <= MAX_ROWS:
        raise ValueError(f"n must be an integer in [d, 1e12] = [{s.d}, {MAX_ROWS}], got {s.n!r}")
    if not isinstance(s.release_id, str) or not isinstance(s.reproducible_seed, (bool, np.bool_)):
        raise ValueError("release_id must be a string and reproducible_seed a boolean")
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
    if s.noise not in ("discrete", "float"):
        raise ValueError(f"noise must be 'discrete' or 'float', got {s.noise!r}")
    if s.features is not None:
        width = s.d - int(bool(s.meta.get("intercept")))
        if len(s.features) != width or not all(isinstance(f, str) and f for f in s.features):
            raise ValueError(f"features must be {width} non-empty names (the released columns), got {list(s.features)}")
        if len(set(s.features)) != len(s.features):
            raise ValueError(f"feature names must be distinct, got {list(s.features)}")
    if s.noise == "discrete" and (s.calibration == "as_published" or s.reproducible_seed):
        raise ValueError("discrete noise is drawn from OpenDP's CSPRNG: never seeded, never 'as_published'")
    cal, sig_l = _expected_calibration(s)
    sig_S, sig_z = cal.sigma_S, cal.sigma_z
    if not (_close(s.sigma_S, sig_S) and _close(s.sigma_z, sig_z)):
        raise ValueError(
            f"noise sds (sigma_S={s.sigma_S!r}, sigma_z={s.sigma_z!r}) do not match the declared "
            f"privacy parameters, which imply sigma_S={sig_S!r}, sigma_z={sig_z!r}"
        )
    if not (
        _on_grid(s.S, cal.grid_S)
        and _on_grid(s.z, cal.grid_z)
        and (s.u is None or _on_grid(np.array([s.u]), cal.grid_z))
    ):
        raise ValueError(f"discrete-noise statistics must lie on their grid 2^{cal.grid_S} (and 2^{cal.grid_z})")
    if s.mechanism == "adassp":
        if s.lambda_min is None or s.sigma_lambda is None:
            raise ValueError("an adassp release must carry lambda_min and sigma_lambda")
        if not (math.isfinite(s.lambda_min) and s.lambda_min >= 0):
            raise ValueError(f"lambda_min must be finite and >= 0, got {s.lambda_min!r}")
        if sig_l is None or not _close(s.sigma_lambda, sig_l):
            raise ValueError(f"sigma_lambda={s.sigma_lambda!r} does not match the declared parameters ({sig_l!r})")
    elif s.lambda_min is not None or s.sigma_lambda is not None:
        raise ValueError("lambda_min is only released by the adassp mechanism")
    if s.mechanism == "bs":
        if s.u is None or s.sigma_u is None:
            raise ValueError("a bs release must carry u (the noisy y^T y) and sigma_u")
        if not math.isfinite(s.u):
            raise ValueError(f"u must be finite, got {s.u!r}")
        if sig_l is None or not _close(s.sigma_u, sig_l):
            raise ValueError(f"sigma_u={s.sigma_u!r} does not match the declared parameters ({sig_l!r})")
    elif s.u is not None or s.sigma_u is not None:
        raise ValueError("u = y^T y is only released by the bs mechanism")


_SCHEMA: dict[str, tuple[type, ...]] = {
    "S": (list,),
    "z": (list,),
    "n": (int,),
    "d": (int,),
    "sigma_S": (int, float),
    "sigma_z": (int, float),
    "epsilon": (int, float),
    "delta": (int, float),
    "x_bound": (int, float),
    "y_bound": (int, float),
    "calibration": (str,),
    "neighbouring": (str,),
    "mechanism": (str,),
    "lambda_min": (int, float, type(None)),
    "sigma_lambda": (int, float, type(None)),
    "u": (int, float, type(None)),
    "sigma_u": (int, float, type(None)),
    "name": (str,),
    "meta": (dict,),
    "release_id": (str,),
    "reproducible_seed": (bool,),
    "noise": (str,),
    "features": (list, type(None)),
    "private": (bool,),
}


def _read_capped(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``: FIFOs, devices and directories are
    refused before they are opened for reading, and reading stops past the cap."""
    st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        raise StatsFileError(f"{path}: not a regular file")
    if st.st_size > max_bytes:
        raise StatsFileError(f"{path}: {st.st_size} bytes, over the {max_bytes}-byte limit (max_bytes=)")
    with open(path, "rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise StatsFileError(f"{path}: more than {max_bytes} bytes")
    return data


def _check_schema(path: Path, payload: dict[str, Any]) -> None:
    for key, types in _SCHEMA.items():
        if key not in payload:
            continue
        v = payload[key]
        if isinstance(v, bool) and bool not in types:
            raise StatsFileError(f"{path}: field {key!r} must be {types[0].__name__}, got a boolean")
        if not isinstance(v, types):
            raise StatsFileError(
                f"{path}: field {key!r} must be {' or '.join(t.__name__ for t in types)}, got {type(v).__name__}"
            )
    if not all(isinstance(row, list) for row in payload["S"]):
        raise StatsFileError(f"{path}: field 'S' must be a list of rows")
    for key, values in (("S", [x for row in payload["S"] for x in row]), ("z", payload["z"])):
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
            raise StatsFileError(f"{path}: field {key!r} must hold numbers only")
    if payload.get("features") is not None and not all(isinstance(x, str) for x in payload["features"]):
        raise StatsFileError(f"{path}: field 'features' must hold strings only")


@public
def load_stats(path: str | os.PathLike, *, max_bytes: int = MAX_FILE_BYTES) -> NoisyStats:
    """Read a file written by :meth:`NoisyStats.save`, rejecting anything malformed: not a
    regular file, larger than ``max_bytes`` (default 64 MiB), not JSON, a wrong format or
    version, a checksum mismatch, missing, extra or mistyped fields, or statistics that
    are inconsistent with their declared privacy parameters. Version 1 files (before
    ``release_id``) are read with an id derived from their checksum."""
    path = Path(path)
    raw = _read_capped(path, max_bytes)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # JSON and UTF-8 errors, integers past Python's digit limit, nesting
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise StatsFileError(f"{path}: not a valid JSON statistics file ({reason})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise StatsFileError(f"{path}: not a bayes_dpreg statistics file (missing format {FORMAT!r})")
    version = doc.get("version")
    if version not in (1, FORMAT_VERSION) or isinstance(version, bool):
        raise StatsFileError(f"{path}: unsupported format version {version!r} (this is {FORMAT_VERSION})")
    payload = doc.get("payload")
    if not isinstance(payload, dict):
        raise StatsFileError(f"{path}: missing payload")
    try:
        digest = _digest(payload)
    except ValueError:
        raise StatsFileError(f"{path}: contains NaN or infinity") from None
    except RecursionError:
        raise StatsFileError(f"{path}: values nested too deeply") from None
    if doc.get("sha256") != digest:
        raise StatsFileError(f"{path}: checksum mismatch, the file was modified after it was written")
    if version == 1:
        payload = dict(payload, release_id=f"v1-{digest[:32]}", reproducible_seed=False, noise="float")
    if version in (1, 2):
        payload = dict(payload, private=None, features=None)
    expected = set(NoisyStats.__dataclass_fields__) | {"private"}
    if set(payload) != expected:
        missing, extra = expected - set(payload), set(payload) - expected
        raise StatsFileError(f"{path}: wrong fields (missing {sorted(missing)}, unexpected {sorted(extra)})")
    private = payload.pop("private")
    _check_schema(path, payload)
    if version == FORMAT_VERSION and not isinstance(private, bool):
        raise StatsFileError(f"{path}: field 'private' must be bool, got {type(private).__name__}")
    try:
        stats = NoisyStats(**payload)
    except (ValueError, TypeError, OverflowError) as exc:
        raise StatsFileError(f"{path}: {exc}") from None
    if private is not None and private != stats.private:
        raise StatsFileError(f"{path}: says private={private}, but its noise ({stats.noise}) makes it {stats.private}")
    warn_if_not_private(stats)
    return stats


def check_distinct(stats: Sequence[NoisyStats]) -> None:
    """Refuse the same release twice (by ``release_id`` or identical statistics) and two parties
    with the same name: counting a party twice shrinks the posterior by sqrt(2) for nothing."""
    seen: dict[Any, int] = {}
    for j, s in enumerate(stats):
        keys: list[tuple[Any, ...]] = [("id", s.release_id)] if s.release_id else []
        keys.append(("content", s.S.tobytes(), s.z.tobytes(), int(s.n)))
        for key in keys:
            if key in seen:
                what = f"release_id {s.release_id!r}" if key[0] == "id" else "identical statistics"
                raise ValueError(
                    f"parties {seen[key]} and {j} are the same release ({what}): each party's "
                    "statistics may enter a fit once"
                )
            seen[key] = j
    names = [s.name for s in stats if s.name]
    dup = sorted({nm for nm in names if names.count(nm) > 1})
    if dup:
        raise ValueError(f"party names must be distinct, got {dup} more than once")


def warn_if_not_private(stats: NoisyStats, stacklevel: int = 3) -> None:
    if stats.calibration == "as_published":
        warnings.warn(
            f"{stats.name or 'statistics'}: released with the authors' 'as published' noise, which does NOT "
            f"give ({stats.epsilon}, {stats.delta})-DP; for reproducing published figures only",
            NotPrivateWarning,
            stacklevel=stacklevel,
        )
    if stats.reproducible_seed:
        warnings.warn(
            f"{stats.name or 'statistics'}: the noise was drawn from a caller's seed; whoever knows the seed can "
            "remove it, so the release is not private (seeds are for studies)",
            SeededReleaseWarning,
            stacklevel=stacklevel,
        )
    elif stats.noise == "float" and stats.calibration != "as_published":
        warnings.warn(
            f"{stats.name or 'statistics'}: floating-point Gaussian noise (noise='float'), whose low-order bits can "
            "reveal the data (Mironov 2012): not private; release with the default discrete noise",
            FloatNoiseWarning,
            stacklevel=stacklevel,
        )


def _ssp_components(
    cal: Calibration, epsilon: float, delta: float, x_bound: float, y_bound: float
) -> list[tuple[float, float]]:
    """(noise sd, L2 sensitivity) of each Gaussian mechanism in an ssp release. For a calibrated
    release ``sigma = sigma_unit(eps, delta) * Delta`` (``Delta`` grown by the grid rounding for
    discrete noise), so ``Delta = sigma / sigma_unit``; "as published" noise is accounted at the
    true replacement sensitivities."""
    if cal.kind == "joint":
        return [(cal.sigma_S, cal.sigma_S / analytic_gaussian_sigma(epsilon, delta))]
    if cal.kind == "split":
        unit = analytic_gaussian_sigma(epsilon / 2.0, delta / 2.0)
        return [(cal.sigma_S, cal.sigma_S / unit), (cal.sigma_z, cal.sigma_z / unit)]
    sens = ssp_sensitivity(x_bound, y_bound, "replace")
    if cal.sigma_S == cal.sigma_z:
        return [(cal.sigma_S, sens["joint"])]
    return [(cal.sigma_S, sens["S"]), (cal.sigma_z, sens["z"])]


def _noise_kind(noise: str, seed: Any, calibration: str) -> NoiseKind:
    if noise == "auto":
        return "float" if seed is not None or calibration == "as_published" else "discrete"
    if noise == "discrete" and (seed is not None or calibration == "as_published"):
        raise ValueError("discrete noise comes from OpenDP's CSPRNG: it cannot be seeded or 'as_published'")
    if noise not in ("discrete", "float"):
        raise ValueError(f"noise must be 'auto', 'discrete' or 'float', got {noise!r}")
    return noise  # type: ignore[return-value]


def _symmetric_from_upper(upper: np.ndarray, d: int) -> np.ndarray:
    """The symmetric ``d x d`` matrix whose upper triangle (diagonal included, row-major) is ``upper``."""
    iu = np.triu_indices(d)
    M = np.zeros((d, d))
    M[iu] = upper
    return M + np.triu(M, 1).T


def _discrete_ssp_noise(ex: _Exact, cal: Calibration) -> tuple[np.ndarray, np.ndarray]:
    """``[upper(S), z]`` through the discrete Gaussian mechanism: one call (joint) or two (split),
    on values rounded to the grid exactly from the exact sums (OpenDP's own rounding is then the
    identity, and the one charged to the sensitivity)."""
    S, z, _ = ex.on_grid(cal.grid_S, cal.grid_z)  # type: ignore[arg-type]
    d = S.shape[0]
    upper = S[np.triu_indices(d)]
    if cal.kind == "joint":
        v = discrete_gaussian(np.concatenate([upper, z]), cal.sigma_S, cal.grid_S)  # type: ignore[arg-type]
        return _symmetric_from_upper(v[: upper.size], d), v[upper.size :]
    return (
        _symmetric_from_upper(discrete_gaussian(upper, cal.sigma_S, cal.grid_S), d),  # type: ignore[arg-type]
        discrete_gaussian(z, cal.sigma_z, cal.grid_z),  # type: ignore[arg-type]
    )


def _new_release_id(rng: np.random.Generator, seed: Any, *released: np.ndarray) -> str:
    """128 random bits from the OS's CSPRNG; for a study's seeded release (reproducible as a
    whole) a hash of the seeded generator's next bytes and the released values, so that the
    same seed on different data still gives different ids."""
    if seed is None:
        return secrets.token_hex(16)
    h = hashlib.sha256(rng.bytes(16))
    for a in released:
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()[:32]


def _symmetric_noise(rng: np.random.Generator, d: int) -> np.ndarray:
    """``M``: symmetric, upper triangle (with diagonal) iid N(0, 1)."""
    return _symmetric_from_upper(rng.standard_normal(d * (d + 1) // 2), d)


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


def _rows_to_release(X: Any, y: Any, intercept: bool, average: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Validate the in-memory data and average rows (B.1): the rows that are clipped and released."""
    X, y = validate_data(X, y)
    if isinstance(average, bool) or not isinstance(average, (int, np.integer)) or average < 1:
        raise ValueError(f"average_rows must be a positive integer, got {average!r}")
    if average == 1:
        return X, y, {}
    if intercept:
        raise ValueError("average_rows and intercept cannot be combined (App. B.1 assumes centred features)")
    X, y = average_rows(X, y, average)
    validate_data(X, y)
    return X, y, {"average_rows": int(average)}


class _Exact(NamedTuple):
    """The exact (clipped) statistics of one party, before any noise: never released as such."""

    gram: Gram  # S, z, y^T y, exactly (bayes_dpreg.gram)
    x_bound: float  # the released rows' norm bound (grown by the intercept column)
    meta: dict[str, Any]
    features: tuple[str, ...] | None = None  # the feature columns' names

    @property
    def n(self) -> int:
        return self.gram.n

    @property
    def d(self) -> int:
        return self.gram.p - 1

    def values(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(S, z, y^T y)`` in float64, each exact sum rounded once."""
        return self.gram.split(self.gram.values())

    def on_grid(self, k_S: int, k_z: int) -> tuple[np.ndarray, np.ndarray, float]:
        """``(S, z, y^T y)`` rounded exactly to the grids ``2^k_S`` (``S``) and ``2^k_z`` (``z``, ``y^T y``)."""
        S, z, yy = self.gram.split(self.gram.on_grid(k_z))
        if k_S != k_z:  # the split calibration: S on its own grid
            S = self.gram.split(self.gram.on_grid(k_S))[0]
        return S, z, yy


def _exact_release_stats(
    X: Any,
    y: Any,
    x_bound: float,
    y_bound: float,
    intercept: bool,
    average: int,
    columns: list[str] | None,
    progress: bool,
) -> _Exact:
    """The exact Gram (``S``, ``z``, ``y^T y``) of the clipped (averaged, intercept-augmented)
    rows, the released rows' norm bound and the metadata; in memory for arrays, batch by batch
    for tables (both through :func:`~bayes_dpreg.sources.clipped_sums`)."""
    from .sources import accumulate, clipped_sums, feature_names, is_table_source

    if not is_table_source(X):
        names = _array_names(X, columns)
        X, y, meta = _rows_to_release(X, y, intercept, average)
        if names is not None and len(names) != X.shape[1]:
            raise ValueError(f"columns= names {len(names)} features but X has {X.shape[1]} columns")
        gram, report = clipped_sums(X, y, x_bound, y_bound, intercept)
    else:
        if average != 1:
            raise ValueError("average_rows needs the data in memory (arrays), not a streamed table")
        acc = accumulate(
            X, x_bound, y_bound, y=-1 if y is None else y, columns=columns, intercept=intercept, progress=progress
        )
        if acc.gram is None:
            raise ValueError("the table has no rows")
        gram, report, meta = acc.gram, acc.report, {}
        names = feature_names(X, -1 if y is None else y, columns)
        if gram.n < gram.p - 1:
            raise ValueError(f"a party needs at least d = {gram.p - 1} rows, got n = {gram.n}")
    warn_if_clipped(report)
    if intercept:
        meta["intercept"] = True
    features = None if names is None else tuple(str(f) for f in names)
    return _Exact(gram, math.hypot(1.0, x_bound) if intercept else x_bound, meta, features)


def _array_names(X: Any, columns: list[str] | None) -> list[str] | None:
    """Names of in-memory features: ``columns``, else a DataFrame's columns, else none."""
    if columns is not None:
        return [str(c) for c in columns]
    cols = getattr(X, "columns", None)
    return [str(c) for c in cols] if cols is not None and not isinstance(X, np.ndarray) else None


@public
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
    noise: NoiseKind | Literal["auto"] = "auto",
    ledger: PrivacyLedger | str | os.PathLike | None = None,
    columns: list[str] | None = None,
    progress: bool = False,
) -> NoisyStats:
    """Release ``(S~, z~)`` of one party under (epsilon, delta)-DP (replacement neighbours).

    Rows with ``||x|| > x_bound`` are scaled onto the ball and ``y`` is clipped
    to ``[-y_bound, y_bound]`` first; a :class:`~bayes_dpreg.privacy.ClippingWarning`
    tells the caller how many (this count is *not* released). The noise sds
    come from :func:`~bayes_dpreg.privacy.calibrate`; ``calibration="as_published"``
    (the authors' under-calibrated noise, for reproductions only) is not private and
    warns with :class:`~bayes_dpreg.privacy.NotPrivateWarning`. Without ``seed`` the
    noise generator is seeded from the operating system's entropy; a ``seed`` is for
    studies: the release then records ``reproducible_seed=True`` and warns
    (:class:`SeededReleaseWarning`), and ``fit`` warns again. Every release gets a random
    ``release_id``.

    ``noise="auto"`` (default) is ``"discrete"`` unless a ``seed`` is given or the
    calibration is ``"as_published"``: ``[upper(S), z]`` is rounded to a grid ``2^k`` (about
    ``2^-20`` of the noise sd) and gets exact discrete Gaussian noise from OpenDP's CSPRNG
    (:func:`~bayes_dpreg.privacy.discrete_gaussian`), with the rounding added to the
    sensitivity, so that the released floats carry no low-order-bit trace of the data
    (Mironov 2012). ``"float"`` is NumPy's floating-point Gaussian (seedable, for studies):
    its low-order bits can leak, so it is not private.

    ``X`` may also be a table streamed in batches (:mod:`bayes_dpreg.sources`): a CSV or
    Parquet path, a pyarrow Table/Dataset/RecordBatchReader with ``y`` the response
    column's name (or index; ``None``: the last) and ``columns`` the features (default: all
    others), or an iterable of ``(X, y)`` batches (``y=None``); memory stays flat in ``n``
    and ``progress=True`` shows a tqdm bar.

    ``ledger`` (a :class:`~bayes_dpreg.ledger.PrivacyLedger` or the path of an existing one)
    records the release; one that would exceed the ledger's budget raises
    :class:`~bayes_dpreg.ledger.BudgetExceededError` before any noise is drawn.

    ``intercept=True`` (App. B.2) releases the statistics of ``[1, x_i]``: the features are
    clipped to ``x_bound`` and the released rows have norm at most ``sqrt(1 + x_bound^2)``,
    the ``x_bound`` recorded in the result. ``average_rows=k`` (App. B.1) releases the
    statistics of :func:`average_rows` instead (for non-normal features); ``x_bound`` and
    ``y_bound`` then bound the *averaged* rows, which are clipped to them. (The paper's
    remark that averaged statistics keep the sensitivities of the originals holds only
    under such bounds: an averaged row of ``k`` rows bounded by ``B`` can have norm ``sqrt(k) B``.)
    """
    check_privacy_parameters(epsilon, delta)
    calibrate(epsilon, delta, x_bound, y_bound, calibration)  # every parameter checked before the data are read
    kind = _noise_kind(noise, seed, calibration)
    ex = _exact_release_stats(X, y, x_bound, y_bound, intercept, average_rows, columns, progress)
    cal = calibrate(epsilon, delta, ex.x_bound, y_bound, calibration, noise=kind, d=ex.d, n=ex.n)
    release_id = secrets.token_hex(16)
    reserve(
        ledger,
        "ssp",
        name,
        epsilon,
        delta,
        kind,
        "" if seed is not None else release_id,
        _ssp_components(cal, epsilon, delta, ex.x_bound, y_bound),
    )
    out = _noisy_ssp(
        ex,
        cal,
        epsilon,
        delta,
        y_bound,
        kind,
        seed,
        name,
        release_id,
        seed is not None,
    )
    warn_if_not_private(out)
    return out


def _noisy_ssp(
    ex: _Exact,
    cal: Calibration,
    epsilon: float,
    delta: float,
    y_bound: float,
    kind: NoiseKind,
    seed: Any,
    name: str,
    release_id: str,
    reproducible: bool,
) -> NoisyStats:
    """Add the calibrated noise to the exact ``S``, ``z`` (eq. 8): the one place SSP noise is drawn."""
    d = ex.d
    rng = np.random.default_rng(seed)
    if kind == "discrete":
        S_noisy, z_noisy = _discrete_ssp_noise(ex, cal)
    else:
        S, z, _ = ex.values()
        S_noisy, z_noisy = S + cal.sigma_S * _symmetric_noise(rng, d), z + cal.sigma_z * rng.standard_normal(d)
    return NoisyStats(
        S=S_noisy,
        z=z_noisy,
        n=int(ex.n),
        d=int(d),
        sigma_S=cal.sigma_S,
        sigma_z=cal.sigma_z,
        epsilon=float(epsilon),
        delta=float(delta),
        x_bound=float(ex.x_bound),
        y_bound=float(y_bound),
        calibration=cal.kind,
        neighbouring=cal.neighbouring,
        name=name,
        meta=ex.meta,
        release_id=release_id if seed is None else _new_release_id(rng, seed, S_noisy, z_noisy),
        reproducible_seed=reproducible,
        noise=kind,
        features=ex.features,
    )


@public
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
    ledger: PrivacyLedger | str | os.PathLike | None = None,
    columns: list[str] | None = None,
    progress: bool = False,
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
    check_privacy_parameters(epsilon, delta)
    calibrate(epsilon, delta, x_bound, y_bound, calibration)  # every parameter checked before the data are read
    seeded = seed is not None
    ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    ss_stats, ss_lambda = ss.spawn(2)
    kind: NoiseKind = "float" if seeded or calibration == "as_published" else "discrete"
    release_id = "" if seeded else secrets.token_hex(16)
    ex = _exact_release_stats(X, y, x_bound, y_bound, False, 1, columns, progress)
    cal = calibrate(2.0 * epsilon / 3.0, 2.0 * delta / 3.0, x_bound, y_bound, calibration, noise=kind, d=ex.d, n=ex.n)
    sigma_l, k = adassp_lambda_sigma(epsilon, delta, x_bound, kind, ex.n)
    reserve(
        ledger,
        "adassp",
        name,
        epsilon,
        delta,
        kind,
        release_id,
        _ssp_components(cal, 2.0 * epsilon / 3.0, 2.0 * delta / 3.0, x_bound, y_bound)
        + [(sigma_l, sigma_l / analytic_gaussian_sigma(epsilon / 3.0, delta / 3.0))],
    )
    base = _noisy_ssp(
        ex,
        cal,
        2.0 * epsilon / 3.0,
        2.0 * delta / 3.0,
        y_bound,
        kind,
        ss_stats if seeded else None,
        name,
        release_id,
        seeded,
    )
    lam = float(np.linalg.eigvalsh(ex.values()[0])[0])
    if k is not None:
        lam_dp = float(discrete_gaussian(np.array([lam]), sigma_l, k)[0])
    else:
        lam_dp = lam + sigma_l * np.random.default_rng(ss_lambda).standard_normal()
    lam_noisy = max(lam_dp - math.sqrt(math.log(6.0 / delta)) * sigma_l, 0.0)
    fields = base.to_dict()
    fields.update(
        epsilon=float(epsilon),
        delta=float(delta),
        mechanism="adassp",
        lambda_min=lam_noisy,
        sigma_lambda=sigma_l,
        release_id=release_id or base.release_id,
    )
    out = NoisyStats(**fields)
    warn_if_not_private(out)
    return out


@public
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
    noise: NoiseKind | Literal["auto"] = "auto",
    ledger: PrivacyLedger | str | os.PathLike | None = None,
    columns: list[str] | None = None,
    progress: bool = False,
) -> NoisyStats:
    """The MCMC-B&S release of one party (App. C.1, eq. 13; Bernstein & Sheldon 2019):
    ``S~ = S + sigma M``, ``z~ = z + sigma v``, ``u~ = y^T y + sigma w`` with one noise sd
    ``sigma = sigma(eps, delta) Delta_ss`` (:func:`~bayes_dpreg.privacy.calibrate_bs`).
    Clipping, seeding, ``noise`` and the ``"as_published"`` warning as in :func:`release`. Its ``S~, z~``
    are a valid input to every other method too (with more noise than :func:`release`'s)."""
    check_privacy_parameters(epsilon, delta)
    sigma = calibrate_bs(epsilon, delta, x_bound, y_bound, calibration)
    kind = _noise_kind(noise, seed, calibration)
    ex = _exact_release_stats(X, y, x_bound, y_bound, False, 1, columns, progress)
    n, d = ex.n, ex.d
    rng = np.random.default_rng(seed)
    if kind == "discrete":
        sigma, k = discrete_bs(epsilon, delta, x_bound, y_bound, d, n)
        S, z, yy = ex.on_grid(k, k)
    else:
        S, z, yy = ex.values()
    sens = (
        bs_sensitivity(x_bound, y_bound, "replace")
        if calibration == "as_published"
        else sigma / analytic_gaussian_sigma(epsilon, delta)
    )
    release_id = "" if seed is not None else secrets.token_hex(16)
    reserve(ledger, "bs", name, epsilon, delta, kind, release_id, [(sigma, sens)])
    if kind == "discrete":
        m = d * (d + 1) // 2
        v = discrete_gaussian(np.concatenate([S[np.triu_indices(d)], z, [yy]]), sigma, k)
        S_noisy, z_noisy, u = _symmetric_from_upper(v[:m], d), v[m:-1], float(v[-1])
    else:
        S_noisy, z_noisy = S + sigma * _symmetric_noise(rng, d), z + sigma * rng.standard_normal(d)
        u = float(yy + sigma * rng.standard_normal())
    out = NoisyStats(
        S=S_noisy,
        z=z_noisy,
        u=u,
        sigma_u=sigma,
        n=int(n),
        d=int(d),
        noise=kind,
        sigma_S=sigma,
        sigma_z=sigma,
        epsilon=float(epsilon),
        delta=float(delta),
        x_bound=float(x_bound),
        y_bound=float(y_bound),
        calibration=calibration,
        neighbouring="add_remove" if calibration == "as_published" else "replace",
        mechanism="bs",
        name=name,
        release_id=release_id or _new_release_id(rng, seed, S_noisy, z_noisy),
        reproducible_seed=seed is not None,
        features=ex.features,
    )
    warn_if_not_private(out)
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


def as_stats_list(stats: NoisyStats | Sequence[NoisyStats]) -> list[NoisyStats]:
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


def stack_stats(stats: NoisyStats | Sequence[NoisyStats]) -> StackedStats:
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
