"""The libraries a posterior is built with, set up while a new process's first chains run: :func:`start`
and :func:`wait`.

A new process pays for ArviZ at its first fit: the import (xarray, pandas, SciPy's ``stats`` and
Matplotlib's ``pyplot`` among it; 1.2-1.6 s on the 2-core machines, ``python -m benchmarks.import_time``)
and the first ``InferenceData`` it builds (0.3 s of lazy set-up in xarray and pandas), after the chains
have run. The chain driver (:func:`bayes_dpreg.samplers.base.run_chains`), where it runs the chains on
worker threads, starts this work on a helper thread (:func:`start`) for its main run, once every chain
program has run a chunk in this process (the compile notice's first chunks), and waits for it before it
returns (:func:`wait`). Meanwhile the workers only run compiled chunks, which spend their time outside the
GIL, and the caller's thread only waits for them: the lazy imports and one-time set-ups that a first
run of a program makes on a worker (``jax.export``; jaxlib's LAPACK kernels, which import SciPy's
``cython_lapack`` from C++) are behind them, so the helper's imports do not wait on theirs. Nothing of the
fit depends on it: draws, diagnostics and results are those of a process that imported ArviZ first. It
runs once a process, and not at all once ArviZ is imported. An error in the chains, or an interrupt, reaches
the caller once the helper has ended too (the driver waits for it in a ``finally``): at most the import's
second or so later.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["start", "wait"]

_LOCK = threading.Lock()
_THREAD: threading.Thread | None = None


def _imported() -> bool:
    return "arviz" in sys.modules


def _set_up() -> None:
    """Import ArviZ and build one small ``InferenceData``. A failure is left to the fit's own import of
    ArviZ, which raises it where it is needed."""
    try:
        import arviz as az
        import numpy as np

        az.from_dict(posterior={"x": np.zeros((1, 2))}, sample_stats={"diverging": np.zeros((1, 2), bool)})
    except Exception:  # noqa: BLE001, S110 (the docstring: the fit's own import raises it)
        pass


def start() -> None:
    """Start :func:`_set_up` on a daemon thread, once a process; nothing where ArviZ is imported, or where
    no thread can be started (the fit then imports ArviZ itself, as without this module)."""
    global _THREAD
    with _LOCK:
        if _THREAD is not None or _imported():
            return
        thread = threading.Thread(target=_set_up, name="bayes_dpreg-preload", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # "can't start new thread": a process at its thread limit
            return
        _THREAD = thread


def wait() -> None:
    """Return once the thread :func:`start` started has ended (at once where it started none)."""
    with _LOCK:
        thread = _THREAD
    if thread is not None:
        thread.join()
