"""Full body in real Blender: ``limber.add_body`` finds root, spine, head and limbs on the
Rigify meta-rig and on a generated Rigify rig; pinned feet stay put on the evaluated pose
while a hand target is dragged, in and beyond the arm's reach (the spine bends and the
hips shift); the bake keys only the body's bones and plays back on target; the operators
are undoable and registration runs twice."""

from __future__ import annotations

import importlib
import math
from types import SimpleNamespace
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Vector

from tests.blender.limber_rigs import evaluate, metarig, rotation_angle, world_pose
from tests.blender.test_rigify_generated import generated_rig
from tests.blender.test_ui import assert_layout_clean, real_layout

#: 0.01 mm and 0.01°.
POS_TOL = 1e-5
ROT_TOL = math.radians(0.01)
PINS = {"foot.L", "foot.R", "hand.L", "hand.R", "head", "hips"}


def _rig(kind: str) -> Any:
    return metarig() if kind == "meta" else generated_rig()


def _add_body(obj: Any) -> Any:
    assert bpy.ops.limber.add_body(armature=obj.name) == {"FINISHED"}
    return obj.limber.bodies["body"]


def _target_error(obj: Any, pin: Any) -> tuple[float, float]:
    """Evaluated effector bone against its pin's target: (position, rotation angle)."""
    got = world_pose(obj, pin.tip_bone)
    want = np.array(pin.target.matrix_world, dtype=np.float64)
    return float(np.linalg.norm(got[:3, 3] - want[:3, 3])), rotation_angle(got, want)


def _solve(limber: Any, obj: Any) -> list[Any]:
    sts = limber.sub("addon.run.solve").solve_object(obj)
    evaluate()
    return sts


def _move(empty: Any, p: np.ndarray) -> None:
    m = empty.matrix_world.copy()
    m.translation = Vector(p.tolist())
    empty.matrix_world = m


def _arm(obj: Any, pin: Any) -> tuple[np.ndarray, float]:
    """The shoulder's world position and the arm's length (upper + lower bone)."""
    pbs = obj.pose.bones
    shoulder = world_pose(obj, pin.upper_bone)[:3, 3]
    length = sum((pbs[b].bone.head_local - pbs[c].bone.head_local).length
                 for b, c in ((pin.lower_bone, pin.upper_bone), (pin.tip_bone, pin.lower_bone)))
    return shoulder, float(length)


def test_add_body_on_the_meta_rig_finds_the_body_and_moves_nothing(limber: Any) -> None:
    obj = metarig()
    before = {pb.name: world_pose(obj, pb.name) for pb in obj.pose.bones}
    body = _add_body(obj)
    assert body.root_bone == "spine"
    assert [b.name for b in body.bend_bones] == [f"spine.00{i}" for i in range(1, 7)]
    assert {p.name for p in body.pins} == PINS
    pins = body.pins
    assert (pins["foot.L"].upper_bone, pins["foot.L"].lower_bone, pins["foot.L"].tip_bone) == (
        "thigh.L", "shin.L", "foot.L")
    assert pins["head"].tip_bone == "spine.006" and pins["head"].goal_type == "AIM"
    assert [pins[n].priority for n in ("foot.L", "hand.L", "head", "hips")] == [0, 1, 2, 3]
    for p in pins:
        assert p.target is not None
        if p.kind != "HEAD":
            pos, rot = _target_error(obj, p)
            assert pos <= POS_TOL and rot <= ROT_TOL, p.name
    sts = _solve(limber, obj)
    assert [s.kind for s in sts] == ["body"] and sts[0].solved, sts[0].message
    assert sts[0].reached, sts[0].message
    for name, m in before.items():  # targets at the current pose: nothing moves
        assert np.abs(world_pose(obj, name) - m).max() <= POS_TOL, name
    assert body.status.reached and all(p.status.reached for p in body.pins)


def test_add_body_refuses_an_armature_without_limbs(limber: Any) -> None:
    arm = bpy.data.armatures.new("Bare")
    obj = bpy.data.objects.new("Bare", arm)
    bpy.context.scene.collection.objects.link(obj)
    with pytest.raises(RuntimeError, match="no body found"):
        bpy.ops.limber.add_body(armature=obj.name)
    assert not len(obj.limber.bodies)


