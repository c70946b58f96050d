"""The speed table of issue 14: every sampler against d and J, one row per (method, d, J).

    python -m benchmarks.speed                      # the full grid (long: see docs/results/speed/README.md)
    python -m benchmarks.speed --quick              # d in {2, 5}, J in {1, 5}, 1/4/64 chains
    python -m benchmarks.speed --dims 5 --parties 5 --methods normalx fixeds --chains 4 --no-fit

Methods: every MCMC method of the sampler registry (``bayes_dpreg.samplers.SAMPLERS``, kind
``"mcmc"``) and the closed form ``fast``. Data: the paper's simulation (``bd.simulate``,
n = 1e5 rows) split among J parties and released with eps = 1, delta = 1e-5, bounds at the
data's maxima, by the release each method needs (``release``, ``release(intercept=True)``,
``release_bs``); the default prior (``Prior()``, autoscaled), as :func:`bayes_dpreg.fit` uses it.

Columns:

* **compile (s)**: the seconds JAX spends tracing, lowering and compiling (its monitoring events
  ``/jax/core/compile/*_duration``) in the first run with the smallest chain count (1), i.e. of the
  sampler in a fresh process; with more chains a vectorised kernel compiles again, about as long;
  NUTS, run chain by chain, does not. (Tables made before this was measured so took the first
  run's wall time minus the second's, which a long NUTS run's own variation could swamp.)
* **us / chain-iteration at C chains**: wall time of a run after compilation over
  ``C x iterations`` (the CSV also has the process's CPU time, ``cpu_us_C``, which other
  processes on a busy machine inflate less). Kernel methods run through the package's one chain driver
  (:func:`bayes_dpreg.samplers.run_chains`, compiled ``lax.scan`` chunks, keeping only
  ``theta`` on the host), chains vectorised with ``vmap``; NUTS (``normalx-nuts``,
  ``normalx-intercept``, ``normalx-clt``, ``vectorize=False``) runs its chains through the same compiled
  function, not vectorised ("seq." above 4 chains unless ``--sequential-chains``), one thread per core
  where the kernel declares ``threads`` (all three since commit 8232959; ``normalx-clt`` alone before):
  with XLA's default CPU pool (``--xla-threads default``, as ``fit`` runs) its cost per chain-iteration
  falls with the cores; with one XLA thread it does not. With 1 and 4 chains the run
  is the method's default warm-up and
  draws; with more, ``--budget`` chain-iterations in all (at least one chunk of 100), split
  between warm-up and draws in the same proportion. A timing run
  projected (from fewer chains) to exceed ``--max-seconds`` is skipped ("skip").
* **min bulk ESS/s (4 chains)**: the smallest bulk ESS (ArviZ) over the coefficients of
  ``theta`` of the 4-chain run, divided by its wall time after compilation (warm-up and
  draws). For ``fast`` (exact draws), 4 x 1000 draws over the time of one call.
* **cold fit (s)**: in a new Python process, ``bd.fit(stats, method)`` with its defaults (4
  chains), the first fit (compilation included, no persistent compilation cache);
  **warm fit (s)**: a second ``fit`` in the same process on another data set of the same
  shapes (compiles nothing). With ``--cache``, **cold fit, cache (s)**: the first fit of a
  second process that reuses the persistent compilation cache the first one filled
  (``BAYES_DPREG_COMPILATION_CACHE``). The header gives the median ``import bayes_dpreg`` time.

Each (method, d, J) is timed in its own process, abandoned after ``--cell-timeout`` seconds (fits:
``--fit-timeout``); a method that fails or times out is not run at larger d and J. Every process
runs with one XLA CPU intra-op thread (``bayes_dpreg.configure_threads()``) unless
``--xla-threads default``, and with the compiler options of :func:`bayes_dpreg.runtime.cache.fit_jit` for
the chain driver's programs unless ``--fast-compile off``. ``--device gpu`` runs every process on the GPU
(:func:`bayes_dpreg.select_device`; an error where JAX has none). Writes ``<name>.md`` and ``<name>.csv`` under
``--out`` (``docs/results/speed/``; name ``speed``, or ``speed_quick`` with ``--quick``; ``_gpu`` appended on the
GPU).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.machine import describe
from lab.paths import REPO, child_env

N_ROWS = 100_000
EPSILON, DELTA = 1.0, 1e-5
FULL = dict(dims=[2, 5, 10, 20], parties=[1, 5, 20], chains=[1, 4, 64, 1024])
QUICK = dict(dims=[2, 5], parties=[1, 5], chains=[1, 4, 64])
ESS_CHAINS = 4  # fit's default


def methods() -> list[str]:
    """Every MCMC method of the registry, then ``fast``."""
    from bayes_dpreg.samplers import SAMPLERS

    return [m for m, s in SAMPLERS.items() if s.kind == "mcmc"] + ["fast"]


def releases(method: str, d: int, J: int, seed: int) -> list:
    """The paper's simulation (n = 1e5) split among ``J`` parties, released as ``method`` needs."""
    import numpy as np

    import bayes_dpreg as bd

    sampler = bd.SAMPLERS[method]
    sim = bd.simulate(N_ROWS, d, seed)
    xb, yb = float(np.linalg.norm(sim.X, axis=1).max()), float(np.abs(sim.y).max())
    release: Callable[..., Any] = bd.release
    kw: dict[str, Any] = {}
    if sampler.needs_intercept:
        kw = {"intercept": True}
    elif "ssp" not in sampler.mechanisms:
        release = bd.release_bs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            release(
                X, y, epsilon=EPSILON, delta=DELTA, x_bound=xb, y_bound=yb, seed=np.random.SeedSequence([seed, j]), **kw
            )
            for j, (X, y) in enumerate(bd.split_parties(sim.X, sim.y, J))
        ]


