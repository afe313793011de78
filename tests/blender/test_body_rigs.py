"""Full body in real Blender on skeletons Limber did not build: the CMU clip imported
with Blender's own BVH importer (an action on it), a Mixamo-named skeleton in
centimetres under an object scaled 0.01, and a game (UE-style) skeleton with twist
bones beside the arm chain. On each, as a new user would: ``limber.add_body`` finds root,
spine and four limbs; with both feet pinned a hand target is dragged within and beyond
reach: the pinned feet stay put on the evaluated pose, the hand lands on its target when
in reach, every pin's status is true of the evaluated pose; a bake plays back on target
and leaves keys outside its range unchanged."""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Vector

from tests.blender.limber_rigs import armature_from, evaluate, rotation_angle, world_pose

CLIP = Path(__file__).resolve().parents[2] / "tools" / "data" / "mocap" / "cmu_131_01.bvh"
#: 0.01 mm and 0.01° (the status tolerance).
POS_TOL = 1e-5
ROT_TOL = math.radians(0.01)

#: Mixamo bone layout (Y-Bot-like proportions): name → (head, tail, roll°, parent),
#: centimetres, Z up, T-pose; the object is scaled 0.01 as a Mixamo FBX import comes in.
MIXAMO: dict[str, tuple[tuple[float, ...], tuple[float, ...], float, str | None]] = {
    "Hips": ((0, 0, 99), (0, 0, 109), 0, None),
    "Spine": ((0, 0, 109), (0, 0.5, 120), 0, "Hips"),
    "Spine1": ((0, 0.5, 120), (0, 0.5, 133), 0, "Spine"),
    "Spine2": ((0, 0.5, 133), (0, 0, 147), 0, "Spine1"),
    "Neck": ((0, 0, 147), (0, -1, 157), 0, "Spine2"),
    "Head": ((0, -1, 157), (0, -1, 175), 0, "Neck"),
    "HeadTop_End": ((0, -1, 175), (0, -1, 185), 0, "Head"),
    "LeftShoulder": ((6, 0, 142), (18, 0, 140), -88, "Spine2"),
    "LeftArm": ((18, 0, 140), (45, 0, 140), -90, "LeftShoulder"),
    "LeftForeArm": ((45, 0, 140), (72, 0, 140), -92, "LeftArm"),
    "LeftHand": ((72, 0, 140), (80, 0, 140), -90, "LeftForeArm"),
    "LeftHandIndex1": ((80, 0, 140), (84, -2, 140), -90, "LeftHand"),
    "RightShoulder": ((-6, 0, 142), (-18, 0, 140), 88, "Spine2"),
    "RightArm": ((-18, 0, 140), (-45, 0, 140), 90, "RightShoulder"),
    "RightForeArm": ((-45, 0, 140), (-72, 0, 140), 92, "RightArm"),
    "RightHand": ((-72, 0, 140), (-80, 0, 140), 90, "RightForeArm"),
    "RightHandIndex1": ((-80, 0, 140), (-84, -2, 140), 90, "RightHand"),
    "LeftUpLeg": ((9, 0, 93), (9, -1, 51), 180, "Hips"),
    "LeftLeg": ((9, -1, 51), (9, 2, 8), 180, "LeftUpLeg"),
    "LeftFoot": ((9, 2, 8), (9, -9, 1.5), 180, "LeftLeg"),
    "LeftToeBase": ((9, -9, 1.5), (9, -17, 1.5), 180, "LeftFoot"),
    "RightUpLeg": ((-9, 0, 93), (-9, -1, 51), 180, "Hips"),
    "RightLeg": ((-9, -1, 51), (-9, 2, 8), 180, "RightUpLeg"),
    "RightFoot": ((-9, 2, 8), (-9, -9, 1.5), 180, "RightLeg"),
    "RightToeBase": ((-9, -9, 1.5), (-9, -17, 1.5), 180, "RightFoot"),
}

