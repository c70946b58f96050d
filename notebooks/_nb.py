"""Write and execute a notebook from a list of ``(kind, source)`` cells (used by the ``build_*.py`` scripts)."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent


def write_notebook(cells: list[tuple[str, str]], name: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src)
                for kind, src in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # executed from notebooks/, as Jupyter and `jupyter nbconvert --execute` run it
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}).execute()
    path = HERE / f"{name}.ipynb"
    nbformat.write(nb, path)
    print(f"wrote {path}")
    return path
