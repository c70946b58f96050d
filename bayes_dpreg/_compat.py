"""Old module paths (before the library was grouped by stage) as deprecated aliases.

``from bayes_dpreg.inference import fit`` still works and warns (``DeprecationWarning`` at the
caller's line, naming the new path). Each old path is a proxy module registered in
``sys.modules`` when the package is imported; it imports nothing until a name is read from it,
then forwards to the module (or, where the old module's names now live in several, the first
of the modules) that holds the code. Proxies are not the modules: patch the new paths.
Remove in 0.3."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
import warnings
from typing import Any

PREFIX = "bayes_dpreg."

MOVED: dict[str, str | tuple[str, ...]] = {
    "cache": "runtime.cache",
    "device": "runtime.device",
    "precision": "runtime.precision",
    "threads": "runtime.threads",
    "entry": "runtime.entry",
    "data": "datasets",
    "release": ("privacy.mechanisms", "privacy.noisy_stats", "stats"),
    "bounds": "privacy.bounds",
    "ledger": "privacy.ledger",
    "sources": "privacy.sources",
    "gram": "privacy.gram",
    "prior": "model.prior",
    "hierarchical": "model.densities",
    "closed_form": "model.closed_form",
    "linalg": "model.linalg",
    "bernstein_sheldon_moments": "model.wishart_moments",
    "kernels": ("samplers.normalx", "samplers.fixeds", "samplers.mh"),
    "bernstein_sheldon": "samplers.bs",
    "samplers.bs_clt": "samplers.bs",
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
}


class _Alias(types.ModuleType):
    """An old module path: forwards every public or private name to the modules that hold it now."""

    def __init__(self, old: str, targets: tuple[str, ...]) -> None:
        super().__init__(PREFIX + old)
        self.__dict__["_targets"] = tuple(PREFIX + t for t in targets)
        self.__dict__["_warned"] = False
        self.__dict__["__path__"] = []  # old sub-module paths (multiparty.vertical) resolve through sys.modules

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # tools probing module dunders (__file__, __wrapped__) get no warning, no import
            raise AttributeError(attr)
        targets = self.__dict__["_targets"]
        if not self.__dict__["_warned"]:
            self.__dict__["_warned"] = True
            warnings.warn(
                f"{self.__name__} is deprecated (the library is grouped by stage, docs/architecture.md): "
                f"import from {' or '.join(targets)}",
                DeprecationWarning,
                stacklevel=2,
            )
        for target in targets:
            module = importlib.import_module(target)
            if hasattr(module, attr):
                return getattr(module, attr)
            if hasattr(module, "__path__") and importlib.util.find_spec(f"{target}.{attr}") is not None:
                return importlib.import_module(f"{target}.{attr}")  # a sub-module of a package that moved
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r} (looked in {', '.join(targets)})")

    def __dir__(self) -> list[str]:
        return sorted({n for t in self.__dict__["_targets"] for n in dir(importlib.import_module(t))})


def install() -> None:
    """Register the proxies (no module is imported; a real module of the same name is kept)."""
    for old, new in MOVED.items():
        sys.modules.setdefault(PREFIX + old, _Alias(old, (new,) if isinstance(new, str) else new))


def alias(name: str) -> types.ModuleType:
    """The proxy of an old top-level path (``bayes_dpreg.inference``), for the package's ``__getattr__``."""
    return sys.modules[PREFIX + name]
