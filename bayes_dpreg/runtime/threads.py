"""Batched LAPACK calls that cannot deadlock XLA's CPU thread pool: :func:`lapack_guard`.

jaxlib 0.10.0 to 0.10.2 (the newest PyPI serves) split a batched LAPACK call (Cholesky,
triangular solve, ``eigh``, LU, QR, SVD, ...) over XLA's CPU intra-op thread pool once its
work reaches ``SPLIT_FLOPS`` (``ParallelBatchMap`` in ``jaxlib/cpu/lapack_kernels.cc``), and
the pool thread that made the call blocks until the pieces are done. XLA's thunk executor
runs independent operations of one program concurrently on the same pool, so when as many
such calls run at once as the pool has threads, every thread waits for work that no thread is
left to do, and the program hangs, idle, for ever. On 2 cores a ``fit(method="normalx")`` at
d = 5, J = 5 hung in 5 of 5 fresh processes (two Cholesky calls of 20,000 matrices, in the
log density of its draws); ``compare(model="normalx")`` in 12 of 18. Upstream no longer splits
in open-source builds after jaxlib 0.10.2 (jax commit 859992407d).

The kernel runs a call inline, on the calling thread, when its batch of ``B`` matrices of
``cost`` flops each (jaxlib's own estimate, :func:`lapack_cost`) satisfies
``B * cost < SPLIT_FLOPS`` or ``B <= ceil(SPLIT_FLOPS / cost)``. Under :func:`lapack_guard`,
the CPU lowering of every LAPACK primitive lowers a larger batch as a loop (``lax.map``) over
chunks of ``ceil(SPLIT_FLOPS / cost)`` matrices, each an inline call of the same kernel on the
same matrices: the results are bit-identical, the work the same, and no call can block a pool
thread. The rewrite happens when a program is lowered, after ``vmap`` and ``grad``, so it
reaches every batched call, NumPyro's included; a batch below the threshold is lowered as
before. The guard is a context: it is in force while the package's public functions run
(:func:`bayes_dpreg.runtime.precision.x64`, which they all enter, and the chain driver) and restores
JAX's own rules on return, so ``import bayes_dpreg`` changes nothing and code of the caller's
outside those calls keeps jaxlib's parallel kernels.

:func:`configure_threads` (one intra-op thread, ``NPROC=1``) is no longer needed to avoid the
hang; it remains for processes that want XLA single-threaded (many worker processes).

:func:`single_threaded_blas`: jaxlib's CPU LAPACK kernels call the OpenBLAS that SciPy bundles,
whose own thread pool (one thread a core) splits a call once its work is large enough (in
``normalx-clt`` at d = 50, not at d = 30; in ``normalx-nuts`` at d = 10, J = 20). Where the chain driver
runs one chain a core, each chain's calls then wait on OpenBLAS threads busy with the other chain's: at
d = 50, J = 5, two ``normalx-clt`` chains took 2.0-2.3 ms a leapfrog step together against 0.5-0.65 ms
with OpenBLAS on one thread (``docs/samplers.md``, *OpenBLAS's threads and the chains'*). The chain
driver limits OpenBLAS (and any other BLAS that threadpoolctl finds) to one thread while chains run and
restores it after.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = [
    "configure_threads",
    "single_threaded_blas",
    "lapack_guard",
    "lapack_guarded",
    "callers_context",
    "lapack_cost",
    "safe_batch",
    "split_lapack_calls",
    "SPLIT_FLOPS",
    "LAPACK_PRIMITIVES",
]

ENV = "NPROC"
SPLIT_FLOPS = 200_000  # jaxlib's kMinWorkPerTask: a batch with less work runs inline

# primitive name -> (trailing core dimensions of each operand, flops of one problem from the core
# shapes, as jaxlib 0.10's kernels estimate it for real types; complex types count 3 times)
_M = Sequence[tuple[int, ...]]


def _trsm(s: _M, left_side: bool = False, **_: Any) -> int:
    m, n = s[1][-2:]
    return m * n * (m if left_side else n)


def _mnk(c: int) -> Callable[..., int]:
    return lambda s, **_: c * s[0][-2] * s[0][-1] * min(s[0][-2:])


def _cube(c: float) -> Callable[..., int]:
    return lambda s, **_: int(c * max(s[0][-2:]) ** 3)


def _qr(s: _M, **_: Any) -> int:
    m, n = s[0][-2:]
    k = min(m, n)
    return 2 * m * n * k - (2 * k**3) // 3


_CORE: dict[str, tuple[tuple[int, ...], Callable[..., int]]] = {
    "cholesky": ((2,), lambda s, **_: s[0][-1] ** 3 // 3),
    "triangular_solve": ((2, 2), _trsm),
    "eigh": ((2,), _cube(5)),
    "lu": ((2,), _mnk(1)),
    "geqrf": ((2,), _qr),
    "geqp3": ((2, 1), _qr),
    "householder_product": ((2, 1), _mnk(4)),  # an upper bound of 4 m n k - ...
    "ormqr": ((2, 1, 2), lambda s, **_: 4 * max(s[0][-2:]) * s[2][-2] * s[2][-1]),
    "svd": ((2,), _mnk(10)),
    "eig": ((2,), _cube(10)),
    "schur": ((2,), _cube(5)),
    "hessenberg": ((2,), _cube(2)),
    "tridiagonal": ((2,), _cube(4 / 3)),
    "tridiagonal_solve": ((1, 1, 1, 2), lambda s, **_: 5 * s[3][-2] * s[3][-1]),
}
LAPACK_PRIMITIVES = tuple(_CORE)


def lapack_cost(name: str, shapes: Sequence[tuple[int, ...]], complex_: bool = False, **params: Any) -> int:
    """Flops of one problem of the LAPACK primitive ``name`` with operand ``shapes`` (jaxlib's estimate)."""
    cost = _CORE[name][1](shapes, **params)
    return cost * 3 if complex_ else cost


def safe_batch(cost: int) -> int:
    """The largest batch of problems of ``cost`` flops that jaxlib runs inline, whatever its pool."""
    return max(1, math.ceil(SPLIT_FLOPS / cost)) if cost > 0 else 2**62


def _batch(name: str, avals: Sequence[Any]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    cores = _CORE[name][0]
    batch = tuple(avals[0].shape[: avals[0].ndim - cores[0]])
    return batch, [tuple(a.shape[a.ndim - c :]) for a, c in zip(avals, cores)]


def _chunked_rule(prim: Any, original: Callable) -> Callable:
    """A lowering of ``prim`` that lowers batches below the split as ``original`` and larger
    ones as ``lax.map`` over chunks that are (their inner calls lower through this rule again)."""
    import jax.numpy as jnp
    from jax import lax
    from jax.interpreters import mlir

    name = prim.name

    def rule(ctx: Any, *args: Any, **params: Any) -> Any:
        batch, cores = _batch(name, ctx.avals_in)
        size = math.prod(batch)
        complex_ = any(jnp.issubdtype(a.dtype, jnp.complexfloating) for a in ctx.avals_in)
        cost = lapack_cost(name, cores, complex_, **params)
        chunk = safe_batch(cost)
        if size * cost < SPLIT_FLOPS or size <= chunk:
            return original(ctx, *args, **params)

        def chunked(*ops: Any) -> Any:
            flat = [jnp.reshape(o, (size,) + c) for o, c in zip(ops, cores)]
            one = lambda xs: prim.bind(*xs, **params)
            out = lax.map(one, flat, batch_size=chunk)
            outs = out if prim.multiple_results else [out]
            res = [jnp.reshape(o, batch + o.shape[1:]) for o in outs]
            return res if prim.multiple_results else res[0]

        return mlir.lower_fun(chunked, multiple_results=prim.multiple_results)(ctx, *args)

    return rule


_TARGETS = {
    "potrf": "cholesky",
    "trsm": "triangular_solve",
    "syevd": "eigh",
    "heevd": "eigh",
    "getrf": "lu",
    "geqrf": "geqrf",
    "geqp3": "geqp3",
    "orgqr": "householder_product",
    "ungqr": "householder_product",
    "ormqr": "ormqr",
    "unmqr": "ormqr",
    "gesdd": "svd",
    "gesvd": "svd",
    "geev": "eig",
    "gees": "schur",
    "gehrd": "hessenberg",
    "sytrd": "tridiagonal",
    "hetrd": "tridiagonal",
    "gtsv": "tridiagonal_solve",
}
_CALL = re.compile(r'(?:custom_call_target="|custom_call @)lapack_([sdcz])([a-z0-9]+?)_ffi')
_HLO_SHAPES = re.compile(r"operand_layout_constraints=\{(.*?)\}, (?:output_to|api_version)")
_HLO_SHAPE = re.compile(r"[a-z0-9]+\[([0-9,]*)\]")
_MLIR_SHAPES = re.compile(r"\} : \((.*?)\) ->")
_MLIR_SHAPE = re.compile(r"tensor<((?:[0-9]+x)*)")


def _operand_shapes(line: str) -> list[tuple[int, ...]] | None:
    hlo, mlir = _HLO_SHAPES.search(line), _MLIR_SHAPES.search(line)
    if hlo is not None:
        return [tuple(int(x) for x in m.group(1).split(",") if x) for m in _HLO_SHAPE.finditer(hlo.group(1))]
    if mlir is not None:
        return [tuple(int(x) for x in m.group(1).split("x") if x) for m in _MLIR_SHAPE.finditer(mlir.group(1))]
    return None


def split_lapack_calls(program: str) -> list[str]:
    """The LAPACK calls in the text of an XLA CPU program whose batch jaxlib may split over its
    thread pool: empty for a program lowered under :func:`lapack_guard`. ``program``: StableHLO
    (``jax.jit(f).lower(...).as_text()``, ``JAX_DUMP_IR_TO``) or compiled HLO
    (``compile().as_text()``, ``--xla_dump_hlo_as_text``)."""
    found = []
    for line in program.splitlines():
        call = _CALL.search(line)
        dims = _operand_shapes(line) if call is not None else None
        if call is None or call.group(2) not in _TARGETS or not dims:
            continue
        name = _TARGETS[call.group(2)]
        batch = math.prod(dims[0][: len(dims[0]) - _CORE[name][0][0]])
        cost = lapack_cost(name, dims, call.group(1) in "cz", left_side="side = 76" in line)
        if batch * cost >= SPLIT_FLOPS and batch > safe_batch(cost):
            found.append(f"lapack_{call.group(1)}{call.group(2)}: {batch} problems of {cost} flops")
    return found


_lock = threading.RLock()
_depth = 0
_saved: dict[Any, Any] = {}


def _cpu_entries() -> dict[Any, Any]:
    from jax._src.interpreters import mlir as _mlir

    return _mlir._platform_specific_lowerings["cpu"]


def _install() -> None:
    try:
        from jax._src.interpreters.mlir import LoweringRuleEntry

        table = _cpu_entries()
        entries = [(p, e) for p, e in table.items() if p.name in _CORE]
        rules = [(p, LoweringRuleEntry(_chunked_rule(p, e.rule), e.inline)) for p, e in entries]
    except (ImportError, AttributeError, KeyError, TypeError) as exc:  # JAX's lowering tables moved
        warnings.warn(
            f"bayes_dpreg cannot keep batched LAPACK calls inline with this JAX ({exc}); if it hangs on few "
            "cores, call bayes_dpreg.configure_threads() at the start of the process",
            RuntimeWarning,
            stacklevel=4,
        )
        return
    for (prim, entry), (_, rule) in zip(entries, rules):
        _saved[prim] = entry
        table[prim] = rule


def _uninstall() -> None:
    table = _cpu_entries()
    for prim, entry in _saved.items():
        table[prim] = entry
    _saved.clear()


@contextlib.contextmanager
def lapack_guard() -> Iterator[None]:
    """Within this context, programs lowered for the CPU split no batched LAPACK call over
    XLA's thread pool (module docstring); re-entrant, restores JAX's rules on exit."""
    global _depth
    with _lock:
        if _depth == 0:
            _install()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _uninstall()


F = TypeVar("F", bound=Callable[..., Any])


def lapack_guarded(fn: F) -> F:
    """Run ``fn`` under :func:`lapack_guard` (for the entry points that compile programs)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with lapack_guard():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def callers_context() -> Callable[[], contextlib.AbstractContextManager]:
    """A context for worker threads that compute for the calling thread: the caller's 64-bit mode (thread-local
    under ``jax.enable_x64``, which ``fit`` enters) and :func:`lapack_guard`. Call it on the caller's thread; enter
    what it returns on each worker."""
    import jax

    x64 = bool(jax.config.read("jax_enable_x64"))

    @contextlib.contextmanager
    def context() -> Iterator[None]:
        with jax.enable_x64(x64), lapack_guard():
            yield

    return context


_blas_lock = threading.Lock()
_blas_users = 0
_blas_limiter: Any = None


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Within this context the BLAS libraries loaded in the process (SciPy's and NumPy's OpenBLAS,
    which jaxlib's CPU LAPACK kernels call) use one thread each, via threadpoolctl. For code that
    runs its own threads, one a core (module docstring). The limit is process-wide: the first
    context to enter sets it and the last to leave restores the thread counts found by the first,
    so fits run at once from several threads leave BLAS as they found it."""
    global _blas_users, _blas_limiter
    with _blas_lock:
        if _blas_users == 0:
            from threadpoolctl import threadpool_limits

            _blas_limiter = threadpool_limits(limits=1, user_api="blas")
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None


def configure_threads(threads: int = 1, *, override: bool = False) -> str:
    """Ask XLA's CPU client for ``threads`` intra-op threads (the ``NPROC`` environment
    variable); returns the value in effect. A value the user already set is kept unless
    ``override``. Call it at the start of a process, before JAX computes anything: the
    setting is read when JAX creates its CPU backend and has no effect afterwards (child
    processes started later inherit it). Not needed against the LAPACK deadlock
    (:func:`lapack_guard` removes it); for processes that should keep to one core."""
    threads = int(threads)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if override or ENV not in os.environ:
        os.environ[ENV] = str(threads)
    return os.environ[ENV]
