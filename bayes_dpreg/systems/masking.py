"""Miao, Ding & Wu: matrix masking for multi-party linear models (OLS, ridge, CV, PCA).

Setting (paper Sec. IV-V). ``K`` agencies hold parts of one data set. *Vertical*
partitioning: agency ``i`` holds columns ``X_i`` (``n x p_i``) of the same ``n`` subjects
and one agency holds the response ``Y``. *Horizontal* partitioning: agency ``i`` holds
rows ``X_i`` (``n_i x p``) and their responses ``Y_i``. The agencies mask their data,
hand it to an untrusted server that fits the model on masked data, and decrypt the
masked coefficients together.

Two "encryption layers" (Sec. V-A):

1. additive noise ``X + Delta``, ``Delta`` iid ``N(0, noise_sd^2)`` (optional; see
   *Privacy* below -- it carries no calibrated epsilon here);
2. matrix masking ``X* = A (X + Delta) B`` and ``Z* = A Z``, with ``A`` orthogonal
   (``n x n``) and ``B`` invertible (``p x p``). The responses are
   ``Z = [Y, Y_s1, Y_s2] C`` with ``C`` an invertible ``3 x 3`` matrix, ``Y_s1`` the row
   sum of ``X + Delta`` (before masking) and ``Y_s2`` random.

Implemented pieces (paper references in brackets):

* :func:`vertical_mask` -- Algorithm 1: ``A_i = A_0^{gamma_i}`` from a public basis
  ``A_0`` (so the left masks commute) and per-agency right masks ``B_ji``; the
  released ``B`` is block-diagonal (Sec. V-A2a).
* :func:`horizontal_mask` -- Algorithm 3: per-agency orthogonal ``A_ji`` and commuting
  right masks ``B_i = sum_j b_ij B_0^j`` (``C_i`` likewise from ``C_0``); the masked
  responses are stacked **block-diagonally** (Sec. V-B1; stored compactly, see
  :class:`MaskedProblem`).
* :func:`server_solve` / :func:`decrypt` / :func:`masked_fit` -- modeling phase and
  Algorithm 4 (post-modeling decryption), OLS and ridge, with the pseudo-response
  verification ``beta_s1 == 1`` (Sec. V-B, "Computation correctness").
* :func:`server_cv` / :func:`masked_cv` -- k-fold cross-validation without re-masking:
  ``A`` is block-diagonal with blocks aligned to the folds (Sec. V-C).
* :func:`server_pca` / :func:`masked_pca` -- PCA by the generalized symmetric
  eigenproblem of ``(X*^T X*, B^T B)`` (Sec. V-D, corrected).

Masks ``A`` are block-diagonal orthogonal matrices (Sec. V-A2a, "partition ``A_i``
into block diagonal matrix"): Haar-random blocks of size ``block_size`` generated from
explicit seeds (:class:`BlockOrthogonalMask`), applied blockwise and never formed as an
``n x n`` matrix, so memory stays ``O(n p + chunk * b^2)`` and ``n = 1e6`` runs in memory.

Errata and deviations (see ``NOTES.md``):

* **Ridge.** The paper's ``[X*^T X* + lambda (B^T B)^{-1}]^{-1} X*^T Z*`` is wrong; the
  penalty that decrypts to ``(X^T X + lambda I)^{-1} X^T Y`` is ``lambda B^T B``:
  ``(B^T G B + lambda B^T B) B^{-1} beta = B^T (G + lambda I) beta``.
* **PCA.** Algorithm 2's plain eigendecomposition of ``X*^T X* = B^T G B`` does *not* give
  the eigenvalues of ``G`` (``B`` is not orthogonal: that is a congruence, not a
  similarity). The generalized problem ``B^T G B v = mu B^T B v`` does:
  ``mu`` are the eigenvalues of ``G`` and ``B v`` its unit eigenvectors.
* **Ridge verification (our change).** The paper sets ``Y_s1 = 0`` for ridge, whose
  check ``beta_s1 == 0`` passes for *any* tampered data (a linear fit of zeros is
  zero). We keep ``Y_s1`` = row sum and treat ridge as OLS on the augmented data
  ``[X; sqrt(lambda) I]``, ``[Y_s1; sqrt(lambda) 1]``: the server adds
  ``lambda B^T W C`` (``W`` = ones in the ``Y_s1`` column; released once as
  :attr:`MaskedProblem.ridge_rhs`) to the right-hand side, so ``beta_s1 == 1`` for every
  ``lambda`` while the ``Y`` and ``Y_s2`` columns are the ordinary ridge estimates.
* **Numerically safe masks (our choice).** The paper draws ``B`` (and ``B_0``) with iid
  Gaussian entries; the condition number of such matrices grows with ``p``, and powers
  and products over ``K`` agencies compound it. Here every random invertible matrix has
  singular values in ``[1, 2]``, and the commuting basis ``B_0 = P D P^{-1}`` has
  eigenvalues in ``[1, 1.25]`` with ``cond(P) <= 2``; the decrypted estimates then agree
  with the unmasked ones to ~1e-12.
* The agencies' communication order ``Q_i`` is the cyclic order ``i, i+1, ..., i-1``
  (paper Fig. 2 and 7).

Privacy -- **no epsilon is reported**:

* The masking layer carries **no differential-privacy guarantee** (no finite epsilon).
  ``X -> A X B`` preserves the rank (and, with ``B^T B`` released for ridge/PCA, all
  singular values) of ``X + Delta`` exactly, so two neighbouring data sets of different
  rank give outputs in disjoint events with probability one; e.g. with ``Delta = 0`` the
  all-zero data set always maps to the zero matrix. The paper's Sec. VI-B argument
  (ratio of ``erf`` terms tends to 1 as ``sigma_B -> 0`` for a *fixed* interval) is not
  a bound over all events and does not yield an epsilon.
* Only calibrated additive noise could carry an ``(epsilon, delta)`` guarantee. The
  optional Gaussian layer ``Delta`` here has **no DP calibration from the paper**
  (which states that it uses ``Delta`` "only to expand the input support instead of
  providing differential privacy"): no sensitivity bound, clipping or neighbouring
  relation is defined, so ``noise_sd`` is a utility/obfuscation knob, not a privacy
  parameter, and nothing in this module reports an epsilon.
* Releasing ``B^T B`` (needed for ridge and PCA) reveals ``B`` up to an orthogonal
  factor: the server can form ``X* R^{-1} = A (X + Delta) U`` (``R`` the Cholesky factor
  of ``B^T B``, ``U`` orthogonal), hence the singular values of ``X + Delta``.

This module is a *simulation*: all agencies run in one process. Their secrets are
gathered in :class:`VerticalKeys` / :class:`HorizontalKeys` only so that decryption can
be run; the server-side functions see only :class:`MaskedProblem`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import LinAlgError, cho_factor, cho_solve, eigh

__all__ = [
    "BlockOrthogonalMask",
    "CVResult",
    "DecryptedFit",
    "HorizontalKeys",
    "MaskedCV",
    "MaskedPCA",
    "MaskedProblem",
    "PCAResult",
    "VerticalKeys",
    "block_layout",
    "decrypt",
    "horizontal_mask",
    "kfold_edges",
    "masked_cv",
    "masked_fit",
    "masked_pca",
    "random_invertible",
    "random_orthogonal",
    "ridge_solve",
    "server_cv",
    "server_pca",
    "server_solve",
    "vertical_mask",
]

FArray = NDArray[np.float64]

#: Largest number of float64 entries of generated mask blocks held at once (2 MiB).
_CHUNK_ENTRIES = 1 << 18
#: Singular values of every random invertible mask lie in this range.
_SV_RANGE = (1.0, 2.0)
#: Eigenvalues of the commuting bases B_0, C_0 (horizontal partitioning).
_EIG_RANGE = (1.0, 1.25)
#: Largest degree s_i of the polynomial B_i = sum_{j<=s_i} b_ij B_0^j.
_MAX_DEGREE = 3


# ----------------------------------------------------------------------------- checks
def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def _check_seed(seed: object) -> int:
    return _check_int(seed, "seed", 0)


def _check_nonnegative(value: object, what: str) -> float:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}") from None
    if not math.isfinite(out) or out < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")
    return out


def _check_lambda(lam: object) -> float:
    return _check_nonnegative(lam, "ridge lambda")


def _check_noise_sd(noise_sd: object) -> float:
    return _check_nonnegative(noise_sd, "noise_sd")


def _as_matrix(a: ArrayLike, name: str) -> FArray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (rows x columns), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _as_vector(a: ArrayLike, n: int, name: str) -> FArray:
    arr = np.asarray(a, dtype=np.float64)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of length {n}, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but the design has {n} rows")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _check_parties(parties: Sequence[ArrayLike]) -> list[FArray]:
    if isinstance(parties, np.ndarray) and parties.ndim == 2:
        raise ValueError("parties must be a sequence of 2-D arrays, one per party (got a single matrix)")
    try:
        K = len(parties)
    except TypeError:
        raise ValueError("parties must be a sequence of 2-D arrays, one per party") from None
    if K < 1:
        raise ValueError("K (the number of parties) must be >= 1; got an empty list of parties")
    return [_as_matrix(X, f"party {i} data") for i, X in enumerate(parties)]


# ----------------------------------------------------------------------------- random matrices
def random_orthogonal(b: int, rng: np.random.Generator) -> FArray:
    """Haar-distributed ``b x b`` orthogonal matrix (QR of a Gaussian matrix, signs fixed)."""
    b = _check_int(b, "matrix size", 1)
    Q, R = np.linalg.qr(rng.standard_normal((b, b)))
    d = np.sign(np.diag(R))
    d[d == 0] = 1.0
    return Q * d


def random_invertible(p: int, rng: np.random.Generator) -> FArray:
    """Random invertible ``p x p`` matrix ``U diag(s) V^T`` with ``U, V`` Haar, ``s ~ U[1, 2]``.

    Condition number at most 2, so products over ``K`` agencies stay well conditioned
    (the paper draws iid Gaussian entries; see the module docstring).
    """
    U = random_orthogonal(p, rng)
    V = random_orthogonal(p, rng)
    s = rng.uniform(*_SV_RANGE, size=p)
    return (U * s) @ V.T


def _commuting_basis(p: int, rng: np.random.Generator) -> FArray:
    """Basis ``B_0 = P diag(d) P^{-1}`` (Algorithm 3 input), ``cond(P) <= 2``, ``d in [1, 1.25]``."""
    U = random_orthogonal(p, rng)
    V = random_orthogonal(p, rng)
    s = rng.uniform(*_SV_RANGE, size=p)
    d = rng.uniform(*_EIG_RANGE, size=p)
    P = (U * s) @ V.T
    P_inv = (V / s) @ U.T  # exact inverse of U diag(s) V^T, no numerical inversion
    return (P * d) @ P_inv


def _polynomial(basis: FArray, coefs: FArray) -> FArray:
    """``sum_{j=1}^{s} coefs[j-1] basis^j`` (Algorithm 3, line 3)."""
    out = np.zeros_like(basis)
    power = np.eye(basis.shape[0])
    for c in coefs:
        power = power @ basis
        out += c * power
    return out


def _child_seeds(seed: int, count: int) -> list[int]:
    """``count`` explicit 63-bit integer seeds derived from ``seed``."""
    children = np.random.SeedSequence(seed).spawn(count)
    return [int(c.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1)) for c in children]


# ----------------------------------------------------------------------------- block masks
def kfold_edges(n: int, k: int) -> tuple[int, ...]:
    """Edges ``0 = e_0 < ... < e_k = n`` of ``k`` contiguous folds, sizes differing by at most 1."""
    n = _check_int(n, "n", 1)
    k = _check_int(k, "n_folds", 1)
    if k > n:
        raise ValueError(f"n_folds = {k} exceeds the number of rows ({n})")
    sizes = [n // k + (1 if f < n % k else 0) for f in range(k)]
    return tuple(int(e) for e in np.concatenate([[0], np.cumsum(sizes)]))


def block_layout(
    n: int, block_size: int, boundaries: Sequence[int] = ()
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Row blocks ``(starts, sizes)`` of a block-diagonal mask (Sec. V-A2a).

    Blocks never cross a boundary (fold edges, Sec. V-C). A segment of length ``L`` is cut
    into ``max(1, L // block_size)`` blocks of size ``block_size``; the last one takes the
    remainder (size in ``[b, 2b)``), or the whole segment when ``L < block_size``. So no
    block is smaller than ``min(L, block_size)``.
    """
    n = _check_int(n, "n", 1)
    b = _check_int(block_size, "block_size", 2)
    edges = sorted({0, n, *(int(e) for e in boundaries)})
    if edges[0] < 0 or edges[-1] > n:
        raise ValueError(f"block boundaries must lie in [0, {n}], got {sorted(boundaries)}")
    starts: list[int] = []
    sizes: list[int] = []
    for a, c in zip(edges[:-1], edges[1:]):
        L = c - a
        m = max(1, L // b)
        for j in range(m):
            starts.append(a + j * b)
            sizes.append(b if j < m - 1 else L - (m - 1) * b)
    return np.asarray(starts, dtype=np.int64), np.asarray(sizes, dtype=np.int64)


def _haar_blocks(seed: int, indices: Sequence[int], b: int) -> FArray:
    """Stack of Haar orthogonal ``b x b`` blocks; block ``j`` is drawn from ``SeedSequence(seed, spawn_key=(j,))``."""
    G = np.empty((len(indices), b, b))
    for t, j in enumerate(indices):
        G[t] = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(int(j),))).standard_normal((b, b))
    Q, R = np.linalg.qr(G)
    d = np.sign(np.diagonal(R, axis1=1, axis2=2))
    d[d == 0] = 1.0
    return Q * d[:, None, :]


