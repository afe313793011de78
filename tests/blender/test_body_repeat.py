"""Full body beyond reach, solved again with nothing changed (live solving runs on every
depsgraph change): the core's own answer is a fixed point (Mixamo rig, the add-on's
memory of its last answer cleared before each solve), and the add-on keeps its last
answer where the targets, the pose and every pin's evaluated measure are as it left them
(the game rig, where a solve from the float32 pose still moves the hips' flat valley),
but solves again as soon as any of them changes."""

from __future__ import annotations

from typing import Any

import numpy as np
from mathutils import Quaternion

from tests.blender import test_body_rigs as rigs
from tests.blender.limber_rigs import evaluate, rotation_angle, world_pose


def _beyond_reach(kind: str, reach: float = 1.3) -> tuple[Any, Any]:
    """The rig with a body whose left hand's target is ``reach`` arm lengths from the
    shoulder."""
    obj = rigs.RIGS[kind][0]()
    body = rigs._add_body(obj)
    hand = body.pins["hand.L"]
    shoulder, length = rigs._arm(obj, hand)
    start = world_pose(obj, hand.tip_bone)[:3, 3]
    inward = (start - shoulder) / np.linalg.norm(start - shoulder)
    rigs._move(hand.target, shoulder + inward * length * reach)
    return obj, body


def _moved(obj: Any, before: dict[str, np.ndarray]) -> tuple[float, float]:
    """The largest change of any bone's world position and rotation since ``before``."""
    worst = (0.0, 0.0)
    for name, m in before.items():
        got = world_pose(obj, name)
        worst = (max(worst[0], float(np.linalg.norm(got[:3, 3] - m[:3, 3]))),
                 max(worst[1], rotation_angle(got, m)))
    return worst


def _pose(obj: Any) -> dict[str, np.ndarray]:
    return {pb.name: world_pose(obj, pb.name) for pb in obj.pose.bones}


def test_the_core_answer_is_a_fixed_point_on_the_mixamo_rig(limber: Any) -> None:
    body_run = limber.sub("addon.run.body")
    obj, body = _beyond_reach("mixamo")
    st = rigs._solve(limber, obj)
    assert not st.reached  # the hips yield
    before = _pose(obj)
    for _ in range(2):
        body_run._ANSWERS.clear()  # a full solve from the pose as Blender stores it
        rigs._solve(limber, obj)
    pos, rot = _moved(obj, before)
    assert pos <= rigs.POS_TOL and rot <= rigs.ROT_TOL, (pos, rot)


def test_the_last_answer_is_kept_until_something_changes(limber: Any) -> None:
    body_run = limber.sub("addon.run.body")
    calls: list[int] = []
    solve_body = body_run.solve_body

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return solve_body(*args, **kwargs)

    body_run.solve_body = counted
    try:
        obj, body = _beyond_reach("game")
        first = rigs._solve(limber, obj)
        assert not first.reached and len(calls) == 1
        before = _pose(obj)
        again = rigs._solve(limber, obj)  # nothing changed: not solved, nothing moves
        assert len(calls) == 1 and again.message == first.message
        assert _moved(obj, before) == (0.0, 0.0)
        rigs.assert_statuses_true(obj, body, "kept")
        # the hand's target moved 1 cm: solved again, the body follows
        hand = body.pins["hand.L"]
        p = np.array(hand.target.matrix_world.translation) + np.array((0.0, 0.0, 0.01))
        rigs._move(hand.target, p)
        rigs._solve(limber, obj)
        assert len(calls) == 2 and _moved(obj, before)[0] > 1e-3
        rigs.assert_statuses_true(obj, body, "moved target")
        # a bone of the body turned by hand: solved again from there
        rigs._solve(limber, obj)
        assert len(calls) == 2
        spine = obj.pose.bones[body.bend_bones[0].name]
        spine.rotation_mode = "QUATERNION"
        spine.rotation_quaternion = Quaternion((1.0, 0.0, 0.0), 0.2) @ spine.rotation_quaternion
        evaluate()
        rigs._solve(limber, obj)
        assert len(calls) == 3
        rigs.assert_statuses_true(obj, body, "turned spine")
    finally:
        body_run.solve_body = solve_body
