"""Armature ↔ core mapping on real rigs: detection, reaching targets, swivel, limits."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Quaternion

from tests.blender.limber_rigs import (
    MIXAMO_LIMBS,
    RIGIFY_LIMBS,
    add_empty,
    add_limb,
    evaluate,
    metarig,
    mixamo_rig,
    random_quaternion,
    rest_pose,
    rotation_angle,
    world_pose,
)

TOL = 1e-5


def _detected(obj: Any) -> dict[str, tuple[str, str, str]]:
    return {lb.name: (lb.upper_bone, lb.lower_bone, lb.end_bone) for lb in obj.limber.limbs}


def test_detect_rigify_metarig(limber: Any) -> None:
    obj = metarig()
    assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"FINISHED"}
    assert _detected(obj) == RIGIFY_LIMBS


def test_detect_mixamo(limber: Any) -> None:
    obj = mixamo_rig()
    assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"FINISHED"}
    assert _detected(obj) == MIXAMO_LIMBS


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("upper_arm.L", ("", "", "L", "arm", "upper")),
        ("ORG-forearm.R", ("", "ORG-", "R", "arm", "lower")),
        ("DEF-thigh.L", ("", "DEF-", "L", "leg", "upper")),
        ("mixamorig:LeftForeArm", ("mixamorig:", "", "L", "arm", "lower")),
        ("mixamorig:RightUpLeg", ("mixamorig:", "", "R", "leg", "upper")),
        ("calf_r", ("", "", "R", "leg", "lower")),
        ("hand_l", ("", "", "L", "arm", "end")),
        ("LeftFoot", ("", "", "L", "leg", "end")),
        ("upper_arm_fk.L", None),
        ("DEF-forearm.L.001", None),
        ("shoulder.L", None),
        ("mixamorig:LeftHandIndex1", None),
    ],
)
def test_bone_name_table(limber: Any, name: str, expected: tuple[str, ...] | None) -> None:
    parsed = limber.sub("addon.detect").parse_bone_name(name)
    if expected is None:
        assert parsed is None
    else:
        assert parsed is not None
        assert (parsed.namespace, parsed.prefix, parsed.side, parsed.kind, parsed.role) == expected


def _errors(obj: Any, end: str, target: Any) -> tuple[float, float]:
    m = world_pose(obj, end)
    t = np.array(target.matrix_world, dtype=np.float64)
    scale = float(np.linalg.norm(np.array(obj.matrix_world)[:3, 0]))
    pos = float(np.linalg.norm(m[:3, 3] - t[:3, 3])) / scale  # in armature units (m)
    return pos, rotation_angle(m, t)


@pytest.mark.parametrize("goal_type", ["POSE", "POSITION"])
def test_random_reachable_targets(limber: Any, goal_type: str) -> None:
    rng = np.random.default_rng(11 if goal_type == "POSE" else 12)
    obj = metarig(location=(0.3, -1.2, 0.4), rotation=(0.3, -0.2, 1.1), scale=1.3)
    # Animate the parents too: the shoulder frame must follow them.
    obj.pose.bones["shoulder.L"].rotation_quaternion = random_quaternion(rng, 0.5)
    obj.pose.bones["spine"].rotation_quaternion = random_quaternion(rng, 0.3)
    targets = {}
    for name, bones in RIGIFY_LIMBS.items():
        targets[name] = add_empty(f"T.{name}")
        add_limb(obj, name, bones, target=targets[name], goal_type=goal_type)
    solve = limber.sub("addon.solve")
    for _ in range(8):
        # A random FK pose gives reachable goals; then start from the rest pose.
        for bones in RIGIFY_LIMBS.values():
            for b in bones:
                obj.pose.bones[b].rotation_quaternion = random_quaternion(rng, 1.5)
        evaluate()
        for name, bones in RIGIFY_LIMBS.items():
            targets[name].matrix_world = obj.matrix_world @ obj.evaluated_get(
                bpy.context.evaluated_depsgraph_get()
            ).pose.bones[bones[2]].matrix
        if goal_type == "POSITION":  # the end bone keeps its local rotation
            for bones in RIGIFY_LIMBS.values():
                for b in bones[:2]:
                    obj.pose.bones[b].rotation_quaternion = (1, 0, 0, 0)
        else:
            for bones in RIGIFY_LIMBS.values():
                for b in bones:
                    obj.pose.bones[b].rotation_quaternion = (1, 0, 0, 0)
        for limb in obj.limber.limbs:
            limb.swivel = float(rng.uniform(-math.pi, math.pi))
        evaluate()
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        evaluate()
        for name, bones in RIGIFY_LIMBS.items():
            st = solve.STATUS[(obj.name, name)]
            assert st.solved and st.reachable, st.message
            pos, rot = _errors(obj, bones[2], targets[name])
            assert pos <= TOL
            if goal_type == "POSE":
                assert rot <= TOL


def test_unreachable_target_stretches_toward_it(limber: Any) -> None:
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.L"]
    shoulder = world_pose(obj, bones[0])[:3, 3]
    far = shoulder + np.array((2.0, 0.5, 0.3))
    target = add_empty("far", np.array(
        [[1, 0, 0, far[0]], [0, 1, 0, far[1]], [0, 0, 1, far[2]], [0, 0, 0, 1]]
    ))
    add_limb(obj, "arm.L", bones, target=target, goal_type="POSITION")
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    evaluate()
    st = limber.sub("addon.solve").STATUS[(obj.name, "arm.L")]
    assert st.solved and not st.reachable
    assert "not reached" in st.message
    hand = world_pose(obj, bones[2])[:3, 3]
    elbow = world_pose(obj, bones[1])[:3, 3]
    reach = np.linalg.norm(elbow - shoulder) + np.linalg.norm(hand - elbow)
    lengths = obj.data.bones[bones[0]].length + obj.data.bones[bones[1]].length
    assert reach == pytest.approx(lengths, abs=1e-5)  # fully stretched
    aim = (hand - shoulder) / np.linalg.norm(hand - shoulder)
    want = (far - shoulder) / np.linalg.norm(far - shoulder)
    assert float(aim @ want) > 1 - 1e-9  # aimed at the goal
    assert st.position_error == pytest.approx(np.linalg.norm(far - hand), abs=1e-5)


def test_swivel_sweep_moves_elbow_on_a_circle(limber: Any) -> None:
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.L"]
    rng = np.random.default_rng(5)
    obj.pose.bones[bones[1]].rotation_quaternion = random_quaternion(rng, 1.0)
    evaluate()
    target = add_empty("T", world_pose(obj, bones[2]))
    limb = add_limb(obj, "arm.L", bones, target=target, goal_type="POSE")
    elbows = []
    for phi in np.linspace(-math.pi, math.pi, 13)[:-1]:
        limb.swivel = float(phi)
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        evaluate()
        pos, rot = _errors(obj, bones[2], target)
        assert pos <= TOL and rot <= TOL  # the hand stays put
        elbows.append(world_pose(obj, bones[1])[:3, 3])
    e = np.array(elbows)
    shoulder = world_pose(obj, bones[0])[:3, 3]
    wrist = np.array(target.matrix_world.translation)
    n = (wrist - shoulder) / np.linalg.norm(wrist - shoulder)
    along = (e - shoulder) @ n
    radial = np.linalg.norm((e - shoulder) - along[:, None] * n, axis=1)
    assert np.ptp(along) < 1e-5 and np.ptp(radial) < 1e-5  # one circle about the axis
    assert radial[0] > 0.01
    angles = np.unwrap(np.arctan2(*_circle_coords(e - shoulder, n)))
    assert np.all(np.diff(angles) > 0.4)  # moves monotonically around it


def _circle_coords(v: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = v[0] - (v[0] @ n) * n
    u /= np.linalg.norm(u)
    w = np.cross(n, u)
    return v @ w, v @ u


def test_ik_limits_including_single_axis_on_ball_joint(limber: Any) -> None:
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.L"]
    upper = obj.pose.bones[bones[0]]
    upper.rotation_mode = "XYZ"
    upper.use_ik_limit_x = True  # a single-axis limit on the shoulder ball joint
    upper.ik_min_x, upper.ik_max_x = -0.2, 0.3
    hand = obj.pose.bones[bones[2]]
    hand.rotation_mode = "ZXY"
    hand.use_ik_limit_y = True
    hand.ik_min_y, hand.ik_max_y = -0.3, 0.3
    rng = np.random.default_rng(9)
    target = add_empty("T")
    limb = add_limb(obj, "arm.L", bones, target=target, goal_type="POSE")
    solve = limber.sub("addon.solve")
    hinge = solve.rig_for(obj, limb).hinge_axis
    moved = reached = 0
    for _ in range(25):
        # FK goal inside the limits: shoulder x and wrist y in range, elbow a pure hinge.
        upper.rotation_euler = (rng.uniform(-0.2, 0.3), rng.uniform(-1, 1), rng.uniform(-1, 1))
        obj.pose.bones[bones[1]].rotation_quaternion = Quaternion(hinge, rng.uniform(0.2, 1.5))
        hand.rotation_euler = (rng.uniform(-1, 1), rng.uniform(-0.25, 0.25), rng.uniform(-1, 1))
        evaluate()
        target.matrix_world = Matrix(world_pose(obj, bones[2]).tolist())
        rest_pose(obj)
        want = float(rng.uniform(-math.pi, math.pi))
        limb.swivel = want
        evaluate()
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        evaluate()
        st = solve.STATUS[(obj.name, "arm.L")]
        assert st.solved and st.feasible_swivel and st.within_limits, st.message
        assert -0.2 - 1e-6 <= upper.rotation_euler.x <= 0.3 + 1e-6
        assert -0.3 - 1e-6 <= hand.rotation_euler.y <= 0.3 + 1e-6
        moved += abs(math.remainder(st.swivel - want, 2 * math.pi)) > 1e-3
        pos, rot = _errors(obj, bones[2], target)
        assert st.reachable, st.message
        assert pos <= TOL and rot <= TOL
        reached += 1
    assert moved >= 5  # the limits did change the requested swivel


def test_non_uniform_scale_is_a_clear_error(limber: Any) -> None:
    obj = metarig(scale=(1.0, 2.0, 1.0))
    add_limb(obj, "arm.L", RIGIFY_LIMBS["arm.L"], target=add_empty("T"))
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    st = limber.sub("addon.solve").STATUS[(obj.name, "arm.L")]
    assert not st.solved
    assert "non-uniform scale" in st.message


def _angle(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) between two vectors, well conditioned near 0."""
    return float(math.atan2(np.linalg.norm(np.cross(a, b)), float(a @ b)))


