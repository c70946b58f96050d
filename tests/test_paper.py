"""The paper's experiment runner (``paper/experiments.py``, not in the wheel) on tiny settings:
structure, agreement with fit(), and the errors of ``paper/reproduce.py``."""

import csv

import numpy as np
import pytest

import bayes_dpreg as bd

from paper import experiments as ex
from paper.reproduce import main


@pytest.fixture(scope="module")
def reps():
    return ex.make_replicates(n=2000, d=2, J=2, epsilon=1.0, reps=3, seed=5)


def test_replicates_share_data_across_epsilon_and_differ_in_noise(reps):
    other = ex.make_replicates(n=2000, d=2, J=2, epsilon=10.0, reps=3, seed=5)
    for a, b in zip(reps, other):
        np.testing.assert_array_equal(a.theta, b.theta)
        np.testing.assert_array_equal(a.exact[0], b.exact[0])
        assert a.ssp[0].sigma_S > b.ssp[0].sigma_S
        assert not np.array_equal(a.ssp[0].S, b.ssp[0].S)
    assert reps[0].ssp[0].delta == pytest.approx(1 / 2000)


def test_batched_fast_and_adassp_equal_fit(reps):
    out = ex.run_methods(reps, ["fast", "adassp"])
    for r, rep in enumerate(reps):
        idata = bd.fit(rep.ssp, "fast", rep.prior, sigma2="code", num_samples=2)
        np.testing.assert_allclose(out["fast"].mean[r], idata.posterior.attrs["posterior_mean"], rtol=1e-10)
        ada = bd.fit(rep.adassp, "adassp")
        np.testing.assert_allclose(out["adassp"].mean[r], ada.posterior.theta.values[0, 0], rtol=1e-10)


def test_batched_fixeds_agrees_with_the_exact_posterior_when_noise_is_small():
    rr = ex.make_replicates(n=20000, d=2, J=2, epsilon=1e4, reps=2, seed=1)
    out = ex.run_methods(rr, ["fixeds"], num_iterations=2000, thin=10)
    for r, rep in enumerate(rr):
        post = ex.nonprivate_posterior(rep)
        sd = np.sqrt(np.diag(np.asarray(post.theta_cov)))
        assert np.all(np.abs(out["fixeds"].mean[r] - np.asarray(post.mean)) < 0.5 * sd + 1e-3)
        assert out["fixeds"].draws.shape == (2, 100, 2)


def test_fig2_writes_replications_summaries_and_figures(tmp_path):
    ex.fig2(tmp_path, reps=3, num_iterations=400, d_values=(2,), J_values=(2,), eps_values=(1.0,),
            n=2000, methods=("fixeds", "fast", "adassp"), command="test", log=lambda *_: None)
    for f in ("fig2_replications.csv", "fig2_summary.csv", "fig2_mse.png", "fig2_prediction.png",
              "fig4_summary.csv", "fig4_mmd.png", "run.md"):
        assert (tmp_path / f).exists(), f
    rows = list(csv.DictReader(open(tmp_path / "fig2_summary.csv")))
    assert {r["method"] for r in rows} == {"fixeds", "fast", "adassp", "nonprivate"}
    assert all(float(r["mse"]) >= 0 and int(r["reps"]) == 3 for r in rows)
    mmd = {r["method"] for r in csv.DictReader(open(tmp_path / "fig4_summary.csv"))}
    assert mmd == {"fixeds", "fast"}  # a point estimate has no posterior to compare


def test_table1_puts_the_paper_beside_both_calibrations(tmp_path, shared_data):
    ex.table1(tmp_path, reps=2, num_iterations=100, datasets=("power_plant",), J_values=(1,),
              methods=("fast", "adassp"), data_dir=shared_data, log=lambda *_: None)
    md = (tmp_path / "table1.md").read_text()
    assert "| 1 | power_plant | paper | 0.0129 | 0.0139 |" in md
    assert "| as_published |" in md and "| auto |" in md


def test_coverage_table(tmp_path):
    ex.coverage(tmp_path, reps=10, num_iterations=100, n=2000, J_values=(1,), eps_values=(1.0,),
                methods=("fast", "naive"), log=lambda *_: None)
    rows = list(csv.DictReader(open(tmp_path / "coverage.csv")))
    assert len(rows) == 4 and all(0 <= float(r["coverage"]) <= 1 and int(r["intervals"]) == 20 for r in rows)
    assert (tmp_path / "coverage.md").exists() and (tmp_path / "coverage.png").exists()