def prepared(method: str, stats: list, sigma_x_prior: str | None = None):
    """``(sampler, stacked statistics, resolved prior)`` exactly as ``fit`` builds them (with
    ``Prior(Sigma_x_prior=sigma_x_prior)`` where given, the default prior otherwise)."""
    from bayes_dpreg.model.prior import Prior, prior_scales
    from bayes_dpreg.posterior.inference import resolve_prior
    from bayes_dpreg.samplers import get
    from bayes_dpreg.stats import stack_stats

    sampler, st = get(method), stack_stats(stats)
    given = None if sigma_x_prior is None else Prior(Sigma_x_prior=sigma_x_prior)
    prior = resolve_prior(given).for_sampler(sampler)
    scales = prior_scales(st)
    pr = prior.resolve_intercept(st.d - 1, scales) if sampler.needs_intercept else prior.resolve(st.d, scales)
    return sampler, st, pr


def min_bulk_ess(theta) -> float:
    import arviz as az

    return float(az.ess(az.from_dict(posterior={"theta": theta}), method="bulk")["theta"].values.min())


_LAST_CPU = [0.0]  # CPU seconds of the last _timed call (this process, all threads)


def _timed(fn, *args, **kw):
    t, c = time.perf_counter(), time.process_time()
    out = fn(*args, **kw)
    _LAST_CPU[0] = time.process_time() - c
    return time.perf_counter() - t, out


