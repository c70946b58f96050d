"""Old module paths (before the library was grouped by stage) as deprecated aliases.

``import bayes_dpreg.inference`` still works and warns; it gives a proxy of
:mod:`bayes_dpreg.posterior.inference`. Remove in 0.3."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

MOVED: dict[str, str | tuple[str, ...]] = {
    "cache": "runtime.cache",
    "device": "runtime.device",
    "precision": "runtime.precision",
    "threads": "runtime.threads",
    "entry": "runtime.entry",
    "data": "datasets",
    "privacy": "release.privacy",
    "bounds": "release.bounds",
    "ledger": "release.ledger",
    "sources": "release.sources",
    "gram": "release.gram",
    "prior": "model.prior",
    "hierarchical": "model.densities",
    "closed_form": "model.closed_form",
    "linalg": "model.linalg",
    "bernstein_sheldon_moments": "model.wishart_moments",
    "inference": "posterior.inference",
    "idata": "posterior.idata",
    "diagnostics": "posterior.diagnostics",
    "resolution": "posterior.diagnostics.resolution",
    "compare": "posterior.compare",
    "bridge": "posterior.bridge",
    "sbc": "posterior.sbc",
    "multiparty": "systems",
    "multiparty.masking": "systems.masking",
    "multiparty.synthetic": "systems.synthetic",
    "multiparty.vertical": "systems.vertical",
    # one old module whose names now live in several: an attribute is looked up in each in turn
    "kernels": ("samplers.normalx", "samplers.fixeds", "samplers.mh"),
    "bernstein_sheldon": "samplers.bs",
}
PREFIX = "bayes_dpreg."


def _targets(target: str | tuple[str, ...]) -> tuple[str, ...]:
    return (target,) if isinstance(target, str) else tuple(target)


class _Alias(types.ModuleType):
    """Forwards attribute access to the module that now holds the code (the first of several
    that has the attribute, where an old module was split)."""

    def __init__(self, name: str, target: str | tuple[str, ...]) -> None:
        super().__init__(name)
        self.__dict__["_targets"] = _targets(target)
        self.__dict__["__path__"] = []  # lets old sub-module paths (multiparty.vertical) resolve

    def __getattr__(self, attr: str) -> Any:
        for target in self.__dict__["_targets"]:
            module = importlib.import_module(target)
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")

    def __dir__(self) -> list[str]:
        return sorted({a for t in self.__dict__["_targets"] for a in dir(importlib.import_module(t))})


class _Loader(importlib.abc.Loader):
    def __init__(self, target: str | tuple[str, ...]) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _Alias(spec.name, self.target)

    def exec_module(self, module: types.ModuleType) -> None:
        old = module.__name__
        new = " or ".join(_targets(self.target))
        warnings.warn(
            f"{old} is deprecated: the library is grouped by stage (docs/architecture.md); import {new}",
            DeprecationWarning,
            stacklevel=3,
        )
        for target in _targets(self.target):
            importlib.import_module(target)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(PREFIX) or fullname[len(PREFIX) :] not in MOVED:
            return None
        moved = MOVED[fullname[len(PREFIX) :]]
        new = PREFIX + moved if isinstance(moved, str) else tuple(PREFIX + t for t in moved)
        return importlib.machinery.ModuleSpec(fullname, _Loader(new), is_package=True)


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (after the regular finders: real modules win)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
