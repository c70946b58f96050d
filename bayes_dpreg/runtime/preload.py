"""The libraries a posterior is built with, set up by the caller's thread while the chains run:
:func:`posterior_libraries`.

A new process pays for ArviZ at its first fit: the import (xarray, pandas, SciPy's ``stats`` and
Matplotlib's ``pyplot`` among it; 1.1-1.6 s on the 2-core machines) and the first ``InferenceData`` it
builds (0.3 s of lazy set-up in xarray and pandas), after the chains have run. Where the chain driver runs
the chains on worker threads (:func:`bayes_dpreg.samplers.base.run_chains`), the caller's thread would
only wait for them; it does this work then instead, while the chains' compiled programs run outside the
GIL, and the fit's own ArviZ calls later find it done. Nothing of the fit depends on it: draws, diagnostics
and results are those of a process that imported ArviZ first. It runs once a process, and not at all once
ArviZ has been imported.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["posterior_libraries"]

_LOCK = threading.Lock()
_DONE = False


def posterior_libraries() -> None:
    """Import ArviZ and build one small ``InferenceData``, once a process. A failure is left to the fit's
    own import of ArviZ, which raises it where it is needed."""
    global _DONE
    with _LOCK:
        if _DONE:
            return
        _DONE = True
    if "arviz" in sys.modules:
        return
    try:
        import arviz as az
        import numpy as np

        az.from_dict(posterior={"x": np.zeros((1, 2))}, sample_stats={"diverging": np.zeros((1, 2), bool)})
    except Exception:  # noqa: BLE001, S110 (module docstring: the fit's own import raises it)
        pass
