"""Do the parties share one ``Sigma_x``? A release-only test of MCMC-normalX's ``S_j ~ W(Sigma_x, n_j)``
(:func:`party_heterogeneity`, :class:`HeterogeneityWarning`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ...samplers.base import positive_int
from .base import Check, Finding

if TYPE_CHECKING:
    from ...samplers.base import Sampler
    from ...stats import StackedStats

__all__ = [
    "HeterogeneityWarning",
    "Heterogeneity",
    "party_heterogeneity",
    "heterogeneous",
    "heterogeneity_summary",
    "HETEROGENEITY_MAX",
    "HETEROGENEITY_P",
    "CHECK",
]


class HeterogeneityWarning(UserWarning):
    """The parties' released ``S~_j`` differ more than one ``Sigma_x`` shared by all parties allows:
    the model ``S_j ~ W(Sigma_x, n_j)`` of MCMC-normalX is strained (e.g. parties split by time or site)."""


HETEROGENEITY_MAX = 2.0  # dispersion above which fit warns (about 1 under the model)
HETEROGENEITY_P = 0.01


def heterogeneous(dispersion: float, p_value: float) -> bool:
    """The verdict behind ``HeterogeneityWarning``: dispersion above 2 with bootstrap p <= 0.01."""
    return dispersion > HETEROGENEITY_MAX and p_value <= HETEROGENEITY_P


def heterogeneity_summary(attrs: Any) -> str | None:
    """One line on the parties' spread for reports (``None`` when the fit did not record it)."""
    if "party_dispersion" not in attrs:
        return None
    disp, p = float(attrs["party_dispersion"]), float(attrs["party_dispersion_p"])
    verdict = (
        "the parties' feature distributions differ, so one shared Sigma_x does not hold (HeterogeneityWarning)"
        if heterogeneous(disp, p)
        else "consistent with one shared Sigma_x"
    )
    spread = f"the released S~_j spread {disp:.2f} times what the model allows (bootstrap p = {p:.3g})"
    return f"Parties: {spread}: {verdict}."


class Heterogeneity(NamedTuple):
    """:func:`party_heterogeneity`'s result: ``dispersion`` = ``statistic / null_mean`` (about 1 when
    the parties share ``Sigma_x``), its parametric-bootstrap ``p_value`` and the ``draws`` behind it."""

    statistic: float
    null_mean: float
    dispersion: float
    p_value: float
    draws: int


def _upper(S: np.ndarray) -> np.ndarray:
    iu = np.triu_indices(S.shape[-1])
    return S[..., iu[0], iu[1]]


def _wishart_cov(Sigma: np.ndarray) -> np.ndarray:
    """``Cov(S_ab, S_ce) / n = Sigma_ac Sigma_be + Sigma_ae Sigma_bc`` for ``S ~ W(Sigma, n)``, over the
    upper triangle (row-major, diagonal included)."""
    a, b = np.triu_indices(Sigma.shape[-1])
    return Sigma[np.ix_(a, a)] * Sigma[np.ix_(b, b)] + Sigma[np.ix_(a, b)] * Sigma[np.ix_(b, a)]


