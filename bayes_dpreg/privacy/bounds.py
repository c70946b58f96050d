"""Bounds a party can choose well: a differentially private proposal of ``x_bound`` and ``y_bound``.

The release's noise is calibrated to the declared bounds ``||x|| <= x_bound``,
``|y| <= y_bound`` (``sigma`` grows with ``x_bound^2`` and ``x_bound y_bound``), and rows
outside them are clipped. Bounds set at the data's own maxima are a function of the
private data and leak it (one row decides them); bounds set too low clip many rows and
bias ``S`` and ``z``. :func:`propose_bounds` spends a declared share of the party's
budget on two private quantiles, of the row norms ``||x_i||`` and of ``|y_i|``: OpenDP's
``make_private_quantile`` (the exponential mechanism over a grid of candidates; Smith
2011, permute-and-flip scoring of McKenna & Sheldon 2020), pure ``epsilon / 2``-DP each
under the replace-one-row relation (symmetric distance 2), with OpenDP's own
cryptographically secure sampler. The candidates are a geometric grid (ratio
``2^(1/8)``, 9% steps) over a declared public range, so the proposal depends on the data
only through the mechanism. The two queries are recorded in the ledger as one entry
(``delta = 0``) and composed with the Gaussian releases there
(:mod:`bayes_dpreg.privacy.ledger`).

Which quantile: with ``q`` the proposal scales about ``1 - q`` of the rows onto the bounds
(:func:`~bayes_dpreg.privacy.gaussian.clip`: a down-weighting of those rows, with a small
bias toward zero where ``|y|`` sets the scale; ``python -m studies.clipping``) and cuts the
noise sd by about ``(max norm / quantile)^2`` against bounds at the maximum.
``python -m studies.bounds_tradeoff`` draws the trade-off on real data
(``docs/privacy.md``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..runtime.entry import public
from .gaussian import row_norms
from .ledger import reserve

__all__ = ["ProposedBounds", "QuantileBound", "propose_bounds", "bound_candidates", "auto_quantile"]

GRID_RATIO = 2.0**0.125
DEFAULT_RANGE = (1e-6, 1e9)


class QuantileBound(float):
    """A bound :func:`propose_bounds` located at the ``quantile`` of the party's rows: a float that keeps
    that quantile, so that ``release(X, y, x_bound=p.x_bound, y_bound=p.y_bound, ...)`` records it as
    ``**p.release_bounds()`` does (:func:`~bayes_dpreg.release` reads ``y_bound``'s). Arithmetic on it
    gives plain floats."""

    quantile: float

    def __new__(cls, value: float, quantile: float) -> QuantileBound:
        obj = super().__new__(cls, value)
        obj.quantile = float(quantile)
        return obj

    def __reduce__(self) -> tuple[Any, tuple[float, float]]:
        return (QuantileBound, (float(self), self.quantile))

    def __repr__(self) -> str:
        return f"QuantileBound({float(self)!r}, quantile={self.quantile!r})"


@dataclass(frozen=True)
class ProposedBounds:
    """What :func:`propose_bounds` returns. ``x_bound`` and ``y_bound`` are DP outputs (safe to
    publish and to use in a release); ``x_clipped`` and ``y_clipped``, the fractions of this
    party's rows the proposal would clip, are computed on the private data and are for the
    releasing party only. The bounds are :class:`QuantileBound` floats that carry ``quantile``."""

    x_bound: float
    y_bound: float
    quantile: float
    epsilon: float
    n_rows: int
    x_clipped: float
    y_clipped: float

    def release_bounds(self) -> dict[str, float]:
        """``x_bound``, ``y_bound`` and ``bound_quantile`` for :func:`~bayes_dpreg.release`
        (``release(X, y, epsilon=..., delta=..., **proposal.release_bounds())``): the release then
        records that its bounds are quantiles, which the autoscaled prior takes into account."""
        return {"x_bound": self.x_bound, "y_bound": self.y_bound, "bound_quantile": self.quantile}

    def __str__(self) -> str:
        return (
            f"proposed bounds (eps = {self.epsilon:g}, quantile {self.quantile:g}): x_bound = {self.x_bound:.6g}, "
            f"y_bound = {self.y_bound:.6g}; for you only: they would clip {100 * self.x_clipped:.2f}% of the "
            f"{self.n_rows} rows' x and {100 * self.y_clipped:.2f}% of their y"
        )


def bound_candidates(lower: float, upper: float) -> np.ndarray:
    """The geometric grid of candidate bounds ``lower * 2^(k/8) <= upper``."""
    if not (math.isfinite(lower) and math.isfinite(upper) and 0 < lower < upper):
        raise ValueError(f"the candidate range must satisfy 0 < lower < upper < inf, got ({lower!r}, {upper!r})")
    k = math.floor((math.log(upper) - math.log(lower)) / math.log(GRID_RATIO) + 1e-9)
    if k > 4096:
        raise ValueError(f"the candidate range ({lower:g}, {upper:g}) spans more than 4096 grid steps; narrow it")
    return lower * GRID_RATIO ** np.arange(k + 1)


MIN_TAIL = 80.0


def auto_quantile(n: int, epsilon: float) -> float:
    """The default quantile ``q = min(0.99, 1 - 80 / (n epsilon / 2))``.

    Every candidate above the data's maximum has the same quantile score, ``(1 - q) n``
    rows from the target, so the exponential mechanism's chance of returning one of the
    hundreds of them is small only when ``(1 - q) n eps_q`` is large (``eps_q = epsilon / 2``
    per query). Measured (``python -m studies.bounds_tradeoff``, which prints the
    table): a proposal above 1.5 times the maximum norm in 75-90% of draws at
    ``(1 - q) n eps_q = 20``, 7-18% at 40 and none of 40 at 80. ``n`` is public: every
    release records it."""
    if n * epsilon / 2 < 2 * MIN_TAIL:
        raise ValueError(
            f"{n} rows are too few to locate a bound privately at eps = {epsilon:g} (need "
            f"n eps / 2 >= {2 * MIN_TAIL:g}); declare bounds from public knowledge instead"
        )
    return min(0.99, 1.0 - MIN_TAIL / (n * epsilon / 2))


def _private_quantile(values: np.ndarray, candidates: np.ndarray, quantile: float, epsilon: float) -> float:
    """OpenDP's private quantile, calibrated to ``epsilon`` (pure DP) at symmetric distance 2."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    cands = [float(c) for c in candidates]

    def make(scale: float) -> Any:
        return dp.m.make_private_quantile(*space, dp.max_divergence(), candidates=cands, alpha=quantile, scale=scale)

    meas = dp.binary_search_chain(make, d_in=2, d_out=epsilon)
    # values above the grid are scored as the top candidate's excess; clamping keeps the input finite
    return float(meas(np.minimum(values, candidates[-1]).tolist()))


def _norms_and_responses(
    X: Any, y: Any, columns: list[str] | None, batch_rows: int | None
) -> tuple[np.ndarray, np.ndarray]:
    from .sources import BATCH_ROWS, batches, is_table_source, validate_data

    if is_table_source(X):
        parts = [
            validate_data(Xb, yb, min_rows=1)
            for Xb, yb in batches(X, -1 if y is None else y, columns, batch_rows or BATCH_ROWS)
        ]
        if not parts:
            raise ValueError("the source has no rows")
        norms = np.concatenate([row_norms(Xb) for Xb, _ in parts])
        return norms, np.abs(np.concatenate([yb for _, yb in parts]))
    Xv, yv = validate_data(X, y, min_rows=1)
    return row_norms(Xv), np.abs(yv)


@public
def propose_bounds(
    X: Any,
    y: Any = None,
    *,
    epsilon: float,
    quantile: float | None = None,
    x_range: tuple[float, float] = DEFAULT_RANGE,
    y_range: tuple[float, float] = DEFAULT_RANGE,
    ledger: Any = None,
    name: str = "",
    columns: list[str] | None = None,
    batch_rows: int | None = None,
) -> ProposedBounds:
    """Propose ``x_bound`` and ``y_bound`` by two ``epsilon / 2``-DP quantiles of the row norms and ``|y|``.

    ``X, y``: arrays as for :func:`~bayes_dpreg.release`, or a table source (a CSV
    or Parquet path, a pyarrow table or dataset, an iterable of ``(X, y)`` batches) with
    ``y`` the response column (default: the last) and ``columns`` the features; the row
    norms are held in memory (8 bytes a row). ``quantile``: the share of rows the bound
    should keep unclipped; by default ``min(0.99, 1 - 80 / (n epsilon / 2))`` (:func:`auto_quantile`).
    ``x_range``, ``y_range``: public ranges for the candidates
    (:func:`bound_candidates`); a quantile outside its range comes back as the range's end.
    ``ledger`` (a :class:`~bayes_dpreg.privacy.ledger.PrivacyLedger` or the path of one) records the
    spend, or refuses it before the data are touched
    (:class:`~bayes_dpreg.privacy.ledger.BudgetExceededError`)."""
    if isinstance(epsilon, bool) or not (
        isinstance(epsilon, (int, float)) and math.isfinite(epsilon) and 1e-3 <= epsilon <= 10
    ):
        raise ValueError(f"epsilon for the bounds must be a number in [0.001, 10], got {epsilon!r}")
    if quantile is not None and not (isinstance(quantile, (int, float)) and 0.5 <= quantile < 1):
        raise ValueError(f"quantile must lie in [0.5, 1), got {quantile!r}")
    cx, cy = bound_candidates(*x_range), bound_candidates(*y_range)
    reserve(ledger, "bounds", name, epsilon, 0.0, "exponential", "")  # pure DP: no Gaussian component
    norms, abs_y = _norms_and_responses(X, y, columns, batch_rows)
    n = norms.size
    if quantile is None:
        quantile = auto_quantile(n, epsilon)
    elif (1 - quantile) * n * epsilon / 2 < MIN_TAIL:
        warnings.warn(
            f"with n = {n} rows and eps = {epsilon:g} the {quantile:g} quantile is not well determined: "
            f"(1 - q) n eps / 2 = {(1 - quantile) * n * epsilon / 2:.3g} < {MIN_TAIL}, so the proposal "
            f"may lie far above it; use quantile <= {auto_quantile(n, epsilon):.4g}",
            RuntimeWarning,
            stacklevel=2,
        )
    xb = _private_quantile(norms, cx, float(quantile), epsilon / 2)
    yb = _private_quantile(abs_y, cy, float(quantile), epsilon / 2)
    return ProposedBounds(
        x_bound=QuantileBound(xb, quantile),
        y_bound=QuantileBound(yb, quantile),
        quantile=float(quantile),
        epsilon=float(epsilon),
        n_rows=int(n),
        x_clipped=float(np.mean(norms > xb)),
        y_clipped=float(np.mean(abs_y > yb)),
    )
