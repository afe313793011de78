"""Baking solved limbs to keys: bulk F-curves, range respected, only limb bones keyed."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np

from tests.blender.conftest import compat
from tests.blender.limber_rigs import (
    RIGIFY_LIMBS,
    add_empty,
    add_limb,
    evaluate,
    metarig,
    rotation_angle,
    world_pose,
)

TOL = 1e-5
START, END = 1, 100


def _fcurves(obj: Any) -> Any:
    return compat().assigned_fcurves(obj.animation_data)


def _animate_targets(obj: Any) -> dict[str, Any]:
    """Targets moving on small circles near each end bone's rest pose (always reachable)."""
    targets = {}
    for name, bones in RIGIFY_LIMBS.items():
        t = add_empty(f"T.{name}")
        rest = world_pose(obj, bones[2])
        shoulder = world_pose(obj, bones[0])[:3, 3]
        centre = rest[:3, 3] + 0.25 * (shoulder - rest[:3, 3])
        for f in range(START - 10, END + 11, 10):
            a = 2 * math.pi * f / 60
            t.location = centre + 0.08 * np.array((math.cos(a), 0.5, math.sin(a)))
            t.rotation_euler = (0.3 * math.sin(a), 0.2, 0.4 * math.cos(a))
            t.keyframe_insert("location", frame=f)
            t.keyframe_insert("rotation_euler", frame=f)
        targets[name] = t
        add_limb(obj, name, bones, target=t, goal_type="POSE" if "arm" in name else "POSITION")
    return targets


def test_bake_reproduces_solved_poses_and_keeps_other_keys(limber: Any) -> None:
    obj = metarig(location=(0.5, 0, 0), rotation=(0, 0, 0.3))
    targets = _animate_targets(obj)
    pbs = obj.pose.bones
    # Pre-existing keys: on a limb bone outside and inside the range, and on a spine bone.
    pbs["upper_arm.L"].rotation_quaternion = (1, 0, 0, 0)
    for f in (-5, 50, 150):
        pbs["upper_arm.L"].keyframe_insert("rotation_quaternion", frame=f)
    pbs["spine.003"].keyframe_insert("rotation_quaternion", frame=40)
    assert (
        bpy.ops.limber.bake(armature=obj.name, frame_start=START, frame_end=END, disable_limbs=True)
        == {"FINISHED"}
    )
    assert not any(lb.enabled for lb in obj.limber.limbs)
    fcurves = _fcurves(obj)
    keyed = {fc.data_path.split('"')[1] for fc in fcurves}
    limb_bones = {b for name, bones in RIGIFY_LIMBS.items() for b in bones}
    position_ends = {bones[2] for name, bones in RIGIFY_LIMBS.items() if "leg" in name}
    assert keyed == (limb_bones - position_ends) | {"spine.003"}
    for fc in fcurves:
        frames = sorted(k.co.x for k in fc.keyframe_points)
        if fc.data_path.startswith('pose.bones["upper_arm.L"]'):
            assert frames == [-5.0, *range(START, END + 1), 150.0]  # outside kept, 50 replaced
        elif fc.data_path.startswith('pose.bones["spine.003"]'):
            assert frames == [40.0]
        else:
            assert frames == list(range(START, END + 1))
    # Re-evaluating the baked action reproduces the solved poses: the ends meet the targets.
    for f in (START, 17, 50, 83, END):
        bpy.context.scene.frame_set(f)
        evaluate()
        for name, bones in RIGIFY_LIMBS.items():
            m = world_pose(obj, bones[2])
            t = np.array(targets[name].matrix_world)
            assert np.linalg.norm(m[:3, 3] - t[:3, 3]) <= TOL, (f, name)
            if "arm" in name:
                assert rotation_angle(m, t) <= TOL, (f, name)


def test_bake_step_and_euler_bones(limber: Any) -> None:
    obj = metarig()
    _animate_targets(obj)
    for b in RIGIFY_LIMBS["arm.R"]:
        obj.pose.bones[b].rotation_mode = "YXZ"
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=10, frame_end=30, step=5) == {
        "FINISHED"
    }
    fc = _fcurves(obj).find('pose.bones["upper_arm.R"].rotation_euler', index=1)
    assert fc is not None
    assert [k.co.x for k in fc.keyframe_points] == [10.0, 15.0, 20.0, 25.0, 30.0]
    values = np.array([k.co.y for k in fc.keyframe_points])
    assert np.all(np.abs(np.diff(values)) < math.pi)  # continuous (unwrapped)
    assert all(lb.enabled for lb in obj.limber.limbs)


