"""The layout of ``core`` stays readable: its import graph has no circle, nothing but
``scipy`` is imported inside a function (scipy loads lazily), no module imports or reads
another module's private (underscore) name, and each shared geometry helper (wrap, cross,
unit, Rodrigues, matrix→quaternion, relative rotation angle, rigid inverse, Euler-family
choice) has one definition in core/, addon/, tools/ and benchmarks/."""

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


def _own_private_names(tree: ast.Module) -> set[str]:
    """Underscore names a module defines: functions, classes, assigned names and
    attributes (``self._x = …``, class fields), and ``object.__setattr__(obj, "_x", …)``."""
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Name | ast.arg):
            own.add(node.id if isinstance(node, ast.Name) else node.arg)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            own.add(node.attr)
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                own.add(name.value)
    return {n for n in own if n.startswith("_")}


def private_attribute_reads(trees: dict[str, ast.Module]) -> list[str]:
    """``obj._name`` reads whose ``_name`` the reading module does not define (``self`` /
    ``cls`` aside: a class's own members, including inherited ones)."""
    bad = []
    for m, tree in trees.items():
        own = _own_private_names(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr not in own
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                bad.append(f"{m}:{node.lineno} reads .{node.attr}")
    return bad


def test_no_private_attribute_read_across_modules() -> None:
    bad = private_attribute_reads({m: tree for m, (_, tree) in _modules().items()})
    assert not bad, bad
    reader = ast.parse("class A:\n    def f(self, sk):\n        self._x = sk._clip\n")
    assert private_attribute_reads({"m": reader}) == ["m:3 reads ._clip"]


ROOT = CORE.parent
#: Where each of the shared geometry helpers is defined: a function of one of these names
#: (leading underscores aside) anywhere else in core/, addon/, tools/ or benchmarks/ is a
#: second definition. Call the one here instead.
HOME: dict[str, tuple[str, ...]] = {
    "wrap": ("core/geometry/vec3.py",),
    "wrap_angle": ("core/geometry/rotations.py",),
    "wrap_to_pi": (),
    "cross": ("core/geometry/vec3.py",),
    "cross_rows": ("core/geometry/vec3.py",),
    # the goal and limb validators normalise what they accept (core/goals.py: |v| = 1
    # within UNIT_TOLERANCE; core/limb/model.py: any non-zero vector)
    "unit": ("core/goals.py", "core/limb/model.py"),
    "unit_rows": ("core/geometry/vec3.py",),
    "norm_rows": ("core/geometry/vec3.py",),
    "normalize": (),
    "normalise": ("core/geometry/rotations.py",),
    "rodrigues": ("core/geometry/rotations.py",),
    "rotation_about": ("core/geometry/rotations.py",),
    "axis_angle_to_matrix": ("core/geometry/rotations.py",),
    "hinge_matrix": (),
    "quaternion_of": ("core/geometry/rotations.py",),
    "matrix_to_quat": ("core/geometry/rotations.py",),
    "quat_of": (),
    "continuous_quats": (),
    "continuous_quaternions": ("core/geometry/rigid.py",),
    "relative_angle": ("core/geometry/rotations.py",),
    "rotation_angle": ("core/geometry/vec3.py",),
    "angle_of_rotation": ("core/geometry/vec3.py",),
    "rotation_angle_between": ("core/geometry/rotations.py",),
    "angle_between": (),
    "rigid_inverse": ("core/geometry/rigid.py",),
    "invert_rigid": (),
    "affine_inverse": ("core/geometry/rigid.py",),
    "nearest_eulers": ("core/geometry/rigid.py",),
    "least_violating_family": ("core/limb/model.py",),
    "pick_euler": ("addon/bridge/write.py",),
}


def _sources() -> dict[str, ast.Module]:
    files = [p for d in ("core", "addon", "tools", "benchmarks") for p in (ROOT / d).rglob("*.py")]
    return {
        p.relative_to(ROOT).as_posix(): ast.parse(p.read_text(encoding="utf-8"), str(p))
        for p in sorted(files)
    }


def _names_pi(node: ast.expr) -> bool:
    src = ast.unparse(node)
    return src in ("pi", "PI", "math.pi", "np.pi", "V.PI")


def _is_wrap(node: ast.AST) -> bool:
    """``(x + π) % 2π − π`` or ``np.mod(x + π, 2π) − π`` spelt out."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)):
        return False
    if not _names_pi(node.right):
        return False
    inner = node.left
    if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Mod):
        return True
    return (
        isinstance(inner, ast.Call)
        and ast.unparse(inner.func) in ("np.mod", "np.remainder", "np.fmod", "math.fmod")
    )


def second_definitions(sources: dict[str, ast.Module]) -> list[str]:
    bad = []
    for path, tree in sources.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                name = node.name.lstrip("_")
                if name in HOME and path not in HOME[name]:
                    bad.append(f"{path}:{node.lineno} defines {node.name}")
            elif _is_wrap(node) and path != "core/geometry/vec3.py":
                bad.append(f"{path}:{node.lineno} spells out an angle wrap")
    return bad


def test_one_definition_of_each_shared_geometry_helper() -> None:
    sources = _sources()
    assert "core/geometry/vec3.py" in sources and "addon/bridge/write.py" in sources
    bad = second_definitions(sources)
    assert not bad, bad


def test_the_second_definition_check_finds_copies() -> None:
    copies = ast.parse(
        "import math\n"
        "def _rotation_about(axis, angle): ...\n"
        "def quat_of(r): ...\n"
        "d = (a - b + math.pi) % (2 * math.pi) - math.pi\n"
        "e = np.mod(a + np.pi, 2 * np.pi) - np.pi\n"
    )
    found = second_definitions({"tools/copy.py": copies})
    assert len(found) == 4, found