@dataclass(frozen=True)
class BlockOrthogonalMask:
    """Block-diagonal orthogonal ``n x n`` mask ``A = diag(A~_1, ..., A~_m)`` (Sec. V-A2a).

    Block ``j`` is a Haar-random orthogonal matrix drawn from
    ``SeedSequence(seed, spawn_key=(j,))``; the layout is :func:`block_layout`
    ``(n, block_size, boundaries)``. Blocks are generated, used and freed in chunks of at
    most 2 MiB, so applying the mask needs ``O(size of M + chunk)`` memory and the dense
    ``n x n`` matrix is never formed.
    """

    n: int
    block_size: int
    seed: int
    boundaries: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _check_int(self.n, "n", 1)
        _check_int(self.block_size, "block_size", 2)
        _check_seed(self.seed)
        block_layout(self.n, self.block_size, self.boundaries)  # validates boundaries

    @property
    def layout(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """``(starts, sizes)`` of the diagonal blocks."""
        return block_layout(self.n, self.block_size, self.boundaries)

    def block(self, j: int) -> FArray:
        """The ``j``-th diagonal block (for inspection and tests)."""
        starts, sizes = self.layout
        if not 0 <= j < len(sizes):
            raise ValueError(f"block index {j} out of range [0, {len(sizes)})")
        return _haar_blocks(self.seed, [j], int(sizes[j]))[0]

    def _chunks(self) -> list[tuple[int, int, list[int]]]:
        """Runs ``(start_row, block_size, block_indices)`` of equal-size contiguous blocks."""
        starts, sizes = self.layout
        out: list[tuple[int, int, list[int]]] = []
        j = 0
        m = len(sizes)
        while j < m:
            b = int(sizes[j])
            cap = max(1, _CHUNK_ENTRIES // (b * b))
            idx = [j]
            while j + 1 < m and int(sizes[j + 1]) == b and len(idx) < cap:
                j += 1
                idx.append(j)
            out.append((int(starts[idx[0]]), b, idx))
            j += 1
        return out

    def apply(
        self, M: ArrayLike, powers: int | Sequence[int] = 1, *, transpose: bool = False, out: FArray | None = None
    ) -> FArray:
        """Return ``A^{q_1 + ... + q_K} M`` (``(A^T)^{...} M`` when ``transpose``), blockwise.

        ``powers`` are the exponents applied in turn (Algorithm 1: agency ``j`` applies
        ``A_j = A_0^{gamma_j}``; powers of one ``A_0`` commute, so the result is the
        product of the agencies' masks in any order). ``M`` is ``n x m`` or length ``n``;
        ``out`` may be ``M`` itself (in-place).
        """
        M = np.asarray(M, dtype=np.float64)
        if M.ndim not in (1, 2) or M.shape[0] != self.n:
            raise ValueError(f"mask is {self.n} x {self.n} but the matrix to mask has shape {M.shape}")
        q = [powers] if isinstance(powers, (int, np.integer)) else list(powers)
        total = sum(_check_int(v, "mask power", 0) for v in q)
        M2 = np.ascontiguousarray(M.reshape(self.n, -1))
        if out is None:
            out = np.empty_like(M)
        elif out.shape != M.shape:
            raise ValueError(f"out has shape {out.shape}, expected {M.shape}")
        out2 = out.reshape(self.n, -1)
        if total == 0:
            out2[...] = M2
            return out
        m = M2.shape[1]
        for start, b, idx in self._chunks():
            Q = _haar_blocks(self.seed, idx, b)
            if transpose:
                Q = Q.transpose(0, 2, 1)
            stop = start + len(idx) * b
            blk = M2[start:stop].reshape(len(idx), b, m)
            for _ in range(total):
                blk = Q @ blk
            out2[start:stop] = blk.reshape(-1, m)
        return out


# ----------------------------------------------------------------------------- containers
@dataclass
class MaskedProblem:
    """Everything the server receives (Fig. 1, "encrypted data").

    ``X``: masked design ``A (X + Delta) B`` (``n x p``). ``Z``: masked responses,
    ``n x 3``. For horizontal partitioning row block ``i`` (``party_rows[i]``) of ``Z`` is
    ``Z_i* = A_i [Y_i, Y_s1i, Y_s2i] C_i`` and belongs to columns ``3i:3i+3`` of the
    block-diagonal matrix of Sec. V-B1 (stored here without its zeros; see
    :meth:`z_blockdiag`). ``folds``: row slices of each CV fold; the mask blocks never
    cross them (Sec. V-C). ``BtB``: ``B^T B`` (released for ridge and PCA, Sec. V-B2 and
    V-D). ``ridge_rhs``: ``B^T W C`` (``p x q``), the pseudo-data term of our ridge
    verification (module docstring).
    """

    partition: Literal["vertical", "horizontal"]
    X: FArray
    Z: FArray
    party_rows: tuple[slice, ...]
    folds: tuple[tuple[slice, ...], ...]
    BtB: FArray | None
    ridge_rhs: FArray | None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def p(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_response_columns(self) -> int:
        """``q = 3`` (vertical) or ``3K`` (horizontal, block-diagonal responses)."""
        return 3 if self.partition == "vertical" else 3 * len(self.party_rows)

    def z_blockdiag(self) -> FArray:
        """Dense ``n x q`` masked response matrix (block-diagonal for horizontal partitioning)."""
        if self.partition == "vertical":
            return self.Z.copy()
        out = np.zeros((self.n, self.n_response_columns))
        for i, rows in enumerate(self.party_rows):
            out[rows, 3 * i : 3 * i + 3] = self.Z[rows]
        return out

    def _owner(self, rows: slice) -> int:
        for i, pr in enumerate(self.party_rows):
            if pr.start <= rows.start and rows.stop <= pr.stop:
                return i
        raise ValueError(f"row range {rows} spans several parties")

    def cross(self, row_slices: Sequence[slice] | None = None) -> FArray:
        """``X*^T Z*`` over the given row slices (each within one party), ``p x q``."""
        slices = self.party_rows if row_slices is None else tuple(row_slices)
        H = np.zeros((self.p, self.n_response_columns))
        for s in slices:
            i = 0 if self.partition == "vertical" else self._owner(s)
            H[:, 3 * i : 3 * i + 3] += self.X[s].T @ self.Z[s]
        return H

    def gram(self, row_slices: Sequence[slice] | None = None) -> FArray:
        """``X*^T X*`` over the given row slices (``p x p``)."""
        slices = self.party_rows if row_slices is None else tuple(row_slices)
        G = np.zeros((self.p, self.p))
        for s in slices:
            G += self.X[s].T @ self.X[s]
        return G


@dataclass
class VerticalKeys:
    """Secrets of the ``K`` agencies after Algorithm 1 (gathered only because this is a simulation).

    ``B[j][i]``: agency ``j``'s right mask for agency ``i``'s columns (``p_i x p_i``).
    ``gammas[i]``: exponent of ``A_i = A_0^{gamma_i}``. ``A0``: the public basis.
    ``C``: the response holder's ``3 x 3`` mask. ``noisy[i]``: agency ``i``'s private
    ``X_i + Delta_i``. ``responses``: the response holder's ``[Y, Y_s1, Y_s2]``.
    """

    column_slices: tuple[slice, ...]
    orders: tuple[tuple[int, ...], ...]
    gammas: tuple[int, ...]
    A0: BlockOrthogonalMask
    B: tuple[tuple[FArray, ...], ...]
    C: FArray
    response_party: int
    noisy: tuple[FArray, ...]
    responses: FArray
    seeds: dict[str, int | tuple[int, ...]]

    @property
    def K(self) -> int:
        return len(self.column_slices)


@dataclass
class HorizontalKeys:
    """Secrets of the ``K`` agencies after Algorithm 3 (gathered only because this is a simulation).

    ``A[j][i]``: agency ``j``'s block-orthogonal mask for agency ``i``'s rows.
    ``B[i]``, ``C[i]``: agency ``i``'s commuting masks (polynomials in ``B_0``, ``C_0``).
    ``noisy[i]`` / ``responses[i]``: agency ``i``'s private ``X_i + Delta_i`` and
    ``[Y_i, Y_s1i, Y_s2i]``. ``ridge_party``: the agency that adds the ridge pseudo-data.
    """

    row_slices: tuple[slice, ...]
    orders: tuple[tuple[int, ...], ...]
    A: tuple[tuple[BlockOrthogonalMask, ...], ...]
    B: tuple[FArray, ...]
    C: tuple[FArray, ...]
    ridge_party: int
    noisy: tuple[FArray, ...]
    responses: tuple[FArray, ...]
    seeds: dict[str, int | tuple[int, ...]]

    @property
    def K(self) -> int:
        return len(self.row_slices)


Keys = VerticalKeys | HorizontalKeys


class DecryptedFit(NamedTuple):
    """Decrypted estimates (Algorithm 4) and the pseudo-response check (Sec. V-B).

    ``beta``: coefficients for ``Y`` on ``X + Delta``; ``beta_s1``: for ``Y_s1`` (all ones
    when every agency and the server followed the protocol); ``beta_s2``: for ``Y_s2``.
    ``max_deviation = max |beta_s1 - 1|``; ``verified = max_deviation <= tol``.
    """

    beta: FArray
    beta_s1: FArray
    beta_s2: FArray
    max_deviation: float
    verified: bool
    lam: float


class MaskedCV(NamedTuple):
    """Server output of :func:`server_cv`.

    ``betas[f, l]``: masked estimate trained without fold ``f`` at ``lambdas[l]`` (``p x q``).
    ``resid_grams[f, l]`` (vertical only): ``R*^T R*`` of the masked held-out residuals
    ``R* = Z*_f - X*_f beta*`` (``3 x 3``); ``None`` for horizontal partitioning.
    """

    lambdas: FArray
    betas: FArray
    resid_grams: FArray | None


class CVResult(NamedTuple):
    """Decrypted k-fold cross-validation (Sec. V-C).

    ``cv_mse[l] = sum_f SSE_f(lambda_l) / n``; ``fold_sse[f, l]`` per fold.
    ``s1_max_residual``: largest relative held-out residual of the pseudo-response
    ``Y_s1`` (0 up to round-off when the protocol was followed): vertical,
    ``||r_s1,f|| / sqrt(||Y_s1,f||^2 + SSE_Y + SSE_s2)`` from the decrypted ``3 x 3`` Gram
    (round-off ~1e-8, the square root of machine precision); horizontal, the larger of
    ``max |beta_s1 - 1|`` and ``||r_s1,f|| / ||Y_s1,f||``. ``verified`` when it is ``<= tol``.
    """

    lambdas: FArray
    cv_mse: FArray
    fold_sse: FArray
    best_lambda: float
    s1_max_residual: float
    verified: bool


class MaskedPCA(NamedTuple):
    """Server output of :func:`server_pca`: eigenvalues (descending), ``V*`` and masked scores ``X* V*``."""

    eigenvalues: FArray
    V_star: FArray
    scores_star: FArray


class PCAResult(NamedTuple):
    """Decrypted PCA of ``X + Delta`` (uncentred, as the paper; centre/scale before masking).

    ``eigenvalues``: of ``(X + Delta)^T (X + Delta)``, descending. ``components``: unit
    principal directions ``V`` (``p x m``, each column's largest entry made positive).
    ``scores``: principal components ``(X + Delta) V`` (``n x m``).
    """

    eigenvalues: FArray
    components: FArray
    scores: FArray


# ----------------------------------------------------------------------------- pre-modeling
def _noise(X: FArray, noise_sd: float, rng: np.random.Generator) -> FArray:
    """First layer ``X + Delta``, ``Delta`` iid ``N(0, noise_sd^2)`` (no DP calibration; module docstring)."""
    if noise_sd == 0.0:
        return X
    return X + noise_sd * rng.standard_normal(X.shape)


def _rms(v: FArray) -> float:
    """Scale of the random pseudo-response ``Y_s2`` (that of ``Y_s1``; 1 if it is zero)."""
    r = float(np.sqrt(np.mean(v * v)))
    return r if r > 0 else 1.0


def _cyclic_orders(K: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple((i + t) % K for t in range(K)) for i in range(K))


def _vertical_btb(B: Any, C: FArray, orders: Any, widths: list[int], col: Any, p: int) -> tuple[FArray, FArray]:
    """``B^T B`` and ``B^T W C``'s ridge term, computed by the agencies' chains (Alg. 1)."""
    BtB = np.zeros((p, p))
    BtW = np.zeros(p)
    for i in range(len(widths)):
        G = B[i][i].T @ B[i][i]
        v = B[i][i].T @ np.ones(widths[i])
        for j in orders[i][1:]:
            G = B[j][i].T @ G @ B[j][i]
            v = B[j][i].T @ v
        BtB[col[i], col[i]] = 0.5 * (G + G.T)
        BtW[col[i]] = v
    return BtB, np.outer(BtW, C[1])  # B^T (1 e_2^T) C


def vertical_mask(
    parties: Sequence[ArrayLike],
    y: ArrayLike,
    *,
    seed: int,
    response_party: int = 0,
    noise_sd: float = 0.0,
    block_size: int = 100,
    n_folds: int = 1,
    gamma_max: int = 3,
    release_btb: bool = True,
) -> tuple[MaskedProblem, VerticalKeys]:
    """Pre-modeling phase for vertical partitioning (Algorithm 1, Sec. V-A2a).

    ``parties[i]`` is agency ``i``'s ``n x p_i`` block (include a column of ones for the
    intercept and normalize locally beforehand, Sec. V-A); ``y`` is held by agency
    ``response_party``. Every agency adds ``Delta_i`` (iid ``N(0, noise_sd^2)``; **no DP
    calibration, no epsilon** -- see the module docstring), draws ``gamma_i`` in
    ``[1, gamma_max]`` and right masks ``B_i1, ..., B_iK``. The released design is
    ``X* = A [X_1 + Delta_1, ..., X_K + Delta_K] B`` with ``A = A_0^{sum gamma_i}`` and ``B``
    block-diagonal, block ``i`` = ``B_ii B_{Q_i(2),i} ... B_{Q_i(K),i}``; the responses are
    ``Z* = A [Y, Y_s1, Y_s2] C`` with ``Y_s1`` the row sum of ``X + Delta``.

    ``A_0`` is block-diagonal orthogonal (``block_size``), with blocks aligned to
    ``n_folds`` contiguous folds for :func:`masked_cv`. The left masks commute with each
    other and with the right masks, so the simulation applies all of them in one blockwise
    pass; the product equals the sequential hand-offs of Algorithm 1, lines 4-19.

    Seeds: ``seed`` spawns the public seed of ``A_0`` and one private seed per agency
    (recorded in ``keys.seeds``). With ``release_btb`` the agencies also compute ``B^T B``
    and ``B^T W C`` by the same chains (needed for ridge and PCA).
    """
    Xs = _check_parties(parties)
    K = len(Xs)
    n = Xs[0].shape[0]
    for i, X in enumerate(Xs[1:], start=1):
        if X.shape[0] != n:
            raise ValueError(
                f"vertical partitioning needs the same subjects (rows) at every party: "
                f"party {i} has {X.shape[0]} rows, party 0 has {n}"
            )
    seed = _check_seed(seed)
    r = _check_int(response_party, "response_party", 0)
    if r >= K:
        raise ValueError(f"response_party must be in [0, {K - 1}], got {r}")
    yv = _as_vector(y, n, "y")
    noise_sd = _check_noise_sd(noise_sd)
    block_size = _check_int(block_size, "block_size", 2)
    edges = kfold_edges(n, n_folds)
    gamma_max = _check_int(gamma_max, "gamma_max", 1)

    public_seed, *party_seeds = _child_seeds(seed, K + 1)
    A0 = BlockOrthogonalMask(n, block_size, public_seed, tuple(edges[1:-1]))
    widths = [X.shape[1] for X in Xs]
    offsets = np.concatenate([[0], np.cumsum(widths)]).astype(int)
    col = tuple(slice(int(offsets[i]), int(offsets[i + 1])) for i in range(K))
    p = int(offsets[-1])

    rngs = [np.random.default_rng(s) for s in party_seeds]
    gammas = tuple(int(rng.integers(1, gamma_max + 1)) for rng in rngs)  # Alg. 1 line 2
    noisy = tuple(_noise(X, noise_sd, rngs[i]) for i, X in enumerate(Xs))
    B = tuple(tuple(random_invertible(w, rngs[j]) for w in widths) for j in range(K))
    Ys1 = np.zeros(n)
    for Xn in noisy:  # each agency sums its columns
        Ys1 += Xn.sum(axis=1)
    Ys2 = _rms(Ys1) * rngs[r].standard_normal(n)
    C = random_invertible(3, rngs[r])
    responses = np.column_stack([yv, Ys1, Ys2])
    orders = _cyclic_orders(K)

    W = np.empty((n, p + 3))
    for i in range(K):  # Alg. 1 lines 6-8 (right factors)
        Bi = B[i][i]
        for j in orders[i][1:]:
            Bi = Bi @ B[j][i]  # (X B_ii) B_Q2,i ... == X (B_ii B_Q2,i ...): one n x p_i pass
        W[:, col[i]] = noisy[i] @ Bi
    W[:, p:] = responses @ C  # Z = [Y, Y_s1, Y_s2] C
    A0.apply(W, [gammas[j] for j in orders[r]], out=W)  # left factors, one pass

    BtB, ridge_rhs = _vertical_btb(B, C, orders, widths, col, p) if release_btb else (None, None)

    problem = MaskedProblem(
        "vertical",
        W[:, :p],
        W[:, p:],
        (slice(0, n),),
        tuple((slice(edges[f], edges[f + 1]),) for f in range(len(edges) - 1)),
        BtB,
        ridge_rhs,
    )
    seeds: dict[str, int | tuple[int, ...]] = {"seed": seed, "public": public_seed, "parties": tuple(party_seeds)}
    return problem, VerticalKeys(col, orders, gammas, A0, B, C, r, noisy, responses, seeds)


def _check_horizontal(parties: Sequence[ArrayLike], ys: Sequence[ArrayLike]) -> tuple[list[FArray], list[FArray]]:
    """The agencies' blocks (same columns everywhere) and one response vector per agency."""
    Xs = _check_parties(parties)
    K, p = len(Xs), Xs[0].shape[1]
    for i, X in enumerate(Xs[1:], start=1):
        if X.shape[1] != p:
            raise ValueError(
                f"horizontal partitioning needs the same attributes (columns) at every party: "
                f"party {i} has {X.shape[1]} columns, party 0 has {p}"
            )
    if isinstance(ys, np.ndarray) and ys.ndim == 1 and K > 1:
        raise ValueError("ys must be a sequence of response vectors, one per party")
    if len(ys) != K:
        raise ValueError(f"ys has {len(ys)} response vectors but there are {K} parties")
    return Xs, [_as_vector(y, X.shape[0], f"ys[{i}]") for i, (X, y) in enumerate(zip(Xs, ys))]


def _horizontal_btb(B: Any, C: Any, rp: int, p: int) -> tuple[FArray, FArray]:
    """``B^T B`` and the ridge party's ``B^T 1 e_2^T C_rp`` block (Alg. 3)."""
    G = np.eye(p)
    v = np.ones(p)
    for j in range(len(B)):  # B = B_1 ... B_K (commuting)
        G = B[j].T @ G @ B[j]
        v = B[j].T @ v
    ridge_rhs = np.zeros((p, 3 * len(B)))
    ridge_rhs[:, 3 * rp : 3 * rp + 3] = np.outer(v, C[rp][1])
    return 0.5 * (G + G.T), ridge_rhs


def horizontal_mask(
    parties: Sequence[ArrayLike],
    ys: Sequence[ArrayLike],
    *,
    seed: int,
    noise_sd: float = 0.0,
    block_size: int = 100,
    n_folds: int = 1,
    ridge_party: int = 0,
    release_btb: bool = True,
) -> tuple[MaskedProblem, HorizontalKeys]:
    """Pre-modeling phase for horizontal partitioning (Algorithm 3, Appendix A; Sec. V-A2b).

    ``parties[i]`` is agency ``i``'s ``n_i x p`` block (each includes its column of ones;
    normalization by secure summation happens beforehand, Sec. V-A), ``ys[i]`` its
    responses. Agency ``i`` adds ``Delta_i`` (iid ``N(0, noise_sd^2)``; **no DP
    calibration, no epsilon** -- module docstring), draws orthogonal block masks
    ``A_i1, ..., A_iK`` (one per agency's rows, blocks aligned to that agency's
    ``n_folds`` contiguous folds), a degree ``s_i <= 3`` and coefficients ``b_ij ~ U(0.5, 1.5)``,
    and forms ``B_i = sum_j b_ij B_0^j``, ``C_i = sum_j b_ij C_0^j`` from the public bases.
    The released rows are ``X_i* = A_i (X_i + Delta_i) B`` and ``Z_i* = A_i [Y_i, Y_s1i, Y_s2i] C_i``
    with ``A_i = A_{Q_i(K),i} ... A_{ii}`` and ``B = B_1 ... B_K`` (commuting);
    the server stacks ``Z_i*`` block-diagonally (Sec. V-B1).

    Seeds: ``seed`` spawns the public seed of ``(B_0, C_0)`` and one private seed per agency.
    """
    Xs, yv = _check_horizontal(parties, ys)
    K, p = len(Xs), Xs[0].shape[1]
    seed = _check_seed(seed)
    noise_sd = _check_noise_sd(noise_sd)
    block_size = _check_int(block_size, "block_size", 2)
    n_folds = _check_int(n_folds, "n_folds", 1)
    rp = _check_int(ridge_party, "ridge_party", 0)
    if rp >= K:
        raise ValueError(f"ridge_party must be in [0, {K - 1}], got {rp}")
    for i, X in enumerate(Xs):
        if X.shape[0] < n_folds:
            raise ValueError(f"n_folds = {n_folds} exceeds the {X.shape[0]} rows of party {i}")

    public_seed, *party_seeds = _child_seeds(seed, K + 1)
    pub = np.random.default_rng(public_seed)
    B0 = _commuting_basis(p, pub)
    C0 = _commuting_basis(3, pub)
    rngs = [np.random.default_rng(s) for s in party_seeds]
    sizes = [X.shape[0] for X in Xs]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    rows = tuple(slice(int(offs[i]), int(offs[i + 1])) for i in range(K))
    local_edges = [kfold_edges(m, n_folds) for m in sizes]

    degrees = [int(rng.integers(1, _MAX_DEGREE + 1)) for rng in rngs]
    coefs = [rng.uniform(0.5, 1.5, size=s) for rng, s in zip(rngs, degrees)]
    B = tuple(_polynomial(B0, c) for c in coefs)  # Alg. 3 line 3
    C = tuple(_polynomial(C0, c) for c in coefs)
    mask_seeds = [[int(s) for s in rngs[j].integers(0, 2**62, size=K)] for j in range(K)]
    A = tuple(
        tuple(
            BlockOrthogonalMask(sizes[i], block_size, mask_seeds[j][i], tuple(local_edges[i][1:-1])) for i in range(K)
        )
        for j in range(K)
    )
    noisy = tuple(_noise(X, noise_sd, rngs[i]) for i, X in enumerate(Xs))
    rowsums = [Xn.sum(axis=1) for Xn in noisy]
    responses = tuple(
        np.column_stack([yv[i], rowsums[i], _rms(rowsums[i]) * rngs[i].standard_normal(sizes[i])]) for i in range(K)
    )
    orders = _cyclic_orders(K)

    n = int(offs[-1])
    W = np.empty((n, p + 3))
    for i in range(K):  # Alg. 3 lines 4-12
        Wi = W[rows[i]]
        Bi = B[i]
        for j in orders[i][1:]:
            Bi = Bi @ B[j]  # B_i B_Q2 ... B_QK = B_1 ... B_K (commuting)
        Wi[:, :p] = noisy[i] @ Bi
        Wi[:, p:] = responses[i] @ C[i]
        for j in orders[i]:
            A[j][i].apply(Wi, 1, out=Wi)

    BtB, ridge_rhs = _horizontal_btb(B, C, rp, p) if release_btb else (None, None)

    folds = tuple(
        tuple(slice(int(offs[i]) + local_edges[i][f], int(offs[i]) + local_edges[i][f + 1]) for i in range(K))
        for f in range(n_folds)
    )
    problem = MaskedProblem("horizontal", W[:, :p], W[:, p:], rows, folds, BtB, ridge_rhs)
    keys = HorizontalKeys(
        rows,
        orders,
        A,
        B,
        C,
        rp,
        noisy,
        responses,
        {"seed": seed, "public": public_seed, "parties": tuple(party_seeds)},
    )
    return problem, keys


# ----------------------------------------------------------------------------- modeling (server)
def _spd_factor(M: FArray, what: str) -> tuple[FArray, bool]:
    try:
        return cho_factor(M, lower=True, check_finite=False)
    except LinAlgError:
        raise ValueError(
            f"{what} is not positive definite: OLS needs n > p and full column rank; use a ridge penalty lam > 0"
        ) from None


def _solve_masked(problem: MaskedProblem, G: FArray, H: FArray, lam: float) -> FArray:
    if lam > 0:
        if problem.BtB is None or problem.ridge_rhs is None:
            raise ValueError("ridge needs B^T B and B^T W C: mask with release_btb=True")
        G = G + lam * problem.BtB
        H = H + lam * problem.ridge_rhs
    return cho_solve(_spd_factor(G, "masked Gram matrix X*^T X* + lam B^T B"), H, check_finite=False)


def server_solve(problem: MaskedProblem, lam: float = 0.0) -> FArray:
    """Modeling phase (Sec. V-B): the server's masked estimate ``beta*`` (``p x q``).

    OLS: ``(X*^T X*)^{-1} X*^T Z*``. Ridge (erratum: penalty ``lam B^T B``, not
    ``lam (B^T B)^{-1}``): ``(X*^T X* + lam B^T B)^{-1} (X*^T Z* + lam B^T W C)``; the second
    term is our pseudo-data for the verification column. Cholesky solve, no inverse.
    """
    lam = _check_lambda(lam)
    return _solve_masked(problem, problem.gram(), problem.cross(), lam)


def ridge_solve(X: ArrayLike, Y: ArrayLike, lam: float = 0.0) -> FArray:
    """Plain (unmasked) ``(X^T X + lam I)^{-1} X^T Y`` by Cholesky, for comparisons."""
    X = _as_matrix(X, "X")
    Yarr = np.asarray(Y, dtype=np.float64)
    if Yarr.shape[0] != X.shape[0]:
        raise ValueError(f"Y has {Yarr.shape[0]} rows but X has {X.shape[0]}")
    lam = _check_lambda(lam)
    G = X.T @ X + lam * np.eye(X.shape[1])
    return cho_solve(_spd_factor(G, "X^T X + lam I"), X.T @ Yarr, check_finite=False)


# ----------------------------------------------------------------------------- post-modeling
def _right_solve(M: FArray, C: FArray) -> FArray:
    """``M C^{-1}`` via a solve."""
    return np.asarray(np.linalg.solve(C.T, M.T).T, dtype=np.float64)


def _unmask_right(V_star: FArray, keys: Keys, *, with_C: bool) -> FArray:
    """Algorithm 4: remove ``B`` (and ``C``) from a masked estimate; ``p x 3`` (or ``p x m`` for PCA)."""
    if isinstance(keys, VerticalKeys):
        out = np.empty_like(V_star)
        for i, cols in enumerate(keys.column_slices):
            b = V_star[cols]
            for j in reversed(keys.orders[i]):  # lines 3-10: Q_i(K), ..., Q_i(1)
                b = keys.B[j][i] @ b
                if with_C and j == keys.response_party:
                    b = _right_solve(b, keys.C)
            out[cols] = b
        return out
    total = np.zeros((V_star.shape[0], 3 if with_C else V_star.shape[1]))
    if not with_C:
        b = V_star
        for j in range(keys.K):
            b = keys.B[j] @ b
        return b
    for i in range(keys.K):  # lines 12-20
        b = _right_solve(keys.B[i] @ V_star[:, 3 * i : 3 * i + 3], keys.C[i])
        for j in keys.orders[i][1:]:
            b = keys.B[j] @ b
        total += b
    return total


def decrypt(beta_star: ArrayLike, keys: Keys, *, lam: float = 0.0, tol: float = 1e-6) -> DecryptedFit:
    """Post-modeling phase (Algorithm 4) and the pseudo-response verification (Sec. V-B).

    Vertical: ``beta_i = B_ii B_{Q_i(2),i} ... B_{Q_i(K),i} beta*_i C^{-1}`` for every agency's
    rows. Horizontal: ``beta = sum_i B beta*_i C_i^{-1}`` over the ``3``-column blocks of the
    ``p x 3K`` masked estimate. ``beta_s1`` must be the all-ones vector (OLS, and ridge with
    our augmented pseudo-data); any agency or server deviation shows up as
    ``max |beta_s1 - 1| > tol``. The check proves correct computation, not privacy.
    """
    B = np.asarray(beta_star, dtype=np.float64)
    K = keys.K
    p = keys.column_slices[-1].stop if isinstance(keys, VerticalKeys) else keys.B[0].shape[0]
    q = 3 if isinstance(keys, VerticalKeys) else 3 * K
    if B.shape != (p, q):
        raise ValueError(f"masked estimate has shape {B.shape}, expected ({p}, {q})")
    if not np.isfinite(B).all():
        raise ValueError("masked estimate contains NaN or infinite values")
    full = _unmask_right(B, keys, with_C=True)
    dev = float(np.max(np.abs(full[:, 1] - 1.0)))
    return DecryptedFit(
        full[:, 0].copy(), full[:, 1].copy(), full[:, 2].copy(), dev, bool(dev <= tol), _check_lambda(lam)
    )


def masked_fit(problem: MaskedProblem, keys: Keys, lam: float = 0.0, *, tol: float = 1e-6) -> DecryptedFit:
    """Masked OLS (``lam = 0``) or ridge: :func:`server_solve` then :func:`decrypt`."""
    return decrypt(server_solve(problem, lam), keys, lam=lam, tol=tol)


# ----------------------------------------------------------------------------- cross-validation
def _check_lambdas(lambdas: ArrayLike) -> FArray:
    lam = np.atleast_1d(np.asarray(lambdas, dtype=np.float64))
    if lam.ndim != 1 or lam.size == 0:
        raise ValueError("lambdas must be a non-empty 1-D sequence")
    for v in lam:
        _check_lambda(v)
    return lam


def server_cv(problem: MaskedProblem, lambdas: ArrayLike) -> MaskedCV:
    """Server side of k-fold CV (Sec. V-C) on the already masked data, no re-masking.

    ``A`` is block-diagonal with blocks inside the folds, so ``X*_f = A_f (X_f + Delta_f) B``:
    the server forms per-fold ``X*_f^T X*_f`` and ``X*_f^T Z*_f``, fits on all folds but
    ``f`` for every ``lambda`` (ridge as in :func:`server_solve`), and, for vertical
    partitioning, returns the ``3 x 3`` Gram ``R*^T R*`` of the masked held-out residuals
    ``R* = Z*_f - X*_f beta*_{-f} = A_f (Y_f - X_f beta_{-f}) C`` (orthogonal ``A_f`` drops out).
    """
    lam = _check_lambdas(lambdas)
    k = len(problem.folds)
    if k < 2:
        raise ValueError("cross-validation needs n_folds >= 2 at masking time")
    Gf = [problem.gram(f) for f in problem.folds]
    Hf = [problem.cross(f) for f in problem.folds]
    G = sum(Gf)
    H = sum(Hf)
    q = problem.n_response_columns
    betas = np.empty((k, lam.size, problem.p, q))
    grams = np.empty((k, lam.size, 3, 3)) if problem.partition == "vertical" else None
    for f in range(k):
        for li, lv in enumerate(lam):
            b = _solve_masked(problem, G - Gf[f], H - Hf[f], float(lv))
            betas[f, li] = b
            if grams is not None:
                (s,) = problem.folds[f]
                R = problem.Z[s] - problem.X[s] @ b
                grams[f, li] = R.T @ R
    return MaskedCV(lam, betas, grams)


def masked_cv(problem: MaskedProblem, keys: Keys, lambdas: ArrayLike, *, tol: float = 1e-6) -> CVResult:
    """k-fold CV of ridge/OLS on masked data (Sec. V-C); equals plain CV on ``X + Delta``.

    Vertical: the response holder decrypts each ``3 x 3`` residual Gram,
    ``C^{-T} (R*^T R*) C^{-1} = R^T R``, whose ``[0, 0]`` entry is the held-out SSE of
    ``Y`` and ``[1, 1]`` that of ``Y_s1`` (zero if the protocol was followed). Horizontal:
    each training-fold estimate is decrypted by Algorithm 4 and every agency computes the
    held-out SSE on its own rows of the fold (a secure sum of ``K`` scalars). Folds are
    contiguous row ranges (shuffle rows first if their order is informative).
    """
    mcv = server_cv(problem, lambdas)
    lam = mcv.lambdas
    k = len(problem.folds)
    sse = np.zeros((k, lam.size))
    s1 = 0.0
    if isinstance(keys, VerticalKeys):
        if problem.partition != "vertical":
            raise ValueError("vertical keys given for a horizontally masked problem")
        for f in range(k):
            (s,) = problem.folds[f]
            ref = float(keys.responses[s, 1] @ keys.responses[s, 1])
            for li in range(lam.size):
                Mg = mcv.resid_grams[f, li]  # type: ignore[index]
                S = _right_solve(np.linalg.solve(keys.C.T, Mg), keys.C)
                sse[f, li] = S[0, 0]
                # relative to all residual columns: the 3 x 3 decryption has round-off ~ eps * trace
                scale = ref + abs(S[0, 0]) + abs(S[2, 2])
                s1 = max(s1, math.sqrt(max(S[1, 1], 0.0) / max(scale, np.finfo(float).tiny)))
    else:
        if problem.partition != "horizontal":
            raise ValueError("horizontal keys given for a vertically masked problem")
        for f in range(k):
            for li in range(lam.size):
                full = _unmask_right(mcv.betas[f, li], keys, with_C=True)
                s1 = max(s1, float(np.max(np.abs(full[:, 1] - 1.0))))
                r2 = 0.0
                r1 = 0.0
                ref = 0.0
                for i, s in enumerate(problem.folds[f]):  # agency i, its rows of fold f
                    loc = slice(s.start - keys.row_slices[i].start, s.stop - keys.row_slices[i].start)
                    R = keys.responses[i][loc, :2] - keys.noisy[i][loc] @ full[:, :2]
                    r2 += float(R[:, 0] @ R[:, 0])
                    r1 += float(R[:, 1] @ R[:, 1])
                    ref += float(keys.responses[i][loc, 1] @ keys.responses[i][loc, 1])
                sse[f, li] = r2
                s1 = max(s1, math.sqrt(r1 / max(ref, np.finfo(float).tiny)))
    cv_mse = sse.sum(axis=0) / problem.n
    return CVResult(lam, cv_mse, sse, float(lam[int(np.argmin(cv_mse))]), s1, bool(s1 <= tol))


# ----------------------------------------------------------------------------- PCA
def server_pca(problem: MaskedProblem, n_components: int | None = None) -> MaskedPCA:
    """Privacy-preserving PCA on the server (Sec. V-D, Algorithm 2 corrected).

    Solves the generalized symmetric problem ``X*^T X* v = mu B^T B v``
    (``scipy.linalg.eigh(a, b)``). With ``X* = A X B``: ``B^T X^T X B v = mu B^T B v``, i.e.
    ``X^T X (B v) = mu (B v)``, so ``mu`` are the eigenvalues of ``X^T X`` and, with
    ``v^T B^T B v = 1``, ``B v`` its unit eigenvectors. Masked scores
    ``X* V* = A X V``. (A plain eigendecomposition of ``X*^T X*`` is wrong: congruence by a
    non-orthogonal ``B`` changes the eigenvalues.)
    """
    if problem.BtB is None:
        raise ValueError("PCA needs B^T B: mask with release_btb=True")
    p = problem.p
    m = p if n_components is None else _check_int(n_components, "n_components", 1)
    if m > p:
        raise ValueError(f"n_components = {m} exceeds the number of attributes p = {p}")
    w, V = eigh(problem.gram(), problem.BtB, subset_by_index=[p - m, p - 1])
    w, V = w[::-1].copy(), V[:, ::-1].copy()
    return MaskedPCA(w, V, problem.X @ V)


def masked_pca(problem: MaskedProblem, keys: Keys, n_components: int | None = None) -> PCAResult:
    """PCA of ``X + Delta`` from masked data: :func:`server_pca`, then the agencies remove
    ``B`` from ``V*`` (``V = B V*``, Algorithm 4 chain without ``C``) and ``A`` from the
    scores (``A^T`` applied by each agency in reverse order, Sec. V-D).
    """
    mp = server_pca(problem, n_components)
    V = _unmask_right(mp.V_star, keys, with_C=False)
    if isinstance(keys, VerticalKeys):
        scores = keys.A0.apply(mp.scores_star, list(keys.gammas), transpose=True)
    else:
        scores = np.empty_like(mp.scores_star)
        for i, rows in enumerate(keys.row_slices):
            Si = mp.scores_star[rows].copy()
            for j in reversed(keys.orders[i]):
                keys.A[j][i].apply(Si, 1, transpose=True, out=Si)
            scores[rows] = Si
    idx = np.argmax(np.abs(V), axis=0)
    sign = np.sign(V[idx, np.arange(V.shape[1])])
    sign[sign == 0] = 1.0
    return PCAResult(mp.eigenvalues, V * sign, scores * sign)
