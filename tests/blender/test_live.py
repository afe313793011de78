"""limber.live in the bpy module: one solve headless; capture/restore and change detection.

The modal loop needs a window with events, which the bpy module lacks (``INVOKE_DEFAULT``
runs ``execute()``), so its parts are plain functions tested here: the pose snapshot it
restores on Esc/right-click, and the input signature that decides when to solve again.
"""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Euler, Matrix

from tests.blender.limber_rigs import (
    RIGIFY_LIMBS,
    add_empty,
    add_limb,
    evaluate,
    metarig,
    random_quaternion,
    world_pose,
)

TOL = 1e-5


def _rig(limber: Any) -> tuple[Any, Any, Any]:
    """Meta-rig with two limbs whose targets sit away from the hands (unsolved)."""
    obj = metarig()
    limbs = []
    for name, offset in (("arm.L", (-0.1, -0.1, -0.05)), ("leg.R", (0.0, -0.1, 0.1))):
        bones = RIGIFY_LIMBS[name]
        t = add_empty(f"T.{name}", world_pose(obj, bones[2]))
        t.location = np.array(t.location) + np.array(offset)  # within reach
        limbs.append(add_limb(obj, name, bones, target=t, goal_type="POSITION"))
    bpy.context.view_layer.objects.active = obj
    evaluate()
    return obj, limbs[0], limbs[1]


def _channels(obj: Any) -> list[tuple[Any, ...]]:
    return [
        (pb.rotation_mode, tuple(pb.location), tuple(pb.rotation_quaternion),
         tuple(pb.rotation_euler), pb.rotation_euler.order, tuple(pb.rotation_axis_angle),
         tuple(pb.scale))
        for pb in obj.pose.bones
    ]


@pytest.mark.parametrize("how", ["INVOKE_DEFAULT", "EXEC_DEFAULT"])
def test_live_headless_solves_once(limber: Any, how: str) -> None:
    solve = limber.sub("addon.run.solve")
    obj, arm, leg = _rig(limber)
    leg.enabled = False
    solve.STATUS.clear()
    assert bpy.ops.limber.live(how, armature=obj.name) == {"FINISHED"}
    assert set(solve.STATUS) == {(obj.name, "arm.L")}  # the enabled limb, once
    evaluate()
    hand = world_pose(obj, arm.end_bone)[:3, 3]
    np.testing.assert_allclose(hand, np.array(arm.target.location), atol=TOL)
    foot = world_pose(obj, leg.end_bone)[:3, 3]
    assert np.linalg.norm(foot - np.array(leg.target.location)) > 0.05  # disabled: untouched


def test_live_uses_the_active_armature_and_rejects_others(limber: Any) -> None:
    _rig(limber)
    assert bpy.ops.limber.live() == {"FINISHED"}
    empty = add_empty("E")
    bpy.context.view_layer.objects.active = empty
    with pytest.raises(RuntimeError, match="not an armature"):
        bpy.ops.limber.live()


def test_cancel_restores_the_starting_pose_exactly(limber: Any) -> None:
    """The snapshot taken at invoke, written back after live solving, is bit-identical."""
    live = limber.sub("addon.run.live")
    obj, arm, leg = _rig(limber)
    rng = np.random.default_rng(4)
    pbs = obj.pose.bones
    pbs[arm.upper_bone].rotation_quaternion = random_quaternion(rng, 1.0)
    pbs[leg.lower_bone].rotation_mode = "YZX"  # mixed rotation modes
    pbs[leg.lower_bone].rotation_euler = Euler((0.3, -0.2, 0.1), "YZX")
    pbs["spine"].location = (0.01, 0.02, -0.03)
    evaluate()
    before = _channels(obj)
    names = (*RIGIFY_LIMBS["arm.L"], *RIGIFY_LIMBS["leg.R"])
    world_before = {b: world_pose(obj, b) for b in names}
    snap = live.capture_pose(obj)
    for k in range(3):  # several live updates, moving the target between them
        arm.target.location = np.array(arm.target.location) + np.array((0.0, 0.01 * k, 0.0))
        assert bpy.ops.limber.live(armature=obj.name) == {"FINISHED"}
    evaluate()
    assert _channels(obj) != before
    live.restore_pose(obj, snap)
    evaluate()
    assert _channels(obj) == before
    for b, m in world_before.items():
        np.testing.assert_array_equal(world_pose(obj, b), m)


