"""JAX's persistent compilation cache for the samplers, in the user's cache directory.

Compiling a sampler takes most of a first fit (about 10 of 15 s for ``normalx-nuts`` at
d = 5, J = 5 on 2 cores; ``benchmarks/fit_time.py``). :func:`bayes_dpreg.fit` therefore
turns on JAX's persistent compilation cache, once per process and only if the caller has
not configured one, in ``platformdirs.user_cache_dir("bayes_dpreg")/jax`` (on Linux
``~/.cache/bayes_dpreg/jax``), so that a new process reuses the compiled programs of
earlier ones. Nothing happens at ``import bayes_dpreg``.

Opt out with the environment variable ``BAYES_DPREG_COMPILATION_CACHE=0`` (or point it at
another directory), or configure JAX yourself (``jax_compilation_cache_dir``) before the
first fit; :func:`compilation_cache_dir` tells which directory is in use.
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
        return jax.config.jax_compilation_cache_dir
    _done = True
    if jax.config.jax_compilation_cache_dir:  # the caller's own setting wins
        return jax.config.jax_compilation_cache_dir
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() in ("0", "off", "false", "no"):
        return None
    path = Path(setting) if setting else _default_dir()
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

    return jax.config.jax_compilation_cache_dir
