"""``studies/criteria.py``: the RMSE ratios are paired over replications, and each criterion of
issue 31 fails where it should."""

import csv

import numpy as np
import pytest

from studies import criteria
from studies.coverage import FIELDS

CELL = "corr-iw-d3-J3-n300-eps0.5-max"  # the correlated suite's first cell
MATCHED = "small-n100-eps0.3"


def _row(cell, rep, method, sq, c90=0.9, c50=0.5, div=0, rhat=1.0):
    return dict(cell=cell, rep=rep, method=method, d=3, cover50=c50, cover90=c90, sq_error=sq, truth_ms=1.0,
                max_rhat=rhat, divergences=div)


def _write(path, rows):
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def test_rmse_ratio_is_paired_over_the_replications_both_fitted():
    a = {(CELL, r): dict(sq_error=4.0) for r in range(10)}
    b = {(CELL, r): dict(sq_error=1.0) for r in range(5)}  # reps 5-9 have no reference: left out
    b.update({("other", r): dict(sq_error=100.0) for r in range(10)})
    assert criteria.paired_ratio(a, b, CELL) == (pytest.approx(2.0), 5)


def test_the_ratios_interval_shows_what_a_few_large_errors_make_of_it():
    """Four replications in 100 with a hundred times the squared error carry the ratio; the bootstrap
    interval spans the cases with fewer and more of them, and holds the ratio; equal errors give a point."""
    eb = np.ones(100)
    ea = np.ones(100)
    ea[:4] = 100.0
    ratio = np.sqrt(ea.mean() / eb.mean())
    lo, hi = criteria.ratio_interval(ea, eb)
    assert 1.0 < lo < ratio < hi and hi > 2.5 and hi - lo > 1.0
    assert criteria.ratio_interval(ea, ea) == (pytest.approx(1.0), pytest.approx(1.0))
    assert criteria.ratio_interval(ea, eb) == (lo, hi)  # seeded


def test_each_criterion_fails_where_it_should(tmp_path):
    rows = [_row(CELL, r, "normalx-clt", 1.0, c90=0.8, div=int(r < 10), rhat=1.02 if r < 3 else 1.0) for r in range(100)]
    rows += [_row(CELL, r, "oracle-clt", 0.5) for r in range(50)]
    _write(tmp_path / "correlated_replications.csv", rows)
    small = [_row(MATCHED, r, "normalx-clt", 1.0, c90=1.0, c50=0.4) for r in range(60)]
    _write(tmp_path / "small_replications.csv", small)
    (corr,) = criteria.cell_rows("correlated", tmp_path, tmp_path, "normalx-clt")
    assert corr["paired"] == 50 and corr["ratio"] == pytest.approx(2**0.5)
    assert corr["fails"] == ["90% (> 2 se)", "RMSE / oracle (interval above)", "divergences", "R-hat"]
    (sm,) = criteria.cell_rows("small", tmp_path, tmp_path, "normalx-clt")
    assert sm["fails"] == ["50% (> 2 se)", "90% above 0.95", "reps"] and sm["paired"] == 0  # matched: no oracle
    table = criteria.table(tmp_path, tmp_path, "normalx-clt")
    assert f"| {CELL} | 100 | 0.800 ± 0.000 |" in table and "1.41 to oracle (50; 1.41-1.41)" in table


def test_since_reads_only_the_rows_a_later_version_added(tmp_path, monkeypatch):
    old = [_row(CELL, r, "normalx-clt", 1.0, c90=0.0, div=1, rhat=1.5) for r in range(60)]
    new = [_row(CELL, r, "normalx-clt", 1.0) for r in range(60, 100)]
    _write(tmp_path / "correlated_replications.csv", old + new)
    seen = []

    def at(path, commit):
        seen.append((path.name, commit))
        return [{k: str(v) for k, v in r.items()} for r in old]

    monkeypatch.setattr(criteria, "rows_at", at)
    (corr,) = criteria.cell_rows("correlated", tmp_path, tmp_path, "normalx-clt", since="abc123")
    assert seen == [("correlated_replications.csv", "abc123")]
    assert corr["reps"] == 40 and corr["c90"] == 0.9 and corr["divergent"] == 0.0 and corr["rhat"] == 0.0
    (every,) = criteria.cell_rows("correlated", tmp_path, tmp_path, "normalx-clt")
    assert every["reps"] == 100 and every["divergent"] == 0.6


