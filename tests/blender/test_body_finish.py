"""A body's limbs finished from the pose Blender evaluated: where Blender's pose differs
from the body's model (here a clavicle turned by a constraint the body does not model),
the limb whose pin misses is solved again from its evaluated shoulder frame with the
swivel of the pose the body wrote, and lands on its target; a straight arm (the elbow on
the shoulder–wrist axis, where the elbow gives no direction) keeps its turn about its own
axis; pins the body's write already meets are not solved again; a limb the body left
at the end of its reach is finished without turning about itself."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Matrix, Vector

from tests.blender import test_body_rigs as rigs
from tests.blender.limber_rigs import evaluate, metarig, normalized, rotation_angle, world_pose
from tests.blender.test_body_repeat import _beyond_reach
from tests.blender.test_body_rigs import mixamo_rig

#: 0.01 mm and 0.01°.
POS_TOL = 1e-5
ROT_TOL = math.radians(0.01)


def _body(obj: Any) -> Any:
    assert bpy.ops.limber.add_body(armature=obj.name) == {"FINISHED"}
    return obj.limber.bodies["body"]


def _elbow_off_axis(obj: Any, pin: Any) -> float:
    s, e, w = (world_pose(obj, b)[:3, 3] for b in (pin.upper_bone, pin.lower_bone,
                                                   pin.tip_bone))
    axis = (w - s) / np.linalg.norm(w - s)
    return float(np.linalg.norm(np.cross(e - s, axis)))


def test_a_straight_arm_finished_keeps_its_turn_about_itself(limber: Any) -> None:
    """The Mixamo-named rig's T-pose arms, their targets on the hands (a hair beyond full
    extension in float32): finished with the swivel of the pose, nothing turns (finished
    toward the elbow's position, on the axis, the upper arm turned 79° about itself)."""
    obj = mixamo_rig()
    body = _body(obj)
    run_body = limber.sub("addon.run.body")
    rig, core_body = run_body.body_rig_for(obj, body)
    q = limber.sub("addon.bridge.rig").read_chain_q(obj, rig.chain)
    swivels = run_body.start_swivels(core_body, q)
    for name in ("hand.L", "hand.R"):
        pin = body.pins[name]
        assert _elbow_off_axis(obj, pin) < 1e-9  # straight
        bones = (pin.upper_bone, pin.lower_bone, pin.tip_bone)
        before = {b: world_pose(obj, b) for b in bones}
        dg = bpy.context.evaluated_depsgraph_get()
        _, written = run_body._finish_limb(obj, obj.evaluated_get(dg), rig.limbs[name], pin,
                                           dg, swivel=swivels[name])
        assert set(written) >= {pin.upper_bone, pin.lower_bone}
        evaluate()
        for bone, m in before.items():
            after = world_pose(obj, bone)
            assert np.linalg.norm(after[:3, 3] - m[:3, 3]) <= POS_TOL, bone
            assert rotation_angle(after, m) <= ROT_TOL, (bone, rotation_angle(after, m))


def _turn_clavicle(obj: Any, bone: str, degrees: float) -> None:
    """A mismatch the body's model does not know: a Copy Rotation constraint (added in
    local space: an Empty turned about Z) on the clavicle, a bone the body holds."""
    empty = bpy.data.objects.new(f"turn {bone}", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.rotation_euler = (0.0, 0.0, math.radians(degrees))
    c = obj.pose.bones[bone].constraints.new("COPY_ROTATION")
    c.target, c.owner_space, c.target_space, c.mix_mode = empty, "LOCAL", "WORLD", "ADD"
    evaluate()


def test_a_pin_the_model_misses_is_finished_from_the_evaluated_pose(limber: Any) -> None:
    obj = metarig()
    body = _body(obj)
    hand = body.pins["hand.L"]
    solve = limber.sub("addon.run.solve")
    target = np.array(hand.target.matrix_world)
    shoulder = hand.upper_bone
    parent = obj.pose.bones[shoulder].parent.name
    _turn_clavicle(obj, parent, 4.0)
    # the target back at the hand's pose before the clavicle turned, a little nearer
    m = Matrix(target.tolist())
    s = world_pose(obj, shoulder)[:3, 3]
    m.translation = Vector((s + 0.97 * (target[:3, 3] - s)).tolist())
    hand.target.matrix_world = m
    written: list[set[str]] = []
    run_body = limber.sub("addon.run.body")
    finish = run_body._finish_limb

    def spy(*a: Any, **k: Any) -> Any:
        out = finish(*a, **k)
        written.append(set(out[1]))
        return out

    run_body._finish_limb = spy
    try:
        st = solve.solve_object(obj)[0]
    finally:
        run_body._finish_limb = finish
    evaluate()
    assert st.solved and st.reached, st.message
    assert written and all(w <= {hand.upper_bone, hand.lower_bone, hand.tip_bone}
                           for w in written)  # only the left arm was finished
    got = world_pose(obj, hand.tip_bone)
    want = np.array(hand.target.matrix_world)
    assert np.linalg.norm(got[:3, 3] - want[:3, 3]) <= POS_TOL
    for foot in ("foot.L", "foot.R"):
        assert body.pins[foot].status.reached, body.pins[foot].status.message


def test_pins_the_write_meets_are_not_solved_again(limber: Any) -> None:
    obj = metarig()
    hand = _body(obj).pins["hand.L"]
    solve = limber.sub("addon.run.solve")
    run_body = limber.sub("addon.run.body")
    calls: list[Any] = []
    finish, head = run_body._finish_limb, run_body._finish_head
    run_body._finish_limb = lambda *a, **k: calls.append(a) or finish(*a, **k)
    run_body._finish_head = lambda *a, **k: calls.append(a) or head(*a, **k)
    try:
        s = world_pose(obj, hand.upper_bone)[:3, 3]
        for f in (0.95, 0.9, 0.8):
            m = hand.target.matrix_world.copy()
            m.translation = Vector((s + f * (np.array(m.translation) - s)).tolist())
            hand.target.matrix_world = m
            st = solve.solve_object(obj)[0]
            assert st.solved and st.reached, st.message
    finally:
        run_body._finish_limb, run_body._finish_head = finish, head
    assert calls == []
    evaluate()
    got = world_pose(obj, hand.tip_bone)[:3, 3]
    assert np.linalg.norm(got - np.array(hand.target.matrix_world.translation)) <= POS_TOL


def _twist(before: np.ndarray, after: np.ndarray) -> float:
    """The angle (rad) a bone turned about its own (Y) axis from ``before`` to ``after``
    (world matrices): the twist part of the relative rotation."""
    rel = normalized(after)[:3, :3] @ normalized(before)[:3, :3].T
    q = Matrix(rel.tolist()).to_quaternion()
    axis = normalized(before)[:3, 1]
    return abs(2.0 * math.atan2(float(np.dot(axis, np.array(q[1:]))), abs(q[0])))


@pytest.mark.parametrize("reach", [0.8, 1.3])
@pytest.mark.parametrize("kind", list(rigs.RIGS))
def test_the_finish_does_not_turn_a_stretched_limb_about_itself(limber: Any, kind: str,
                                                                 reach: float) -> None:
    """The left hand's target at ``reach`` arm lengths (feet pinned, hand at priority 1,
    head aim, hips lowest): every limb the finish solves again keeps its upper and lower
    bones' turn about their own axes as the body wrote them. Beyond reach on the game rig
    the body leaves the arm stretched (its elbow a few µm off the axis, where the body's
    swivel names the side it bends to); the finish solves it from the evaluated shoulder,
    the goal a hair beyond reach, fully straight, where the elbow's residual offset from
    the A-pose bone data (nanometres, 90° off the bend) named the swivel: the arm turned
    90° about itself."""
    obj, body = _beyond_reach(kind, reach)
    run_body = limber.sub("addon.run.body")
    finish = run_body._finish
    written: dict[str, dict[str, np.ndarray]] = {}

    def spy(obj_: Any, rig: Any, swivels: Any, pins: Any, st: Any, dg: Any) -> Any:
        for p in pins:  # the body's pose as written and evaluated, before the finish
            if p.kind in ("HAND", "FOOT"):
                written[p.name] = {b: world_pose(obj, b) for b in (p.upper_bone, p.lower_bone)}
        return finish(obj_, rig, swivels, pins, st, dg)

    run_body._finish = spy
    try:
        st = rigs._solve(limber, obj)
    finally:
        run_body._finish = finish
    assert st.solved, st.message
    for name, bones in written.items():
        for bone, m in bones.items():
            twist = _twist(m, world_pose(obj, bone))
            assert twist <= ROT_TOL, (kind, reach, name, bone, math.degrees(twist))
    rigs.assert_statuses_true(obj, body, (kind, reach))


def test_solving_again_does_not_turn_a_stretched_arm_about_itself(limber: Any) -> None:
    """The game rig, left hand at 1.3 arm lengths, solved, then solved again from the
    pose as Blender stores it (the add-on's memory of its last answer cleared: a full
    core solve). The hips' level moves the trunk by millimetres (a flat valley), and with
    it the axis of each stretched arm; the arms keep the side they bend to (before: the
    right arm, its elbow 40 µm off its axis, took the φ nearest that point on the moved
    axis and turned 180° about itself)."""
    obj, body = _beyond_reach("game")
    rigs._solve(limber, obj)
    arms = [b for p in ("hand.L", "hand.R")
            for b in (body.pins[p].upper_bone, body.pins[p].lower_bone)]
    before = {b: world_pose(obj, b) for b in arms}
    limber.sub("addon.run.body")._ANSWERS.clear()
    st = rigs._solve(limber, obj)
    assert st.solved, st.message
    for bone, m in before.items():
        twist = _twist(m, world_pose(obj, bone))
        assert twist <= math.radians(0.1), (bone, math.degrees(twist))
    rigs.assert_statuses_true(obj, body, "again")
