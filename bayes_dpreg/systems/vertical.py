"""Wu et al. (2022): DP data release for linear regression on vertically partitioned data.

Setting (Sec. 3). ``m`` parties hold disjoint column blocks ``D^j`` (``n x d_j``) of one
data matrix ``D = [D^1, ..., D^m] = [X, Y]`` over the same ``n`` subjects; the label ``Y``
is the **last column of the last party**. Every entry is declared to satisfy
``|D_ij| <= 1`` (Assumption 2). Each party publishes a noisy version of its own block;
a learner fits OLS on the concatenated public data. Privacy is per party (Sec. 3,
"Privacy constraint"): ``A^priv(D^j; B)`` is (eps, delta)-DP w.r.t. ``D^j`` for every
fixed shared ``B``.

Mechanisms (``d_max = max_j d_j``, ``sigma`` = unit-sensitivity noise multiplier):

* **DGM** (Algorithm 1): party ``j`` releases ``D^j + R^j``, ``R^j`` iid
  ``N(0, 4 d_max sigma^2)``; the learner solves
  ``(X~^T X~ / n - 4 d_max sigma^2 I)^-1 (X~^T Y~ / n)`` (de-biased Hessian).
* **BGM** (Sec. 5.1 baseline): the same release, plain OLS on it (no de-biasing).
* **RMGM** (Algorithm 2): all parties share a ``k x n`` matrix ``B`` of iid +-1 signs and
  party ``j`` releases ``B D^j / sqrt(k) + R^j`` (``R^j`` is ``k x d_j``, same variance);
  the learner runs plain OLS on the ``k`` released rows. Here ``B`` is generated from a
  *shared seed* that all parties know (Algorithm 2 has party 1 draw and send it; both
  are public to the parties, and privacy holds conditionally on ``B``).

Sensitivity (Sec. 4.1/4.2): neighbours differ in one row ``i``, so
``||B D/sqrt(k) - B D'/sqrt(k)||_F = ||b_i|| ||D_i - D'_i|| / sqrt(k) = ||D_i - D'_i||
<= 2 sqrt(d_j) <= 2 sqrt(d_max)`` for *any* ``B`` in ``{-1, 1}^{k x n}`` (column ``b_i``
has norm ``sqrt(k)``); DGM (no mixing) has the same bound.

Noise calibration (``calibration=``):

* ``"classical"`` -- the paper's Lemma 1: ``sigma_{eps,delta} = sqrt(2 ln(1.25/delta))/eps``
  (valid for ``eps <= 1``; larger ``eps`` raises), entry sd ``2 sqrt(d_max) sigma``;
* ``"analytic"`` -- **our improvement, not in the paper**: the exact Gaussian mechanism
  of Balle & Wang (2018) at sensitivity ``2 sqrt(d_max)``; less noise, any ``eps > 0``.

Training (Sec. 5.1): ``lambda I`` with ``lambda = 1e-5`` is added to every Hessian;
Hessians are normalised by ``n`` (``X^T X / n``), as in the DGM derivation.

Erratum (NOTES.md): eq. (2) prints ``(X^T X) X^T Y`` -- the OLS solution is
``(X^T X)^-1 X^T Y``, which is what is implemented.

Caveat: the paper's guarantee is per party. One *subject's* row spans all parties, so
the joint release ``[D^1..D^m]`` has sensitivity ``2 sqrt(d + 1)`` against the same
per-entry noise, i.e. it is DP for the whole row only at a larger ``eps`` (by the
classical bound, where it applies, ``eps sqrt((d+1)/d_max)``).

Out-of-bound data: each party clips its entries to ``[-1, 1]`` (``bound_policy="clip"``,
default; a :class:`~bayes_dpreg.privacy.gaussian.ClippingWarning` is emitted and the count is
recorded in :attr:`VerticalRelease.n_clipped`) or refuses them (``"raise"``).

Seeds and noise: ``mixing_seed`` is the randomness shared by all parties (public to them)
and must be given. ``noise_seed=None`` (a real release) draws exact discrete Gaussian
noise with OpenDP from the operating system's CSPRNG, as the package's own release does
(``docs/privacy.md``): every entry is rounded to a grid ``2^g`` (``g`` from
:func:`~bayes_dpreg.privacy.gaussian.discrete_grid`, about ``2^-20`` of the noise sd) and the
rounding is charged to the sensitivity, ``2 sqrt(d_max) + 2^g sqrt(m)`` for a block of
``m`` entries, so the sd grows by a relative ``2^g sqrt(m) / (2 sqrt(d_max))`` (below 1e-3
for blocks up to 1e5 x 10) and the released floats carry no low-order-bit trace of the
data. A given ``noise_seed`` feeds NumPy Gaussian noise (party ``j`` uses child ``j`` of
its ``SeedSequence``): reproducible, for experiments only, not private.

Real data (Sec. 5.3): :func:`load_insurance` and :func:`load_bike_sharing`, min-max
scaled to ``[0, 1]``; see their docstrings for the encodings.
"""

