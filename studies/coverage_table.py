"""The README's method table: ranges over the cells of the committed coverage studies.

    python studies/coverage_table.py [--dir docs/results/coverage]

Reads ``coverage_{suite}.csv`` (written by ``studies/coverage.py``) for the ``small``,
``real`` and ``paper`` suites and prints, per group of cells and method, the range over cells of
the 50% and 90% coverage, of the RMSE of the posterior mean relative to ``fixeds`` on
the same replications, the largest fraction of fits with R-hat > 1.01 or a divergent
transition, and the median seconds per fit. Then the 90% coverage of ``fast`` and
``fixeds`` by the noise-to-signal ratio behind their ``NoiseWarning``, and the default
prior's sensitivity to the truth's scale (real-feature cells, ``docs/prior.md``).
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GROUPS = {  # label: (suite, cell-id prefix)
    "small parties (d = 3, J = 3)": ("small", "small-"),
    "power plant (d = 4, J = 5)": ("real", "real-power_plant-"),
    "bike sharing (d = 14, J = 5)": ("real", "real-bike_sharing-"),
    "paper's simulation, collinear (d = 2, 5)": ("paper", "paper-"),
}
METHODS = ("normalx-nuts", "fixeds", "fast", "adassp")


def _f(r: dict, k: str) -> float:
    v = r.get(k, "")
    return float(v) if v not in ("", None) else math.nan


def _range(v: list[float], nd: int = 2) -> str:
    v = [x for x in v if math.isfinite(x)]
    if not v:
        return "-"
    lo, hi = min(v), max(v)
    return f"{lo:.{nd}f}" if f"{lo:.{nd}f}" == f"{hi:.{nd}f}" else f"{lo:.{nd}f}-{hi:.{nd}f}"


def table(directory: Path) -> str:
    lines = ["| data (cells, replications) | method | 90% coverage | 50% coverage | RMSE / fixeds' | "
             "fits with R-hat > 1.01 | fits with a divergence | s / fit |", "|---" * 8 + "|"]
    for label, (suite, prefix) in GROUPS.items():
        path = directory / f"coverage_{suite}.csv"
        if not path.exists():
            continue
        rows = [r for r in csv.DictReader(open(path)) if r["cell"].startswith(prefix)]
        by = {(r["cell"], r["method"]): r for r in rows}
        cells = list(dict.fromkeys(r["cell"] for r in rows))
        reps = sorted({int(by[c, "fixeds"]["reps"]) for c in cells if (c, "fixeds") in by})
        group = f"{label} ({len(cells)}, {'-'.join(map(str, [reps[0], reps[-1]] if len(reps) > 1 else reps))})"
        for m in METHODS:
            rs = [by[c, m] for c in cells if (c, m) in by]
            if not rs:
                continue
            rel = [_f(by[r["cell"], m], "rmse") / _f(by[r["cell"], "fixeds"], "rmse") for r in rs
                   if (r["cell"], "fixeds") in by]
            worst = lambda k: "-" if all(math.isnan(_f(r, k)) for r in rs) else f"{max(_f(r, k) for r in rs):.0%}"
            lines.append(f"| {group} | `{m}` | {_range([_f(r, 'cover90') for r in rs])} | "
                         f"{_range([_f(r, 'cover50') for r in rs])} | {_range(rel)} | {worst('rhat_gt_1.01')} | "
                         f"{worst('divergent_fits')} | {_range([_f(r, 'seconds_median') for r in rs], 1)} |")
            group = ""
    return "\n".join(lines)


def noise_table(directory: Path) -> str:
    """90% coverage of the fixed-S methods by the NoiseWarning's ratio, over every replication."""
    rows = [r for suite in ("small", "real") if (directory / f"{suite}_replications.csv").exists()
            for r in csv.DictReader(open(directory / f"{suite}_replications.csv"))
            if r["method"] in ("fast", "fixeds") and r.get("noise_to_signal") not in ("", None)]
    bins = [(0.0, 0.1), (0.1, 0.3), (0.3, 3.0), (3.0, math.inf), (math.inf, math.inf)]
    lines = ["| noise-to-signal ratio | data sets | `fast` 90% coverage | `fixeds` 90% coverage |", "|---|---|---|---|"]
    for lo, hi in bins:
        inside = (lambda v: math.isinf(v)) if lo == math.inf else (lambda v, lo=lo, hi=hi: lo <= v < hi)
        cov = {m: [_f(r, "cover90") for r in rows if r["method"] == m and inside(_f(r, "noise_to_signal"))]
               for m in ("fast", "fixeds")}
        if cov["fast"]:
            label = "infinite (some S~_j not positive definite)" if lo == math.inf else f"[{lo:g}, {hi:g})"
            lines.append(f"| {label} | {len(cov['fast'])} | " + " | ".join(
                f"{sum(v) / len(v):.3f}" for v in cov.values()) + " |")
    return "\n".join(lines)


def sensitivity_table(directory: Path) -> str:
    """The default prior against the truth's scale: real-feature cells fitted with ``Prior()``."""
    path = directory / "coverage_real.csv"
    if not path.exists():
        return ""
    rows = list(csv.DictReader(open(path)))
    by = {(r["cell"], r["method"]): r for r in rows}
    lines = ["| cell | reps | truth / prior sd | 90% coverage | 50% coverage | RMSE | `fixeds` RMSE | RMSE of 0 |",
             "|---|---|---|---|---|---|---|---|"]
    for cell in dict.fromkeys(r["cell"] for r in rows):
        if "-default-" not in cell or (cell, "normalx-nuts") not in by:
            continue
        r, f = by[cell, "normalx-nuts"], by.get((cell, "fixeds"), {})
        lines.append(f"| {cell.removeprefix('real-')} | {r['reps']} | {_f(r, 'truth_over_prior_sd'):.2f} | "
                     f"{_f(r, 'cover90'):.3f} | {_f(r, 'cover50'):.3f} | {_f(r, 'rmse'):.3f} | {_f(f, 'rmse'):.3f} | "
                     f"{_f(r, 'rmse_prior_mean'):.3f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=str(REPO / "docs" / "results" / "coverage"))
    directory = Path(ap.parse_args().dir)
    print(table(directory))
    print()
    print(noise_table(directory))
    print()
    print(sensitivity_table(directory))


if __name__ == "__main__":
    main()
