"""limber.bake on the pose Blender evaluates (issue 13): keys outside the range unchanged
in every field, key continuity with kept keys, NLA (tweak mode, strips below, blended
active actions), warnings and exit codes where something was skipped."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Quaternion

from core import goal_errors
from tests.blender.limber_rigs import (
    RIGIFY_LIMBS,
    add_empty,
    add_limb,
    metarig,
    world_pose,
)

ARM = RIGIFY_LIMBS["arm.L"]
POS_TOL = 1e-5
ROT_TOL = math.radians(0.01)
KEY_FIELDS = ("co", "handle_left", "handle_right", "handle_left_type", "handle_right_type",
              "interpolation", "easing", "back", "amplitude", "period", "type")


def _animated_target(obj: Any, frames: range, name: str = "T") -> Any:
    """An Empty keyed on a small loop near the hand's rest pose (reachable)."""
    t = add_empty(name)
    rest = world_pose(obj, ARM[2])
    shoulder = world_pose(obj, ARM[0])[:3, 3]
    centre = rest[:3, 3] + 0.25 * (shoulder - rest[:3, 3])
    for f in frames:
        a = 2 * math.pi * f / 40
        t.location = centre + 0.06 * np.array((math.cos(a), 0.4, math.sin(a)))
        t.rotation_euler = (0.3 * math.sin(a), 0.2, 0.3 * math.cos(a))
        t.keyframe_insert("location", frame=f)
        t.keyframe_insert("rotation_euler", frame=f)
    return t


def _on_target(obj: Any, target: Any, frames: range, end_bone: str = ARM[2]) -> None:
    """The evaluated hand on the target at these frames (orientation as documented: the
    Y-first Gram–Schmidt frames, which a sheared, stretched arm needs)."""
    scene = bpy.context.scene
    for f in frames:
        scene.frame_set(f)
        end = world_pose(obj, end_bone)
        tgt = np.array(target.evaluated_get(bpy.context.evaluated_depsgraph_get()).matrix_world)
        pos, ori = goal_errors("POSE", (0.0, 1.0, 0.0), end, tgt)
        assert pos <= POS_TOL and ori <= ROT_TOL, (f, pos, ori)


def _keys(fcurves: Any) -> dict[tuple[str, int], list[tuple[Any, ...]]]:
    out = {}
    for fc in fcurves:
        out[(fc.data_path, fc.array_index)] = [
            tuple(tuple(getattr(k, f)) if f in ("co", "handle_left", "handle_right")
                  else getattr(k, f) for f in KEY_FIELDS)
            for k in fc.keyframe_points
        ]
    return out


def _fcurves(limber: Any, obj: Any) -> Any:
    return limber.sub("addon.compat").assigned_fcurves(obj.animation_data)


