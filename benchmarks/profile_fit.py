"""Where a cold ``bd.fit`` spends its time: one fit in this (fresh) process, profiled with cProfile,
on the paper's simulation (the data of ``benchmarks/speed.py``).

    python -m benchmarks.profile_fit                      # normalx-nuts, d = 5, J = 5
    python -m benchmarks.profile_fit --method fixeds --d 2 --J 1 --out docs/results/speed
    python -m benchmarks.profile_fit --method default --d 20 --J 20 --warm --xla-threads default

``--warm`` profiles a warm fit instead: a first fit of another release of the same shapes runs
unprofiled before (its programs compiled, as after any first fit), and the persistent cache is left
as configured. ``--method default``: ``fit``'s own choice for the shapes.

Prints the fit's wall time split into XLA compilation (every ``backend_compile`` call, and how
many), tracing and lowering to XLA, the chain driver's run after compilation, building the
``InferenceData`` (predictive and prior groups) and importing ArviZ, plus the profile's top
entries by cumulative time. cProfile adds some overhead to Python-heavy parts (tracing).
A cold fit means no persistent compilation cache (``BAYES_DPREG_COMPILATION_CACHE=0`` unless
the variable is set: set it to a directory filled by an earlier run to profile a new process's fit
from the cache); the output says which.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
import warnings
from pathlib import Path

from lab.machine import describe

PARTS = {  # label -> (file fragment, function name) in the profile
    "fit (total)": ("bayes_dpreg/posterior/inference.py", "fit"),
    "  chain driver (run_chains)": ("bayes_dpreg/samplers/base.py", "run_chains"),
    "    chunks of iterations (_advance_all; compilation of the step included)": (
        "bayes_dpreg/samplers/base.py",
        "_advance_all",
    ),
    "  Laplace frame (normalx_clt.laplace)": ("bayes_dpreg/samplers/normalx_clt.py", "laplace"),
    "  the fit's checks (run_checks)": ("bayes_dpreg/posterior/diagnostics/__init__.py", "run_checks"),
    "    convergence (R-hat, ESS; also in the chain driver's extend decision)": (
        "bayes_dpreg/samplers/convergence.py",
        "convergence",
    ),
    "    parties' heterogeneity": ("bayes_dpreg/posterior/diagnostics/heterogeneity.py", "check"),
    "    prior sensitivity": ("bayes_dpreg/posterior/diagnostics/prior_sensitivity.py", "check"),
    "    release resolution": ("bayes_dpreg/posterior/diagnostics/resolution.py", "check"),
    "  InferenceData (idata.build)": ("bayes_dpreg/posterior/idata.py", "build"),
    "    prior draws of theta and sigma2 (NumPy)": ("bayes_dpreg/posterior/idata.py", "_prior_theta_sigma2"),
    "    log-likelihood, posterior and prior predictive": ("bayes_dpreg/posterior/idata.py", "_predictive_groups"),
    "  import arviz": ("arviz/__init__.py", "<module>"),
    "XLA compilation (all programs)": ("jax/_src/compiler.py", "backend_compile_and_load"),
    "tracing to jaxpr": ("jax/_src/interpreters/partial_eval.py", "trace_to_jaxpr"),
    "lowering to XLA": ("jax/_src/interpreters/pxla.py", "lower_sharding_computation"),
}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--method", default="normalx-nuts")
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--J", type=int, default=5)
    ap.add_argument(
        "--xla-threads",
        choices=["1", "default"],
        default="1",
        help="XLA's CPU threads: one (NPROC=1, this script's setting before 2026-11-29), or its default pool, "
        "as fit runs (where the default's chains run on one thread a core, NPROC=1 serialises them)",
    )
    ap.add_argument("--warm", action="store_true", help="profile a second fit of the same shapes")
    ap.add_argument("--out", type=Path, default=None, help="also write profile_fit_{method}_d{d}_J{J}[_warm].md here")
    args = ap.parse_args(argv)
    if not args.warm:
        os.environ.setdefault("BAYES_DPREG_COMPILATION_CACHE", "0")
    t_import = time.perf_counter()
    import jax

    import bayes_dpreg as bd

    t_import = time.perf_counter() - t_import
    if args.xla_threads == "1":
        bd.configure_threads()
    from benchmarks import speed

    method = None if args.method == "default" else args.method
    kind_of_release = method or "normalx-clt"  # the release every default takes
    prof = cProfile.Profile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if args.warm:
            bd.fit(speed.releases(kind_of_release, args.d, args.J, 1), method, seed=0)
        stats = speed.releases(kind_of_release, args.d, args.J, 2 if args.warm else 1)
        t = time.perf_counter()
        prof.enable()
        idata = bd.fit(stats, method, seed=0)
        prof.disable()
        wall = time.perf_counter() - t
    stats_ = pstats.Stats(prof)
    found: dict[str, tuple[int, float]] = {}
    for (file, _, func), (_, ncalls, _, cum, _) in stats_.stats.items():  # type: ignore[attr-defined]
        for label, (frag, name) in PARTS.items():
            if file.endswith(frag) and func == name:
                n, c = found.get(label, (0, 0.0))
                # nested calls of the same function count once: keep the largest cumulative time
                found[label] = (n + ncalls, max(c, cum))
    kind = "warm" if args.warm else "cold"
    lines = [
        f"# A {kind} fit, profiled ({idata.posterior.attrs['method']}, d = {args.d}, J = {args.J})",
        "",
        f"command: `python -m benchmarks.profile_fit --method {args.method} --d {args.d} --J {args.J}"
        + (" --warm" if args.warm else "")
        + ("" if args.xla_threads == "1" else f" --xla-threads {args.xla_threads}")
        + "`",
        "",
        f"- machine: {describe()}; "
        f"jax {jax.__version__} ({jax.default_backend()}), bayes_dpreg {bd.__version__}; XLA CPU threads "
        f"NPROC={os.environ.get('NPROC', 'unset')}",
        f"- `import bayes_dpreg` {t_import:.1f} s (before the profile); the fit under cProfile: {wall:.1f} s "
        "(default settings: 4 chains, the method's default warm-up and draws); "
        + ("a second fit of these shapes (another release)" if args.warm else "the first in this process")
        + f"; persistent compilation cache: {_cache_in_use()}",
        "",
        "| part | calls | seconds |",
        "|---|---|---|",
    ]
    lines += [f"| {label} | {found[label][0]} | {found[label][1]:.2f} |" for label in PARTS if label in found]
    text = "\n".join(lines) + "\n"
    print(text)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
    print(buf.getvalue(), file=sys.stderr)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"profile_fit_{args.method}_d{args.d}_J{args.J}{'_warm' if args.warm else ''}.md"
        path.write_text(text)
        print(f"wrote {path}", file=sys.stderr)


def _cache_in_use() -> str:
    """The persistent compilation cache the fits used (``bayes_dpreg.runtime.cache`` read the setting)."""
    from bayes_dpreg.runtime.cache import compilation_cache_dir

    folder = compilation_cache_dir()
    return f"on ({folder})" if folder else "off"


if __name__ == "__main__":
    main()
