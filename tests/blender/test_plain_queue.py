"""A live solve queues its plain limbs and solves and writes them together
(addon/run/plain.py ``solve_plain`` / ``flush``): the result is the one of solving each
limb in turn, bit for bit, around limbs of the general road, limbs that hang below a
queued one (a depsgraph update between), limbs that share bones, and a queued limb whose
solve fails (it takes the general road, the ones after it are solved again)."""

from __future__ import annotations

from typing import Any

import bpy
import pytest

from tests.blender.limber_rigs import add_empty, add_limb
from tests.blender.test_plain_limbs import FIELDS, _rig

#: Four plain limbs (targets keyed on a loop), in this order.
LIMBS = {"arm.L": "POSE", "arm.R": "POSE", "leg.L": "POSITION", "leg.R": "POSE"}


def _queued_and_general(limber: Any, obj: Any, monkeypatch: pytest.MonkeyPatch,
                        frames: range) -> list[tuple[list[Any], list[Any]]]:
    """Per frame, from the same pose: the statuses of a live solve, and of the same solve
    on the general road only (each limb solved and written in turn; the plain road gives
    its values bit for bit: tests/blender/test_plain_limbs.py); the stored pose values
    and statuses after both are the same, bit for bit."""
    solve, live = limber.sub("addon.run.solve"), limber.sub("addon.run.live")
    plain = limber.sub("addon.run.plain")
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(f)
        before = live.capture_pose(obj)
        queued = solve.solve_object(obj)
        after = live.capture_pose(obj)
        stored = [tuple(lb.status.values()) for lb in obj.limber.limbs]
        live.restore_pose(obj, before)
        with monkeypatch.context() as m:
            m.setattr(plain, "solve_plain", lambda *args: None)
            general = solve.solve_object(obj)
        assert live.capture_pose(obj) == after
        assert [tuple(lb.status.values()) for lb in obj.limber.limbs] == stored
        out.append((queued, general))
    return out


def _same(queued: list[Any], single: list[Any]) -> None:
    assert [s.limb for s in queued] == [s.limb for s in single]
    for a, b in zip(queued, single, strict=True):
        for name in FIELDS:
            x, y = getattr(a, name), getattr(b, name)
            assert x == y or (x != x and y != y), (a.limb, name)  # (NaN: no swivel)


def test_queued_limbs_around_a_limb_of_the_general_road(limber: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    obj = _rig(LIMBS)
    obj.limber.limbs["arm.R"].solver = "DLS"  # between plain limbs
    for queued, single in _queued_and_general(limber, obj, monkeypatch, range(1, 5)):
        assert [s.solved for s in queued] == [True] * 4
        _same(queued, single)


def test_a_limb_below_a_queued_limb_is_solved_after_it_is_written(
        limber: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A finger limb hangs below the queued arm: the arm is written and the depsgraph
    updated before the finger's frame is read."""
    obj = _rig({"arm.L": "POSE"})
    add_limb(obj, "finger.L", ("f_index.01.L", "f_index.02.L", "f_index.03.L"),
             target=add_empty("T.finger"), goal_type="POSITION", hinge_axis="X")
    solve = limber.sub("addon.run.solve")
    below = solve.hangs_below
    calls: list[bool] = []
    monkeypatch.setattr(solve, "hangs_below",
                        lambda *args: calls.append(below(*args)) or calls[-1])
    for queued, single in _queued_and_general(limber, obj, monkeypatch, range(1, 4)):
        assert all(s.solved for s in queued)
        _same(queued, single)
    assert calls.count(True) == 2 * 3  # the arm written and updated before the finger


def test_limbs_that_share_bones(limber: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second limb on the arm's bones (another target) reads the pose the first wrote."""
    obj = _rig({"arm.L": "POSE", "leg.L": "POSE"})
    twin = add_limb(obj, "arm.L.twin", ("upper_arm.L", "forearm.L", "hand.L"),
                    target=obj.limber.limbs["arm.L"].target, goal_type="POSITION")
    assert twin.enabled
    for queued, single in _queued_and_general(limber, obj, monkeypatch, range(1, 4)):
        assert [s.limb for s in queued] == ["arm.L", "leg.L", "arm.L.twin"]
        _same(queued, single)


def test_a_queued_limb_whose_solve_fails_takes_the_general_road(
        limber: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A degenerate target (no Y axis) fails the second limb's goal after its checks and
    reads: the first limb is written, the second takes the general road (which names the
    problem), the ones after it are solved again."""
    obj = _rig(LIMBS)
    obj.limber.limbs["arm.R"].target.scale = (1.0, 0.0, 1.0)
    plain = limber.sub("addon.run.plain")
    flush = plain.flush
    cuts: list[bool] = []
    monkeypatch.setattr(plain, "flush", lambda *args: (r := flush(*args), cuts.append(r[1]))[0])
    for queued, single in _queued_and_general(limber, obj, monkeypatch, range(1, 4)):
        _same(queued, single)
        assert [s.solved for s in queued] == [True, False, True, True]
        assert queued[1].message
    assert cuts.count(True) == 3  # once a frame, in the queued solve
