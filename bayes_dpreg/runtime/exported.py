"""A fit's programs kept on disk as exported StableHLO (``jax.export``), so that a new process skips
tracing and lowering them.

JAX's persistent compilation cache (:mod:`bayes_dpreg.runtime.cache`) stores compiled executables
under a key computed from the lowered program, so a new process must still trace every program
(run the Python that builds it) and lower it before the cache can answer. For the default sampler
at d = 5, J = 5 that was most of a fresh process's fit: 14 s of tracing and 5.5 s of lowering
against 1.2 s of loading executables, under cProfile (``python -m benchmarks.profile_fit --method
normalx-clt`` with the cache filled). An :class:`jax.export.Exported` is the lowered program
itself, serialised: a process that finds one on disk deserialises it, wraps it in a jitted call
(tracing a single call, lowering nothing of the original), and the compilation cache supplies the
executable.

A program is exported only where its caller names it (``fit_jit(..., key=...)``: the names say
which kernel, settings and chunk length a closure holds) and only while the persistent compilation
cache is on; the file lives in ``<cache dir>/exported``, named by a hash of that key, the
arguments' tree and abstract values, the compiler options, the versions of JAX, jaxlib and NumPyro,
and the source of this package, so that any change to the code a program was traced from
invalidates it. Anything that goes wrong on the way (a missing ``flatbuffers``, a file that does
not deserialise, a program JAX cannot export) falls back to ``jax.jit``: the disk copy saves time,
never correctness, and the draws are the same either way (``tests/test_exported.py``).

Why not keep the compiled executables themselves, which would also skip lowering the exported
program before JAX's cache can answer (0.45 s of a 2.6 s fit in a new process at d = 5, J = 5)?
``jax.experimental.serialize_executable`` on jaxlib 0.10's CPU backend does not survive a new process:
an executable loaded there crashed it (a segmentation fault) at its first LAPACK call, since jaxlib
binds LAPACK from SciPy only when a program is lowered, and with that bound the loaded chains failed
on reading their results (``Function compare_convert_fusion not found``): the executables were loaded
without the compile options JAX's own cache passes to ``deserialize_executable`` (tried 2026-11-29).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["exported_call", "export_dir", "signature", "stable_key", "Unusable", "MAX_FILES"]

MAX_FILES = 400  # the oldest files beyond this are removed when a new one is written (50-200 KB each at d = 5)
_registered: set[type] = set()
_lock = threading.Lock()


def export_dir() -> Path | None:
    """``<persistent compilation cache>/exported``, or ``None`` while the cache is off (JAX's setting,
    which :func:`~bayes_dpreg.runtime.cache.enable_compilation_cache` makes)."""
    import jax

    cache = jax.config.jax_compilation_cache_dir  # type: ignore[attr-defined]
    return None if not cache else Path(cache) / "exported"


@functools.cache
def _source_hash() -> str:
    """A hash of every ``.py`` file of this package, so that a program traced from other code is
    never taken for this code's."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


@functools.cache
def _versions() -> str:
    import jax
    import jaxlib
    import numpyro

    return f"jax {jax.__version__} jaxlib {jaxlib.__version__} numpyro {numpyro.__version__}"


def _namedtuples(treedef: Any, out: set[type]) -> set[type]:
    """The NamedTuple classes among the nodes of ``treedef`` (``jax.export`` serialises a tree's
    NamedTuples once each is registered under a name)."""
    data = treedef.node_data()
    if data is not None and isinstance(data[0], type) and issubclass(data[0], tuple) and hasattr(data[0], "_fields"):
        out.add(data[0])
    for child in treedef.children():
        _namedtuples(child, out)
    return out


def _name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _register(classes: set[type]) -> None:
    from jax import export

    with _lock:
        for cls in classes - _registered:
            try:
                export.register_namedtuple_serialization(cls, serialized_name=_name(cls))
            except ValueError:  # registered already (by the caller, or under another name): usable as it is
                pass
            _registered.add(cls)


def _resolve(name: str) -> type:
    module, qualname = name.split(":", 1)
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _trace_context() -> tuple:
    """What, besides the arguments, changes the program JAX traces and lowers: the device's platform
    (``cuda`` and ``rocm`` share the backend name ``gpu``), the configuration flags that alter
    random bits or arithmetic, and whether :func:`~bayes_dpreg.runtime.threads.lapack_guard` is in
    force (it rewrites batched LAPACK calls at lowering, which an exported program keeps)."""
    import jax

    from . import threads

    flags = ("jax_enable_x64", "jax_threefry_partitionable", "jax_default_prng_impl", "jax_default_matmul_precision")
    device = jax.config.jax_default_device  # type: ignore[attr-defined]
    platform = getattr(device, "platform", None) or (device if isinstance(device, str) else jax.devices()[0].platform)
    return platform, tuple(str(getattr(jax.config, f)) for f in flags), threads._depth > 0


