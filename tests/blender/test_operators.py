"""The limber.* operators, handlers, registration and saved settings in real Blender."""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Quaternion

from tests.blender.limber_rigs import (
    RIGIFY_LIMBS,
    add_empty,
    add_limb,
    evaluate,
    metarig,
    random_quaternion,
    rotation_angle,
    world_pose,
)

TOL = 1e-5


def _all_poses(obj: Any) -> dict[str, np.ndarray]:
    return {
        b: world_pose(obj, b) for bones in RIGIFY_LIMBS.values() for b in bones
    }


def _assert_same_poses(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    for name in a:
        assert np.linalg.norm(a[name][:3, 3] - b[name][:3, 3]) <= TOL, name
        assert rotation_angle(a[name], b[name]) <= TOL, name


def _fk_pose(obj: Any, limber: Any, rng: np.random.Generator) -> None:
    """A random FK pose with each elbow/knee a natural bend about its hinge axis."""
    solve = limber.sub("addon.run.solve")
    for limb in obj.limber.limbs:
        hinge = solve.rig_for(obj, limb).hinge_axis
        pbs = obj.pose.bones
        pbs[limb.upper_bone].rotation_quaternion = random_quaternion(rng, 1.0)
        pbs[limb.lower_bone].rotation_quaternion = Quaternion(hinge, rng.uniform(0.3, 1.6))
        pbs[limb.end_bone].rotation_quaternion = random_quaternion(rng, 0.8)
    evaluate()


def test_detect_with_targets_does_not_move_the_rig(limber: Any) -> None:
    obj = metarig(location=(1, 2, 0), rotation=(0, 0, 0.7))
    rng = np.random.default_rng(1)
    assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"FINISHED"}
    _fk_pose(obj, limber, rng)
    before = _all_poses(obj)
    assert bpy.ops.limber.detect_limbs(armature=obj.name, create_targets=True) == {"FINISHED"}
    assert len(obj.limber.limbs) == 4
    assert all(lb.target is not None and lb.target.type == "EMPTY" for lb in obj.limber.limbs)
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    evaluate()
    _assert_same_poses(before, _all_poses(obj))


@pytest.mark.parametrize("goal_type", ["POSE", "POSITION"])
def test_snap_swivel_and_target_then_solve_keeps_fk_pose(limber: Any, goal_type: str) -> None:
    obj = metarig()
    rng = np.random.default_rng(2)
    for name, bones in RIGIFY_LIMBS.items():
        add_limb(obj, name, bones, target=add_empty(f"T.{name}"), goal_type=goal_type)
    for _ in range(5):
        _fk_pose(obj, limber, rng)
        before = _all_poses(obj)
        assert bpy.ops.limber.snap_target(armature=obj.name) == {"FINISHED"}
        assert bpy.ops.limber.snap_swivel(armature=obj.name) == {"FINISHED"}
        evaluate()
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        evaluate()
        _assert_same_poses(before, _all_poses(obj))


def test_add_and_remove_limb(limber: Any) -> None:
    obj = metarig()
    assert bpy.ops.limber.add_limb(armature=obj.name, end_bone="hand.L") == {"FINISHED"}
    assert bpy.ops.limber.add_limb(armature=obj.name, end_bone="foot.R") == {"FINISHED"}
    limbs = obj.limber.limbs
    assert [(lb.name, lb.upper_bone, lb.lower_bone, lb.end_bone) for lb in limbs] == [
        ("hand.L", "upper_arm.L", "forearm.L", "hand.L"),
        ("foot.R", "thigh.R", "shin.R", "foot.R"),
    ]
    assert obj.limber.active_limb_index == 1
    obj.data.bones.active = obj.data.bones["hand.R"]
    assert bpy.ops.limber.add_limb(armature=obj.name) == {"FINISHED"}
    assert limbs[-1].end_bone == "hand.R"
    assert bpy.ops.limber.remove_limb(armature=obj.name, index=0) == {"FINISHED"}
    assert [lb.name for lb in limbs] == ["foot.R", "hand.R"]
    assert bpy.ops.limber.remove_limb(armature=obj.name) == {"FINISHED"}
    assert len(limbs) == 1
    with pytest.raises(RuntimeError):  # operator errors surface as RuntimeError in scripts
        bpy.ops.limber.add_limb(armature=obj.name, end_bone="root")


def test_solve_on_a_non_armature_is_an_error(limber: Any) -> None:
    add_empty("NotAnArmature")
    with pytest.raises(RuntimeError, match="not an armature"):
        bpy.ops.limber.solve(armature="NotAnArmature")


def test_live_playback_handler_solves_on_frame_change(limber: Any) -> None:
    obj = metarig()
    bones = RIGIFY_LIMBS["arm.R"]
    target = add_empty("T")
    add_limb(obj, "arm.R", bones, target=target, goal_type="POSITION")
    start = world_pose(obj, bones[2])[:3, 3]
    shoulder = world_pose(obj, bones[0])[:3, 3]
    target.location = start + 0.2 * (shoulder - start) + np.array((0.0, -0.1, 0.0))
    target.keyframe_insert("location", frame=1)
    target.location = start + 0.3 * (shoulder - start) + np.array((0.0, 0.0, -0.1))
    target.keyframe_insert("location", frame=10)
    scene = bpy.context.scene
    scene.limber.live_playback = False
    scene.frame_set(5)
    assert np.linalg.norm(world_pose(obj, bones[2])[:3, 3] - start) < 1e-6  # not solved
    scene.limber.live_playback = True
    for f in (3, 7, 10):
        scene.frame_set(f)
        evaluate()
        want = np.array(target.matrix_world.translation)
        assert np.linalg.norm(world_pose(obj, bones[2])[:3, 3] - want) <= TOL
    scene.limber.live_playback = False


