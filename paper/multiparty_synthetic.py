"""Su & Liu (2020), Experiments 1 and 2: when does merged DP synthetic data beat a party's own data?

    OMP_NUM_THREADS=1 python -m paper.multiparty_synthetic [--reps 200] [--boot 400]

Setup (paper, Table I; Sec. IV): every party sanitises its histogram at the same eps
(Laplace, ``max(n + Lap(1/eps), 0)``, uniform draws within bins), the synthetic data are
merged (HOMM) and compared with each party's own (non-private) data, 200 repetitions.

* Exp. 1: g = 5 parties, sizes 20 ~ 150 (total 370), Y ~ N(mu, 1); estimate mu by the sample
  mean; RMSE over repetitions. Paper: HOMM beats the smallest party (n = 20) around
  eps = 0.08, the average party RMSE around 0.2 and the largest party (n = 150) around 0.5.
* Exp. 2: g = 10, sizes 50 ~ 275 (total 1000), Y = b0 + b1 X1 + b2 X2 + e, X1 ~ N(0,1),
  X2 ~ Bern(0.5), e ~ N(0, 3); OLS; prediction RMSE on a test set of 100. Paper: HOMM beats
  the average party for eps > 1 and is about as good as the original HOMM data at eps ~ 4.5.

Not given by the paper, chosen here (and varied in the sensitivity rows): the individual
party sizes (only ranges and totals are given), mu = 0, beta = (1, 1, 1), N(0, 3) read as
variance 3, the declared bounds (mean +- 4 sd of each variable), the bins (module default:
ceil(n_k^(1/(2+p))) per continuous dimension, p = number of continuous columns, after the
Wasserman & Zhou rate the paper cites; X2 gets its two values), and the eps grid.

Crossover eps: the smallest grid eps from which the HOMM RMSE stays below the target for
all larger eps, interpolated linearly in log eps; 90% interval from a bootstrap over
repetitions (data and noise resampled together). All configurations of an experiment see
the same simulated data (data seed 1001 / 2001); the DP noise has its own seed per configuration.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import bayes_dpreg  # noqa: E402
from bayes_dpreg.systems.synthetic import Bins, ClippingWarning, fit_ols, homm_synthetic
from lab.machine import describe
from lab.paths import REPO

bayes_dpreg.enable_x64()  # this script calls the low-level modules (kernels, closed forms) directly

OUT = REPO / "docs" / "results" / "multiparty" / "synthetic"

EXP1_SIZES = (20, 50, 70, 80, 150)
EXP2_SIZES = (50, 50, 60, 70, 75, 80, 90, 100, 150, 275)
EXP1_EPS = np.geomspace(0.02, 5.0, 25)
EXP2_EPS = np.geomspace(0.1, 20.0, 21)
PAPER = {
    ("1", "smallest party"): "~0.08",
    ("1", "average party"): "~0.2",
    ("1", "largest party"): "~0.5",
    ("1", "smallest party, exact 1/sqrt(20)"): "~0.08",
    ("1", "average party, exact"): "~0.2",
    ("1", "largest party, exact 1/sqrt(150)"): "~0.5",
    ("2", "smallest party"): "n/r",
    ("2", "average party"): '~1 ("> 1")',
    ("2", "largest party"): "n/r",
    ("2", "original HOMM (+0.5%)"): "~4.5",
}


@dataclass
class Curves:
    name: str
    eps: np.ndarray
    homm: np.ndarray  # (n_eps, reps): squared error (exp 1) or test RMSE (exp 2)
    party: np.ndarray  # (g, reps)
    original: np.ndarray  # (reps,)
    squared: bool  # exp 1 aggregates sqrt(mean(err^2)); exp 2 mean(RMSE)
    clipped_rows: int = 0
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def agg(self, a: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        a = a if idx is None else a[..., idx]
        return np.sqrt(a.mean(axis=-1)) if self.squared else a.mean(axis=-1)


# ----------------------------------------------------------------------------- experiments


def run_exp1(
    name: str,
    seed: int,
    reps: int,
    bound: float = 4.0,
    bins_per_dim: int | None = None,
    mu: float = 0.0,
    data_seed: int = 1001,
) -> Curves:
    """Experiment 1; the data come from ``data_seed`` (shared by all configurations), the DP noise from ``seed``."""
    data_rng, rng = np.random.default_rng(data_seed), np.random.default_rng(seed)
    lo, hi = mu - bound, mu + bound
    bins = [Bins.from_bounds(lo, hi, bins_per_dim, n_public=n, columns=["y"]) for n in EXP1_SIZES]
    homm = np.empty((EXP1_EPS.size, reps))
    party = np.empty((len(EXP1_SIZES), reps))
    orig = np.empty(reps)
    clipped = 0
    for r in range(reps):
        data = [data_rng.normal(mu, 1.0, n) for n in EXP1_SIZES]
        clipped += sum(int(np.sum((d < lo) | (d > hi))) for d in data)
        party[:, r] = [(d.mean() - mu) ** 2 for d in data]
        orig[r] = (np.concatenate(data).mean() - mu) ** 2
        for i, e in enumerate(EXP1_EPS):
            merged = homm_synthetic(data, bins, [e] * len(data), rng)
            est = merged.data.mean() if merged.n_synthetic else 0.5 * (lo + hi)
            homm[i, r] = (est - mu) ** 2
    return Curves(
        name,
        EXP1_EPS,
        homm,
        party,
        orig,
        True,
        clipped,
        notes=f"bounds [{lo:g}, {hi:g}], bins/party {[b.n_bins for b in bins]}",
    )


def run_exp2(
    name: str,
    seed: int,
    reps: int,
    bins_per_dim: int | None = None,
    noise_sd: float = np.sqrt(3.0),
    beta: tuple[float, float, float] = (1.0, 1.0, 1.0),
    n_test: int = 100,
    data_seed: int = 2001,
) -> Curves:
    """Experiment 2; the data come from ``data_seed`` (shared by all configurations), the DP noise from ``seed``."""
    data_rng, rng = np.random.default_rng(data_seed), np.random.default_rng(seed)
    b = np.asarray(beta)
    y_mean = b[0] + 0.5 * b[2]
    y_sd = np.sqrt(b[1] ** 2 + 0.25 * b[2] ** 2 + noise_sd**2)
    ylo, yhi = np.floor(2 * (y_mean - 4 * y_sd)) / 2, np.ceil(2 * (y_mean + 4 * y_sd)) / 2
    bins = [
        Bins.from_bounds(
            [-4.0, 0.0, ylo],
            [4.0, 1.0, yhi],
            bins_per_dim,
            n_public=n,
            discrete=[False, True, False],
            columns=["x1", "x2", "y"],
        )
        for n in EXP2_SIZES
    ]

    def draw(n: int) -> np.ndarray:
        x1 = data_rng.normal(size=n)
        x2 = data_rng.integers(0, 2, n).astype(np.float64)
        return np.column_stack([x1, x2, b[0] + b[1] * x1 + b[2] * x2 + data_rng.normal(0.0, noise_sd, n)])

    homm = np.empty((EXP2_EPS.size, reps))
    party = np.empty((len(EXP2_SIZES), reps))
    orig = np.empty(reps)
    clipped = 0
    for r in range(reps):
        data = [draw(n) for n in EXP2_SIZES]
        test = draw(n_test)
        clipped += sum(int(np.sum((d[:, 0] < -4) | (d[:, 0] > 4) | (d[:, 2] < ylo) | (d[:, 2] > yhi))) for d in data)

        def rmse(fit, test: np.ndarray = test) -> float:
            return float(np.sqrt(np.mean((test[:, 2] - fit.predict(test[:, :2])) ** 2)))

        party[:, r] = [rmse(fit_ols(d, 2)) for d in data]
        orig[r] = rmse(fit_ols(np.concatenate(data), 2))
        for i, e in enumerate(EXP2_EPS):
            merged = homm_synthetic(data, bins, [e] * len(data), rng)
            homm[i, r] = rmse(fit_ols(merged, "y"))
    return Curves(
        name,
        EXP2_EPS,
        homm,
        party,
        orig,
        False,
        clipped,
        notes=f"X1 in [-4, 4], Y in [{ylo:g}, {yhi:g}], bins/dim (x1, x2, y) "
        f"{sorted({bb.bins_per_dim for bb in bins})}, noise sd {noise_sd:.3g}",
    )


# ----------------------------------------------------------------------------- crossovers


def crossover(eps: np.ndarray, curve: np.ndarray, target: float) -> float:
    """Smallest eps from which ``curve < target`` on the rest of the grid (log-linear interp.).

    0 if already below at the first grid point, inf if never (to the last grid point).
    """
    below = curve < target
    if not below[-1]:
        return np.inf
    i = below.size - 1
    while i > 0 and below[i - 1]:
        i -= 1
    if i == 0:
        return 0.0
    h0, h1 = curve[i - 1], curve[i]
    f = (h0 - target) / (h0 - h1)
    return float(np.exp(np.log(eps[i - 1]) + f * (np.log(eps[i]) - np.log(eps[i - 1]))))


def targets(c: Curves, idx: np.ndarray | None = None) -> dict[str, float]:
    p = c.agg(c.party, idx)
    t = {"smallest party": p[0], "average party": p.mean(), "largest party": p[-1]}
    if c.squared:  # Exp. 1: also the exact party RMSEs sigma / sqrt(n_k) (no MC error in the target)
        exact = 1.0 / np.sqrt(np.array(EXP1_SIZES, dtype=np.float64))
        t.update(
            {
                "smallest party, exact 1/sqrt(20)": exact[0],
                "average party, exact": exact.mean(),
                "largest party, exact 1/sqrt(150)": exact[-1],
            }
        )
    if not c.squared:
        t["original HOMM (+0.5%)"] = 1.005 * c.agg(c.original, idx)
    return t


def crossovers(c: Curves, boot: int, seed: int) -> dict[str, tuple[float, float, float]]:
    out = {}
    reps = c.original.size
    rng = np.random.default_rng(seed)
    boots = [rng.integers(0, reps, reps) for _ in range(boot)]
    point = {k: crossover(c.eps, c.agg(c.homm), v) for k, v in targets(c).items()}
    samples: dict[str, list[float]] = {k: [] for k in point}
    for idx in boots:
        h = c.agg(c.homm, idx)
        for k, v in targets(c, idx).items():
            samples[k].append(crossover(c.eps, h, v))
    for k in point:
        lo, hi = np.quantile(np.array(samples[k]), [0.05, 0.95], method="inverted_cdf")
        out[k] = (point[k], float(lo), float(hi))
    return out


def fmt_eps(x: float, grid: np.ndarray) -> str:
    if x == 0.0:
        return f"< {grid[0]:g}"
    if not np.isfinite(x):
        return f"not reached (> {grid[-1]:g})"
    return f"{x:.2g}"


def fmt_ci(lo: float, hi: float, grid: np.ndarray) -> str:
    def one(x: float) -> str:
        if x == 0.0:
            return f"<{grid[0]:g}"
        if not np.isfinite(x):
            return f">{grid[-1]:g}"
        return f"{x:.2g}"

    return f"[{one(lo)}, {one(hi)}]"


# ----------------------------------------------------------------------------- output


def figure(panels: list[tuple[list[Curves], str, str, tuple[float, ...]]], path: Path) -> None:
    """One panel per (curves, title, ylabel, paper crossover eps); reference lines from the first curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.8))
    colours = ["C0", "C2", "C4", "C1"]
    for ax, (cs, title, ylabel, paper_eps) in zip(axes, panels):
        main = cs[0]
        p = main.agg(main.party)
        for k, v in enumerate(p):
            ax.axhline(v, color="tab:pink", lw=0.8, alpha=0.7, label="each party (own data)" if k == 0 else None)
        ax.axhline(p.mean(), color="tab:pink", ls="--", lw=1.5, label="average party")
        ax.axhline(main.agg(main.original), color="k", ls=":", lw=1.2, label="original HOMM (non-private)")
        ax.plot(main.eps, main.agg(main.homm), "k-o", ms=3, lw=1.8, label=f"sanitised HOMM: {main.name}")
        for c, col in zip(cs[1:], colours):
            ax.plot(c.eps, c.agg(c.homm), "-", color=col, lw=1.0, alpha=0.85, label=f"sanitised HOMM: {c.name}")
        for e in paper_eps:
            ax.axvline(e, color="grey", lw=0.8, ls="-.")
        ax.set_xscale("log")
        ax.set_xlabel("per-party eps (= privacy cost); dash-dot: paper's crossovers")
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
        if main.squared:
            ax.set_ylim(0, 0.6)
        else:
            o = main.agg(main.original)
            ax.set_ylim(0.98 * o, min(1.2 * o, 1.01 * max(float(c.agg(c.homm).max()) for c in cs)))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def no_noise_coefficients(bins_per_dim: int | None, reps: int, seed: int = 3001) -> np.ndarray:
    """Mean OLS coefficients on merged synthetic data at eps = 1e9 (histogram approximation only), Exp. 2."""
    rng = np.random.default_rng(seed)
    bins = [
        Bins.from_bounds(
            [-4.0, 0.0, -7.0],
            [4.0, 1.0, 10.0],
            bins_per_dim,
            n_public=n,
            discrete=[False, True, False],
            columns=["x1", "x2", "y"],
        )
        for n in EXP2_SIZES
    ]
    coefs = []
    for _ in range(reps):
        data = []
        for n in EXP2_SIZES:
            x1, x2 = rng.normal(size=n), rng.integers(0, 2, n).astype(np.float64)
            data.append(np.column_stack([x1, x2, 1.0 + x1 + x2 + rng.normal(0.0, np.sqrt(3.0), n)]))
        coefs.append(fit_ols(homm_synthetic(data, bins, [1e9] * len(data), rng), "y").coef)
    return np.mean(coefs, axis=0)


