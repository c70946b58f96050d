"""Does a shorter run change the default's posterior? Paired fits on the coverage suites' releases.

    python -m studies.warmup --warmup 250 --reps 6 --out docs/results/warmup
    python -m studies.warmup --warmup 250 --draws 250 --extend 3 --base-warmup 250 --reps 6

For each replication of each cell (the releases of ``studies/coverage.py``, the cell's own prior),
the default method is fitted three times on the same release: the baseline (warm-up
``--base-warmup``, ``--base-draws`` draws a chain, ``extend=--base-extend``) with seeds ``rep`` and
``rep + 1000`` (two independent runs of the same sampler: their differences are Monte Carlo error
alone) and the candidate (``--warmup``, ``--draws``, ``--extend``) with seed ``rep``. Coverage depends
on the release only through the posterior, so where the candidate's interval endpoints differ from
the baseline's about as a second baseline run's do, and its 90% intervals are neither narrower nor
wider on average, its coverage is the baseline's within Monte Carlo error. Per fit: seconds,
divergent transitions, largest R-hat, smallest bulk ESS, draws kept a chain (more than asked where
the chains went on); per pair: the root mean square over coefficients of the difference of the
posterior mean and of the 5%, 25%, 75% and 95% quantiles, in baseline posterior sds, and the mean
over coefficients of the ratio of the 90% intervals' widths (candidate over baseline).
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from studies.coverage import DATA_DIR, _releases, cells, replicate

BASE = 500  # the baseline's warm-up, draws a chain and extend: the default's before 2026-11-26
BASE_EXTEND = 1
DEFAULT_CELLS = (
    "paper-d5-J10-eps0.5",
    "corr-iw-d10-J10-n300-eps0.5-quantile",
    "corr-lkj-d10-J3-n3000-eps0.5-max",
    "corr-lkj-d5-J3-n300-eps0.5-quantile",
    "small-n100-eps0.3",
    "real-power_plant-random-matched-tau0.2",
)
QUANTILES = (0.05, 0.25, 0.75, 0.95)


def _summary(idata: Any) -> dict[str, Any]:
    import arviz as az

    theta = idata.posterior["theta"].values
    flat = theta.reshape(-1, theta.shape[-1])
    attrs = idata.posterior.attrs
    return {
        "mean": flat.mean(0),
        "sd": flat.std(0),
        "q": np.quantile(flat, QUANTILES, axis=0),
        "divergences": int(idata.sample_stats["diverging"].values.sum()),
        "max_rhat": float(attrs.get("max_rhat", np.nan)),
        "min_ess_bulk": float(np.min(az.ess(idata, var_names=["theta"])["theta"].values)),
        "draws": int(theta.shape[1]),
    }


def _distance(a: dict, b: dict) -> tuple[float, float]:
    """RMS over coefficients of the mean's and of the quantiles' differences, in ``a``'s sds."""
    mean = np.sqrt(np.mean(((a["mean"] - b["mean"]) / a["sd"]) ** 2))
    quant = np.sqrt(np.mean(((a["q"] - b["q"]) / a["sd"]) ** 2))
    return float(mean), float(quant)


class Setting(NamedTuple):
    """A run of ``fit``: warm-up iterations, draws a chain, ``extend``."""

    warmup: int
    draws: int
    extend: int

    def options(self) -> dict[str, Any]:
        return {"num_warmup": self.warmup, "num_samples": self.draws, "extend": self.extend}