#: A game (UE-mannequin-like) skeleton, metres: a ``root`` at the feet, A-pose arms with
#: a slight elbow bend, twist bones parented to the upper arm and forearm beside the chain,
#: the engine's IK helper bones (``ik_hand_l`` …) under the root.
GAME: dict[str, tuple[tuple[float, ...], tuple[float, ...], float, str | None]] = {
    "root": ((0, 0, 0), (0, 0.2, 0), 0, None),
    "pelvis": ((0, 0, 0.96), (0, 0, 1.04), 90, "root"),
    "spine_01": ((0, 0, 1.04), (0, 0.01, 1.16), 90, "pelvis"),
    "spine_02": ((0, 0.01, 1.16), (0, 0.01, 1.3), 90, "spine_01"),
    "spine_03": ((0, 0.01, 1.3), (0, 0, 1.44), 90, "spine_02"),
    "neck_01": ((0, 0, 1.44), (0, -0.01, 1.54), 90, "spine_03"),
    "head": ((0, -0.01, 1.54), (0, -0.01, 1.72), 90, "neck_01"),
    "clavicle_l": ((0.03, 0, 1.4), (0.17, 0.02, 1.42), 45, "spine_03"),
    "upperarm_l": ((0.17, 0.02, 1.42), (0.36, 0.03, 1.22), 40, "clavicle_l"),
    "upperarm_twist_01_l": ((0.265, 0.025, 1.32), (0.3, 0.027, 1.28), 40, "upperarm_l"),
    "lowerarm_l": ((0.36, 0.03, 1.22), (0.53, -0.02, 1.03), 40, "upperarm_l"),
    "lowerarm_twist_01_l": ((0.445, 0.005, 1.125), (0.48, -0.005, 1.09), 40, "lowerarm_l"),
    "hand_l": ((0.53, -0.02, 1.03), (0.58, -0.03, 0.97), 40, "lowerarm_l"),
    "clavicle_r": ((-0.03, 0, 1.4), (-0.17, 0.02, 1.42), -45, "spine_03"),
    "upperarm_r": ((-0.17, 0.02, 1.42), (-0.36, 0.03, 1.22), -40, "clavicle_r"),
    "upperarm_twist_01_r": ((-0.265, 0.025, 1.32), (-0.3, 0.027, 1.28), -40, "upperarm_r"),
    "lowerarm_r": ((-0.36, 0.03, 1.22), (-0.53, -0.02, 1.03), -40, "upperarm_r"),
    "lowerarm_twist_01_r": ((-0.445, 0.005, 1.125), (-0.48, -0.005, 1.09), -40,
                            "lowerarm_r"),
    "hand_r": ((-0.53, -0.02, 1.03), (-0.58, -0.03, 0.97), -40, "lowerarm_r"),
    "thigh_l": ((0.09, 0, 0.94), (0.1, -0.01, 0.52), -90, "pelvis"),
    "calf_l": ((0.1, -0.01, 0.52), (0.1, 0.02, 0.1), -90, "thigh_l"),
    "foot_l": ((0.1, 0.02, 0.1), (0.1, -0.1, 0.03), -90, "calf_l"),
    "ball_l": ((0.1, -0.1, 0.03), (0.1, -0.17, 0.03), -90, "foot_l"),
    "thigh_r": ((-0.09, 0, 0.94), (-0.1, -0.01, 0.52), 90, "pelvis"),
    "calf_r": ((-0.1, -0.01, 0.52), (-0.1, 0.02, 0.1), 90, "thigh_r"),
    "foot_r": ((-0.1, 0.02, 0.1), (-0.1, -0.1, 0.03), 90, "calf_r"),
    "ball_r": ((-0.1, -0.1, 0.03), (-0.1, -0.17, 0.03), 90, "foot_r"),
    # the engine's IK helper bones under the root (copies of the hands and feet)
    "ik_foot_root": ((0, 0, 0), (0, 0, 0.1), 0, "root"),
    "ik_foot_l": ((0.1, 0.02, 0.1), (0.1, -0.1, 0.03), -90, "ik_foot_root"),
    "ik_foot_r": ((-0.1, 0.02, 0.1), (-0.1, -0.1, 0.03), 90, "ik_foot_root"),
    "ik_hand_root": ((0, 0, 0), (0, 0, 0.1), 0, "root"),
    "ik_hand_gun": ((-0.53, -0.02, 1.03), (-0.58, -0.03, 0.97), -40, "ik_hand_root"),
    "ik_hand_l": ((0.53, -0.02, 1.03), (0.58, -0.03, 0.97), 40, "ik_hand_gun"),
    "ik_hand_r": ((-0.53, -0.02, 1.03), (-0.58, -0.03, 0.97), -40, "ik_hand_gun"),
}


def _build(name: str, layout: dict[str, Any], prefix: str = "", scale: float = 1.0) -> Any:
    """An armature built from ``layout`` (rolls in degrees), its bones renamed
    ``prefix + name``, the object scaled ``scale``."""
    obj = armature_from(name, {b: (h, t, p) for b, (h, t, _, p) in layout.items()},
                        lambda n: prefix + n, {b: v[2] for b, v in layout.items()})
    obj.scale = (scale,) * 3
    evaluate()
    return obj


