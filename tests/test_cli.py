"""The command line: demo, release -> fit round trip, sigma, clear errors."""

import numpy as np
import pytest

from bayes_dpreg.cli import main


def test_demo(tmp_path, capsys):
    assert main(["demo", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for word in ("temperature", "humidity", "90% lower", "OLS (non-private)", "sigma_S", "clipping", "normalx-clt",
                 "r_hat", "ess_bulk", "convergence: max R-hat"):
        assert word in out
    assert (tmp_path / "demo_posterior.png").stat().st_size > 10_000


def test_release_then_fit(tmp_path, capsys):
    rng = np.random.default_rng(0)
    files = []
    for j in range(2):
        X = rng.normal(size=(300, 2)) * 0.4
        y = np.clip(X @ [0.5, -0.3] + 0.1 * rng.normal(size=300), -1, 1)
        csv = tmp_path / f"party{j}.csv"
        np.savetxt(csv, np.column_stack([X, y]), delimiter=",")
        out = tmp_path / f"party{j}.json"
        quantile = ["--bound-quantile", "0.9"] if j else []
        assert main(["release", str(csv), "--epsilon", "1", "--delta", "1e-5", "--x-bound", "2",
                     "--y-bound", "1", *quantile, "-o", str(out)]) == 0
        files.append(str(out))
    from bayes_dpreg import load_stats

    assert [load_stats(f).bound_quantile for f in files] == [None, 0.9]
    nc = tmp_path / "post.nc"
    assert main(["fit", *files, "--method", "fast", "--num-samples", "50", "-o", str(nc)]) == 0
    assert "theta_0" in capsys.readouterr().out and nc.exists()
    assert main(["fit", *files, "--num-warmup", "10", "--num-samples", "20", "--extend", "0"]) == 0  # too short
    captured = capsys.readouterr()
    assert "r_hat" in captured.out and "NOT CONVERGED" in captured.out
    assert "parties: the released S~_j spread" in captured.out  # the default method checks the parties
    assert "ConvergenceWarning" in captured.err


def test_sigma_table(capsys):
    assert main(["sigma", "--epsilon", "0.1", "1", "10"]) == 0
    out = capsys.readouterr().out
    assert "30.75" in out and "3.7306" in out and "0.49989" in out


def test_cli_errors_are_clear(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    csv.write_text("1,2,3\n4,5,6\n7,8,9\n")
    assert main(["release", str(csv), "--epsilon", "0", "--delta", "1e-5", "--x-bound", "1", "--y-bound", "1",
                 "-o", str(tmp_path / "o.json")]) == 2
    assert "epsilon must be > 0" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["fit", str(bad)]) == 2
    assert "not a bayes_dpreg statistics file" in capsys.readouterr().err


def test_fit_no_retry_reaches_fit(tmp_path, monkeypatch, capsys):
    """``--no-retry`` passes ``retry=False``; without it ``fit`` keeps its default (chains that diverged run again)."""
    import bayes_dpreg

    stats = tmp_path / "p.json"
    bayes_dpreg.release(np.eye(2).repeat(5, 0), np.zeros(10), epsilon=1.0, delta=1e-5, x_bound=1.0,
                        y_bound=1.0).save(stats)
    seen = []

    def fake(stats, method=None, prior=None, **options):
        seen.append(options)
        raise SystemExit(0)  # stop here: only what reached fit is tested

    monkeypatch.setattr(bayes_dpreg, "fit", fake)
    for args in (["--no-retry"], []):
        with pytest.raises(SystemExit):
            main(["fit", str(stats), *args])
    assert seen[0].get("retry") is False and "retry" not in seen[1]
