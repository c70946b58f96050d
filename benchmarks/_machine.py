"""Machine description shared by the scripts of ``benchmarks/`` (run as ``python benchmarks/<script>.py``,
so this directory is on ``sys.path``), ``paper/`` and ``studies/`` (which put it there)."""

from __future__ import annotations

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
