"""The privacy budget ledger: releases recorded, composition by dp_accounting checked against the
closed form, over-budget releases refused before any noise is drawn, the CLI."""

import importlib
import json
import threading

import numpy as np
import pytest
from scipy.optimize import brentq

import bayes_dpreg as bd
from bayes_dpreg.cli import main
from bayes_dpreg.privacy.ledger import BudgetExceededError, PrivacyLedger
from bayes_dpreg.privacy.gaussian import gaussian_delta

rel = importlib.import_module("bayes_dpreg.privacy.mechanisms")  # the module (bayes_dpreg.release is the function)

KW = dict(epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0)


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.4
    return X, np.clip(X @ np.linspace(0.5, -0.5, d) + 0.1 * rng.normal(size=n), -1, 1)


def test_a_new_ledger_needs_a_budget_and_keeps_it(tmp_path):
    path = tmp_path / "ledger.json"
    with pytest.raises(ValueError, match="give epsilon_budget"):
        PrivacyLedger(path)
    with pytest.raises(ValueError, match="delta_budget"):
        PrivacyLedger(path, 1.0, 1.5)
    PrivacyLedger(path, 3.0, 1e-5)
    assert PrivacyLedger(path).budget == (3.0, 1e-5)
    with pytest.raises(ValueError, match="recorded epsilon budget is 3.0"):
        PrivacyLedger(path, 5.0, 1e-5)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a bayes_dpreg privacy ledger"):
        PrivacyLedger(tmp_path / "bad.json")


@pytest.mark.parametrize("k", [1, 2, 5])
def test_composition_matches_the_closed_form_for_gaussians(tmp_path, k):
    """k Gaussian mechanisms with noise multiplier m compose exactly to one with m / sqrt(k):
    the ledger's epsilon (dp_accounting's PLD accountant) must match Balle & Wang's exact curve."""
    book = PrivacyLedger(tmp_path / "l.json", 100.0, 1e-5)
    X, y = _data()
    for _ in range(k):
        s = bd.release(X, y, calibration="joint", ledger=book, **KW)
    m = book.entries[0].noise_multipliers[0]
    assert all(e.release_id for e in book.entries) and book.entries[-1].release_id == s.release_id
    exact = brentq(lambda e: gaussian_delta(m / np.sqrt(k), e) - 1e-5, 1e-6, 100.0)
    assert book.spent()["epsilon_pld"] == pytest.approx(exact, rel=2e-3)
    assert book.spent()["epsilon_pld"] >= exact * (1 - 1e-9)  # the accountant's bound is pessimistic


def test_over_budget_release_is_refused_before_any_noise(tmp_path, monkeypatch):
    book = PrivacyLedger(tmp_path / "l.json", 1.2, 1e-5)  # eps = 1 then ssp, bs or adassp at eps = 1: 1.29-1.47 (PLD)
    X, y = _data()
    bd.release(X, y, ledger=book, **KW)
    called = []
    monkeypatch.setattr(rel, "discrete_gaussian", lambda *a, **k: called.append(1))
    for fn in (bd.release, bd.release_bs, bd.release_adassp):
        with pytest.raises(BudgetExceededError, match="over the budget"):
            fn(X, y, ledger=str(book.path), **KW)
    assert not called and len(book.entries) == 1
    # a smaller release still fits (PLD composition, not the sum of epsilons)
    monkeypatch.undo()
    bd.release(X, y, ledger=book, **(KW | dict(epsilon=0.4)))
    assert len(book.entries) == 2 and book.spent()["epsilon_pld"] <= 1.2


def test_racing_releases_cannot_both_pass(tmp_path):
    path = tmp_path / "l.json"
    PrivacyLedger(path, 1.2, 1e-5)
    X, y = _data()
    results = []

    def go():
        try:
            bd.release(X, y, ledger=path, **KW)
            results.append("ok")
        except BudgetExceededError:
            results.append("refused")

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == ["ok", "refused", "refused", "refused"]
    assert len(json.loads(path.read_text())["entries"]) == 1


def test_cli_release_with_ledger_and_budget(tmp_path, capsys):
    X, y = _data()
    csv = tmp_path / "d.csv"
    np.savetxt(csv, np.column_stack([X, y]), delimiter=",")
    ledger = tmp_path / "hospital.ledger.json"
    args = ["--epsilon", "1", "--delta", "1e-5", "--x-bound", "2", "--y-bound", "1", "--ledger", str(ledger)]
    assert main(["release", str(csv), *args, "--budget-epsilon", "1.3", "--budget-delta", "1e-5",
                 "-o", str(tmp_path / "a.json")]) == 0
    assert "spent eps = 1" in capsys.readouterr().out
    assert main(["release", str(csv), *args, "-o", str(tmp_path / "b.json")]) == 2
    assert "over the budget" in capsys.readouterr().err and not (tmp_path / "b.json").exists()
    assert main(["budget", str(ledger)]) == 0
    out = capsys.readouterr().out
    assert "budget (eps, delta) = (1.3, 1e-05)" in out and "discrete" in out and "PLD accountant" in out


def test_every_mechanism_records_the_files_release_id(tmp_path):
    X, y = _data()
    book = PrivacyLedger(tmp_path / "l.json", 10.0, 1e-3)
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, ledger=book)
    got = [bd.release(X, y, **kw), bd.release_adassp(X, y, **kw), bd.release_bs(X, y, **kw)]
    ids = [e.release_id for e in book.entries]
    assert ids == [s.release_id for s in got] and all(len(i) == 32 for i in ids) and len(set(ids)) == 3