from __future__ import annotations

import csv
import math
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from bayes_dpreg.privacy.gaussian import (
    ClippingWarning,
    analytic_gaussian_sigma,
    check_privacy_parameters,
    classical_gaussian_sigma,
    discrete_gaussian,
    discrete_grid,
)
from bayes_dpreg.privacy.noisy_stats import SeededReleaseWarning

__all__ = [
    "CalibrationName",
    "BoundPolicy",
    "RIDGE",
    "PAPER_K_GRID",
    "noise_multiplier",
    "entry_noise_std",
    "paper_k",
    "mixing_matrix",
    "mix",
    "split_attributes",
    "PartyRelease",
    "VerticalRelease",
    "discrete_noise_std",
    "release_party_dgm",
    "release_party_rmgm",
    "release_dgm",
    "release_rmgm",
    "FitResult",
    "fit_ols",
    "fit_dgm",
    "fit_bgm",
    "fit_rmgm",
    "test_mse",
    "SyntheticData",
    "synthetic_parties",
    "RealData",
    "load_insurance",
    "load_bike_sharing",
    "train_test_split",
]

CalibrationName = Literal["classical", "analytic"]
BoundPolicy = Literal["clip", "raise"]
Seed = int | Sequence[int] | np.random.SeedSequence | None

RIDGE = 1e-5
"""``lambda`` added to every Hessian (Sec. 5.1)."""

PAPER_K_GRID = (100, 300, 1000, 3000, 10000)
"""The ``k`` values searched on real data (Sec. 5.1)."""

_B_BLOCK = 256  # rows of B generated per draw; part of the definition of the shared stream


# --------------------------------------------------------------------------- calibration


def noise_multiplier(epsilon: float, delta: float, calibration: CalibrationName = "classical") -> float:
    """Unit-sensitivity noise sd ``sigma_{eps,delta}`` (Lemma 1, or Balle-Wang for ``"analytic"``)."""
    check_privacy_parameters(epsilon, delta)
    if calibration == "classical":
        return classical_gaussian_sigma(epsilon, delta)
    if calibration == "analytic":
        return analytic_gaussian_sigma(epsilon, delta)
    raise ValueError(f"calibration must be 'classical' or 'analytic', got {calibration!r}")


def entry_noise_std(epsilon: float, delta: float, d_max: int, calibration: CalibrationName = "classical") -> float:
    """Per-entry noise sd ``2 sqrt(d_max) sigma_{eps,delta}`` (Alg. 1 line 3, Alg. 2 line 4).

    The L2 sensitivity of one party's release is ``2 sqrt(d_max)`` (Sec. 4.1, 4.2).
    """
    _check_positive_int("d_max", d_max)
    sens = 2.0 * math.sqrt(d_max)
    check_privacy_parameters(epsilon, delta)
    if calibration == "classical":
        return classical_gaussian_sigma(epsilon, delta, sens)
    if calibration == "analytic":
        return analytic_gaussian_sigma(epsilon, delta, sens)
    raise ValueError(f"calibration must be 'classical' or 'analytic', got {calibration!r}")


def paper_k(n: int, epsilon: float, delta: float, calibration: CalibrationName = "classical") -> int:
    """``k = sqrt(n) / sigma_{eps,delta}`` rounded, at least 1 (Sec. 5.1, synthetic data)."""
    _check_positive_int("n", n)
    return max(1, int(round(math.sqrt(n) / noise_multiplier(epsilon, delta, calibration))))


# --------------------------------------------------------------------------- shared mixing


