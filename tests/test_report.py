"""HTML/Markdown reports (bayes_dpreg.report.write_report, bayes-dpreg report / compare --report)."""

import base64
import re
import warnings
from html.parser import HTMLParser

import numpy as np
import pytest

import bayes_dpreg as bd
from bayes_dpreg.cli import main
from bayes_dpreg.report import write_report


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.imgs, self.urls, self.cells = 0, [], [], []
        self._in_td = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tables += tag == "table"
        if tag == "img":
            self.imgs.append(a.get("src", ""))
        for k in ("src", "href"):
            if a.get(k, "").startswith(("http:", "https:", "//")):
                self.urls.append(a[k])
        self._in_td = tag in ("td", "th")

    def handle_data(self, data):
        if self._in_td:
            self.cells.append(data.strip())


def _stats():
    rng = np.random.default_rng(2)
    X = rng.uniform(-0.5, 0.5, size=(3000, 2))
    y = np.clip(X @ [0.6, 0.0] + 0.1 * rng.standard_normal(3000), -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [bd.release(Xj, yj, epsilon=2.0, delta=1e-5, x_bound=1.0, y_bound=1.0, seed=[3, j], name=f"clinic{j}")
                for j, (Xj, yj) in enumerate(bd.split_parties(X, y, 3))]


def _check_page(path, must_contain):
    html = path.read_text()
    page = _Page()
    page.feed(html)
    assert not page.urls and "http://" not in html and "https://" not in html  # nothing from the network
    assert page.imgs and all(src.startswith("data:image/png;base64,") for src in page.imgs)
    for src in page.imgs:
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    for text in must_contain:
        assert text in page.cells, (text, page.cells[:40])
    md = path.with_suffix(".md").read_text()
    assert md.startswith("# ") and ("| party |" in md or "| model |" in md)
    return page


def test_report_of_a_fit_with_comparison(tmp_path):
    stats = _stats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = bd.fit(stats, "fixeds", num_samples=300, num_warmup=300, coef_names=["age", "dose"])
    table, _ = bd.compare(stats, coef_names=["age", "dose"])
    inc = bd.inclusion(stats, coef_names=["age", "dose"])
    page = _check_page(write_report(tmp_path / "r.html", idata, comparison=table, inclusion=inc),
                       ["clinic0", "clinic2", "age", "dose", "{age}", "90% lower", "prior theta", "prior sigma2"])
    # privacy, posterior, its prior sensitivity, comparison, inclusion; forest, trace, prior against
    # posterior, rank, predictive and inclusion figures
    assert page.tables == 5 and len(page.imgs) == 6
    with pytest.raises(ValueError, match="nothing to report"):
        write_report(tmp_path / "x.html")


def test_cli_fit_report_and_compare_report(tmp_path, capsys):
    paths = [str(s.save(tmp_path / f"{s.name}.json")) for s in _stats()]
    assert main(["fit", *paths, "--method", "fast", "-o", str(tmp_path / "post.nc")]) == 0
    assert main(["report", str(tmp_path / "post.nc"), "-o", str(tmp_path / "rep.html"), "--stats", *paths]) == 0
    _check_page(tmp_path / "rep.html", ["clinic1", "theta_0", "pip"])
    assert main(["compare", *paths, "--report", str(tmp_path / "cmp.html")]) == 0
    page = _check_page(tmp_path / "cmp.html", ["{theta_0}"])
    assert page.tables == 2
    assert re.search(r"wrote .*cmp\.html", capsys.readouterr().out)
