"""What a privacy officer checks in the release step: randomness on record, releases that
identify themselves, files that cannot hang or half-write, inputs refused by name."""

import json
import os
import re
import threading
import warnings

import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.cli import main
from bayes_dpreg.privacy.noisy_stats import MAX_ROWS, SeededReleaseWarning, StatsFileError, load_stats
from bayes_dpreg.privacy.gaussian import NotPrivateWarning, clip


def _data(seed=0, n=200, d=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.4
    return X, np.clip(X @ np.linspace(0.5, -0.5, d) + 0.1 * rng.normal(size=n), -1, 1)


def _release(seed=None, name="", **kw):
    X, y = _data()
    return bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, seed=seed, name=name, **kw)


# --------------------------------------------------------------------------- randomness and identity

def test_default_release_uses_os_entropy_and_identifies_itself():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b = _release(name="a"), _release(name="b")
    assert not a.reproducible_seed and not b.reproducible_seed
    assert re.fullmatch(r"[0-9a-f]{32}", a.release_id) and a.release_id != b.release_id
    assert not np.array_equal(a.S, b.S)  # same data, fresh noise


def test_seeded_release_is_recorded_and_warned_at_release_and_at_fit(tmp_path):
    with pytest.warns(SeededReleaseWarning, match="seed"):
        s = _release(seed=3, name="h1")
    assert s.reproducible_seed
    path = s.save(tmp_path / "h1.json")
    with pytest.warns(SeededReleaseWarning):
        loaded = load_stats(path)
    assert loaded.reproducible_seed and loaded.release_id == s.release_id
    with pytest.warns(SeededReleaseWarning, match="h1"):
        bd.fit([loaded], "fast")
    for mech in (bd.release_adassp, bd.release_bs):
        X, y = _data()
        with pytest.warns(SeededReleaseWarning):
            assert mech(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, seed=1).reproducible_seed


def test_fit_warns_on_as_published_statistics():
    X, y = _data()
    with pytest.warns(NotPrivateWarning):
        s = bd.release(X, y, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0, calibration="as_published")
    with pytest.warns(NotPrivateWarning, match="as published"):
        bd.fit([s], "fast")


def test_fit_rejects_a_release_given_twice_and_duplicate_party_names(tmp_path):
    a, b = _release(name="a"), _release(name="b")
    with pytest.raises(ValueError, match="same release"):
        bd.fit([a, b, a], "fast")
    path = a.save(tmp_path / "a.json")
    with pytest.raises(ValueError, match="release_id"):
        bd.fit([load_stats(path), b, load_stats(path)], "fast")
    with pytest.raises(ValueError, match=r"party names must be distinct, got \['a'\]"):
        bd.fit([a, _release(name="a")], "fast")
    bd.fit([a, b], "fast")  # distinct releases are fine


# --------------------------------------------------------------------------- files

def test_save_is_atomic_and_never_overwrites_unless_asked(tmp_path, monkeypatch):
    s = _release(name="p")
    path = s.save(tmp_path / "p.json")
    before = path.read_bytes()
    with pytest.raises(FileExistsError, match="overwrite=True"):
        _release(name="q").save(path)
    assert path.read_bytes() == before
    s2 = _release(name="p2")
    s2.save(path, overwrite=True)
    assert load_stats(path).release_id == s2.release_id

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "link", boom)
    with pytest.raises(OSError, match="disk full"):
        s.save(tmp_path / "new.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.json"]  # no stray temporary file


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_load_refuses_fifos_devices_and_oversized_files(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("e", pytest.raises(StatsFileError, load_stats, fifo)))
    t.start()
    t.join(10)
    assert not t.is_alive(), "load_stats blocked on a FIFO"
    assert "not a regular file" in str(result["e"].value)
    if os.path.exists("/dev/zero"):
        with pytest.raises(StatsFileError, match="not a regular file"):
            load_stats("/dev/zero")
    path = _release(name="p").save(tmp_path / "p.json")
    with pytest.raises(StatsFileError, match="over the 100-byte limit"):
        load_stats(path, max_bytes=100)


