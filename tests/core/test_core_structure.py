"""The layout of ``core`` stays readable: its import graph has no circle, nothing but
``scipy`` is imported inside a function (scipy loads lazily), and no module imports
another module's private (underscore) name."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    return {
        _module_name(p): (p, ast.parse(p.read_text(encoding="utf-8"), str(p)))
        for p in sorted(CORE.rglob("*.py"))
    }


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The dotted module a (possibly relative) ``from … import`` names."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]


def import_graph() -> dict[str, set[str]]:
    """Module → the core modules it imports at module level (a ``from pkg import name``
    depends on ``pkg`` and, when ``name`` is a module, on ``pkg.name``)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, (path, tree) in mods.items():
        for node in _top_level_imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                src = _absolute(m, path, node)
                targets = [src] + [f"{src}.{a.name}" for a in node.names]
            graph[m].update(t for t in targets if t in mods and t != m)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                return stack[stack.index(v) :] + [v]
            if v not in state and (found := visit(v)):
                return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state and (found := visit(u)):
            return found
    return None


def test_core_import_graph_has_no_circle() -> None:
    graph = import_graph()
    assert "core.limb.model" in graph["core.limb.kernel"]  # the walk sees relative imports
    assert "core.geometry.vec3" in graph["core.limb.kernel"]  # and `from pkg import module`
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_no_function_level_imports_but_scipy() -> None:
    bad = []
    for m, (_, tree) in _modules().items():
        top = set(map(id, _top_level_imports(tree)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in top:
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if node.level == 0
                    else ["." + (node.module or "")]
                )
                if not all(n == "scipy" or n.startswith("scipy.") for n in names):
                    bad.append(f"{m}:{node.lineno} imports {names}")
    assert not bad, bad


def test_no_private_name_imported_across_modules() -> None:
    bad = [
        f"{m}:{node.lineno} imports {a.name}"
        for m, (_, tree) in _modules().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for a in node.names
        if a.name.startswith("_")
    ]
    assert not bad, bad


def test_the_cycle_check_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