def _path(key: Any, signature: Any, options: Any) -> Path | None:
    folder = export_dir()
    if folder is None:
        return None
    setting = (sorted((options or {}).items()), _trace_context())
    what = repr((key, str(signature[0]), [(s, str(t), w) for s, t, w in signature[1]], setting))
    digest = hashlib.sha256(f"{what}|{_versions()}|{_source_hash()}".encode()).hexdigest()[:32]
    return folder / digest


def _load(path: Path) -> Any:
    from jax import export

    head, body = path.read_bytes().split(b"\n", 1)
    _register({_resolve(n) for n in json.loads(head)})
    return export.deserialize(bytearray(body))


def _save(path: Path, exp: Any, classes: set[type]) -> None:
    """Write atomically (a concurrent process reads the whole file or none), then keep the newest
    :data:`MAX_FILES` files and remove temporary files older than an hour (a killed writer's)."""
    import time

    blob = json.dumps(sorted(map(_name, classes))).encode() + b"\n" + bytes(exp.serialize())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_bytes(blob)
    os.replace(tmp, path)
    ages = []
    for p in path.parent.iterdir():
        try:
            ages.append((p.stat().st_mtime, p))
        except FileNotFoundError:  # removed by another process meanwhile
            continue
    old = time.time() - 3600.0
    done = sorted((a, p) for a, p in ages if "." not in p.name)
    for _, p in done[:-MAX_FILES] + [(a, p) for a, p in ages if ".tmp" in p.name and a < old]:
        p.unlink(missing_ok=True)


def stable_key(obj: Any) -> Any:
    """``obj`` (a program's static description: kernels, settings, lengths) as nested tuples of
    strings that are the same in every process: functions by module and qualified name,
    NamedTuples field by field; ``None`` where some part has no such form (its ``repr`` holds
    a memory address), so that the program is not exported."""
    if callable(obj) and hasattr(obj, "__qualname__"):
        name = f"{obj.__module__}.{obj.__qualname__}"
        code = getattr(obj, "__code__", None)
        if str(obj.__module__).startswith("bayes_dpreg") or code is None:
            return name  # the package's source is in every key (_source_hash)
        return f"{name}#{hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest()[:16]}"
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        parts = tuple(stable_key(v) for v in obj)
        return None if None in parts else (type(obj).__qualname__, *zip(obj._fields, parts))
    if isinstance(obj, (tuple, list)):
        parts = tuple(stable_key(v) for v in obj)
        return None if None in parts else parts
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):
        return None  # an array's repr may be abbreviated
    text = repr(obj)
    return None if " at 0x" in text else text


def signature(args: tuple) -> tuple:
    """``(tree, ((shape, dtype, weak_type), ...))`` of ``args``: what a compiled program is specific to."""
    import jax
    import numpy as np

    leaves, tree = jax.tree.flatten(args)
    dtype = lambda x: x.dtype if hasattr(x, "dtype") else np.result_type(x)  # typed PRNG keys have no NumPy dtype
    return tree, tuple((np.shape(x), dtype(x), bool(getattr(x, "weak_type", False))) for x in leaves)


def exported_call(fun: Callable, key: Any, args: tuple, sig: tuple, jit: Callable, options: Any) -> Callable | None:
    """A jitted callable for ``fun`` at ``args``' signature ``sig`` (:func:`signature`), built from
    the exported program on disk (written there first if missing), or ``None`` where the disk copy
    is off or fails (the caller then jits ``fun`` itself). ``jit(f)`` jits with the caller's
    compiler options; ``key`` is :func:`stable_key`'s."""
    import jax

    tree = sig[0]
    try:
        path = _path(key, sig, options)
        if path is None:
            return None
        exp = None
        if path.exists():
            try:
                exp = _load(path)
            except Exception:  # a file from an interrupted or incompatible writer: export again
                path.unlink(missing_ok=True)
        if exp is None:
            classes = _namedtuples(tree, set())
            _register(classes)
            exp = jax.export.export(jit(fun), platforms=(_trace_context()[0],))(*args)
            classes = _namedtuples(exp.out_tree, classes)
            _register(classes)
            try:
                _save(path, exp, classes)
            except Exception:  # a full or read-only disk: this process still uses the export
                pass
        return _first_call_checked(jit(exp.call), path)
    except Exception:
        return None


def _first_call_checked(program: Callable, path: Path) -> Callable:
    """``program``, whose first call, if it fails (a file exported for another platform), removes
    the file and raises :class:`Unusable` so that the caller jits the function itself."""
    checked = False

    def call(*args: Any) -> Any:
        nonlocal checked
        if checked:
            return program(*args)
        try:
            out = program(*args)
        except Exception as exc:
            path.unlink(missing_ok=True)
            raise Unusable from exc
        checked = True
        return out

    return call


class Unusable(Exception):
    """An exported program failed on its first call; the caller falls back to ``jax.jit``."""
