"""Issue 4's public names are a contract: the skeleton model, the goals, ``solve`` and its
result are exported from ``core`` with the signatures and defaults the issue gives."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np

import core


def _fields(cls):
    return [f.name for f in dataclasses.fields(cls) if f.init]


def test_skeleton_model_is_exported_with_the_issue_signatures():
    for name in ("Joint", "Ball", "Hinge", "Fixed", "Skeleton", "solve", "Method"):
        assert name in core.__all__, name
    assert _fields(core.Joint) == ["name", "parent", "offset", "dofs"]
    assert _fields(core.Ball) == ["order", "lower", "upper", "locked"]
    b = core.Ball()
    assert b.order == "XYZ" and b.locked == (False, False, False)
    assert np.all(np.isinf(b.lower)) and np.all(np.isinf(b.upper))  # None → free
    assert _fields(core.Hinge) == ["axis", "lower", "upper"]
    assert _fields(core.Fixed) == []
    assert _fields(core.Skeleton) == ["joints"]
    sk = core.Skeleton([core.Joint("root", -1, np.eye(4), core.Hinge((0, 0, 1)))])
    assert sk.n_dofs == 1 and callable(sk.forward) and callable(sk.jacobian)
    assert list(inspect.signature(core.Skeleton.jacobian).parameters)[:3] == [
        "self",
        "q",
        "goals",
    ]


def test_goals_carry_joint_weight_and_priority():
    goals = {
        core.PositionGoal: ["position", "joint", "point"],
        core.OrientationGoal: ["rotation", "joint"],
        core.PoseGoal: ["position", "rotation", "joint"],
        core.PartialOrientationGoal: ["position", "axis", "direction", "joint"],
        core.DirectionGoal: ["axis", "direction", "joint"],
        core.AimGoal: ["target", "axis", "origin", "joint"],
    }
    for cls, head in goals.items():
        names = _fields(cls)
        assert names[: len(head)] == head, cls.__name__
        assert "weight" in names and "priority" in names
    g = core.PositionGoal((0.0, 0.0, 1.0), joint="root")
    assert g.weight == 1.0 and g.priority == 0
    np.testing.assert_array_equal(g.point, (0.0, 0.0, 0.0))


def test_solve_signature_result_fields_and_methods():
    sig = inspect.signature(core.solve)
    assert list(sig.parameters) == ["skeleton", "goals", "q0", "method", "settings"]
    assert sig.parameters["method"].default is core.Method.DLS
    assert sig.parameters["settings"].default is None
    assert [f.name for f in dataclasses.fields(core.SolveResult)] == [
        "q",
        "converged",
        "reached",
        "iterations",
        "error",
        "per_goal_error",
        "reason",
        "level_error",
        "level_reached",
    ]
    assert {m.name for m in core.Method} == {
        "JACOBIAN_TRANSPOSE",
        "PSEUDOINVERSE",
        "DLS",
        "DLS_CLAMPED",
        "SDLS",
        "CCD",
        "LBFGSB",
        "TASK_PRIORITY",
        "EXTENDED_JACOBIAN",
    }
    for cls in (core.Joint, core.Ball, core.Hinge, core.Skeleton, core.SolveResult):
        assert cls.__dataclass_params__.frozen, cls.__name__