def cmu_rig() -> Any:
    """The CMU clip through Blender's own BVH importer (its action stays on)."""
    assert bpy.ops.import_anim.bvh(filepath=str(CLIP)) == {"FINISHED"}
    obj = bpy.context.active_object
    assert obj.animation_data is not None and obj.animation_data.action is not None
    bpy.context.scene.frame_set(1)
    evaluate()
    return obj


def mixamo_rig() -> Any:
    return _build("MixamoBody", MIXAMO, prefix="mixamorig:", scale=0.01)


def game_rig() -> Any:
    return _build("GameBody", GAME)


#: Per rig: builder, root, bending bones, {pin: (upper, lower, tip)}, head bone.
RIGS: dict[str, tuple[Any, str, list[str], dict[str, tuple[str, str, str]], str]] = {
    "cmu": (cmu_rig, "Hips", ["lowerback", "Chest", "Chest2", "lowerneck", "Neck", "Head"], {
        "hand.L": ("LeftShoulder", "LeftElbow", "LeftWrist"),
        "hand.R": ("RightShoulder", "RightElbow", "RightWrist"),
        "foot.L": ("LeftHip", "LeftKnee", "LeftAnkle"),
        "foot.R": ("RightHip", "RightKnee", "RightAnkle")}, "Head"),
    "mixamo": (mixamo_rig, "mixamorig:Hips",
               [f"mixamorig:{n}" for n in ("Spine", "Spine1", "Spine2", "Neck", "Head")], {
        "hand.L": ("mixamorig:LeftArm", "mixamorig:LeftForeArm", "mixamorig:LeftHand"),
        "hand.R": ("mixamorig:RightArm", "mixamorig:RightForeArm", "mixamorig:RightHand"),
        "foot.L": ("mixamorig:LeftUpLeg", "mixamorig:LeftLeg", "mixamorig:LeftFoot"),
        "foot.R": ("mixamorig:RightUpLeg", "mixamorig:RightLeg", "mixamorig:RightFoot")},
               "mixamorig:Head"),
    "game": (game_rig, "pelvis", ["spine_01", "spine_02", "spine_03", "neck_01", "head"], {
        "hand.L": ("upperarm_l", "lowerarm_l", "hand_l"),
        "hand.R": ("upperarm_r", "lowerarm_r", "hand_r"),
        "foot.L": ("thigh_l", "calf_l", "foot_l"),
        "foot.R": ("thigh_r", "calf_r", "foot_r")}, "head"),
}


def _add_body(obj: Any) -> Any:
    assert bpy.ops.limber.add_body(armature=obj.name) == {"FINISHED"}
    return obj.limber.bodies["body"]


def _solve(limber: Any, obj: Any) -> Any:
    st = limber.sub("addon.run.solve").solve_object(obj)
    evaluate()
    return st[0]


def _move(empty: Any, p: np.ndarray) -> None:
    m = empty.matrix_world.copy()
    m.translation = Vector(np.asarray(p, dtype=np.float64).tolist())
    empty.matrix_world = m


def measured(obj: Any, pin: Any) -> tuple[float, float]:
    """A pin's errors (m, rad) on the evaluated pose, measured here from the evaluated
    bone and the target: position and rotation for POSE, position for POSITION, the angle
    between the pin's bone axis and the direction to the target for AIM."""
    got = world_pose(obj, pin.tip_bone)
    want = np.array(pin.target.matrix_world, dtype=np.float64)
    if pin.goal_type == "AIM":
        col = {"X": 0, "Y": 1, "Z": 2}[pin.axis[-1]]
        axis = got[:3, col] * (-1.0 if pin.axis.startswith("NEG") else 1.0)
        to = want[:3, 3] - got[:3, 3]
        c = float(axis @ to / (np.linalg.norm(axis) * np.linalg.norm(to)))
        return 0.0, math.acos(max(-1.0, min(1.0, c)))
    pos = float(np.linalg.norm(got[:3, 3] - want[:3, 3]))
    return pos, (rotation_angle(got, want) if pin.goal_type == "POSE" else 0.0)


def assert_statuses_true(obj: Any, body: Any, where: Any) -> None:
    """Every pin's status is true of the evaluated pose: reached exactly when the
    measured errors are within the tolerance, the reported errors within 1 % of the
    measured ones."""
    for p in body.pins:
        pos, ori = measured(obj, p)
        ok = pos <= POS_TOL and ori <= ROT_TOL
        st = p.status
        assert st.reached == ok, (where, p.name, pos, ori, st.message)
        assert abs(st.position_error - pos) <= 0.01 * pos + 1e-7, (where, p.name, pos,
                                                                    st.position_error)
        assert abs(st.orientation_error - ori) <= 0.01 * ori + 2e-6, (where, p.name, ori,
                                                                      st.orientation_error)


