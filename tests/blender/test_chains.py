"""General chains (``Object.limber.chains``) and limbs with numeric solvers, in real bpy.

A branched armature (a tree below the root, several tips) is posed by random FK; the tip
frames become targets; from another pose ``limber.solve`` must bring the tips back to
1e-5 m / 1e-5 rad after the depsgraph evaluates, within the bones' IK limits, with a
truthful status.
"""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Euler, Matrix, Quaternion

from tests.blender.limber_rigs import (
    RIGIFY_LIMBS,
    add_empty,
    add_limb,
    armature_from,
    evaluate,
    metarig,
    random_quaternion,
    rotation_angle,
    world_pose,
)

TOL = 1e-5

#: name → (head, tail, parent, rotation mode): a trunk with two branches (a tree).
TREE: dict[str, tuple[tuple[float, ...], tuple[float, ...], str | None, str]] = {
    "hips": ((0, 0, 0.8), (0, 0, 1.0), None, "QUATERNION"),
    "spine": ((0, 0, 1.0), (0, 0.02, 1.25), "hips", "XYZ"),
    "chest": ((0, 0.02, 1.25), (0, 0, 1.5), "spine", "QUATERNION"),
    "neck": ((0, 0, 1.5), (0, -0.02, 1.62), "chest", "ZXY"),
    "head": ((0, -0.02, 1.62), (0, -0.02, 1.8), "neck", "XYZ"),
    "tail1": ((0, 0.05, 0.8), (0, 0.3, 0.7), "hips", "XYZ"),
    "tail2": ((0, 0.3, 0.7), (0.05, 0.55, 0.65), "tail1", "YZX"),
    "tail3": ((0.05, 0.55, 0.65), (0.05, 0.8, 0.6), "tail2", "QUATERNION"),
}


def tree_rig(name: str = "Tree") -> Any:
    obj = armature_from(name, {k: v[:3] for k, v in TREE.items()})
    for bname, (*_, mode) in TREE.items():
        obj.pose.bones[bname].rotation_mode = mode
    evaluate()
    return obj


def add_chain(obj: Any, name: str, root: str, tips: dict[str, Any], **settings: Any) -> Any:
    chain = obj.limber.chains.add()
    chain.name = name
    chain.root_bone = root
    for tip, target in tips.items():
        e = chain.effectors.add()
        e.tip_bone = tip
        e.target = target
    for k, v in settings.items():
        setattr(chain, k, v)
    return chain


def set_random_pose(obj: Any, bones: list[str], rng: np.random.Generator, angle: float) -> None:
    for b in bones:
        pb = obj.pose.bones[b]
        q = random_quaternion(rng, angle)
        if pb.rotation_mode == "QUATERNION":
            pb.rotation_quaternion = q
        else:
            pb.rotation_euler = q.to_euler(pb.rotation_mode)


def place_targets(obj: Any, targets: dict[str, Any]) -> None:
    evaluate()
    for tip, empty in targets.items():
        empty.matrix_world = Matrix(world_pose(obj, tip).tolist())
    evaluate()


def reset(obj: Any, bones: list[str]) -> None:
    for b in bones:
        obj.pose.bones[b].matrix_basis = Matrix.Identity(4)


def errors(obj: Any, bone: str, target: Any) -> tuple[float, float]:
    m = world_pose(obj, bone)
    t = np.array(target.matrix_world)
    scale = float(np.linalg.norm(np.array(obj.matrix_world)[:3, 0]))
    return float(np.linalg.norm(m[:3, 3] - t[:3, 3])) / scale, rotation_angle(m, t)


MOVING = ["spine", "chest", "neck", "head", "tail1", "tail2", "tail3"]


