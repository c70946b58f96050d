"""How far ``normalx-nuts`` centres the Bartlett entries below the diagonal, measured:
``python -m benchmarks.nuts_centring [--off-min 0 0.5 1.01] [--cases small mid d5small d2big d5big] [--reps 12]``.

``normalx_nuts.reference`` centres each Bartlett coordinate of ``S_j`` by ``omega = 1 / (1 + rho)``,
``rho`` the release noise over the Wishart spread of the entry; an entry below the diagonal is centred
only where ``omega >= OFF_DIAGONAL_CENTRING_MIN`` (0.5: ``rho <= 1``). ``--off-min`` sets that constant
for a run: ``0`` centres every entry as before 2026-12-07, ``1.01`` none below the diagonal. Each value
runs in a new process with the compilation cache off (an exported program is keyed by the package's
source, not by a constant patched at run time).

Each case draws ``--reps`` truths from the default prior made concrete at its scale and simulates the
parties' releases (:func:`studies.sbc_fit.simulate`), then fits them with ``method="normalx-nuts"`` and
that prior, everything else at ``fit``'s defaults (4 chains of 500 warm-up iterations and 500 draws).
Printed per case: fits with a divergence, divergences in all, mean leapfrog steps an iteration, the
median over fits of the smallest bulk ESS of ``theta`` and ``sigma2``, fits with R-hat above 1.01, seconds a
fit (after one uncounted fit that compiles) and the median ESS over those seconds. ``normalx-nuts`` is
``fit``'s default for the first three cases' sizes (parties smaller than ``max(100, 30 d)`` rows) and
is chosen by name for the last two.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings

from lab.machine import describe
from lab.paths import child_env

CASES = {  # name -> (d, J, n_j, epsilon); bounds 3 and 3, delta 1e-5 (studies.sbc_fit.Case)
    "small": (2, 3, 50, 1.0),
    "mid": (3, 3, 90, 4.0),
    "d5small": (5, 4, 140, 2.0),
    "d2big": (2, 3, 3000, 1.0),
    "d5big": (5, 5, 20000, 1.0),
}
BIG_REPS = 6  # d5big: a fit takes 10-50 s


def measure(off_min: float, names: list[str], reps: int, seed: int) -> list[dict]:
    """In this process: the rows of ``names`` with ``OFF_DIAGONAL_CENTRING_MIN = off_min``."""
    import jax
    import numpy as np

    import bayes_dpreg as bd
    from bayes_dpreg.samplers import normalx_nuts as nn
    from studies.sbc_fit import Case, default_prior, simulate

    nn.OFF_DIAGONAL_CENTRING_MIN = off_min
    rows = []
    for name in names:
        d, J, n, eps = CASES[name]
        case = Case(d, J, n, "normalx-nuts", epsilon=eps)
        R = min(reps, BIG_REPS) if name == "d5big" else reps
        _, releases = simulate(case, jax.random.fold_in(jax.random.key(seed), d * 1000 + J), R)
        prior = default_prior(case)
        fit = lambda stats, s, prior=prior: bd.fit(stats, method="normalx-nuts", prior=prior, seed=s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fits' own warnings: what they report is measured
            fit(releases[0], 10_000)  # compiles
            start = time.perf_counter()
            fits = [fit(stats, r) for r, stats in enumerate(releases)]
            seconds = (time.perf_counter() - start) / R
        div = [int(f.sample_stats["diverging"].values.sum()) for f in fits]
        ess = float(np.median([f.posterior.attrs["min_ess_bulk"] for f in fits]))
        rows.append({
            "case": name, "d": d, "J": J, "n": n, "eps": eps, "reps": R, "divergent_fits": sum(v > 0 for v in div),
            "divergences": sum(div), "steps": float(np.mean([f.sample_stats["n_steps"].values.mean() for f in fits])),
            "ess": ess, "rhat": sum(f.posterior.attrs["max_rhat"] > 1.01 for f in fits), "seconds": seconds,
        })  # fmt: skip
    return rows


def table(results: dict[float, list[dict]]) -> str:
    """Markdown rows, one per case and ``--off-min``."""
    lines = [
        "| case (d, J, n_j, eps) | centred below the diagonal where omega >= | fits with a divergence | divergences "
        "| leapfrog steps | median min ESS | R-hat > 1.01 | s a fit | ESS/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    cases = [r["case"] for r in next(iter(results.values()))]
    for name in cases:
        for off, rows in results.items():
            r = next(x for x in rows if x["case"] == name)
            lines.append(
                f"| {name} ({r['d']}, {r['J']}, {r['n']}, {r['eps']:g}) | {off:g} | {r['divergent_fits']} of "
                f"{r['reps']} | {r['divergences']} | {r['steps']:.1f} | {r['ess']:.0f} | {r['rhat']} | "
                f"{r['seconds']:.2f} | {r['ess'] / r['seconds']:.0f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--off-min", type=float, nargs="+", default=[0.0, 0.5, 1.01])
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--reps", type=int, default=12)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--worker", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help="also write the table to this file")
    args = ap.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(measure(args.worker, args.cases, args.reps, args.seed)))
        return
    env = {**child_env(), "BAYES_DPREG_COMPILATION_CACHE": "0"}
    results = {}
    for off in args.off_min:
        cmd = [sys.executable, "-m", "benchmarks.nuts_centring", "--worker", str(off), "--reps", str(args.reps)]
        cmd += ["--seed", str(args.seed), "--cases", *args.cases]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True, env=env).stdout
        results[off] = json.loads(out.strip().splitlines()[-1])
        print(f"--off-min {off:g}: done", file=sys.stderr, flush=True)
    command = "python -m benchmarks.nuts_centring " + " ".join(argv if argv is not None else sys.argv[1:])
    text = f"`{command.strip()}`\n\n{describe()}\n\n{table(results)}\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