def run(
    cell_ids: list[str], reps: int, candidate: Setting, base: Setting, seed: int, data_dir: str
) -> list[dict[str, Any]]:
    import bayes_dpreg as bd

    by_id = {c["id"]: c for s in ("paper", "correlated", "small", "real") for c in cells(s)}
    rows = []
    for cid in cell_ids:
        cell = by_id[cid]
        for rep in range(reps):
            (X, y, s_noise), _, prior = replicate(cell, rep, seed, data_dir)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stats = _releases(X, y, cell["J"], cell["eps"], s_noise, {"ssp"}, cell.get("bounds", "max"))["ssp"]
                fits = {}
                for label, setting, s in (("base", base, rep), ("base2", base, rep + 1000), ("short", candidate, rep)):
                    t0 = time.perf_counter()
                    idata = bd.fit(stats, prior=prior, seed=s, **setting.options())
                    fits[label] = dict(_summary(idata), seconds=time.perf_counter() - t0)
                    method = idata.posterior.attrs["method"]
            mc_mean, mc_q = _distance(fits["base"], fits["base2"])
            short_mean, short_q = _distance(fits["base"], fits["short"])
            width90 = lambda f: f["q"][-1] - f["q"][0]  # the 95% quantile less the 5% (QUANTILES)
            width = float(np.mean(width90(fits["short"]) / width90(fits["base"])))
            row: dict[str, Any] = dict(cell=cid, rep=rep, method=method, warmup=candidate.warmup)
            row.update(draws=candidate.draws, extend=candidate.extend, base_warmup=base.warmup, base_draws=base.draws)
            row.update(mc_mean=mc_mean, mc_quantiles=mc_q, short_mean=short_mean, short_quantiles=short_q)
            row.update(width_ratio=width)
            for label in ("base", "short"):
                f = fits[label]
                for k in ("seconds", "divergences", "max_rhat", "min_ess_bulk", "draws"):
                    row[f"{label}_{k}"] = f[k]
            rows.append(row)
            print(", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Per cell: medians and maxima of the paired distances, and the two settings' diagnostics."""
    lines = [
        "| cell | fits | distance, 2nd baseline run: mean / quantiles (median; max) | distance, candidate | "
        "90% width, candidate / base (mean) | divergent fits base / candidate | R-hat > 1.01 base / candidate | "
        "min bulk ESS base / candidate (median) | extended base / candidate | seconds base / candidate (median) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cid in dict.fromkeys(r["cell"] for r in rows):
        rs = [r for r in rows if r["cell"] == cid]
        med = {k: float(np.median([r[k] for r in rs])) for k in rs[0] if isinstance(rs[0][k], (int, float))}
        mx = {k: float(np.max([r[k] for r in rs])) for k in med}
        div = [sum(r[f"{s}_divergences"] > 0 for r in rs) for s in ("base", "short")]
        rhat = [sum(r[f"{s}_max_rhat"] > 1.01 for r in rs) for s in ("base", "short")]
        asked = {"base": "base_draws", "short": "draws"}
        ext = [sum(r[f"{s}_draws"] > r[asked[s]] for r in rs) for s in ("base", "short")]
        lines.append(
            f"| {cid} | {len(rs)} | {med['mc_mean']:.3f} / {med['mc_quantiles']:.3f}; {mx['mc_mean']:.3f} / "
            f"{mx['mc_quantiles']:.3f} | {med['short_mean']:.3f} / {med['short_quantiles']:.3f}; "
            f"{mx['short_mean']:.3f} / {mx['short_quantiles']:.3f} | {np.mean([r['width_ratio'] for r in rs]):.3f} | "
            f"{div[0]} / {div[1]} | {rhat[0]} / {rhat[1]} | "
            f"{med['base_min_ess_bulk']:.0f} / {med['short_min_ess_bulk']:.0f} | {ext[0]} / {ext[1]} | "
            f"{med['base_seconds']:.1f} / {med['short_seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warmup", type=int, default=250, help="the candidate's warm-up")
    ap.add_argument("--draws", type=int, default=BASE, help="the candidate's draws a chain")
    ap.add_argument("--extend", type=int, default=BASE_EXTEND, help="the candidate's extend")
    ap.add_argument("--base-warmup", type=int, default=BASE)
    ap.add_argument("--base-draws", type=int, default=BASE)
    ap.add_argument("--base-extend", type=int, default=BASE_EXTEND)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--cells", nargs="+", default=list(DEFAULT_CELLS))
    ap.add_argument("--seed", type=int, default=2026, help="the coverage study's seed (its releases)")
    ap.add_argument("--data-dir", default=str(DATA_DIR))
    ap.add_argument("--out", type=Path, default=None, help="write warmup_{W} (or draws_{N}x{E}).csv and .md here")
    args = ap.parse_args(argv)
    candidate = Setting(args.warmup, args.draws, args.extend)
    base = Setting(args.base_warmup, args.base_draws, args.base_extend)
    rows = run(args.cells, args.reps, candidate, base, args.seed, args.data_dir)
    text = table(rows)
    print(text)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        same_draws = (args.draws, args.extend) == (BASE, BASE_EXTEND)
        name = f"warmup_{args.warmup}" if same_draws else f"draws_{args.draws}x{args.extend}"
        with open(args.out / f"{name}.csv", "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        (args.out / f"{name}.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