@pytest.mark.parametrize("goal_type", ["POSITION", "POSE"])
def test_tree_chain_reaches_several_tips(limber: Any, goal_type: str) -> None:
    rng = np.random.default_rng(5 if goal_type == "POSE" else 6)
    obj = tree_rig()
    obj.location = (0.4, -0.3, 0.2)
    obj.rotation_euler = (0.2, 0.1, -0.7)
    obj.scale = (1.5, 1.5, 1.5)
    obj.pose.bones["hips"].rotation_quaternion = random_quaternion(rng, 0.4)  # root's parent
    tips = {"head": add_empty("T.head"), "tail3": add_empty("T.tail3")}
    # Two chains: spine → head, and tail1 → tail3 (both below the animated hips).
    for name, root, tip in (("body", "spine", "head"), ("tail", "tail1", "tail3")):
        chain = add_chain(obj, name, root, {tip: tips[tip]}, solver="DLS")
        chain.effectors[0].goal_type = goal_type
    solve = limber.sub("addon.run.solve")
    for _ in range(4):
        set_random_pose(obj, MOVING, rng, 0.8)
        place_targets(obj, tips)
        set_random_pose(obj, MOVING, rng, 0.3)  # start elsewhere (near: numeric solvers)
        evaluate()
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        evaluate()
        for name, tip in (("body", "head"), ("tail", "tail3")):
            st = solve.CHAIN_STATUS[(obj.name, name)]
            assert st.kind == "chain" and st.solved and st.reachable, st.message
            assert st.within_limits and st.message == "ok"
            pos, rot = errors(obj, tip, tips[tip])
            assert pos <= TOL
            if goal_type == "POSE":
                assert rot <= TOL


def test_branched_chain_with_two_tips(limber: Any) -> None:
    """One chain, a tree below its root: hips → (spine … head) and (tail1 … tail3)."""
    rng = np.random.default_rng(7)
    obj = tree_rig()
    tips = {"head": add_empty("T.head"), "tail3": add_empty("T.tail3")}
    add_chain(obj, "all", "hips", tips, max_iterations=300)
    solve = limber.sub("addon.run.solve")
    mapping = limber.sub("addon.bridge.rig")
    rig = mapping.build_chain(obj, "hips", ["head", "tail3"])
    assert set(rig.bones) == set(TREE)
    assert rig.bones[0] == "hips"
    for _ in range(4):
        set_random_pose(obj, list(TREE), rng, 0.6)
        place_targets(obj, tips)
        set_random_pose(obj, list(TREE), rng, 0.2)
        evaluate()
        statuses = solve.solve_object(obj)
        evaluate()
        assert [s.kind for s in statuses] == ["chain"]
        assert statuses[0].reachable, statuses[0].message
        assert len(statuses[0].effector_errors) == 2
        for tip, target in tips.items():
            assert errors(obj, tip, target)[0] <= TOL


def test_locks_and_limits_shape_the_joints(limber: Any) -> None:
    obj = tree_rig()
    pbs = obj.pose.bones
    pbs["spine"].lock_ik_y = True  # two free axes → Ball with y locked
    pbs["chest"].lock_ik_x = pbs["chest"].lock_ik_z = True  # one free axis → Hinge about Y
    pbs["neck"].lock_ik_x = pbs["neck"].lock_ik_y = pbs["neck"].lock_ik_z = True  # Fixed
    pbs["spine"].use_ik_limit_x = True
    pbs["spine"].ik_min_x, pbs["spine"].ik_max_x = -0.2, 0.3
    pbs["chest"].use_ik_limit_y = True
    pbs["chest"].ik_min_y, pbs["chest"].ik_max_y = -0.1, 0.4
    core = limber.sub("core")
    rig = limber.sub("addon.bridge.rig").build_chain(obj, "spine", ["head"])
    dofs = {b: rig.skeleton.joints[rig.joint(b)].dofs for b in rig.bones}
    assert isinstance(dofs["spine"], core.Ball) and dofs["spine"].locked == (False, True, False)
    assert dofs["spine"].order == "XYZ"
    assert isinstance(dofs["chest"], core.Hinge)
    assert np.allclose(dofs["chest"].axis, (0, 1, 0))
    assert (dofs["chest"].lower, dofs["chest"].upper) == pytest.approx((-0.1, 0.4))
    assert isinstance(dofs["neck"], core.Fixed)
    assert isinstance(dofs["head"], core.Ball) and dofs["head"].order == "XYZ"
    assert np.asarray(dofs["spine"].lower)[0] == pytest.approx(-0.2)
    # Quaternion bones get Ball order XYZ; Euler bones their own order.
    rig2 = limber.sub("addon.bridge.rig").build_chain(obj, "tail1", ["tail3"])
    orders = [rig2.skeleton.joints[i].dofs.order for i in range(3)]
    assert orders == ["XYZ", "YZX", "XYZ"]


