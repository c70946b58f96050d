"""Issue 30's list: each item a clear error or warning, nothing half-written, memory flat in n.

Every test here failed before the fix it names (report injection, unseeded float noise not
marked, deep or huge JSON, a response column past the table, data echoed in an error, silent
conversions of y and of boolean parameters, a ledger symlink that dodged the budget, the private
``_reproducible``, zero vertical noise, floating-point sums, Parquet and CSV memory)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from fractions import Fraction

import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.privacy import gaussian as privacy
from bayes_dpreg.privacy.gram import Gram, _within, exponent, quantize
from bayes_dpreg.privacy.ledger import BudgetExceededError, PrivacyLedger
from bayes_dpreg.privacy.noisy_stats import FloatNoiseWarning, StatsFileError

KW = dict(epsilon=1.0, delta=1e-5, x_bound=3.0, y_bound=1.0)


def _data(n: int = 300, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.clip(X @ np.linspace(-0.5, 0.5, d) + 0.1 * rng.normal(size=n), -1, 1)


# --------------------------------------------------------------------------- the report


def test_report_escapes_every_value_from_a_file(tmp_path):
    from bayes_dpreg.report import write_report

    hostile = "<script>alert(1)</script>|[x](javascript:y)"
    stats = [bd.release(*_data(seed=j), **KW, seed=j, name=f"{hostile}{j}") for j in range(2)]
    idata = bd.fit(stats, method="fast", coef_names=[hostile, "b", "c"])
    path = write_report(tmp_path / "r.html", idata)
    html, md = path.read_text(), path.with_suffix(".md").read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "[x](javascript" not in md and "\\[x\\](javascript" in md and "\\|" in md  # no link, no cell break


# --------------------------------------------------------------------------- float noise


def test_unseeded_float_noise_is_marked_not_private_and_warns_everywhere(tmp_path):
    X, y = _data()
    with pytest.warns(FloatNoiseWarning, match="not private"):
        s = bd.release(X, y, **KW, noise="float", name="a")
    assert not s.private and not s.reproducible_seed
    path = s.save(tmp_path / "a.json")
    assert json.loads(path.read_text())["payload"]["private"] is False
    with pytest.warns(FloatNoiseWarning):
        t = bd.load_stats(path)
    with pytest.warns(FloatNoiseWarning):
        bd.fit([t], method="fast")
    with warnings.catch_warnings():
        warnings.simplefilter("error", bd.NotPrivateWarning)
        d = bd.release(X, y, **KW, name="b")  # the default: discrete, private, silent
    assert d.private and json.loads(d.save(tmp_path / "b.json").read_text())["payload"]["private"] is True


def test_a_file_that_claims_privacy_its_noise_lacks_is_refused(tmp_path):
    with pytest.warns(FloatNoiseWarning):
        s = bd.release(*_data(), **KW, noise="float")
    path = s.save(tmp_path / "a.json")
    doc = json.loads(path.read_text())
    doc["payload"]["private"] = True
    from bayes_dpreg.privacy.noisy_stats import _digest

    doc["sha256"] = _digest(doc["payload"])
    path.write_text(json.dumps(doc))
    with pytest.raises(StatsFileError, match="private=True"):
        bd.load_stats(path)


def test_the_private_reproducible_switch_is_gone():
    with pytest.raises(TypeError, match="_reproducible"):
        bd.release(*_data(), **KW, seed=1, _reproducible=False)


# --------------------------------------------------------------------------- files


def test_deeply_nested_and_huge_integer_json_are_statistics_file_errors(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(StatsFileError, match="deep.json"):
        bd.load_stats(deep)
    s = bd.release(*_data(), **KW, seed=0)
    path = s.save(tmp_path / "big.json")
    text = path.read_text().replace(f'"n": {s.n}', '"n": ' + "9" * 5000)
    path.write_text(text)
    with pytest.raises(StatsFileError, match="big.json"):
        bd.load_stats(path)


def test_cli_response_column_past_the_table_is_a_clean_error(tmp_path, capsys):
    from bayes_dpreg.cli import main

    csv = tmp_path / "t.csv"
    csv.write_text("".join(f"{i * 0.1},{i * 0.2},{i * 0.05}\n" for i in range(20)))
    rc = main(["release", str(csv), "--y-column", "7", "-o", str(tmp_path / "o.json"), *_cli_kw()])
    assert rc == 2 and "out of range" in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def _cli_kw() -> list[str]:
    return ["--epsilon", "1", "--delta", "1e-5", "--x-bound", "3", "--y-bound", "1"]


@pytest.mark.parametrize("bad_row", ["0.123456,0.654321\n", "0.5,secret-value-42,0.1\n"])
def test_a_malformed_csv_row_is_never_echoed(tmp_path, bad_row):
    csv = tmp_path / "t.csv"
    csv.write_text("a,b,y\n" + "0.1,0.2,0.3\n" * 5 + bad_row + "0.1,0.2,0.3\n")
    with pytest.raises(ValueError) as info:
        bd.release(str(csv), "y", **KW)
    msg = str(info.value)
    assert "0.123456" not in msg and "secret-value-42" not in msg and "t.csv" in msg


# --------------------------------------------------------------------------- inputs


@pytest.mark.parametrize(
    "y, kind",
    [
        (np.ones(300, dtype=bool), "booleans"),
        (np.ones(300) + 1j, "complex"),
        (np.array(["1.0"] * 300), "strings"),
        (np.array([1.0] * 300, dtype=object), "Python objects"),
    ],
)
def test_non_real_responses_are_refused(y, kind):
    X, _ = _data()
    with pytest.raises(ValueError, match=f"y must hold real numbers, got {kind}"):
        bd.release(X, y, **KW)


def test_masked_arrays_are_refused():
    X, y = _data()
    with pytest.raises(ValueError, match="masked"):
        bd.release(np.ma.masked_array(X, mask=X > 2), y, **KW)
    with pytest.raises(ValueError, match="masked"):
        bd.release(X, np.ma.masked_array(y, mask=y > 0.5), **KW)


@pytest.mark.parametrize("name", ["epsilon", "delta", "x_bound", "y_bound"])
def test_booleans_are_not_numbers_here(name):
    X, y = _data()
    with pytest.raises(ValueError, match=name):
        bd.release(X, y, **(KW | {name: True}))


def test_a_ledger_symlink_charges_its_target(tmp_path):
    real = tmp_path / "real.json"
    PrivacyLedger(real, epsilon_budget=1.2, delta_budget=1e-4)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    bd.release(*_data(), **KW, ledger=link)
    assert link.is_symlink()
    assert len(PrivacyLedger(real).entries) == 1
    with pytest.raises(BudgetExceededError, match="budget"):
        bd.release(*_data(seed=1), **KW, ledger=link)
    assert len(PrivacyLedger(real).entries) == 1


def test_vertical_release_refuses_zero_noise_and_warns_on_seeded_noise():
    from bayes_dpreg.systems import vertical as V

    block = np.random.default_rng(0).uniform(-1, 1, size=(50, 2))
    with pytest.raises(ValueError, match="noise_std"):
        V.release_party_dgm(block, 0.0, np.random.default_rng(0))
    with pytest.warns(bd.SeededReleaseWarning):
        V.release_party_dgm(block, 0.5, np.random.default_rng(0))


# --------------------------------------------------------------------------- exact sums


def test_sums_are_exact_and_do_not_depend_on_the_order_of_the_rows():
    X, y = _data(n=5000, d=4)
    X[:7] *= 1e-9  # tiny and large terms: a floating-point sum would depend on the order
    X[7] *= 1e6
    Xc, yc, _ = privacy.clip(X, y, 3.0, 1.0)
    g = Gram.of_rows(Xc, yc, 3.0, 1.0, False)
    perm = np.random.default_rng(1).permutation(len(y))
    h = Gram(g.e)
    for part in np.array_split(perm, 7):  # another order, in batches
        h.merge(Gram.of_rows(Xc[part], yc[part], 3.0, 1.0, False))
    assert (g.integers() == h.integers()).all()
    ex, ey = exponent(3.0), exponent(1.0)
    Xq, yq = _within(Xc[:200], yc[:200], ex, ey, 3.0, 1.0)
    q = [
        [Fraction(int(v)) * 2**ex for v in quantize(r, ex)] + [Fraction(int(quantize(t, ey))) * 2**ey]
        for r, t in zip(Xq, yq)
    ]
    exact = [[sum(row[i] * row[j] for row in q) for j in range(5)] for i in range(5)]
    vals = Gram.of_rows(Xc[:200], yc[:200], 3.0, 1.0, False).values()
    assert all(vals[i, j] == float(exact[i][j]) for i in range(5) for j in range(5))  # one rounding, at the end
    assert np.all(np.linalg.norm(np.asarray(q, dtype=float)[:, :4], axis=1) <= 3.0)  # still within the bound
    assert np.abs(vals[:4, :4] - Xc[:200].T @ Xc[:200]).max() < 3e-3  # the grid is 2^-18 here


def test_discrete_release_rounds_the_exact_sums_once():
    X, y = _data(n=2000, d=3)
    s = bd.release(X, y, **KW)
    k = privacy.calibrate(1.0, 1e-5, 3.0, 1.0, noise="discrete", d=3, n=2000).grid_S
    assert np.all(np.fmod(s.S, 2.0**k) == 0)


# --------------------------------------------------------------------------- memory


CHILD = """
import resource, sys, warnings
warnings.simplefilter("ignore")
import bayes_dpreg as bd
bd.release(sys.argv[1], "y", epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1.0)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def _peak_mb(path: str) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_a_single_file_streams_with_flat_memory(tmp_path, kind):
    """1e6 x 20 rows (160 MB of float64, 0.13 GB of CSV) cost at most 60 MB more than 100 rows
    (the Parquet reader kept every row group: +400 MB; 4 MB CSV blocks: +300 MB)."""
    small, big = str(tmp_path / f"s.{kind}"), str(tmp_path / f"b.{kind}")
    _write(kind, small, 100)
    _write(kind, big, 1_000_000)
    assert _peak_mb(big) - _peak_mb(small) < 60


def _write(kind: str, path: str, n: int, d: int = 20, rows: int = 100_000) -> None:
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    names = [f"x{k}" for k in range(d)] + ["y"]
    writer = None
    for i in range(0, n, rows):
        m = min(rows, n - i)
        t = pa.table(dict(zip(names, np.round(rng.uniform(-0.2, 0.2, size=(d + 1, m)), 3))))
        if writer is None:
            writer = pq.ParquetWriter(path, t.schema) if kind == "parquet" else pcsv.CSVWriter(path, t.schema)
        writer.write_table(t)
    writer.close()
