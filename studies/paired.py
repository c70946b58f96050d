"""Two runs of one method on the same seeded replications, cell by cell, paired.

    python -m studies.paired NEW.csv OLD.csv [--method normalx-clt] [--ref REF.csv --ref-method fixeds]

Reads per-replication rows of ``studies/coverage.py`` (``{suite}_replications.csv``) and, over the
replications of each cell in ``NEW.csv`` that ``OLD.csv`` (and ``--ref``) also hold, prints a Markdown
row: 90% and 50% coverage, RMSE of the posterior mean (with its ratio to the reference method's over
the same replications), how many replications have a larger squared error in ``NEW``, fits with a
divergent transition and with R-hat > 1.01, each as ``new / old``.
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path


def _rows(path: Path, method: str) -> dict[tuple[str, int], dict[str, str]]:
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["method"] == method and not r.get("error")]
    return {(r["cell"], int(r["rep"])): r for r in rows}


def _mean(rows: list[dict[str, str]], key: str) -> float:
    return sum(float(r[key]) for r in rows) / len(rows)


def _rmse(rows: list[dict[str, str]]) -> float:
    return math.sqrt(_mean(rows, "sq_error"))


def _count(rows: list[dict[str, str]], flagged: str) -> int:
    if flagged == "divergences":
        return sum(int(float(r["divergences"] or 0)) > 0 for r in rows)
    return sum(float(r["max_rhat"]) > 1.01 for r in rows)


def table(new: Path, old: Path, method: str, ref: Path | None = None, ref_method: str = "fixeds") -> str:
    a, b = _rows(new, method), _rows(old, method)
    r = _rows(ref, ref_method) if ref is not None else {}
    out = [
        f"| cell | reps | 90% coverage | 50% coverage | RMSE{f' (ratio to `{ref_method}`)' if ref else ''} | "
        "replications with a larger squared error in the first | fits with a divergence | R-hat > 1.01 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cell in sorted({c for c, _ in a}):
        keys = [k for k in sorted(a) if k[0] == cell and k in b and (ref is None or k in r)]
        if not keys:
            continue
        x, y = [a[k] for k in keys], [b[k] for k in keys]
        rmse = f"{_rmse(x):.4f} / {_rmse(y):.4f}"
        if ref is not None:
            z = _rmse([r[k] for k in keys])
            rmse += f" ({_rmse(x) / z:.2f} / {_rmse(y) / z:.2f})"
        worse = sum(float(p["sq_error"]) > float(q["sq_error"]) for p, q in zip(x, y, strict=True))
        out.append(
            f"| {cell} | {len(keys)} | {_mean(x, 'cover90'):.3f} / {_mean(y, 'cover90'):.3f} | "
            f"{_mean(x, 'cover50'):.3f} / {_mean(y, 'cover50'):.3f} | {rmse} | {worse} of {len(keys)} | "
            f"{_count(x, 'divergences')} / {_count(y, 'divergences')} | {_count(x, 'rhat')} / {_count(y, 'rhat')} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("new", type=Path)
    ap.add_argument("old", type=Path)
    ap.add_argument("--method", default="normalx-clt")
    ap.add_argument("--ref", type=Path, default=None)
    ap.add_argument("--ref-method", default="fixeds")
    args = ap.parse_args(argv)
    print(table(args.new, args.old, args.method, args.ref, args.ref_method))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
