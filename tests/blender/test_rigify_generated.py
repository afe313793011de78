"""Generated Rigify rigs (meta-rig → ``pose.rigify_generate``): Limber drives the FK
controls through the MCH- helpers between them, with the limb's IK/FK switch at FK; the
DEF- bones land on the targets; the bake keys the switch; removal restores it."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix, Quaternion

from tests.blender.limber_rigs import (
    add_empty,
    evaluate,
    random_quaternion,
    rotation_angle,
    world_pose,
)

FK = {
    "arm.L": ("upper_arm_fk.L", "forearm_fk.L", "hand_fk.L"),
    "arm.R": ("upper_arm_fk.R", "forearm_fk.R", "hand_fk.R"),
    "leg.L": ("thigh_fk.L", "shin_fk.L", "foot_fk.L"),
    "leg.R": ("thigh_fk.R", "shin_fk.R", "foot_fk.R"),
}
DEF_END = {"arm.L": "DEF-hand.L", "arm.R": "DEF-hand.R", "leg.L": "DEF-foot.L",
           "leg.R": "DEF-foot.R"}
#: The DEF- bones of each limb (segments included), upper to end.
DEF_CHAIN = {
    name: tuple(f"DEF-{stem}.{name[-1]}{seg}" for stem in stems for seg in ("", ".001"))[:-1]
    for name, stems in (("arm.L", ("upper_arm", "forearm", "hand")),
                        ("arm.R", ("upper_arm", "forearm", "hand")),
                        ("leg.L", ("thigh", "shin", "foot")),
                        ("leg.R", ("thigh", "shin", "foot")))
}
SWITCH = {"arm.L": "upper_arm_parent.L", "arm.R": "upper_arm_parent.R",
          "leg.L": "thigh_parent.L", "leg.R": "thigh_parent.R"}
#: 0.01 mm and 0.01°.
POS_TOL = 1e-5
ROT_TOL = math.radians(0.01)


def generated_rig() -> Any:
    assert bpy.ops.object.armature_human_metarig_add() == {"FINISHED"}
    assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE" and "rig_id" in o.data)
    evaluate()
    return rig


def _fk_pose(rig: Any, limb: Any, k: np.ndarray, rng: np.random.Generator) -> None:
    pbs = rig.pose.bones
    pbs[limb.upper_bone].rotation_quaternion = random_quaternion(rng, 0.9)
    pbs[limb.lower_bone].rotation_quaternion = Quaternion(k.tolist(), rng.uniform(0.2, 1.8))
    pbs[limb.end_bone].rotation_quaternion = random_quaternion(rng, 0.6)


def _rest(rig: Any, limb: Any) -> None:
    for b in (limb.upper_bone, limb.lower_bone, limb.end_bone):
        rig.pose.bones[b].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)


def test_generated_rig_limbs_on_the_fk_controls(limber: Any) -> None:
    rig = generated_rig()
    assert bpy.ops.limber.detect_limbs(armature=rig.name) == {"FINISHED"}
    got = {lb.name: (lb.upper_bone, lb.lower_bone, lb.end_bone) for lb in rig.limber.limbs}
    assert got == FK
    for lb in rig.limber.limbs:
        assert lb.switch_bone == SWITCH[lb.name]
        assert rig.pose.bones[lb.switch_bone]["IK_FK"] == 1.0
        assert lb.switch_restore == 0.0
    # IK <-> FK through Limber: from any FK pose, snapping the target and the swivel (or
    # the pole) and solving leaves every DEF- bone where it was.
    solve = limber.sub("addon.run.solve")
    rng = np.random.default_rng(7)
    for lb in rig.limber.limbs:
        lb.target = add_empty(f"T.{lb.name}")
        _fk_pose(rig, lb, solve.rig_for(rig, lb).hinge_axis, rng)
    evaluate()
    defs = [b.name for b in rig.data.bones if b.name.startswith("DEF-")]
    before = {b: world_pose(rig, b) for b in defs}
    assert bpy.ops.limber.snap_target(armature=rig.name) == {"FINISHED"}
    assert bpy.ops.limber.snap_swivel(armature=rig.name) == {"FINISHED"}
    for st in solve.solve_object(rig):
        assert st.reached, st.message
    moved = max(float(np.abs(world_pose(rig, b) - before[b]).max()) for b in defs)
    print(f"Rigify FK->IK snap: DEF bones moved at most {moved * 1000:.2e} mm")
    assert moved < POS_TOL


def test_def_bones_reach_fk_generated_targets(limber: Any) -> None:
    """Per limb, 20 targets made by posing the FK controls: after a reset, Limber's solve
    puts the DEF- end bone on each within 0.01 mm / 0.01° in both modes: through the FK
    controls, and through Rigify's IK controls, where the whole DEF- chain (upper, lower,
    end) lands where the FK mode puts it (the rig's IK shows Limber's swivel), with the
    rig's IK pole on and off."""
    rig = generated_rig()
    assert bpy.ops.limber.detect_limbs(armature=rig.name) == {"FINISHED"}
    for i, name in enumerate(FK):
        rig.pose.bones[SWITCH[name]]["pole_vector"] = i % 2 == 0
        _reach_fk_targets(limber, rig, name)