def test_register_unregister_twice(limber: Any) -> None:
    package = importlib.import_module(limber.module)
    solve = limber.sub("addon.run.handlers")
    addon = limber.sub("addon")
    cli = limber.sub("addon.ui.cli")
    for _ in range(2):
        package.unregister()
        assert cli._handle is None
        assert not hasattr(bpy.types.Object, "limber")
        assert not hasattr(bpy.types.Scene, "limber")
        assert solve.on_frame_change_post not in bpy.app.handlers.frame_change_post
        assert not any(getattr(c, "is_registered", False) for c in addon.CLASSES)
        assert not hasattr(bpy.ops.limber, "solve") or not _op_exists("limber.solve")
        package.register()
        assert bpy.app.handlers.frame_change_post.count(solve.on_frame_change_post) == 1
        assert _op_exists("limber.solve")
        assert hasattr(bpy.types.Object, "limber")
        assert cli._handle is not None


def _op_exists(idname: str) -> bool:
    mod, name = idname.split(".")
    try:
        getattr(getattr(bpy.ops, mod), name).get_rna_type()
    except (AttributeError, KeyError):
        return False
    return True


def test_settings_survive_save_and_reload(limber: Any, tmp_path: Path) -> None:
    obj = metarig()
    target = add_empty("T")
    pole = add_empty("P")
    limb = add_limb(
        obj,
        "arm.L",
        RIGIFY_LIMBS["arm.L"],
        target=target,
        target_bone="",
        goal_type="POSITION",
        axis="NEG_Z",
        solver="ANALYTIC",
        swivel=0.75,
        swivel_mode="POLE",
        pole=pole,
        use_limits=False,
        hinge_axis="NEG_X",
        enabled=False,
    )
    limb.keyframe_insert("swivel", frame=3)  # animatable
    chain = obj.limber.chains.add()
    chain.name = "tail"
    chain.root_bone = "spine"
    eff = chain.effectors.add()
    eff.tip_bone, eff.target, eff.weight, eff.priority = "spine.006", target, 0.5, 2
    bpy.context.scene.limber.live_playback = True
    path = tmp_path / "limber.blend"
    name = obj.name
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects[name]
    limb = obj.limber.limbs["arm.L"]
    assert (limb.upper_bone, limb.lower_bone, limb.end_bone) == RIGIFY_LIMBS["arm.L"]
    assert limb.target.name == "T" and limb.pole.name == "P"
    assert (limb.goal_type, limb.axis, limb.solver, limb.swivel_mode, limb.hinge_axis) == (
        "POSITION", "NEG_Z", "ANALYTIC", "POLE", "NEG_X"
    )
    assert limb.swivel == pytest.approx(0.75)
    assert not limb.use_limits and not limb.enabled
    assert obj.animation_data.action is not None
    chain = obj.limber.chains["tail"]
    assert chain.root_bone == "spine"
    assert chain.effectors[0].tip_bone == "spine.006"
    assert chain.effectors[0].weight == pytest.approx(0.5) and chain.effectors[0].priority == 2
    assert bpy.context.scene.limber.live_playback
    bpy.context.scene.limber.live_playback = False


def test_every_property_has_a_description(limber: Any) -> None:
    props = limber.sub("addon.props")
    for cls in props.CLASSES:
        for prop in cls.bl_rna.properties:
            if prop.identifier in {"rna_type", "name"}:
                continue
            assert len(prop.description) > 15, f"{cls.__name__}.{prop.identifier}"
    swivel = props.LIMBER_PG_limb.bl_rna.properties["swivel"]
    assert swivel.subtype == "ANGLE" and swivel.is_animatable
    assert math.isclose(swivel.soft_max, math.pi, rel_tol=1e-6)


OPERATOR_IDS = ("detect_limbs", "add_limb", "remove_limb", "solve", "bake", "snap_swivel",
                "snap_target", "add_chain", "remove_chain")


def test_operator_contract_ids_undo_and_hidden_armature(limber: Any) -> None:
    """Every issue-5 operator exists under its id, is undoable, and takes the armature by a
    hidden, unsaved name property (scripts and tests call them directly)."""
    operators = limber.sub("addon.ui.operators")
    by_id = {cls.bl_idname: cls for cls in operators.CLASSES}
    for name in OPERATOR_IDS:
        cls = by_id[f"limber.{name}"]
        assert {"REGISTER", "UNDO"} <= set(cls.bl_options), name
        rna = getattr(bpy.ops.limber, name).get_rna_type()
        prop = rna.properties["armature"]
        assert prop.type == "STRING"
        assert prop.is_hidden and prop.is_skip_save, name



def test_add_and_remove_chain(limber: Any) -> None:
    obj = metarig()
    before = world_pose(obj, "spine.003")
    assert bpy.ops.limber.add_chain(
        armature=obj.name, root_bone="spine.001", tip_bone="spine.003"
    ) == {"FINISHED"}
    chain = obj.limber.chains["spine.003"]
    assert chain.root_bone == "spine.001" and chain.effectors[0].target is not None
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    evaluate()
    assert np.allclose(world_pose(obj, "spine.003"), before, atol=1e-5)  # nothing moved
    with pytest.raises(RuntimeError, match="not the root bone"):
        bpy.ops.limber.add_chain(armature=obj.name, root_bone="hand.L", tip_bone="spine.003")
    assert bpy.ops.limber.remove_chain(armature=obj.name) == {"FINISHED"}
    assert not len(obj.limber.chains)
