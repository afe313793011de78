"""The add-on's layout shows the road (bridge → run → ui), every module keeps to its
public neighbours, and the overlay and the demo take their goals from the pipeline."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import bpy
import numpy as np

from tests.blender.limber_rigs import RIGIFY_LIMBS, add_empty, add_limb, metarig, world_pose

ROOT = Path(__file__).resolve().parents[2]
ADDON = ROOT / "addon"


def _private_uses(path: Path, package: str) -> list[str]:
    """``module._name`` uses and ``from x import _name`` imports of add-on modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith(
                package)):
            for alias in node.names:
                if alias.name.startswith("_"):
                    out.append(f"{path.name}: from {node.module} import {alias.name}")
                modules.add(alias.asname or alias.name)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and getattr(
                node.value.func, "attr", "") == "import_module":
            modules.update(t.id for t in node.targets if isinstance(t, ast.Name))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            out.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return out


def test_layout_and_no_private_imports_across_modules() -> None:
    for folder, names in (("bridge", {"rig", "read", "requests", "write", "verify"}),
                          ("run", {"solve", "bake", "live", "handlers"}),
                          ("ui", {"panels", "operators", "overlay", "cli"})):
        assert names <= {p.stem for p in (ADDON / folder).glob("*.py")}, folder
    bad = [u for p in ADDON.rglob("*.py") for u in _private_uses(p, "addon")]
    bad += _private_uses(ROOT / "tools" / "demo_blender.py", "addon")
    assert not bad, bad


def test_demo_measures_through_the_pipeline() -> None:
    text = (ROOT / "tools" / "demo_blender.py").read_text(encoding="utf-8")
    assert "limb_request_at" in text and "shoulder_frame" not in text


def test_overlay_draws_the_pipelines_goal_and_frame(limber: Any) -> None:
    overlay = limber.sub("addon.ui.overlay")
    solve = limber.sub("addon.run.solve")
    obj = metarig()
    obj.pose.bones["shoulder.L"].scale = (1.2, 1.2, 1.2)  # a scaled frame, as solved
    bones = RIGIFY_LIMBS["arm.L"]
    t = world_pose(obj, bones[2])
    t[:3, 3] += (0.05, -0.05, 0.05)
    limb = add_limb(obj, "arm.L", bones, target=add_empty("T", t))
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    dg = bpy.context.evaluated_depsgraph_get()
    view = overlay.limb_view(obj, limb, dg)
    req = solve.limb_request_at(obj, limb, dg)
    assert np.array_equal(view.shoulder_world, req.frame[0])
