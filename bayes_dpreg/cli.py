"""Command line: ``bayes-dpreg {demo,bounds,release,budget,fit,compare,report,sigma}``.

The paper's experiments are not part of the library: ``python -m paper.reproduce`` in the repository."""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .runtime.entry import public

if TYPE_CHECKING:
    from .privacy.ledger import PrivacyLedger

__all__ = ["main", "build_parser", "LEVEL"]

LEVEL = 0.9  # the package's one interval convention: central (equal-tailed) 90% credible intervals


def _release_all(
    parts,
    *,
    epsilon,
    delta,
    x_bound,
    y_bound,
    seed,
    names=None,
    mechanism="ssp",
    intercept=False,
    ledger=None,
    columns=None,
    bound_quantile=None,
):
    """Release every party's statistics; collect each party's private clipping report."""
    from .privacy.gaussian import ClippingWarning
    from .privacy.mechanisms import release, release_adassp

    stats, notes = [], []
    names = names or [f"party{j + 1}" for j in range(len(parts))]
    seeds = np.random.SeedSequence(seed).spawn(len(parts)) if seed is not None else [None] * len(parts)
    for j, ((Xj, yj), sj) in enumerate(zip(parts, seeds)):
        kw = dict(epsilon=epsilon, delta=delta, x_bound=x_bound, y_bound=y_bound, seed=sj, name=names[j], ledger=ledger)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ClippingWarning)
            if mechanism in ("ssp", "bs"):  # bs: [S, z, y^T y], release(..., yty=True) (release_bs's draws)
                yty = mechanism == "bs"
                stats.append(
                    release(Xj, yj, intercept=intercept, columns=columns, bound_quantile=bound_quantile, yty=yty, **kw)
                )
            elif intercept or bound_quantile is not None:
                raise ValueError(
                    f"--intercept and --bound-quantile are only available for the ssp and bs mechanisms, not "
                    f"{mechanism!r}"
                )
            else:
                stats.append(release_adassp(Xj, yj, columns=columns, **kw))
        notes += [f"  {names[j]}: {w.message}" for w in caught if issubclass(w.category, ClippingWarning)]
        for w in caught:
            if not issubclass(w.category, ClippingWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return stats, notes


def cmd_demo(args: argparse.Namespace) -> int:
    from . import fit
    from .datasets import POWER_PLANT_FEATURES, load_power_plant, split_parties
    from .privacy.noisy_stats import SeededReleaseWarning
    from .report import plot_coefficients

    t0 = time.perf_counter()
    ds = load_power_plant()
    parts = split_parties(ds.X_train, ds.y_train, args.parties)
    print(
        f"bayes-dpreg demo: UCI power plant, {ds.X_train.shape[0]} training rows, d = {ds.X_train.shape[1]}, "
        f"split into J = {args.parties} parties of ~{parts[0][0].shape[0]} rows"
    )
    print(
        f"release: (eps, delta) = ({args.epsilon:g}, {args.delta:g}) per party, declared bounds "
        f"||x|| <= {args.x_bound:g}, |y| <= {args.y_bound:g}, demo noise seed {args.seed} (a seeded release is "
        "reproducible, hence not private: real releases draw from OS entropy)"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededReleaseWarning)
        stats, notes = _release_all(
            parts,
            epsilon=args.epsilon,
            delta=args.delta,
            x_bound=args.x_bound,
            y_bound=args.y_bound,
            seed=args.seed,
            columns=list(POWER_PLANT_FEATURES),
        )
    s0 = stats[0]
    print(
        f"noise: {s0.calibration} calibration, sigma_S = {s0.sigma_S:.4g}, sigma_z = {s0.sigma_z:.4g} "
        f"(entries of S_j are ~{np.trace(parts[0][0].T @ parts[0][0]) / ds.X_train.shape[1]:.0f} on the diagonal)"
    )
    if notes:
        print("clipping (reported to each releasing party only, not released):")
        print("\n".join(notes))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", SeededReleaseWarning)
        idata = fit(stats, method=args.method, seed=args.seed)  # the releases carry the feature names
    ols = np.linalg.lstsq(ds.X_train, ds.y_train, rcond=None)[0]
    print()
    _print_fit(idata, caught, {"OLS (non-private)": ols}, args.level)
    theta_mean = idata.posterior["theta"].mean(("chain", "draw")).values
    mse_dp = float(np.mean((ds.X_test @ theta_mean - ds.y_test) ** 2))
    mse_ols = float(np.mean((ds.X_test @ ols - ds.y_test) ** 2))
    print(
        f"\ntest MSE of the posterior-mean prediction: {mse_dp:.5f} (non-private OLS {mse_ols:.5f}, "
        f"{ds.X_test.shape[0]} test rows)"
    )
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    fig = plot_coefficients(
        idata,
        out / "demo_posterior.png",
        {"OLS (non-private)": ols},
        title=f"power plant, J = {args.parties}, eps = {args.epsilon:g}, method {idata.posterior.attrs['method']}",
        prob=args.level,
    )
    print(f"figure: {fig}")
    print(f"wall time: {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    output = Path(args.output)
    if output.exists() and not args.force:
        raise FileExistsError(f"{output} exists; pass --force to replace it")
    ledger = _open_ledger(args)
    y_col = _y_column(args.y_column)
    name = args.name if args.name is not None else output.stem
    stats, notes = _release_all(
        [(args.data, y_col)],
        epsilon=args.epsilon,
        delta=args.delta,
        x_bound=args.x_bound,
        y_bound=args.y_bound,
        seed=args.seed,
        names=[name],
        mechanism=args.mechanism,
        intercept=args.intercept,
        ledger=ledger,
        columns=args.columns,
        bound_quantile=args.bound_quantile,
    )
    if notes:
        print("clipping (for you only; not written to the file):")
        print("\n".join(notes))
    s = stats[0]
    path = s.save(output, overwrite=args.force)
    print(
        f"wrote {path}: party {s.name!r}, mechanism {s.mechanism}, {s.noise} noise, n = {s.n}, d = {s.d}, "
        f"sigma_S = {s.sigma_S:.4g}, sigma_z = {s.sigma_z:.4g} ({s.calibration}), release id {s.release_id}"
    )
    if ledger is not None:
        sp = ledger.spent()
        print(
            f"ledger {ledger.path}: spent eps = {sp['epsilon_pld']:.4g} at delta = {sp['delta']:g} of the budget "
            f"{ledger.budget}"
        )
    return 0


def _open_ledger(args: argparse.Namespace) -> PrivacyLedger | None:
    if not args.ledger:
        return None
    from .privacy.ledger import PrivacyLedger

    return PrivacyLedger(args.ledger, args.budget_epsilon, args.budget_delta, source=str(args.data))


def _y_column(text: str) -> int | str:
    return int(text) if text.lstrip("-").isdigit() else text


def cmd_bounds(args: argparse.Namespace) -> int:
    from .privacy.bounds import propose_bounds

    ledger = _open_ledger(args)
    pb = propose_bounds(
        args.data,
        _y_column(args.y_column),
        epsilon=args.epsilon,
        quantile=args.quantile,
        x_range=tuple(args.x_range),
        y_range=tuple(args.y_range),
        ledger=ledger,
        name=args.name or "",
        columns=args.columns,
    )
    print(
        f"proposed (eps = {pb.epsilon:g}, quantile {pb.quantile:g}; safe to publish): "
        f"--x-bound {pb.x_bound:.6g} --y-bound {pb.y_bound:.6g} --bound-quantile {pb.quantile:g}"
    )
    print(
        f"for you only: these bounds would clip {100 * pb.x_clipped:.2f}% of the {pb.n_rows} rows' x "
        f"and {100 * pb.y_clipped:.2f}% of their y"
    )
    if ledger is not None:
        print(ledger.table().splitlines()[-1])
    return 0


def cmd_budget(args: argparse.Namespace) -> int:
    from .privacy.ledger import PrivacyLedger

    if not Path(args.ledger).exists():
        raise FileNotFoundError(f"{args.ledger}: no such ledger")
    print(PrivacyLedger(args.ledger).table())
    return 0


def _print_fit(idata, caught, reference=None, level: float = LEVEL) -> None:
    """The posterior table with R-hat/ESS, each diagnostic's summary (``CHECKS``), and the fit's warnings
    (the checks' on stderr, others re-issued)."""
    from .posterior.diagnostics import CHECKS, summaries
    from .report import coefficient_table, format_table

    post = idata.posterior
    print(
        f"posterior ({post.attrs['method']}: {post.attrs['method_label']}, {post.sizes['chain']} x "
        f"{post.sizes['draw']} draws, prior "
        f"{'autoscaled to the release' if post.attrs['prior_autoscaled'] else 'given'}):"
    )
    print(format_table(coefficient_table(idata, reference, prob=level), prob=level))
    for _, line in summaries(post.attrs):
        print(line[0].lower() + line[1:])
    categories = tuple(c.warning for c in CHECKS if c.warning is not None)
    for w in caught:
        if issubclass(w.category, categories):
            print(f"warning ({w.category.__name__}): {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def cmd_fit(args: argparse.Namespace) -> int:
    from . import fit, load_stats
    from .model.prior import load_model

    stats = [load_stats(p) for p in args.stats]
    options = {}
    prior = None
    spec_path = args.spec or args.spec_deprecated
    if args.spec_deprecated:
        print("bayes-dpreg fit: --model is now --spec (the TOML model specification)", file=sys.stderr)
    if spec_path:
        spec = load_model(spec_path)
        prior = spec.prior
        options.update(spec.fit)
    method = args.method or options.pop("method", None)
    options.pop("method", None)
    for key in ("num_samples", "num_chains", "num_warmup", "seed", "coef_names", "extend", "retry"):
        value = getattr(args, key)
        if value is not None:
            options[key] = value
    if args.progress:
        options["progress_bar"] = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = fit(stats, method=method, prior=prior, **options)
    _print_fit(idata, caught, level=args.level)
    if args.output:
        idata.to_netcdf(args.output)
        print(f"wrote {args.output}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import pandas as pd

    from . import load_stats
    from .model.prior import load_model
    from .posterior.compare import compare, inclusion

    stats = [load_stats(p) for p in args.stats]
    spec_path, model = args.spec, args.model
    if model not in ("fixeds", "normalx"):  # the old meaning of --model: a TOML specification
        print("bayes-dpreg compare: a model specification goes in --spec; --model names the evidence", file=sys.stderr)
        spec_path, model = spec_path or model, "fixeds"
    prior = load_model(spec_path).prior if spec_path else None
    models = None
    if args.candidate:
        models = {}
        for spec in args.candidate:
            name, _, feats = spec.partition("=")
            if not name or not _:
                raise ValueError(f"--candidate must be NAME=FEATURE,FEATURE,... (empty for none), got {spec!r}")
            models[name] = [int(f) if f.isdigit() else f for f in feats.split(",") if f]
    names = args.coef_names
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.4g}".format):
        if model == "normalx" and models is None:
            raise ValueError("--model normalx fits every candidate: name them with --candidate")
        extra = {"num_samples": args.num_samples, "seed": args.seed} if model == "normalx" else {}
        table, _ = compare(stats, models, prior, model_prior=args.model_prior, coef_names=names, model=model, **extra)
        print(
            "fixed-S model evidence and exact leave-one-party-out (bayes_dpreg.compare):"
            if model == "fixeds"
            else "normalX model evidence by bridge sampling and PSIS leave-one-party-out (bayes_dpreg.compare):"
        )
        print(table.head(args.top).to_string())
        inc = inclusion(stats, prior, model_prior=args.model_prior, coef_names=names)
        how = (
            f"all 2^{stats[0].d} subsets"
            if inc.attrs["method"] == "enumerate"
            else f"a Gibbs sampler over the indicators ({inc.attrs['models_evaluated']} subsets evaluated)"
        )
        print(f"\ninclusion by {how} ({args.model_prior} prior over models):")
        print(inc.to_string())
    if args.output:
        from .report import write_report

        path = write_report(args.output, comparison=table, inclusion=inc, title="bayes_dpreg model comparison")
        print(f"wrote {path} and {path.with_suffix('.md')}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    import arviz as az

    from . import load_stats
    from .posterior.compare import MAX_ENUMERATE_D, compare, inclusion
    from .report import write_report

    idata = _read_posterior(args.posterior, az)
    table = inc = None
    if args.stats:
        stats = [load_stats(p) for p in args.stats]
        _check_same_releases(idata, stats)
        names = [str(c) for c in idata.posterior["theta"].coords["coef"].values]
        table, _ = compare(stats, coef_names=names) if stats[0].d <= MAX_ENUMERATE_D else (None, None)
        inc = inclusion(stats, coef_names=names)
    path = write_report(args.output, idata, comparison=table, inclusion=inc, title=args.title, prob=args.level)
    print(f"wrote {path} and {path.with_suffix('.md')}")
    return 0


def _read_posterior(path: str, az: Any) -> Any:
    """A fit saved by ``bayes-dpreg fit -o``, or a clear error naming the file."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file (write one with 'bayes-dpreg fit ... -o {path}')")
    try:
        idata = az.from_netcdf(path)
    except Exception as exc:  # h5py/netCDF4 raise several types for a file that is not netCDF
        raise ValueError(
            f"{path}: not a netCDF posterior written by 'bayes-dpreg fit -o' ({type(exc).__name__})"
        ) from None
    if "posterior" not in idata.groups() or "theta" not in idata.posterior:
        raise ValueError(f"{path}: not a bayes_dpreg fit (no posterior of theta)")
    return idata


def _check_same_releases(idata, stats) -> None:
    """Refuse ``--stats`` that are not the releases the fit used (by their release ids)."""
    fitted = idata.posterior.attrs.get("release_ids")
    given = [s.release_id for s in stats]
    if fitted is None:
        raise ValueError("this posterior does not record its releases (fitted before 0.1.0): refit it to add --stats")
    fitted = [str(r) for r in np.atleast_1d(fitted)]
    if sorted(fitted) != sorted(given):
        raise ValueError(
            f"--stats are not the releases this posterior was fitted to (release ids {sorted(given)} against "
            f"{sorted(fitted)}): a comparison of other releases would be reported as this fit's"
        )


def cmd_sigma(args: argparse.Namespace) -> int:
    from .privacy.gaussian import (
        analytic_gaussian_sigma,
        as_published_gaussian_sigma,
        calibrate,
        classical_gaussian_sigma,
    )

    print(
        f"delta = {args.delta:g}; unit-sensitivity noise sd and the [S, z] calibration for "
        f"||x|| <= {args.x_bound:g}, |y| <= {args.y_bound:g}"
    )
    print(
        f"discrete: the release's default noise on a grid, for d = {args.d}, n = {args.n:g} (sigma_S and its "
        "growth over the analytic Gaussian mechanism's)"
    )
    print(
        f"{'eps':>8}{'analytic':>12}{'classical':>12}{'sigma_S':>12}{'sigma_z':>12}  calibration"
        f"{'discrete sigma_S':>18}{'growth':>10}{'as published (NOT private)':>30}"
    )
    for eps in args.epsilon:
        classical = classical_gaussian_sigma(eps, args.delta) if eps <= 1 else float("nan")
        cal = calibrate(eps, args.delta, args.x_bound, args.y_bound)
        disc = calibrate(eps, args.delta, args.x_bound, args.y_bound, noise="discrete", d=args.d, n=int(args.n))
        print(
            f"{eps:>8g}{analytic_gaussian_sigma(eps, args.delta):>12.5g}{classical:>12.5g}"
            f"{cal.sigma_S:>12.5g}{cal.sigma_z:>12.5g}  {cal.kind:<11}{disc.sigma_S:>14.7g}"
            f"{disc.sigma_S / cal.sigma_S - 1:>14.1e}{as_published_gaussian_sigma(eps, args.delta):>19.5g}"
        )
    return 0


def _methods() -> list[str]:
    from .samplers import SAMPLERS

    return list(SAMPLERS)


def _table_arguments(p: argparse.ArgumentParser) -> None:
    """The response/feature columns and the privacy ledger, shared by ``release`` and ``bounds``."""
    p.add_argument(
        "--y-column",
        dest="y_column",
        default="-1",
        help="the response column: a name (files with a header) or a 0-based index (default -1, the last)",
    )
    p.add_argument("--columns", nargs="+", default=None, help="the feature columns (default: all but the response)")
    p.add_argument(
        "--ledger",
        default=None,
        help="privacy ledger of this data source (JSON); refused if it would exceed its budget",
    )
    p.add_argument(
        "--budget-epsilon", dest="budget_epsilon", type=float, default=None, help="total epsilon of a new ledger"
    )
    p.add_argument("--budget-delta", dest="budget_delta", type=float, default=None, help="total delta of a new ledger")


_PRIVACY_HELP = {
    "epsilon": "privacy parameter epsilon of each party's release (> 0)",
    "delta": "privacy parameter delta of each party's release, in (0, 1)",
    "x_bound": "declared public bound on the row norm ||x||; rows beyond it are scaled onto it, x and y together",
    "y_bound": "declared public bound on |y|; a row whose |y| exceeds it is scaled onto it, x and y together",
}


def _privacy_arguments(p: argparse.ArgumentParser, required: bool, defaults: dict | None = None) -> None:
    for name, text in _PRIVACY_HELP.items():
        flag = "--" + name.replace("_", "-")
        if required:
            p.add_argument(flag, dest=name, type=float, required=True, help=text)
        else:
            p.add_argument(
                flag, dest=name, type=float, default=(defaults or {})[name], help=text + " (default %(default)s)"
            )


def _spec_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--spec",
        default=None,
        help=f"TOML model specification for {what}: a file or a bundled name (default, alparslan2023, ...)",
    )


def _add_demo(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("demo", help="split the bundled power-plant data across parties, release, fit, report")
    d.add_argument("--parties", type=int, default=5, help="number of parties J (default %(default)s)")
    _privacy_arguments(d, False, {"epsilon": 1.0, "delta": 1e-5, "x_bound": 4.0, "y_bound": 1.0})
    d.add_argument(
        "--method",
        default=None,
        choices=_methods(),
        help="sampler (default: normalx-clt; normalx-nuts where a party has n_j < max(100, 30 d); normalx-pooled "
        "where normalx-clt would be and J > 1 + ceil(200 / d))",
    )
    d.add_argument("--seed", type=int, default=0, help="seed of the demo's noise and draws (default %(default)s)")
    d.add_argument("--level", type=float, default=LEVEL, help="credible level of the intervals (default %(default)s)")
    d.add_argument("-o", "--output", "--out", dest="output", default="demo_output", help="folder for the figure")
    d.set_defaults(func=cmd_demo)


def _add_release(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "release",
        help="release one party's noisy statistics from a CSV or Parquet table, read in batches",
        description="Release one party's noisy statistics (S~, z~) from a CSV or Parquet table. CSV: numbers only "
        "and an optional header (its names are recorded); y in the last column unless --y-column.",
    )
    r.add_argument("data", help="the party's table: a .csv or .parquet file, or a directory of Parquet files")
    _privacy_arguments(r, True)
    r.add_argument(
        "--seed",
        type=int,
        default=None,
        help="for studies only: the file records it and the release is not private; default: OS entropy",
    )
    r.add_argument("--name", default=None, help="the party's name (default: the output file's stem)")
    r.add_argument(
        "--mechanism",
        default="ssp",
        choices=["ssp", "adassp", "bs"],
        help="ssp (default: S and z, for every method but bs/adassp), adassp, or bs (S, z and y^T y: one party's "
        "release then identifies the noise variance; the default method uses y^T y where every party released it)",
    )
    r.add_argument("--intercept", action="store_true", help="release the statistics of [1, x] (normalx-intercept)")
    r.add_argument(
        "--bound-quantile",
        dest="bound_quantile",
        type=float,
        default=None,
        help="the quantile the bounds were proposed at (what `bayes-dpreg bounds` prints), recorded with the "
        "release so that the default prior reads the response's scale as its maximum",
    )
    r.add_argument("--force", action="store_true", help="replace the output file if it exists")
    _table_arguments(r)
    r.add_argument("-o", "--output", required=True, help="the statistics file to write (JSON)")
    r.set_defaults(func=cmd_release)


def _add_bounds(sub: argparse._SubParsersAction) -> None:
    bd = sub.add_parser(
        "bounds",
        help="propose x_bound and y_bound for a release by DP quantiles of the row norms and |y| "
        "(spends --epsilon of the party's budget; record it with --ledger)",
    )
    bd.add_argument("data", help="the party's table: a .csv or .parquet file, or a directory of Parquet files")
    bd.add_argument("--epsilon", type=float, required=True, help="spent on the two quantiles (half each)")
    bd.add_argument(
        "--quantile",
        type=float,
        default=None,
        help="share of rows to keep unclipped (default: min(0.99, 1 - 80 / (n eps / 2)))",
    )
    for axis in ("x", "y"):
        bd.add_argument(
            f"--{axis}-range",
            dest=f"{axis}_range",
            type=float,
            nargs=2,
            default=[1e-6, 1e9],
            metavar=("LO", "HI"),
            help=f"public range of candidate {axis} bounds (default 1e-6 1e9)",
        )
    bd.add_argument("--name", default=None, help="the party's name in the ledger")
    _table_arguments(bd)
    bd.set_defaults(func=cmd_bounds)


def _add_compare(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "compare",
        help="compare feature subsets from released statistics files: evidence, posterior model "
        "probabilities, inclusion Bayes factors, leave-one-party-out",
    )
    c.add_argument("stats", nargs="+", help="the parties' statistics files")
    c.add_argument(
        "--candidate",
        action="append",
        default=None,
        metavar="NAME=F1,F2",
        help="a candidate model (repeatable); default: every subset when d <= 10",
    )
    c.add_argument(
        "--model-prior",
        dest="model_prior",
        default="uniform",
        choices=["uniform", "beta-binomial"],
        help="prior over the candidates (default %(default)s)",
    )
    c.add_argument("--coef-names", dest="coef_names", nargs="+", default=None, help="labels of the features")
    _spec_argument(c, "the prior")
    c.add_argument(
        "--model",
        "--evidence",
        dest="model",
        default="fixeds",
        help="model whose evidence ranks the candidates, as compare(model=...): fixeds (closed form) or normalx "
        "(the noise in S~ modelled; a normalx-nuts fit and bridge sampling per candidate). A TOML file here is "
        "read as --spec (deprecated)",
    )
    c.add_argument("--num-samples", dest="num_samples", type=int, default=1000, help="draws per chain (normalx)")
    c.add_argument("--seed", type=int, default=0, help="seed of the sampling (normalx; default %(default)s)")
    c.add_argument("--top", type=int, default=20, help="rows of the comparison table to show (default %(default)s)")
    c.add_argument(
        "-o",
        "--output",
        "--report",
        dest="output",
        default=None,
        help="also write a self-contained HTML report (and .md)",
    )
    c.set_defaults(func=cmd_compare)


def _add_report(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser(
        "report",
        help="a self-contained HTML (and Markdown) report of a fit saved by 'bayes-dpreg fit -o posterior.nc', "
        "optionally with the model comparison of --stats",
    )
    rp.add_argument("posterior", help="a netCDF file written by 'bayes-dpreg fit -o'")
    rp.add_argument("-o", "--output", required=True, help="the HTML file; the Markdown twin goes beside it")
    rp.add_argument(
        "--stats", nargs="+", default=None, help="the fit's released statistics, for the comparison section"
    )
    rp.add_argument("--title", default=None, help="the report's title")
    rp.add_argument("--level", type=float, default=LEVEL, help="credible level of the intervals (default %(default)s)")
    rp.set_defaults(func=cmd_report)


def _add_fit(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser("fit", help="fit from released statistics files")
    f.add_argument("stats", nargs="+", help="the parties' statistics files")
    f.add_argument(
        "--method",
        default=None,
        choices=_methods(),
        help="sampler (default: the spec's, else normalx-clt; normalx-nuts where a party has n_j < max(100, 30 d); "
        "normalx-pooled where normalx-clt would be and J > 1 + ceil(200 / d))",
    )
    _spec_argument(f, "the prior and fit options")
    f.add_argument("--model", dest="spec_deprecated", default=None, help=argparse.SUPPRESS)
    f.add_argument(
        "--coef-names",
        dest="coef_names",
        nargs="+",
        default=None,
        help="labels of the coefficients (default: the feature names the releases carry)",
    )
    f.add_argument("--num-samples", dest="num_samples", type=int, default=None, help="draws per chain")
    f.add_argument("--num-chains", dest="num_chains", type=int, default=None, help="chains (default 4)")
    f.add_argument("--num-warmup", dest="num_warmup", type=int, default=None, help="warm-up iterations per chain")
    f.add_argument("--seed", type=int, default=None, help="seed of the sampling (default 0)")
    f.add_argument(
        "--extend", type=int, default=None, help="NUTS methods: continue chains that mix too slowly, up to N times"
    )
    f.add_argument(
        "--no-retry",
        dest="retry",
        action="store_false",
        default=None,
        help="NUTS methods: keep chains that diverged (by default they run again once at a higher target acceptance)",
    )
    f.add_argument("--level", type=float, default=LEVEL, help="credible level of the intervals (default %(default)s)")
    f.add_argument("--progress", action="store_true", help="show a progress bar")
    f.add_argument("-o", "--output", default=None, help="write the InferenceData as netCDF")
    f.set_defaults(func=cmd_fit)


def _add_sigma(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("sigma", help="print noise calibrations")
    s.add_argument("--epsilon", type=float, nargs="+", default=[0.1, 1.0, 10.0], help="the epsilons to tabulate")
    s.add_argument("--delta", type=float, default=1e-5, help="privacy parameter delta (default %(default)s)")
    s.add_argument("--x-bound", dest="x_bound", type=float, default=1.0, help=_PRIVACY_HELP["x_bound"])
    s.add_argument("--y-bound", dest="y_bound", type=float, default=1.0, help=_PRIVACY_HELP["y_bound"])
    s.add_argument("--d", type=int, default=30, help="features (for the discrete noise's grid)")
    s.add_argument("--n", type=float, default=1e6, help="rows (for the discrete noise's grid)")
    s.set_defaults(func=cmd_sigma)


def _add_budget(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("budget", help="show a privacy ledger: its releases and the budget spent")
    b.add_argument("ledger", help="the ledger file (JSON)")
    b.set_defaults(func=cmd_budget)


DESCRIPTION = (
    "Bayesian linear regression from differentially private, distributed summary statistics. "
    "Each party releases noisy S = X^T X and z = X^T y ('release'); the analyst fits the posterior "
    "('fit'), reports it ('report') and compares feature subsets ('compare')."
)


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__

    p = argparse.ArgumentParser(
        prog="bayes-dpreg",
        description=DESCRIPTION,
        epilog="The paper's experiments are not part of the library: python -m paper.reproduce in the repository.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_demo, _add_release, _add_bounds, _add_budget, _add_fit, _add_compare, _add_report, _add_sigma):
        add(sub)
    return p


@public
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"bayes-dpreg {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