def _arm(obj: Any, pin: Any) -> tuple[np.ndarray, float]:
    """The shoulder's world position and the arm's length (world units)."""
    bones = obj.data.bones
    s = float(np.mean(obj.matrix_world.to_scale()))
    shoulder = world_pose(obj, pin.upper_bone)[:3, 3]
    length = sum((bones[b].head_local - bones[c].head_local).length
                 for b, c in ((pin.lower_bone, pin.upper_bone), (pin.tip_bone, pin.lower_bone)))
    return shoulder, float(length) * s


@pytest.mark.parametrize("kind", ["cmu", "mixamo", "game"])
def test_add_body_finds_root_spine_and_limbs(limber: Any, kind: str) -> None:
    build, root, bend, limbs, head = RIGS[kind]
    obj = build()
    before = {pb.name: world_pose(obj, pb.name) for pb in obj.pose.bones}
    body = _add_body(obj)
    assert body.root_bone == root
    assert [b.name for b in body.bend_bones] == bend
    pins = body.pins
    assert {p.name for p in pins} == {*limbs, "head", "hips"}
    for name, bones in limbs.items():
        assert (pins[name].upper_bone, pins[name].lower_bone, pins[name].tip_bone) == bones
    assert pins["head"].tip_bone == head and pins["hips"].tip_bone == root
    st = _solve(limber, obj)
    assert st.solved and st.reached, st.message
    for name, m in before.items():  # targets at the current pose: nothing moves
        got = world_pose(obj, name)
        pos, rot = float(np.linalg.norm(got[:3, 3] - m[:3, 3])), rotation_angle(got, m)
        assert pos <= POS_TOL and rot <= ROT_TOL, (name, pos, rot)
    assert_statuses_true(obj, body, "at rest")


@pytest.mark.parametrize("goal", ["POSE", "POSITION"])
@pytest.mark.parametrize("kind", list(RIGS))
def test_pinned_feet_stay_put_while_a_hand_is_dragged(limber: Any, kind: str, goal: str
                                                       ) -> None:
    obj = RIGS[kind][0]()
    body = _add_body(obj)
    pins = body.pins
    hand = pins["hand.L"]
    hand.goal_type = goal  # POSE: the target is moved, its rotation kept
    shoulder, length = _arm(obj, hand)
    start = world_pose(obj, hand.tip_bone)[:3, 3]
    ahead = np.array(obj.matrix_world.to_3x3().normalized() @ Vector((0.0, -1.0, -0.4)))
    ahead /= np.linalg.norm(ahead)
    inward = (start - shoulder) / np.linalg.norm(start - shoulder)
    mid = inward + ahead
    path = [shoulder + inward * length * 0.85, shoulder + mid / np.linalg.norm(mid) * length * 0.75,
            shoulder + ahead * length * 1.15,
            shoulder + ahead * length * 1.35]
    for i, p in enumerate(path):
        _move(hand.target, p)
        st = _solve(limber, obj)
        assert st.solved, st.message
        for foot in ("foot.L", "foot.R"):
            pos, rot = measured(obj, pins[foot])
            assert pos <= POS_TOL and rot <= ROT_TOL, (kind, i, foot, pos, rot)
        err, ori = measured(obj, hand)
        if i < 2:
            assert err <= POS_TOL and ori <= ROT_TOL, (kind, i, err, ori, hand.status.message)
        else:  # beyond the arm's reach from where the shoulder was: the body leans in
            assert err < float(np.linalg.norm(p - shoulder)) - length - 0.02 * length, (
                kind, i, err)
        assert_statuses_true(obj, body, (kind, i))


