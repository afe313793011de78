"""Blender conventions in real Blender (bpy module): operator polls with reasons, the
scene's frame range by default, the add-on preferences (defaults for new limbs and
chains, overlay style, status tolerance), the Pose-mode keymap, the translation hook, and
their registration (twice, cleanly).

Concerns are named per test: poll headless vs in a 3D View, each operator's needs, range,
preferences as users set them (``context.preferences.addons[...]``), keys, translations.
"""

from __future__ import annotations

import ast
import importlib
import math
import string
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import bpy
import numpy as np
import pytest

from tests.blender.conftest import compat
from tests.blender.limber_rigs import (
    RIGIFY_LIMBS,
    add_empty,
    add_limb,
    evaluate,
    metarig,
    world_pose,
)

#: Every operator and what it needs of the active armature in a 3D View.
NEEDS = {
    "detect_limbs": "ARMATURE", "add_limb": "ARMATURE", "add_chain": "ARMATURE",
    "remove_limb": "LIMBS", "snap_swivel": "LIMBS", "snap_target": "LIMBS",
    "remove_chain": "CHAINS", "solve": "ENABLED", "bake": "ENABLED", "live": "ENABLED",
}


@contextmanager
def view3d(obj: Any = None) -> Iterator[Any]:
    """The context of the bpy module's 3D View (as buttons, keys and F3 search there
    see it), with ``obj`` active."""
    win = bpy.context.window_manager.windows[0]
    area = next(a for a in win.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")
    bpy.context.view_layer.objects.active = obj
    with bpy.context.temp_override(window=win, area=area, region=region):
        yield bpy.context


def _op(name: str) -> Any:
    return getattr(bpy.ops.limber, name)


@pytest.fixture
def prefs(limber: Any) -> Iterator[Any]:
    """Limber's preferences as the user edits them; every setting restored afterwards."""
    p = bpy.context.preferences.addons[limber.module].preferences
    saved = {k: getattr(p, k) for k in p.bl_rna.properties.keys() if k != "rna_type"}
    saved = {k: tuple(v) if hasattr(v, "__len__") and not isinstance(v, str) else v
             for k, v in saved.items()}
    yield p
    for k, v in saved.items():
        setattr(p, k, v)


# -- poll ------------------------------------------------------------------------------


def test_every_operator_has_a_poll_and_stays_undoable(limber: Any) -> None:
    classes = limber.sub("addon.ui.operators").CLASSES + limber.sub("addon.run.live").CLASSES
    ids = {c.bl_idname.split(".")[1] for c in classes}
    assert set(NEEDS) <= ids
    for cls in classes:
        assert any("poll" in vars(k) for k in cls.__mro__ if k is not bpy.types.Operator), cls
        assert {"REGISTER", "UNDO"} <= set(cls.bl_options), cls


def test_headless_calls_with_a_named_armature_pass_poll_whatever_is_active(
    limber: Any,
) -> None:
    """Scripts, the bpy module and the CLI have no 3D View: poll passes and execute works
    on the armature named by ``armature=``, even with nothing (or an Empty) active."""
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.R"]
    target = add_empty("T", world_pose(obj, bones[2]))
    add_limb(obj, "arm.R", bones, target=target, goal_type="POSITION")
    bpy.context.view_layer.objects.active = target
    assert bpy.context.area is None
    for name in NEEDS:
        assert _op(name).poll(), name
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=1, frame_end=3) == {"FINISHED"}
    with pytest.raises(RuntimeError, match="not an armature"):  # execute checks the name
        bpy.ops.limber.solve(armature=target.name)


def test_in_the_3d_view_poll_greys_out_with_the_reason(limber: Any) -> None:
    empty = add_empty("E")
    with view3d(empty):
        for name in NEEDS:
            assert not _op(name).poll(), name
        with pytest.raises(RuntimeError, match="The active object is not an armature"):
            bpy.ops.limber.solve()
    obj = metarig()
    with view3d(obj):
        for name, needs in NEEDS.items():
            assert _op(name).poll() == (needs == "ARMATURE"), name
        with pytest.raises(RuntimeError, match="no Limber limbs: add or detect one first"):
            bpy.ops.limber.snap_swivel()
        with pytest.raises(RuntimeError, match="no Limber chains"):
            bpy.ops.limber.remove_chain()
        with pytest.raises(RuntimeError, match="no enabled Limber limb or chain"):
            bpy.ops.limber.bake()
    limb = add_limb(obj, "arm.R", RIGIFY_LIMBS["arm.R"], target=add_empty("T"))
    limb.enabled = False
    with view3d(obj):
        assert _op("snap_swivel").poll() and _op("remove_limb").poll()
        assert not _op("solve").poll() and not _op("live").poll()
    limb.enabled = True
    with view3d(obj) as ctx:
        for name, needs in NEEDS.items():
            assert _op(name).poll() == (needs != "CHAINS"), name
        bpy.ops.object.mode_set(mode="POSE")
        assert ctx.mode == "POSE" and _op("solve").poll()
        bpy.ops.object.mode_set(mode="EDIT")
        try:
            assert ctx.mode == "EDIT_ARMATURE"
            for name in NEEDS:
                assert not _op(name).poll(), name
            with pytest.raises(RuntimeError, match="Switch to Pose or Object mode"):
                bpy.ops.limber.solve()
        finally:
            bpy.ops.object.mode_set(mode="OBJECT")