@pytest.mark.parametrize("kind", ["meta", "generated"])
def test_pinned_feet_stay_put_while_a_hand_is_dragged(limber: Any, kind: str) -> None:
    obj = _rig(kind)
    body = _add_body(obj)
    if kind == "generated":
        assert body.root_bone == "torso"
        assert body.pins["hand.L"].tip_bone == "hand_fk.L"
        assert obj.pose.bones["upper_arm_parent.L"]["IK_FK"] == 1.0
    pins = body.pins
    hand = pins["hand.L"]
    hand.goal_type = "POSITION"
    shoulder, length = _arm(obj, hand)
    start = world_pose(obj, hand.tip_bone)[:3, 3]
    ahead = np.array(obj.matrix_world.to_3x3() @ Vector((0.0, -1.0, -0.4))).ravel()
    ahead /= np.linalg.norm(ahead)
    path = [start + (0.0, -0.1, 0.05), start + (-0.15, -0.25, -0.2),
            shoulder + ahead * length * 1.15, shoulder + ahead * length * 1.35]
    root0 = world_pose(obj, body.root_bone)
    for i, p in enumerate(path):
        _move(hand.target, np.asarray(p))
        sts = _solve(limber, obj)
        st = sts[0]
        assert st.solved, st.message
        for foot in ("foot.L", "foot.R"):
            pos, rot = _target_error(obj, pins[foot])
            assert pos <= POS_TOL and rot <= ROT_TOL, (kind, i, foot, pos, rot)
            assert pins[foot].status.reached, pins[foot].status.message
        got = world_pose(obj, hand.tip_bone)[:3, 3]
        err = float(np.linalg.norm(got - p))
        assert abs(err - hand.status.position_error) <= 1e-6
        if i < 2:
            assert err <= POS_TOL, (kind, i, err)
        else:  # beyond the arm's reach from where the shoulder was: the body leans in
            assert err < float(np.linalg.norm(p - shoulder)) - length - 0.02, (kind, i, err)
    root = world_pose(obj, body.root_bone)
    moved = np.linalg.norm(root[:3, 3] - root0[:3, 3]) > 1e-3 or rotation_angle(root, root0) > 1e-3
    bent = [b.name for b in body.bend_bones
            if rotation_angle(np.array(obj.pose.bones[b.name].matrix_basis), np.eye(4)) > 1e-2]
    assert moved or bent  # the body leaned in: the hips moved or the spine bent


def test_bake_keys_the_body_and_plays_back_on_target(limber: Any) -> None:
    obj = metarig()
    body = _add_body(obj)
    pins = body.pins
    hand = pins["hand.R"]
    hand.goal_type = "POSITION"
    shoulder, length = _arm(obj, hand)
    start = world_pose(obj, hand.tip_bone)[:3, 3]
    far = shoulder + np.array((0.0, -1.0, -0.3)) / np.linalg.norm((0.0, -1.0, -0.3)) * length * 1.2
    for f, p in ((1, start), (8, far)):
        _move(hand.target, p)
        hand.target.keyframe_insert("location", frame=f)
    # a key outside the range on a bone the body drives, and one on a bone it does not
    pb = obj.pose.bones["spine.001"]
    pb.rotation_quaternion = (0.9, 0.1, 0.0, 0.0)
    pb.keyframe_insert("rotation_quaternion", frame=30)
    other = obj.pose.bones["f_index.01.L"]
    other.rotation_quaternion = (0.95, 0.0, 0.0, 0.3)
    other.keyframe_insert("rotation_quaternion", frame=3)
    pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    compat = importlib.import_module(limber.module + ".addon.compat")
    fcurves = compat.assigned_fcurves(obj.animation_data)
    untouched = {(fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points]
                 for fc in fcurves if "f_index" in fc.data_path}
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=1, frame_end=8,
                               disable_limbs=True) == {"FINISHED"}
    assert not body.enabled  # the keys play back as baked
    driven = {body.root_bone, *(b.name for b in body.bend_bones)} | {
        b for p in pins for b in (p.upper_bone, p.lower_bone, p.tip_bone) if b}
    for fc in fcurves:
        bone = fc.data_path.split('"')[1]
        assert bone in driven or (fc.data_path, fc.array_index) in untouched, fc.data_path
        if "spine.001" in fc.data_path:
            assert any(abs(k.co[0] - 30.0) < 1e-6 for k in fc.keyframe_points)
    for key, cos in untouched.items():
        assert [tuple(k.co) for k in fcurves.find(key[0], index=key[1]).keyframe_points] == cos
    assert fcurves.find(f'pose.bones["{body.root_bone}"].location', index=0) is not None
    scene = bpy.context.scene
    errs = []
    for f in range(1, 9):
        scene.frame_set(f)
        evaluate()
        for foot in ("foot.L", "foot.R"):
            pos, rot = _target_error(obj, pins[foot])
            assert pos <= POS_TOL and rot <= ROT_TOL, (f, foot, pos, rot)
        errs.append(_target_error(obj, hand)[0])
    assert errs[0] <= POS_TOL
    p8 = np.array(hand.target.matrix_world.translation)
    assert errs[-1] < float(np.linalg.norm(p8 - shoulder)) - length - 0.02
    assert pins["foot.L"].status.reached and pins["foot.R"].status.reached


