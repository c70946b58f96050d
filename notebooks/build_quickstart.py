"""Write and execute ``notebooks/quickstart.ipynb`` (outputs and the inline figure stored in the file).

    pip install -e ".[docs]" && python notebooks/build_quickstart.py

The test suite runs the notebook's code cells (``tests/test_notebooks.py``); this script
is what refreshes its stored outputs.
"""

from _nb import write_notebook

CELLS = [
    ("markdown", """# bayes_dpreg quick start

Three hospitals of very different sizes each hold part of a regression data set.
Each releases only differentially private summary statistics; an analyst computes a
posterior for the coefficients from the released files. The data are simulated, so
we know the truth and can see whether the intervals cover it."""),
    ("code", """%matplotlib inline
import warnings
warnings.filterwarnings("ignore", message="IProgress not found")
import tempfile, pathlib
import numpy as np
import arviz as az
import matplotlib.pyplot as plt
import bayes_dpreg as bd

rng = np.random.default_rng(1)
names = ["age", "dose", "bmi"]
theta_true = np.array([0.4, -0.25, 0.1])
sizes = [1000, 3000, 8000]                      # heterogeneous parties
mix = np.array([[1.0, 0.8, 0.0], [0.0, 0.6, 0.5], [0.0, 0.0, 0.8]])  # correlated features
hospitals = []
for n_j in sizes:
    X = rng.standard_normal((n_j, 3)) @ mix
    y = X @ theta_true + 0.5 * rng.standard_normal(n_j)
    hospitals.append((X, y))
# publicly declared bounds (not read off the data): ||x|| <= 5, |y| <= 4
x_bound, y_bound = 5.0, 4.0"""),
    ("markdown", """## Each hospital: release and save
`release` clips rows outside the declared bounds (and tells the releasing party how
many), calibrates the noise with the analytic Gaussian mechanism and, without `seed`,
draws exact discrete Gaussian noise on a fine grid from OS entropy (OpenDP). A seed is
used here only so that the notebook is reproducible: a seeded release uses
floating-point noise, records `reproducible_seed: true` and is not private, so it warns
(`SeededReleaseWarning`, silenced below). Real releases omit the seed."""),
    ("code", """import warnings

warnings.simplefilter("ignore", bd.SeededReleaseWarning)  # this notebook's releases are seeded on purpose
outdir = pathlib.Path(tempfile.mkdtemp())
for j, (X, y) in enumerate(hospitals):
    stats = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=x_bound, y_bound=y_bound, seed=j, name=f"hospital{j}",
                       columns=names)  # the file records the features' names (a CSV header or a DataFrame would too)
    stats.save(outdir / f"hospital{j}.json")
print(stats)"""),
    ("markdown", """## The analyst: load and fit
The default method, `normalx-clt`, models the noise the release added to each
`S_j` (the normalX model of Alparslan et al. 2023, each `S_j` integrated out under the Wishart's
central limit theorem, NUTS for the rest; `normalx-nuts`, which samples every `S_j`, where a party
is small); the default
prior is scaled to the declared `y_bound` and the released statistics. R-hat and
ESS are checked after every fit; a `ConvergenceWarning` would say if the chains had
not mixed. The coefficients carry the names the releases recorded. Intervals here are
central (equal-tailed) 90%, the package's one convention. These features are correlated,
and along one combination of them the release noise swamps the signal:
`UnresolvedDirectionWarning` names that combination of coefficients, whose interval rests
on the prior for the features' covariance (`bd.unresolved_directions(idata)`)."""),
    ("code", """stats = [bd.load_stats(p) for p in sorted(outdir.glob("hospital*.json"))]
idata = bd.fit(stats, seed=0)  # coefficients named after the released features
# the package's interval convention: central (equal-tailed) 90%, as in bayes-dpreg fit and the report
summary = az.summary(idata, var_names=["theta"], stat_focus="median", hdi_prob=0.9)
summary["truth"] = theta_true
summary["covered"] = (summary["eti_5%"] <= theta_true) & (theta_true <= summary["eti_95%"])
print(summary[["median", "mad", "eti_5%", "eti_95%", "truth", "covered", "r_hat", "ess_median"]])"""),
    ("markdown", """## Why not the closed form?
`fast` (Bayes-fixedS-fast) treats the noisy `S~_j` as exact. It is instant, and on
this one data set its intervals look similar, but the release noise is not negligible
against the smallest eigenvalues of the released `S~_j` and it says so
(`NoiseWarning`). Over many data sets such intervals undercover: the coverage study
(`studies/coverage.py`, results in `docs/results/coverage/`) measures how much."""),
    ("code", """with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", bd.NoiseWarning)
    fast = bd.fit(stats, "fast")
print(*[str(w.message) for w in caught], sep="\\n")
ax = az.plot_forest([idata, fast], model_names=["normalx-clt (default)", "fast"], var_names=["theta"],
                    combined=True, hdi_prob=0.9, figsize=(7, 3.2))[0]
for k, name in enumerate(names):
    ys = [t.get_position()[1] for t in ax.get_yticklabels() if name in t.get_text()]
    ax.plot([theta_true[k]] * len(ys), ys, "k|", ms=18, mew=2)
ax.set_title("90% intervals (eps = 1 per hospital); black bars: the truth")
plt.show()"""),
]


def main() -> None:
    write_notebook(CELLS, "quickstart")


if __name__ == "__main__":
    main()