def test_each_cell_reads_the_first_directory_that_has_it(tmp_path):
    new, old, ref = (tmp_path / n for n in ("new", "old", "ref"))
    for p in (new, old, ref):
        p.mkdir()
    other = "corr-lkj-d5-J3-n300-eps0.5-quantile"
    _write(new / "correlated_replications.csv",
           [_row(CELL, r, "normalx-clt", 1.0, c90=0.95) for r in range(100)]
           + [_row(CELL, r, "oracle-clt", 4.0) for r in range(20)])
    _write(old / "correlated_replications.csv",
           [_row(c, r, "normalx-clt", 1.0, c90=0.5) for c in (CELL, other) for r in range(100)]
           + [_row(c, r, "oracle-clt", 0.25) for c in (CELL, other) for r in range(30)])
    _write(ref / "correlated_replications.csv", [_row(other, r, "oracle", 1.0) for r in range(40)])
    first, second = criteria.cell_rows("correlated", [new, old], ref, "normalx-clt")
    assert (first["cell"], first["source"], first["c90"]) == (CELL, "new", 0.95)
    assert (first["paired"], first["ratio"]) == (20, pytest.approx(0.5))  # the oracle of its own directory
    assert (second["cell"], second["source"], second["c90"]) == (other, "old", 0.5)
    assert (second["paired"], second["ratio"]) == (30, pytest.approx(2.0))  # oracle-clt before the nuts oracle
    table = criteria.table([new, old], ref, "normalx-clt")
    assert "| `new` |" in table and "| `old` |" in table


def test_quantile_cells_pair_only_within_their_directory(tmp_path):
    """Private quantile bounds are not reproducible by a seed: another directory's oracle saw other releases."""
    mine, ref = tmp_path / "mine", tmp_path / "ref"
    for p in (mine, ref):
        p.mkdir()
    cell = "corr-lkj-d5-J3-n300-eps0.5-quantile"
    _write(mine / "correlated_replications.csv", [_row(cell, r, "normalx-clt", 1.0) for r in range(100)])
    _write(ref / "correlated_replications.csv", [_row(cell, r, "oracle", 1.0) for r in range(100)]
           + [_row(CELL, r, "oracle", 1.0) for r in range(100)])
    (row,) = criteria.cell_rows("correlated", [mine], ref, "normalx-clt")
    assert row["cell"] == cell and row["paired"] == 0


def test_variant_reads_the_paper_priors_rows_of_that_variant(tmp_path):
    """``--variant``: in a ``studies.paper_priors`` directory the rows of that prior variant are the
    default's; a directory of the coverage study's rows still serves the cells the variant lacks."""
    import lab.rows

    pp, cov = tmp_path / "pp", tmp_path / "cov"
    pp.mkdir(), cov.mkdir()
    rows = [dict(_row(CELL, r, "normalx-clt", 1.0, c90=0.8), variant="eta2") for r in range(100)]
    rows += [dict(_row(CELL, r, "normalx-clt", 1.0, c90=0.9), variant="eta1") for r in range(100)]
    lab.rows.append_rows(pp / "paper_priors_replications.csv", rows, [*FIELDS, "variant"])
    other = "corr-lkj-d5-J3-n300-eps0.5-quantile"
    _write(cov / "correlated_replications.csv", [_row(other, r, "normalx-clt", 1.0, c90=0.7) for r in range(100)])
    got = {r["cell"]: r for r in criteria.cell_rows("correlated", [pp, cov], tmp_path, "normalx-clt", variant="eta1")}
    assert got[CELL]["c90"] == pytest.approx(0.9) and got[CELL]["source"] == "pp"
    assert got[other]["c90"] == pytest.approx(0.7) and got[other]["source"] == "cov"
    eta2 = criteria.cell_rows("correlated", [pp, cov], tmp_path, "normalx-clt", variant="eta2")
    assert eta2[0]["c90"] == pytest.approx(0.8) and "90%" in eta2[0]["fails"][0]
    with pytest.raises(ValueError, match="do not combine"):
        criteria.cell_rows("correlated", [pp], tmp_path, "normalx-clt", since="HEAD", variant="eta1")


