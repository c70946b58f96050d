"""Horizontally merged DP synthetic data from perturbed histograms (Su & Liu, 2020).

Su & Liu, *Utility Analysis of Horizontally Merged Multi-Party Synthetic Data with
Differential Privacy* (2020), Sec. II-B:

1. party ``k`` forms a full-dimensional histogram of its data ``D_k`` with ``m_k`` bins
   and counts ``n_kj``;
2. it sanitises the counts, ``n~_kj = max(n_kj + e_kj, 0)``, ``e_kj ~ Lap(0, 1/eps_k)``
   (Laplace mechanism, Def. 3; a histogram has l1 sensitivity 1 when one row is added or
   removed);
3. it draws ``n~_kj`` points uniformly within bin ``j`` and releases them as ``D~_k``;
4. the ``D~_k`` are stacked (horizontally merged, "HOMM"). The parties hold disjoint
   individuals, so by parallel composition (Def. 2) the merged data cost
   ``max_k eps_k`` (:func:`privacy_cost`).

Theorem 1 says the utility of the merged data is governed by the weighted harmonic mean
``eps_bar = m (sum_k m_k / eps_k)^-1``, ``m = sum_k m_k`` (:func:`eps_bar`).

Choices the paper leaves open, and what this module does
--------------------------------------------------------
* **Bins are data-independent.** They are built only from *declared public* bounds and a
  number of bins per dimension (:class:`Bins`). Raw bin edges are refused (they are
  typically computed from the data, e.g. ``np.histogram_bin_edges``, which leaks it);
  bounds that coincide exactly with a continuous column's minimum *and* maximum are
  refused as data-derived. Rows outside the bounds are clipped onto them and reported
  to the releasing party (:class:`BoundsReport`, :class:`ClippingWarning`), or refused
  with ``out_of_bounds="raise"``.
* **Number of bins.** The paper does not state how it picks ``m_k``; it cites the
  rate ``O(n^{-2/(2+p)})`` of DP histograms from Wasserman & Zhou (2010, its ref. [15]),
  which is attained with bin width ``h ~ n^{-1/(2+p)}``, i.e. about ``n^{1/(2+p)}`` bins
  per dimension. :func:`default_bins_per_dim` returns ``ceil(n^{1/(2+p)})`` with ``p``
  the number of *continuous* columns; a discrete column gets one bin per integer value.
  ``n`` must be a *declared, public* size (a party's size is public under replacement
  neighbours; under add/remove neighbours use a public planning figure), never
  ``len(data)`` of private data read at release time.
* **Synthetic sample size.** As in the paper, bin ``j`` receives ``n~_kj`` draws, so the
  party releases ``sum_j n~_kj`` rows (its noisy size). ``n~_kj`` is real, so it is
  rounded to the nearest integer (post-processing; DP is kept). Optionally
  ``n_synthetic`` rows can be drawn instead from the normalised noisy histogram
  (Wasserman & Zhou's version).
* **Neighbouring.** ``Lap(1/eps)`` is eps-DP for add/remove neighbours (the paper's
  setting, default). Under replacement neighbours one row moves between two bins, the
  l1 sensitivity is 2 and ``neighbouring="replace"`` uses ``Lap(2/eps)``.

Erratum (NOTES.md): ``Var(Lap(0, b)) = 2 b^2``, so each sanitised count has variance
``2/eps_k^2``; the proof of Theorem 1 (eq. 4 and eq. 7) uses ``1/eps_k``. With the correct
variance the noise term of the proof is ``2 sum_k m_k / eps_k^2 = 2 m / eps_bar2^2``,
where ``eps_bar2 = (m / sum_k m_k eps_k^-2)^(1/2)`` (:func:`eps_bar2`); ``eps_bar`` itself
reappears in the bias that the truncation ``max(., 0)`` adds (each empty bin gains about
``1/(2 eps_k)`` rows on average, ``m / (2 eps_bar)`` in total). The two coincide when all
``eps_k`` are equal (the paper's experiments). See ``tests/test_multiparty_synthetic.py``
for the corrected bound of Theorem 1.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

import numpy as np

from ..privacy.gaussian import ClippingWarning

__all__ = [
    "Bins",
    "BoundsReport",
    "ClippingWarning",
    "MergedSynthetic",
    "OLSFit",
    "PartySynthetic",
    "default_bins_per_dim",
    "eps_bar",
    "eps_bar2",
    "fit_ols",
    "histogram_counts",
    "homm_synthetic",
    "laplace_noisy_counts",
    "merge_parties",
    "privacy_cost",
    "sanitize_counts",
    "synthesize_party",
]

Neighbouring = Literal["add_remove", "replace"]
OutOfBounds = Literal["clip", "raise"]


# --------------------------------------------------------------------------- checks


def _check_epsilon(epsilon: object, name: str = "epsilon") -> float:
    """Return ``epsilon`` as float; ``ValueError`` unless it is a finite real number > 0.

    Laplace noise is pure eps-DP, so there is no delta to check.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise ValueError(f"{name} must be a real number > 0, got {epsilon!r}")
    eps = float(epsilon)
    if not math.isfinite(eps):
        raise ValueError(f"{name} must be finite, got {epsilon!r}")
    if eps <= 0:
        raise ValueError(f"{name} must be > 0, got {epsilon!r}")
    return eps


