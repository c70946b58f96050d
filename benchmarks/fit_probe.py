"""Cold and warm ``fit`` of the default sampler in one process, with a stack dump of every thread
each ``--dump-every`` seconds (to ``<out>/stacks.txt``): tells a slow fit from a hung one.

    python -m benchmarks.fit_probe --device gpu --chains 1 --dump-every 40 --out /tmp/probe

Data as in :mod:`benchmarks.speed` (the paper's simulation, n = 1e5, eps = 1, seeded releases),
d = 5, J = 5 unless ``--dims``/``--parties``, fitted by the sampler ``fit`` chooses for those shapes unless
``--method`` names one (it printed its name first since 2026-12-07, when a probe of "the default" at d = 20,
J = 20 turned out to have fitted ``normalx-clt``, the old ``--method`` default, not ``normalx-pooled``);
``--eta`` fits the default prior with that LKJ concentration (the default's is 1; 2 before 2026-11-28),
``--target-accept`` NUTS's target acceptance, ``--extend`` fit's ``extend`` (0: what the chains' first draws
show, before any extension),
``--max-tree-depth`` NUTS's ``max_tree_depth``, ``--warmup`` the warm-up's iterations, ``--releases`` the
releases' seeds (default 1 2).
Prints the seconds of the first fit (compilation included) and of each later fit on another release of the
same shapes, and for NUTS the leapfrog steps of the kept draws (the warm-up's are not recorded) with the
fit's seconds over them: a comparison of two versions whose chains take different paths; then the draws
a chain (more than asked where ``extend`` ran the chains on), the min bulk ESS and max R-hat of
``theta``, the R-hat and bulk ESS of ``sigma2`` (both over all the draws, extension included), and the fit's warnings.
``docs/results/speed/speed_gpu.md`` quotes it on a lent H200.
"""

from __future__ import annotations

import argparse
import faulthandler
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument(
        "--method",
        default="default",
        help="the sampler (default: fit's own choice for the shapes, bd.samplers.default_method; normalx-clt before "
        "2026-12-07, which is not that choice from d = 20, J = 12 on)",
    )
    ap.add_argument("--dims", type=int, default=5)
    ap.add_argument("--parties", type=int, default=5)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--eta", type=float, help="the default prior with this LKJ concentration (Prior(eta=...))")
    ap.add_argument("--target-accept", type=float, help="NUTS's target acceptance (fit's target_accept_prob)")
    ap.add_argument("--extend", type=int, help="fit's extend (default: the method's; 0: the chains never go on)")
    ap.add_argument("--max-tree-depth", type=int, help="NUTS's max_tree_depth (default: the method's)")
    ap.add_argument("--warmup", type=int, help="warm-up iterations (fit's num_warmup; default: the method's)")
    ap.add_argument(
        "--releases", type=int, nargs="+", default=[1, 2], help="release seeds, fitted in turn (the first compiles)"
    )
    ap.add_argument("--dump-every", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "fit_probe", help="where stacks.txt goes")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "stacks.txt", "w") as stacks:
        faulthandler.dump_traceback_later(args.dump_every, repeat=True, file=stacks)
        try:
            _probe(args)
        finally:
            faulthandler.cancel_dump_traceback_later()


def _probe(args: argparse.Namespace) -> None:
    """The cold and the warm fit, each on its own release of the same shapes."""
    import bayes_dpreg as bd

    bd.select_device(args.device)
    from benchmarks import speed

    method = bd.samplers.default_method(args.dims, args.parties) if args.method == "default" else args.method
    print(f"method {method}", flush=True)
    for i, seed in enumerate(args.releases):
        label = f"{'cold' if i == 0 else 'warm'} (release {seed})"
        stats = speed.releases(method, args.dims, args.parties, seed)
        t = time.perf_counter()
        prior = None if args.eta is None else bd.Prior(eta=args.eta)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            options = {} if args.target_accept is None else {"target_accept_prob": args.target_accept}
            options |= {} if args.extend is None else {"extend": args.extend}
            options |= {} if args.max_tree_depth is None else {"max_tree_depth": args.max_tree_depth}
            options |= {} if args.warmup is None else {"num_warmup": args.warmup}
            idata = bd.fit(stats, method, prior, seed=seed, num_chains=args.chains, **options)
        wall = time.perf_counter() - t
        steps = int(idata.sample_stats["n_steps"].sum()) if "n_steps" in idata.sample_stats else 0
        per_step = f", {steps} leapfrog steps after warm-up ({1e6 * wall / steps:.0f} us a step)" if steps else ""
        print(f"{label} fit: {wall:.1f} s{per_step}; {_mixing(idata, caught)}", flush=True)


def _mixing(idata: Any, caught: list) -> str:
    """Draws a chain, min bulk ESS and max R-hat of ``theta``, divergences (and the retry's), and the fit's warnings
    by category."""
    import arviz as az

    theta = idata.posterior["theta"]
    ess = float(az.ess(theta)["theta"].min())
    tail = float(az.ess(theta, method="tail")["theta"].min())
    rhat = float(az.rhat(theta)["theta"].max())
    kinds = sorted({w.category.__name__ for w in caught})
    draws = theta.sizes["draw"]
    mixing = f"{draws} draws a chain, min bulk / tail ESS of theta {ess:.0f} / {tail:.0f}, max R-hat {rhat:.3f}"
    if "sigma2" in idata.posterior:  # the chain driver's extend decision reads both
        s2 = idata.posterior["sigma2"]
        bulk, tail = float(az.ess(s2)["sigma2"]), float(az.ess(s2, method="tail")["sigma2"])
        mixing += f"; sigma2: R-hat {float(az.rhat(s2)['sigma2']):.3f}, bulk / tail ESS {bulk:.0f} / {tail:.0f}"
    at = idata.posterior.attrs
    if "divergences" in at:  # a fit whose chains diverged ran them again (run_nuts' retry): what each run had
        mixing += f"; divergences {at['divergences']}" + (
            f" (the first run's {at['divergences_before_retry']}, retried)" if at.get("retried") else ""
        )
    return f"{mixing}, warnings: {kinds}"


if __name__ == "__main__":
    main()
