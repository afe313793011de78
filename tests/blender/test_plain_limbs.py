"""Plain analytic limbs (addon/run/plain.py) take a shorter road through the same stages:
the same rotations, bit for bit, and the same statuses as the general road; every limb
that is not plain on a frame goes the general road."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
import pytest

from tests.blender.limber_rigs import RIGIFY_LIMBS, add_empty, add_limb, metarig, world_pose

FIELDS = ("solved", "message", "reachable", "within_limits", "position_error",
          "orientation_error", "swivel", "feasible_swivel", "reached", "proven", "measured",
          "notes", "written", "frame")


def _rig(goal_types: dict[str, str]) -> Any:
    """The meta-rig with the given limbs, each target keyed on a small reachable loop."""
    obj = metarig()
    for i, (name, kind) in enumerate(goal_types.items()):
        bones = RIGIFY_LIMBS[name]
        t = add_empty(f"T.{name}")
        rest = world_pose(obj, bones[2])
        centre = rest[:3, 3] + 0.25 * (world_pose(obj, bones[0])[:3, 3] - rest[:3, 3])
        for f in range(-8, 30, 8):
            a = 2 * math.pi * f / 32 + i
            t.location = centre + 0.06 * np.array((math.cos(a), 0.4, math.sin(a)))
            t.rotation_euler = (0.3 * math.sin(a), 0.2, 0.3 * math.cos(a))
            t.keyframe_insert("location", frame=f)
            t.keyframe_insert("rotation_euler", frame=f)
        add_limb(obj, name, bones, target=t, goal_type=kind)
    return obj


class _Counting:
    """Wraps ``plain.solve_plain``: counts the limbs it solved and the ones it left to the
    general road; ``off`` makes it leave every limb to the general road."""

    def __init__(self, plain: Any) -> None:
        self.plain, self.inner = plain, plain.solve_plain
        self.solved = self.left = 0
        self.off = False

    def __call__(self, *args: Any) -> Any:
        st = None if self.off else self.inner(*args)
        if st is None:
            self.left += 1
        else:
            self.solved += 1
        return st


@pytest.fixture
def counting(limber: Any, monkeypatch: pytest.MonkeyPatch) -> _Counting:
    plain = limber.sub("addon.run.plain")
    c = _Counting(plain)
    monkeypatch.setattr(plain, "solve_plain", c)
    return c


def _both_roads(limber: Any, obj: Any, counting: _Counting, frames: range,
                exact: bool = True) -> list[tuple[list[Any], list[Any]]]:
    """Per frame: the statuses of the plain road and of the general road, each solved from
    the same pose (captured before, restored between); ``exact``: the same pose after."""
    solve, live = limber.sub("addon.run.solve"), limber.sub("addon.run.live")
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(f)
        before = live.capture_pose(obj)
        counting.off = False
        fast = solve.solve_object(obj)
        after = live.capture_pose(obj)
        live.restore_pose(obj, before)
        counting.off = True
        slow = solve.solve_object(obj)
        if exact:
            assert live.capture_pose(obj) == after  # the same stored values, bit for bit
        out.append((fast, slow))
    return out


def test_plain_limbs_match_the_general_road(limber: Any, counting: _Counting) -> None:
    obj = _rig({"arm.L": "POSE", "arm.R": "POSE", "leg.L": "POSITION", "leg.R": "POSITION"})
    limbs = obj.limber.limbs
    limbs["arm.R"].swivel_mode = "POLE"  # no pole object: a note, still plain
    limbs["arm.L"].swivel = 0.4
    limbs["leg.R"].swivel_mode = "LIMITS_MIDPOINT"
    obj.pose.bones["spine.003"].scale = (1.2, 1.2, 1.2)  # a scaled parent chain
    for fast, slow in _both_roads(limber, obj, counting, range(1, 9)):
        assert len(fast) == len(slow) == 4
        for a, b in zip(fast, slow, strict=True):
            for name in FIELDS:
                assert getattr(a, name) == getattr(b, name), (a.limb, name)
            assert a.solved and a.reached and a.measured == "model"
    assert counting.solved == 4 * 8
    assert "no pole object" in obj.limber.limbs["arm.R"].status.message


@pytest.mark.parametrize("mode", ["QUATERNION", "YXZ", "AXIS_ANGLE"])
def test_plain_pose_limbs_off_the_float_solve_match_the_general_road(
        limber: Any, counting: _Counting, mode: str) -> None:
    """A pole object (the elbow target) and shoulder IK limits (beyond the float solve:
    the plain road falls back to ``core.solve_limb``), bones in each rotation mode: still
    the general road's values."""
    obj = _rig({"arm.L": "POSE", "arm.R": "POSE"})
    for name in ("upper_arm.L", "forearm.L", "hand.L", "upper_arm.R", "forearm.R", "hand.R"):
        obj.pose.bones[name].rotation_mode = mode
    limbs = obj.limber.limbs
    limbs["arm.L"].swivel_mode = "POLE"
    limbs["arm.L"].pole = add_empty("P", world_pose(obj, "forearm.L"))
    up = obj.pose.bones["upper_arm.R"]
    up.use_ik_limit_x, up.ik_min_x, up.ik_max_x = True, -1.0, 1.0
    for fast, slow in _both_roads(limber, obj, counting, range(1, 9)):
        for a, b in zip(fast, slow, strict=True):
            for name in FIELDS:
                assert getattr(a, name) == getattr(b, name), (a.limb, name)
            assert a.solved and a.measured == "model"
    assert counting.solved == 2 * 8


