"""The default method against issue 31's criteria, cell by cell (``docs/results/coverage/criteria.md``).

    python -m studies.criteria [--dir DIR [DIR ...]] [--ref-dir docs/results/coverage]
                               [--default normalx-clt] [--summary] [--since COMMIT] [--variant NAME]
                               [--oracle-variant NAME] [--own-prior-variant NAME]

Reads the per-replication rows ``{suite}_replications.csv`` of ``studies/coverage.py`` for the
``correlated``, ``paper``, ``small``, ``tiny`` and ``real`` suites from ``--dir`` (the default method's rows:
``--default``'s, in the ``tiny`` suite ``normalx-nuts``', ``fit``'s method for its small parties;
and oracle rows where there are) and ``--ref-dir`` (``fixeds``' and ``normalx-nuts``' oracle rows of
the same seeded releases). The ratios of RMSE are *paired*: over the replications that both
methods fitted, so that the two errors share the data and the release noise.

Criteria (issue 31), per cell: 90% coverage >= 0.87 and 50% >= 0.42; where the truth is drawn from
the fit's own prior (``small`` cells and ``-matched-`` real cells), 90% coverage <= 0.95 as well; RMSE
of the posterior mean <= 1.25 times the oracle's (the same sampler given the generating ``Sigma_x``
prior; simulated cells) and <= 1.1 times ``fixeds``' (real-feature cells); fits with a divergent
transition <= 5%; fits with R-hat > 1.01 <= 2%; at least 100 replications.

``--variant NAME`` reads, in the directories of ``--dir`` that ``studies/paper_priors.py`` wrote
(``paper_priors_replications.csv``), the default method's rows fitted with that prior variant
(``eta1``: the separation prior with LKJ(1) correlations, the default since it was measured there),
and, as the oracle's (``oracle-clt``), its rows of the variant ``sigma_x`` (the generating ``Sigma_x``
prior, :data:`ORACLE_VARIANT`) where it has them, or of ``--oracle-variant NAME`` (``sigma_x_b10``: the
generating ``Sigma_x`` prior with the default's ``sigma_y^2`` prior since 2026-12-06, for ``--variant
sigma2_b10``); with ``--own-prior-variant NAME``, in the cells fitted with a prior of their own (the small
suite, the real suite's matched cells: :func:`studies.coverage.own_prior`), whose fits a change of the
default leaves, the rows of that variant instead.

``--since COMMIT`` reads only the default method's rows added after ``COMMIT`` (those its CSV files
did not hold then): the replications a later version of the sampler made, where the CSV files
continue the same seeded cells across versions.
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import subprocess
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bayes_dpreg.samplers import SMALL_PARTY_METHOD
from lab.paths import REPO
from lab.rows import read_rows
from studies.coverage import _num, cells, own_prior

SUITES = ("correlated", "paper", "small", "tiny", "real")
# the suites whose parties are so small that fit takes another method than --default's (studies.coverage's
# tiny suite: below max(100, 30 d) rows, normalx-nuts; tests/test_paper_priors.py checks that fit does)
SUITE_DEFAULT = {"tiny": SMALL_PARTY_METHOD}
MIN_90, MIN_50, MAX_90_MATCHED = 0.87, 0.42, 0.95
MAX_ORACLE, MAX_FIXEDS = 1.25, 1.1  # RMSE ratios: simulated cells to the oracle, real-feature cells to fixeds
MAX_DIVERGENT, MAX_RHAT = 0.05, 0.02  # fractions of fits
MIN_REPS = 100
ORACLES = {"normalx-clt": ("oracle-clt", "oracle"), "normalx-nuts": ("oracle",)}
ORACLE_VARIANT = "sigma_x"  # studies.paper_priors' variant with the generating Sigma_x prior: the oracle


class Variant(NamedTuple):
    """Which rows of a ``studies.paper_priors`` directory are the default's (``--variant``): those of the
    prior variant ``name``, or ``own`` in the cells fitted with a prior of their own (:func:`own_prior`;
    ``None``: ``name`` there too), and whose are the oracle's: those of ``oracle``."""

    name: str
    oracle: str = ORACLE_VARIANT
    own: str | None = None

    def flags(self) -> str:
        """The command-line flags that select these rows."""
        out = f" --variant {self.name}"
        out += f" --oracle-variant {self.oracle}" if self.oracle != ORACLE_VARIANT else ""
        return out + (f" --own-prior-variant {self.own}" if self.own else "")


def _by_rep(rows: list[dict], method: str) -> dict[tuple[str, int], dict]:
    return {(r["cell"], int(r["rep"])): r for r in rows if r["method"] == method and not r.get("error")}