def _sign_blocks(mixing_seed: Seed, k: int, n: int) -> Iterator[np.ndarray]:
    """The rows of ``B`` (iid uniform +-1, Alg. 2 line 2) in blocks of ``_B_BLOCK`` rows.

    The stream depends only on ``(mixing_seed, k, n)``, so every party regenerates the
    same ``B`` from the shared seed.
    """
    if mixing_seed is None:
        raise ValueError("mixing_seed must be given explicitly: every party derives the same B from it")
    rng = np.random.default_rng(_fresh(mixing_seed))
    width = -(-n // 8)
    for start in range(0, k, _B_BLOCK):
        rows = min(_B_BLOCK, k - start)
        raw = np.frombuffer(rng.bytes(rows * width), dtype=np.uint8).reshape(rows, width)
        bits = np.unpackbits(raw, axis=1, count=n)
        yield 1.0 - 2.0 * bits


def mixing_matrix(mixing_seed: Seed, k: int, n: int) -> np.ndarray:
    """The shared ``k x n`` sign matrix ``B`` (Alg. 2 line 2), materialised (small ``k n`` only)."""
    _check_positive_int("k", k)
    _check_positive_int("n", n)
    return np.vstack(list(_sign_blocks(mixing_seed, k, n)))


def mix(block: np.ndarray, k: int, mixing_seed: Seed) -> np.ndarray:
    """``B D / sqrt(k)`` for the shared ``B`` (Alg. 2 line 4), without storing ``B``.

    Equals ``mixing_matrix(mixing_seed, k, n) @ block / sqrt(k)``.
    """
    _check_positive_int("k", k)
    block = _as_block(block, "block")
    out = np.empty((k, block.shape[1]))
    start = 0
    for signs in _sign_blocks(mixing_seed, k, block.shape[0]):
        out[start : start + signs.shape[0]] = signs @ block
        start += signs.shape[0]
    return out / math.sqrt(k)


# --------------------------------------------------------------------------- validation


def _check_positive_int(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _as_block(block: np.ndarray, name: str) -> np.ndarray:
    """A party's block as a float64 ``n x d_j`` array (1-D input is one column)."""
    try:
        arr = np.array(block, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} is not numeric: {exc}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D (n x d_j), got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _as_parties(parties: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Validate the column blocks: at least one party, equal row counts, >= 2 columns in all."""
    if isinstance(parties, np.ndarray) or len(parties) < 1:
        raise ValueError("parties must be a non-empty sequence of column blocks (one array per party)")
    blocks = [_as_block(b, f"party {j}") for j, b in enumerate(parties)]
    rows = [b.shape[0] for b in blocks]
    if len(set(rows)) != 1:
        raise ValueError(f"parties have mismatched row counts {rows}: they must hold the same subjects")
    if sum(b.shape[1] for b in blocks) < 2:
        raise ValueError("need at least one feature column and the label column in total")
    return blocks


def _enforce_bound(block: np.ndarray, name: str, bound_policy: BoundPolicy) -> tuple[np.ndarray, int]:
    """Clip entries to ``[-1, 1]`` (Assumption 2) or raise; returns the block and the count."""
    over = int(np.count_nonzero(np.abs(block) > 1.0))
    if over == 0:
        return block, 0
    if bound_policy == "raise":
        raise ValueError(f"{name}: {over} entries exceed the declared bound |D_ij| <= 1 (Assumption 2)")
    if bound_policy != "clip":
        raise ValueError(f"bound_policy must be 'clip' or 'raise', got {bound_policy!r}")
    warnings.warn(f"{name}: {over} entries outside [-1, 1] were clipped", ClippingWarning, stacklevel=4)
    return np.clip(block, -1.0, 1.0), over


def split_attributes(D: np.ndarray, m: int) -> list[np.ndarray]:
    """Distribute the columns of ``D`` evenly over ``m`` parties, in order (Sec. 5.3).

    The first ``(d+1) mod m`` parties get one column more; the label (last column)
    ends up with the last party.
    """
    D = _as_block(D, "D")
    _check_positive_int("m", m)
    if m > D.shape[1]:
        raise ValueError(f"cannot split {D.shape[1]} columns over m = {m} parties")
    return [np.ascontiguousarray(b) for b in np.array_split(D, m, axis=1)]


# --------------------------------------------------------------------------- release


class PartyRelease(NamedTuple):
    """One party's output: ``public`` is published; ``n_clipped`` stays with the party."""

    public: np.ndarray
    n_clipped: int


@dataclass(frozen=True)
class VerticalRelease:
    """The joint public data ``D^pub = [X^pub, Y^pub]`` and its public parameters.

    ``n_clipped`` (entries clipped per party) is the parties' own diagnostic: it is
    data-dependent and is **not** part of what is published.
    """

    public: np.ndarray
    mechanism: Literal["dgm", "rmgm"]
    n: int
    k: int | None
    party_sizes: tuple[int, ...]
    noise_std: float
    epsilon: float
    delta: float
    calibration: CalibrationName
    n_clipped: tuple[int, ...]
    noise: Literal["discrete", "float"] = "float"

    @property
    def d_max(self) -> int:
        return max(self.party_sizes)

    @property
    def noise_var(self) -> float:
        """Per-entry noise variance ``4 d_max sigma_{eps,delta}^2``."""
        return self.noise_std**2

    @property
    def X(self) -> np.ndarray:
        return self.public[:, :-1]

    @property
    def y(self) -> np.ndarray:
        return self.public[:, -1]


def release_party_dgm(
    block: np.ndarray,
    noise_std: float,
    rng: np.random.Generator | None,
    bound_policy: BoundPolicy = "clip",
    *,
    grid: int | None = None,
) -> PartyRelease:
    """Algorithm 1, line 3: ``D^j + R^j`` with ``R^j`` iid ``N(0, noise_std^2)``; ``rng=None``:
    discrete noise (module docstring) on the grid ``2^grid``, where ``(noise_std, grid)`` must be
    what :func:`discrete_noise_std` returned (the sd was calibrated for that grid's rounding)."""
    block, n_clipped = _enforce_bound(_as_block(block, "block"), "block", bound_policy)
    _check_noise_std(noise_std)
    return PartyRelease(_noisy(block, noise_std, rng, grid), n_clipped)


def release_party_rmgm(
    block: np.ndarray,
    k: int,
    mixing_seed: Seed,
    noise_std: float,
    rng: np.random.Generator | None,
    bound_policy: BoundPolicy = "clip",
    *,
    grid: int | None = None,
) -> PartyRelease:
    """Algorithm 2, line 4: ``B D^j / sqrt(k) + R^j``, ``B`` from the shared ``mixing_seed``;
    ``rng=None``: discrete noise as in :func:`release_party_dgm` (entries bounded by ``n / sqrt(k)``)."""
    block, n_clipped = _enforce_bound(_as_block(block, "block"), "block", bound_policy)
    _check_noise_std(noise_std)
    return PartyRelease(_noisy(mix(block, k, mixing_seed), noise_std, rng, grid), n_clipped)


def _check_noise_std(noise_std: float) -> None:
    if isinstance(noise_std, bool) or not (math.isfinite(noise_std) and noise_std > 0):
        raise ValueError(
            f"noise_std must be a finite number > 0 (zero noise would publish the data), got {noise_std!r}"
        )


def _prepare(
    parties: Sequence[np.ndarray], epsilon: float, delta: float, calibration: CalibrationName, bound_policy: BoundPolicy
) -> tuple[list[np.ndarray], tuple[int, ...], float]:
    check_privacy_parameters(epsilon, delta)
    blocks = _as_parties(parties)
    checked = [_enforce_bound(b, f"party {j}", bound_policy) for j, b in enumerate(blocks)]
    blocks = [b for b, _ in checked]
    clipped = tuple(c for _, c in checked)
    d_max = max(b.shape[1] for b in blocks)
    return blocks, clipped, entry_noise_std(epsilon, delta, d_max, calibration)


def discrete_noise_std(std: float, d_max: int, rows: int, magnitude: float) -> tuple[float, int]:
    """``(sd, g)`` of the discrete release of blocks of ``rows x d_max`` entries bounded by
    ``magnitude``: the continuous sd ``std`` (calibrated to sensitivity ``2 sqrt(d_max)``)
    scaled to the sensitivity grown by the grid rounding, ``2 sqrt(d_max) + 2^g sqrt(rows d_max)``."""
    sens = 2.0 * math.sqrt(d_max)
    g = discrete_grid(std, magnitude)
    return std * (sens + 2.0**g * math.sqrt(rows * d_max)) / sens, g


def _noisy(values: np.ndarray, std: float, rng: np.random.Generator | None, grid: int | None) -> np.ndarray:
    """``values`` plus Gaussian noise: NumPy's from ``rng`` (for studies: not private, and it warns),
    or (``rng=None``) OpenDP's discrete on ``2^grid``."""
    if rng is not None:
        warnings.warn(
            "floating-point noise from a caller's generator: whoever knows its seed can remove it, and its "
            "low-order bits can reveal the data; not private (rng=None draws OpenDP's discrete noise)",
            SeededReleaseWarning,
            stacklevel=3,
        )
        return values + std * rng.standard_normal(values.shape)
    if grid is None:
        raise ValueError("discrete noise (rng=None) needs the grid that discrete_noise_std returned with the sd")
    return discrete_gaussian(values, std, grid)


def _fresh(seed: Seed) -> np.random.SeedSequence:
    """A SeedSequence for ``seed``; a passed SeedSequence is copied, so reusing it reproduces."""
    if isinstance(seed, np.random.SeedSequence):
        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size)
    return np.random.SeedSequence(seed)


def _party_rngs(noise_seed: Seed, m: int) -> list[np.random.Generator]:
    """Independent noise generators, one per party (children ``0..m-1`` of ``noise_seed``)."""
    return [np.random.default_rng(child) for child in _fresh(noise_seed).spawn(m)]


def release_dgm(
    parties: Sequence[np.ndarray],
    epsilon: float,
    delta: float,
    *,
    noise_seed: Seed,
    calibration: CalibrationName = "classical",
    bound_policy: BoundPolicy = "clip",
) -> VerticalRelease:
    """Algorithm 1 (dataset release), all parties: ``[D^1 + R^1, ..., D^m + R^m]``.

    Also the release of the BGM baseline (Sec. 5.1).
    """
    blocks, clipped, std = _prepare(parties, epsilon, delta, calibration, bound_policy)
    n, d_max = blocks[0].shape[0], max(b.shape[1] for b in blocks)
    grid = None
    if noise_seed is None:
        std, grid = discrete_noise_std(std, d_max, n, 1.0)
    rngs = _party_rngs(noise_seed, len(blocks)) if grid is None else [None] * len(blocks)
    public = np.hstack([_noisy(b, std, r, grid) for b, r in zip(blocks, rngs)])
    return VerticalRelease(
        public,
        "dgm",
        n,
        None,
        tuple(b.shape[1] for b in blocks),
        std,
        float(epsilon),
        float(delta),
        calibration,
        clipped,
        "float" if grid is None else "discrete",
    )


def release_rmgm(
    parties: Sequence[np.ndarray],
    epsilon: float,
    delta: float,
    k: int,
    *,
    mixing_seed: Seed,
    noise_seed: Seed,
    calibration: CalibrationName = "classical",
    bound_policy: BoundPolicy = "clip",
) -> VerticalRelease:
    """Algorithm 2 (dataset release), all parties: ``[B D^1/sqrt(k) + R^1, ...]``.

    ``B`` comes from the shared ``mixing_seed``; party ``j``'s noise from child ``j`` of
    ``noise_seed``. The result equals the concatenation of
    :func:`release_party_rmgm` over the parties with those generators; ``B`` is
    applied to all blocks in one pass here, which is the same product since
    ``B [D^1, ..., D^m] = [B D^1, ..., B D^m]``.
    """
    _check_positive_int("k", k)
    blocks, clipped, std = _prepare(parties, epsilon, delta, calibration, bound_policy)
    n, d_max = blocks[0].shape[0], max(b.shape[1] for b in blocks)
    mixed = mix(np.hstack(blocks), k, mixing_seed)
    edges = np.cumsum([0] + [b.shape[1] for b in blocks])
    grid = None
    if noise_seed is None:
        std, grid = discrete_noise_std(std, d_max, k, n / math.sqrt(k))
    rngs = _party_rngs(noise_seed, len(blocks)) if grid is None else [None] * len(blocks)
    public = np.hstack([_noisy(mixed[:, a:b], std, r, grid) for a, b, r in zip(edges[:-1], edges[1:], rngs)])
    return VerticalRelease(
        public,
        "rmgm",
        n,
        k,
        tuple(int(e) for e in np.diff(edges)),
        std,
        float(epsilon),
        float(delta),
        calibration,
        clipped,
        "float" if grid is None else "discrete",
    )


# --------------------------------------------------------------------------- training


@dataclass(frozen=True)
class FitResult:
    """Weights of a training algorithm, with the Hessian it inverted (for Fig. 3)."""

    weights: np.ndarray
    hessian: np.ndarray
    method: str

    @property
    def min_abs_eigenvalue(self) -> float:
        """Smallest ``|eigenvalue|`` of the Hessian: the small-eigenvalue problem (Sec. 4.1)."""
        return float(np.min(np.abs(np.linalg.eigvalsh(self.hessian))))


def _solve(H: np.ndarray, g: np.ndarray, ridge: float, method: str) -> FitResult:
    if not (math.isfinite(ridge) and ridge >= 0):
        raise ValueError(f"ridge must be finite and >= 0, got {ridge!r}")
    H = H + ridge * np.eye(H.shape[0])
    try:
        w = np.linalg.solve(H, g)
    except np.linalg.LinAlgError:
        w = np.linalg.lstsq(H, g, rcond=None)[0]
    return FitResult(w, H, method)


def fit_ols(X: np.ndarray, y: np.ndarray, ridge: float = RIDGE) -> FitResult:
    """Non-private OLS ``(X^T X / n + lambda I)^-1 X^T y / n`` (Sec. 5.1 baseline, eq. (2) with the inverse)."""
    X = _as_block(X, "X")
    y = _as_block(y, "y")
    if y.shape != (X.shape[0], 1):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    n = X.shape[0]
    return _solve(X.T @ X / n, (X.T @ y[:, 0]) / n, ridge, "ols")


def fit_bgm(release: VerticalRelease, ridge: float = RIDGE) -> FitResult:
    """BGM-OLS (Sec. 5.1): plain OLS on the Gaussian-mechanism release, no de-biasing."""
    _expect(release, "dgm")
    X, y = release.X, release.y
    return _solve(X.T @ X / release.n, X.T @ y / release.n, ridge, "bgm")


def fit_dgm(release: VerticalRelease, ridge: float = RIDGE) -> FitResult:
    """DGM-OLS (Algorithm 1, training, lines 3-4): ``H = X~^T X~ / n - 4 d_max sigma^2 I``."""
    _expect(release, "dgm")
    X, y = release.X, release.y
    H = X.T @ X / release.n - release.noise_var * np.eye(X.shape[1])
    return _solve(H, X.T @ y / release.n, ridge, "dgm")


def fit_rmgm(release: VerticalRelease, ridge: float = RIDGE) -> FitResult:
    """RMGM-OLS (Algorithm 2, training, line 3): plain OLS on the ``k`` mixed rows.

    The Hessian is ``X^pub^T X^pub / n``, which tends to ``E[x x^T]`` (Sec. 4.2).
    """
    _expect(release, "rmgm")
    X, y = release.X, release.y
    return _solve(X.T @ X / release.n, X.T @ y / release.n, ridge, "rmgm")


def _expect(release: VerticalRelease, mechanism: str) -> None:
    if not isinstance(release, VerticalRelease):
        raise ValueError(f"expected a VerticalRelease, got {type(release).__name__}")
    if release.mechanism != mechanism:
        raise ValueError(f"this training algorithm needs a '{mechanism}' release, got '{release.mechanism}'")


def test_mse(weights: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """Mean squared loss on a test split (Sec. 5.3, Table 1)."""
    X = _as_block(X, "X")
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.shape[0] != X.shape[1]:
        raise ValueError(f"weights have length {w.shape[0]} but X has {X.shape[1]} columns")
    return float(np.mean((X @ w - np.asarray(y, dtype=np.float64).ravel()) ** 2))


test_mse.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


# --------------------------------------------------------------------------- data


class SyntheticData(NamedTuple):
    parties: list[np.ndarray]
    w_star: np.ndarray


def synthetic_parties(
    n: int, seed: Seed, d: int = 10, party_sizes: Sequence[int] = (2, 2, 2, 2, 2, 1)
) -> SyntheticData:
    """The synthetic recipe of Sec. 5.2.

    ``w*_i ~ U(-1/d, 1/d)``, ``x ~ U(-1, 1)^d``, ``y = w*^T x`` (so ``|y| <= 1``);
    the ``d + 1`` attributes are split over parties of ``party_sizes`` (paper: six
    parties, five with 2 attributes and one with 1; the label is the last column).
    """
    _check_positive_int("n", n)
    _check_positive_int("d", d)
    if sum(party_sizes) != d + 1 or min(party_sizes) < 1:
        raise ValueError(f"party_sizes must be positive and sum to d + 1 = {d + 1}, got {tuple(party_sizes)}")
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1.0 / d, 1.0 / d, size=d)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    D = np.hstack([X, (X @ w)[:, None]])
    edges = np.cumsum([0, *party_sizes])
    return SyntheticData([D[:, a:b] for a, b in zip(edges[:-1], edges[1:])], w)


class RealData(NamedTuple):
    """All rows, min-max scaled to ``[0, 1]``; ``y`` is the last column of ``D``."""

    D: np.ndarray
    names: tuple[str, ...]
    name: str


INSURANCE_REGIONS = ("northeast", "northwest", "southeast", "southwest")


def load_insurance(path: str | os.PathLike) -> RealData:
    """Insurance (Sec. 5.3): 9 features and the charges, scaled to ``[0, 1]``.

    Encoding: ``sex`` binary (male = 1), ``smoker`` binary (yes = 1), ``region``
    one-hot over its four values (no level dropped: the model has no intercept and
    the one-hot columns play its part). This gives the paper's ``d = 9``
    (age, sex, bmi, children, smoker, 4 regions). Every column is then min-max
    scaled over the whole file (the paper: "normalized into [0, 1]").
    """
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    expected = ["age", "sex", "bmi", "children", "smoker", "region", "charges"]
    if not rows or list(rows[0].keys()) != expected:
        raise ValueError(f"{path}: expected header {expected}")
    out = np.array([_insurance_row(r, path) for r in rows])
    names = ("age", "sex_male", "bmi", "children", "smoker_yes", *(f"region_{g}" for g in INSURANCE_REGIONS), "charges")
    return RealData(_minmax(out), names, "insurance")


def _insurance_row(r: dict[str, str], path: str | os.PathLike) -> list[float]:
    if r["sex"] not in ("male", "female") or r["smoker"] not in ("yes", "no") or r["region"] not in INSURANCE_REGIONS:
        raise ValueError(f"{path}: unexpected category in row {r}")
    return [
        float(r["age"]),
        float(r["sex"] == "male"),
        float(r["bmi"]),
        float(r["children"]),
        float(r["smoker"] == "yes"),
        *(float(r["region"] == g) for g in INSURANCE_REGIONS),
        float(r["charges"]),
    ]


BIKE_COLUMNS = (
    "season",
    "yr",
    "mnth",
    "hr",
    "holiday",
    "weekday",
    "workingday",
    "weathersit",
    "temp",
    "atemp",
    "hum",
    "windspeed",
    "casual",
    "registered",
    "cnt",
)


def load_bike_sharing(path: str | os.PathLike, keep_leaky: Sequence[str] = ()) -> RealData:
    """Bike Sharing, hourly (Sec. 5.3): features and the count ``cnt``, scaled to ``[0, 1]``.

    The file has 14 features; ``casual + registered = cnt`` exactly, so by default both
    are dropped (12 features; the paper reports ``d = 13`` without saying which
    columns it used). ``keep_leaky`` may name either of them to keep it.
    """
    data = np.loadtxt(path, delimiter=",", ndmin=2)
    if data.shape[1] != len(BIKE_COLUMNS):
        raise ValueError(f"{path}: expected {len(BIKE_COLUMNS)} columns, got {data.shape[1]}")
    bad = set(keep_leaky) - {"casual", "registered"}
    if bad:
        raise ValueError(f"keep_leaky may only contain 'casual' or 'registered', got {sorted(bad)}")
    keep = [c for c in BIKE_COLUMNS if c not in {"casual", "registered"} - set(keep_leaky)]
    idx = [BIKE_COLUMNS.index(c) for c in keep]
    return RealData(_minmax(data[:, idx]), tuple(keep), "bike")


def _minmax(A: np.ndarray) -> np.ndarray:
    lo, hi = A.min(axis=0), A.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (A - lo) / span


def train_test_split(D: np.ndarray, seed: Seed, train_fraction: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
    """Random 4:1 train/test split of the rows (Sec. 5.3; the paper does not say how).

    ``floor(train_fraction * n)`` rows, drawn by a permutation from ``seed``, train.
    """
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must lie in (0, 1), got {train_fraction}")
    D = _as_block(D, "D")
    perm = np.random.default_rng(seed).permutation(D.shape[0])
    n_train = int(math.floor(train_fraction * D.shape[0]))
    return D[perm[:n_train]], D[perm[n_train:]]