@pytest.mark.parametrize("change", ["constraint", "stretch", "rest", "driver", "pole",
                                    "partial", "numeric", "shear"])
def test_limbs_that_are_not_plain_take_the_general_road(limber: Any, counting: _Counting,
                                                        change: str) -> None:
    obj = _rig({"arm.L": "POSE"})
    lb = obj.limber.limbs["arm.L"]
    if change == "constraint":
        obj.pose.bones["forearm.L"].constraints.new("COPY_ROTATION").target = add_empty("C")
    elif change == "stretch":
        obj.pose.bones["upper_arm.L"].scale = (1.0, 1.1, 1.0)
    elif change == "rest":
        obj.data.pose_position = "REST"
    elif change == "driver":
        obj.pose.bones["hand.L"].driver_add("rotation_quaternion", 1)
    elif change == "pole":
        lb.swivel_mode, lb.pole = "POLE", add_empty("P", world_pose(obj, "forearm.L"))
    elif change == "shear":  # a non-uniformly scaled parent chain: a sheared frame
        obj.pose.bones["spine.003"].scale = (1.0, 1.3, 1.0)
    elif change == "partial":
        lb.goal_type = "PARTIAL"
    else:
        lb.solver = "DLS"
    # (the general road starts an unproven limb from its last verification's correction:
    # the second solve of a frame may differ in the last bits)
    (fast, slow), = _both_roads(limber, obj, counting, range(3, 4), exact=False)
    # on frame 3 the pole-following limb is plain too: its read takes the pole's position
    assert counting.solved == (1 if change == "pole" else 0)
    for name in ("solved", "reached", "proven", "measured", "message"):
        assert getattr(fast[0], name) == getattr(slow[0], name), name


@pytest.mark.parametrize("kind", ["POSE", "POSITION"])
def test_model_errors_of_a_one_frame_solve_are_verify_model_errors(limber: Any,
                                                                   kind: str) -> None:
    """fill_analytic's float shortcut for a similarity frame gives verify.model_errors'
    values exactly (a scaled parent chain: the errors are scaled)."""
    obj = _rig({"arm.L": kind})
    obj.pose.bones["spine.003"].scale = (1.3, 1.3, 1.3)
    obj.limber.limbs["arm.L"].target.delta_location = (0.8, 0.0, 0.0)  # out of reach
    bpy.context.scene.frame_set(2)
    solve = limber.sub("addon.run.solve")
    verify = limber.sub("addon.bridge.verify")
    core = limber.sub("core")
    dg = bpy.context.evaluated_depsgraph_get()
    st = solve.solve_limb_settings(obj, obj.evaluated_get(dg), obj.limber.limbs["arm.L"], dg)
    req = st.pending[0]
    assert req.frame_scale is not None and abs(float(req.frame_scale[0]) - 1.0) > 0.1
    pos, ori = verify.model_errors(req, core.solve_limb(req.limb, req.goal, **req.kwargs))
    assert (st.position_error, st.orientation_error) == (float(pos[0]), float(ori[0]))
    assert st.position_error > 0.1 and not st.reached


def test_rig_cache_follows_ik_limit_edits(limber: Any) -> None:
    """The cached rig is rebuilt when an IK limit that shapes it changes (a limit switched
    on or off, a limited axis' range); a range of an axis that is not limited, which the
    rig does not read, keeps it."""
    solve = limber.sub("addon.run.solve")
    obj = _rig({"arm.L": "POSE"})
    lb = obj.limber.limbs["arm.L"]
    up = obj.pose.bones["upper_arm.L"]
    first = solve.rig_for(obj, lb)
    assert first.family_limits[0] is None
    up.ik_min_x = -0.5  # not limited: not read
    assert solve.rig_for(obj, lb) is first
    up.use_ik_limit_x = True
    limited = solve.rig_for(obj, lb)
    assert limited is not first and limited.family_limits[0] is not None
    assert limited.family_limits[0].range_start[0] == pytest.approx(-0.5)
    up.ik_min_x = -0.25
    narrower = solve.rig_for(obj, lb)
    assert narrower is not limited
    assert narrower.family_limits[0].range_start[0] == pytest.approx(-0.25)
    up.use_ik_limit_x = False
    assert solve.rig_for(obj, lb).family_limits[0] is None
