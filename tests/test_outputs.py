"""What a statistician expects from the outputs (issue 34): feature names from the data to every
output, ArviZ's plot_ppc on a fit, warnings at the caller's line, one interval convention, a CLI
with help on every argument, a report with the method's own verdicts that refuses foreign releases."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.cli import build_parser, main

NAMES = ["age", "bmi", "dose"]


def _hospital_csvs(tmp_path: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    paths = []
    for j, n in enumerate([200, 1000, 3000]):
        X = rng.normal(size=(n, 3)) * [1.0, 0.5, 1.5]
        y = X @ [0.3, -0.2, 0.1] + 0.3 * rng.normal(size=n)
        path = tmp_path / f"h{j}.csv"
        path.write_text(
            ",".join(NAMES) + ",outcome\n" + "".join(",".join(f"{v:.4f}" for v in (*r, t)) + "\n" for r, t in zip(X, y))
        )
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("hospitals")
    files = []
    for j, csv in enumerate(_hospital_csvs(tmp)):
        out = tmp / f"h{j}.json"
        args = ["release", str(csv), "--epsilon", "1", "--delta", "1e-5", "--x-bound", "5", "--y-bound", "3"]
        assert main([*args, "--y-column", "outcome", "--seed", str(j), "-o", str(out)]) == 0
        files.append(str(out))
    return tmp, files


def test_csv_header_names_reach_the_fit_the_cli_table_and_the_report(released, capsys):
    tmp, files = released
    assert [bd.load_stats(f).features for f in files] == [tuple(NAMES)] * 3
    nc = tmp / "post.nc"
    assert main(["fit", *files, "--num-samples", "200", "--num-warmup", "200", "-o", str(nc)]) == 0
    table = capsys.readouterr().out
    assert all(f"\n{nm} " in table for nm in NAMES) and "theta_0" not in table and "90% lower" in table
    html = tmp / "r.html"
    assert main(["report", str(nc), "-o", str(html), "--stats", *files]) == 0
    page, md = html.read_text(), html.with_suffix(".md").read_text()
    for text in (re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,", t) for t in (page, md)):  # words, not image bytes
        assert all(nm in text for nm in NAMES) and "theta_0" not in text and "theta[" not in text
        assert "σ_y²" in text and "Divergent transitions" in text and "elpd_diff" in text and "dse" in text
        assert "central 90%" in text and "HDI" not in text
    assert page.count("data:image/png;base64") >= 5  # forest, trace, prior/posterior, rank, predictive


def test_report_refuses_releases_other_than_the_fits(released, tmp_path, capsys):
    tmp, files = released
    nc = tmp / "small.nc"
    assert main(["fit", *files, "--method", "fast", "-o", str(nc)]) == 0
    assert main(["report", str(nc), "-o", str(tmp_path / "r.html"), "--stats", *files[:2]]) == 2
    assert "not the releases this posterior was fitted to" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.nc"), "-o", str(tmp_path / "r.html")]) == 2
    (tmp_path / "junk.nc").write_text("not netCDF")
    assert main(["report", str(tmp_path / "junk.nc"), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "not a netCDF posterior" in err and "Traceback" not in err


def test_fixed_s_report_shows_its_own_noise_warning(released, tmp_path):
    from bayes_dpreg.report import write_report

    _, files = released
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = bd.fit([bd.load_stats(f) for f in files], method="fixeds", num_samples=200, num_warmup=200)
    md = write_report(tmp_path / "f.html", idata).with_suffix(".md").read_text()
    assert "treats nearestPSD" in md and "NoiseWarning" in md


def test_parties_with_other_feature_names_are_refused():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(300, 2)), rng.uniform(-1, 1, 300)
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=4.0, y_bound=1.0)
    a = bd.release(X, y, **kw, seed=1, name="a", columns=["age", "dose"])
    b = bd.release(X, y, **kw, seed=2, name="b", columns=["dose", "age"])
    with pytest.raises(ValueError, match="different feature names"):
        bd.fit([a, b], method="fast")
    assert list(bd.fit([a, b], method="fast", coef_names=["u", "v"]).posterior.coords["coef"].values) == ["u", "v"]


def test_plot_ppc_works_on_a_default_fit_with_no_arguments():
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    rng = np.random.default_rng(2)
    stats = []
    for j in range(3):
        X = rng.normal(size=(400, 2)) * 0.5
        y = np.clip(X @ [0.4, -0.2] + 0.1 * rng.normal(size=400), -1, 1)
        stats.append(bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=3.0, y_bound=1.0, seed=j, name=f"p{j}"))
    idata = bd.fit(stats, num_samples=100, num_warmup=100)
    assert list(idata.observed_data.data_vars) == ["z_tilde"] and "S_tilde" in idata.constant_data
    assert idata.posterior.attrs["prior_sigma2_max"] == np.inf  # the default leaves sigma_y^2 unbounded
    az.plot_ppc(idata)


def test_warnings_point_at_the_callers_line():
    X = np.random.default_rng(3).normal(size=(300, 2)) * 3.0
    y = np.random.default_rng(4).uniform(-1, 1, 300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        s = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=0)
        fit_line = sys._getframe().f_lineno + 1
        bd.fit([s], method="fast")
    assert caught and all(w.filename == __file__ for w in caught)
    assert {w.lineno for w in caught if issubclass(w.category, bd.ClippingWarning)} == {line}
    assert {w.lineno for w in caught if issubclass(w.category, bd.NoiseWarning)} == {fit_line}


def test_no_clipping_warning_when_nothing_is_clipped():
    X = np.random.default_rng(5).uniform(-0.1, 0.1, size=(300, 2))
    y = np.random.default_rng(6).uniform(-0.5, 0.5, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bd.ClippingWarning)
        bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0)


def _actions(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((name, a) for a in sub._actions)
        else:
            yield "bayes-dpreg", action


def test_every_cli_argument_has_help():
    missing = [
        f"{cmd} {a.option_strings or a.dest}"
        for cmd, a in _actions(build_parser())
        if not isinstance(a, argparse._SubParsersAction) and not a.help
    ]
    assert missing == []


def test_version_and_module_entry_point():
    run = lambda *a: subprocess.run([sys.executable, "-m", "bayes_dpreg", *a], capture_output=True, text=True)
    v = run("--version")
    assert v.returncode == 0 and v.stdout.strip() == f"bayes-dpreg {bd.__version__}"
    h = run("--help")
    assert h.returncode == 0 and "COMMAND" in h.stdout and "``" not in h.stdout and ":func:" not in h.stdout


def test_demo_prints_no_dependency_warnings(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "bayes_dpreg", "demo", "-o", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    # the package's own compile notice (a first run of new shapes, runtime.cache.compile_notice) is not a warning
    notice = re.compile(r"^bayes_dpreg: (compiling .* \.\.\.|.*: ready after \d+ s \(\d+ programs compiled in \d+ s\))$")
    stderr = [line for line in res.stderr.splitlines() if not notice.match(line)]
    assert stderr == [] and "findfont" not in res.stdout and "Warning" not in res.stdout, res.stderr
