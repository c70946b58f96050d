"""PRNG keys for a fit without one-operation programs.

Called eagerly, each of ``jax.random.key``, ``split``, ``fold_in``, iterating over a key array and
``jnp.asarray`` of a NumPy array is a program of its own that JAX traces, lowers and compiles (or
loads from the persistent cache) the first time a process meets it: a default fit ran about twenty
of them, 10-40 ms each in a fresh process. Here a seed's key is built on the host (the key data of
JAX's default ``threefry2x32`` implementation is the seed's two 32-bit halves), a key is split by
one compiled program whose result is read back to the host, and the keys are rewrapped there
(``jax.random.wrap_key_data`` compiles nothing). The keys are the very keys JAX's functions give
(``tests/test_keys.py``), so draws are unchanged.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["seed_key", "split_keys", "fold_in"]

_THREEFRY = "threefry2x32"


def seed_key(seed: int) -> Any:
    """``jax.random.key(seed)``, built on the host under JAX's default implementation with 64-bit
    integers on (as in a fit); elsewhere, and for anything but an integer within 64 bits, by
    ``jax.random.key`` itself, which also raises its errors."""
    import jax
    import numpy as np

    config: Any = jax.config
    host = str(config.jax_default_prng_impl) == _THREEFRY and bool(config.jax_enable_x64)
    integer = isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
    if not (host and integer and -(2**63) <= int(seed) < 2**63):
        return jax.random.key(seed)  # its own result, or its own error (a float seed, say)
    seed = int(seed)
    bits = seed & (2**64 - 1)  # two's complement, as the seed's conversion to a 64-bit integer
    data: Any = np.array([bits >> 32, bits & (2**32 - 1)], np.uint32)
    return jax.random.wrap_key_data(data, impl=_THREEFRY)


def split_keys(key: Any, num: int, stacked: bool = False) -> Any:
    """``list(jax.random.split(key, num))`` for a typed key, from one compiled program; with
    ``stacked``, the ``(num,)`` key array ``jax.random.split(key, num)`` itself. A legacy ``uint32``
    key goes through JAX's functions."""
    import jax
    import numpy as np

    if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        keys = jax.random.split(key, num)
        return keys if stacked else list(keys)
    impl = jax.random.key_impl(key)
    data: Any = np.asarray(_split_data(int(num))(key))
    if stacked:
        return jax.random.wrap_key_data(data, impl=impl)
    return [jax.random.wrap_key_data(row, impl=impl) for row in data]


@functools.cache
def _split_data(num: int) -> Any:
    import jax

    return jax.jit(lambda key: jax.random.key_data(jax.random.split(key, num)))


def fold_in(key: Any, i: int) -> Any:
    """``jax.random.fold_in(key, i)`` for a key, or for each key of a key array, in one compiled
    program (``i`` passed as a ``uint32`` array, so that every ``i`` shares it)."""
    import numpy as np

    return _fold_in_program()(key, np.uint32(i))


@functools.cache
def _fold_in_program() -> Any:
    import jax

    def fold(key: Any, i: Any) -> Any:
        return jax.vmap(lambda k: jax.random.fold_in(k, i))(key) if key.ndim else jax.random.fold_in(key, i)

    return jax.jit(fold)