def _check_epsilons(epsilons: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(epsilons, dtype=object).ravel() if not isinstance(epsilons, np.ndarray) else epsilons.ravel()
    if arr.size == 0:
        raise ValueError("epsilons is empty: need one privacy budget per party")
    return np.array([_check_epsilon(e, f"epsilons[{i}]") for i, e in enumerate(arr)], dtype=np.float64)


def _sensitivity(neighbouring: Neighbouring) -> float:
    if neighbouring == "add_remove":
        return 1.0
    if neighbouring == "replace":
        return 2.0
    raise ValueError(f"neighbouring must be 'add_remove' or 'replace', got {neighbouring!r}")


def _as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        raise ValueError(
            "pass an explicit seed or np.random.Generator (rng=None is refused: results must be reproducible)"
        )
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise ValueError(f"rng must be an int seed or np.random.Generator, got {type(rng).__name__}")


# --------------------------------------------------------------------------- bins


def default_bins_per_dim(n: int, p: int) -> int:
    """Bins per continuous dimension, ``ceil(n^{1/(2+p)})`` (at least 1).

    Su & Liu (2020, Sec. II-B) do not state their choice of ``m_k``; they cite the
    ``O(n^{-2/(2+p)})`` convergence of DP (perturbed) histograms of Wasserman & Zhou (2010),
    which holds with bin width ``h ~ n^{-1/(2+p)}`` on the unit cube, i.e. ``n^{1/(2+p)}``
    bins per dimension. ``n`` must be a declared, public size and ``p`` the number of
    continuous dimensions.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1 (a declared public size), got {n!r}")
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 0:
        raise ValueError(f"p must be an integer >= 0, got {p!r}")
    # 1e-12 guards against n^(1/(2+p)) landing a hair above an integer (e.g. 27^(1/3))
    return max(1, math.ceil(float(n) ** (1.0 / (2 + p)) - 1e-12))


@dataclass(frozen=True)
class Bins:
    """A regular grid over declared, public bounds (data-independent by construction).

    Build it with :meth:`from_bounds`. Continuous column ``i`` is cut into
    ``bins_per_dim[i]`` equal-width bins of ``[lower[i], upper[i]]`` (the last bin is
    closed on the right); a discrete column has integer bounds and one bin per integer
    value, and its synthetic values are those integers.
    """

    lower: tuple[float, ...]
    upper: tuple[float, ...]
    bins_per_dim: tuple[int, ...]
    discrete: tuple[bool, ...]
    columns: tuple[str, ...]

    def __post_init__(self) -> None:
        p = len(self.lower)
        if p == 0:
            raise ValueError("Bins need at least one column")
        for name in ("upper", "bins_per_dim", "discrete", "columns"):
            if len(getattr(self, name)) != p:
                raise ValueError(f"Bins.{name} has length {len(getattr(self, name))}, expected {p} (one per column)")
        if len(set(self.columns)) != p:
            raise ValueError(f"column names must be distinct, got {self.columns}")
        for i in range(p):
            lo, hi, b = self.lower[i], self.upper[i], self.bins_per_dim[i]
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"bounds of column {self.columns[i]!r} must be finite, got [{lo}, {hi}]")
            if not lo < hi:
                raise ValueError(f"column {self.columns[i]!r}: need lower < upper, got [{lo}, {hi}]")
            if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or b < 1:
                raise ValueError(f"column {self.columns[i]!r}: bins_per_dim must be an integer >= 1, got {b!r}")
            if self.discrete[i]:
                if lo != math.floor(lo) or hi != math.floor(hi):
                    raise ValueError(f"discrete column {self.columns[i]!r} needs integer bounds, got [{lo}, {hi}]")
                if b != int(hi - lo) + 1:
                    raise ValueError(
                        f"discrete column {self.columns[i]!r} has {int(hi - lo) + 1} values in [{lo:g}, {hi:g}], "
                        f"so it needs that many bins, got {b}"
                    )

    @classmethod
    def from_bounds(
        cls,
        lower: Sequence[float] | float,
        upper: Sequence[float] | float,
        bins_per_dim: Sequence[int] | int | None = None,
        *,
        n_public: int | None = None,
        discrete: Sequence[bool] | None = None,
        columns: Sequence[str] | None = None,
    ) -> Bins:
        """Grid from declared bounds.

        ``bins_per_dim``: an int for every continuous column, or one int per column
        (discrete columns must then give their number of values), or ``None`` to use
        :func:`default_bins_per_dim` with the declared public size ``n_public``.
        """
        lo = np.atleast_1d(np.asarray(lower, dtype=np.float64))
        hi = np.atleast_1d(np.asarray(upper, dtype=np.float64))
        if lo.ndim != 1 or hi.ndim != 1 or lo.shape != hi.shape:
            raise ValueError(f"lower and upper must be 1-D of equal length, got shapes {lo.shape} and {hi.shape}")
        p = lo.size
        disc = tuple(bool(d) for d in discrete) if discrete is not None else (False,) * p
        if len(disc) != p:
            raise ValueError(f"discrete has length {len(disc)}, expected {p}")
        cols = tuple(str(c) for c in columns) if columns is not None else tuple(f"x{i}" for i in range(p))
        n_values = [int(hi[i] - lo[i]) + 1 if disc[i] and np.isfinite(hi[i] - lo[i]) else 0 for i in range(p)]
        if bins_per_dim is None:
            if n_public is None:
                raise ValueError("give bins_per_dim, or n_public (a declared public size) for the default rule")
            b = default_bins_per_dim(n_public, p - sum(disc))
            bpd = tuple(n_values[i] if disc[i] else b for i in range(p))
        elif isinstance(bins_per_dim, (int, np.integer)) and not isinstance(bins_per_dim, bool):
            bpd = tuple(n_values[i] if disc[i] else int(bins_per_dim) for i in range(p))
        elif isinstance(bins_per_dim, np.ndarray) and bins_per_dim.dtype.kind == "f":
            raise ValueError(
                "bins_per_dim must be integers; a float array looks like bin edges, which are refused "
                "(build bins from declared bounds)"
            )
        else:
            bpd = tuple(bins_per_dim)  # type: ignore[arg-type]
            if len(bpd) != p:
                raise ValueError(f"bins_per_dim has length {len(bpd)}, expected {p} (one per column)")
        return cls(tuple(map(float, lo)), tuple(map(float, hi)), bpd, disc, cols)

    @property
    def p(self) -> int:
        """Number of columns."""
        return len(self.lower)

    @property
    def n_bins(self) -> int:
        """Total number of cells ``m_k`` of the full-dimensional histogram."""
        return int(np.prod(self.bins_per_dim))

    @property
    def widths(self) -> np.ndarray:
        """Bin width per column (1 for discrete columns)."""
        lo, hi, b = np.array(self.lower), np.array(self.upper), np.array(self.bins_per_dim, dtype=np.float64)
        return np.where(np.array(self.discrete), 1.0, (hi - lo) / b)

    def edges(self, i: int) -> np.ndarray:
        """Bin edges of continuous column ``i`` (derived from the declared bounds only)."""
        if self.discrete[i]:
            raise ValueError(f"column {self.columns[i]!r} is discrete: it has values, not edges")
        return np.linspace(self.lower[i], self.upper[i], self.bins_per_dim[i] + 1)

    def same_columns(self, other: Bins) -> bool:
        """Same column names, bounds and discrete flags (the grids may differ in resolution)."""
        return (
            self.columns == other.columns
            and self.lower == other.lower
            and self.upper == other.upper
            and self.discrete == other.discrete
        )


def _require_bins(bins: object) -> Bins:
    if isinstance(bins, Bins):
        return bins
    raise ValueError(
        f"bins must be a Bins built from declared public bounds (Bins.from_bounds), got {type(bins).__name__}; "
        "explicit bin edges or counts are refused because they may depend on the data "
        "(e.g. np.histogram_bin_edges(data)), which would break differential privacy"
    )


@dataclass(frozen=True)
class BoundsReport:
    """What enforcing the declared bounds changed; for the releasing party only, never released."""

    n_rows: int
    n_rows_clipped: int
    clipped_per_column: tuple[int, ...]
    columns: tuple[str, ...]

    @property
    def any_clipped(self) -> bool:
        return self.n_rows_clipped > 0

    def __str__(self) -> str:
        per = ", ".join(f"{c}: {k}" for c, k in zip(self.columns, self.clipped_per_column) if k)
        return f"{self.n_rows_clipped} of {self.n_rows} rows lay outside the declared bounds and were clipped ({per})"


def _validate_data(data: object, bins: Bins, name: str = "data") -> np.ndarray:
    arr = np.asarray(data)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=True)
    if arr.ndim == 1 and bins.p == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n, p), got shape {arr.shape}")
    if arr.shape[1] != bins.p:
        raise ValueError(f"{name} has {arr.shape[1]} columns but the bins have {bins.p} ({', '.join(bins.columns)})")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} has {int(bad.sum())} non-finite values (NaN or inf); remove or impute them first")
    return arr


def _enforce_bounds(
    data: np.ndarray, bins: Bins, out_of_bounds: OutOfBounds, allow_data_at_both_bounds: bool
) -> tuple[np.ndarray, BoundsReport]:
    lo, hi = np.array(bins.lower), np.array(bins.upper)
    if data.shape[0] > 0 and not allow_data_at_both_bounds:
        for i in range(bins.p):
            col = data[:, i]
            if not bins.discrete[i] and col.min() == lo[i] and col.max() == hi[i] and np.unique(col).size > 2:
                raise ValueError(
                    f"the bounds [{lo[i]:g}, {hi[i]:g}] of continuous column {bins.columns[i]!r} equal the data's "
                    "minimum and maximum exactly: the bins appear to be derived from the data, which is not "
                    "differentially private. Declare bounds a priori (if the data were already clipped to "
                    "declared bounds, pass allow_data_at_both_bounds=True)"
                )
    for i in range(bins.p):
        if bins.discrete[i] and np.any(data[:, i] != np.round(data[:, i])):
            raise ValueError(f"discrete column {bins.columns[i]!r} has non-integer values")
    below, above = data < lo, data > hi
    outside = below | above
    report = BoundsReport(
        n_rows=int(data.shape[0]),
        n_rows_clipped=int(outside.any(axis=1).sum()),
        clipped_per_column=tuple(int(k) for k in outside.sum(axis=0)),
        columns=bins.columns,
    )
    if report.any_clipped:
        if out_of_bounds == "raise":
            raise ValueError(
                f"{report.n_rows_clipped} rows lie outside the declared bounds ({report}); "
                "use out_of_bounds='clip' to clip them"
            )
        if out_of_bounds != "clip":
            raise ValueError(f"out_of_bounds must be 'clip' or 'raise', got {out_of_bounds!r}")
        data = np.clip(data, lo, hi)
        warnings.warn(str(report), ClippingWarning, stacklevel=3)
    elif out_of_bounds not in ("clip", "raise"):
        raise ValueError(f"out_of_bounds must be 'clip' or 'raise', got {out_of_bounds!r}")
    return data, report


def _cell_index(data: np.ndarray, bins: Bins) -> np.ndarray:
    """Flat cell index of every (in-bounds) row."""
    lo = np.array(bins.lower)
    b = np.array(bins.bins_per_dim)
    idx = np.floor((data - lo) / bins.widths).astype(np.int64)
    idx = np.clip(idx, 0, b - 1)  # the upper bound belongs to the last bin
    if data.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.ravel_multi_index(tuple(idx.T), bins.bins_per_dim)


def histogram_counts(data: np.ndarray, bins: Bins) -> np.ndarray:
    """Counts ``n_kj`` of the full-dimensional histogram, flattened (C order), float64.

    ``data`` must already lie within the bounds (see :func:`synthesize_party`).
    """
    bins = _require_bins(bins)
    arr = _validate_data(data, bins)
    lo, hi = np.array(bins.lower), np.array(bins.upper)
    if np.any(arr < lo) or np.any(arr > hi):
        raise ValueError("data lie outside the declared bounds; clip them first (synthesize_party does)")
    return np.bincount(_cell_index(arr, bins), minlength=bins.n_bins).astype(np.float64)


# --------------------------------------------------------------------------- mechanism


def laplace_noisy_counts(
    counts: np.ndarray, epsilon: float, rng: np.random.Generator | int, *, neighbouring: Neighbouring = "add_remove"
) -> np.ndarray:
    """``n_kj + e_kj``, ``e_kj ~ Lap(0, Delta/eps)`` iid (Def. 3), before truncation.

    ``Delta = 1`` for add/remove neighbours (the paper), 2 for replacement. Each count's
    noise has variance ``2 Delta^2 / eps^2`` (the proof of Theorem 1 uses ``1/eps``).
    """
    eps = _check_epsilon(epsilon)
    c = np.asarray(counts, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        raise ValueError("counts must be finite")
    return c + _as_rng(rng).laplace(0.0, _sensitivity(neighbouring) / eps, size=c.shape)


def sanitize_counts(
    counts: np.ndarray, epsilon: float, rng: np.random.Generator | int, *, neighbouring: Neighbouring = "add_remove"
) -> np.ndarray:
    """Sanitised counts ``round(max(n_kj + e_kj, 0))`` (Sec. II-B, rounded so they can be sampled)."""
    return np.rint(np.maximum(laplace_noisy_counts(counts, epsilon, rng, neighbouring=neighbouring), 0.0))


def _draw_in_cells(cells: np.ndarray, bins: Bins, rng: np.random.Generator) -> np.ndarray:
    """One uniform draw within each listed cell (discrete columns: the cell's value)."""
    multi = np.array(np.unravel_index(cells, bins.bins_per_dim)).T.reshape(-1, bins.p).astype(np.float64)
    lo, w = np.array(bins.lower), bins.widths
    u = rng.random(size=multi.shape)
    disc = np.array(bins.discrete)
    out = lo + w * (multi + np.where(disc, 0.0, u))
    # keep draws inside the declared bounds despite rounding
    return np.clip(out, lo, np.array(bins.upper))


# --------------------------------------------------------------------------- per party


@dataclass(frozen=True)
class PartySynthetic:
    """One party's perturbed-histogram synthetic data (Su & Liu, Sec. II-B).

    ``data`` and ``synthetic_counts`` (= what ``data`` reveals) are the release;
    ``bounds_report`` is for the releasing party only.
    """

    data: np.ndarray
    synthetic_counts: np.ndarray
    bins: Bins
    epsilon: float
    neighbouring: Neighbouring
    bounds_report: BoundsReport = field(repr=False)

    @property
    def n_bins(self) -> int:
        """``m_k``."""
        return self.bins.n_bins

    @property
    def n_synthetic(self) -> int:
        return int(self.data.shape[0])

    @property
    def laplace_scale(self) -> float:
        return _sensitivity(self.neighbouring) / self.epsilon


def synthesize_party(
    data: np.ndarray,
    bins: Bins,
    epsilon: float,
    rng: np.random.Generator | int,
    *,
    out_of_bounds: OutOfBounds = "clip",
    neighbouring: Neighbouring = "add_remove",
    n_synthetic: int | None = None,
    allow_data_at_both_bounds: bool = False,
) -> PartySynthetic:
    """eps-DP synthetic data of one party from its perturbed histogram (Su & Liu, Sec. II-B).

    Parameters
    ----------
    data : (n_k, p) array (1-D allowed when p = 1), finite.
    bins : :class:`Bins` from declared public bounds; anything else is refused.
    epsilon : the party's budget ``eps_k > 0``.
    rng : seed or ``np.random.Generator`` (required).
    out_of_bounds : ``"clip"`` (default; clipped rows are reported with a
        :class:`ClippingWarning` and in ``bounds_report``) or ``"raise"``.
    neighbouring : ``"add_remove"`` (``Lap(1/eps)``, the paper) or ``"replace"`` (``Lap(2/eps)``).
    n_synthetic : ``None`` (paper: bin j gets ``round(max(n_kj + e_kj, 0))`` draws) or a
        number of rows drawn from the normalised noisy histogram (uniform over cells if
        every noisy count is 0).
    allow_data_at_both_bounds : see :class:`Bins`; by default a continuous column whose
        min and max equal the declared bounds exactly is refused as data-derived.
    """
    bins = _require_bins(bins)
    eps = _check_epsilon(epsilon)
    _sensitivity(neighbouring)  # validate before touching the data
    gen = _as_rng(rng)
    arr = _validate_data(data, bins)
    arr, report = _enforce_bounds(arr, bins, out_of_bounds, allow_data_at_both_bounds)
    counts = np.bincount(_cell_index(arr, bins), minlength=bins.n_bins).astype(np.float64)
    noisy = np.maximum(laplace_noisy_counts(counts, eps, gen, neighbouring=neighbouring), 0.0)
    if n_synthetic is None:
        synth_counts = np.rint(noisy).astype(np.int64)
    else:
        if isinstance(n_synthetic, bool) or not isinstance(n_synthetic, (int, np.integer)) or n_synthetic < 0:
            raise ValueError(f"n_synthetic must be None or an integer >= 0, got {n_synthetic!r}")
        total = noisy.sum()
        probs = noisy / total if total > 0 else np.full(bins.n_bins, 1.0 / bins.n_bins)
        synth_counts = gen.multinomial(int(n_synthetic), probs).astype(np.int64)
    cells = np.repeat(np.arange(bins.n_bins), synth_counts)
    synth = _draw_in_cells(cells, bins, gen)
    synth = synth[gen.permutation(synth.shape[0])]
    return PartySynthetic(synth, synth_counts, bins, eps, neighbouring, report)


# --------------------------------------------------------------------------- merging


def eps_bar(epsilons: Sequence[float], m: Sequence[int]) -> float:
    """Weighted harmonic mean ``eps_bar = m (sum_k m_k / eps_k)^-1`` (Theorem 1, below eq. 2)."""
    e = _check_epsilons(epsilons)
    mk = _check_m(m, e.size)
    return float(mk.sum() / np.sum(mk / e))


def eps_bar2(epsilons: Sequence[float], m: Sequence[int]) -> float:
    """``(m / sum_k m_k eps_k^-2)^(1/2)``: the budget that sets the total Laplace count variance.

    ``sum_kj Var(e_kj) = 2 sum_k m_k / eps_k^2 = 2 m / eps_bar2^2``; Theorem 1's proof has
    ``sum_k m_k / eps_k = m / eps_bar`` there (erratum). ``eps_bar2 <= eps_bar``, with equality
    iff all ``eps_k`` are equal.
    """
    e = _check_epsilons(epsilons)
    mk = _check_m(m, e.size)
    return float(np.sqrt(mk.sum() / np.sum(mk / e**2)))


def privacy_cost(epsilons: Sequence[float]) -> float:
    """``max_k eps_k``: parallel composition over disjoint parties (Def. 2, Sec. II-B)."""
    return float(_check_epsilons(epsilons).max())


def _check_m(m: Sequence[int], g: int) -> np.ndarray:
    mk = np.asarray(m)
    if mk.ndim != 1 or mk.size != g:
        raise ValueError(f"m must give one bin count per party ({g}), got shape {mk.shape}")
    if mk.dtype.kind not in "iu" and not (mk.dtype.kind == "f" and np.all(mk == np.round(mk))):
        raise ValueError(f"m must be integers, got {m!r}")
    if np.any(mk < 1):
        raise ValueError(f"every m_k must be >= 1, got {m!r}")
    return mk.astype(np.float64)


@dataclass(frozen=True)
class MergedSynthetic:
    """Horizontally merged synthetic data of g parties (HOMM, Su & Liu Sec. II-B)."""

    data: np.ndarray
    party: np.ndarray
    columns: tuple[str, ...]
    epsilons: tuple[float, ...]
    n_bins: tuple[int, ...]
    privacy_cost: float
    eps_bar: float
    eps_bar2: float

    @property
    def n_synthetic(self) -> int:
        return int(self.data.shape[0])


def merge_parties(parties: Sequence[PartySynthetic]) -> MergedSynthetic:
    """Stack the parties' synthetic data; report ``max eps_k``, ``eps_bar`` and ``eps_bar2``.

    Parties must share column names, bounds and discrete flags (their grids may differ).
    """
    parties = list(parties)
    if not parties:
        raise ValueError("no parties to merge")
    for k, pt in enumerate(parties):
        if not isinstance(pt, PartySynthetic):
            raise ValueError(f"parties[{k}] is a {type(pt).__name__}, expected PartySynthetic")
    ref = parties[0].bins
    for k, pt in enumerate(parties[1:], start=1):
        if pt.bins.columns != ref.columns:
            raise ValueError(f"party {k} has columns {pt.bins.columns}, party 0 has {ref.columns}: mismatched columns")
        if not pt.bins.same_columns(ref):
            raise ValueError(f"party {k} declares different bounds or discrete flags than party 0 for the same columns")
        if pt.neighbouring != parties[0].neighbouring:
            raise ValueError(
                f"party {k} used neighbouring={pt.neighbouring!r}, party 0 {parties[0].neighbouring!r}: "
                "their epsilons are not comparable"
            )
    data = np.concatenate([pt.data for pt in parties], axis=0)
    party = np.concatenate([np.full(pt.n_synthetic, k, dtype=np.int64) for k, pt in enumerate(parties)])
    eps = [pt.epsilon for pt in parties]
    m = [pt.n_bins for pt in parties]
    return MergedSynthetic(
        data=data,
        party=party,
        columns=ref.columns,
        epsilons=tuple(eps),
        n_bins=tuple(m),
        privacy_cost=privacy_cost(eps),
        eps_bar=eps_bar(eps, m),
        eps_bar2=eps_bar2(eps, m),
    )


def homm_synthetic(
    datasets: Sequence[np.ndarray],
    bins: Bins | Sequence[Bins],
    epsilons: Sequence[float],
    rng: np.random.Generator | int,
    **kwargs: object,
) -> MergedSynthetic:
    """Every party synthesises at its own ``eps_k`` (:func:`synthesize_party`), then merge.

    ``bins``: one :class:`Bins` for all parties or one per party. ``kwargs`` go to
    :func:`synthesize_party`. One generator is used for all parties in turn (in practice
    each party draws its own noise).
    """
    datasets = list(datasets)
    eps = _check_epsilons(epsilons)
    if len(datasets) != eps.size:
        raise ValueError(f"{len(datasets)} data sets but {eps.size} epsilons: need one budget per party")
    if isinstance(bins, Bins):
        bins_list = [bins] * len(datasets)
    elif isinstance(bins, (list, tuple)) and all(isinstance(b, Bins) for b in bins):
        bins_list = list(bins)
        if len(bins_list) != len(datasets):
            raise ValueError(f"{len(bins_list)} Bins for {len(datasets)} parties")
    else:
        _require_bins(bins)
        raise AssertionError  # unreachable
    ncols = {np.asarray(d).shape[1] if np.asarray(d).ndim == 2 else 1 for d in datasets}
    if len(ncols) > 1:
        raise ValueError(f"parties' data have different numbers of columns {sorted(ncols)}: mismatched columns")
    gen = _as_rng(rng)
    parties = [
        synthesize_party(d, b, e, gen, **kwargs)  # type: ignore[arg-type]
        for d, b, e in zip(datasets, bins_list, eps)
    ]
    return merge_parties(parties)


# --------------------------------------------------------------------------- analysis


class OLSFit(NamedTuple):
    """Least squares on (merged synthetic) data (Theorem 2's ``(x~^T x~)^-1 x~^T y~``)."""

    coef: np.ndarray
    n: int
    intercept: bool
    privacy_cost: float | None
    eps_bar: float | None

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        k = self.coef.size - int(self.intercept)
        if X.ndim != 2 or X.shape[1] != k:
            raise ValueError(f"X must have shape (n, {k}), got {X.shape}")
        return (self.coef[0] + X @ self.coef[1:]) if self.intercept else X @ self.coef


def fit_ols(
    data: MergedSynthetic | PartySynthetic | np.ndarray,
    response: int | str = -1,
    *,
    intercept: bool = True,
) -> OLSFit:
    """OLS of column ``response`` on the other columns (plus an intercept).

    With a :class:`MergedSynthetic`, the result carries its privacy cost and ``eps_bar``;
    with a plain array (e.g. a party's own data), they are ``None``.
    """
    cost: float | None = None
    eb: float | None = None
    if isinstance(data, MergedSynthetic):
        arr, cols, cost, eb = data.data, data.columns, data.privacy_cost, data.eps_bar
    elif isinstance(data, PartySynthetic):
        arr, cols, cost, eb = data.data, data.bins.columns, data.epsilon, data.epsilon
    else:
        arr = np.asarray(data, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(f"data must be 2-D (n, p), got shape {arr.shape}")
        cols = tuple(f"x{i}" for i in range(arr.shape[1]))
        if not np.all(np.isfinite(arr)):
            raise ValueError("data have non-finite values")
    p = arr.shape[1]
    if isinstance(response, str):
        if response not in cols:
            raise ValueError(f"response {response!r} is not a column ({', '.join(cols)})")
        j = cols.index(response)
    else:
        if not -p <= int(response) < p:
            raise ValueError(f"response index {response} out of range for {p} columns")
        j = int(response) % p
    y = arr[:, j]
    X = np.delete(arr, j, axis=1)
    if intercept:
        X = np.column_stack([np.ones(X.shape[0]), X])
    if X.shape[0] < X.shape[1]:
        raise ValueError(f"OLS needs at least {X.shape[1]} rows, got {X.shape[0]}")
    coef, _, rank, _ = np.linalg.lstsq(X, y, rcond=None)
    if rank < X.shape[1]:
        raise ValueError(f"design matrix is rank deficient (rank {rank} < {X.shape[1]})")
    return OLSFit(coef, int(X.shape[0]), intercept, cost, eb)