def test_limits_respected_and_status_truthful(limber: Any) -> None:
    """A target beyond the limits: the result stays within them and says 'not reached'."""
    obj = tree_rig()
    pbs = obj.pose.bones
    for b in ("tail1", "tail2"):
        pbs[b].rotation_mode = "XYZ"
        for ax in "xyz":
            setattr(pbs[b], f"use_ik_limit_{ax}", True)
            setattr(pbs[b], f"ik_min_{ax}", -0.25)
            setattr(pbs[b], f"ik_max_{ax}", 0.25)
    pbs["tail3"].lock_ik_x = pbs["tail3"].lock_ik_y = pbs["tail3"].lock_ik_z = True
    target = add_empty("T", Matrix.Translation((0.0, -0.5, 0.2)))  # far behind the tail
    add_chain(obj, "tail", "tail1", {"tail3": target}, solver="DLS")
    st = limber.sub("addon.run.solve").solve_object(obj)[0]
    evaluate()
    assert st.solved and not st.reachable and st.within_limits
    assert "not reached" in st.message
    for b in ("tail1", "tail2"):
        e = np.array(pbs[b].rotation_euler)
        assert np.all(np.abs(e) <= 0.25 + 1e-6)
    pos, _ = errors(obj, "tail3", target)
    assert st.position_error == pytest.approx(pos, abs=1e-5)
    # A reachable target within the limits is reached exactly.
    pbs["tail1"].rotation_euler = Euler((0.1, -0.2, 0.15))
    pbs["tail2"].rotation_euler = Euler((-0.2, 0.1, 0.05))
    evaluate()
    target.matrix_world = Matrix(world_pose(obj, "tail3").tolist())
    for b in ("tail1", "tail2"):
        pbs[b].rotation_euler = Euler((0, 0, 0))
    evaluate()
    st = limber.sub("addon.run.solve").solve_object(obj)[0]
    evaluate()
    assert st.reachable and st.within_limits, st.message
    assert errors(obj, "tail3", target)[0] <= TOL


def test_chain_errors_are_reported_not_raised(limber: Any) -> None:
    obj = tree_rig()
    t = add_empty("T")
    add_chain(obj, "bad", "tail1", {"head": t})
    add_chain(obj, "none", "spine", {})
    statuses = limber.sub("addon.run.solve").solve_object(obj)
    msg = {s.limb: s.message for s in statuses}
    assert "not the root bone" in msg["bad"]
    assert msg["none"] == "no effectors"


def test_task_priority_chain(limber: Any) -> None:
    rng = np.random.default_rng(3)
    obj = tree_rig()
    tips = {"head": add_empty("T.head"), "chest": add_empty("T.chest")}
    chain = add_chain(obj, "p", "spine", tips, solver="TASK_PRIORITY")
    chain.effectors[1].priority = 1
    set_random_pose(obj, MOVING, rng, 0.5)
    place_targets(obj, tips)
    set_random_pose(obj, MOVING, rng, 0.2)
    evaluate()
    st = limber.sub("addon.run.solve").solve_object(obj)[0]
    evaluate()
    assert st.reachable, st.message
    assert errors(obj, "head", tips["head"])[0] <= TOL


NUMERIC = ["DLS", "SDLS", "JACOBIAN_TRANSPOSE", "PSEUDOINVERSE", "CCD", "LBFGSB"]