def test_paired_runs_are_compared_on_the_replications_both_fitted_one_variant_each(tmp_path):
    from studies import paired

    fields = ["cell", "rep", "method", "cover50", "cover90", "width90", "sq_error", "max_rhat", "divergences",
              "variant"]

    def write(name, rows):
        with (tmp_path / name).open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)

    row = lambda rep, variant, c90, width, sq: dict(
        cell=CELL, rep=rep, method="normalx-clt", cover50=0.5, cover90=c90, width90=width, sq_error=sq,
        max_rhat=1.0, divergences=0, variant=variant)
    write("new.csv", [row(r, "eta1", float(r % 2), 2.0, 1.0) for r in range(10)])
    write("old.csv", [row(r, "eta1", 0.0, 4.0, 4.0) for r in range(6)] + [row(r, "eta2", 1.0, 1.0, 9.0) for r in range(10)])
    table = paired.table(tmp_path / "new.csv", tmp_path / "old.csv", "normalx-clt", variant="eta1", old_variant="eta1")
    # reps 0-5 in both; 90% coverage 0.5 against 0: differences 0, 1, 0, 1, 0, 1 (sd 0.548, se 0.224)
    assert f"| {CELL} | 6 | 0.500 / 0.000 | +0.500 ± 0.224 | 0.500 / 0.500 | 0.50 | 1.0000 / 2.0000 |" in table
    assert "| all | 6 |" in table
    # --cells: only those cells, in the rows and in the pooled row
    assert CELL not in paired.table(tmp_path / "new.csv", tmp_path / "old.csv", "normalx-clt", variant="eta1",
                                    old_variant="eta1", cells=["another"])


def test_a_variant_names_its_oracle_and_the_variant_of_cells_with_their_own_prior(tmp_path):
    """``Variant(name, oracle, own)``: the oracle's rows are those of the variant ``oracle``; in cells fitted
    with a prior of their own (the real suite's matched cells, the small suite) the rows of ``own``, which a
    change of the default's ``sigma_y^2`` prior leaves as they were."""
    import lab.rows

    pp = tmp_path / "pp"
    pp.mkdir()
    real, matched = "real-power_plant-blocks-default-tau0.2", "real-power_plant-blocks-matched-tau0.2"
    rows = [dict(_row(CELL, r, "normalx-clt", 1.0, c90=0.9), variant="new") for r in range(100)]
    rows += [dict(_row(CELL, r, "normalx-clt", 9.0), variant=v) for v in ("sigma_x", "old") for r in range(100)]
    rows += [dict(_row(CELL, r, "normalx-clt", 4.0), variant="sigma_x_new") for r in range(100)]
    rows += [dict(_row(c, r, "normalx-clt", 1.0, c90=x), variant=v)
             for c, v, x in ((real, "new", 0.91), (real, "old", 0.5), (matched, "old", 0.92)) for r in range(100)]
    lab.rows.append_rows(pp / "paper_priors_replications.csv", rows, [*FIELDS, "variant"])
    v = criteria.Variant("new", "sigma_x_new", "old")
    (corr,) = criteria.cell_rows("correlated", [pp], tmp_path, "normalx-clt", variant=v)
    assert (corr["c90"], corr["paired"], corr["ratio"]) == (pytest.approx(0.9), 100, pytest.approx(0.5))
    got = {r["cell"]: r["c90"] for r in criteria.cell_rows("real", [pp], tmp_path, "normalx-clt", variant=v)}
    assert got == {real: pytest.approx(0.91), matched: pytest.approx(0.92)}
    # without own: the variant's rows everywhere, so the matched cell has none
    got = {r["cell"] for r in criteria.cell_rows("real", [pp], tmp_path, "normalx-clt", variant="new")}
    assert got == {real}
    assert v.flags() == " --variant new --oracle-variant sigma_x_new --own-prior-variant old"
    assert criteria.Variant("eta1").flags() == " --variant eta1"


def test_the_tiny_suite_reads_the_small_parties_default(tmp_path):
    """In the ``tiny`` suite ``fit`` takes ``normalx-nuts``: its rows are the default's there whatever
    ``--default`` names for the other suites, and its oracle is ``oracle`` (the same sampler)."""
    tiny = "tiny-lkj-d2-J3-n50-eps1-max"
    rows = [_row(tiny, r, "normalx-nuts", 1.0, div=int(r < 6)) for r in range(100)]
    rows += [_row(tiny, r, "normalx-clt", 9.0, c90=0.0) for r in range(100)]  # not fit's method here: ignored
    rows += [_row(tiny, r, "oracle", 0.25) for r in range(100)]
    _write(tmp_path / "tiny_replications.csv", rows)
    (row,) = criteria.cell_rows("tiny", tmp_path, tmp_path, "normalx-clt")
    assert (row["c90"], row["paired"], row["ratio"]) == (pytest.approx(0.9), 100, pytest.approx(2.0))
    assert row["fails"] == ["RMSE / oracle (interval above)", "divergences"]