def test_batched_bake_equals_the_per_frame_bake(limber: Any) -> None:
    """Analytic limbs are baked as one batch per limb; the keys equal those of solving and
    writing frame by frame (Euler, axis-angle and quaternion bones, pole and midpoint)."""
    bake = limber.sub("addon.run.bake")
    obj = metarig(location=(0.2, -0.3, 0.1), rotation=(0.1, 0, 0.4), scale=1.3)
    targets = _animate_targets(obj)
    for b in RIGIFY_LIMBS["arm.R"]:
        obj.pose.bones[b].rotation_mode = "ZXY"
    obj.pose.bones["thigh.L"].rotation_mode = "AXIS_ANGLE"
    obj.limber.limbs["leg.L"].swivel_mode = "LIMITS_MIDPOINT"
    pole = add_empty("pole")
    pole.location = np.array(targets["arm.L"].location) + np.array((0.0, 0.5, 0.0))
    obj.limber.limbs["arm.L"].swivel_mode = "POLE"
    obj.limber.limbs["arm.L"].pole = pole
    obj.limber.limbs["arm.R"].swivel = 0.7
    obj.limber.limbs["arm.R"].keyframe_insert("swivel", frame=1)
    obj.limber.limbs["arm.R"].swivel = -0.4
    obj.limber.limbs["arm.R"].keyframe_insert("swivel", frame=30)
    scene = bpy.context.scene
    per_frame = bake.bake_object(obj, scene, 1, 30, batch=False)
    assert not per_frame.batched
    batched = bake.bake_object(obj, scene, 1, 30)
    assert batched.batched
    assert per_frame.channels.keys() == batched.channels.keys()
    for key, values in per_frame.channels.items():
        assert np.allclose(values, batched.channels[key], atol=1e-9), key
    # Again with only the limb rotations keyed (the action is set aside while reading).
    ad = obj.animation_data
    for fc in [fc for fc in _fcurves(obj) if "swivel" in fc.data_path]:
        _fcurves(obj).remove(fc)
    obj.limber.limbs["arm.R"].swivel = 0.7
    written = {fc.data_path.split('"')[1] for fc in _fcurves(obj)}
    restore = bake._detach_replaced_animation(obj, sorted(written))
    assert restore is not None and ad.action is None
    restore()
    assert ad.action is not None
    again = bake.bake_object(obj, scene, 1, 30)
    redo = bake.bake_object(obj, scene, 1, 30, batch=False)
    assert again.batched and ad.action is not None and len(_fcurves(obj)) == len(redo.channels)
    for key, values in redo.channels.items():
        assert np.allclose(values, again.channels[key], atol=1e-9), key
    for a, b in zip(per_frame.statuses, batched.statuses, strict=True):
        assert [(s.limb, s.reachable, s.message) for s in a] == [
            (s.limb, s.reachable, s.message) for s in b
        ]
        assert np.allclose([s.swivel for s in a], [s.swivel for s in b], atol=1e-9)
    for f in (1, 12, 30):  # and the keys reproduce the goals
        scene.frame_set(f)
        evaluate()
        for name, bones in RIGIFY_LIMBS.items():
            m = world_pose(obj, bones[2])
            assert np.linalg.norm(m[:3, 3] - np.array(targets[name].matrix_world)[:3, 3]) <= TOL


def test_chains_force_the_per_frame_bake(limber: Any) -> None:
    bake = limber.sub("addon.run.bake")
    obj = metarig()
    _animate_targets(obj)
    chain = obj.limber.chains.add()
    chain.name, chain.root_bone = "spine", "spine.001"
    e = chain.effectors.add()
    e.tip_bone, e.target = "spine.003", add_empty("T.chest", world_pose(obj, "spine.003"))
    result = bake.bake_object(obj, bpy.context.scene, 1, 5)
    assert not result.batched
    assert any(s.kind == "chain" for s in result.statuses[0])


def test_animated_ik_limits_fall_back_to_the_per_frame_bake(limber: Any) -> None:
    """A keyed IK limit changes the limb within the range: one batch cannot represent it."""
    bake = limber.sub("addon.run.bake")
    obj = metarig()
    _animate_targets(obj)
    pb = obj.pose.bones["upper_arm.L"]
    pb.use_ik_limit_x = True
    for f, v in ((1, -1.0), (10, -0.5)):
        pb.ik_min_x = v
        pb.keyframe_insert("ik_min_x", frame=f)
    assert not bake.bake_object(obj, bpy.context.scene, 1, 10).batched
    obj.animation_data_clear()
    assert bake.bake_object(obj, bpy.context.scene, 1, 10).batched