@pytest.mark.parametrize("solver", NUMERIC)
def test_numeric_solvers_for_limbs(limber: Any, solver: str) -> None:
    """Every numeric solver on the meta-rig's arm: reachable POSITION goals near the
    current pose are hit; pose goals too for the second-order methods."""
    rng = np.random.default_rng(abs(hash(solver)) % 1000)
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.L"]
    target = add_empty("T")
    goal = "POSITION" if solver in ("JACOBIAN_TRANSPOSE", "CCD") else "POSE"
    add_limb(obj, "arm.L", bones, target=target, goal_type=goal, solver=solver)
    solve = limber.sub("addon.run.solve")
    mapping = limber.sub("addon.bridge.rig")
    k = solve.rig_for(obj, obj.limber.limbs[0]).hinge_axis
    pbs = obj.pose.bones
    for _ in range(3):
        for b in (bones[0], bones[2]):
            pbs[b].rotation_quaternion = random_quaternion(rng, 0.6)
        pbs[bones[1]].rotation_quaternion = Quaternion(k, 0.8)  # bent about the hinge
        evaluate()
        target.matrix_world = Matrix(world_pose(obj, bones[2]).tolist())
        for b in (bones[0], bones[2]):
            pbs[b].rotation_quaternion = random_quaternion(rng, 0.2) @ pbs[b].rotation_quaternion
        pbs[bones[1]].rotation_quaternion = Quaternion(k, 0.6)
        evaluate()
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        evaluate()
        st = solve.STATUS[(obj.name, "arm.L")]
        assert st.solved and st.reachable and st.within_limits, st.message
        assert st.solver == solver and st.iterations > 0
        assert st.stop_reason in ("REACHED", "STALLED")  # LBFGSB: Tikhonov bias ~1e-8
        pos, rot = errors(obj, bones[2], target)
        assert pos <= TOL
        if goal == "POSE":
            assert rot <= TOL
        # The lower bone only bends about the hinge axis.
        r = mapping.read_rotation(pbs[bones[1]])
        assert np.allclose(r @ k, k, atol=1e-6)


def test_numeric_limb_says_swivel_is_ignored(limber: Any) -> None:
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.L"]
    target = add_empty("T", Matrix(world_pose(obj, bones[2]).tolist()))
    add_limb(obj, "arm.L", bones, target=target, solver="DLS", swivel=0.5)
    st = limber.sub("addon.run.solve").solve_object(obj)[0]
    assert st.reachable
    assert "swivel settings are ignored" in st.message


def test_chain_under_a_limb_parent_sees_the_new_pose(limber: Any) -> None:
    """A spine chain moves the shoulders; the arm limb, solved after it in the same call,
    must use the moved shoulder frame (one depsgraph update in between)."""
    rng = np.random.default_rng(9)
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.L"]
    hand_t = add_empty("T.hand")
    chest_t = add_empty("T.chest")
    pbs = obj.pose.bones
    spine = ["spine.001", "spine.002", "spine.003"]
    for b in spine:
        pbs[b].rotation_quaternion = random_quaternion(rng, 0.3)
    evaluate()
    chest_t.matrix_world = Matrix(world_pose(obj, "spine.003").tolist())
    hand_t.matrix_world = Matrix(
        Matrix.Translation((0.0, -0.2, 0.1)) @ Matrix(world_pose(obj, bones[2]).tolist())
    )
    for b in spine:
        pbs[b].rotation_quaternion = (1, 0, 0, 0)
    evaluate()
    chain = add_chain(obj, "spine", "spine.001", {"spine.003": chest_t})
    chain.effectors[0].goal_type = "POSE"
    add_limb(obj, "arm.L", bones, target=hand_t, goal_type="POSITION")
    sts = limber.sub("addon.run.solve").solve_object(obj)
    evaluate()
    assert [s.kind for s in sts] == ["chain", "limb"]
    assert all(s.reachable for s in sts), [s.message for s in sts]
    assert errors(obj, "spine.003", chest_t)[0] <= TOL
    assert errors(obj, bones[2], hand_t)[0] <= TOL
    # The same through the frame_change_post handler (the update happens inside it).
    for b in spine + list(bones):
        pbs[b].rotation_quaternion = (1, 0, 0, 0)
    scene = bpy.context.scene
    scene.limber.live_playback = True
    try:
        scene.frame_set(2)
        evaluate()
        assert errors(obj, "spine.003", chest_t)[0] <= TOL
        assert errors(obj, bones[2], hand_t)[0] <= TOL
    finally:
        scene.limber.live_playback = False


