"""FK → IK snapping through Limber: the swivel from the actual FK elbow (Tolani §3.2.2)
and a pole placed so POLE mode gives the same pose; zero pose change where the FK elbow is
on the hinge circle, the residual reported where it is not."""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Quaternion

from tests.blender.limber_rigs import (
    add_empty,
    add_limb,
    evaluate,
    metarig,
    random_quaternion,
    world_pose,
)

BONES = ("upper_arm.L", "forearm.L", "hand.L")
#: Pose change allowed after a snap on the hinge circle: 0.01 mm (float32 rounding).
TOL = 1e-5


def _points(obj: Any) -> np.ndarray:
    """Heads and tails (world) of the limb's bones, evaluated."""
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    out = []
    for b in BONES:
        pb = ev.pose.bones[b]
        for p in (pb.head, pb.tail):
            out.append(np.array(ev.matrix_world @ p))
    return np.array(out)


def _fk_pose(limber: Any, seed: int, off_axis: float) -> tuple[Any, Any]:
    """A metarig arm in a random FK pose, the forearm bent about the limb's hinge axis
    and, by ``off_axis`` rad, about a perpendicular axis (off the hinge circle)."""
    rng = np.random.default_rng(seed)
    obj = metarig(location=(0.3, -0.2, 0.1), rotation=(0.1, 0.2, -0.3), scale=1.3)
    limb = add_limb(obj, "arm.L", BONES)
    limb.target = add_empty("T")
    k = limber.sub("addon.run.solve").rig_for(obj, limb).hinge_axis
    pbs = obj.pose.bones
    for b in BONES:
        pbs[b].rotation_mode = "QUATERNION"
    pbs["upper_arm.L"].rotation_quaternion = random_quaternion(rng, 1.2)
    perp = np.cross(k, (0.0, 1.0, 0.0))
    bend = Quaternion(k.tolist(), float(rng.uniform(0.3, 1.8)))
    pbs["forearm.L"].rotation_quaternion = bend @ Quaternion(perp.tolist(), off_axis)
    pbs["hand.L"].rotation_quaternion = random_quaternion(rng, 0.8)
    evaluate()
    assert bpy.ops.limber.snap_target(armature=obj.name, limb="arm.L") == {"FINISHED"}
    evaluate()
    return obj, limb


@pytest.mark.parametrize("mode", ["ANGLE", "POLE"])
@pytest.mark.parametrize("seed", range(6))
def test_snap_then_solve_keeps_an_fk_pose_on_the_hinge_circle(
    limber: Any, seed: int, mode: str
) -> None:
    obj, limb = _fk_pose(limber, seed, 0.0)
    before = _points(obj)
    if mode == "POLE":
        limb.pole = add_empty("Pole", Matrix.Translation((0.0, 2.0, 0.0)))
        limb.swivel_mode = "POLE"
        assert bpy.ops.limber.snap_pole(armature=obj.name, limb="arm.L") == {"FINISHED"}
    else:
        limb.swivel = 2.5  # anything: the snap sets it
        assert bpy.ops.limber.snap_swivel(armature=obj.name, limb="arm.L") == {"FINISHED"}
    snap = limber.sub("addon.run.solve").snap_fk(obj, limb)
    assert snap.residual < TOL
    st = limber.sub("addon.run.solve").solve_object(obj, limbs=["arm.L"])[0]
    assert st.reached, st.message
    assert np.abs(_points(obj) - before).max() < TOL


