"""The machine a result was measured on, as one line for the results' headers."""

from __future__ import annotations

import importlib
import os
import platform


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe(*packages: str) -> str:
    """``"<CPU model>, <n> CPUs, <OS> <architecture>, Python <version>"`` and the version of each
    package named (``jax`` with its default backend), e.g. ``describe("numpy", "jax")``.
    Imports the packages named."""
    parts = [
        cpu_model(),
        f"{os.cpu_count()} CPUs",
        f"{platform.system()} {platform.machine()}",
        f"Python {platform.python_version()}",
    ]
    for name in packages:
        module = importlib.import_module(name)
        version = f"{name} {getattr(module, '__version__', '?')}"
        if name == "jax":
            version += f" ({module.default_backend()})"
        parts.append(version)
    return ", ".join(parts)
