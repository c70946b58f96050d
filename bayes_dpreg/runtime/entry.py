"""The public functions' common wrapper, :func:`public`: what every entry point of the package does
on the way in and out.

* **Warnings at the caller's line.** Every warning raised during the call, at any depth (the
  package's own, ArviZ's, JAX's), is recorded and re-issued at the line of the user's code that
  made the call, through the warning filters and registry of that code's module: a
  ``ConvergenceWarning`` points at ``fit(...)`` in the user's script, not at a line inside the
  package. Nested public calls (``compare`` calling ``fit``) re-issue once, at the outermost.
  ArviZ's import-time notice of its coming refactor (a ``FutureWarning`` about ArviZ, not about
  the user's call) is dropped.
* **float64** and **no LAPACK deadlock** for the call (:func:`bayes_dpreg.runtime.precision.x64`:
  :func:`jax.enable_x64` and :func:`bayes_dpreg.runtime.threads.lapack_guard`).
"""

from __future__ import annotations

import functools
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from .precision import x64

__all__ = ["public"]

F = TypeVar("F", bound=Callable[..., Any])
_local = threading.local()


_NOISE = ("ArviZ is undergoing a major refactor",)  # ArviZ 0.2x's import-time notice, not about this call


def _reissue(caught: list[warnings.WarningMessage], frame: Any) -> None:
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    for w in caught:
        if any(text in str(w.message) for text in _NOISE):
            continue
        warnings.warn_explicit(
            w.message,
            w.category,
            frame.f_code.co_filename,
            frame.f_lineno,
            module=frame.f_globals.get("__name__"),
            registry=registry,
        )


def public(fn: F) -> F:
    """Wrap a public function (module docstring)."""
    computing = x64(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if getattr(_local, "depth", 0):
            return computing(*args, **kwargs)
        frame = sys._getframe(1)
        _local.depth = 1
        caught: list[warnings.WarningMessage] = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                return computing(*args, **kwargs)
        finally:
            _local.depth = 0
            _reissue(caught, frame)

    return wrapper  # type: ignore[return-value]
