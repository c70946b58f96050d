"""The library's shape (issue 33): no import circles between its modules, no function over 100 lines."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bayes_dpreg"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PACKAGE.rglob("*.py"):
        name = ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at any depth of the file, lazily or not)."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    hit = full if full in mods else target if target in mods else None
                    if hit and hit != m and hit != "bayes_dpreg":
                        graph[m].add(hit)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in mods and alias.name != m:
                        graph[m].add(alias.name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}
    found: list[list[str]] = []

    def visit(u: str, stack: list[str]) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                found.append(stack[stack.index(v) :] + [v])
            elif not state.get(v):
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for m in sorted(graph):
        if not state.get(m):
            visit(m, [])
    return found


def test_the_import_graph_walker_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles():
    graph = _imports(_modules())
    assert sum(map(len, graph.values())) > 50  # the walker sees the package's imports
    assert _cycles(graph) == []


def test_no_function_over_100_lines():
    long = [
        f"{p.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for p in _modules().values()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 100
    ]
    assert long == []


# The stages data flows through (docs/architecture.md). A module may import its own stage and earlier ones.
STAGES = {
    "runtime": 0,
    "_version": 0,
    "_compat": 0,
    "datasets": 1,
    "privacy": 2,
    "stats": 3,
    "model": 4,
    "samplers": 5,
    "posterior": 6,
    "report": 7,
    "systems": 7,
    "cli": 8,
}


def _stage(module: str) -> int | None:
    parts = module.split(".")
    return STAGES.get(parts[1]) if len(parts) > 1 else None  # the package's __init__ is the public face: exempt


def _back_arrows(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if _stage(m) is not None and _stage(t) is not None and _stage(t) > _stage(m)
    ]


def test_every_module_belongs_to_a_stage():
    top = {m.split(".")[1] for m in _modules() if m.count(".") >= 1}
    assert top - {"__main__"} <= set(STAGES), f"modules outside any stage: {sorted(top - set(STAGES))}"


def test_the_stage_walker_finds_a_back_arrow():
    assert _back_arrows({"bayes_dpreg.privacy.x": {"bayes_dpreg.posterior.y"}}) == [
        "bayes_dpreg.privacy.x -> bayes_dpreg.posterior.y"
    ]
    assert _back_arrows({"bayes_dpreg.posterior.y": {"bayes_dpreg.privacy.x"}}) == []


def test_data_flows_one_way_through_the_stages():
    assert _back_arrows(_imports(_modules())) == []


def test_at_most_14_modules_at_the_top_level():
    top = [p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()]
    assert len(top) <= 14, sorted(top)
