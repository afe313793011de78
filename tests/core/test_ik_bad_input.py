"""Issue 4, "Behaviour on bad input", one test per listed case, through the numeric-IK API
(Skeleton / Joint / DOFs / goals with ``joint=`` / ``solve``): a clear LimberError whose
message names the offending value and what would be valid. Unreachable targets are not
errors (``reached=False`` with the residual)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import (
    AimGoal,
    Ball,
    DirectionGoal,
    Hinge,
    InvalidGoalError,
    InvalidInputError,
    InvalidLimitsError,
    InvalidSkeletonError,
    Joint,
    LimberError,
    Method,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    Skeleton,
    SolveSettings,
    StopReason,
    solve,
)
from tests.fixtures import arm_chain


def _arm():
    fx = arm_chain()
    return fx.skeleton, fx.goals, fx.q0


# ------------------------------------------------------------------ unknown joints


@pytest.mark.parametrize("joint", [4, 17, -5])
def test_goal_on_an_unknown_joint_index(joint):
    sk, _, q0 = _arm()
    with pytest.raises(InvalidGoalError, match=rf"joint index {joint} out of range.*-4\.\.3"):
        solve(sk, [PositionGoal((0.1, 0.2, 0.3), joint=joint)], q0)


def test_goal_on_an_unknown_joint_name():
    sk, _, q0 = _arm()
    with pytest.raises(InvalidGoalError, match=r"no joint named 'finger'.*'shoulder'.*'hand'"):
        solve(sk, [PositionGoal((0.1, 0.2, 0.3), joint="finger")], q0)
    with pytest.raises(InvalidGoalError, match="needs joint="):
        solve(sk, [PositionGoal((0.1, 0.2, 0.3))], q0)
    with pytest.raises(InvalidSkeletonError, match="no joint named 'finger'"):
        sk.joint_index("finger")


def test_unknown_parent_index():
    for parent in (3, -2):
        with pytest.raises(InvalidSkeletonError, match=rf"unknown parent index {parent}.*-1"):
            Skeleton([Joint("a"), Joint("b", 0), Joint("c", parent)])


# ------------------------------------------------------------------ tree order / cycles


def test_cycles_and_parents_after_children():
    # a two-joint cycle a → b → a
    with pytest.raises(InvalidSkeletonError, match="parents must come before children"):
        Skeleton([Joint("a", 1), Joint("b", 0)])
    # a joint that is its own parent
    with pytest.raises(InvalidSkeletonError, match=r"joint 1 \('b'\) has parent index 1"):
        Skeleton([Joint("a"), Joint("b", 1)])
    # a valid tree listed child first
    with pytest.raises(InvalidSkeletonError, match=r"joint 0 \('hand'\) has parent index 1"):
        Skeleton([Joint("hand", 1), Joint("root")])


# ------------------------------------------------------------------ q0


@pytest.mark.parametrize("shape", [(6,), (8,), (3, 6), (2, 3, 7), ()])
def test_q0_of_the_wrong_length(shape):
    sk, goals, _ = _arm()
    with pytest.raises(InvalidInputError, match=rf"shape \(7,\) or \(B, 7\).*{shape}"):
        solve(sk, goals, np.zeros(shape))


def test_non_finite_q0():
    sk, goals, q0 = _arm()
    for bad in (math.nan, math.inf):
        q = q0.copy()
        q[3] = bad
        with pytest.raises(InvalidInputError, match="finite"):
            solve(sk, goals, q)
        with pytest.raises(InvalidInputError, match="finite"):
            solve(sk, goals, np.stack([q0, q]))


# ------------------------------------------------------------------ targets


R = np.eye(3)
Y = (0.0, 1.0, 0.0)
NON_FINITE_TARGETS = [
    lambda v: PositionGoal((0.1, v, 0.2), joint="hand"),
    lambda v: PositionGoal((0.1, 0.2, 0.2), joint="hand", point=(v, 0.0, 0.0)),
    lambda v: OrientationGoal(np.where(np.eye(3) > 0, v, 0.0), joint="hand"),
    lambda v: PoseGoal((v, 0.0, 0.0), R, joint="hand"),
    lambda v: DirectionGoal(Y, (0.0, v, 0.0), joint="hand"),
    lambda v: PartialOrientationGoal((0.0, 0.0, v), Y, Y, joint="hand"),
    lambda v: AimGoal((0.0, v, 0.0), Y, joint="hand"),
    lambda v: AimGoal((0.0, 1.0, 0.0), Y, origin=(v, 0.0, 0.0), joint="hand"),
    lambda v: PositionGoal(np.array([[0.1, 0.2, 0.3], [0.0, v, 0.0]]), joint="hand"),
]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("make", NON_FINITE_TARGETS)
def test_non_finite_targets(make, value):
    with pytest.raises(InvalidGoalError, match="must be finite") as info:
        make(value)
    assert isinstance(info.value, LimberError)
    assert ("nan" if math.isnan(value) else "inf") in str(info.value)


# ------------------------------------------------------------------ zero axes


ZERO_AXES = [
    lambda z: Hinge(z),
    lambda z: DirectionGoal(z, Y, joint="hand"),
    lambda z: DirectionGoal(Y, z, joint="hand"),
    lambda z: PartialOrientationGoal((0.0, 0.0, 0.0), z, Y, joint="hand"),
    lambda z: PartialOrientationGoal((0.0, 0.0, 0.0), Y, z, joint="hand"),
    lambda z: AimGoal((0.0, 1.0, 0.0), z, joint="hand"),
]


@pytest.mark.parametrize("make", ZERO_AXES)
def test_zero_axes(make):
    with pytest.raises(InvalidInputError, match=r"non-zero|unit vector") as info:
        make((0.0, 0.0, 0.0))
    assert isinstance(info.value, LimberError)
    # goals: the message says what is valid and the offending norm
    assert "0.0" in str(info.value)


def test_hinge_axis_of_the_wrong_shape_or_non_finite():
    with pytest.raises(InvalidSkeletonError, match=r"shape \(3,\)"):
        Hinge((0.0, 1.0))
    with pytest.raises(InvalidSkeletonError, match="finite"):
        Hinge((0.0, math.nan, 1.0))


# ------------------------------------------------------------------ limits


def test_lower_above_upper():
    with pytest.raises(InvalidLimitsError, match=r"lower <= upper.*lower=1\.0 > upper=0\.5"):
        Hinge((0.0, 0.0, 1.0), lower=1.0, upper=0.5)
    with pytest.raises(InvalidLimitsError, match=r"lower=0\.2 > upper=-0\.1 \(entry 1\)"):
        Ball("ZXY", lower=(0.0, 0.2, 0.0), upper=(1.0, -0.1, 1.0))
    # a scalar bound against per-angle ones
    with pytest.raises(InvalidLimitsError, match=r"entry 2"):
        Ball(lower=(-1.0, -1.0, 0.5), upper=0.4)
    # NaN is neither free nor a bound
    with pytest.raises(InvalidLimitsError, match="NaN"):
        Hinge((0.0, 0.0, 1.0), lower=math.nan)
    # equal bounds are valid (a DOF pinned by its limits)
    assert Hinge((0.0, 0.0, 1.0), lower=0.3, upper=0.3).upper == 0.3


# ------------------------------------------------------------------ not an error


@pytest.mark.parametrize("method", list(Method), ids=lambda m: m.name)
def test_unreachable_target_is_a_result_not_an_error(method):
    sk, _, q0 = _arm()
    far = [PositionGoal((0.0, 2.0, 0.0), joint="hand")]  # 2 m, the arm reaches 0.63 m
    r = solve(sk, far, q0, method, SolveSettings(max_iterations=30, lbfgsb_iterations=10))
    assert r.reached is False and r.reason is not StopReason.REACHED
    assert r.error == pytest.approx(float(sk.goal_errors(r.q, far)[0]), abs=1e-15)
    assert r.error >= 2.0 - 0.63 - 1e-9