def _rewrite(path, **changes):
    from bayes_dpreg.privacy.noisy_stats import _digest

    doc = json.loads(path.read_text())
    doc["payload"].update(changes)
    doc["sha256"] = _digest(doc["payload"])
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("change, message", [
    (dict(n=10**30), "n must be an integer in"),
    (dict(n=True), "'n' must be int"),
    (dict(reproducible_seed="no"), "'reproducible_seed' must be bool"),
    (dict(release_id=7), "'release_id' must be str"),
    (dict(S=[[1.0, True], [True, 1.0]]), "'S' must hold numbers only"),
    (dict(z=["a", "b"]), "'z' must hold numbers only"),
])
def test_load_rejects_mistyped_fields_with_a_valid_checksum(tmp_path, change, message):
    path = _release(name="p").save(tmp_path / "p.json")
    _rewrite(path, **change)
    with pytest.raises(StatsFileError, match=message):
        load_stats(path)


def test_version_1_files_are_read_with_an_id_from_their_checksum(tmp_path):
    from bayes_dpreg.privacy.noisy_stats import _digest

    path = _release(name="old", seed=1).save(tmp_path / "old.json")  # v1 files hold floating-point noise
    doc = json.loads(path.read_text())
    for key in ("release_id", "reproducible_seed", "noise"):
        del doc["payload"][key]
    doc["version"], doc["sha256"] = 1, _digest(doc["payload"])
    path.write_text(json.dumps(doc))
    s = load_stats(path)
    assert s.release_id == "v1-" + doc["sha256"][:32] and not s.reproducible_seed


# --------------------------------------------------------------------------- inputs

@pytest.mark.parametrize("bad, kind", [
    (np.ones((50, 2), dtype=bool), "booleans"),
    (np.ones((50, 2), dtype=complex), "complex numbers"),
    (np.full((50, 2), "1"), "strings"),
])
def test_non_real_features_are_refused(bad, kind):
    with pytest.raises(ValueError, match=kind):
        bd.release(bad, np.zeros(50), epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0)


def test_rows_with_overflowing_norms_are_clipped_along_their_direction():
    X = np.array([[1e200, 1e200], [3.0, -4.0], [0.0, 0.0]])
    Xc, _, rep = clip(X, np.zeros(3), 2.0, 1.0)
    norms = np.linalg.norm(Xc, axis=1)
    assert np.all(norms <= 2.0) and norms[0] > 1.99  # not a zero row
    np.testing.assert_allclose(Xc[0], [np.sqrt(2.0)] * 2, rtol=1e-12)
    np.testing.assert_allclose(Xc[1], [1.2, -1.6], rtol=1e-12)
    assert rep.n_x_clipped == 2 and rep.max_x_norm == pytest.approx(np.sqrt(2) * 1e200)


@pytest.mark.parametrize("kw, message", [
    (dict(x_bound=1e300), "x_bound = 1e\\+300 is outside"),
    (dict(y_bound=1e-300), "y_bound = 1e-300 is outside"),
    (dict(delta=1.0), "delta"),
    (dict(epsilon=-1.0), "epsilon"),
])
def test_extreme_privacy_parameters_fail_by_name(kw, message):
    X, y = _data()
    args = dict(epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0) | kw
    with pytest.raises(ValueError, match=message):
        bd.release(X, y, **args)


def test_n_is_capped():
    s = _release(name="p")
    with pytest.raises(ValueError, match="n must be an integer in"):
        bd.NoisyStats(**(s.to_dict() | dict(n=MAX_ROWS + 1)))


# --------------------------------------------------------------------------- CSV and CLI

@pytest.mark.parametrize("text, message", [
    ("1,2,3\n4,5\n", "Expected 3 columns, got 2"),
    ("1,2,3\n4,,6\n", "missing values .* 2 rows: 1 in column 'f1'. .* drop or impute"),
    ("a,b,y\n1,2,nan\n3,4,5\n", "1 in column 'y'"),  # pyarrow reads nan as missing
    # a first line with an empty field is data, not a header; every missing value is named at once
    ("1,,3,\n4,5,6,\n", "1 in column 'f1'; every row of column 'f3'.* lines that end with a comma"),
    ("a,b,y\n", "no rows"),
    ("a,b,y\n1,2,x\n", "column 'y' is not numeric"),
])
def test_streamed_csv_is_read_strictly(tmp_path, text, message):
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=message):
        bd.release(p, None, epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0)


