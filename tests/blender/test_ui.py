"""The sidebar panels, lists and the viewport overlay in real Blender (bpy module).

Concerns: registration and polls; the panels' draw code against a real ``UILayout`` (a
popup menu's layout in the bpy module's 3D View region — bpy never draws regions itself,
so the popup is begun and filled but never shown; its few blocks are reported unfreed at
exit); the lists' rows drawn item by item too; the status
text functions; the overlay's data path (cached status → core.swivel_arcs → world
space); drawing never solves; register/unregister twice.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import bpy
import numpy as np
import pytest

from core import Limb, PositionGoal, swivel_arcs
from tests.blender.limber_rigs import (
    RIGIFY_LIMBS,
    add_empty,
    add_limb,
    evaluate,
    metarig,
    world_pose,
)

TOL = 1e-5


def _arm(limber: Any, goal_type: str = "POSITION", offset=(0.1, -0.1, -0.05)) -> tuple[Any, Any]:
    """The meta-rig with a solved right arm whose target is moved by ``offset`` (m; the
    default bends the straight rest arm, toward the body and forward)."""
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.R"]
    target = add_empty("T", world_pose(obj, bones[2]))
    target.location = np.array(target.location) + np.array(offset)
    limb = add_limb(obj, "arm.R", bones, target=target, goal_type=goal_type)
    bpy.context.view_layer.objects.active = obj
    evaluate()
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    evaluate()
    return obj, limb


@contextmanager
def real_layout(obj: Any) -> Iterator[tuple[Any, Any]]:
    """A real ``UILayout`` (of a popup menu that is never shown) and a matching context."""
    wm = bpy.context.window_manager
    win = wm.windows[0]
    area = next(a for a in win.screen.areas if a.type == "VIEW_3D")
    region = next(r for r in area.regions if r.type == "WINDOW")  # template_list needs it
    with bpy.context.temp_override(
        window=win, area=area, region=region, object=obj, active_object=obj
    ):
        popup = wm.popmenu_begin__internal("Limber test", icon="NONE")
        yield popup.layout, bpy.context


def assert_layout_clean(capfd: pytest.CaptureFixture[str]) -> None:
    """Blender reports bad names in layout calls ("rna_uiItemR: property not found: …",
    "rna_uiItemO: unknown operator …") on the console instead of raising."""
    out = capfd.readouterr()
    assert "rna_ui" not in out.out + out.err, out.out + out.err


# -- registration and polls ------------------------------------------------------------


def test_panels_lists_and_live_operator_are_registered(limber: Any) -> None:
    ui = limber.sub("addon.ui.panels")
    addon = limber.sub("addon")
    for cls in ui.CLASSES:
        assert cls in addon.CLASSES and cls.is_registered, cls.__name__
    for name in ("LIMBER_PT_main", "LIMBER_PT_limb"):
        panel = getattr(bpy.types, name)
        assert panel.bl_space_type == "VIEW_3D" and panel.bl_region_type == "UI"
        assert panel.bl_category == "Limber"
    assert bpy.types.LIMBER_PT_limb.bl_parent_id == "LIMBER_PT_main"
    assert bpy.ops.limber.live.get_rna_type().identifier == "LIMBER_OT_live"
    assert "limber_overlay" in bpy.types.WindowManager.bl_rna.properties
    assert "limber_chain_index" in bpy.types.WindowManager.bl_rna.properties


def test_polls_follow_the_active_object_and_mode(limber: Any) -> None:
    ui = limber.sub("addon.ui.panels")
    obj = metarig()
    empty = add_empty("E")
    view_layer = bpy.context.view_layer
    view_layer.objects.active = obj
    assert ui.LIMBER_PT_main.poll(bpy.context)
    assert not ui.LIMBER_PT_limb.poll(bpy.context)  # no limbs yet
    add_limb(obj, "arm.L", RIGIFY_LIMBS["arm.L"])
    assert ui.LIMBER_PT_limb.poll(bpy.context)
    bpy.ops.object.mode_set(mode="POSE")
    assert ui.LIMBER_PT_main.poll(bpy.context) and ui.LIMBER_PT_limb.poll(bpy.context)
    bpy.ops.object.mode_set(mode="EDIT")
    assert not ui.LIMBER_PT_main.poll(bpy.context)
    assert not ui.LIMBER_PT_limb.poll(bpy.context)
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.limber.active_limb_index = 5  # out of range: no active limb
    assert not ui.LIMBER_PT_limb.poll(bpy.context)
    view_layer.objects.active = empty
    assert not ui.LIMBER_PT_main.poll(bpy.context)


# -- drawing against a real UILayout ----------------------------------------------------


@pytest.mark.parametrize("goal_type", ["POSITION", "POSE", "PARTIAL", "AIM"])
@pytest.mark.parametrize("mode", ["ANGLE", "POLE", "LIMITS_MIDPOINT"])
def test_panel_draw_runs_against_a_real_layout_and_never_solves(
    limber: Any, goal_type: str, mode: str, capfd: pytest.CaptureFixture[str]
) -> None:
    ui = limber.sub("addon.ui.panels")
    solve = limber.sub("addon.run.solve")
    obj, limb = _arm(limber, goal_type)
    limb.swivel_mode = mode
    chain = obj.limber.chains.add()
    chain.name = "spine"
    status = solve.STATUS[(obj.name, limb.name)]
    pose = [tuple(pb.rotation_quaternion) for pb in obj.pose.bones]
    with real_layout(obj) as (layout, context):
        assert ui.LIMBER_PT_main.poll(context) and ui.LIMBER_PT_limb.poll(context)
        ui.LIMBER_PT_main.draw(SimpleNamespace(layout=layout), context)  # lists + buttons
        ui.LIMBER_PT_limb.draw(SimpleNamespace(layout=layout), context)
        ui.LIMBER_UL_limbs.draw_item(
            None, context, layout, obj.limber, limb, 0, obj.limber, "active_limb_index"
        )
        ui.LIMBER_UL_chains.draw_item(
            None, context, layout, obj.limber, chain, 0, context.window_manager,
            "limber_chain_index",
        )
    assert_layout_clean(capfd)
    assert solve.STATUS[(obj.name, limb.name)] is status  # drawing did not solve
    assert [tuple(pb.rotation_quaternion) for pb in obj.pose.bones] == pose


def test_panel_draw_with_a_numeric_limb_and_a_solved_chain(
    limber: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    ui = limber.sub("addon.ui.panels")
    solve = limber.sub("addon.run.solve")
    obj, limb = _arm(limber)
    limb.solver = "DLS"
    chain = obj.limber.chains.add()
    chain.name, chain.root_bone = "spine", "spine"
    eff = chain.effectors.add()
    eff.tip_bone, eff.target = "spine.003", add_empty("C", world_pose(obj, "spine.003"))
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    assert (obj.name, "spine") in solve.CHAIN_STATUS
    with real_layout(obj) as (layout, context):
        ui.LIMBER_PT_main.draw(SimpleNamespace(layout=layout), context)
        ui.LIMBER_PT_limb.draw(SimpleNamespace(layout=layout), context)
        ui.LIMBER_UL_chains.draw_item(
            None, context, layout, obj.limber, chain, 0, context.window_manager,
            "limber_chain_index",
        )
    assert_layout_clean(capfd)
    assert ui.status_icon(solve.CHAIN_STATUS[(obj.name, "spine")]) in ("CHECKMARK", "CANCEL")


def test_panel_draw_before_any_solve(limber: Any, capfd: pytest.CaptureFixture[str]) -> None:
    ui = limber.sub("addon.ui.panels")
    obj = metarig()
    limb = add_limb(obj, "leg.L", RIGIFY_LIMBS["leg.L"])
    bpy.context.view_layer.objects.active = obj
    with real_layout(obj) as (layout, context):
        ui.LIMBER_PT_main.draw(SimpleNamespace(layout=layout), context)
        ui.draw_limb(layout, context, obj, limb)
    assert_layout_clean(capfd)


# -- text ------------------------------------------------------------------------------


def test_format_feasible(limber: Any) -> None:
    ui = limber.sub("addon.ui.panels")
    r = math.radians
    assert ui.format_feasible(((r(35), r(140)), (r(200) - 2 * math.pi, r(260) - 2 * math.pi))) == (
        "feasible 35°–140°, \u2212160°–\u2212100°"
    )
    assert ui.format_feasible(((r(170), r(200)),)) == "feasible 170°–200°"  # through 180°
    assert ui.format_feasible(((-math.pi, math.pi),)) == "feasible: any swivel"
    assert ui.deg(-1e-9) == "0°" and ui.deg(-math.pi) == "\u2212180°"
    assert ui.format_feasible(()) == "no feasible swivel"
    assert ui.format_feasible((), ("shoulder X",)) == "no feasible swivel: shoulder X limit"
    assert ui.format_feasible((), ("shoulder X", "wrist Z")) == (
        "no feasible swivel: shoulder X, wrist Z limits"
    )
    assert ui.format_feasible((), ("shoulder + wrist",)) == (
        "no feasible swivel: shoulder + wrist limits"
    )


def test_status_lines_text(limber: Any) -> None:
    ui = limber.sub("addon.ui.panels")
    solve = limber.sub("addon.run.solve")
    ok = solve.LimbStatus(
        object="A", limb="arm", solved=True, message="ok", reachable=True, reached=True,
        within_limits=True,
        position_error=2e-7, orientation_error=1e-7, swivel=0.3,
        feasible_swivel=((-1.0, 2.0),), solve_us=41.6,
    )
    rows = ui.status_lines(ok)
    texts = [t for t, _ in rows]
    assert texts == ["reached", "within limits", "error 0.000 mm, 0.000°", "42 µs per solve"]
    assert ui.status_icon(ok) == "CHECKMARK"
    assert [t for t, _ in ui.status_lines(ok, at_bound=("elbow", "shoulder Z"))][1] == (
        "at limit: elbow, shoulder Z"
    )
    far = solve.LimbStatus(
        object="A", limb="arm", solved=True, reachable=False, within_limits=False,
        position_error=0.1234, orientation_error=0.0, solve_us=12.0,
        message="no pole object; using the swivel angle; target not reached (x); no pose "
        "within the joint limits reaches the target",
    )
    texts = [t for t, _ in ui.status_lines(far, blocking=("wrist Y",))]
    assert texts[0] == "out of reach by 123.4 mm"
    assert texts[1] == "outside limits: wrist Y limit"
    assert texts[-1] == "no pole object; using the swivel angle"  # other notes kept
    assert ui.status_icon(far) == "CANCEL"
    failed = solve.LimbStatus(object="A", limb="arm", message="no target")
    assert ui.status_lines(failed) == [("no target", "ERROR")]
    assert ui.status_icon(failed) == "ERROR" and ui.status_icon(None) == "RADIOBUT_OFF"
    assert ui.status_lines(None)[0][0].startswith("not solved yet")


def test_status_line_of_an_unreachable_target_says_by_how_much(limber: Any) -> None:
    ui = limber.sub("addon.ui.panels")
    solve = limber.sub("addon.run.solve")
    obj, limb = _arm(limber, "POSITION", offset=(0.0, 0.0, 0.0))
    shoulder = world_pose(obj, limb.upper_bone)[:3, 3]
    hand = world_pose(obj, limb.end_bone)[:3, 3]
    reach = float(sum(obj.data.bones[b].length for b in (limb.upper_bone, limb.lower_bone)))
    direction = (hand - shoulder) / np.linalg.norm(hand - shoulder)
    limb.target.location = shoulder + direction * (reach + 0.25)
    evaluate()
    bpy.ops.limber.solve(armature=obj.name)
    st = solve.STATUS[(obj.name, limb.name)]
    text = ui.status_lines(st)[0][0]
    assert text.startswith("out of reach by ")
    assert float(text.split()[4]) == pytest.approx(250.0, abs=0.5)


# -- overlay data path -----------------------------------------------------------------


def test_world_geometry_transforms_and_splits_the_circle(limber: Any) -> None:
    overlay = limber.sub("addon.ui.overlay")
    a = np.eye(4)
    a[:3, 3] = (0.0, 0.3, 0.0)
    b = np.eye(4)
    b[:3, 3] = (0.0, 0.25, 0.0)
    limb = Limb(a, b, elbow_axis=(1.0, 0.0, 0.0))
    arcs = swivel_arcs(limb, PositionGoal((0.1, 0.3, 0.2)), 40, intervals=((0.0, 1.5),), swivel=0.5)
    m = np.eye(4)
    m[:3, :3] = 2.0 * np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    m[:3, 3] = (1.0, 2.0, 3.0)
    geom = overlay.world_geometry(arcs, m)
    want = arcs.points @ m[:3, :3].T + m[:3, 3]
    np.testing.assert_allclose(geom.circle, want, atol=1e-12)
    assert len(geom.feasible) + len(geom.infeasible) == 2 * 40  # every segment once
    ok = arcs.feasible & np.roll(arcs.feasible, -1)
    assert len(geom.feasible) == 2 * int(ok.sum()) > 0
    np.testing.assert_allclose(geom.elbow[0], m[:3, :3] @ arcs.elbow + m[:3, 3], atol=1e-12)
    np.testing.assert_allclose(geom.axis[0], m[:3, 3], atol=1e-12)
    np.testing.assert_allclose(geom.axis[1], m[:3, :3] @ arcs.wrist + m[:3, 3], atol=1e-12)


@pytest.mark.parametrize("goal_type", ["POSITION", "POSE", "PARTIAL", "AIM"])
def test_overlay_geometry_matches_the_solved_pose(limber: Any, goal_type: str) -> None:
    """World-space elbow = the forearm's head, axis from the shoulder (to the hand target
    for position goals), elbow on the circle; the view is cached until the next solve."""
    overlay = limber.sub("addon.ui.overlay")
    solve = limber.sub("addon.run.solve")
    obj, limb = _arm(limber, goal_type)
    obj.limber.active_limb_index = 0
    view = overlay.limb_view(obj, limb)
    assert view is not None and overlay.limb_view(obj, limb) is view  # cached
    geom = overlay.overlay_geometry(bpy.context)
    assert geom is not None
    elbow = world_pose(obj, limb.lower_bone)[:3, 3]
    np.testing.assert_allclose(geom.elbow[0], elbow, atol=TOL)
    np.testing.assert_allclose(geom.axis[0], world_pose(obj, limb.upper_bone)[:3, 3], atol=TOL)
    if goal_type == "POSITION":
        np.testing.assert_allclose(geom.axis[1], np.array(limb.target.location), atol=TOL)
    else:  # the wrist centre: the hand's head
        np.testing.assert_allclose(geom.axis[1], world_pose(obj, limb.end_bone)[:3, 3], atol=TOL)
    centre = geom.circle.mean(axis=0)
    radius = np.linalg.norm(geom.circle - centre, axis=1)
    assert np.ptp(radius) < TOL and radius[0] > 0.01
    assert abs(np.linalg.norm(geom.elbow[0] - centre) - radius[0]) < TOL
    status = solve.STATUS[(obj.name, limb.name)]
    np.testing.assert_array_equal(
        view.arcs.feasible, _members(view.arcs.phi, status.feasible_swivel)
    )
    bpy.ops.limber.solve(armature=obj.name)
    assert overlay.limb_view(obj, limb) is not view  # a new status: a new view


def _members(phi: np.ndarray, intervals: Any) -> np.ndarray:
    out = np.zeros(phi.shape, dtype=bool)
    for lo, hi in intervals:
        out |= ((phi - lo) % (2 * math.pi)) <= (hi - lo)
    return out


def test_no_feasible_swivel_names_the_blocking_limit(limber: Any) -> None:
    """A locked shoulder (IK locks on X, Y, Z): no swivel works; the panel text says so."""
    ui = limber.sub("addon.ui.panels")
    overlay = limber.sub("addon.ui.overlay")
    solve = limber.sub("addon.run.solve")
    obj, limb = _arm(limber, "POSE")
    pb = obj.pose.bones[limb.upper_bone]
    pb.rotation_mode = "XYZ"
    pb.lock_ik_x = pb.lock_ik_y = pb.lock_ik_z = True
    limb.use_limits = True
    bpy.ops.limber.solve(armature=obj.name)
    st = solve.STATUS[(obj.name, limb.name)]
    assert st.solved and st.feasible_swivel == ()
    view = overlay.limb_view(obj, limb)
    assert view is not None and view.blocking
    assert "shoulder" in view.blocking[0]
    text = ui.format_feasible(st.feasible_swivel, view.blocking)
    assert text.startswith("no feasible swivel: shoulder")
    assert not view.arcs.feasible.any()


def test_numeric_limbs_have_no_swivel_view(limber: Any) -> None:
    overlay = limber.sub("addon.ui.overlay")
    ui = limber.sub("addon.ui.panels")
    solve = limber.sub("addon.run.solve")
    obj, limb = _arm(limber, "POSITION")
    limb.solver = "DLS"
    bpy.ops.limber.solve(armature=obj.name)
    assert overlay.limb_view(obj, limb) is None
    rows = [t for t, _ in ui.status_lines(solve.STATUS[(obj.name, limb.name)])]
    assert any(t.startswith("DLS: ") and "iterations" in t for t in rows)


def test_draw_callback_is_guarded_in_background(limber: Any) -> None:
    overlay = limber.sub("addon.ui.overlay")
    obj, _ = _arm(limber)
    assert not overlay.gpu_available()  # bpy module: background
    wm = bpy.context.window_manager
    wm.limber_overlay = True
    try:
        overlay.draw_callback()  # must not raise (nor try to draw)
    finally:
        wm.limber_overlay = False
    assert len(overlay._HANDLE) == 1


# -- tooltips --------------------------------------------------------------------------


def test_every_control_has_a_tooltip(limber: Any) -> None:
    """Every limber operator and every property the panels show says what it does."""
    for name in dir(bpy.ops.limber):
        rna = getattr(bpy.ops.limber, name).get_rna_type()
        assert len(rna.description) > 15, name
        for prop in rna.properties:
            if prop.identifier != "rna_type":
                assert len(prop.description) > 15, f"{name}.{prop.identifier}"
    for cls in limber.sub("addon.props").CLASSES:
        for prop in cls.bl_rna.properties:
            if prop.identifier not in {"rna_type", "name"}:
                assert len(prop.description) > 15, f"{cls.__name__}.{prop.identifier}"
    for ident in ("limber_overlay", "limber_chain_index"):
        assert len(bpy.types.WindowManager.bl_rna.properties[ident].description) > 15
    interval = bpy.ops.limber.live.get_rna_type().properties["interval"]
    assert "s" in interval.description and interval.hard_min == pytest.approx(0.01)


# -- register / unregister -------------------------------------------------------------


def test_register_unregister_twice_removes_panels_overlay_and_live(limber: Any) -> None:
    package = importlib.import_module(limber.module)
    overlay = limber.sub("addon.ui.overlay")
    ui = limber.sub("addon.ui.panels")
    live = limber.sub("addon.run.live")
    for _ in range(2):
        package.unregister()
        assert overlay._HANDLE == []
        assert not hasattr(bpy.types.WindowManager, "limber_overlay")
        assert not hasattr(bpy.types.WindowManager, "limber_chain_index")
        assert not any(c.is_registered for c in ui.CLASSES + live.CLASSES)
        assert not hasattr(bpy.types, "LIMBER_PT_main")
        package.register()
        assert len(overlay._HANDLE) == 1
        assert all(c.is_registered for c in ui.CLASSES + live.CLASSES)
        assert hasattr(bpy.types.WindowManager, "limber_overlay")


def test_saved_status_rows_are_read_only_labels(limber: Any) -> None:
    """The panel shows each limb's saved status (the evaluated pose's truth) as labels."""
    ui = limber.sub("addon.ui.panels")
    obj = metarig()
    limb = add_limb(obj, "arm.L", RIGIFY_LIMBS["arm.L"], target=add_empty("T"))
    assert ui.saved_status_lines(limb.status)[0][0].startswith("no status yet")
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    rows = ui.saved_status_lines(limb.status)
    assert rows[0] == ("not reached", "ERROR")
    assert "mm" in rows[1][0] and "not reached" in rows[2][0]