def _reach_fk_targets(limber: Any, rig: Any, name: str) -> None:
    solve = limber.sub("addon.run.solve")
    limb = rig.limber.limbs[name]
    target = add_empty(f"T.{name}")
    limb.target = target
    k = solve.rig_for(rig, limb).hinge_axis
    rng = np.random.default_rng(14)
    chain = [b for b in DEF_CHAIN[name] if b in rig.data.bones]
    worst = {"FK": (0.0, 0.0), "IK": (0.0, 0.0), "chain": (0.0, 0.0)}
    for i in range(20):
        limb.rigify_mode = "FK"
        rig.pose.bones[SWITCH[name]]["IK_FK"] = 1.0  # the targets: poses of the FK controls
        _fk_pose(rig, limb, k, rng)
        evaluate()
        want = world_pose(rig, DEF_END[name])
        target.matrix_world = rig.matrix_world @ rig.evaluated_get(
            bpy.context.evaluated_depsgraph_get()).pose.bones[limb.end_bone].matrix
        limb.swivel = float(rng.uniform(-np.pi, np.pi))
        _rest(rig, limb)
        evaluate()
        fk_chain = {}
        for mode in ("FK", "IK"):
            limb.rigify_mode = mode
            st = solve.solve_object(rig, limbs=[name])[0]
            assert st.reached, (mode, i, st.message)
            assert rig.pose.bones[SWITCH[name]]["IK_FK"] == (1.0 if mode == "FK" else 0.0)
            got = world_pose(rig, DEF_END[name])
            worst[mode] = _worse(worst[mode], got, want)
            if mode == "FK":
                fk_chain = {b: world_pose(rig, b) for b in chain}
            else:
                assert st.measured == "depsgraph"
                assert abs(st.position_error - float(np.linalg.norm(
                    got[:3, 3] - target.matrix_world.translation))) < 1e-6
                for b in chain:
                    worst["chain"] = _worse(worst["chain"], world_pose(rig, b), fk_chain[b])
    for key, (p, r) in worst.items():
        print(f"Rigify {name} {key}: DEF worst {p * 1000:.2e} mm, {math.degrees(r):.2e}°")
        # the chain compares two solved poses (each within the tolerance of its own goal;
        # measured: up to 9.3 µm / 0.0012° at the B-bone segments)
        scale = 2.0 if key == "chain" else 1.0
        assert p < scale * POS_TOL and r < scale * ROT_TOL, key


