"""Reproduce one of the paper's experiments (Alparslan et al. 2023, Sec. 5 and App. D) or the coverage study.

    python -m paper.reproduce {fig2,fig3,fig4,table1,coverage} [--reps N] [--iterations N] [--out DIR]
        [--calibration auto|as_published ...] [--methods ...] [--prior matched|paper] [--workers K]
        [--data-dir DIR] [--seed S] [--device cpu|gpu]

Runs :mod:`paper.experiments` (not part of the ``bayes_dpreg`` wheel). What each
figure writes, and how long it takes, is in ``paper/README.md``. The real data sets (table1)
are read from ``--data-dir``, by default ``$BAYES_DPREG_DATA_DIR`` if set, else
``../shared/data`` beside the repository (found from this file, not from the working directory).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import bayes_dpreg  # noqa: E402
from bayes_dpreg.runtime.device import DEVICES
from bayes_dpreg.samplers import SAMPLERS  # noqa: E402
from paper import experiments as ex

bayes_dpreg.enable_x64()  # this script calls the low-level modules (kernels, closed forms) directly

PROG = "python -m paper.reproduce"


def build_parser() -> argparse.ArgumentParser:
    x = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    x.add_argument("figure", choices=list(ex.REPRODUCE))
    x.add_argument("--reps", type=int, default=None, help="replications per cell (default: the paper's 50)")
    x.add_argument("--iterations", type=int, default=None, help="MCMC iterations, first half warm-up (default 1e4)")
    x.add_argument("--out", default=None, help="output directory (default results/<figure>)")
    x.add_argument(
        "--calibration",
        nargs="+",
        default=None,
        choices=["auto", "joint", "split", "as_published"],
        help="'auto' (correct, default) or 'as_published' (the authors' noise, NOT private); "
        "table1 takes both (default: as_published auto)",
    )
    x.add_argument(
        "--data-dir",
        default=None,
        help=f"directory of the real data sets (default: ${ex.DATA_DIR_ENV} if set, else "
        f"../shared/data beside the repository; now {ex.default_data_dir()})",
    )
    x.add_argument(
        "--prior",
        default=None,
        choices=["matched", "paper"],
        help="fig2/fig4 (default 'paper') and coverage (default 'matched', under which the simulation's model holds)",
    )
    x.add_argument(
        "--methods",
        nargs="+",
        default=None,
        choices=[m for m in SAMPLERS if m != "normalx-intercept"] + ["naive"],
        help="subset of the methods",
    )
    x.add_argument(
        "--workers",
        type=int,
        default=1,
        help="fig2/fig4/table1: processes that share the cells (one per core; results do not depend on it)",
    )
    x.add_argument("--seed", type=int, default=0)
    x.add_argument(
        "--device",
        choices=sorted(DEVICES),
        default=None,
        help="where JAX computes; gpu stops with an error where JAX has no GPU (default: JAX's "
        "choice, the CPU unless JAX's CUDA plugin is installed)",
    )
    return x


def reproduce(args: argparse.Namespace, command: str) -> Path:
    """Run ``args.figure`` with the options that apply to it; raise ``ValueError`` on the others."""
    kw: dict = dict(command=command, seed=args.seed)
    out_dir = args.out or f"results/{args.figure}"
    cals = args.calibration or (["as_published", "auto"] if args.figure == "table1" else ["auto"])
    if args.reps is not None:
        kw["reps"] = args.reps
    if args.iterations is not None and args.figure != "fig3":
        kw["num_iterations"] = args.iterations
    if args.figure in ("fig2", "fig4", "coverage"):
        if len(cals) != 1:
            raise ValueError(f"{args.figure} takes one calibration, got {cals}")
        kw["calibration"] = cals[0]
    if args.methods is not None:
        if args.figure == "fig3":
            raise ValueError("--methods does not apply to fig3")
        kw["methods"] = tuple(args.methods)
    if args.prior is not None:
        if args.figure not in ("coverage", "fig2", "fig4"):
            raise ValueError("--prior applies to fig2, fig4 and the coverage study")
        kw["prior"] = args.prior
    if args.workers != 1:
        if args.figure not in ("fig2", "fig4", "table1"):
            raise ValueError(
                "--workers applies to fig2, fig4 and table1 (fig3 times one process; coverage runs in one)"
            )
        if args.workers < 1:
            raise ValueError(f"--workers must be >= 1, got {args.workers}")
        kw["workers"] = args.workers
    if args.figure == "table1":
        kw["calibrations"] = tuple(cals)
        kw["data_dir"] = args.data_dir or ex.default_data_dir()
    elif args.data_dir is not None:
        raise ValueError("--data-dir applies to table1 (the other experiments simulate their data)")
    return ex.REPRODUCE[args.figure](out_dir, **kw)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    try:
        if args.device is not None:
            bayes_dpreg.select_device(args.device)  # before JAX computes; the worker processes inherit it
    except RuntimeError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    try:
        out = reproduce(args, f"{PROG} " + " ".join(argv))
    except (ValueError, TypeError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    print(f"results written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