def test_sub_range_keeps_every_field_outside_and_continues_from_the_kept_key(
    limber: Any,
) -> None:
    obj = metarig()
    t = _animated_target(obj, range(-10, 61, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    pb = obj.pose.bones[ARM[0]]
    q = Quaternion((0.9, 0.2, 0.1, 0.3)).normalized()
    for f, sign in ((1, -1.0), (5, -1.0), (9, -1.0), (30, 1.0), (40, 1.0)):
        pb.rotation_quaternion = [sign * x for x in q]
        pb.keyframe_insert("rotation_quaternion", frame=f)
    for fc in _fcurves(limber, obj):
        for k in fc.keyframe_points:
            k.interpolation, k.easing = "BACK", "EASE_IN"
            k.back, k.amplitude, k.period, k.type = 2.5, 0.7, 3.0, "BREAKDOWN"
            k.handle_left_type = "FREE"
    before = _keys(_fcurves(limber, obj))
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=12, frame_end=20) == {"FINISHED"}
    after = _keys(_fcurves(limber, obj))
    for key, rows in before.items():
        kept = [r for r in after[key] if not 12 - 1e-4 <= r[0][0] <= 20 + 1e-4]
        assert kept == [r for r in rows if not 12 - 1e-4 <= r[0][0] <= 20 + 1e-4], key
    path = f'pose.bones["{ARM[0]}"].rotation_quaternion'
    prev = np.array([after[(path, i)][2][0][1] for i in range(4)])  # the key at frame 9
    first = np.array([next(r for r in after[(path, i)] if r[0][0] == 12)[0][1]
                      for i in range(4)])
    assert prev @ first > 0.0  # continuous with the kept key: no 360° spin
    _on_target(obj, t, range(12, 21))
    st = obj.limber.limbs["arm.L"].status
    assert st.reached and "worst frame" in st.message and st.frame in range(12, 21)


def test_sub_range_euler_keys_continue_the_kept_keys_branch(limber: Any) -> None:
    """An XYZ-Euler arm whose kept keys sit a full turn away from the principal angles
    (the same rotations): the first baked keys unwrap onto the kept keys' branch (each
    angle within π of the kept one before the range), the baked keys are continuous, the
    kept keys stay as keyed and the baked keys play back on target."""
    obj = metarig()
    t = _animated_target(obj, range(-10, 41, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    pbs = obj.pose.bones
    for b in ARM:
        pbs[b].rotation_mode = "XYZ"
    turn = 2.0 * math.pi
    for f in (5, 9, 30):
        for i, b in enumerate(ARM):
            pbs[b].rotation_euler = (0.2 + turn, -0.1 * i - turn, 0.3 + 2 * turn)
            pbs[b].keyframe_insert("rotation_euler", frame=f)
    before = _keys(_fcurves(limber, obj))
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=12, frame_end=20) == {"FINISHED"}
    after = _keys(_fcurves(limber, obj))
    for b in ARM:
        path = f'pose.bones["{b}"].rotation_euler'
        for i in range(3):
            rows = after[(path, i)]
            kept = next(r for r in rows if r[0][0] == 9)[0][1]
            first = next(r for r in rows if r[0][0] == 12)[0][1]
            assert abs(first - kept) < math.pi, (b, i, kept, first)
            baked = [r[0][1] for r in rows if 12 <= r[0][0] <= 20]
            assert np.all(np.abs(np.diff(baked)) < math.pi)
            outside = [r for r in before[(path, i)] if not 12 <= r[0][0] <= 20]
            assert [r for r in rows if not 12 <= r[0][0] <= 20] == outside
    _on_target(obj, t, range(12, 21))


def _pose_at(obj: Any, frames: Any) -> dict[int, np.ndarray]:
    """Every pose bone's evaluated world matrix at these frames."""
    scene = bpy.context.scene
    out = {}
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        ev = obj.evaluated_get(dg)
        out[f] = np.array([np.array(ev.matrix_world @ pb.matrix) for pb in ev.pose.bones])
    return out


@pytest.mark.parametrize("start, end", [(12, 20), (10, 29)])
def test_sub_range_bake_keeps_every_frame_up_to_and_from_the_kept_keys(
    limber: Any, start: int, end: int
) -> None:
    """Keys on all three arm bones at 1, 5, 9 (BACK / ELASTIC / BOUNCE eased, free
    handles) and 30, 40; a bake of 12–20 (or 10–29). Every frame governed only by kept
    keys (up to the last kept key before the range and from the first kept key after it,
    and beyond) evaluates to the same pose for every bone of the armature; only the
    segments that touch the range (9→12 and 20→30) follow the baked keys (see the bake's
    docstring) — a range from the frame after a kept key to the frame before the next
    leaves every whole frame outside it unchanged."""
    obj = metarig()
    t = _animated_target(obj, range(-10, 61, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    pbs = obj.pose.bones
    for f in (1, 5, 9, 30, 40):
        a = 0.2 * f
        for i, b in enumerate(ARM):
            pbs[b].rotation_quaternion = Quaternion(
                (1.0, 0.2 * math.sin(a + i), 0.1 * math.cos(a), 0.15 * i)).normalized()
            pbs[b].keyframe_insert("rotation_quaternion", frame=f)
    easings = (("BACK", "EASE_IN"), ("ELASTIC", "EASE_OUT"), ("BOUNCE", "EASE_IN_OUT"))
    for fc in _fcurves(limber, obj):
        for j, k in enumerate(fc.keyframe_points):
            k.interpolation, k.easing = easings[j % 3]
            k.back, k.amplitude, k.period = 1.5 + 0.1 * j, 0.5, 2.0 + j
            k.handle_left_type = k.handle_right_type = "FREE"
    outside = [*range(-5, 10), *range(30, 46)]
    if (start, end) == (10, 29):
        outside = [f for f in range(-5, 46) if not start <= f <= end]
    before = _pose_at(obj, outside)
    keys = _keys(_fcurves(limber, obj))
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=start,
                               frame_end=end) == {"FINISHED"}
    after = _pose_at(obj, outside)
    for f in outside:
        assert np.abs(after[f] - before[f]).max() <= 1e-6, f
    now = _keys(_fcurves(limber, obj))
    for key, rows in keys.items():
        assert [r for r in now[key] if not start <= r[0][0] <= end] == rows, key
    _on_target(obj, t, range(start, end + 1))


def _strip_action(obj: Any, frames: range) -> Any:
    """An action keying the arm's rotations over ``frames``, pushed into an NLA strip."""
    pbs = obj.pose.bones
    for f in frames:
        a = 2 * math.pi * f / 30
        pbs[ARM[0]].rotation_quaternion = Quaternion((1, 0.3 * math.sin(a), 0.2, 0)).normalized()
        pbs[ARM[1]].rotation_quaternion = Quaternion((1, 0.4 + 0.2 * math.cos(a), 0, 0)
                                                     ).normalized()
        for b in ARM[:2]:
            pbs[b].keyframe_insert("rotation_quaternion", frame=f)
    ad = obj.animation_data
    action = ad.action
    track = ad.nla_tracks.new()
    strip = track.strips.new("walk", frames[0], action)
    ad.action = None
    return strip


@pytest.mark.parametrize("new_action", [False, True])
def test_bake_over_nla_strips_plays_them_unchanged_outside_the_range(
    limber: Any, new_action: bool,
) -> None:
    """Strips below (and optionally a new active action keying other bones over them):
    the bake goes into a REPLACE track over the range only."""
    obj = metarig()
    _strip_action(obj, range(1, 61, 5))
    if new_action:
        obj.pose.bones["spine.003"].keyframe_insert("rotation_quaternion", frame=1)
    t = _animated_target(obj, range(-10, 61, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    scene = bpy.context.scene
    outside = (5, 15, 40, 55)
    before = []
    for f in outside:
        scene.frame_set(f)
        before.append(world_pose(obj, ARM[2]))
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=20, frame_end=30) == {"FINISHED"}
    ad = obj.animation_data
    assert ad.nla_tracks[-1].name == "Limber bake" and (ad.action is not None) == new_action
    for f, b in zip(outside, before, strict=True):
        scene.frame_set(f)
        assert np.abs(world_pose(obj, ARM[2]) - b).max() <= 1e-6, f
    _on_target(obj, t, range(20, 31))


def test_active_action_blending_the_baked_channels_over_strips_is_refused(limber: Any) -> None:
    obj = metarig()
    _strip_action(obj, range(1, 31, 5))
    pb = obj.pose.bones[ARM[0]]
    pb.keyframe_insert("rotation_quaternion", frame=1)  # a new active action on top
    obj.animation_data.action_blend_type = "ADD"
    add_limb(obj, "arm.L", ARM, target=_animated_target(obj, range(1, 31, 5)))
    bake = limber.sub("addon.run.bake")
    try:
        bake.bake_object(obj, bpy.context.scene, 5, 10)
    except bake.BakeError as exc:
        assert "blends" in str(exc) and "ADD" in str(exc)
    else:  # pragma: no cover - the refusal is the contract
        raise AssertionError("expected a BakeError")
    with pytest.raises(RuntimeError, match="blends"):
        bpy.ops.limber.bake(armature=obj.name, frame_start=5, frame_end=10)


def test_tweak_mode_bake_writes_keys_in_strip_time(limber: Any) -> None:
    obj = metarig()
    strip = _strip_action(obj, range(1, 31, 5))
    strip.scale = 2.0
    strip.frame_start_ui = 11  # scene 11 ↔ action 1, two scene frames per action frame
    t = _animated_target(obj, range(0, 81, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    ad = obj.animation_data
    for s in ad.nla_tracks[0].strips:
        s.select = True
    ad.nla_tracks.active = ad.nla_tracks[0]
    ad.use_tweak_mode = True
    assert ad.use_tweak_mode and ad.action is not None
    bake = limber.sub("addon.run.bake")
    res = bake.bake_object(obj, bpy.context.scene, 21, 31)
    assert res.destination == "tweaked strip" and res.keys_written
    fc = _fcurves(limber, obj).find(f'pose.bones["{ARM[0]}"].rotation_quaternion', index=0)
    xs = sorted(k.co[0] for k in fc.keyframe_points)
    # scene 21..31 ↔ action 6..11 in half frames; the action's own keys 1, 16, 21, 26 kept
    assert {6.0, 6.5, 10.5, 11.0, 1.0, 16.0, 21.0, 26.0} <= set(xs) and 31.0 not in xs
    _on_target(obj, t, range(21, 32))
    ad.use_tweak_mode = False
    _on_target(obj, t, range(21, 32, 2))


def test_skipped_limbs_warn_and_zero_key_bakes_cancel(limber: Any) -> None:
    obj = metarig()
    t = _animated_target(obj, range(1, 21, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    gone = add_empty("gone")
    add_limb(obj, "arm.R", RIGIFY_LIMBS["arm.R"], target=gone)
    add_limb(obj, "leg.L", RIGIFY_LIMBS["leg.L"], target=t)
    bpy.data.objects.remove(gone)
    obj.data.bones["foot.L"].name = "foot_renamed.L"
    bake = limber.sub("addon.run.bake")
    res = bake.bake_object(obj, bpy.context.scene, 1, 10)
    assert set(res.skipped) == {"arm.R", "leg.L"} and res.keys_written
    assert "no target" in res.skipped["arm.R"] and "foot.L" in res.skipped["leg.L"]
    assert obj.limber.limbs["arm.R"].status.message.startswith("worst frame")
    obj.limber.limbs["arm.L"].enabled = False
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=1, frame_end=5) == {"CANCELLED"}


def test_non_uniformly_scaled_armature_bakes_keys(limber: Any) -> None:
    obj = metarig(scale=(1.0, 1.5, 0.8))
    t = _animated_target(obj, range(1, 21, 5))
    add_limb(obj, "arm.L", ARM, target=t, goal_type="POSITION")
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=1, frame_end=10) == {"FINISHED"}
    assert obj.limber.limbs["arm.L"].status.reached


def test_cli_exits_non_zero_for_an_armature_without_limbs(limber: Any, tmp_path: Path) -> None:
    cli = limber.sub("addon.ui.cli")
    metarig()
    path = tmp_path / "bare.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    out = tmp_path / "out.blend"
    base = ["--input", str(path), "--start", "1", "--end", "3"]
    assert cli.main(["bake", *base, "--output", str(out), "--armature", "metarig"]) == 1
    assert cli.main(["report", *base, "--json", str(tmp_path / "r.json"),
                     "--armature", "metarig"]) == 1
    assert not out.exists()


def test_live_solve_and_bake_give_the_same_pose(limber: Any) -> None:
    """The frame-by-frame bake and a live solve share the pipeline: bit-identical
    rotations (quaternions up to the sign the bake picks for continuity); the batched bake
    (targets sampled from their F-curves in float64, not Blender's float32 evaluation)
    agrees to float32 rounding."""
    obj = metarig()
    t = _animated_target(obj, range(-10, 41, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    solve = limber.sub("addon.run.solve")
    bake = limber.sub("addon.run.bake")
    scene = bpy.context.scene
    frames = range(3, 13)
    live = {}
    for f in frames:
        scene.frame_set(f)
        (st,) = solve.solve_object(obj)
        live[f] = dict(st.written)
    per_frame = bake.bake_object(obj, scene, frames[0], frames[-1], batch=False)
    batched = bake.bake_object(obj, scene, frames[0], frames[-1])
    assert not per_frame.batched and batched.batched
    for i, f in enumerate(frames):
        for bone, (prop, vals) in live[f].items():
            path = f'pose.bones["{bone}"].{prop}'
            got = tuple(float(per_frame.channels[(path, k)][i]) for k in range(len(vals)))
            assert got == vals or got == tuple(-v for v in vals), (f, bone)
            other = np.array([batched.channels[(path, k)][i] for k in range(len(vals))])
            assert min(np.abs(other - vals).max(), np.abs(other + vals).max()) <= 1e-6


def test_baked_keys_are_played_back_and_a_miss_is_reported(limber: Any) -> None:
    """The bake plays its keys back: a muted F-curve (the keys land but do not play) makes
    the status report the measured miss instead of 'reached'."""
    obj = metarig()
    t = _animated_target(obj, range(-10, 41, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    pb = obj.pose.bones[ARM[0]]
    pb.keyframe_insert("rotation_quaternion", frame=1)
    for fc in _fcurves(limber, obj):
        fc.mute = True
    res = limber.sub("addon.run.bake").bake_object(obj, bpy.context.scene, 5, 15)
    st = obj.limber.limbs["arm.L"].status
    assert res.keys_written and not st.reached and st.measured
    assert "play back off target" in st.message and st.position_error > POS_TOL


def test_bake_of_an_unproven_limb_is_checked_on_the_evaluated_pose(limber: Any) -> None:
    """A stretched upper arm (the model is not proven): that limb is baked frame by frame
    and checked on the evaluated pose (also when re-baked over its own keys), the other
    limb stays batched; the keys play back on target."""
    obj = metarig()
    t = _animated_target(obj, range(-10, 41, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    tr = add_empty("TR", world_pose(obj, RIGIFY_LIMBS["arm.R"][2]))
    add_limb(obj, "arm.R", RIGIFY_LIMBS["arm.R"], target=tr)
    obj.pose.bones[ARM[0]].scale = (1.0, 1.1, 1.0)
    bake = limber.sub("addon.run.bake")
    for _ in range(2):
        res = bake.bake_object(obj, bpy.context.scene, 3, 14)
        assert res.batched and res.checked == ["arm.L"]
        st = obj.limber.limbs["arm.L"].status
        assert st.reached and st.measured, st.message
        _on_target(obj, t, range(3, 15))


def test_checked_bake_of_stretched_and_constrained_limbs_in_one_range(limber: Any) -> None:
    """A stretched arm (its range solved at once against its affine chain) and an arm
    with a constraint on its forearm (solved frame by frame) in one checked bake beside a
    proven leg: every frame of both arms is measured on the evaluated pose and on target,
    and the keys play back on target."""
    obj = metarig()
    t = _animated_target(obj, range(-10, 41, 5))
    add_limb(obj, "arm.L", ARM, target=t)
    right = RIGIFY_LIMBS["arm.R"]
    tr = add_empty("TR", world_pose(obj, right[2]))
    add_limb(obj, "arm.R", right, target=tr)
    leg = RIGIFY_LIMBS["leg.L"]
    add_limb(obj, "leg.L", leg, target=add_empty("TL", world_pose(obj, leg[2])))
    obj.pose.bones[ARM[0]].scale = (1.0, 1.1, 1.0)
    obj.pose.bones[right[1]].constraints.new("LIMIT_SCALE")
    res = limber.sub("addon.run.bake").bake_object(obj, bpy.context.scene, 3, 14)
    assert res.batched and sorted(res.checked) == ["arm.L", "arm.R"]
    for row in res.statuses:
        for st in row:
            if st.limb.startswith("arm"):
                assert st.measured == "depsgraph" and st.reached, (st.frame, st.message)
                assert st.position_error <= POS_TOL and st.orientation_error <= ROT_TOL
    _on_target(obj, t, range(3, 15))
    _on_target(obj, tr, range(3, 15), right[2])


@pytest.mark.parametrize("goal", ["POSE", "POSITION"])
def test_a_lone_stretched_limb_is_predicted_and_checked(limber: Any, goal: str) -> None:
    """With no proven limb beside it, a stretched arm is still solved for the range at once
    and checked on the evaluated pose every frame (not sent to the per-frame path), for
    a goal that sets the hand and one that holds it."""
    obj = metarig()
    t = _animated_target(obj, range(-10, 41, 5))
    add_limb(obj, "arm.L", ARM, target=t, goal_type=goal)
    obj.pose.bones[ARM[0]].scale = (1.0, 1.1, 1.0)
    obj.pose.bones[ARM[2]].rotation_quaternion = (0.9, 0.3, 0.1, 0.0)  # a held hand
    res = limber.sub("addon.run.bake").bake_object(obj, bpy.context.scene, 3, 14)
    assert res.batched and res.checked == ["arm.L"]
    assert all(st.measured == "depsgraph" and st.reached for row in res.statuses for st in row)
    if goal == "POSE":
        _on_target(obj, t, range(3, 15))
