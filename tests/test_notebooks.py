"""Every notebook's code cells run top to bottom (so the notebooks cannot rot)."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


# `-m slow` (about 50 s): `.ci/run` executes every notebook anyway, in a real kernel from its own folder
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(path.parent)  # from notebooks/, as Jupyter runs them
    cells = json.loads(path.read_text())["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            text = "".join(cell["source"])
            source = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("%"))
            exec(compile(source, f"{path.name}", "exec"), namespace)