def test_poll_reason_text_is_the_tooltip(limber: Any) -> None:
    poll = limber.sub("addon.ui.poll")
    obj = metarig()
    with view3d(obj) as ctx:
        assert poll.poll_reason(ctx, poll.Needs.ARMATURE) is None
        assert "no Limber limbs" in poll.poll_reason(ctx, poll.Needs.LIMBS)
    assert poll.poll_reason(bpy.context, poll.Needs.ENABLED) is None  # no 3D View


# -- frame range -----------------------------------------------------------------------


def test_bake_without_a_range_bakes_the_scenes_range(limber: Any) -> None:
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.R"]
    target = add_empty("T", world_pose(obj, bones[2]))
    target.location = np.array(target.location) + np.array((0.1, -0.1, -0.05))
    add_limb(obj, "arm.R", bones, target=target, goal_type="POSITION")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 7, 12
    try:
        assert bpy.ops.limber.bake(armature=obj.name) == {"FINISHED"}
        fc = compat().assigned_fcurves(obj.animation_data)
        frames = {k.co.x for f in fc for k in f.keyframe_points}
        assert frames == {float(f) for f in range(7, 13)}
        # An explicit range still wins (one end given: the other is the scene's).
        assert bpy.ops.limber.bake(armature=obj.name, frame_start=10) == {"FINISHED"}
        assert bpy.ops.limber.bake(armature=obj.name, frame_start=20, frame_end=22) == {
            "FINISHED"
        }
        frames = {k.co.x for f in fc for k in f.keyframe_points}
        assert frames == {float(f) for f in (*range(7, 13), 20, 21, 22)}
    finally:
        scene.frame_start, scene.frame_end = 1, 250


def test_cli_range_defaults_to_the_scene(limber: Any) -> None:
    cli = limber.sub("addon.ui.cli")
    args = cli._parser().parse_args(["bake", "--input", "a.blend", "--output", "b.blend"])
    assert args.start is None and args.end is None


# -- preferences -----------------------------------------------------------------------


def test_preferences_are_registered_under_the_package_name(limber: Any, prefs: Any) -> None:
    mod = limber.sub("addon.ui.preferences")
    assert mod.PACKAGE == limber.module
    assert mod.LIMBER_AP_preferences.bl_idname == limber.module
    assert mod.LIMBER_AP_preferences in limber.sub("addon").CLASSES
    assert mod.addon_preferences() == prefs
    assert prefs.bl_rna.properties["position_tolerance"].unit == "LENGTH"  # shown in mm
    assert prefs.bl_rna.properties["orientation_tolerance"].subtype == "ANGLE"  # degrees
    for prop in prefs.bl_rna.properties:
        if prop.identifier not in ("rna_type", "bl_idname"):
            assert len(prop.description) > 15, prop.identifier


