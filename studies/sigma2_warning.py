"""Where ``NoiseVariancePriorWarning`` fires, and how the intervals cover there and elsewhere.

    python -m studies.sigma2_warning ROWS.csv [ROWS.csv ...] [--method normalx-clt] [--variant eta1]

Reads per-replication rows of ``studies/coverage.py`` or ``studies/paper_priors.py`` that carry the
columns ``warned_sigma2`` (the fit's rule: ``theta``'s power-scaling sensitivity to the prior of
``sigma_y^2`` at or above 0.05 and its permutation noise level), ``prior_sensitivity_sigma2`` and
``sigma2_prior_contraction`` (posterior over prior sd of ``log sigma_y^2``), and prints a Markdown
row a cell: replications, the share of fits that warned, 90% and 50% coverage of the fits that
warned and of those that did not (each ± its Monte Carlo standard error), the median contraction;
then the same pooled over the cells with one party, and over the rest.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def read(paths: list[Path], method: str, variant: str | None) -> list[dict[str, str]]:
    """The rows of ``method`` (and ``variant`` where the file has variants) that carry the warning's columns."""
    rows = []
    for path in paths:
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                if r["method"] != method or r.get("error") or r.get("warned_sigma2", "") == "":
                    continue
                if variant is not None and r.get("variant", variant) != variant:
                    continue
                rows.append(r)
    return rows


def _coverage(rows: list[dict[str, str]], key: str) -> str:
    if not rows:
        return "-"
    v = [float(r[key]) for r in rows]
    se = statistics.stdev(v) / math.sqrt(len(v)) if len(v) > 1 else float("nan")
    return f"{statistics.fmean(v):.3f} ± {se:.3f} ({len(v)})"


def row(name: str, rows: list[dict[str, str]]) -> str:
    warned = [r for r in rows if int(r["warned_sigma2"])]
    quiet = [r for r in rows if not int(r["warned_sigma2"])]
    contraction = statistics.median(float(r["sigma2_prior_contraction"]) for r in rows)
    return (
        f"| {name} | {len(rows)} | {len(warned) / len(rows):.2f} | {_coverage(warned, 'cover90')} | "
        f"{_coverage(quiet, 'cover90')} | {_coverage(warned, 'cover50')} | {_coverage(quiet, 'cover50')} | "
        f"{contraction:.2f} |"
    )


def table(rows: list[dict[str, str]]) -> str:
    by_cell: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_cell[r["cell"]].append(r)
    out = [
        "| cell | fits | warned | 90%, warned (fits) | 90%, not warned | 50%, warned | 50%, not warned "
        "| median sd(log sigma2) posterior / prior |",
        "|---|---|---|---|---|---|---|---|",
    ]
    out += [row(cell, by_cell[cell]) for cell in by_cell]
    one = [r for r in rows if "-J1-" in r["cell"]]
    rest = [r for r in rows if "-J1-" not in r["cell"]]
    out += [row(f"**{name}**", part) for name, part in (("one party", one), ("more parties", rest)) if part]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", nargs="+", type=Path)
    ap.add_argument("--method", default="normalx-clt")
    ap.add_argument("--variant", default=None, help="paper_priors rows: the variant's fits only")
    args = ap.parse_args(argv)
    rows = read(args.rows, args.method, args.variant)
    if not rows:
        print("no rows with the warning's columns", file=sys.stderr)
        return 1
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
