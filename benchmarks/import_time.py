"""What a new Python process pays before and during its first fit: ``python -m benchmarks.import_time``.

Each run is a new process (``python -c``) timing one import with ``time.perf_counter``: ``ml_dtypes``, ``jax``,
``bayes_dpreg``, then ``arviz`` after ``bayes_dpreg`` (what the first fit pays for ArviZ: the library imports
it lazily, when a fit builds its ``InferenceData``). With ``--fit``, a process that imports the library and
fits :mod:`benchmarks.speed`'s d = 5, J = 5 release with the defaults (one uncounted process first fills the
persistent compilation cache): the seconds of the import, of ``fit`` and of the whole.

``--python`` names the interpreters to compare (virtual environments that differ in one package, say); their
runs are interleaved, so that a machine whose speed drifts (a shared one) weighs on each alike. Prints a
Markdown table of median (min-max) seconds over ``--runs`` processes; ``--out`` writes it to a file too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from lab.machine import describe
from lab.paths import child_env

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


def _child(python: str, code: str, timeout: float) -> list[float]:
    out = subprocess.run(
        [python, "-c", code], stdout=subprocess.PIPE, text=True, timeout=timeout, env=child_env(), check=True
    ).stdout
    return [float(v) for v in out.strip().splitlines()[-1].split()]


def versions(python: str) -> dict[str, str]:
    code = VERSIONS % (("ml_dtypes", "jax", "jaxlib", "numpy", "arviz", "matplotlib"),)
    out = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, text=True, check=True, env=child_env()).stdout
    return dict(json.loads(out))


def measure(pythons: list[str], runs: int, fit: bool, timeout: float) -> dict[str, dict[str, list[float]]]:
    """Seconds per interpreter and row, the interpreters' runs interleaved."""
    times: dict[str, dict[str, list[float]]] = {p: {} for p in pythons}
    if fit:
        for python in pythons:
            _child(python, FIT, timeout)
    for _ in range(runs):
        for python in pythons:
            for label, (before, module) in IMPORTS.items():
                code = TIMED_IMPORT.format(before=before, module=module)
                times[python].setdefault(label, []).append(_child(python, code, timeout)[0])
            if fit:
                imp, fitted, whole = _child(python, FIT, timeout)
                for label, v in (("fit: import", imp), ("fit: `fit`", fitted), ("fit: both", whole)):
                    times[python].setdefault(label, []).append(v)
    return times


def table(times: dict[str, dict[str, list[float]]], pythons: list[str]) -> list[str]:
    def cell(v: list[float]) -> str:
        return f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"

    vers = {p: versions(p) for p in pythons}
    heads = [", ".join(f"{k} {v}" for k, v in vers[p].items() if k in ("ml_dtypes", "jax")) for p in pythons]
    lines = ["| seconds | " + " | ".join(heads) + " |", "|---|" + "---|" * len(pythons)]
    for label in times[pythons[0]]:
        lines.append(f"| {label} | " + " | ".join(cell(times[p][label]) for p in pythons) + " |")
    lines += ["", "Interpreters: " + "; ".join(f"`{p}`: {json.dumps(vers[p])}" for p in pythons)]
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", nargs="+", default=[sys.executable], help="interpreters to compare")
    ap.add_argument("--runs", type=int, default=7, help="new processes a row and interpreter")
    ap.add_argument("--fit", action="store_true", help="add a new process's import and first fit (d = 5, J = 5)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a child process counts as hung")
    ap.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = ap.parse_args(argv)
    times = measure(args.python, args.runs, args.fit, args.timeout)
    cmd = "python -m benchmarks.import_time " + " ".join(sys.argv[1:] if argv is None else argv)
    lines = [f"`{cmd}`", "", describe(), "", *table(times, args.python)]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
