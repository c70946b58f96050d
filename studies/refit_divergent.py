"""Refit, with the library as it is now, the fits of a coverage study's replications file that had a divergent
transition, and put the new rows in their place: ``python -m studies.refit_divergent CSV [CSV ...]``.

For a change that alters only the fits that diverged (``run_nuts``' ``retry``: a fit without a divergence
draws what it drew), refitting those rows gives the file the study itself would write now, at a fraction of
its cost. Each row is refitted by the study that wrote it, on the same seeded release and fit seed:
``studies.paper_priors`` (files ``paper_priors_replications.csv``, rows named by ``variant``) or
``studies.coverage`` (``<suite>_replications.csv``, rows named by ``method``; the default ``--sigma2-max``
and ``--theta-scale``, as every file this is used on was written). ``--check N``: also refit the first ``N``
rows without a divergence and fail unless each is as written (the claim that the rest are unchanged).
``--variants`` / ``--methods`` / ``--cells``: only those rows. The file is rewritten atomically once every refit has
ended, with its columns and rows in their order (only the refitted rows differ), and ``refit_divergent.csv``
beside it gets a line a refitted row: the row's key, its divergences, 90% coverage and squared error before
and after, whether the fit ran its chains again (``retried``), the first run's divergences and the target
acceptance its draws were taken at."""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from lab.paths import DATA_DIR
from lab.rows import read_rows, write_rows
from studies import coverage as cov

SEED = 2026  # both studies' default --seed, which every file refitted here was written with
RECORDED = ("retried", "divergences_before_retry", "target_accept_prob")
COMPARED = ("sq_error", "cover90", "cover50", "max_rhat", "divergences")


def _cell(cell_id: str) -> dict[str, Any]:
    for suite in cov.SUITES:
        for c in cov.cells(suite):
            if c["id"] == cell_id:
                return c
    raise SystemExit(f"no suite of studies.coverage has a cell {cell_id!r}")


def refit(row: dict[str, str], data_dir: str) -> dict[str, Any]:
    """The row ``row`` names (cell, replication, variant or method), fitted again by the study that wrote it,
    with :data:`RECORDED` from the fit's attributes."""
    import bayes_dpreg as bd

    seen: list[dict] = []
    fit = bd.fit

    def recording(*args: Any, **kwargs: Any) -> Any:
        idata = fit(*args, **kwargs)
        seen.append(dict(idata.posterior.attrs))
        return idata

    bd.fit = recording
    try:
        cell, rep = _cell(row["cell"]), int(row["rep"])
        if row.get("variant"):
            from studies import paper_priors

            (new,) = paper_priors.run(cell, [rep], (row["variant"],), SEED, data_dir)
        else:
            (new,) = cov.run_chunk(cell, [rep], (row["method"],), SEED, data_dir)
    finally:
        bd.fit = fit
    return new | ({k: seen[-1].get(k, "") for k in RECORDED} if seen else {})


def _refit_all(rows: list[dict[str, str]], data_dir: str, workers: int) -> list[dict[str, Any]]:
    """:func:`refit` of every row, on ``workers`` processes (in this one where ``workers <= 1``)."""
    if workers <= 1:
        return [refit(r, data_dir) for r in rows]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(refit, rows, [data_dir] * len(rows)))


def _key(row: dict[str, Any]) -> tuple[str, int, str]:
    return str(row["cell"]), int(row["rep"]), str(row.get("variant") or row["method"])


def _same(old: dict[str, str], new: dict[str, Any]) -> bool:
    return all(abs(float(old[k]) - float(new[k])) <= 1e-12 * max(1.0, abs(float(old[k]))) for k in COMPARED)


def _logged(path: Path, old: dict[str, str], new: dict[str, Any]) -> dict[str, Any]:
    key = dict(zip(("cell", "rep", "variant_or_method"), _key(old)))
    before = {f"{k}_before": old[k] for k in ("divergences", "cover90", "sq_error")}
    after = {f"{k}_after": new[k] for k in ("divergences", "cover90", "sq_error")}
    return {"file": path.name, **key, **before, **after, **{k: new.get(k, "") for k in RECORDED}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--variants", nargs="+")
    ap.add_argument("--methods", nargs="+")
    ap.add_argument("--cells", nargs="+", help="only these cells' rows")
    ap.add_argument("--check", type=int, default=0, help="also refit this many rows without a divergence")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    args = ap.parse_args(argv)
    from bayes_dpreg import configure_threads

    configure_threads()  # one XLA CPU thread, inherited by the workers, as the studies run
    for path in map(Path, args.csv):
        rows = read_rows(path)
        wanted = [
            r
            for r in rows
            if (args.variants is None or r.get("variant") in args.variants)
            and (args.methods is None or r["method"] in args.methods)
            and (args.cells is None or r["cell"] in args.cells)
            and not r.get("error")
        ]
        diverged = [r for r in wanted if float(r["divergences"] or 0) > 0]
        checks = [r for r in wanted if float(r["divergences"] or 0) == 0][: args.check]
        print(f"{path}: {len(diverged)} of {len(wanted)} rows diverged; refitting them and {len(checks)} others")
        new = _refit_all(diverged + checks, args.data_dir, args.workers)
        changed = [(old, n) for old, n in zip(checks, new[len(diverged) :]) if not _same(old, n)]
        if changed:
            raise SystemExit(f"{len(changed)} rows without a divergence refitted differently: {changed[0]}")
        by_key = {_key(n): n for n in new[: len(diverged)]}
        fields = list(rows[0])
        write_rows(path, [{k: by_key.get(_key(r), r).get(k, "") for k in fields} for r in rows], fields)
        log = path.with_name("refit_divergent.csv")
        write_rows(log, read_rows(log) + [_logged(path, old, n) for old, n in zip(diverged, new)])
        for old, n in zip(diverged, new):
            print(
                f"  {old['cell']} rep {old['rep']} {old.get('variant') or old['method']}: divergences "
                f"{old['divergences']} -> {n['divergences']} (retried {n.get('retried')}, target "
                f"{n.get('target_accept_prob')}), 90% {float(old['cover90']):.3f} -> {float(n['cover90']):.3f}, "
                f"squared error {float(old['sq_error']):.4g} -> {float(n['sq_error']):.4g}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
