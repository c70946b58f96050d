"""Seeded results of every method through the public API, hashed: a check that a refactoring changed nothing.

    python -m benchmarks.bit_identical --out docs/results/bit_identical.json           # record
    python -m benchmarks.bit_identical --compare docs/results/bit_identical.json       # check

Fits each registered method (``normalx-nuts``, ``normalx-clt``, ``normalx``, ``fixeds``, ``fast``,
``bs``, ``adassp``) on one simulated release (d = 3, J = 3, n = 3000, eps = 1, fixed seeds) and
hashes the data variables of every ``InferenceData`` group (SHA-256, first 16 hex digits). The
hashes depend on the machine's floating point (XLA's CPU code generation), so compare on the
machine that recorded them; the recorded file names it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from typing import Any

import numpy as np

import bayes_dpreg as bd
from lab.machine import describe

KW: dict[str, Any] = dict(num_samples=200, num_warmup=200, num_chains=2, seed=3)


def digest(idata: Any) -> dict[str, str]:
    """Per group, a hash of its data variables' names and bytes (in name order)."""
    out = {}
    for g in idata.groups():
        h = hashlib.sha256()
        for v in sorted(idata[g].data_vars):
            h.update(v.encode())
            h.update(np.ascontiguousarray(idata[g][v].values).tobytes())
        out[g] = h.hexdigest()[:16]
    return out


def fits() -> dict[str, dict[str, str]]:
    sim = bd.simulate(n=3000, d=3, seed=1)
    parts = bd.split_parties(sim.X, sim.y, 3)
    bounds = dict(x_bound=float(np.abs(sim.X).max()), y_bound=float(np.abs(sim.y).max()))
    rel = lambda fn, s0: [fn(X, y, epsilon=1.0, delta=1e-5, **bounds, seed=s0 + j) for j, (X, y) in enumerate(parts)]
    ssp = rel(bd.release, 10)
    res = {m: digest(bd.fit(ssp, method=m, **KW)) for m in ("normalx-nuts", "normalx-clt", "normalx", "fixeds")}
    res["fast"] = digest(bd.fit(ssp, method="fast", num_samples=200, num_chains=2, seed=3))
    res["bs"] = digest(bd.fit(rel(bd.release_bs, 20), method="bs", **KW))
    res["adassp"] = digest(bd.fit(rel(bd.release_adassp, 30), method="adassp", num_chains=2, seed=3))
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the hashes (and the machine) to this JSON file")
    ap.add_argument("--compare", help="compare with the hashes in this JSON file; exit 1 on a difference")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    res = fits()
    if args.out:
        doc = {"machine": describe("jax"), "hashes": res}
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.compare:
        with open(args.compare) as f:
            ref = json.load(f)["hashes"]
        groups = {(m, g) for r in (ref, res) for m in r for g in r[m]}
        diff = [f"{m}.{g}" for m, g in sorted(groups) if ref.get(m, {}).get(g) != res.get(m, {}).get(g)]
        print("identical" if not diff else "differ: " + ", ".join(diff))
        return 1 if diff else 0
    print(json.dumps(res, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
