"""What a new Python process pays before and during its first fit: ``python -m benchmarks.import_time``.

Each run is a new process (``python -c``) timing one import with ``time.perf_counter``: ``ml_dtypes``, ``jax``,
``bayes_dpreg``, then ``arviz`` after ``bayes_dpreg`` (what the first fit pays for ArviZ: the library imports
it lazily, when a fit builds its ``InferenceData``). With ``--fit``, a process that imports the library and
fits :mod:`benchmarks.speed`'s d = 5, J = 5 release with the defaults (one uncounted process first fills the
persistent compilation cache): the seconds of the import, of ``fit`` and of the whole.

``--python`` names the interpreters to compare (virtual environments that differ in one package, say) and
``--checkout`` the checkouts of the library (``git worktree add /tmp/old COMMIT``: two commits with one
interpreter); each setup's processes run from its checkout's folder with it first on ``PYTHONPATH``, and the
setups' runs are interleaved, so that a machine whose speed drifts (a shared one) weighs on each alike. Prints a
Markdown table of median (min-max) seconds over ``--runs`` processes; ``--out`` writes it to a file too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from lab.machine import describe
from lab.paths import REPO, child_env

IMPORTS = {
    "ml_dtypes": ("", "ml_dtypes"),
    "jax": ("", "jax"),
    "bayes_dpreg": ("", "bayes_dpreg"),
    "arviz after bayes_dpreg": ("import bayes_dpreg", "arviz"),
}

TIMED_IMPORT = "import time\n{before}\nt = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - t)"

FIT = """import time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import bayes_dpreg as bd
t1 = time.perf_counter()
from benchmarks.speed import releases
stats = releases("normalx-clt", 5, 5, 1)
t2 = time.perf_counter()
bd.fit(stats, seed=1)
t3 = time.perf_counter()
print(t1 - t0, t3 - t2, (t1 - t0) + (t3 - t2))
"""

VERSIONS = "import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in %r}))"


class Setup(NamedTuple):
    """An interpreter and the checkout whose ``bayes_dpreg`` and ``benchmarks`` it imports (``None``: this one)."""

    python: str
    checkout: Path | None

    def run(self, code: str, timeout: float) -> str:
        """``code``'s standard output in a new process, from the checkout's folder with it first on the path."""
        env = child_env()
        cwd = None
        if self.checkout is not None:
            env["PYTHONPATH"] = f"{self.checkout}{os.pathsep}{env['PYTHONPATH']}"
            cwd = self.checkout
        return subprocess.run(
            [self.python, "-c", code], stdout=subprocess.PIPE, text=True, timeout=timeout, env=env, cwd=cwd, check=True
        ).stdout


def _child(setup: Setup, code: str, timeout: float) -> list[float]:
    return [float(v) for v in setup.run(code, timeout).strip().splitlines()[-1].split()]


def versions(setup: Setup) -> dict[str, str]:
    code = VERSIONS % (("ml_dtypes", "jax", "jaxlib", "numpy", "arviz", "matplotlib"),)
    return dict(json.loads(setup.run(code, 60.0)))


def label(setup: Setup, vers: dict[str, str]) -> str:
    """The column's head: the packages that differ between interpreters (``vers``: :func:`versions`), and the
    checkout's commit."""
    head = ", ".join(f"{k} {v}" for k, v in vers.items() if k in ("ml_dtypes", "jax"))
    git = ["git", "-C", str(setup.checkout or REPO), "rev-parse", "--short", "HEAD"]
    commit = subprocess.run(git, stdout=subprocess.PIPE, text=True, check=False).stdout.strip() or "?"
    return f"{head}; bayes_dpreg at {commit}"


def measure(setups: list[Setup], runs: int, fit: bool, timeout: float) -> dict[Setup, dict[str, list[float]]]:
    """Seconds per setup and row, the setups' runs interleaved (so that a machine whose speed drifts weighs
    on each alike)."""
    times: dict[Setup, dict[str, list[float]]] = {s: {} for s in setups}
    if fit:
        for setup in setups:
            _child(setup, FIT, timeout)
    for _ in range(runs):
        for setup in setups:
            for row, (before, module) in IMPORTS.items():
                code = TIMED_IMPORT.format(before=before, module=module)
                times[setup].setdefault(row, []).append(_child(setup, code, timeout)[0])
            if fit:
                imp, fitted, whole = _child(setup, FIT, timeout)
                for row, v in (("fit: import", imp), ("fit: `fit`", fitted), ("fit: both", whole)):
                    times[setup].setdefault(row, []).append(v)
    return times


def table(times: dict[Setup, dict[str, list[float]]], setups: list[Setup]) -> list[str]:
    def cell(v: list[float]) -> str:
        return f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"

    vers = {s: versions(s) for s in setups}
    lines = ["| seconds | " + " | ".join(label(s, vers[s]) for s in setups) + " |", "|---|" + "---|" * len(setups)]
    for row in times[setups[0]]:
        lines.append(f"| {row} | " + " | ".join(cell(times[s][row]) for s in setups) + " |")
    lines += [
        "",
        "Setups: " + "; ".join(f"`{s.python}` with `{s.checkout or REPO}`: {json.dumps(vers[s])}" for s in setups),
    ]
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", nargs="+", default=[sys.executable], help="interpreters to compare")
    ap.add_argument(
        "--checkout",
        nargs="+",
        type=Path,
        help="checkouts of the repository to compare (`git worktree add DIR COMMIT`), each with every interpreter",
    )
    ap.add_argument("--runs", type=int, default=7, help="new processes a row and setup")
    ap.add_argument("--fit", action="store_true", help="add a new process's import and first fit (d = 5, J = 5)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a child process counts as hung")
    ap.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = ap.parse_args(argv)
    checkouts = [c.resolve() for c in args.checkout] if args.checkout else [None]
    setups = [Setup(p, c) for c in checkouts for p in args.python]
    times = measure(setups, args.runs, args.fit, args.timeout)
    cmd = "python -m benchmarks.import_time " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = [f"`{cmd}`", "", describe(), "", *table(times, setups)]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