def test_new_limbs_and_chains_take_the_preferred_solver_and_goal(
    limber: Any, prefs: Any
) -> None:
    obj = metarig()
    # The defaults are the properties' own: nothing changes for users who set nothing.
    for ident, prop in (("limb_solver", "solver"), ("limb_goal_type", "goal_type")):
        want = limber.sub("addon.props").LIMBER_PG_limb.bl_rna.properties[prop].default
        assert getattr(prefs, ident) == want
    want = limber.sub("addon.props").LIMBER_PG_effector.bl_rna.properties["goal_type"].default
    assert prefs.effector_goal_type == want
    assert prefs.chain_solver == (
        limber.sub("addon.props").LIMBER_PG_chain.bl_rna.properties["solver"].default)
    assert bpy.ops.limber.add_limb(armature=obj.name, end_bone="hand.L") == {"FINISHED"}
    assert obj.limber.limbs["hand.L"].solver == "ANALYTIC"
    assert obj.limber.limbs["hand.L"].goal_type == "POSE"
    prefs.limb_solver, prefs.limb_goal_type = "SDLS", "POSITION"
    prefs.chain_solver, prefs.effector_goal_type = "CCD", "PARTIAL"
    assert bpy.ops.limber.add_limb(armature=obj.name, end_bone="hand.R") == {"FINISHED"}
    limb = obj.limber.limbs["hand.R"]
    assert (limb.solver, limb.goal_type) == ("SDLS", "POSITION")
    assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"FINISHED"}
    assert {(lb.solver, lb.goal_type) for lb in obj.limber.limbs if lb.name.startswith(
        ("arm", "leg"))} == {("SDLS", "POSITION")}
    assert obj.limber.limbs["hand.L"].solver == "ANALYTIC"  # existing limbs keep theirs
    assert bpy.ops.limber.add_chain(
        armature=obj.name, root_bone="spine.001", tip_bone="spine.003"
    ) == {"FINISHED"}
    chain = obj.limber.chains["spine.003"]
    assert (chain.solver, chain.effectors[0].goal_type) == ("CCD", "PARTIAL")


def test_status_tolerance_decides_reached(limber: Any, prefs: Any) -> None:
    """A target 2 mm beyond the arm's reach: not reached at the default
    tolerance (0.01 mm); reached once the tolerance is 5 mm; the preference is what the
    solve, the live status and the saved status use."""
    verify = limber.sub("addon.bridge.verify")
    assert verify.reached(0.9e-5, 0.0) and not verify.reached(2e-3, 0.0)
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.R"]
    shoulder, elbow, wrist = (world_pose(obj, b)[:3, 3] for b in bones)
    reach = np.linalg.norm(elbow - shoulder) + np.linalg.norm(wrist - elbow)
    direction = (wrist - shoulder) / np.linalg.norm(wrist - shoulder)
    target = add_empty("T")
    target.location = shoulder + (reach + 0.002) * direction
    limb = add_limb(obj, "arm.R", bones, target=target, goal_type="POSITION")
    evaluate()
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    assert 1.5e-3 < limb.status.position_error < 2.5e-3
    assert not limb.status.reached
    prefs.position_tolerance = 5e-3
    assert limber.sub("addon.ui.preferences").tolerances().position == pytest.approx(5e-3)
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    assert limb.status.reached
    prefs.orientation_tolerance = math.radians(1.0)
    assert verify.reached(1e-3, math.radians(0.5))
    assert not verify.reached(1e-3, math.radians(2.0))


def test_overlay_uses_the_preferred_colours_and_sizes(limber: Any, prefs: Any) -> None:
    mod = limber.sub("addon.ui.preferences")
    overlay = limber.sub("addon.ui.overlay")
    default, now = mod.DEFAULT_STYLE, mod.overlay_style()  # (stored as float32)
    for name in ("feasible", "infeasible", "elbow", "axis", "line_width", "point_size"):
        assert np.allclose(getattr(now, name), getattr(default, name), atol=1e-6), name
    prefs.feasible = (0.0, 0.0, 1.0, 1.0)
    prefs.axis = (1.0, 1.0, 1.0, 0.5)
    prefs.line_width, prefs.point_size = 4.0, 12.0
    style = mod.overlay_style()
    assert style.feasible == (0.0, 0.0, 1.0, 1.0) and style.axis == (1.0, 1.0, 1.0, 0.5)
    assert (style.line_width, style.point_size) == (4.0, 12.0)
    pts = np.zeros((2, 3))
    geom = overlay.WorldGeometry(feasible=pts, infeasible=np.zeros((0, 3)), elbow=pts[:1],
                                 axis=pts, circle=pts)
    assert [c for _, c in overlay.draw_lines(geom, style)] == [style.feasible, style.axis]


