"""Any hinge axis: CUSTOM vectors, and AUTO from IK locks, the rest bend, the animation or
the current pose, with the source shown; a BVH clip imported by Blender's own importer is
re-solved from its own hand and foot targets with its own elbow and knee axes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Quaternion

from tests.blender.limber_rigs import (
    add_empty,
    add_limb,
    armature_from,
    evaluate,
    metarig,
    rotation_angle,
    world_pose,
)

CLIP = Path(__file__).resolve().parents[2] / "tools" / "data" / "mocap" / "cmu_131_01.bvh"
#: A straight arm along +X (T-pose), rolls zero.
STRAIGHT = {
    "root": ((0, 0, 1.0), (0, 0, 1.2), None),
    "upper.L": ((0.2, 0, 1.3), (0.5, 0, 1.3), "root"),
    "lower.L": ((0.5, 0, 1.3), (0.8, 0, 1.3), "upper.L"),
    "hand.L": ((0.8, 0, 1.3), (0.9, 0, 1.3), "lower.L"),
}
BONES = ("upper.L", "lower.L", "hand.L")


def _local_axis(obj: Any, bone: str) -> tuple[np.ndarray, float]:
    q = obj.pose.bones[bone].matrix_basis.to_quaternion()
    return np.array(q.axis), float(q.angle)


def test_custom_axis_is_the_lower_bones_rotation_axis(limber: Any) -> None:
    obj = armature_from("Straight", STRAIGHT)
    k = np.array((0.866, 0.0, 0.5))
    limb = add_limb(obj, "arm.L", BONES, hinge_axis="CUSTOM", hinge_custom=tuple(k))
    goal = world_pose(obj, "hand.L")
    goal[:3, 3] += (-0.15, 0.1, -0.05)
    limb.target = add_empty("T", goal)
    limb.goal_type = "POSITION"
    st = limber.sub("addon.run.solve").solve_object(obj)[0]
    assert st.reached, st.message
    axis, angle = _local_axis(obj, "lower.L")
    assert angle > 0.1
    assert np.allclose(axis, k / np.linalg.norm(k), atol=1e-6)
    assert "Custom" in limber.sub("addon.ui.panels").hinge_label(obj, limb).title()


def test_custom_axis_zero_vector_is_refused(limber: Any) -> None:
    obj = armature_from("Straight", STRAIGHT)
    limb = add_limb(obj, "arm.L", BONES, hinge_axis="CUSTOM", hinge_custom=(0.0, 0.0, 0.0))
    limb.target = add_empty("T", world_pose(obj, "hand.L"))
    with pytest.raises(limber.sub("addon.bridge.rig").MappingError, match="non-zero"):
        limber.sub("addon.run.solve").rig_for(obj, limb)
    assert "cannot" in limber.sub("addon.ui.panels").hinge_label(obj, limb)


@pytest.mark.parametrize("source", ["LOCKS", "REST", "POSE", "ACTION", "DEFAULT"])
def test_auto_axis_sources(limber: Any, source: str) -> None:
    """Each AUTO source in its order; the default is reported in the status."""
    solve = limber.sub("addon.run.solve")
    if source == "REST":
        obj = metarig()
        names = ("upper_arm.L", "forearm.L", "hand.L")
    else:
        obj = armature_from("Straight", STRAIGHT)
        names = BONES
    lower = obj.pose.bones[names[1]]
    bend = Quaternion((0.0, 0.6, 0.8), 0.7)  # about (0, 0.6, 0.8) in the lower bone's frame
    want: Any = None
    if source == "LOCKS":
        lower.lock_ik_x = lower.lock_ik_y = True
        want = (0.0, 0.0, 1.0)
    elif source == "POSE":
        lower.rotation_quaternion = bend
        want = (0.0, 0.6, 0.8)
    elif source == "ACTION":
        for f, angle in ((1, 0.0), (10, 0.7), (20, 0.2)):
            lower.rotation_quaternion = Quaternion((0.0, 0.6, 0.8), angle)
            lower.keyframe_insert("rotation_quaternion", frame=f)
        bpy.context.scene.frame_set(1)  # the current pose is straight: the animation decides
        want = (0.0, 0.6, 0.8)
    elif source == "DEFAULT":
        want = (1.0, 0.0, 0.0)
    limb = add_limb(obj, "arm.L", names)
    rig = solve.rig_for(obj, limb)
    assert rig.hinge_source == source
    if want is not None:
        assert np.allclose(rig.hinge_axis, want, atol=1e-6)
    label = limber.sub("addon.ui.panels").hinge_label(obj, limb)
    assert limber.sub("addon.bridge.rig").HINGE_SOURCES[source] in label
    limb.target = add_empty("T", world_pose(obj, names[2]))
    st = solve.solve_object(obj)[0]
    assert ("hinge axis guessed" in st.message) == (source == "DEFAULT")
    if source in ("ACTION", "POSE"):  # kept on the limb until the choice changes
        assert limb.hinge_found_source == f"{source}:{names[1]}"
        limb.hinge_axis = "X"
        limb.hinge_axis = "AUTO"
        assert limb.hinge_found_source == ""


def test_rest_bend_against_the_animation_follows_the_animation(limber: Any) -> None:
    """A slightly bent rest whose bend the animation reverses: the animation's axis wins,
    never 180° away from what is on the rig."""
    layout = dict(STRAIGHT)
    layout["lower.L"] = ((0.5, 0, 1.3), (0.8, 0.001, 1.3), "upper.L")
    obj = armature_from("Bent", layout)
    lower = obj.pose.bones["lower.L"]
    lower.rotation_quaternion = Quaternion((0.0, 0.0, -1.0), 0.8)
    lower.keyframe_insert("rotation_quaternion", frame=1)
    limb = add_limb(obj, "arm.L", BONES)
    rig = limber.sub("addon.run.solve").rig_for(obj, limb)
    assert rig.hinge_source == "ACTION"
    assert np.allclose(rig.hinge_axis, (0.0, 0.0, -1.0), atol=1e-6)


def _import_clip() -> Any:
    assert bpy.ops.import_anim.bvh(filepath=str(CLIP)) == {"FINISHED"}
    obj = bpy.context.object
    assert obj.type == "ARMATURE"
    return obj


def test_bvh_clip_rebaked_from_its_own_targets(limber: Any) -> None:
    """Two copies of the CMU clip imported by Blender's BVH importer: 4 limbs found on
    each; the copy's limbs, aimed at the clip's hands and feet (swivel keyed from the clip's
    elbows and knees), bake upper and lower bones within 1° of the clip's wherever the
    elbow or knee bends more than 10°."""
    solve = limber.sub("addon.run.solve")
    clip = _import_clip()
    copy = _import_clip()
    scene = bpy.context.scene
    for obj in (clip, copy):
        assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"FINISHED"}
        assert [lb.name for lb in obj.limber.limbs] == ["arm.L", "arm.R", "leg.L", "leg.R"]
    arm = solve.rig_for(copy, copy.limber.limbs["arm.L"])
    leg = solve.rig_for(copy, copy.limber.limbs["leg.L"])
    assert arm.hinge_source == leg.hinge_source == "ACTION"
    assert np.allclose(arm.hinge_axis, (0.866, 0.0, 0.5), atol=1e-3)
    assert np.allclose(leg.hinge_axis, (-1.0, 0.0, 0.0), atol=1e-3)
    frames = list(range(1, 996, 7))
    for lb in copy.limber.limbs:
        lb.target = clip
        lb.target_bone = lb.end_bone
        lb.goal_type = "POSE"
    for f in frames:
        scene.frame_set(f)
        for lb, src in zip(copy.limber.limbs, clip.limber.limbs, strict=True):
            lb.swivel = solve.snap_swivel(clip, src)
            copy.keyframe_insert(lb.path_from_id("swivel"), frame=f)
    bake = limber.sub("addon.run.bake").bake_object(copy, scene, frames[0], frames[-1], 7)
    assert bake.keys_written > 0 and not bake.skipped
    worst = {"upper": 0.0, "lower": 0.0}
    checked = 0
    for f in frames:
        scene.frame_set(f)
        evaluate()
        for lb in clip.limber.limbs:
            if clip.pose.bones[lb.lower_bone].matrix_basis.to_quaternion().angle < math.radians(10):
                continue
            checked += 1
            for role, bone in (("upper", lb.upper_bone), ("lower", lb.lower_bone)):
                err = rotation_angle(world_pose(clip, bone), world_pose(copy, bone))
                worst[role] = max(worst[role], math.degrees(err))
    assert checked > 100
    print(f"BVH re-bake: {checked} bent limb-frames, worst upper {worst['upper']:.2e}°, "
          f"lower {worst['lower']:.2e}°")
    assert worst["upper"] < 1.0 and worst["lower"] < 1.0, worst


@pytest.mark.parametrize("choice", ["AUTO", "CUSTOM"])
def test_panel_draws_the_hinge_source_and_writes_nothing(
    limber: Any, choice: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """The limb panel on a straight chain bent in the current pose (AUTO: found while
    drawing, which may not write data) and with a custom axis and a switch bone."""
    from types import SimpleNamespace

    from tests.blender.test_ui import assert_layout_clean, real_layout

    ui = limber.sub("addon.ui.panels")
    limber.sub("addon.run.solve").clear_caches()
    obj = armature_from("Straight", STRAIGHT)
    obj.pose.bones["lower.L"].rotation_quaternion = Quaternion((0.0, 0.0, 1.0), 0.5)
    limb = add_limb(obj, "arm.L", BONES, hinge_axis=choice, hinge_custom=(0.0, 1.0, 1.0),
                    switch_bone="root")
    bpy.context.view_layer.objects.active = obj
    with real_layout(obj) as (layout, context):
        ui.LIMBER_PT_main.draw(SimpleNamespace(layout=layout), context)
        ui.draw_limb(layout, context, obj, limb)
    assert_layout_clean(capfd)
    assert "bent pose" in ui.hinge_label(obj, limb) or choice == "CUSTOM"
