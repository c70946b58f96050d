"""Compiling the samplers: JAX's persistent compilation cache (on by default, opt-out) and the
compiler options of a fit's programs (:func:`fit_jit`).

Compiling a sampler takes most of a first fit (6.6 s of XLA compilation in a cold
``normalx-nuts`` fit at d = 5, J = 5 on 2 cores; ``python -m benchmarks.profile_fit``). With
JAX's persistent compilation cache a new process loads the programs compiled by earlier
ones instead: 5.9 s a fit instead of 13.0 s, and 2.0 s instead of 4.6 s for ``fixeds``
(``python -m benchmarks.speed --methods normalx-nuts fixeds --dims 5 --parties 5 --chains 1 4
--cache --name speed_cache_d5_J5``, ``docs/results/speed/speed_cache_d5_J5.md``); tracing,
lowering, building the InferenceData and sampling remain; the programs of a fit are also kept
as exported StableHLO beside the cache, so that a new process skips tracing and lowering them
(:mod:`bayes_dpreg.runtime.exported`).

:func:`bayes_dpreg.fit` turns the cache on once per process (nothing happens at
``import bayes_dpreg``), in ``platformdirs.user_cache_dir("bayes_dpreg")/jax`` (on Linux
``~/.cache/bayes_dpreg/jax``), every program whatever its compile time (a fit's 50-odd
programs take about 1 MB), the directory capped at 1 GiB (JAX evicts the least recently
used entries beyond it). Control it with the environment variable
``BAYES_DPREG_COMPILATION_CACHE``:

- ``0`` / ``off`` / ``false`` / ``no``: no persistent cache;
- a directory: the cache lives there;
- unset, empty, ``1`` / ``on``: the default directory.

A cache configured by the caller (``jax.config.update("jax_compilation_cache_dir", ...)``
or ``JAX_COMPILATION_CACHE_DIR``) is left as it is. If the directory cannot be created (a
read-only home), fits run without the cache. :func:`compilation_cache_dir` tells which
directory is in use.

History: an earlier session kept the cache off after a segmentation fault inside JAX's
``put_executable_and_time`` in a test process. The same test file later aborted XLA's
compiler when the process passed the kernel's ``vm.max_map_count`` (every XLA CPU
executable holds its own memory mappings; ``tests/conftest.py``), which is the likely cause of
both; with the map count kept in check the whole suite ran with the cache on.

**Compiler options of a fit** (:func:`fit_jit`). A ``fit`` runs each of its programs once, so
their compile time counts as much as their run time. On CPU two of XLA's settings cost compile
time that a fit does not win back: the newer fusion emitters (``xla_cpu_use_fusion_emitters``,
on by default in jaxlib 0.10) and the backend's optimisation level 3 (``xla_backend_optimization_level``;
level 0 slowed sampling 1.7 times, level 1 did not). ``fit`` compiles with the emitters off and
level 1. On 2 cores at d = 5, J = 5 (``python -m benchmarks.speed --methods normalx-nuts normalx
fixeds --dims 5 --parties 5 --chains 1 4 --fast-compile on|off --name speed_fast_compile_on|off``;
``docs/results/speed/speed_fast_compile_*.md``):

- ``normalx-nuts``: the sampler compiles in 3.7 s instead of 6.2 s, a cold fit takes 8.5 s
  instead of 11.7 s, and an iteration 774-799 us instead of 736-749 us (3-9% more);
- ``normalx``: 5.5 s instead of 8.5 s, a cold fit 8.9 s instead of 14.0 s, iterations as fast;
- ``fixeds``: a cold fit 2.6 s instead of 3.5 s.

At about 45 us more per NUTS iteration, the 2.5 s of compilation saved are spent after about
14,000 iterations per chain (4 chains, run one after another). ``fit``'s chain programs and
its ``InferenceData`` programs are compiled this way; the replication runner
(:func:`~bayes_dpreg.samplers.base.run_batched`), whose programs run for minutes, keeps XLA's
defaults. ``BAYES_DPREG_FAST_COMPILE=0`` keeps the defaults everywhere; so does a jaxlib that
does not know the options, and any backend but the CPU. The draws depend on the options only
through rounding (``tests/test_cache.py``), which a NUTS trajectory can amplify: the same seed
gives other, equally valid, draws.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "enable_compilation_cache",
    "compilation_cache_dir",
    "fit_jit",
    "fit_compiler_options",
    "compile_notice",
    "say",
    "ENV",
    "FAST_ENV",
    "NOTICE_AFTER_S",
]

ENV = "BAYES_DPREG_COMPILATION_CACHE"
FAST_ENV = "BAYES_DPREG_FAST_COMPILE"
FIT_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 1}
MAX_SIZE_BYTES = 1 << 30
_OFF = ("0", "off", "false", "no")
_DEFAULT = ("", "1", "on", "true", "yes")
_done = False


def _default_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("bayes_dpreg")) / "jax"


def _cache_setting() -> Path | None:
    """The directory ``BAYES_DPREG_COMPILATION_CACHE`` asks for (``None``: the cache is off)."""
    setting = os.environ.get(ENV, "").strip()
    if setting.lower() in _OFF:
        return None
    return _default_dir() if setting.lower() in _DEFAULT else Path(setting).expanduser()


def enable_compilation_cache() -> str | None:
    """Turn the cache on (idempotent); returns the directory in use, or ``None`` when off."""
    global _done
    import jax

    if _done or jax.config.jax_compilation_cache_dir:  # type: ignore[attr-defined]
        _done = True  # the caller's own setting wins
        return jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]
    _done = True
    path = _cache_setting()
    if path is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: run without the cache
        return None
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_max_size", MAX_SIZE_BYTES)
    return str(path)


def compilation_cache_dir() -> str | None:
    """The persistent compilation cache directory JAX uses in this process (``None``: none)."""
    import jax

    return jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]


@functools.cache
def fit_compiler_options() -> dict[str, Any] | None:
    """The XLA options :func:`fit_jit` compiles with (``None``: XLA's defaults): :data:`FIT_OPTIONS`
    on a CPU backend whose jaxlib accepts them, unless ``BAYES_DPREG_FAST_COMPILE`` is off.
    Decided once per process, by compiling a one-operation program with them."""
    import jax

    if os.environ.get(FAST_ENV, "").strip().lower() in _OFF or jax.default_backend() != "cpu":
        return None
    try:
        jax.jit(lambda x: x + 1.0, compiler_options=FIT_OPTIONS).lower(0.0).compile()
    except Exception:  # an older or newer jaxlib without the option
        return None
    return dict(FIT_OPTIONS)


def fit_jit(fun: Callable, key: Any = None, **kwargs: Any) -> Callable:
    """``jax.jit(fun, **kwargs)`` with :func:`fit_compiler_options`: for the programs a single
    ``fit`` compiles and runs once (the module docstring gives the trade-off). The options are
    looked up at the first call, not here, so that a module may apply it at import.

    ``key``: what ``fun`` computes beyond its code (the kernel, settings and lengths a closure
    holds; :func:`~bayes_dpreg.runtime.exported.stable_key`); with it, and no static arguments,
    each program is also kept on disk as exported StableHLO, so that a new process skips tracing
    and lowering it (:mod:`bayes_dpreg.runtime.exported`)."""
    import threading

    from .exported import Unusable, exported_call, signature, stable_key

    @functools.cache
    def jitted() -> Callable:
        import jax

        return jax.jit(fun, compiler_options=fit_compiler_options(), **kwargs)

    stable = None if key is None or kwargs else stable_key((fun, key))
    if stable is None:

        @functools.wraps(fun)
        def plain(*args: Any, **kw: Any) -> Any:
            return jitted()(*args, **kw)

        return plain

    programs: dict[Any, Callable] = {}
    lock = threading.Lock()

    @functools.wraps(fun)
    def call(*args: Any) -> Any:
        import jax

        sig = signature(args)
        program = programs.get(sig)
        if program is None:
            with lock:  # chains on threads: one export (or load) per program
                program = programs.get(sig)
                if program is None:
                    options = fit_compiler_options()
                    jit = lambda f: jax.jit(f, compiler_options=options)
                    program = exported_call(fun, stable, args, sig, jit, options) or jitted()
                    programs[sig] = program
        try:
            return program(*args)
        except Unusable:  # an exported program that fails on its first call: jit the function itself
            programs[sig] = jitted()
            return programs[sig](*args)

    return call


NOTICE_AFTER_S = 5.0  # a first run of new shapes that takes longer than this says what it is doing
_log = logging.getLogger("bayes_dpreg.compile")
_compiles: list[list[float]] = []  # the compile durations seen by each open notice
_listening = False
_notice_lock = threading.Lock()


def _on_event(event: str, duration_secs: float, **_: str | int) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        with _notice_lock:
            for seen in _compiles:
                seen.append(duration_secs)


def say(message: str) -> None:
    """``message`` on the ``bayes_dpreg.compile`` logger (INFO) where the process configured logging,
    else on stderr (as PyMC does for its progress)."""
    if logging.root.handlers or _log.handlers:
        _log.info(message)
    else:
        print(f"bayes_dpreg: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def compile_notice(what: str, after: float = NOTICE_AFTER_S) -> Iterator[None]:
    """Around the first run of programs of new shapes (``what``: the sampler and the shapes):
    if it has not finished after ``after`` seconds, say that the programs are being compiled, and
    at the end how long it took and how many programs XLA compiled (JAX's monitoring events).
    Quiet when it finishes sooner (a warm or cached start)."""
    global _listening
    import jax

    with _notice_lock:
        if not _listening:
            jax.monitoring.register_event_duration_secs_listener(_on_event)
            _listening = True
        seen: list[float] = []
        _compiles.append(seen)
    start, fired = time.perf_counter(), threading.Event()
    cache = compilation_cache_dir()

    def notice() -> None:
        fired.set()
        where = f"; new processes load them from the compilation cache in {cache}" if cache else ""
        say(
            f"compiling {what} (the first run of these shapes in this process; later fits of the same "
            f"shapes reuse the compiled programs{where}) ..."
        )

    timer = threading.Timer(after, notice)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        with _notice_lock:
            _compiles.remove(seen)
        if fired.is_set():
            say(
                f"{what}: ready after {time.perf_counter() - start:.0f} s "
                f"({len(seen)} programs compiled in {sum(seen):.0f} s)"
            )