def _whitened_spread(U: np.ndarray, n: np.ndarray, E: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``sum_j r_j^T V_j^{-1} r_j`` with ``r_j = U_j - n_j sum_k U_k / sum_k n_k``, ``U_j = upper(S_j)``, and
    ``V_j = E diag(v_j) E^T`` (:func:`_covariances`); ``U`` may carry leading batch axes before the
    party axis. One matrix product for every party and draw: ``(E^T r_j)^2 / v_j`` summed."""
    r = U - n[:, None] * (U.sum(-2, keepdims=True) / n.sum())
    return ((r.reshape(-1, E.shape[0]) @ E).reshape(r.shape) ** 2 / v).sum((-1, -2))


def _covariances(Sigma: np.ndarray, n: np.ndarray, sig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(E, v)`` with ``V_j = (1 - n_j / N) (n_j Gamma + sigma_S,j^2 I) = E diag(v_j) E^T`` for every
    party: ``Gamma = E diag(g) E^T`` (:func:`_wishart_cov`) is shared, so ``v_j = (1 - n_j / N) (n_j g +
    sigma_S,j^2)``. One ``p x p`` eigendecomposition, ``p = d (d + 1) / 2``, where a Cholesky factor and
    its inverse a party held ``J`` matrices of ``p^2`` (2.6 GB at d = 50, J = 100)."""
    g, E = np.linalg.eigh(_wishart_cov(Sigma))
    g = np.maximum(g, 0.0)  # positive semi-definite: rounding only
    return E, (1.0 - n / n.sum())[:, None] * (n[:, None] * g + sig[:, None] ** 2)


def _bartlett_wishart(rng: np.random.Generator, L: np.ndarray, dof: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws of ``S_j ~ W(L L^T, dof_j)`` per party (Bartlett: ``S = L A A^T L^T``)."""
    J, d = dof.shape[0], L.shape[-1]
    below = np.tril_indices(d, -1)
    A = np.zeros((size, J, d, d))
    A[..., below[0], below[1]] = rng.standard_normal((size, J, below[0].size))
    A[..., np.arange(d), np.arange(d)] = np.sqrt(rng.chisquare(dof[:, None] - np.arange(d), size=(size, J, d)))
    LA = L @ A
    return LA @ np.swapaxes(LA, -1, -2)


def _null_spread(
    rng: np.random.Generator, L: np.ndarray, n: np.ndarray, sig: np.ndarray, E: np.ndarray, v: np.ndarray, draws: int
) -> np.ndarray:
    """:func:`_whitened_spread` of ``draws`` releases simulated from the model at ``Sigma^ = L L^T``
    (:func:`party_heterogeneity`'s bootstrap), in blocks of draws whose ``S~_j`` hold at most
    :data:`BOOTSTRAP_BLOCK` numbers: memory bounded whatever ``J`` and ``d`` (at d = 50, J = 100, the 200
    draws at once were arrays of 400 MB, several alive together). The release noise is drawn for the upper
    triangle only, the entries the statistic reads."""
    J, d = n.shape[0], L.shape[-1]
    p = d * (d + 1) // 2
    size = max(1, BOOTSTRAP_BLOCK // (J * d * d))
    out = []
    for start in range(0, draws, size):
        m = min(size, draws - start)
        U = _upper(_bartlett_wishart(rng, L, n, m)) + sig[:, None] * rng.standard_normal((m, J, p))
        out.append(_whitened_spread(U, n, E, v))
    return np.concatenate(out)


BOOTSTRAP_BLOCK = 1 << 22  # numbers of the simulated S~_j a block of bootstrap draws holds (32 MB in float64)


def party_heterogeneity(S_tilde: Any, n: Any, sigma_S: Any, *, draws: int = 200, seed: int = 0) -> Heterogeneity:
    """Do the parties' released Gram matrices look like draws around one shared ``Sigma_x``?

    MCMC-normalX models ``S_j ~ W(Sigma_x, n_j)`` with one ``Sigma_x`` (eq. 4), released as
    ``S~_j = S_j + sigma_S,j M_j`` (eq. 8). With the pooled estimate
    ``Sigma^ = sum_j S~_j / sum_j n_j`` and the residuals ``r_j = upper(S~_j - n_j Sigma^)``,
    the statistic is

    .. math::
        Q = \\sum_j r_j^T V_j^{-1} r_j, \\quad
        V_j = (1 - n_j / N) (n_j \\Gamma(\\hat\\Sigma) + \\sigma_{S,j}^2 I),

    ``Gamma`` the Wishart covariance of the entries (:func:`_wishart_cov`). Its null
    distribution is taken by parametric bootstrap: ``draws`` releases simulated from the model
    at ``Sigma_x = Sigma^`` (eigenvalues floored at a millionth of the largest), the same ``n_j``
    and noise, weighted by the same ``V_j``. ``dispersion = Q / mean(Q*)`` is how many times
    more the parties' ``S~_j`` spread than the model allows (about 1 under the model; 1.0-1.5 on
    random splits of power plant and bike sharing, about 4-6 on bike sharing split into
    consecutive blocks, whose seasons differ), ``p_value = (1 + #{Q* >= Q}) / (draws + 1)``.
    Release-only: post-processing, no privacy cost. Needs ``J >= 2``.
    """
    S = np.asarray(S_tilde, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    sig = np.broadcast_to(np.asarray(sigma_S, dtype=np.float64), n.shape)
    J = S.shape[0]
    if J < 2:
        raise ValueError(f"party_heterogeneity needs at least 2 parties, got {J}")
    draws = positive_int("party_heterogeneity's draws", draws)
    lam, U = np.linalg.eigh(0.5 * (S + np.swapaxes(S, -1, -2)).sum(0) / n.sum())
    lam = np.maximum(lam, 1e-6 * max(lam[-1], np.finfo(float).tiny))
    Sigma = (U * lam) @ U.T
    E, v = _covariances(Sigma, n, sig)
    q = float(_whitened_spread(_upper(S), n, E, v))
    q_star = _null_spread(np.random.default_rng(seed), U * np.sqrt(lam), n, sig, E, v, draws)
    null_mean = float(q_star.mean())
    return Heterogeneity(q, null_mean, q / null_mean, float((1 + (q_star >= q).sum()) / (draws + 1)), draws)


def check(idata: Any, st: StackedStats, sampler: Sampler, pr: Any) -> Finding | None:
    """:func:`party_heterogeneity` of the release (``None`` for one party), a warning when the parties
    spread more than twice as much as the model allows (p <= 0.01)."""
    if st.J < 2:
        return None
    h = party_heterogeneity(st.S, st.n, st.sigma_S)
    attrs = {"party_dispersion": h.dispersion, "party_dispersion_p": h.p_value}
    if not heterogeneous(h.dispersion, h.p_value):
        return Finding("heterogeneity", True, attrs)
    message = (
        f"method {sampler.name!r} models every party's S_j as drawn around one Sigma_x, but the released "
        f"S~_j spread {h.dispersion:.1f} times more than that model allows (bootstrap p = {h.p_value:.3g}): "
        "the parties' feature distributions differ (split by time, site, ...). The fit may have chains that "
        "disagree (a mode with a large sigma2: check R-hat, run more chains) and intervals wider than the "
        "data need, while those of 'fixeds' are too narrow (docs/prior.md, 'Heterogeneous parties')."
    )
    return Finding("heterogeneity", False, attrs, message, HeterogeneityWarning)


def _flagged(attrs: Any) -> bool:
    return "party_dispersion" in attrs and heterogeneous(attrs["party_dispersion"], attrs["party_dispersion_p"])


CHECK = Check(
    "heterogeneity",
    # the methods that model S_j ~ W(Sigma_x, n_j) with one Sigma_x; not the intercept model, whose
    # S~_j hold the uncentred design
    applies=lambda sampler: sampler.needs_wishart and not sampler.needs_intercept,
    check=check,
    summary=heterogeneity_summary,
    flagged=_flagged,
    warning=HeterogeneityWarning,
)
