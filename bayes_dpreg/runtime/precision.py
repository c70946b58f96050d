"""64-bit JAX for the package's computations, without changing the caller's JAX at import.

Entries of ``S = X^T X`` grow with ``n`` (1e5 rows and more), so the package computes
in float64. Importing it changes nothing: the public entry points that compute with JAX
(:func:`~bayes_dpreg.fit`, :func:`~bayes_dpreg.compare` and the evidence functions,
SBC, the calibration diagnostics, the CLI) run under ``jax.enable_x64(True)``, a
context that restores the caller's setting on return (:func:`x64`), which also lowers their
programs so that no batched LAPACK call can deadlock XLA's CPU pool
(:mod:`bayes_dpreg.runtime.threads`). Code that calls the
low-level modules directly (kernels, closed forms, the chain driver) calls
:func:`enable_x64` once first, as with ``numpyro.enable_x64()``; the chain driver refuses
to run in 32-bit mode (:func:`require_x64`) rather than lose precision silently.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import jax
import numpy as np

from .threads import lapack_guard

__all__ = ["enable_x64", "x64", "require_x64"]

F = TypeVar("F", bound=Callable[..., Any])


def enable_x64() -> None:
    """Turn on JAX's 64-bit mode for the whole process (for scripts using the low-level API)."""
    jax.config.update("jax_enable_x64", True)


def x64(fn: F) -> F:
    """Run ``fn`` under ``jax.enable_x64(True)`` and :func:`~bayes_dpreg.runtime.threads.lapack_guard`
    (no batched LAPACK call that can deadlock XLA's CPU pool); the caller's settings are restored
    afterwards."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with jax.enable_x64(True), lapack_guard():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def require_x64(what: str) -> None:
    """Raise unless JAX is in 64-bit mode here (inside :func:`x64` or after :func:`enable_x64`)."""
    if jax.dtypes.canonicalize_dtype(np.float64) != np.float64:  # 32-bit mode canonicalises it to float32
        raise RuntimeError(
            f"{what} computes in float64: call bayes_dpreg.enable_x64() first "
            "(bayes_dpreg.fit, compare and the CLI do this for you)"
        )