def test_a_headerless_csv_whose_lines_end_with_a_comma_keeps_its_first_row(tmp_path):
    # the first line's empty last field does not make it a header: all three rows are released
    p = tmp_path / "t.csv"
    p.write_text("0.1,0.2,0.5,\n0.3,0.4,0.25,\n0.2,0.1,0.1,\n")
    s = bd.release(p, "f2", columns=["f0", "f1"], epsilon=1.0, delta=1e-5, x_bound=2.0, y_bound=1.0)
    assert s.n == 3 and s.features == ("f0", "f1")


def test_parquet_streamed_in_small_batches_matches_the_in_memory_release(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(4)
    X = rng.normal(size=(5000, 3)) * 0.8  # some rows beyond the bound: clipped batch by batch
    y = np.clip(X @ [0.5, -0.3, 0.2] + 0.2 * rng.normal(size=5000), -1.5, 1.5)
    table = pa.table({"age": X[:, 0], "dose": X[:, 1], "bmi": X[:, 2], "outcome": y})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=300)
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=1.5, y_bound=1.0, seed=9, noise="float")
    with pytest.warns(bd.ClippingWarning) as rec:
        ref = bd.release(X, y, **kw)
    with pytest.warns(bd.ClippingWarning) as rec2:
        streamed = bd.release(tmp_path / "t.parquet", "outcome", **kw)
    assert str(rec[0].message) == str(rec2[0].message)  # same clipping counts
    np.testing.assert_allclose(streamed.S, ref.S, rtol=0, atol=1e-9)
    np.testing.assert_allclose(streamed.z, ref.z, rtol=0, atol=1e-9)
    assert streamed.n == ref.n and streamed.sigma_S == ref.sigma_S
    batches = [(X[i:i + 77], y[i:i + 77]) for i in range(0, 5000, 77)]
    np.testing.assert_allclose(bd.release(iter(batches), None, **kw).S, ref.S, atol=1e-9)
    sub = bd.release(table, "outcome", columns=["dose", "age"], **kw)
    np.testing.assert_allclose(sub.S, bd.release(X[:, [1, 0]], y, **kw).S, atol=1e-9)
    with pytest.raises(ValueError, match="no response column 'nope'"):
        bd.release(table, "nope", **kw)


@pytest.mark.parametrize("fn", [bd.release_adassp, bd.release_bs])
def test_adassp_and_bs_stream_a_table_like_the_in_memory_release(tmp_path, fn):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(6)
    X = rng.normal(size=(3000, 3)) * 0.8
    y = np.clip(X @ [0.5, -0.3, 0.2] + 0.2 * rng.normal(size=3000), -1.5, 1.5)
    pq.write_table(pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}), tmp_path / "t.parquet",
                   row_group_size=250)
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=1.5, y_bound=1.0, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fn(X, y, **kw)
        got = fn(tmp_path / "t.parquet", "y", **kw)
    np.testing.assert_allclose(got.S, ref.S, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.z, ref.z, rtol=0, atol=1e-9)
    assert got.n == ref.n and got.mechanism == ref.mechanism
    if fn is bd.release_bs:
        assert got.u == pytest.approx(ref.u, abs=1e-9)
    else:
        assert got.lambda_min == pytest.approx(ref.lambda_min, abs=1e-9)