def _worse(w: tuple[float, float], got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    return (max(w[0], float(np.linalg.norm(got[:3, 3] - want[:3, 3]))),
            max(w[1], rotation_angle(got, want)))


def _keyed_fk_targets(limber: Any, rig: Any, limb: Any, seed: int) -> dict[int, np.ndarray]:
    """Frames 1-10 of a keyed target made by posing the arm's FK controls; the FK
    controls back at rest. Returns the DEF- hand's world pose per frame."""
    k = limber.sub("addon.run.solve").rig_for(rig, limb).hinge_axis
    target = add_empty("T")
    limb.target = target
    rng = np.random.default_rng(seed)
    wants = {}
    for f in range(1, 11):
        _fk_pose(rig, limb, k, rng)
        evaluate()
        wants[f] = world_pose(rig, "DEF-hand.L")
        target.matrix_world = rig.matrix_world @ rig.evaluated_get(
            bpy.context.evaluated_depsgraph_get()).pose.bones["hand_fk.L"].matrix
        target.keyframe_insert("location", frame=f)
        target.keyframe_insert("rotation_euler", frame=f)
    _rest(rig, limb)
    return wants


def test_bake_keys_the_switch_and_remove_restores_it(limber: Any) -> None:
    rig = generated_rig()
    assert bpy.ops.limber.detect_limbs(armature=rig.name) == {"FINISHED"}
    limb = rig.limber.limbs["arm.L"]
    wants = _keyed_fk_targets(limber, rig, limb, 3)
    assert bpy.ops.limber.bake(armature=rig.name, frame_start=1, frame_end=10) == {"FINISHED"}
    for f in range(1, 11):
        bpy.context.scene.frame_set(f)
        evaluate()
        assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == 1.0
        got = world_pose(rig, "DEF-hand.L")
        assert np.linalg.norm(got[:3, 3] - wants[f][:3, 3]) < POS_TOL
        assert rotation_angle(got, wants[f]) < ROT_TOL
    index = list(rig.limber.limbs).index(limb)
    assert bpy.ops.limber.remove_limb(armature=rig.name, index=index) == {"FINISHED"}
    assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == 0.0
    compat = limber.sub("addon.compat")
    fcs = compat.assigned_fcurves(rig.animation_data)
    assert fcs.find('pose.bones["upper_arm_parent.L"]["IK_FK"]') is None  # Limber's own
    assert rig.pose.bones["upper_arm_parent.R"]["IK_FK"] == 1.0  # other limbs keep theirs


def _def_poses(rig: Any) -> dict[str, np.ndarray]:
    """Heads and tails (world, evaluated) of the DEF- bones: what the deformed mesh shows."""
    ev = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    return {b.name: np.array([ev.matrix_world @ p for p in (b.head, b.tail)])
            for b in ev.pose.bones if b.name.startswith("DEF-")}


def _moved(rig: Any, before: dict[str, np.ndarray]) -> float:
    """The largest move (world units) of a DEF- bone's head or tail since ``before``."""
    now = _def_poses(rig)
    return max(float(np.linalg.norm(now[b] - m, axis=1).max()) for b, m in before.items())


def test_bake_in_ik_mode_keys_the_ik_controls_and_plays_back(limber: Any) -> None:
    """IK mode: a 10-frame bake keys hand_ik, the pole, the IK chain's start pose and the
    switch at IK; the keys play back with the DEF- hand on target (0.01 mm / 0.01°);
    removing the limb restores the switch (here: FK, as the rig was) and drops Limber's
    switch F-curve."""
    rig = generated_rig()
    rig.pose.bones["upper_arm_parent.L"]["IK_FK"] = 1.0
    rig.pose.bones["upper_arm_parent.L"]["pole_vector"] = True
    assert bpy.ops.limber.detect_limbs(armature=rig.name) == {"FINISHED"}
    limb = rig.limber.limbs["arm.L"]
    assert limb.switch_restore == 1.0
    wants = _keyed_fk_targets(limber, rig, limb, 5)
    limb.rigify_mode = "IK"
    assert bpy.ops.limber.bake(armature=rig.name, frame_start=1, frame_end=10) == {"FINISHED"}
    assert limb.status.reached, limb.status.message
    fcs = limber.sub("addon.compat").assigned_fcurves(rig.animation_data)
    for path in ('pose.bones["hand_ik.L"].location', 'pose.bones["hand_ik.L"].rotation_quaternion',
                 'pose.bones["upper_arm_ik_target.L"].location',
                 'pose.bones["upper_arm_ik.L"].rotation_euler',
                 'pose.bones["MCH-forearm_ik.L"].rotation_quaternion',
                 'pose.bones["upper_arm_parent.L"]["IK_FK"]'):
        assert fcs.find(path) is not None, path
    assert fcs.find('pose.bones["forearm_fk.L"].rotation_quaternion') is None  # FK untouched
    worst = (0.0, 0.0)
    for f in range(1, 11):
        bpy.context.scene.frame_set(f)
        evaluate()
        assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == 0.0
        worst = _worse(worst, world_pose(rig, "DEF-hand.L"), wants[f])
    print(f"Rigify IK-mode bake: DEF-hand worst {worst[0] * 1000:.2e} mm, "
          f"{math.degrees(worst[1]):.2e}°")
    assert worst[0] < POS_TOL and worst[1] < ROT_TOL
    index = list(rig.limber.limbs).index(limb)
    assert bpy.ops.limber.remove_limb(armature=rig.name, index=index) == {"FINISHED"}
    assert rig.pose.bones["upper_arm_parent.L"]["IK_FK"] == 1.0
    assert fcs.find('pose.bones["upper_arm_parent.L"]["IK_FK"]') is None


def test_detection_on_a_rig_in_ik_moves_nothing(limber: Any) -> None:
    """The rig's own IK posed (hand_ik and foot_ik moved and turned, the IK base twisted,
    one arm with its pole): detecting limbs switches every limb to FK after giving the FK
    controls the pose the rig shows (Rigify's IK stretch included), so no DEF- bone moves
    (0.01 mm). One exception, Rigify's own: in IK the toe follows the foot-roll mechanism
    and its head is not exactly at the foot's tail (the IK shrinks the leg); the connected
    FK toe cannot keep that gap, so DEF-foot's tail and DEF-toe move by it."""
    rig = generated_rig()
    pbs = rig.pose.bones
    rng = np.random.default_rng(9)
    pbs["upper_arm_parent.R"]["pole_vector"] = True
    for side in "LR":
        for ctrl in (f"hand_ik.{side}", f"foot_ik.{side}"):
            pbs[ctrl].location = rng.uniform(-0.12, 0.12, 3)
            pbs[ctrl].rotation_quaternion = random_quaternion(rng, 0.5)
        pbs[f"foot_ik.{side}"].location[2] = float(rng.uniform(0.05, 0.15))  # knee bent
        pbs[f"upper_arm_ik_target.{side}"].location = rng.uniform(-0.2, 0.2, 3)
        pbs[f"upper_arm_ik.{side}"].rotation_euler[1] = float(rng.uniform(-0.8, 0.8))
    evaluate()
    before = _def_poses(rig)
    ev = rig.evaluated_get(bpy.context.evaluated_depsgraph_get())
    gap = {s: float(np.linalg.norm(ev.pose.bones[f"ORG-toe.{s}"].head
                                   - ev.pose.bones[f"ORG-foot.{s}"].tail)) for s in "LR"}
    assert all(pbs[s]["IK_FK"] == 0.0 for s in SWITCH.values())
    assert bpy.ops.limber.detect_limbs(armature=rig.name) == {"FINISHED"}
    evaluate()
    assert all(pbs[s]["IK_FK"] == 1.0 for s in SWITCH.values())
    toes = {f"DEF-{b}.{s}": s for s in "LR" for b in ("foot", "toe")}
    rest = {b: m for b, m in before.items() if b not in toes}
    moved = _moved(rig, rest)
    now = _def_poses(rig)
    toe_moved = {b: float(np.linalg.norm(now[b] - before[b], axis=1).max()) for b in toes}
    print(f"Rigify detection on an IK pose: DEF bones moved at most {moved * 1000:.2e} mm; "
          f"foot tail / toe {max(toe_moved.values()) * 1000:.2e} mm (Rigify's IK toe gap "
          f"{max(gap.values()) * 1000:.2e} mm)")
    assert moved < POS_TOL
    for b, m in toe_moved.items():
        assert m < gap[toes[b]] + POS_TOL


def test_fk_ik_mode_changes_through_limber_move_nothing(limber: Any) -> None:
    """IK <-> FK on a Rigify rig through Limber: from an FK pose, snap the target and the
    swivel, change the limb to IK mode and solve (Rigify's IK controls take the pose),
    then back to FK and solve: no DEF- bone moves (0.01 mm)."""
    rig = generated_rig()
    assert bpy.ops.limber.detect_limbs(armature=rig.name) == {"FINISHED"}
    solve = limber.sub("addon.run.solve")
    rng = np.random.default_rng(11)
    for i, lb in enumerate(rig.limber.limbs):
        lb.target = add_empty(f"T.{lb.name}")
        rig.pose.bones[lb.switch_bone]["pole_vector"] = i % 2 == 1
        _fk_pose(rig, lb, solve.rig_for(rig, lb).hinge_axis, rng)
    evaluate()
    before = _def_poses(rig)
    assert bpy.ops.limber.snap_target(armature=rig.name) == {"FINISHED"}
    assert bpy.ops.limber.snap_swivel(armature=rig.name) == {"FINISHED"}
    for mode in ("IK", "FK", "IK"):
        for lb in rig.limber.limbs:
            lb.rigify_mode = mode
        assert bpy.ops.limber.solve(armature=rig.name) == {"FINISHED"}
        assert all(lb.status.reached for lb in rig.limber.limbs)
        moved = _moved(rig, before)
        print(f"Rigify FK pose -> {mode} mode: DEF bones moved at most {moved * 1000:.2e} mm")
        assert moved < POS_TOL
    # and from Rigify's IK back to a swivel: snapping reads the pose the rig shows
    for lb in rig.limber.limbs:
        lb.swivel = 0.0
    assert bpy.ops.limber.snap_swivel(armature=rig.name) == {"FINISHED"}
    assert bpy.ops.limber.solve(armature=rig.name) == {"FINISHED"}
    assert _moved(rig, before) < POS_TOL


def test_live_solving_in_ik_mode_and_numeric_solvers_refused(limber: Any) -> None:
    """Live solving drives Rigify's IK controls (the DEF- hand on the target, the status
    measured on it); cancelling restores the IK controls; a numeric solver in IK mode is
    skipped with a message naming what to change."""
    rig = generated_rig()
    assert bpy.ops.limber.detect_limbs(armature=rig.name) == {"FINISHED"}
    limb = rig.limber.limbs["arm.L"]
    for lb in rig.limber.limbs:
        lb.enabled = lb.name == "arm.L"
    k = limber.sub("addon.run.solve").rig_for(rig, limb).hinge_axis
    _fk_pose(rig, limb, k, np.random.default_rng(2))
    evaluate()
    target = add_empty("T", Matrix.Translation(world_pose(rig, "hand_fk.L")[:3, 3]))
    _rest(rig, limb)
    limb.rigify_mode = "IK"
    limb.target = target
    limb.goal_type = "POSITION"
    hand_ik = tuple(rig.pose.bones["hand_ik.L"].location)
    live = limber.sub("addon.run.live")
    session = live.LiveSession(rig)
    assert session.tick()
    st = session.statuses[0]
    assert st.reached and st.measured == "depsgraph", st.message
    got = world_pose(rig, "DEF-hand.L")[:3, 3]
    assert np.linalg.norm(got - np.array(target.matrix_world.translation)) < POS_TOL
    assert not session.tick()  # its own writes do not trigger another solve
    # out of the arm's reach: hand_ik goes to the target and Rigify's IK stretches to it
    shoulder = world_pose(rig, "ORG-upper_arm.L")[:3, 3]
    far = shoulder + 1.3 * (np.array(target.matrix_world.translation) - shoulder)
    target.matrix_world = Matrix.Translation(far)
    assert session.tick()
    st = session.statuses[0]
    got = world_pose(rig, "DEF-hand.L")[:3, 3]
    print(f"Rigify IK mode out of reach: DEF-hand {np.linalg.norm(got - far) * 1000:.2e} mm "
          f"from the target; {st.message}")
    assert st.reached and np.linalg.norm(got - far) < POS_TOL
    session.cancel()
    assert tuple(rig.pose.bones["hand_ik.L"].location) == hand_ik
    limb.solver = "DLS"
    st = limber.sub("addon.run.solve").solve_object(rig, limbs=["arm.L"])[0]
    assert not st.solved and "Analytic" in st.message