def curve_table(c: Curves, eps_show: tuple[float, ...]) -> list[str]:
    h = c.agg(c.homm)
    idx = [int(np.argmin(np.abs(np.log(c.eps) - np.log(e)))) for e in eps_show]
    head = "| eps | " + " | ".join(f"{c.eps[i]:.3g}" for i in idx) + " |"
    sep = "|---" * (len(idx) + 1) + "|"
    row = f"| HOMM ({c.name}) | " + " | ".join(f"{h[i]:.4f}" for i in idx) + " |"
    return [head, sep, row]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="repetitions (paper: 200)")
    ap.add_argument("--boot", type=int, default=400, help="bootstrap resamples for crossover intervals")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    t0 = time.perf_counter()
    warnings.simplefilter("ignore", ClippingWarning)  # clipped rows are counted and reported instead

    exp1 = [
        run_exp1("default bins, bounds mu+-4", 101, args.reps),
        run_exp1("default bins, bounds mu+-3", 102, args.reps, bound=3.0),
        run_exp1("default bins, bounds mu+-6", 103, args.reps, bound=6.0),
        run_exp1("10 bins, bounds mu+-4", 104, args.reps, bins_per_dim=10),
    ]
    exp2 = [
        run_exp2("default bins", 201, args.reps),
        run_exp2("8 bins/dim", 202, args.reps, bins_per_dim=8),
        run_exp2("15 bins/dim", 203, args.reps, bins_per_dim=15),
        run_exp2("default bins, e ~ N(0, sd 3)", 204, args.reps, noise_sd=3.0),
        run_exp2("8 bins/dim, e ~ N(0, sd 3)", 205, args.reps, bins_per_dim=8, noise_sd=3.0),
    ]
    lines: list[str] = []
    header = "| exp | HOMM beats | paper eps | " + " | ".join(c.name for c in exp1) + " |"
    lines += [
        "### Experiment 1 (crossover eps; 90% bootstrap interval below each value)",
        "",
        header,
        "|---" * (3 + len(exp1)) + "|",
    ]
    cx1 = [crossovers(c, args.boot, 7) for c in exp1]
    for k in targets(exp1[0]):
        cells = [f"{fmt_eps(cx[k][0], exp1[0].eps)} {fmt_ci(cx[k][1], cx[k][2], exp1[0].eps)}" for cx in cx1]
        lines.append(f"| 1 | {k} | {PAPER[('1', k)]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "### Experiment 2 (crossover eps; 90% bootstrap interval)",
        "",
        "| exp | HOMM beats | paper eps | " + " | ".join(c.name for c in exp2) + " |",
        "|---" * (3 + len(exp2)) + "|",
    ]
    cx2 = [crossovers(c, args.boot, 8) for c in exp2]
    for k in targets(exp2[0]):
        cells = [f"{fmt_eps(cx[k][0], exp2[0].eps)} {fmt_ci(cx[k][1], cx[k][2], exp2[0].eps)}" for cx in cx2]
        lines.append(f"| 2 | {k} | {PAPER[('2', k)]} | " + " | ".join(cells) + " |")

    lines += [
        "",
        "### Reference RMSEs (own data, non-private)",
        "",
        "| config | parties (smallest ... largest) | average party | original HOMM | out-of-bound rows clipped |",
        "|---|---|---|---|---|",
    ]
    for c in exp1 + exp2:
        p = c.agg(c.party)
        lines.append(
            f"| {c.name} | {' '.join(f'{v:.4f}' for v in p)} | {p.mean():.4f} | "
            f"{c.agg(c.original):.4f} | {c.clipped_rows} |"
        )
    lines += ["", "### HOMM RMSE along eps (main configurations)", ""]
    lines += curve_table(exp1[0], (0.02, 0.05, 0.08, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0))
    lines += [""]
    lines += curve_table(exp2[0], (0.1, 0.5, 1.0, 2.0, 4.5, 10.0, 20.0))
    lines += [""]
    lines += curve_table(exp2[1], (0.1, 0.5, 1.0, 2.0, 4.5, 10.0, 20.0))
    lines += [
        "",
        "### Why Exp. 2 with the default bins never catches up: histogram approximation",
        "",
        "Mean OLS coefficients (true (1, 1, 1)) on the merged synthetic data with no DP noise "
        "(eps = 1e9), Exp. 2 data (e ~ N(0, var 3)), 100 repetitions. Redrawing X1 uniformly "
        "within wide bins is an errors-in-variables perturbation: it attenuates the slope of X1.",
        "",
        "| bins per continuous dim | intercept | X1 | X2 |",
        "|---|---|---|---|",
    ]
    slope = {}
    for bpd in (None, 8, 15, 40):
        cf = no_noise_coefficients(bpd, 100)
        slope[bpd] = cf[1]
        lines.append(f"| {'default (3-5)' if bpd is None else bpd} | {cf[0]:.3f} | {cf[1]:.3f} | {cf[2]:.3f} |")
    lines += ["", "Configurations:", ""]
    lines += [f"* Exp. 1, {c.name}: {c.notes}" for c in exp1]
    lines += [f"* Exp. 2, {c.name}: {c.notes}" for c in exp2]

    def pt(cx: dict, k: str, grid: np.ndarray) -> str:
        return f"{fmt_eps(cx[k][0], grid)} {fmt_ci(cx[k][1], cx[k][2], grid)}"

    g1, g2 = exp1[0].eps, exp2[0].eps
    lines += [
        "",
        "### Findings",
        "",
        f"* Exp. 1 (main configuration) reproduces the paper: HOMM beats the smallest party at eps "
        f"{pt(cx1[0], 'smallest party', g1)} (paper ~0.08), the average party at "
        f"{pt(cx1[0], 'average party', g1)} (~0.2) and the largest party at "
        f"{pt(cx1[0], 'largest party', g1)} (~0.5). The last crossover is fragile because the HOMM curve "
        f"flattens near the largest party's RMSE: against the exact 1/sqrt(150) it is "
        f"{pt(cx1[0], 'largest party, exact 1/sqrt(150)', g1)}. The declared bounds move all three "
        f"(Theorem 1: the DP error scales with B_Y^2): mu+-3 gives {pt(cx1[1], 'average party', g1)}, "
        f"mu+-6 gives {pt(cx1[2], 'average party', g1)} for the average party.",
        f"* Exp. 2 does not reproduce with the module's default bins (ceil(n_k^(1/4)) = 3-5 per continuous "
        f"dimension): without any DP noise the merged synthetic data attenuate the X1 slope to {slope[None]:.2f} "
        f"(table above), so HOMM never beats even the smallest party. Finer grids remove the bias but "
        f"multiply the cells that get noise (m_k = 2 x bins^2): with 8 bins/dim HOMM beats the average party at "
        f"{pt(cx2[1], 'average party', g2)} and comes within 0.5% of the original HOMM at "
        f"{pt(cx2[1], 'original HOMM (+0.5%)', g2)} (paper: > 1 and ~4.5). Reading N(0, 3) as sd 3 "
        f"(more outcome noise makes the parties' own OLS worse, and the histogram bias matters less) brings "
        f"the crossovers to {pt(cx2[3], 'average party', g2)} (default bins) / "
        f"{pt(cx2[4], 'average party', g2)} (8 bins) for the average party and "
        f"{pt(cx2[4], 'original HOMM (+0.5%)', g2)} (8 bins) for the original HOMM, close to the paper. "
        f"The paper does not state beta, the bounds, the bins or the noise scale, so these are "
        f"sensitivities, not a fit.",
    ]
    table = "\n".join(lines)
    print(table)

    args.out.mkdir(parents=True, exist_ok=True)
    fig_path = args.out / "rmse_vs_eps.png"
    figure(
        [
            (exp1, "Exp. 1: mean of N(0, 1), g = 5 (n = 370)", "RMSE of the mean", (0.08, 0.2, 0.5)),
            (exp2[:3], "Exp. 2: linear model, e ~ N(0, var 3), g = 10 (n = 1000)", "test prediction RMSE", (1.0, 4.5)),
            (exp2[3:], "Exp. 2 with e ~ N(0, sd 3)", "test prediction RMSE", (1.0, 4.5)),
        ],
        fig_path,
    )
    wall = time.perf_counter() - t0
    machine = describe("numpy")
    cmd = "OMP_NUM_THREADS=1 python -m paper.multiparty_synthetic " + " ".join(sys.argv[1:])
    md = [
        "# Su & Liu (2020): merged DP synthetic data vs a party's own data (Experiments 1 and 2)",
        "",
        f"Command: `{cmd.strip()}`  ",
        f"Wall time: {wall:.0f} s; machine: {machine}; repetitions: {args.reps} (paper: 200); "
        f"bootstrap resamples: {args.boot}.",
        "",
        "Setup" + (__doc__ or "").split("Setup", 1)[1].rstrip(),
        "",
        '"n/r": not reported by the paper. The first data column is the main configuration; the '
        "others vary a choice the paper does not state.",
        "",
        table,
        "",
        "![HOMM RMSE against eps](rmse_vs_eps.png)",
        "",
    ]
    (args.out / "results.md").write_text("\n".join(md))
    print(f"\nwrote {args.out / 'results.md'} and {fig_path} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