def test_dask_frame_on_a_local_cluster_matches_the_in_memory_release():
    """Partial sums per partition on the workers, noise once on the caller's side."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")

    rng = np.random.default_rng(5)
    X = rng.normal(size=(4000, 3)) * 0.8
    y = np.clip(X @ [0.5, -0.3, 0.2] + 0.2 * rng.normal(size=4000), -1.5, 1.5)
    frame = dd.from_pandas(pd.DataFrame({"age": X[:, 0], "dose": X[:, 1], "bmi": X[:, 2], "outcome": y}),
                           npartitions=7)
    kw = dict(epsilon=1.0, delta=1e-5, x_bound=1.5, y_bound=1.0, seed=9, noise="float")
    with pytest.warns(bd.ClippingWarning) as rec:
        ref = bd.release(X, y, **kw)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        with pytest.warns(bd.ClippingWarning) as rec2:
            got = bd.release(frame, "outcome", **kw)
        sub = bd.release(frame, "outcome", columns=["dose", "age"], **kw)
    assert str(rec[0].message) == str(rec2[0].message)
    np.testing.assert_allclose(got.S, ref.S, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.z, ref.z, rtol=0, atol=1e-9)
    assert got.n == ref.n
    np.testing.assert_allclose(sub.S, bd.release(X[:, [1, 0]], y, **kw).S, atol=1e-9)
    pb = bd.propose_bounds(frame, "outcome", epsilon=2.0, quantile=0.9)  # one partition at a time
    assert pb.n_rows == 4000
    with pytest.raises(ValueError, match="no response column 'nope'"):
        bd.release(frame, "nope", **kw)


def test_cli_release_names_parties_refuses_overwrite_and_offers_every_mechanism(tmp_path, capsys):
    X, y = _data()
    csv = tmp_path / "d.csv"
    np.savetxt(csv, np.column_stack([X, y]), delimiter=",", header="a,b,y", comments="")
    args = ["--epsilon", "1", "--delta", "1e-5", "--x-bound", "2", "--y-bound", "1"]
    assert main(["release", str(csv), *args, "-o", str(tmp_path / "hospital_a.json")]) == 0
    a = load_stats(tmp_path / "hospital_a.json")
    assert a.name == "hospital_a" and not a.reproducible_seed
    before = (tmp_path / "hospital_a.json").read_bytes()
    assert main(["release", str(csv), *args, "-o", str(tmp_path / "hospital_a.json")]) == 2
    assert "--force" in capsys.readouterr().err
    assert (tmp_path / "hospital_a.json").read_bytes() == before
    assert main(["release", str(csv), *args, "--name", "B", "--force", "-o", str(tmp_path / "hospital_a.json")]) == 0
    assert load_stats(tmp_path / "hospital_a.json").name == "B"
    for mech in ("bs", "adassp"):
        assert main(["release", str(csv), *args, "--mechanism", mech, "-o", str(tmp_path / f"{mech}.json")]) == 0
        assert load_stats(tmp_path / f"{mech}.json").mechanism == mech
    assert main(["release", str(csv), *args, "--intercept", "-o", str(tmp_path / "ic.json")]) == 0
    assert load_stats(tmp_path / "ic.json").d == 3
    bs_ic = ["--mechanism", "bs", "--intercept", "--bound-quantile", "0.95", "-o", str(tmp_path / "bs_ic.json")]
    assert main(["release", str(csv), *args, *bs_ic]) == 0  # y^T y released too: release(..., yty=True)
    s = load_stats(tmp_path / "bs_ic.json")
    assert (s.mechanism, s.d, s.bound_quantile, s.meta["intercept"]) == ("bs", 3, 0.95, True) and s.u is not None
    assert main(["release", str(csv), *args, "--mechanism", "adassp", "--intercept", "-o", str(tmp_path / "x.json")]) == 2
    assert "only available for the ssp and bs mechanisms" in capsys.readouterr().err
    with pytest.warns(SeededReleaseWarning):
        assert main(["release", str(csv), *args, "--seed", "1", "-o", str(tmp_path / "s.json")]) == 0
    ragged = tmp_path / "r.csv"
    ragged.write_text("1,2,3\n4,5\n")
    assert main(["release", str(ragged), *args, "-o", str(tmp_path / "r.json")]) == 2
    assert "Expected 3 columns" in capsys.readouterr().err and not (tmp_path / "r.json").exists()
    assert main(["release", str(csv), *args, "--y-column", "a", "--columns", "b", "-o", str(tmp_path / "yc.json")]) == 0
    assert load_stats(tmp_path / "yc.json").d == 1