def test_preferences_page_draws_against_a_real_layout(
    limber: Any, prefs: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    mod = limber.sub("addon.ui.preferences")
    wm = bpy.context.window_manager
    with view3d():
        popup = wm.popmenu_begin__internal("Limber test", icon="NONE")
        mod.draw_preferences(popup.layout, prefs, bpy.context)
    err = capfd.readouterr().err
    assert "rna_uiItemR" not in err and "Traceback" not in err


# -- keymap ----------------------------------------------------------------------------


def _pose_items(idname: str) -> list[Any]:
    km = bpy.context.window_manager.keyconfigs.addon.keymaps.get("Pose")
    return [] if km is None else [k for k in km.keymap_items if k.idname == idname]


def test_pose_mode_keys_for_solve_live_and_snapping(limber: Any) -> None:
    keymap = limber.sub("addon.ui.keymap")
    listed = {idname for _, idname, _ in keymap.keymap_rows()}
    want = {"limber.solve", "limber.live", "limber.snap_swivel", "limber.snap_target"}
    if keymap.operator_exists("limber.snap_pole"):
        want.add("limber.snap_pole")
    assert listed == want
    for idname in want:
        (kmi,) = _pose_items(idname)
        assert kmi.shift and kmi.alt and not kmi.ctrl and kmi.value == "PRESS"
    combos = [(k.key, k.shift, k.ctrl, k.alt) for k in keymap.KEYS]
    assert len(set(combos)) == len(combos)  # no two Limber keys collide


def test_register_unregister_twice_keys_prefs_translations(limber: Any) -> None:
    package = importlib.import_module(limber.module)
    keymap = limber.sub("addon.ui.keymap")
    prefs_cls = limber.sub("addon.ui.preferences").LIMBER_AP_preferences
    try:
        for _ in range(2):
            package.unregister()
            assert not keymap._ITEMS and not _pose_items("limber.solve")
            assert not getattr(prefs_cls, "is_registered", False)
            package.unregister()  # a second unregister is harmless
            package.register()
            assert len(_pose_items("limber.solve")) == 1
            assert len(keymap._ITEMS) == len(keymap.keymap_rows())
            assert prefs_cls.is_registered
        package.register()  # registering again replaces, never duplicates
        assert len(_pose_items("limber.solve")) == 1
    finally:
        limber.ensure_registered()


# -- translations ----------------------------------------------------------------------


def test_translation_hook(limber: Any) -> None:
    """Templates are translated before their numbers are filled in, so every translation
    keeps the placeholders of its message. (The bpy module is built without
    international support, so the translated text itself is not observable here.)"""
    tr = limber.sub("addon.ui.translations")
    panels = limber.sub("addon.ui.panels")
    assert tr.PACKAGE == limber.module
    assert tr.iface_("out of reach by {:.1f} mm").format(2.0) == "out of reach by 2.0 mm"
    fields = string.Formatter()

    def placeholders(text: str) -> list[tuple[str | None, str | None, str | None]]:
        """The replacement fields (name, spec, conversion) in order; words may move."""
        return [f[1:] for f in fields.parse(text) if f[1] is not None]

    for table in tr.TRANSLATIONS.values():
        for (_ctx, msg), text in table.items():
            assert placeholders(msg) == placeholders(text), (msg, text)
    st = type("S", (), dict(solved=True, reached=False, position_error=0.002,
                            orientation_error=0.0, within_limits=True, solve_us=1.0,
                            message="ok"))()
    assert panels.status_lines(st)[0] == ("out of reach by 2.0 mm", "ERROR")
    assert tr.rpt_("Limber: no limb at index {}").format(3) == "Limber: no limb at index 3"
    tr.unregister()
    tr.unregister()
    tr.register()
    tr.register()


def _templates(path: Path, helpers: tuple[str, ...]) -> list[tuple[str, str, int]]:
    """(helper, template, line) of each call ``helper("literal"...)`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in helpers and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            found.append((node.func.id, node.args[0].value, node.lineno))
    return found


def test_every_translated_template_is_in_the_table(limber: Any) -> None:
    """Every literal passed to ``iface_`` / ``rpt_`` in the panels and operators, and every
    hinge source the panel translates, has an entry in each locale's table; every operator
    report goes through ``rpt_`` (no f-string or bare literal reaches ``self.report``)."""
    tr = limber.sub("addon.ui.translations")
    sources = {n: Path(limber.sub(f"addon.ui.{n}").__file__) for n in ("panels", "operators")}
    used = [t for n, path in sources.items() for t in _templates(path, ("iface_", "rpt_"))]
    assert len(used) >= 40, used  # the scan sees the helpers' calls
    hinge = limber.sub("addon.bridge.rig").HINGE_SOURCES.values()
    for locale, table in tr.TRANSLATIONS.items():
        missing = [(h, m, line) for h, m, line in used if ("*", m) not in table]
        missing += [("HINGE_SOURCES", m, 0) for m in hinge if ("*", m) not in table]
        assert not missing, (locale, missing)
    tree = ast.parse(sources["operators"].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "report" and len(node.args) == 2):
            text = ast.unparse(node.args[1])
            assert text.startswith("rpt_("), (node.lineno, text)