def iterations(chains: int, warmup: int, draws: int, budget: int) -> tuple[int, int]:
    """Warm-up and draws of a timing run with ``chains`` chains (see the module docstring)."""
    from bayes_dpreg.samplers.base import CHUNK

    total = warmup + draws
    if chains <= ESS_CHAINS:
        return warmup, draws
    it = min(total, max(CHUNK, budget // chains // CHUNK * CHUNK))
    w = round(it * warmup / total)
    return w, it - w


COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def compile_seconds(fn, *args):
    """``fn(*args)`` and the seconds JAX spent in it tracing, lowering and compiling (its monitoring
    events), however long the computation itself ran."""
    import jax.monitoring

    spent = [0.0]

    def listener(event: str, duration: float, **kw) -> None:
        if event in COMPILE_EVENTS:
            spent[0] += duration

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        out = fn(*args)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    return spent[0], out


def run_kernel(sampler, st, pr, chains: int, warmup: int, draws: int, seed: int):
    """Two runs of ``chains`` chains through the package's driver, with the same seed so that they do the
    same work: (JAX's compile time in the first, wall time of the second, theta)."""
    import jax

    from bayes_dpreg.samplers import run_chains

    settings, _ = sampler.settings({}, st.d, warmup)
    data = sampler.data(st)

    def once(s):
        out, _ = run_chains(
            sampler.kernel,
            data,
            pr,
            settings,
            jax.random.key(s),
            num_chains=chains,
            num_warmup=warmup,
            num_samples=draws,
            keep=("theta",),
        )
        return out["theta"]

    compile_s, _ = compile_seconds(once, seed)
    t2, theta = _timed(once, seed)
    return compile_s, t2, theta


def kernel_rows(method: str, d: int, J: int, args) -> dict:
    """Compile, us per chain-iteration at every chain count and ESS/s of one (method, d, J)."""
    sampler, st, pr = prepared(method, releases(method, d, J, seed=1))
    W = sampler.num_warmup if args.warmup is None else args.warmup
    N = sampler.num_samples if args.draws is None else args.draws
    row: dict = {"method": method, "d": d, "J": J, "warmup": W, "draws": N}
    if sampler.kind == "exact":
        import jax

        call = lambda s: sampler.run(st, pr, jax.random.key(s), ESS_CHAINS, N, 0).posterior["theta"]
        compile_s, _ = compile_seconds(call, 0)
        t2, theta = _timed(call, 0)
        row.update(compile_s=compile_s, ess_bulk=min_bulk_ess(theta), ess_per_s=min_bulk_ess(theta) / t2)
        for c in args.chains:
            row[f"us_{c}"], row[f"note_{c}"] = None, "exact"
        return row
    per_prev = None
    for c in sorted(args.chains):
        w, n = iterations(c, W, N, args.budget)
        sequential = sampler.kernel is not None and not sampler.kernel.vectorize
        row[f"iters_{c}"] = w + n
        if sequential and c > ESS_CHAINS and not args.sequential_chains:
            row[f"us_{c}"], row[f"note_{c}"] = None, "seq."
            continue
        if per_prev is not None and per_prev * c * (w + n) > args.max_seconds:
            row[f"us_{c}"], row[f"note_{c}"] = None, "skip"
            continue
        compile_s, wall, theta = run_kernel(sampler, st, pr, c, w, n, seed=10 * c)
        per_prev = wall / (c * (w + n))
        row[f"us_{c}"] = per_prev * 1e6
        row[f"cpu_us_{c}"] = _LAST_CPU[0] / (c * (w + n)) * 1e6  # the timed (second) run's CPU time
        if "compile_s" not in row:  # the first compilation of this sampler in the process
            row["compile_s"] = compile_s
        if c == ESS_CHAINS:
            row["ess_bulk"] = min_bulk_ess(theta)
            row["ess_per_s"] = row["ess_bulk"] / wall
        print(
            f"  {method} d={d} J={J} chains={c}: {w}+{n} iterations, {row[f'us_{c}']:.1f} us/chain-iter, "
            f"compile {compile_s:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return row


def cell(method: str, d: int, J: int, args, argv: list[str]) -> dict:
    """:func:`kernel_rows` in a new process (own compilation caches, killed after ``--cell-timeout``)."""
    cmd = [sys.executable, "-m", "benchmarks.speed", "--cell", method, str(d), str(J)] + argv
    try:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=args.cell_timeout, env=child_env())
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {args.cell_timeout:.0f} s"}
    if res.returncode != 0:
        return {"error": f"exit {res.returncode}"}
    return json.loads(res.stdout.strip().splitlines()[-1])


CHILD = """
import json, sys, time, warnings
t0 = time.perf_counter()
import bayes_dpreg as bd
t_import = time.perf_counter() - t0
from benchmarks import speed
warnings.simplefilter("ignore")
method, d, J = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = {"import": t_import}
for label, seed in (("cold", 1), ("warm", 2)):
    stats = speed.releases(method, d, J, seed)
    t = time.perf_counter()
    bd.fit(stats, method, seed=seed)
    out[label] = time.perf_counter() - t
print(json.dumps(out))
"""


def fit_child(method: str, d: int, J: int, cache: str | None, timeout: float) -> dict:
    """Cold and warm ``fit`` in a new process (see the module docstring)."""
    env = child_env()  # the child imports benchmarks.speed from any working directory
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["BAYES_DPREG_COMPILATION_CACHE"] = cache or "0"
    try:
        res = subprocess.run(
            [sys.executable, "-c", CHILD, method, str(d), str(J)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {timeout:.0f} s"}
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"rc {res.returncode}"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def fit_rows(method: str, d: int, J: int, args) -> dict:
    row: dict = {}
    if args.cache:
        with tempfile.TemporaryDirectory() as cache:
            a = fit_child(method, d, J, cache, args.fit_timeout)
            b = fit_child(method, d, J, cache, args.fit_timeout)
        row["cold_fit_cache_s"] = b.get("cold")
    else:
        a = fit_child(method, d, J, None, args.fit_timeout)
    row.update(
        cold_fit_s=a.get("cold"), warm_fit_s=a.get("warm"), import_s=a.get("import"), fit_error=a.get("error", "")
    )
    print(
        f"  {method} d={d} J={J}: cold fit {row['cold_fit_s']}, warm fit {row['warm_fit_s']} {row['fit_error']}",
        flush=True,
    )
    return row


def _fmt(v, digits: int = 0) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    return f"{v:.{digits}f}"


def _fmt_s(v) -> str:
    return _fmt(v, 2 if v is not None and v < 1 else 1)


def header(args, argv: list[str]) -> list[str]:
    import jax
    import jaxlib
    import numpyro

    try:
        commit = (
            subprocess.run(
                ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True
            ).stdout.strip()
            or "an unknown commit (not a git checkout)"
        )
    except OSError:
        commit = "an unknown commit"
    import arviz

    from bayes_dpreg.runtime.cache import fit_compiler_options

    return [
        f"command: `{' '.join(['python -m benchmarks.speed', *argv])}`",
        "",
        f"- machine: {describe()}; JAX backend {jax.default_backend()} ({jax.device_count()} device(s))",
        f"- jax {jax.__version__}, jaxlib {jaxlib.__version__}, "
        f"numpyro {numpyro.__version__}, arviz {arviz.__version__}; float64",
        f"- XLA CPU intra-op threads: NPROC={os.environ.get('NPROC', 'unset (XLA default)')}; "
        f"fit's compiler options: {fit_compiler_options() or 'XLA defaults'}",
        f"- bayes_dpreg at {commit}; {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}",
        f"- data: paper's simulation, n = {N_ROWS:,}, eps = {EPSILON:g}, delta = {DELTA:g}; default prior; "
        f"iterations: each method's default warm-up + draws (1 and {ESS_CHAINS} chains), "
        f"{args.budget} chain-iterations beyond",
    ]


def table(rows: list[dict], chains: list[int], fits: bool, cache: bool) -> list[str]:
    cols = ["method", "d", "J", "compile (s)"] + [f"us / chain-iter, {c} chain{'s' * (c > 1)}" for c in chains]
    cols += [f"min bulk ESS/s ({ESS_CHAINS} chains)"] + (["cold fit (s)", "warm fit (s)"] if fits else [])
    cols += ["cold fit, cache (s)"] if fits and cache else []
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [r["method"], str(r["d"]), str(r["J"]), _fmt(r.get("compile_s"), 1)]
        cells += [
            _fmt(r.get(f"us_{c}"), 1 if (r.get(f"us_{c}") or 100) < 10 else 0)
            if r.get(f"us_{c}") is not None
            else r.get(f"note_{c}", "—")
            for c in chains
        ]
        cells += [_fmt(r.get("ess_per_s"))]
        cells += [_fmt_s(r.get("cold_fit_s")), _fmt_s(r.get("warm_fit_s"))] if fits else []
        cells += [_fmt_s(r.get("cold_fit_cache_s"))] if fits and cache else []
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> None:
    from bayes_dpreg.runtime.device import DEVICES

    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="d in {2, 5}, J in {1, 5}, 1/4/64 chains")
    ap.add_argument("--dims", type=int, nargs="+")
    ap.add_argument("--parties", type=int, nargs="+")
    ap.add_argument("--chains", type=int, nargs="+")
    ap.add_argument("--methods", nargs="+", help="default: every MCMC method and fast")
    ap.add_argument("--warmup", type=int, help="warm-up iterations (default: each method's)")
    ap.add_argument("--draws", type=int, help="draws per chain (default: each method's)")
    ap.add_argument("--budget", type=int, default=200_000, help="chain-iterations of a run with more than 4 chains")
    ap.add_argument("--max-seconds", type=float, default=300.0, help="skip a timing run projected to take longer")
    ap.add_argument("--sequential-chains", action="store_true", help="also time NUTS at more than 4 chains")
    ap.add_argument("--no-fit", action="store_true", help="leave out the cold and warm fit columns")
    ap.add_argument("--cache", action="store_true", help="add the cold fit with a filled persistent cache")
    ap.add_argument("--fit-timeout", type=float, default=1800.0, help="seconds before a fit process is abandoned")
    ap.add_argument(
        "--cell-timeout",
        type=float,
        default=1800.0,
        help="seconds before the timing process of one (method, d, J) is abandoned",
    )
    ap.add_argument("--cell", nargs=3, metavar=("METHOD", "D", "J"), help=argparse.SUPPRESS)
    ap.add_argument("--xla-threads", choices=["1", "default"], default="1")
    ap.add_argument(
        "--fast-compile",
        choices=["on", "off"],
        default="on",
        help="off: fit's programs with XLA's default compiler options (BAYES_DPREG_FAST_COMPILE=0)",
    )
    ap.add_argument(
        "--device",
        choices=sorted(DEVICES),
        default="cpu",
        help="where JAX computes (bayes_dpreg.select_device; the timing and fit processes inherit it)",
    )
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "results" / "speed")
    ap.add_argument("--name", help="file name stem (default: speed, or speed_quick with --quick)")
    args = ap.parse_args(argv)
    grid = QUICK if args.quick else FULL
    args.dims, args.parties = args.dims or grid["dims"], args.parties or grid["parties"]
    args.chains = sorted(args.chains or grid["chains"])
    if args.fast_compile == "off":
        os.environ["BAYES_DPREG_FAST_COMPILE"] = "0"  # the timing and fit processes inherit it
    if args.xla_threads == "1":
        from bayes_dpreg import configure_threads

        configure_threads()  # before JAX computes anything; the timing and fit processes inherit it
    from bayes_dpreg import select_device

    try:
        select_device(args.device)  # likewise: JAX_PLATFORMS for this process and its children
    except RuntimeError as exc:
        sys.exit(f"python -m benchmarks.speed: {exc}")
    if args.cell:  # one (method, d, J) in this process: its row as JSON on the last line
        from bayes_dpreg import enable_x64

        enable_x64()  # the timing runs call the chain driver directly
        m, d, J = args.cell[0], int(args.cell[1]), int(args.cell[2])
        warnings.simplefilter("ignore")
        print(json.dumps(kernel_rows(m, d, J, args)))
        return
    args.methods = args.methods or methods()
    name = args.name or ("speed_quick" if args.quick else "speed") + ("_gpu" if args.device == "gpu" else "")

    t_start, load_start = time.perf_counter(), os.getloadavg()[0]
    rows: list[dict] = []
    failed: dict[str, tuple[int, int, str]] = {}
    for d in args.dims:
        for J in args.parties:
            for m in args.methods:
                print(f"{m} d={d} J={J}", flush=True)
                row = {"method": m, "d": d, "J": J}
                small = failed.get(m)
                if small and d >= small[0] and J >= small[1]:
                    row["error"] = f"not run: {small[2]} at d={small[0]}, J={small[1]}"
                else:
                    row.update(cell(m, d, J, args, argv))
                    if not args.no_fit and not row.get("error"):
                        row.update(fit_rows(m, d, J, args))
                    if row.get("error") or row.get("fit_error"):
                        failed.setdefault(m, (d, J, str(row.get("error") or row.get("fit_error"))))
                rows.append(row)
                write(rows, args, argv, name, t_start, load_start, complete=False)
    lines = write(rows, args, argv, name, t_start, load_start, complete=True)
    print("\n".join(lines))
    print(f"wrote {args.out / name}.md and .csv")


def write(
    rows: list[dict], args, argv: list[str], name: str, t_start: float, load_start: float, complete: bool
) -> list[str]:
    """The Markdown and CSV files of the rows so far (rewritten after every row, so that an
    interrupted run leaves what it measured)."""
    wall = time.perf_counter() - t_start
    head = header(args, argv)
    imports = [r["import_s"] for r in rows if r.get("import_s")]
    if imports:
        head.append(f"- `import bayes_dpreg` in the fit processes: median {statistics.median(imports):.1f} s")
    head.append(
        f"- wall time of this run: {wall / 60:.1f} min{'' if complete else ' so far (incomplete)'}; load "
        f"average (1 min) {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
        f"({os.cpu_count()} CPUs: above that, other processes shared them)"
    )
    lines = [
        f"# Speed of the samplers ({name})",
        "",
        *head,
        "",
        *table(rows, args.chains, not args.no_fit, args.cache),
        "",
    ]
    lines += [
        "seq.: NUTS runs its chains one after another (`vectorize=False`): the cost per chain-iteration "
        "is that of 1 chain (normalx-clt: one thread per core, see the XLA threads above). "
        "skip: projected beyond --max-seconds. exact: closed form, no chain. —: not "
        "measured (see below)."
    ]
    lines += [
        f"- {r['method']} d={r['d']} J={r['J']}: {r.get('error') or ''} {r.get('fit_error') or ''}".rstrip()
        for r in rows
        if r.get("error") or r.get("fit_error")
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.md").write_text("\n".join(lines) + "\n")
    fields = ["method", "d", "J", "warmup", "draws", "compile_s"]
    fields += [f"{k}_{c}" for c in args.chains for k in ("us", "cpu_us", "iters", "note")]
    fields += [
        "ess_bulk",
        "ess_per_s",
        "cold_fit_s",
        "warm_fit_s",
        "cold_fit_cache_s",
        "import_s",
        "error",
        "fit_error",
    ]
    with open(args.out / f"{name}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return lines


if __name__ == "__main__":
    main()