@pytest.mark.parametrize("mode", ["ANGLE", "POLE"])
def test_snap_with_an_fk_forearm_turned_off_its_hinge(limber: Any, mode: str) -> None:
    """The FK forearm also turns 8° about another axis. Its elbow (the forearm's head) is
    still on the hinge circle of the FK hand (rigid links keep both distances), so the
    snap keeps every joint in place: the residual is float32 rounding and the forearm's
    off-hinge turn goes into the hand's rotation (the hand keeps its world pose). The old
    snap projected the turn away and moved the elbow by centimetres."""
    obj, limb = _fk_pose(limber, 3, np.radians(8.0))
    before = _points(obj)
    solve = limber.sub("addon.run.solve")
    snap = solve.snap_fk(obj, limb)
    assert snap.residual < TOL
    assert np.allclose(snap.fk_elbow, before[2], atol=1e-6)  # forearm head = FK elbow
    _snap(obj, limb, mode)
    hand = world_pose(obj, "hand.L")
    st = solve.solve_object(obj, limbs=["arm.L"])[0]
    assert st.reached, st.message
    assert np.abs(_points(obj) - before).max() < TOL
    assert np.abs(world_pose(obj, "hand.L") - hand).max() < TOL


def _snap(obj: Any, limb: Any, mode: str) -> None:
    """Snap the swivel (ANGLE) or a new pole object (POLE) to the FK elbow."""
    if mode == "POLE":
        limb.pole = add_empty("Pole")
        limb.swivel_mode = "POLE"
        assert bpy.ops.limber.snap_pole(armature=obj.name, limb="arm.L") == {"FINISHED"}
    else:
        assert bpy.ops.limber.snap_swivel(armature=obj.name, limb="arm.L") == {"FINISHED"}


def test_snap_pole_without_a_pole_is_refused_by_name(limber: Any) -> None:
    obj, _ = _fk_pose(limber, 0, 0.0)
    with pytest.raises(RuntimeError, match="no pole object"):
        bpy.ops.limber.snap_pole(armature=obj.name, limb="arm.L")
    assert bpy.ops.limber.snap_pole(armature=obj.name) == {"FINISHED"}  # none with a pole


@pytest.mark.parametrize("mode", ["ANGLE", "POLE"])
def test_snap_residual_off_the_hinge_circle_is_reported(
    limber: Any, mode: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """An FK elbow truly off the hinge circle: the limb's hinge axis is tilted toward the
    forearm (CUSTOM (1, 0.6, 0)), so it cannot fold the arm as far as the FK forearm,
    bent 150° about X, does. No swivel reproduces the FK pose: the snap reports how far
    IK moves the elbow (operator report), the solve puts the elbow exactly there, and the
    status reports the hand's miss instead of claiming the goal."""
    solve = limber.sub("addon.run.solve")
    obj = metarig()
    limb = add_limb(obj, "arm.L", BONES, hinge_axis="CUSTOM", hinge_custom=(1.0, 0.6, 0.0))
    limb.target = add_empty("T")
    pbs = obj.pose.bones
    for b in BONES:
        pbs[b].rotation_mode = "QUATERNION"
    pbs["upper_arm.L"].rotation_quaternion = Quaternion((0.3, 0.2, 1.0), 0.7)
    pbs["forearm.L"].rotation_quaternion = Quaternion((1.0, 0.0, 0.0), np.radians(150.0))
    evaluate()
    assert bpy.ops.limber.snap_target(armature=obj.name, limb="arm.L") == {"FINISHED"}
    evaluate()
    snap = solve.snap_fk(obj, limb)
    assert snap.residual > 1e-3  # millimetres, far above float32
    capfd.readouterr()
    _snap(obj, limb, mode)
    out = capfd.readouterr()
    assert f"arm.L {snap.residual * 1000.0:.3g} mm" in out.out + out.err
    st = solve.solve_object(obj, limbs=["arm.L"])[0]
    elbow = _points(obj)[2]  # the forearm's head
    moved = float(np.linalg.norm(elbow - snap.fk_elbow))
    print(f"snap residual {snap.residual * 1000:.3f} mm, elbow moved {moved * 1000:.3f} mm, "
          f"hand miss {st.position_error * 1000:.3f} mm ({mode})")
    assert np.linalg.norm(elbow - snap.elbow) < TOL
    assert abs(moved - snap.residual) < TOL
    assert not st.reached and st.position_error > TOL
    assert limb.status.position_error == pytest.approx(st.position_error)
    assert "not reached" in limb.status.message or "reach" in limb.status.message
