"""Generated Rigify rigs (meta-rig → ``pose.rigify_generate``): Limber drives the FK
controls through the MCH- helpers between them, with the limb's IK/FK switch at FK; the
DEF- bones land on the targets; the bake keys the switch; removal restores it."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
from mathutils import Quaternion

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
        assert p < POS_TOL and r < ROT_TOL, key


def _worse(w: tuple[float, float], got: np.ndarray, want: np.ndarray) -> tuple[float, float]:
    return (max(w[0], float(np.linalg.norm(got[:3, 3] - want[:3, 3]))),
            max(w[1], rotation_angle(got, want)))


def test_bake_keys_the_switch_and_remove_restores_it(limber: Any) -> None:
    rig = generated_rig()
    assert bpy.ops.limber.detect_limbs(armature=rig.name) == {"FINISHED"}
    solve = limber.sub("addon.run.solve")
    limb = rig.limber.limbs["arm.L"]
    k = solve.rig_for(rig, limb).hinge_axis
    target = add_empty("T")
    limb.target = target
    rng = np.random.default_rng(3)
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