AXIS_VECTORS = {"X": (1, 0, 0), "NEG_Y": (0, -1, 0), "Z": (0, 0, 1)}


@pytest.mark.parametrize("axis", list(AXIS_VECTORS))
def test_partial_goal_aligns_the_axis(limber: Any, axis: str) -> None:
    obj = metarig(rotation=(0.0, 0.0, 0.5))
    bones = RIGIFY_LIMBS["arm.L"]
    rng = np.random.default_rng(21)
    target = add_empty("T")
    add_limb(obj, "arm.L", bones, target=target, goal_type="PARTIAL", axis=axis)
    a = np.array(AXIS_VECTORS[axis], dtype=float)
    for _ in range(5):
        for b in bones:
            obj.pose.bones[b].rotation_quaternion = random_quaternion(rng, 1.0)
        evaluate()
        # The goal frame: the FK hand frame turned about the aligned axis (free rotation).
        fk = world_pose(obj, bones[2])
        spin = np.array(Matrix.Rotation(float(rng.uniform(-3, 3)), 4, a.tolist()))
        target.matrix_world = Matrix((fk @ spin).tolist())
        rest_pose(obj)
        evaluate()
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        evaluate()
        st = limber.sub("addon.solve").STATUS[(obj.name, "arm.L")]
        assert st.solved and st.reachable, st.message
        m = world_pose(obj, bones[2])
        t = np.array(target.matrix_world)
        assert np.linalg.norm(m[:3, 3] - t[:3, 3]) <= TOL
        got = m[:3, :3] @ a
        want = t[:3, :3] @ a
        assert _angle(got, want) <= TOL


