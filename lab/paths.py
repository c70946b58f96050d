"""Where the scripts find the repository and its data, and how they start Python processes that
import the scripts' packages."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
"""The repository's root: the folder of ``paper/``, ``studies/``, ``benchmarks/`` and ``lab/``."""

DATA_DIR = REPO.parent / "shared" / "data"
"""The real data sets (power plant, bike sharing, ...): ``../shared/data`` beside the repository."""


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with the repository first on ``PYTHONPATH``,
    so that a new Python process (``python -m benchmarks.speed``, ``python -c "from lab import ..."``)
    imports the scripts' packages from any working directory."""
    out = dict(os.environ if env is None else env)
    rest = out.get("PYTHONPATH", "")
    out["PYTHONPATH"] = str(REPO) + (os.pathsep + rest if rest else "")
    return out
