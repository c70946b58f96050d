"""What `pip install .` ships: every subpackage and the package data the code loads."""

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_and_data_file_is_shipped():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    include = cfg["packages"]["find"]["include"]
    packages = [".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "bayes_dpreg").rglob("__init__.py")]
    missing = [p for p in packages if not any(fnmatch.fnmatch(p, pat) for pat in include)]
    assert not missing, f"subpackages not shipped by pip install .: {missing}"
    data = cfg["package-data"]["bayes_dpreg"]
    for needed in ("templates/report.html.j2", "templates/report.md.j2", "datasets/power_plant_energy.csv",
                   "model_specs/default.toml"):
        assert (ROOT / "bayes_dpreg" / needed).exists()
        assert any(fnmatch.fnmatch(needed, pat) for pat in data), needed


def test_bundled_model_loads_by_name_from_any_directory(tmp_path, monkeypatch):
    import bayes_dpreg as bd
    from bayes_dpreg.prior import bundled_models

    monkeypatch.chdir(tmp_path)
    assert {"default", "alparslan2023"} <= set(bundled_models())
    assert bd.load_model("default").prior == bd.Prior()
    assert bd.load_model("alparslan2023").prior.a == 20
    import pytest

    with pytest.raises(FileNotFoundError, match="not a bundled model"):
        bd.load_model("nope")


def test_import_loads_no_heavy_module():
    """arviz (~0.7 s), matplotlib and scipy.optimize load on first use, not at `import bayes_dpreg`."""
    import subprocess
    import sys

    code = ("import sys, bayes_dpreg; print(','.join(m for m in ('arviz', 'matplotlib', 'scipy.optimize', 'pandas', "
            "'xarray', 'opendp', 'pyarrow', 'dask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"imported at package import: {out}"