def test_reproduce_cli_rejects_two_calibrations_for_fig2(tmp_path, capsys):
    assert main(["fig2", "--calibration", "auto", "as_published", "--out", str(tmp_path)]) == 2
    assert "one calibration" in capsys.readouterr().err


@pytest.mark.slow  # 51 s on 2 cores; the CI budget went to the CLT sampler's tests (pytest -m slow runs it)
def test_fig3_times_each_method(tmp_path):
    # d = 1 and 2 for fixeds (cheap to compile), d = 1 only for normalx-nuts (each d compiles ~10 s)
    ex.fig3(tmp_path, d_values=(1, 2), methods=("fixeds",), num_iterations=20, n=1000, log=lambda *_: None)
    ex.fig3(tmp_path / "nuts", d_values=(1,), methods=("normalx-nuts",), num_iterations=20, n=1000,
            log=lambda *_: None)
    rows = list(csv.DictReader(open(tmp_path / "fig3_times.csv")))
    rows += list(csv.DictReader(open(tmp_path / "nuts" / "fig3_times.csv")))
    assert [(int(r["d"]), r["method"]) for r in rows] == [(1, "fixeds"), (2, "fixeds"), (1, "normalx-nuts")]
    assert all(float(r["seconds_per_iteration"]) > 0 for r in rows)
    assert (tmp_path / "fig3_time_per_iteration.png").exists()


@pytest.mark.slow  # 44 s on 2 cores (pytest -m slow runs it)
def test_fig2_workers_give_the_same_results_as_one_process(tmp_path):
    kw = dict(reps=2, num_iterations=100, d_values=(2,), J_values=(1, 2), eps_values=(1.0, 10.0), n=2000,
              methods=("fixeds", "fast"), mmd=False, log=lambda *_: None)
    ex.fig2(tmp_path / "one", **kw)
    ex.fig2(tmp_path / "two", workers=2, **kw)
    one, two = (sorted(map(tuple, (r.values() for r in csv.DictReader(open(tmp_path / k / "fig2_replications.csv")))))
                for k in ("one", "two"))
    drop = list(csv.DictReader(open(tmp_path / "one" / "fig2_replications.csv")))[0].keys()
    col = list(drop).index("cell_seconds")
    assert [r[:col] + r[col + 1:] for r in one] == [r[:col] + r[col + 1:] for r in two]
    assert "2 worker processes" in (tmp_path / "two" / "run.md").read_text()


def test_reproduce_cli_rejects_workers_for_fig3(tmp_path, capsys):
    assert main(["fig3", "--workers", "2", "--out", str(tmp_path)]) == 2
    assert "--workers" in capsys.readouterr().err


def test_fig2_with_the_matched_prior_uses_it(tmp_path, monkeypatch):
    seen = []
    real = ex.make_replicates
    monkeypatch.setattr(ex, "make_replicates", lambda **kw: seen.append(kw["prior"]) or real(**kw))
    ex.fig2(tmp_path, reps=2, num_iterations=100, d_values=(2,), J_values=(1,), eps_values=(1.0,), n=2000,
            methods=("fast",), mmd=False, prior="matched", log=lambda *_: None)
    assert seen == [ex.matched_prior]
    assert "matched prior" in (tmp_path / "run.md").read_text()
    assert main(["fig3", "--prior", "matched", "--out", str(tmp_path)]) == 2


def test_the_data_directory_comes_from_the_environment_or_the_repository_not_the_cwd(tmp_path, monkeypatch,
                                                                                       shared_data):
    monkeypatch.delenv(ex.DATA_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert ex.default_data_dir() == shared_data
    rr, ds = ex.real_replicates("power_plant", 1, reps=1, calibration="auto", seed=0)
    assert len(rr) == 1 and ds.X_train.shape[1] == 4
    monkeypatch.setenv(ex.DATA_DIR_ENV, str(tmp_path))
    assert ex.default_data_dir() == tmp_path
    with pytest.raises(FileNotFoundError):
        ex.real_replicates("power_plant", 1, reps=1, calibration="auto", seed=0)


def test_reproduce_cli_refuses_a_device_it_cannot_use(capsys):
    import jax

    other = "gpu" if jax.default_backend() == "cpu" else "cpu"  # this process already runs on its backend
    assert main(["fig3", "--device", other]) == 2
    assert "JAX already runs on" in capsys.readouterr().err
