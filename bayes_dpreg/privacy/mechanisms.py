"""Per-party DP release of the summary statistics (Alparslan et al. 2023, eq. 8).

A data holder calls :func:`release` (or :func:`release_adassp`, :func:`release_bs` for the
comparators) on its own ``(X_j, y_j)`` and publishes the returned
:class:`~bayes_dpreg.privacy.noisy_stats.NoisyStats` (``NoisyStats.save``).
"""

from __future__ import annotations

import hashlib
import math
import os
import secrets
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from ..runtime.entry import public
from .gaussian import (
    Calibration,
    CalibrationKind,
    NoiseKind,
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
from .gram import Gram
from .ledger import reserve
from .noisy_stats import NoisyStats, check_bound_quantile, warn_if_not_private
from .sources import validate_data

if TYPE_CHECKING:
    from .ledger import PrivacyLedger

__all__ = ["release", "release_adassp", "release_bs", "average_rows"]


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

    gram: Gram  # S, z, y^T y, exactly (bayes_dpreg.privacy.gram)
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
    for tables (both through :func:`~bayes_dpreg.privacy.sources.clipped_sums`)."""
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
    bound_quantile: float | None = None,
    yty: bool = False,
) -> NoisyStats:
    """Release ``(S~, z~)`` of one party under (epsilon, delta)-DP (replacement neighbours).

    Rows with ``||x|| > x_bound`` or ``|y| > y_bound`` are first scaled, ``x`` and ``y`` together,
    onto the bounds (:func:`~bayes_dpreg.privacy.gaussian.clip`: a weighting, not a bias in
    ``theta``; with ``intercept=True`` the constant column is not scaled, so scaled rows do bias the
    intercept and the slopes); a :class:`~bayes_dpreg.privacy.gaussian.ClippingWarning`
    tells the caller how many (this count is *not* released). The noise sds
    come from :func:`~bayes_dpreg.privacy.gaussian.calibrate`; ``calibration="as_published"``
    (the authors' under-calibrated noise, for reproductions only) is not private and
    warns with :class:`~bayes_dpreg.privacy.gaussian.NotPrivateWarning`. Without ``seed`` the
    noise generator is seeded from the operating system's entropy; a ``seed`` is for
    studies: the release then records ``reproducible_seed=True`` and warns
    (:class:`SeededReleaseWarning`), and ``fit`` warns again. Every release gets a random
    ``release_id``.

    ``noise="auto"`` (default) is ``"discrete"`` unless a ``seed`` is given or the
    calibration is ``"as_published"``: ``[upper(S), z]`` is rounded to a grid ``2^k`` (about
    ``2^-20`` of the noise sd) and gets exact discrete Gaussian noise from OpenDP's CSPRNG
    (:func:`~bayes_dpreg.privacy.gaussian.discrete_gaussian`), with the rounding added to the
    sensitivity, so that the released floats carry no low-order-bit trace of the data
    (Mironov 2012). ``"float"`` is NumPy's floating-point Gaussian (seedable, for studies):
    its low-order bits can leak, so it is not private.

    ``X`` may also be a table streamed in batches (:mod:`bayes_dpreg.privacy.sources`): a CSV or
    Parquet path, a pyarrow Table/Dataset/RecordBatchReader with ``y`` the response
    column's name (or index; ``None``: the last) and ``columns`` the features (default: all
    others), or an iterable of ``(X, y)`` batches (``y=None``); memory stays flat in ``n``
    and ``progress=True`` shows a tqdm bar.

    ``ledger`` (a :class:`~bayes_dpreg.privacy.ledger.PrivacyLedger` or the path of an existing one)
    records the release; one that would exceed the ledger's budget raises
    :class:`~bayes_dpreg.privacy.ledger.BudgetExceededError` before any noise is drawn.

    ``bound_quantile``: where ``x_bound`` and ``y_bound`` are quantiles of the party's rows (the
    ``quantile`` of :func:`~bayes_dpreg.propose_bounds`; ``**proposal.release_bounds()`` passes all
    three), recorded with the release (public, like the bounds) so that the autoscaled prior reads
    the response's scale as its maximum rather than the bound (:func:`~bayes_dpreg.model.prior.quantile_to_max`);
    without it, bounds beyond which rows are scaled make that prior too narrow for ``theta``. Default: the
    quantile a ``y_bound`` from :func:`~bayes_dpreg.propose_bounds` carries (``y_bound=proposal.y_bound``,
    a :class:`~bayes_dpreg.privacy.bounds.QuantileBound`), else none.

    ``intercept=True`` (App. B.2) releases the statistics of ``[1, x_i]``: the features are
    clipped to ``x_bound`` and the released rows have norm at most ``sqrt(1 + x_bound^2)``,
    the ``x_bound`` recorded in the result. ``average_rows=k`` (App. B.1) releases the
    statistics of :func:`average_rows` instead (for non-normal features); ``x_bound`` and
    ``y_bound`` then bound the *averaged* rows, which are clipped to them. (The paper's
    remark that averaged statistics keep the sensitivities of the originals holds only
    under such bounds: an averaged row of ``k`` rows bounded by ``B`` can have norm ``sqrt(k) B``.)

    ``yty=True`` releases the response's sum of squares ``u~ = y^T y + sigma w`` too: one Gaussian
    mechanism on ``[upper(S), z, y^T y]`` (the MCMC-B&S release's, :func:`release_bs`, with this
    function's options; ``mechanism="bs"``; ``calibration`` ``"auto"`` or ``"joint"``), whose noise sd
    is larger by the ``y_bound^4`` that ``y^T y`` adds to the squared sensitivity
    (:func:`~bayes_dpreg.privacy.gaussian.bs_sensitivity`: 1.01, 1.11, 1.41 times the joint ``[upper(S), z]``
    mechanism's at ``y_bound`` = 0.5, 1, 2 times ``x_bound``).
    Without it the release leaves ``sigma_y^2`` to its prior where the ``z~_j`` of several parties
    cannot pin it down, one party above all (``docs/prior.md``, *Noise variance left to its prior*);
    with it the default sampler observes ``y^T y`` (:func:`~bayes_dpreg.samplers.normalx_clt.clt_log_lik_observed`):
    on the paper's one-party cells the 90% intervals covered 0.88-0.93 (0.82 at d = 2, eps = 5 without it), a fit
    took about twice as long and 3% of the fits on the paper's 18 cells had a divergent transition
    (``docs/prior.md``, *Releasing y^T y*).
    """
    check_privacy_parameters(epsilon, delta)
    bs_kind = _check_calibration(epsilon, delta, x_bound, y_bound, calibration, yty)  # before the data are read
    bound_quantile = getattr(y_bound, "quantile", None) if bound_quantile is None else bound_quantile  # QuantileBound
    check_bound_quantile(bound_quantile)
    kind = _noise_kind(noise, seed, calibration)
    ex = _exact_release_stats(X, y, x_bound, y_bound, intercept, average_rows, columns, progress)
    if bound_quantile is not None:
        ex.meta["bound_quantile"] = float(bound_quantile)
    if bs_kind is not None:
        out = _noisy_bs(ex, epsilon, delta, y_bound, bs_kind, kind, seed, name, ledger)
    else:
        cal = calibrate(epsilon, delta, ex.x_bound, y_bound, calibration, noise=kind, d=ex.d, n=ex.n)
        release_id = secrets.token_hex(16)
        components = _ssp_components(cal, epsilon, delta, ex.x_bound, y_bound)
        reserve(ledger, "ssp", name, epsilon, delta, kind, "" if seed is not None else release_id, components)
        out = _noisy_ssp(ex, cal, epsilon, delta, y_bound, kind, seed, name, release_id, seed is not None)
    warn_if_not_private(out)
    return out


def _check_calibration(
    epsilon: float, delta: float, x_bound: float, y_bound: float, calibration: CalibrationKind, yty: bool
) -> Literal["joint", "as_published"] | None:
    """Every parameter of :func:`release` checked; for ``yty`` the calibration of its one mechanism."""
    if not yty:
        calibrate(epsilon, delta, x_bound, y_bound, calibration)
        return None
    if calibration not in ("auto", "joint", "as_published"):
        raise ValueError(
            f"yty=True releases one Gaussian mechanism: calibration must be 'auto' or 'joint', not {calibration!r}"
        )
    kind: Literal["joint", "as_published"] = "as_published" if calibration == "as_published" else "joint"
    calibrate_bs(epsilon, delta, x_bound, y_bound, kind)
    return kind


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
    ``sigma = sigma(eps, delta) Delta_ss`` (:func:`~bayes_dpreg.privacy.gaussian.calibrate_bs`).
    Clipping, seeding, ``noise`` and the ``"as_published"`` warning as in :func:`release`. Its ``S~, z~``
    are a valid input to every other method too (with more noise than :func:`release`'s)."""
    check_privacy_parameters(epsilon, delta)
    calibrate_bs(epsilon, delta, x_bound, y_bound, calibration)  # every parameter checked before the data are read
    kind = _noise_kind(noise, seed, calibration)
    ex = _exact_release_stats(X, y, x_bound, y_bound, False, 1, columns, progress)
    out = _noisy_bs(ex, epsilon, delta, y_bound, calibration, kind, seed, name, ledger)
    warn_if_not_private(out)
    return out


def _noisy_bs(
    ex: _Exact,
    epsilon: float,
    delta: float,
    y_bound: float,
    calibration: Literal["joint", "as_published"],
    kind: NoiseKind,
    seed: Any,
    name: str,
    ledger: PrivacyLedger | str | os.PathLike | None,
) -> NoisyStats:
    """``[upper(S), z, y^T y]`` of the exact statistics through one Gaussian mechanism (App. C.1, eq. 13),
    recorded in the ledger: :func:`release_bs` and ``release(..., yty=True)``."""
    n, d, x_bound = ex.n, ex.d, ex.x_bound
    sigma = calibrate_bs(epsilon, delta, x_bound, y_bound, calibration)
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
    return NoisyStats(
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
        meta=ex.meta,
        release_id=release_id or _new_release_id(rng, seed, S_noisy, z_noisy),
        reproducible_seed=seed is not None,
        features=ex.features,
    )