def test_input_signature_tracks_targets_poles_and_swivels_not_own_writes(limber: Any) -> None:
    live = limber.sub("addon.run.live")
    obj, arm, leg = _rig(limber)
    sig = live.input_signature(obj)
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    evaluate()
    assert live.input_signature(obj) == sig  # its own pose writes do not retrigger it
    arm.target.location.x += 0.01
    evaluate()
    s2 = live.input_signature(obj)
    assert s2 != sig
    arm.swivel = 0.4
    s3 = live.input_signature(obj)
    assert s3 != s2
    pole = add_empty("Pole")
    arm.pole = pole
    s4 = live.input_signature(obj)
    pole.location = (0.0, 1.0, 1.0)
    evaluate()
    assert live.input_signature(obj) != s4
    leg.enabled = False
    s5 = live.input_signature(obj)
    leg.target.location.z += 0.1  # a disabled limb's target does not matter
    evaluate()
    assert live.input_signature(obj) == s5
    assert obj.pose.bones[arm.upper_bone].parent.name == "shoulder.L"
    obj.pose.bones["shoulder.L"].matrix_basis = Matrix.Rotation(0.2, 4, "Z")
    evaluate()
    s6 = live.input_signature(obj)
    assert s6 != s5  # the arm hangs from the moved shoulder
    chain = obj.limber.chains.add()
    chain.name = "spine"
    eff = chain.effectors.add()
    eff.target = add_empty("ChainTarget")
    s7 = live.input_signature(obj)
    assert s7 != s6
    eff.target.location = (0.0, 0.3, 1.5)
    evaluate()
    assert live.input_signature(obj) != s7  # a chain effector's target moved


def test_status_text(limber: Any) -> None:
    live = limber.sub("addon.run.live")
    solve = limber.sub("addon.run.solve")
    ok = solve.LimbStatus(
        object="A", limb="arm.L", solved=True, reachable=True, reached=True, within_limits=True
    )
    far = solve.LimbStatus(object="A", limb="leg.R", solved=True, position_error=0.0213)
    bad = solve.LimbStatus(object="A", limb="arm.R", message="no target")
    text = live.status_text([ok, far, bad])
    assert "arm.L: ok" in text and "leg.R: out of reach by 21.3 mm" in text
    assert "arm.R: no target" in text and "Esc" in text and "Enter" in text
    assert "no enabled limbs" in live.status_text([])


def test_live_operator_is_undoable(limber: Any) -> None:
    rna = bpy.ops.limber.live.get_rna_type()
    assert bpy.types.LIMBER_OT_live.bl_options >= {"REGISTER", "UNDO"}
    assert "armature" in rna.properties and rna.properties["armature"].is_hidden
    assert math.isclose(rna.properties["interval"].default, 0.03, rel_tol=1e-6)


def test_live_session_solves_on_change_and_cancel_restores(limber: Any) -> None:
    """The modal loop's session with the bpy module's real 3D View area and workspace."""
    live = limber.sub("addon.run.live")
    obj, arm, _ = _rig(limber)
    win = bpy.context.window_manager.windows[0]
    area = next(a for a in win.screen.areas if a.type == "VIEW_3D")
    before = _channels(obj)
    session = live.LiveSession(obj, area, win.workspace)
    assert session.tick() and session.solves == 1
    evaluate()
    assert not session.tick()  # nothing changed: its own pose writes do not count
    arm.target.location.x += 0.01
    evaluate()
    assert session.tick() and session.solves == 2
    evaluate()
    hand = world_pose(obj, arm.end_bone)[:3, 3]
    np.testing.assert_allclose(hand, np.array(arm.target.location), atol=TOL)
    assert "arm.L: ok" in live.status_text(session.statuses)
    session.cancel()
    evaluate()
    assert _channels(obj) == before


@pytest.mark.parametrize(
    ("event", "value", "action"),
    [
        ("ESC", "PRESS", "CANCEL"),
        ("RIGHTMOUSE", "PRESS", "CANCEL"),
        ("ESC", "RELEASE", "PASS"),
        ("RET", "PRESS", "KEEP"),
        ("NUMPAD_ENTER", "PRESS", "KEEP"),
        ("TIMER", "NOTHING", "TICK"),
        ("MOUSEMOVE", "NOTHING", "PASS"),
        ("G", "PRESS", "PASS"),
    ],
)
def test_event_action_key_map(limber: Any, event: str, value: str, action: str) -> None:
    assert limber.sub("addon.run.live").event_action(event, value) == action
