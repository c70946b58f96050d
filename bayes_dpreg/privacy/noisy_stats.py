"""A party's released statistics (:class:`NoisyStats`) and their file.

The analyst loads all parties' files with :func:`load_stats` and calls :func:`bayes_dpreg.fit`.

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
import stat
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..runtime.entry import public
from .gaussian import (
    Calibration,
    NotPrivateWarning,
    adassp_lambda_sigma,
    calibrate,
    calibrate_bs,
    check_privacy_parameters,
    discrete_bs,
)
from .sources import _real_array

if TYPE_CHECKING:
    pass

__all__ = [
    "NoisyStats",
    "load_stats",
    "StatsFileError",
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

    @property
    def bound_quantile(self) -> float | None:
        """The quantile of the party's rows the declared bounds were proposed at
        (``release(..., bound_quantile=q)``; :func:`~bayes_dpreg.propose_bounds`), public like the
        bounds themselves; ``None``: bounds declared as the data's limits."""
        q = self.meta.get("bound_quantile")
        return None if q is None else float(q)

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


def check_bound_quantile(q: Any) -> None:
    """``None``, or the quantile of a bound proposal: a number in ``[0.5, 1)``."""
    if q is not None and (isinstance(q, bool) or not isinstance(q, (int, float)) or not 0.5 <= q < 1):
        raise ValueError(f"bound_quantile must be a number in [0.5, 1) (ProposedBounds.quantile) or None, got {q!r}")


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
    check_bound_quantile(s.meta.get("bound_quantile"))
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