def test_remove_body_restores_the_switches(limber: Any) -> None:
    rig = generated_rig()
    before = rig.pose.bones["thigh_parent.L"]["IK_FK"]
    _add_body(rig)
    assert rig.pose.bones["thigh_parent.L"]["IK_FK"] == 1.0
    assert bpy.ops.limber.bake(armature=rig.name, frame_start=1, frame_end=2) == {"FINISHED"}
    compat = importlib.import_module(limber.module + ".addon.compat")
    path = 'pose.bones["thigh_parent.L"]["IK_FK"]'
    fc = compat.assigned_fcurves(rig.animation_data).find(path)
    assert fc is not None and all(k.co[1] == 1.0 for k in fc.keyframe_points)  # keyed at FK
    assert bpy.ops.limber.remove_body(armature=rig.name) == {"FINISHED"}
    assert rig.pose.bones["thigh_parent.L"]["IK_FK"] == before
    assert compat.assigned_fcurves(rig.animation_data).find(path) is None  # Limber's own
    assert not len(rig.limber.bodies)
    ui = limber.sub("addon.ui.body")
    for cls in ui.CLASSES[:2]:
        assert {"REGISTER", "UNDO"} <= set(cls.bl_options)
        rna = getattr(bpy.ops.limber, cls.bl_idname.split(".")[1]).get_rna_type()
        prop = rna.properties["armature"]
        assert prop.is_hidden and prop.is_skip_save
    with pytest.raises(RuntimeError, match="no body at index"):
        bpy.ops.limber.remove_body(armature=rig.name, index=3)


def test_body_panel_draws_against_a_real_layout(
    limber: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    obj = metarig()
    body = _add_body(obj)
    ui = limber.sub("addon.ui.body")
    with real_layout(obj) as (layout, context):  # before any solve, then after one
        assert ui.LIMBER_PT_body.poll(context)
        ui.LIMBER_PT_body.draw(SimpleNamespace(layout=layout), context)
        _solve(limber, obj)
        ui.LIMBER_PT_body.draw(SimpleNamespace(layout=layout), context)
    assert_layout_clean(capfd)
    assert body.pins["head"].status.message == "ok"


def test_registration_runs_twice_and_keeps_the_body(limber: Any) -> None:
    obj = metarig()
    _add_body(obj)
    _solve(limber, obj)
    package = importlib.import_module(limber.module)
    addon = limber.sub("addon")
    ui = limber.sub("addon.ui.body")
    for _ in range(2):
        package.unregister()
        assert not any(getattr(c, "is_registered", False) for c in ui.CLASSES)
        package.register()
        assert all(getattr(c, "is_registered", False) for c in addon.CLASSES)
    assert len(obj.limber.bodies) == 1  # the settings survive re-registration
    ui = limber.sub("addon.ui.body")
    status = limber.sub("addon.run.body").BODY_STATUS
    assert not status  # caches are cleared with the registration
    st = limber.sub("addon.run.solve").solve_object(obj)[0]
    lines = limber.sub("addon.ui.panels").status_lines(st)
    assert lines[0][1] == "CHECKMARK", lines
    assert ui.forward_axis(obj, "spine.006")[0] in ("Z", "NEG_Z", "Y", "NEG_Y")


def test_live_playback_solves_the_body_each_frame(limber: Any) -> None:
    obj = metarig()
    body = _add_body(obj)
    hand = body.pins["hand.L"]
    start = np.array(hand.target.matrix_world.translation)
    _move(hand.target, start + (0.0, -0.2, 0.0))
    hand.target.keyframe_insert("location", frame=2)
    _move(hand.target, start)
    hand.target.keyframe_insert("location", frame=1)
    scene = bpy.context.scene
    scene.limber.live_playback = True
    try:
        scene.frame_set(2)
        evaluate()
    finally:
        scene.limber.live_playback = False
    pos, _ = _target_error(obj, hand)
    assert pos <= POS_TOL
    assert body.status.frame == 2 and body.pins["foot.L"].status.reached


def test_matrix_world_of_the_armature_is_honoured(limber: Any) -> None:
    obj = metarig(location=(1.0, 2.0, 0.5), rotation=(0.0, 0.0, 0.7), scale=1.5)
    body = _add_body(obj)
    hand = body.pins["hand.L"]
    hand.target.matrix_world = Matrix.Translation(
        hand.target.matrix_world.translation + Vector((0.05, -0.2, 0.1))) @ (
        hand.target.matrix_world.to_quaternion().to_matrix().to_4x4())
    _solve(limber, obj)
    for name in ("foot.L", "foot.R", "hand.L"):
        pos, rot = _target_error(obj, body.pins[name])
        assert pos <= 1.5 * POS_TOL and rot <= ROT_TOL, (name, pos, rot)


def test_body_benchmark_quick_run_has_every_row(limber: Any, tmp_path: Any) -> None:
    """Smoke test of benchmarks/body_blender.py: rows and targets exist (timings are never
    asserted)."""
    from benchmarks import body_blender

    suite = body_blender.run(True, tmp_path, log=lambda _msg: None)
    text = suite.markdown
    for row in ("Limber per frame", "Limber core solve_body per frame",
                "Blender's IK constraints per frame", "Limber bake", "Blender bake",
                "bake speed ratio", "worst foot position error"):
        assert f"| {row}" in text, row
    assert len(suite.targets) == 2 and all(t.detail for t in suite.targets)