@pytest.mark.parametrize("kind", list(RIGS))
def test_bake_plays_back_on_target_and_keeps_keys_outside_its_range(
    limber: Any, kind: str
) -> None:
    obj = RIGS[kind][0]()
    body = _add_body(obj)
    pins = body.pins
    hand = pins["hand.R"]
    hand.goal_type = "POSITION"
    first, last = (20, 27) if kind == "cmu" else (1, 8)
    bpy.context.scene.frame_set(first)
    evaluate()
    shoulder, length = _arm(obj, hand)
    start = world_pose(obj, hand.tip_bone)[:3, 3]
    far = start + length * np.array((0.1, -0.5, 0.3))
    for f, p in ((first, start), (last, far)):
        _move(hand.target, p)
        hand.target.keyframe_insert("location", frame=f)
    if obj.animation_data is None or obj.animation_data.action is None:
        # keys outside the range on a bone the body drives and on one it does not
        for bone, frame in ((body.bend_bones[0].name, 30), (pins["foot.L"].upper_bone, 40)):
            pb = obj.pose.bones[bone]
            pb.rotation_quaternion = (0.95, 0.1, 0.0, 0.2)
            pb.keyframe_insert("rotation_quaternion", frame=frame)
            pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    compat = importlib.import_module(limber.module + ".addon.compat")
    fcurves = compat.assigned_fcurves(obj.animation_data)
    outside = {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points
                                                if not first <= k.co[0] <= last]
               for fc in fcurves}
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=first, frame_end=last,
                               disable_limbs=True) == {"FINISHED"}
    for (path, index), cos in outside.items():
        fc = fcurves.find(path, index=index)
        assert fc is not None, path
        assert [tuple(k.co) for k in fc.keyframe_points
                if not first <= k.co[0] <= last] == cos, path
    scene = bpy.context.scene
    for f in range(first, last + 1):
        scene.frame_set(f)
        evaluate()
        for foot in ("foot.L", "foot.R"):
            pos, rot = measured(obj, pins[foot])
            assert pos <= POS_TOL and rot <= ROT_TOL, (kind, f, foot, pos, rot)
        err, _ = measured(obj, hand)
        assert err <= POS_TOL, (kind, f, err)


def test_add_body_names_what_it_could_not_find(limber: Any) -> None:
    """A game skeleton without legs and head: the body is found from the arms with the
    root named ``pelvis``, and the report names the missing parts; with no limbs at all
    add_body refuses and says so."""
    layout = {k: v for k, v in GAME.items()
              if not k.startswith(("thigh", "calf", "foot", "ball", "head", "neck"))}
    obj = _build("NoLegs", layout)
    found = limber.sub("addon.detect_body").detect_body(obj)
    assert found.root == "pelvis" and [d.name for d in found.limbs] == ["arm.L", "arm.R"]
    assert set(found.missing) == {"leg.L", "leg.R", "head"}
    assert "not found: leg.L" in found.report() and "head (no bone named" in found.report()
    body = _add_body(obj)
    assert {p.name for p in body.pins} == {"hand.L", "hand.R", "hips"}
    st = _solve(limber, obj)
    assert st.solved and st.reached, st.message
    spine = _build("SpineOnly", {k: v for k, v in GAME.items()
                                 if k in ("root", "pelvis", "spine_01", "spine_02")})
    with pytest.raises(RuntimeError, match="no body found.*no arms or legs recognised"):
        bpy.ops.limber.add_body(armature=spine.name)
    assert not len(spine.limber.bodies)


def test_live_playback_pins_the_feet_of_the_mocap_clip(limber: Any) -> None:
    """Scrubbing the CMU clip with live playback: each frame the action poses the body
    and the solve pins both feet where they were when the body was added; the hand pin
    (its target left where it was) is reached or honestly reported."""
    obj = cmu_rig()
    body = _add_body(obj)
    scene = bpy.context.scene
    scene.limber.live_playback = True
    try:
        for f in (5, 40, 120):
            scene.frame_set(f)
            evaluate()
            assert body.status.frame == f, body.status.message
            for foot in ("foot.L", "foot.R"):
                pos, rot = measured(obj, body.pins[foot])
                assert pos <= POS_TOL and rot <= ROT_TOL, (f, foot, pos, rot)
            assert_statuses_true(obj, body, f)
    finally:
        scene.limber.live_playback = False


@pytest.mark.parametrize(("kind", "reach"), [
    ("cmu", 0.8), ("cmu", 1.3), ("mixamo", 0.8), ("mixamo", 1.3),
    ("game", 0.8), ("game", 1.3)])
def test_solving_again_moves_nothing(limber: Any, kind: str, reach: float) -> None:
    """Live solving runs again on any depsgraph change: with the targets where they are,
    a solve from the pose the last one left moves no bone (within and beyond reach)."""
    obj = RIGS[kind][0]()
    body = _add_body(obj)
    hand = body.pins["hand.L"]
    shoulder, length = _arm(obj, hand)
    start = world_pose(obj, hand.tip_bone)[:3, 3]
    inward = (start - shoulder) / np.linalg.norm(start - shoulder)
    _move(hand.target, shoulder + inward * length * reach)
    _solve(limber, obj)
    before = {pb.name: world_pose(obj, pb.name) for pb in obj.pose.bones}
    for _ in range(2):
        _solve(limber, obj)
    for name, m in before.items():
        got = world_pose(obj, name)
        pos, rot = float(np.linalg.norm(got[:3, 3] - m[:3, 3])), rotation_angle(got, m)
        assert pos <= POS_TOL and rot <= ROT_TOL, (kind, name, pos, rot)
