"""The batched bake's fast reads (inputs sampled from F-curves, no frame change per frame):
same keys as reading frame by frame when eligible; a frame-by-frame fallback otherwise."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import bpy
import numpy as np
import pytest

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
#: Fast and frame-by-frame reads differ by float32 rounding of the composed target frames.
KEY_TOL = 1e-6
START, END = 1, 40


def _key_loop(ob: Any, centre: Any, phase: float, rot: str = "rotation_euler") -> None:
    """Keys every 8 frames on a small loop around ``centre`` (reachable targets)."""
    for f in range(START - 8, END + 9, 8):
        a = 2 * math.pi * f / 48 + phase
        ob.location = np.asarray(centre) + 0.07 * np.array((math.cos(a), 0.4, math.sin(a)))
        ob.keyframe_insert("location", frame=f)
        if rot == "rotation_euler":
            ob.rotation_euler = (0.3 * math.sin(a), 0.2 + 0.1 * math.cos(a), 0.4 * math.cos(a))
        elif rot == "rotation_quaternion":
            q = np.array((1.0, 0.2 * math.sin(a), 0.1, 0.3 * math.cos(a)))
            ob.rotation_quaternion = 1.7 * q / np.linalg.norm(q)  # not normalised
        else:
            ob.rotation_axis_angle = (0.5 + 0.3 * math.sin(a), 0.2, 1.0, 0.3 * math.cos(a))
        ob.keyframe_insert(rot, frame=f)


def _rig(**transform: Any) -> tuple[Any, dict[str, Any]]:
    """The meta-rig with four limbs (arms POSE, legs POSITION) and keyed target Empties."""
    obj = metarig(**transform)
    targets = {}
    for i, (name, bones) in enumerate(RIGIFY_LIMBS.items()):
        t = add_empty(f"T.{name}")
        rest = world_pose(obj, bones[2])
        shoulder = world_pose(obj, bones[0])[:3, 3]
        _key_loop(t, rest[:3, 3] + 0.25 * (shoulder - rest[:3, 3]), i)
        targets[name] = t
        add_limb(obj, name, bones, target=t, goal_type="POSE" if "arm" in name else "POSITION")
    return obj, targets


def _bake(limber: Any, obj: Any, **kw: Any) -> tuple[Any, Any]:
    """(fast-path bake, frame-by-frame batched bake) of the same range."""
    bake = limber.sub("addon.run.bake")
    scene = bpy.context.scene
    slow = bake.bake_object(obj, scene, START, END, fast=False, **kw)
    quick = bake.bake_object(obj, scene, START, END, **kw)
    assert slow.batched and quick.batched and not slow.fast
    return quick, slow


def _same_keys(a: Any, b: Any, tol: float = KEY_TOL) -> None:
    assert a.channels.keys() == b.channels.keys()
    for key, values in b.channels.items():
        off = np.flatnonzero(np.abs(values - a.channels[key]) > tol)
        assert not len(off), (key, [(a.frames[i], a.channels[key][i], values[i]) for i in off])
    for ra, rb in zip(a.statuses, b.statuses, strict=True):
        assert [(s.limb, s.reachable, s.within_limits, s.message) for s in ra] == [
            (s.limb, s.reachable, s.within_limits, s.message) for s in rb
        ]


def _reaches_targets(obj: Any, targets: dict[str, Any], frames: tuple[int, ...]) -> None:
    """Re-evaluating the baked action puts every end bone on its target."""
    limbs = obj.limber.limbs
    for lb in limbs:
        lb.enabled = False  # the keys alone
    for f in frames:
        bpy.context.scene.frame_set(f)
        evaluate()
        for name, bones in RIGIFY_LIMBS.items():
            m = world_pose(obj, bones[2])
            bone = limbs[name].target_bone
            t = world_pose(targets[name], bone) if bone else np.array(targets[name].matrix_world)
            assert np.linalg.norm(m[:3, 3] - t[:3, 3]) <= TOL, (f, name)
            if "arm" in name:
                assert rotation_angle(m, t) <= TOL, (f, name)


def test_fast_reads_equal_frame_by_frame_reads(limber: Any) -> None:
    """Euler, quaternion (unnormalised) and axis-angle targets, fixed delta transforms,
    animated scale, a partly keyed vector, an animated pole, a keyed swivel, an Euler
    order, a transformed armature and a range beyond the keys."""
    obj, targets = _rig(location=(0.2, -0.3, 0.1), rotation=(0.1, 0, 0.4), scale=1.3)
    limbs = obj.limber.limbs
    arm_r = targets["arm.R"]
    arm_r.animation_data_clear()
    arm_r.rotation_mode = "QUATERNION"
    _key_loop(arm_r, np.array(arm_r.location), 1.0, "rotation_quaternion")
    leg_l = targets["leg.L"]
    leg_l.animation_data_clear()
    leg_l.rotation_mode = "AXIS_ANGLE"
    _key_loop(leg_l, np.array(leg_l.location), 2.0, "rotation_axis_angle")
    arm_l = targets["arm.L"]
    arm_l.rotation_mode = "ZXY"
    arm_l.delta_location = (0.01, -0.02, 0.0)
    arm_l.delta_rotation_euler = (0.05, 0.0, -0.03)
    arm_l.delta_scale = (1.0, 1.1, 0.9)
    arm_l.scale = (1.0, 1.0, 1.0)
    arm_l.keyframe_insert("scale", index=1, frame=1)
    arm_l.scale[1] = 1.4
    arm_l.keyframe_insert("scale", index=1, frame=30)
    pole = add_empty("pole")
    pole.location = np.array(arm_l.location) + np.array((0.0, 0.5, 0.0))
    pole.keyframe_insert("location", index=2, frame=1)
    pole.location[2] += 0.3
    pole.keyframe_insert("location", index=2, frame=20)
    limbs["arm.L"].swivel_mode = "POLE"
    limbs["arm.L"].pole = pole
    limbs["arm.R"].swivel = 0.7
    limbs["arm.R"].keyframe_insert("swivel", frame=1)
    limbs["arm.R"].swivel = -0.4
    limbs["arm.R"].keyframe_insert("swivel", frame=30)
    limbs["leg.R"].swivel_mode = "LIMITS_MIDPOINT"
    for b in RIGIFY_LIMBS["arm.R"]:
        obj.pose.bones[b].rotation_mode = "YXZ"
    obj.pose.bones["foot.L"].rotation_quaternion = (0.9, 0.1, 0.3, 0.0)  # a held wrist
    assert _eligible(limber, obj) is not None
    quick, slow = _bake(limber, obj)
    assert quick.fast
    assert all(s.reachable for row in quick.statuses for s in row)
    _same_keys(quick, slow)
    _reaches_targets(obj, targets, (START, 13, 29, END))


def test_fast_reads_again_over_previous_keys_and_with_a_step(limber: Any) -> None:
    obj, targets = _rig()
    first, _ = _bake(limber, obj)
    assert first.fast  # the baked rotations are replaced, so they do not block the next bake
    quick, slow = _bake(limber, obj, step=3)
    assert quick.fast and quick.frames == list(range(START, END + 1, 3))
    _same_keys(quick, slow)
    _reaches_targets(obj, targets, (START, 16, 40))


def _eligible(limber: Any, obj: Any) -> Any:
    bake, solve = limber.sub("addon.run.bake"), limber.sub("addon.run.solve")
    items = bake.batch_items(obj, None, None)
    rigs = [solve.rig_for(obj, lb) for lb in items]
    return bake._fast_eligible(obj, bpy.context.scene, items, rigs)


def _parent_target(obj: Any, targets: dict[str, Any]) -> None:
    holder = add_empty("holder")
    holder.location = (0.0, 0.1, 0.0)
    holder.keyframe_insert("location", frame=1)
    holder.location = (0.0, 0.0, 0.05)
    holder.keyframe_insert("location", frame=40)
    targets["arm.L"].parent = holder


def _constrain_target(obj: Any, targets: dict[str, Any]) -> None:
    c = targets["arm.L"].constraints.new("LIMIT_LOCATION")
    c.use_min_z, c.min_z = True, float(targets["arm.L"].location[2])


def _target_driver(obj: Any, targets: dict[str, Any]) -> None:
    fc = targets["arm.L"].driver_add("location", 1)
    fc.driver.expression = "0.2 + frame * 0.001"


def _armature_driver(obj: Any, targets: dict[str, Any]) -> None:
    fc = obj.limber.limbs["arm.L"].driver_add("swivel")
    fc.driver.expression = "frame * 0.01"


def _target_nla(obj: Any, targets: dict[str, Any]) -> None:
    ad = targets["arm.L"].animation_data
    track = ad.nla_tracks.new()
    track.strips.new("loop", 1, ad.action)
    ad.action = None


def _animated_spine(obj: Any, targets: dict[str, Any]) -> None:
    pb = obj.pose.bones["spine.003"]
    pb.keyframe_insert("rotation_quaternion", frame=1)
    pb.rotation_quaternion = (0.98, 0.0, 0.2, 0.0)
    pb.keyframe_insert("rotation_quaternion", frame=40)


def _animated_shoulder(obj: Any, targets: dict[str, Any]) -> None:
    pb = obj.pose.bones["shoulder.R"]
    pb.keyframe_insert("rotation_quaternion", frame=1)
    pb.rotation_quaternion = (0.98, 0.1, 0.0, 0.1)
    pb.keyframe_insert("rotation_quaternion", frame=40)


def _animated_armature(obj: Any, targets: dict[str, Any]) -> None:
    obj.keyframe_insert("location", frame=1)
    obj.location = (0.1, 0.05, 0.0)
    obj.keyframe_insert("location", frame=40)


def _target_bone(obj: Any, targets: dict[str, Any]) -> None:
    other = metarig(location=(0.0, 0.05, 0.0))
    for lb in obj.limber.limbs:
        bones = RIGIFY_LIMBS[lb.name]
        lb.target, lb.target_bone = other, bones[2]
        targets[lb.name] = other
    pb = other.pose.bones["upper_arm.L"]
    pb.keyframe_insert("rotation_quaternion", frame=1)
    pb.rotation_quaternion = (0.99, 0.1, 0.0, 0.05)
    pb.keyframe_insert("rotation_quaternion", frame=40)
    bpy.context.view_layer.objects.active = obj


def _parented_pole(obj: Any, targets: dict[str, Any]) -> None:
    holder = add_empty("holder")
    holder.keyframe_insert("location", frame=1)
    holder.location = (0.0, 0.3, 0.2)
    holder.keyframe_insert("location", frame=40)
    pole = add_empty("pole")
    pole.location = np.array(targets["arm.L"].location) + np.array((0.0, 0.5, 0.0))
    pole.parent = holder
    obj.limber.limbs["arm.L"].swivel_mode = "POLE"
    obj.limber.limbs["arm.L"].pole = pole


def _frame_handler(obj: Any, targets: dict[str, Any]) -> None:
    def nudge(scene: Any, *_: Any) -> None:
        targets["leg.R"].location[0] = 0.1 + 0.001 * scene.frame_current

    bpy.app.handlers.frame_change_pre.append(nudge)


def _depsgraph_handler(obj: Any, targets: dict[str, Any]) -> None:
    def noop(*_: Any) -> None:
        pass

    bpy.app.handlers.depsgraph_update_post.append(noop)


INELIGIBLE: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "parented target": _parent_target,
    "constrained target": _constrain_target,
    "driver on a target": _target_driver,
    "driver on the armature": _armature_driver,
    "NLA strip on a target": _target_nla,
    "animated spine": _animated_spine,
    "animated parent bone": _animated_shoulder,
    "animated armature object": _animated_armature,
    "target bone of another armature": _target_bone,
    "parented pole": _parented_pole,
    "frame-change handler": _frame_handler,
    "depsgraph handler": _depsgraph_handler,
}


@pytest.mark.parametrize("case", INELIGIBLE)
def test_ineligible_inputs_fall_back_and_bake_the_same(limber: Any, case: str) -> None:
    obj, targets = _rig()
    handlers = bpy.app.handlers
    pre, post = list(handlers.frame_change_pre), list(handlers.depsgraph_update_post)
    try:
        INELIGIBLE[case](obj, targets)
        bake = limber.sub("addon.run.bake")
        scene = bpy.context.scene
        assert _eligible(limber, obj) is None, case  # refused by the rules, not the check
        per_frame = bake.bake_object(obj, scene, START, END, batch=False)
        quick, slow = _bake(limber, obj)
        assert not quick.fast, case
        _same_keys(quick, slow, tol=0.0)  # both read frame by frame: identical
        _same_keys(quick, per_frame, tol=1e-9)
    finally:
        handlers.frame_change_pre[:] = pre
        handlers.depsgraph_update_post[:] = post
    if case != "frame-change handler":
        _reaches_targets(obj, targets, (START, 21, END))


def test_blocked_f_curves_fall_back(limber: Any) -> None:
    """Muted or modified F-curves, partial action influence and a keyed delta transform
    are not plain F-curve playback: read frame by frame."""
    bake = limber.sub("addon.run.bake")
    obj, targets = _rig()
    t = targets["arm.L"]
    assert bake._plain_object(t, obj) is not None
    fcs = limber.sub("addon.compat").ensure_fcurves(t)
    fcs[0].mute = True
    assert bake._plain_object(t, obj) is None
    fcs[0].mute = False
    mod = fcs[1].modifiers.new("NOISE")
    assert bake._plain_object(t, obj) is None
    fcs[1].modifiers.remove(mod)
    t.animation_data.action_influence = 0.5
    assert bake._plain_object(t, obj) is None
    t.animation_data.action_influence = 1.0
    t.keyframe_insert("delta_location", frame=3)
    assert bake._plain_object(t, obj) is None
    quick, slow = _bake(limber, obj)
    assert not quick.fast
    _same_keys(quick, slow, tol=0.0)


def test_keys_outside_the_range_keep_their_handles_and_types(limber: Any) -> None:
    obj, _ = _rig()
    pb = obj.pose.bones["forearm.L"]
    for f, w in ((-20, 1.0), (-10, 0.9), (60, 0.8)):
        pb.rotation_quaternion = (w, 0.1, 0.0, 0.0)
        pb.keyframe_insert("rotation_quaternion", frame=f)
    bake = limber.sub("addon.run.bake")
    fc = limber.sub("addon.compat").ensure_fcurves(obj).find(
        'pose.bones["forearm.L"].rotation_quaternion', index=0)
    k = fc.keyframe_points[1]
    k.handle_left_type = k.handle_right_type = "FREE"
    k.handle_left, k.handle_right, k.interpolation = (-12.0, 0.5), (-7.0, 1.2), "LINEAR"
    fc.keyframe_points[2].easing = "EASE_IN"
    before = [(tuple(p.co), tuple(p.handle_left), tuple(p.handle_right), p.interpolation,
               p.handle_left_type, p.handle_right_type, p.easing) for p in fc.keyframe_points]
    assert bake.bake_object(obj, bpy.context.scene, START, END).fast
    pts = sorted(fc.keyframe_points, key=lambda p: p.co.x)
    after = [(tuple(p.co), tuple(p.handle_left), tuple(p.handle_right), p.interpolation,
              p.handle_left_type, p.handle_right_type, p.easing) for p in pts]
    assert len(pts) == 3 + END - START + 1
    assert after[:2] == before[:2] and after[-1][0] == before[-1][0]
    assert after[-1][3:] == before[-1][3:]


def test_unanimated_and_shared_targets_are_read_fast(limber: Any) -> None:
    obj, targets = _rig(rotation=(0.0, 0.0, -0.5))
    targets["arm.R"].animation_data_clear()
    obj.limber.limbs["leg.R"].target = targets["leg.R"] = targets["leg.L"]
    quick, slow = _bake(limber, obj)
    assert quick.fast
    assert all(s.reachable for row in quick.statuses for s in row)
    _same_keys(quick, slow)
