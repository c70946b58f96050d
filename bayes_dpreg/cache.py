"""JAX's persistent compilation cache for the samplers, on request.

Compiling a sampler takes most of a first fit (about 10 of 15 s for ``normalx-nuts`` at
d = 5, J = 5 on 2 cores; ``benchmarks/speed.py --cache``); with JAX's persistent compilation
cache a new process reuses the programs compiled by earlier ones (5-6 s a fit instead of
15). It is **off by default**: with jaxlib 0.10.2 on CPU, writing one of the test suite's
programs to the cache crashed the process (a segmentation fault inside
``compilation_cache.put_executable_and_time``, while numpyro's ``Predictive`` compiled a
``lax.map``), so the package does not turn on a feature that can kill a user's session.

Opt in with the environment variable ``BAYES_DPREG_COMPILATION_CACHE=1`` (the directory
``platformdirs.user_cache_dir("bayes_dpreg")/jax``, on Linux ``~/.cache/bayes_dpreg/jax``)
or ``BAYES_DPREG_COMPILATION_CACHE=/some/dir``; :func:`bayes_dpreg.fit` then turns it on
once per process, unless JAX already has a cache configured. Nothing happens at
``import bayes_dpreg``. :func:`compilation_cache_dir` tells which directory is in use.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["enable_compilation_cache", "compilation_cache_dir", "ENV"]

ENV = "BAYES_DPREG_COMPILATION_CACHE"
_done = False


def _default_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("bayes_dpreg")) / "jax"


def enable_compilation_cache() -> str | None:
    """Turn the cache on (idempotent); returns the directory in use, or ``None`` when off."""
    global _done
    import jax

    if _done:
        return jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]
    _done = True
    # the caller's own setting wins
    if jax.config.jax_compilation_cache_dir:  # type: ignore[attr-defined]
        return jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() in ("", "0", "off", "false", "no"):
        return None
    path = _default_dir() if setting.lower() in ("1", "on", "true", "yes") else Path(setting)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: run without the cache
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    return str(path)


def compilation_cache_dir() -> str | None:
    """The persistent compilation cache directory JAX uses in this process (``None``: none)."""
    import jax

    return jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]
