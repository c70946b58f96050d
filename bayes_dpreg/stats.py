"""Stage 2, the statistics the analyst fits: the parties' releases stacked on a party axis.

:func:`stack_stats` validates the parties' :class:`~bayes_dpreg.privacy.noisy_stats.NoisyStats`
once (a common dimension, one intercept convention, one set of feature names) and returns a
:class:`StackedStats` that carries everything later stages need: the arrays of eq. 10
(``S~_j``, ``z~_j``, ``n_j``, noise sds, bounds, privacy parameters) and the releases' public
labels (mechanism, intercept column, party and feature names, release ids). Nothing after this
stage goes back to the per-party list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .privacy.noisy_stats import NoisyStats

__all__ = ["StackedStats", "stack_stats", "as_stats_list", "party_names"]


class StackedStats(NamedTuple):
    """The parties' released statistics stacked on a leading party axis (float64), with their labels."""

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
    u: np.ndarray | None = None  # (J,), bs releases only: noisy y^T y (where every party released one)
    sigma_u: np.ndarray | None = None  # (J,) its noise sd
    mechanisms: tuple[str, ...] = ()  # (J,) "ssp", "adassp" or "bs"
    intercept: bool = False  # the first column is the constant 1 (release(..., intercept=True))
    parties: tuple[str, ...] = ()  # (J,) distinct names of the parties
    features: tuple[tuple[str, ...] | None, ...] = ()  # (J,) the feature columns' names each release carries
    release_ids: tuple[str, ...] = ()  # (J,)
    bound_quantiles: tuple[float | None, ...] = ()  # (J,) the quantile each party's bounds were proposed at

    @property
    def J(self) -> int:
        return int(self.S.shape[0])

    @property
    def d(self) -> int:
        return int(self.S.shape[-1])

    def arrays(self) -> StackedStats:
        """The statistics without their labels: every leaf numeric, for ``jax.tree`` operations that
        stack or batch many releases (replication studies)."""
        return self._replace(
            mechanisms=(), intercept=False, parties=(), features=(), release_ids=(), bound_quantiles=()
        )

    def feature_names(self) -> tuple[str, ...] | None:
        """The features' names the releases carry, or ``None``; all parties must agree (a party
        whose columns are in another order would have its coefficients misattributed)."""
        released = {f for f in self.features if f is not None}
        if len(released) > 1:
            listed = "; ".join(f"{p}: {list(f)}" for p, f in zip(self.parties, self.features) if f)
            raise ValueError(
                f"the parties released different feature names ({listed}): each party must release the same "
                "columns in the same order (or pass coef_names= to label them yourself)"
            )
        return released.pop() if released else None


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


def party_names(stats: Sequence[NoisyStats]) -> tuple[str, ...]:
    """The parties' names, ``party{j}`` where unnamed, made distinct by their position."""
    names = [s.name or f"party{j + 1}" for j, s in enumerate(stats)]
    return tuple(names if len(set(names)) == len(names) else [f"{nm}#{j + 1}" for j, nm in enumerate(names)])


def _intercept(stats: Sequence[NoisyStats]) -> bool:
    flags = {bool(s.meta.get("intercept", False)) for s in stats}
    if len(flags) > 1:
        raise ValueError("some parties released with intercept=True and some without")
    return flags.pop()


def stack_stats(stats: NoisyStats | Sequence[NoisyStats]) -> StackedStats:
    """Stack validated per-party statistics into arrays with a leading party axis, with their labels."""
    stats = as_stats_list(stats)
    col = lambda name: np.array([getattr(s, name) for s in stats], dtype=np.float64)
    yty = all(s.u is not None for s in stats)  # y^T y is read only where every party released it
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
        u=col("u") if yty else None,
        sigma_u=col("sigma_u") if yty else None,
        mechanisms=tuple(s.mechanism for s in stats),
        intercept=_intercept(stats),
        parties=party_names(stats),
        features=tuple(s.features for s in stats),
        release_ids=tuple(s.release_id for s in stats),
        bound_quantiles=tuple(s.bound_quantile for s in stats),
    )