def paired_errors(
    a: dict[tuple[str, int], dict], b: dict[tuple[str, int], dict], cell: str
) -> tuple[np.ndarray, np.ndarray]:
    """The squared errors of ``a`` and of ``b`` on the replications of ``cell`` both have, in the same order."""
    keys = [k for k in a if k[0] == cell and k in b]
    ea = np.array([_num(a[k], "sq_error") for k in keys], dtype=float)
    return ea, np.array([_num(b[k], "sq_error") for k in keys], dtype=float)


def paired_ratio(a: dict[tuple[str, int], dict], b: dict[tuple[str, int], dict], cell: str) -> tuple[float, int]:
    """RMSE of ``a`` over RMSE of ``b`` on the replications of ``cell`` both have, and their number."""
    ea, eb = paired_errors(a, b, cell)
    if not ea.size:
        return math.nan, 0
    return float(np.sqrt(ea.mean() / eb.mean())), int(ea.size)


RATIO_LEVEL, RATIO_DRAWS = 0.9, 4000  # the RMSE ratio's bootstrap interval


def ratio_interval(ea: np.ndarray, eb: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """A :data:`RATIO_LEVEL` percentile-bootstrap interval of ``sqrt(mean(ea) / mean(eb))``, the replications
    resampled in pairs (:data:`RATIO_DRAWS` resamples, seeded): how far a few replications with large errors,
    which make most of a cell's squared error, move the ratio."""
    idx = np.random.default_rng(seed).integers(0, ea.size, size=(RATIO_DRAWS, ea.size))
    ratios = np.sqrt(ea[idx].mean(1) / eb[idx].mean(1))
    tail = (1.0 - RATIO_LEVEL) / 2.0
    lo, hi = np.quantile(ratios, [tail, 1.0 - tail])
    return float(lo), float(hi)


def rows_at(path: Path, commit: str) -> list[dict]:
    """The rows of the CSV file ``path`` as committed at ``commit`` (none where it did not exist)."""
    rel = path.resolve().relative_to(REPO)
    out = subprocess.run(["git", "show", f"{commit}:{rel}"], cwd=REPO, capture_output=True, text=True)
    return list(csv.DictReader(io.StringIO(out.stdout))) if out.returncode == 0 else []


def _sources(
    suite: str,
    dirs: list[Path],
    ref_dir: Path,
    variant: str | Variant | None = None,
) -> list[tuple[Path, list[dict]]]:
    """``(csv path, rows)`` of ``suite`` in ``dirs`` and then ``ref_dir``, in that order of precedence.
    With ``variant`` (:class:`Variant`; a name: ``Variant(name)``), a directory of ``studies.paper_priors``
    (``paper_priors_replications.csv``) gives its rows of that prior variant (of this suite's cells) instead,
    in the cells fitted with a prior of their own (:func:`own_prior`) those of ``variant.own`` where given, and
    its rows of ``variant.oracle`` as the oracle's (method ``oracle-clt``)."""
    paths = [d / f"{suite}_replications.csv" for d in dirs]
    ref = ref_dir / f"{suite}_replications.csv"
    if ref.resolve() not in [p.resolve() for p in paths]:
        paths.append(ref)
    v = Variant(variant) if isinstance(variant, str) else variant
    read = {c["id"]: v.own if v.own is not None and own_prior(c) else v.name for c in cells(suite)} if v else {}
    out = []
    for p in paths:
        pp = p.parent / "paper_priors_replications.csv"
        if v is not None and p.parent in dirs and pp.exists():
            rows = [r for r in read_rows(pp) if r["cell"] in read]
            oracles = [r | {"method": "oracle-clt"} for r in rows if r.get("variant") == v.oracle]
            out.append((pp, [r for r in rows if r.get("variant") == read[r["cell"]]] + oracles))
        else:
            out.append((p, read_rows(p)))
    return out


def _as_list(dirs: Path | list[Path]) -> list[Path]:
    return [dirs] if isinstance(dirs, Path) else list(dirs)


def _first(sources: list[tuple[Path, dict]], cell: str) -> tuple[Path | None, dict]:
    """The first source holding replications of ``cell``, and those replications."""
    for path, by in sources:
        mine = {k: v for k, v in by.items() if k[0] == cell}
        if mine:
            return path, mine
    return None, {}


def cell_rows(
    suite: str,
    dirs: Path | list[Path],
    ref_dir: Path,
    default: str,
    since: str | None = None,
    variant: str | Variant | None = None,
) -> list[dict]:
    """One dict per cell of ``suite``: the default's coverage and the criteria that fail. Each cell's
    rows come from the first of ``dirs`` that has the default's rows of it (with ``since``, those added
    after that commit); its reference (``fixeds``, the oracle) from the same directory if it has one,
    else the first other source (``dirs``, then ``ref_dir``) that has, except in cells with private
    quantile bounds, whose releases no seed reproduces, so only rows of the same run pair. With
    ``variant``, the prior variant's rows of ``studies.paper_priors`` directories and ``oracle``'s as the
    oracle's (:func:`_sources`)."""
    if since is not None and variant is not None:
        raise ValueError("--since and --variant do not combine")
    default = SUITE_DEFAULT.get(suite, default)
    sources = _sources(suite, _as_list(dirs), ref_dir, variant)
    mine_by = []
    for path, rows in sources[: len(_as_list(dirs))]:  # the default's rows from --dir only, never --ref-dir
        by = _by_rep(rows, default)
        if since is not None:
            old = _by_rep(rows_at(path, since), default)
            by = {k: v for k, v in by.items() if k not in old}
        mine_by.append((path, by))
    out = []
    for c in cells(suite):
        home, mine = _first(mine_by, c["id"])
        if not mine:
            continue
        order = sorted(sources, key=lambda s: s[0] != home)  # the default's own directory first
        if c.get("bounds") == "quantile":  # private bounds no seed reproduces: another run saw other releases
            order = [s for s in sources if s[0] == home]
        rs = list(mine.values())
        n = len(rs)
        c90, c50 = (np.array([_num(r, k) for r in rs]) for k in ("cover90", "cover50"))
        matched = c.get("prior") == "matched"
        refs = ("fixeds",) if suite == "real" else () if matched else ORACLES.get(default, ())
        limit, label = (MAX_FIXEDS, "fixeds") if suite == "real" else (MAX_ORACLE, "oracle")
        ref: dict[tuple[str, int], dict] = {}
        for method in refs:  # where the fit's prior generated the truth (matched) the default is its own oracle
            ref = ref or _first([(p, _by_rep(rows, method)) for p, rows in order], c["id"])[1]
        ratio, paired = paired_ratio(mine, ref, c["id"]) if ref else (math.nan, 0)
        interval = ratio_interval(*paired_errors(mine, ref, c["id"])) if paired else (math.nan, math.nan)
        div = float(np.mean([_num(r, "divergences") > 0 for r in rs]))
        rhat = float(np.mean([_num(r, "max_rhat") > 1.01 for r in rs]))
        fails = []
        se90 = c90.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
        se50 = c50.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
        if c90.mean() < MIN_90:
            fails.append("90%" + (" (> 2 se)" if c90.mean() + 2 * se90 < MIN_90 else ""))
        if c50.mean() < MIN_50:
            fails.append("50%" + (" (> 2 se)" if c50.mean() + 2 * se50 < MIN_50 else ""))
        if matched and c90.mean() > MAX_90_MATCHED:
            fails.append("90% above 0.95")
        if paired and ratio > limit:
            fails.append(f"RMSE / {label}" + (" (interval above)" if interval[0] > limit else ""))
        if div > MAX_DIVERGENT:
            fails.append("divergences")
        if rhat > MAX_RHAT:
            fails.append("R-hat")
        if n < MIN_REPS:
            fails.append("reps")
        out.append(
            dict(
                cell=c["id"],
                reps=n,
                c90=c90.mean(),
                c90_se=se90,
                c50=c50.mean(),
                c50_se=se50,
                ratio=ratio,
                ratio_interval=interval,
                paired=paired,
                label=label if paired else "",
                source=home.parent.name if home else "",
                divergent=div,
                rhat=rhat,
                fails=fails,
            )
        )
    return out


def table(
    dirs: Path | list[Path],
    ref_dir: Path,
    default: str,
    since: str | None = None,
    variant: str | Variant | None = None,
) -> str:
    dirs = _as_list(dirs)
    many = len(dirs) > 1
    lines = [
        "| cell | reps | 90% | 50% | RMSE ratio (paired reps; 90% bootstrap interval) | fits with a divergence | "
        "R-hat > 1.01 | fails |" + (" rows |" if many else ""),
        "|---" * (9 if many else 8) + "|",
    ]
    for suite in SUITES:
        for r in cell_rows(suite, dirs, ref_dir, default, since, variant):
            lo, hi = r["ratio_interval"]
            ratio = f"{r['ratio']:.2f} to {r['label']} ({r['paired']}; {lo:.2f}-{hi:.2f})" if r["paired"] else "-"
            lines.append(
                f"| {r['cell']} | {r['reps']} | {r['c90']:.3f} ± {r['c90_se']:.3f} | {r['c50']:.3f} ± "
                f"{r['c50_se']:.3f} | {ratio} | {r['divergent']:.3f} | {r['rhat']:.3f} | "
                f"{', '.join(r['fails']) or '-'} |" + (f" `{r['source']}` |" if many else "")
            )
    return "\n".join(lines)


def summary(
    dirs: Path | list[Path],
    ref_dir: Path,
    default: str,
    since: str | None = None,
    variant: str | Variant | None = None,
) -> str:
    """Per suite: ranges over cells, and the cells that miss a coverage criterion (the README's table)."""
    lines = [
        "| suite (cells) | replications a cell | 90% coverage | 50% coverage | fits with a divergence | "
        "R-hat > 1.01 | cells below 0.87 (90%) or 0.42 (50%) |",
        "|---" * 7 + "|",
    ]
    rng = lambda v, nd=2: f"{min(v):.{nd}f}-{max(v):.{nd}f}"
    for suite in SUITES:
        rs = cell_rows(suite, dirs, ref_dir, default, since, variant)
        if not rs:
            continue
        low = sum(any(f.startswith(("90%", "50%")) and "above" not in f for f in r["fails"]) for r in rs)
        far = sum(any("2 se" in f for f in r["fails"]) for r in rs)
        lines.append(
            f"| {suite} ({len(rs)}) | {rng([r['reps'] for r in rs], 0)} | {rng([r['c90'] for r in rs])} | "
            f"{rng([r['c50'] for r in rs])} | {rng([r['divergent'] for r in rs])} | {rng([r['rhat'] for r in rs])} | "
            f"{low} of {len(rs)} ({far} by more than 2 se) |"
        )
    return "\n".join(lines)


def header(dirs: list[Path], ref_dir: Path, default: str, variant: Variant | None = None) -> str:
    rel = lambda p: p.resolve().relative_to(REPO) if p.resolve().is_relative_to(REPO) else p
    many = (
        " Each cell's rows come from the first directory of `--dir` that has them (column `rows`)."
        if len(dirs) > 1
        else ""
    )
    return (
        f"# `{default}` against issue 31's criteria, cell by cell\n\n"
        + (
            f"The `tiny` suite's rows are `{SUITE_DEFAULT['tiny']}`'s, `fit`'s method for its parties (below "
            "`max(100, 30 d)` rows).\n\n"
            if any((d / "tiny_replications.csv").exists() for d in dirs)
            else ""
        )
        + f"command: `python -m studies.criteria --dir {' '.join(str(rel(d)) for d in dirs)} --ref-dir {rel(ref_dir)} "
        f"--default {default}" + (variant.flags() if variant else "") + "`\n\n"
        f"Per cell: 90% coverage >= {MIN_90} and 50% >= {MIN_50} (and 90% <= {MAX_90_MATCHED} where the truth is "
        f"drawn from the fit's prior: `small`, `-matched-`); RMSE of the posterior mean <= {MAX_ORACLE} times the "
        f"oracle's (simulated cells; the same sampler given the generating `Sigma_x` prior) or <= {MAX_FIXEDS} "
        f"times `fixeds`' (real features), paired over the replications both fitted; fits with a divergent "
        f"transition <= {MAX_DIVERGENT:.0%}; R-hat > 1.01 in <= {MAX_RHAT:.0%} of fits; >= {MIN_REPS} replications. "
        "Coverage ± its Monte-Carlo standard error (the sd over replications / sqrt(reps)); `(> 2 se)`: below "
        "the criterion by more than two standard errors. The RMSE ratio's interval: a 90% percentile bootstrap "
        "over the paired replications; `(interval above)`: all of it above the criterion." + many + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--dir",
        nargs="+",
        default=[str(REPO / "docs" / "results" / "coverage" / "clt")],
        help="directories of rows, in order of precedence per cell",
    )
    ap.add_argument("--ref-dir", default=str(REPO / "docs" / "results" / "coverage"))
    ap.add_argument("--default", default="normalx-clt")
    ap.add_argument("--summary", action="store_true", help="print only the per-suite ranges (the README's table)")
    ap.add_argument("--since", default=None, help="only the default's rows added after this commit")
    ap.add_argument(
        "--variant", default=None, help="in studies.paper_priors directories, the rows of this prior variant"
    )
    ap.add_argument(
        "--oracle-variant",
        default=ORACLE_VARIANT,
        help="with --variant, the prior variant whose rows are the oracle's (default: sigma_x)",
    )
    ap.add_argument(
        "--own-prior-variant",
        default=None,
        help="with --variant, the variant read instead in the cells fitted with a prior of their own (small, matched)",
    )
    args = ap.parse_args(argv)
    d, r = [Path(x) for x in args.dir], Path(args.ref_dir)
    v = Variant(args.variant, args.oracle_variant, args.own_prior_variant) if args.variant else None
    if args.summary:
        print(summary(d, r, args.default, args.since, v))
        return
    print(header(d, r, args.default, v))
    print(table(d, r, args.default, args.since, v))


if __name__ == "__main__":
    main()