def test_aim_goal_points_the_axis_at_the_target(limber: Any) -> None:
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.R"]
    target = add_empty("T")
    add_limb(obj, "arm.R", bones, target=target, goal_type="AIM", axis="Y")
    shoulder = world_pose(obj, bones[0])[:3, 3]
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(6):
        target.location = shoulder + rng.normal(size=3) * 0.6
        rest_pose(obj)
        evaluate()
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        evaluate()
        st = limber.sub("addon.solve").STATUS[(obj.name, "arm.R")]
        assert st.solved, st.message
        m = world_pose(obj, bones[2])
        ray = m[:3, 1] / np.linalg.norm(m[:3, 1])
        to = np.array(target.location) - m[:3, 3]
        miss = _angle(ray, to)
        assert miss == pytest.approx(st.orientation_error, abs=TOL)  # truthful
        hits += st.reachable
        if st.reachable:
            assert miss <= TOL
    assert hits >= 3


def test_euler_and_axis_angle_bones_are_written_in_their_mode(limber: Any) -> None:
    obj = metarig()
    bones = RIGIFY_LIMBS["leg.R"]
    modes = ("YZX", "AXIS_ANGLE", "ZYX")
    for b, mode in zip(bones, modes, strict=True):
        obj.pose.bones[b].rotation_mode = mode
    rng = np.random.default_rng(3)
    for b in bones:
        obj.pose.bones[b].rotation_mode = "QUATERNION"
        obj.pose.bones[b].rotation_quaternion = random_quaternion(rng, 0.9)
    evaluate()
    target = add_empty("T", world_pose(obj, bones[2]))
    for b, mode in zip(bones, modes, strict=True):
        obj.pose.bones[b].rotation_mode = mode
    rest_pose(obj)
    add_limb(obj, "leg.R", bones, target=target, goal_type="POSE")
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    evaluate()
    pos, rot = _errors(obj, bones[2], target)
    assert pos <= TOL and rot <= TOL
    assert any(abs(a) > 1e-3 for a in obj.pose.bones[bones[0]].rotation_euler)
