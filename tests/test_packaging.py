"""What `pip install .` ships: every subpackage and the package data the code loads, and nothing
of the repository's scripts (paper/, studies/, benchmarks/) or of their shared code (lab/)."""

import fnmatch
import pkgutil
import re
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
    from bayes_dpreg.model.prior import bundled_models

    monkeypatch.chdir(tmp_path)
    assert {"default", "alparslan2023"} <= set(bundled_models())
    assert bd.load_model("default").prior == bd.Prior()
    assert bd.load_model("alparslan2023").prior.a == 20
    import pytest

    with pytest.raises(FileNotFoundError, match="not a bundled model"):
        bd.load_model("nope")


def test_import_loads_no_heavy_module():
    """arviz (1.2-1.6 s), matplotlib and scipy.optimize load on first use, not at `import bayes_dpreg`."""
    import subprocess
    import sys

    code = ("import sys, bayes_dpreg; print(','.join(m for m in ('arviz', 'matplotlib', 'scipy.optimize', 'pandas', "
            "'xarray', 'opendp', 'pyarrow', 'dask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"imported at package import: {out}"


SCRIPT_FOLDERS = ("paper", "studies", "benchmarks", "lab")  # lab/: the scripts' shared code


def test_the_wheel_ships_the_library_and_no_paper_or_study_code():
    """setuptools' discovery under the pyproject's patterns (what the wheel packs) finds only
    ``bayes_dpreg`` and its subpackages; the paper's experiment runner is not among them."""
    import setuptools

    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    found = setuptools.find_namespace_packages(where=str(ROOT), include=include)
    assert "bayes_dpreg" in found and all(p.split(".")[0] == "bayes_dpreg" for p in found), found
    for folder in SCRIPT_FOLDERS:
        assert (ROOT / folder).is_dir(), folder
        assert not any(fnmatch.fnmatch(folder, pat) for pat in include), folder
    assert (ROOT / "paper" / "experiments.py").exists()
    assert not (ROOT / "bayes_dpreg" / "experiments.py").exists()
    import bayes_dpreg

    installed = {m.name.rsplit(".", 1)[-1] for m in pkgutil.walk_packages(bayes_dpreg.__path__, "bayes_dpreg.")}
    paper = {p.stem for p in (ROOT / "paper").glob("*.py")}
    assert {"experiments", "reproduce"} <= paper
    assert "mechanisms" in installed and not installed & paper, installed & paper


def test_the_scripts_are_packages_that_import_without_path_edits():
    """paper/, studies/, benchmarks/ and lab/ are packages run from the repository root
    (``python -m studies.coverage``); no script reaches another through ``sys.path``."""
    scripts = [py for folder in SCRIPT_FOLDERS for py in (ROOT / folder).rglob("*.py")]
    assert len(scripts) > len(SCRIPT_FOLDERS), scripts
    for folder in SCRIPT_FOLDERS:
        assert (ROOT / folder / "__init__.py").exists(), f"{folder}/ is not a package"
    for py in scripts:
        assert "sys.path" not in py.read_text(), f"{py.relative_to(ROOT)} edits sys.path"


def test_the_library_imports_no_paper_study_or_benchmark_code():
    modules = {p.stem for folder in SCRIPT_FOLDERS for p in (ROOT / folder).glob("*.py")} | set(SCRIPT_FOLDERS)
    pattern = re.compile(r"^\s*(?:from|import)\s+(\w+)", re.M)
    for py in (ROOT / "bayes_dpreg").rglob("*.py"):
        src = py.read_text()
        bad = sorted(set(pattern.findall(src)) & modules)
        assert not bad, f"{py.relative_to(ROOT)} imports {bad}"
        assert "sys.path" not in src, f"{py.relative_to(ROOT)} edits sys.path"


def test_the_command_line_has_no_reproduce_subcommand(capsys):
    """The paper's experiments run from the repository (``python -m paper.reproduce``), not ``bayes-dpreg``."""
    import pytest

    from bayes_dpreg.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "fig2"])
    assert exc.value.code == 2 and "invalid choice: 'reproduce'" in capsys.readouterr().err


def test_import_leaves_jax_32bit_and_the_api_computes_in_64bit():
    """No side effect at import: the caller's JAX stays in 32-bit mode; fit and compare still
    compute in float64 (under a context) and give the same answers as in a process that
    called bayes_dpreg.enable_x64(); the low-level chain driver refuses 32-bit mode."""
    code = """
import sys, warnings, numpy as np, jax, jax.numpy as jnp
import bayes_dpreg as bd
GLOBAL = sys.argv[1] == "global"
if GLOBAL:
    bd.enable_x64()
else:
    assert not jax.config.jax_enable_x64, "import changed jax_enable_x64"
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, (600, 2)); y = np.clip(X @ [0.5, -0.2] + 0.1 * rng.standard_normal(600), -1, 1)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    stats = [bd.release(Xj, yj, epsilon=1.0, delta=1e-5, x_bound=1.5, y_bound=1.0, seed=[1, j], name=f"p{j}")
             for j, (Xj, yj) in enumerate(bd.split_parties(X, y, 2))]
    idata = bd.fit(stats, method="fast", seed=0)
    table, _ = bd.compare(stats)
theta = idata.posterior["theta"].values
assert theta.dtype == np.float64
if not GLOBAL:
    assert not jax.config.jax_enable_x64, "fit left jax_enable_x64 on"
    assert jnp.zeros(1).dtype == jnp.float32
    from bayes_dpreg.samplers.base import run_chains
    try:
        run_chains(None, None, None, None, None, num_chains=1, num_warmup=1, num_samples=1)
    except RuntimeError as exc:
        assert "enable_x64" in str(exc)
    else:
        raise AssertionError("the chain driver ran in 32-bit mode")
print(repr(float(theta.mean())), repr(float(table["log_evidence"].iloc[0])))
"""
    import subprocess
    import sys

    outs = []
    for mode in ("scoped", "global"):
        out = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        outs.append(out.stdout.split())
    assert outs[0] == outs[1]
