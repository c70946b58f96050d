"""studies.refit_divergent: only the rows of fits that diverged are replaced, the file keeps its columns and
order, each refit is logged, and a row without a divergence that refits differently stops it before it writes."""

import pytest

from lab.rows import read_rows, write_rows
from studies import refit_divergent as rd

FIELDS = ["cell", "rep", "method", "cover50", "cover90", "sq_error", "max_rhat", "divergences", "error", "variant"]


def _row(rep, divergences, sq=1.0, variant="v"):
    return dict(cell="c", rep=rep, method="normalx-clt", cover50=0.5, cover90=0.9, sq_error=sq, max_rhat=1.0,
                divergences=divergences, error="", variant=variant)


def _fake_refit(changed_check=False):
    def refit(row, data_dir):
        if float(row["divergences"]) > 0:  # the retry: a new fit without divergences, an extra column
            return {**row, "divergences": 0, "sq_error": 2.0, "new_column": 1, "retried": 1,
                    "divergences_before_retry": row["divergences"], "target_accept_prob": 0.95}
        return {**row, "sq_error": 3.0} if changed_check else dict(row)

    return refit


def test_only_divergent_rows_are_replaced_and_logged(tmp_path, monkeypatch):
    path = tmp_path / "paper_priors_replications.csv"
    write_rows(path, [_row(0, 0), _row(1, 3), _row(2, 0), _row(3, 1, variant="w")], FIELDS)
    monkeypatch.setattr(rd, "refit", _fake_refit())
    assert rd.main([str(path), "--variants", "v", "--check", "2", "--workers", "1"]) == 0
    rows = read_rows(path)
    assert list(rows[0]) == FIELDS  # the file's columns, in order: none added
    assert [r["divergences"] for r in rows] == ["0", "0", "0", "1"]  # rep 3 is variant w: not asked for
    assert [r["sq_error"] for r in rows] == ["1.0", "2.0", "1.0", "1.0"]
    (log,) = read_rows(tmp_path / "refit_divergent.csv")
    assert (log["rep"], log["divergences_before"], log["divergences_after"], log["retried"]) == ("1", "3", "0", "1")


def test_a_check_row_that_refits_differently_stops_before_writing(tmp_path, monkeypatch):
    path = tmp_path / "paper_priors_replications.csv"
    write_rows(path, [_row(0, 0), _row(1, 3)], FIELDS)
    before = path.read_text()
    monkeypatch.setattr(rd, "refit", _fake_refit(changed_check=True))
    with pytest.raises(SystemExit, match="refitted differently"):
        rd.main([str(path), "--check", "1", "--workers", "1"])
    assert path.read_text() == before and not (tmp_path / "refit_divergent.csv").exists()