def test_chain_settings_survive_save_and_reload(limber: Any, tmp_path: Any) -> None:
    obj = tree_rig()
    t = add_empty("T")
    chain = add_chain(obj, "tail", "tail1", {"tail3": t}, solver="CCD", max_iterations=77)
    chain.effectors[0].goal_type = "AIM"
    chain.effectors[0].axis = "NEG_Z"
    chain.effectors[0].weight = 2.5
    chain.use_limits = False
    path = str(tmp_path / "chain.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    c = bpy.data.objects["Tree"].limber.chains["tail"]
    assert (c.root_bone, c.solver, c.max_iterations, c.use_limits) == ("tail1", "CCD", 77, False)
    e = c.effectors[0]
    assert (e.tip_bone, e.target.name, e.goal_type, e.axis) == ("tail3", "T", "AIM", "NEG_Z")
    assert e.weight == pytest.approx(2.5)


def test_aim_and_partial_effectors(limber: Any) -> None:
    rng = np.random.default_rng(21)
    obj = tree_rig()
    t = add_empty("T")
    chain = add_chain(obj, "neck", "spine", {"head": t}, solver="LBFGSB")
    e = chain.effectors[0]
    for kind in ("PARTIAL", "AIM"):
        e.goal_type = kind
        set_random_pose(obj, MOVING, rng, 0.4)
        place_targets(obj, {"head": t})
        if kind == "AIM":  # a point 0.7 m along the head's Y axis
            m = np.array(t.matrix_world)
            t.matrix_world = Matrix.Translation(m[:3, 3] + 0.7 * m[:3, 1])
        set_random_pose(obj, MOVING, rng, 0.1)
        evaluate()
        st = limber.sub("addon.run.solve").solve_object(obj)[0]
        evaluate()
        assert st.reachable, st.message
        m = world_pose(obj, "head")
        if kind == "AIM":
            d = np.array(t.matrix_world)[:3, 3] - m[:3, 3]
            y = m[:3, 1] / np.linalg.norm(m[:3, 1])
            assert math.acos(min(1.0, float(y @ d) / np.linalg.norm(d))) <= TOL


def _animated_tail(obj: Any) -> Any:
    """A tail chain whose tip follows a keyed target along reachable FK poses."""
    t = add_empty("T.tail")
    pbs = obj.pose.bones
    for f in range(1, 31, 5):
        pbs["tail1"].rotation_euler = (0.3 * math.sin(f / 5), 0.0, 0.2 * math.cos(f / 7))
        pbs["tail2"].rotation_euler = (0.2, 0.1 * math.sin(f / 3), 0.0)
        evaluate()
        t.matrix_world = Matrix(world_pose(obj, "tail3").tolist())
        t.keyframe_insert("location", frame=f)
    for b in ("tail1", "tail2"):
        pbs[b].rotation_euler = (0, 0, 0)
    add_chain(obj, "tail", "tail1", {"tail3": t})
    return t


def test_bake_and_cli_include_chains(limber: Any, tmp_path: Any) -> None:
    obj = tree_rig()
    t = _animated_tail(obj)
    path = tmp_path / "tail.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=1, frame_end=26,
                               disable_limbs=True) == {"FINISHED"}
    assert not obj.limber.chains["tail"].enabled
    fcurves = limber.sub("addon.compat").assigned_fcurves(obj.animation_data)
    keyed = {fc.data_path.split('"')[1] for fc in fcurves}
    assert keyed == {"tail1", "tail2", "tail3"}
    for f in (1, 9, 26):  # the baked keys reproduce the solved poses
        bpy.context.scene.frame_set(f)
        assert errors(obj, "tail3", t)[0] <= TOL
    cli = limber.sub("addon.ui.cli")
    out = tmp_path / "out.blend"
    argv = ["bake", "--input", str(path), "--output", str(out), "--start", "1", "--end", "6",
            "--limbs", "tail"]
    assert cli.main(argv) == 0
    report = tmp_path / "r.json"
    argv = ["report", "--input", str(path), "--start", "1", "--end", "2", "--json", str(report)]
    assert cli.main(argv) == 0
    import json

    rows = json.loads(report.read_text())["frames"][0]["limbs"]
    assert rows[0]["kind"] == "chain" and rows[0]["reachable"] and rows[0]["solver"] == "DLS"
    assert cli.main(["bake", "--input", str(path), "--output", str(out), "--start", "1",
                     "--end", "2", "--limbs", "nope"]) == 1


def test_live_playback_solves_chain_only_armatures(limber: Any) -> None:
    obj = tree_rig()
    t = _animated_tail(obj)
    scene = bpy.context.scene
    scene.limber.live_playback = True
    try:
        scene.frame_set(11)
        evaluate()
        assert errors(obj, "tail3", t)[0] <= TOL
    finally:
        scene.limber.live_playback = False
