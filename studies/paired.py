"""Two runs of one method on the same seeded replications, cell by cell, paired.

    python -m studies.paired NEW.csv OLD.csv [--method normalx-clt] [--ref REF.csv --ref-method fixeds]
        [--variant eta1] [--old-variant eta1] [--cells ID ...]

Reads per-replication rows of ``studies/coverage.py`` (``{suite}_replications.csv``) or of
``studies/paper_priors.py`` (``paper_priors_replications.csv``: ``--variant`` / ``--old-variant``
pick its rows of one prior variant) and, over the replications of each cell in ``NEW.csv`` that
``OLD.csv`` (and ``--ref``) also hold, prints a Markdown row: 90% and 50% coverage, the paired
difference of the 90% coverage with its standard error (the sd of the per-replication differences
/ sqrt(reps)), the median ratio of the 90% intervals' widths, RMSE of the posterior mean (with its
ratio to the reference method's over the same replications), how many replications have a larger
squared error in ``NEW``, fits with a divergent transition and with R-hat > 1.01, each as
``new / old``; a last row pools every cell (of ``--cells`` where given: only those).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from pathlib import Path


def _rows(path: Path, method: str, variant: str | None = None) -> dict[tuple[str, int], dict[str, str]]:
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["method"] == method and not r.get("error")]
    if variant is not None:
        rows = [r for r in rows if r.get("variant") == variant]
    return {(r["cell"], int(r["rep"])): r for r in rows}


def _mean(rows: list[dict[str, str]], key: str) -> float:
    return sum(float(r[key]) for r in rows) / len(rows)


def _rmse(rows: list[dict[str, str]]) -> float:
    return math.sqrt(_mean(rows, "sq_error"))


def _count(rows: list[dict[str, str]], flagged: str) -> int:
    if flagged == "divergences":
        return sum(int(float(r["divergences"] or 0)) > 0 for r in rows)
    return sum(float(r["max_rhat"]) > 1.01 for r in rows)


def _paired(x: list[dict[str, str]], y: list[dict[str, str]], key: str) -> str:
    diff = [float(p[key]) - float(q[key]) for p, q in zip(x, y, strict=True)]
    mean = sum(diff) / len(diff)
    sd = math.sqrt(sum((v - mean) ** 2 for v in diff) / max(1, len(diff) - 1))
    return f"{mean:+.3f} ± {sd / math.sqrt(len(diff)):.3f}"


def _width_ratio(x: list[dict[str, str]], y: list[dict[str, str]]) -> float:
    return statistics.median(float(p["width90"]) / float(q["width90"]) for p, q in zip(x, y, strict=True))


def _row(name: str, x: list, y: list, z: list | None) -> str:
    rmse = f"{_rmse(x):.4f} / {_rmse(y):.4f}"
    if z is not None:
        rmse += f" ({_rmse(x) / _rmse(z):.2f} / {_rmse(y) / _rmse(z):.2f})"
    worse = sum(float(p["sq_error"]) > float(q["sq_error"]) for p, q in zip(x, y, strict=True))
    return (
        f"| {name} | {len(x)} | {_mean(x, 'cover90'):.3f} / {_mean(y, 'cover90'):.3f} | {_paired(x, y, 'cover90')} | "
        f"{_mean(x, 'cover50'):.3f} / {_mean(y, 'cover50'):.3f} | {_width_ratio(x, y):.2f} | {rmse} | "
        f"{worse} of {len(x)} | {_count(x, 'divergences')} / {_count(y, 'divergences')} | "
        f"{_count(x, 'rhat')} / {_count(y, 'rhat')} |"
    )


def table(
    new: Path,
    old: Path,
    method: str,
    ref: Path | None = None,
    ref_method: str = "fixeds",
    variant: str | None = None,
    old_variant: str | None = None,
    cells: list[str] | None = None,
) -> str:
    a, b = _rows(new, method, variant), _rows(old, method, old_variant)
    if cells is not None:
        a = {k: v for k, v in a.items() if k[0] in cells}
    r = _rows(ref, ref_method) if ref is not None else {}
    out = [
        f"| cell | reps | 90% coverage | 90% paired difference | 50% coverage | 90% width ratio | "
        f"RMSE{f' (ratio to `{ref_method}`)' if ref else ''} | "
        "replications with a larger squared error in the first | fits with a divergence | R-hat > 1.01 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    every: list = []
    for cell in sorted({c for c, _ in a}):
        keys = [k for k in sorted(a) if k[0] == cell and k in b and (ref is None or k in r)]
        if keys:
            every += keys
            out.append(_row(cell, [a[k] for k in keys], [b[k] for k in keys], [r[k] for k in keys] if ref else None))
    if every:
        out.append(_row("all", [a[k] for k in every], [b[k] for k in every], [r[k] for k in every] if ref else None))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("new", type=Path)
    ap.add_argument("old", type=Path)
    ap.add_argument("--method", default="normalx-clt")
    ap.add_argument("--ref", type=Path, default=None)
    ap.add_argument("--ref-method", default="fixeds")
    ap.add_argument("--variant", default=None, help="NEW's rows of this prior variant (paper_priors files)")
    ap.add_argument("--old-variant", default=None, help="OLD's rows of this prior variant")
    ap.add_argument("--cells", nargs="+", default=None, help="only these cells (default: every cell of NEW)")
    args = ap.parse_args(argv)
    print(table(args.new, args.old, args.method, args.ref, args.ref_method, args.variant, args.old_variant, args.cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
