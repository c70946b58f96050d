"""The libraries a posterior is built with, set up while a new process's first chains run: :func:`start`
and :func:`wait`.

A new process pays for ArviZ at its first fit: the import (xarray, pandas, SciPy's ``stats`` and
Matplotlib's ``pyplot`` among it; 1.1-1.6 s on the 2-core machines) and the first ``InferenceData`` it
builds (0.3 s of lazy set-up in xarray and pandas), after the chains have run. Where the chain driver runs
the chains on worker threads (:func:`bayes_dpreg.samplers.base.run_chains`), it starts this work on a
helper thread once the workers have their chunks (:func:`start`), while its own thread only waits for
them, and waits for it before it returns (:func:`wait`): the compiled chunks run outside the GIL, the
import inside it. Between the two calls the caller's thread imports nothing, so the two threads never wait
on each other's module locks. Nothing of the fit depends on it: draws, diagnostics and results are those
of a process that imported ArviZ first. It runs once a process, and not at all once ArviZ is imported.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["start", "wait"]

_LOCK = threading.Lock()
_THREAD: threading.Thread | None = None


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
    """Start :func:`_set_up` on a daemon thread, once a process; nothing where ArviZ is imported."""
    global _THREAD
    with _LOCK:
        if _THREAD is not None or "arviz" in sys.modules:
            return
        _THREAD = threading.Thread(target=_set_up, name="bayes_dpreg-preload", daemon=True)
        _THREAD.start()


def wait() -> None:
    """Return once the thread :func:`start` started has ended (at once where it started none)."""
    thread = _THREAD
    if thread is not None:
        thread.join()
