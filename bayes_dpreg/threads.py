"""XLA's CPU thread pool and jaxlib's batched LAPACK kernels: :func:`configure_threads`.

jaxlib 0.10.0 to 0.11.0 split a batched LAPACK call (Cholesky, triangular solve, ``eigh``, ...)
whose work reaches about 2e5 flops over XLA's CPU intra-op thread pool, and the pool thread
that made the call blocks until the pieces are done (``ParallelBatchMap`` in
``jaxlib/cpu/lapack_kernels.cc``). When XLA runs two such calls at once, every pool thread can
end up waiting and the program hangs, idle, for ever: on 2 cores, two chains of batched
Cholesky factorisations and triangular solves of 400 matrices of 14 x 14 hung in 2 of 8 fresh
processes (``tests/test_runtime.py``), and so did vmapped MCMC-normalX chains on bike sharing.
Upstream no longer splits in open-source builds after 0.11.0 (jax commit 859992407d).

With one intra-op thread (``NPROC=1``, read once, when JAX creates its CPU client) the kernels
run inline and cannot deadlock; the samplers, which vectorise over parties, chains and
replications, measured no slower with it (``docs/results/benchmarks/threads.md``). Parallelism across
cores comes from separate processes (``bayes-dpreg reproduce --workers``).

``import bayes_dpreg`` changes nothing. The processes that run many vectorised chains ask for
the single thread themselves, before their first JAX computation: the command line
(``bayes-dpreg``), the worker processes of the experiments, the study and benchmark scripts and
the test suite call :func:`configure_threads`. A :func:`bayes_dpreg.fit` with the default four
chains stays below the splitting threshold unless ``d`` and ``J`` are both large (see
:func:`lapack_split_possible`); the chain driver warns when they are and the process has the
default pool.
"""

from __future__ import annotations

import os
import warnings

__all__ = ["configure_threads", "lapack_split_possible", "SPLIT_FLOPS"]

ENV = "NPROC"
SPLIT_FLOPS = 200_000  # jaxlib's kMinWorkPerTask: a batch with less work runs inline
_AFFECTED = ((0, 10, 0), (0, 11, 0))  # jaxlib releases with the batch splitting (first, last)


def configure_threads(threads: int = 1, *, override: bool = False) -> str:
    """Ask XLA's CPU client for ``threads`` intra-op threads (the ``NPROC`` environment
    variable); returns the value in effect. A value the user already set is kept unless
    ``override``. Call it at the start of a process, before JAX computes anything: the
    setting is read when JAX creates its CPU backend and has no effect afterwards (child
    processes started later inherit it)."""
    threads = int(threads)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if override or ENV not in os.environ:
        os.environ[ENV] = str(threads)
    return os.environ[ENV]


def _jaxlib_splits() -> bool:
    try:
        import jaxlib

        version = tuple(int(p) for p in jaxlib.__version__.split(".")[:3])
    except (ImportError, ValueError):
        return False
    return _AFFECTED[0] <= version <= _AFFECTED[1]


def lapack_split_possible(flops: float) -> bool:
    """Whether a batched LAPACK call of ``flops`` (jaxlib's estimate: a Cholesky ``d^3/3`` per
    matrix, a triangular solve with ``d`` right-hand sides ``d^3``, ``eigh`` ``10 d^3``) may be
    split over several threads in this process: from ``SPLIT_FLOPS``, in the affected jaxlib
    releases, on more than one core, unless ``NPROC`` asks for one thread."""
    if os.environ.get(ENV, "").strip() == "1" or (os.cpu_count() or 1) < 2 or not _jaxlib_splits():
        return False
    return flops >= SPLIT_FLOPS


def warn_if_lapack_may_split(chains: int, parties: int, d: int) -> None:
    """Warn (once per call site) when the chain driver's batched linear algebra may be split over
    the default thread pool: triangular solves of ``d x d`` per party and chain, and for
    ``d <= 8`` (MCMC-normalX's level moves) one ``eigh`` per chain (see the module docstring)."""
    if lapack_split_possible(max(chains * parties * d**3, 10 * chains * d**3 if d <= 8 else 0)):
        warnings.warn(
            f"{chains} vectorised chains x {parties} parties of {d} x {d} matrices are enough for jaxlib's batched "
            "linear algebra to split over XLA's CPU thread pool, which can deadlock with this jaxlib; call "
            "bayes_dpreg.configure_threads() at the start of the process (before any JAX computation) or set "
            "NPROC=1 in the environment",
            RuntimeWarning,
            stacklevel=3,
        )
