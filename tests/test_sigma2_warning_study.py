"""``studies/sigma2_warning.py``: coverage of the fits that warned and of those that did not, by cell."""

import csv

from studies import coverage as cov
from studies import sigma2_warning as sw


def _write(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=[*cov.FIELDS, "variant"])
        w.writeheader()
        for r in rows:
            w.writerow(r)


def test_table_splits_coverage_by_the_warning(tmp_path, capsys):
    def row(cell, rep, warned, c90, c50, method="normalx-clt", **kw):
        return dict(cell=cell, rep=rep, method=method, cover90=c90, cover50=c50, warned_sigma2=warned,
                    prior_sensitivity_sigma2=0.1 if warned else 0.01, sigma2_prior_contraction=1.0, **kw)

    rows = [
        row("paper-d2-J1-eps5", 0, 1, 0.0, 0.0),
        row("paper-d2-J1-eps5", 1, 1, 1.0, 0.5),
        row("paper-d2-J1-eps5", 2, 0, 1.0, 1.0),
        row("paper-d2-J5-eps5", 0, 0, 0.5, 0.5),
        row("paper-d2-J5-eps5", 1, 0, 1.0, 0.5, error="boom"),  # a fit that raised: left out
        row("paper-d2-J5-eps5", 2, 1, 1.0, 1.0, method="fixeds"),  # another method: left out
        dict(cell="paper-d2-J5-eps5", rep=3, method="normalx-clt", cover90=1.0, cover50=1.0),  # older row
    ]
    _write(tmp_path / "rows.csv", rows)
    assert sw.main([str(tmp_path / "rows.csv")]) == 0
    out = capsys.readouterr().out.splitlines()
    one = next(line for line in out if line.startswith("| paper-d2-J1-eps5 "))
    assert "| 3 | 0.67 | 0.500 ± 0.500 (2) | 1.000 ± nan (1) | 0.250 ± 0.250 (2) | 1.000 ± nan (1) | 1.00 |" in one
    more = next(line for line in out if line.startswith("| **more parties** "))
    assert "| 1 | 0.00 | - | 0.500 ± nan (1) |" in more
    assert sw.main([str(tmp_path / "rows.csv"), "--method", "bs"]) == 1
