"""Tests of core.chain.skeleton: forward kinematics, residuals, analytic Jacobians, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import (
    EULER_ORDERS,
    AimGoal,
    Ball,
    BlockKind,
    DirectionGoal,
    Fixed,
    Hinge,
    InvalidGoalError,
    InvalidInputError,
    InvalidLimitsError,
    InvalidSkeletonError,
    Joint,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    ShapeMismatchError,
    Skeleton,
    axis_angle_to_matrix,
    euler_to_matrix,
    rotation_angle_between,
)


def T(t, r=None):
    m = np.eye(4)
    m[:3, 3] = t
    if r is not None:
        m[:3, :3] = r
    return m


def tree(order: str, locked=(False, False, False)) -> Skeleton:
    """A small tree: Ball root, a hinge chain with a Ball wrist, and a side branch."""
    tilt = axis_angle_to_matrix((1.0, 2.0, 3.0), 0.4)
    return Skeleton(
        [
            Joint("root", -1, T((0.1, -0.2, 0.05), tilt), Ball(order)),
            Joint("elbow", 0, T((0.0, 0.3, 0.0)), Hinge((1.0, 0.2, -0.1))),
            Joint("wrist", 1, T((0.02, 0.25, 0.0), tilt.T), Ball(order, locked=locked)),
            Joint("hand", 2, T((0.0, 0.08, 0.01))),
            Joint("side", 0, T((0.1, 0.1, 0.0)), Hinge((0.0, 0.0, 1.0))),
            Joint("side_tip", 4, T((0.2, 0.0, 0.0))),
        ]
    )


def all_goals(rng: np.random.Generator, batch: int | None = None):
    def v(*shape):
        return rng.normal(size=((batch,) if batch else ()) + shape)

    def unit():
        x = v(3)
        return x / np.linalg.norm(x, axis=-1, keepdims=True)

    def rot():
        return axis_angle_to_matrix(unit(), rng.uniform(0.0, 2.5, size=(batch,) if batch else ()))

    return [
        PositionGoal(v(3), joint="hand", point=(0.01, 0.02, 0.03)),
        OrientationGoal(rot(), joint="wrist", weight=2.0),
        PoseGoal(v(3), rot(), joint="hand", weight=0.5),
        DirectionGoal((0.0, 1.0, 0.0), unit(), joint="hand"),
        PartialOrientationGoal(v(3), (1.0, 0.0, 0.0), unit(), joint="wrist"),
        AimGoal(v(3) + 2.0, (0.0, 1.0, 0.0), origin=(0.0, 0.01, 0.0), joint="hand"),
        PositionGoal(v(3), joint="side_tip"),
    ]


def numeric_jacobian(sk: Skeleton, q: np.ndarray, goals, h: float = 1e-6) -> np.ndarray:
    cols = []
    for d in range(sk.n_dofs):
        dq = np.zeros(sk.n_dofs)
        dq[d] = h
        cols.append(-(sk.errors(q + dq, goals) - sk.errors(q - dq, goals)) / (2 * h))
    return np.stack(cols, axis=-1)


# ------------------------------------------------------------------ forward kinematics


def test_forward_matches_hand_built_products():
    order = "ZXY"
    sk = tree(order)
    rng = np.random.default_rng(1)
    q = rng.normal(size=sk.n_dofs)
    F = sk.forward(q)
    tilt = axis_angle_to_matrix((1.0, 2.0, 3.0), 0.4)

    def L(r):
        return T((0.0, 0.0, 0.0), r)

    g0 = T((0.1, -0.2, 0.05), tilt) @ L(euler_to_matrix(q[0:3], order))
    g1 = g0 @ T((0.0, 0.3, 0.0)) @ L(axis_angle_to_matrix((1.0, 0.2, -0.1), q[3]))
    g2 = g1 @ T((0.02, 0.25, 0.0), tilt.T) @ L(euler_to_matrix(q[4:7], order))
    g3 = g2 @ T((0.0, 0.08, 0.01))
    g4 = g0 @ T((0.1, 0.1, 0.0)) @ L(axis_angle_to_matrix((0, 0, 1), q[7]))
    g5 = g4 @ T((0.2, 0.0, 0.0))
    np.testing.assert_allclose(F, np.stack([g0, g1, g2, g3, g4, g5]), atol=1e-14)
    # batched = stacked singles
    qb = rng.normal(size=(4, sk.n_dofs))
    np.testing.assert_allclose(sk.forward(qb), np.stack([sk.forward(x) for x in qb]), atol=1e-15)


def test_dof_layout_and_limits():
    sk = Skeleton(
        [
            Joint("a", -1, np.eye(4), Ball("XYZ", lower=(-1, None, -3), upper=2.0)),
            Joint("b", 0, T((1, 0, 0)), Hinge((0, 0, 2), lower=-0.5)),
            Joint("c", 1, T((1, 0, 0)), Ball("YZX", locked=(True, False, True), upper=(0, 1, 0))),
            Joint("d", 2, T((1, 0, 0)), Fixed()),
        ]
    )
    assert sk.n_dofs == 5
    assert sk.dof_slices == (slice(0, 3), slice(3, 4), slice(4, 5), slice(5, 5))
    np.testing.assert_array_equal(sk.lower, [-1, -np.inf, -3, -0.5, -np.inf])
    np.testing.assert_array_equal(sk.upper, [2, 2, 2, np.inf, 1])
    np.testing.assert_allclose(sk.joints[1].dofs.axis, (0, 0, 1))
    assert sk.joint_index("c") == 2 and sk.joint_index(-1) == 3
    # locked angles stay zero: rotating the single free y angle
    F = sk.forward([0, 0, 0, 0, 0.7])
    np.testing.assert_allclose(F[2, :3, :3], euler_to_matrix((0, 0.7, 0), "YZX"), atol=1e-15)


# ------------------------------------------------------------------ Jacobians


@settings(max_examples=15)
@given(
    order=st.sampled_from(EULER_ORDERS),
    locked=st.sampled_from([(False, False, False), (True, False, False), (False, True, True)]),
    seed=st.integers(0, 2**31 - 1),
)
def test_jacobian_matches_central_differences_single(order, locked, seed):
    sk = tree(order, locked)
    rng = np.random.default_rng(seed)
    goals = all_goals(rng)
    q = rng.uniform(-1.2, 1.2, size=sk.n_dofs)
    J = sk.jacobian(q, goals)
    assert J.shape == (3 * 9, sk.n_dofs)
    np.testing.assert_allclose(J, numeric_jacobian(sk, q, goals), atol=2e-7)


@settings(max_examples=6)
@given(order=st.sampled_from(EULER_ORDERS), seed=st.integers(0, 2**31 - 1))
def test_jacobian_batched_matches_differences_and_singles(order, seed):
    sk = tree(order, (False, True, False))
    rng = np.random.default_rng(seed)
    goals = all_goals(rng, batch=3)
    q = rng.uniform(-1.2, 1.2, size=(3, sk.n_dofs))
    J = sk.jacobian(q, goals)
    e = sk.errors(q, goals)
    assert J.shape == (3, 27, sk.n_dofs) and e.shape == (3, 27)
    np.testing.assert_allclose(J, numeric_jacobian(sk, q, goals), atol=2e-7)
    for b in range(3):
        single = [_row(g, b) for g in goals]
        np.testing.assert_allclose(sk.jacobian(q[b], single), J[b], atol=1e-14)
        np.testing.assert_allclose(sk.errors(q[b], single), e[b], atol=1e-14)


def _row(goal, b):
    kw = {"joint": goal.joint, "weight": goal.weight, "priority": goal.priority}
    if isinstance(goal, PositionGoal):
        return PositionGoal(goal.position[b], point=goal.point, **kw)
    if isinstance(goal, OrientationGoal):
        return OrientationGoal(goal.rotation[b], **kw)
    if isinstance(goal, PoseGoal):
        return PoseGoal(goal.position[b], goal.rotation[b], **kw)
    if isinstance(goal, DirectionGoal):
        return DirectionGoal(goal.axis, goal.direction[b], **kw)
    if isinstance(goal, PartialOrientationGoal):
        return PartialOrientationGoal(goal.position[b], goal.axis, goal.direction[b], **kw)
    return AimGoal(goal.target[b], goal.axis, origin=goal.origin, **kw)


def test_residual_definitions():
    sk = tree("XYZ")
    q = np.random.default_rng(3).normal(size=sk.n_dofs)
    F = sk.forward(q)
    hand = F[3]
    # position: target - current, weighted by sqrt(weight)
    g = PositionGoal((1.0, 2.0, 3.0), joint="hand", point=(0.1, 0, 0), weight=4.0)
    s = hand[:3, :3] @ (0.1, 0, 0) + hand[:3, 3]
    np.testing.assert_allclose(sk.errors(q, [g]), 2.0 * ((1.0, 2.0, 3.0) - s), atol=1e-14)
    np.testing.assert_allclose(sk.goal_errors(q, [g]), [np.linalg.norm((1, 2, 3) - s)])
    # orientation: the rotation vector turning current onto target
    rt = axis_angle_to_matrix((0, 0, 1), 0.3) @ hand[:3, :3]
    e = sk.errors(q, [OrientationGoal(rt, joint="hand")])
    np.testing.assert_allclose(e, (0, 0, 0.3), atol=1e-12)
    assert sk.goal_errors(q, [OrientationGoal(rt, joint=3)])[0] == pytest.approx(
        float(rotation_angle_between(rt, hand[:3, :3]))
    )
    # aim: zero when the target is on the ray in front, non-zero behind
    front = AimGoal(hand[:3, 3] + 2.0 * hand[:3, 1], (0, 1, 0), joint="hand")
    behind = AimGoal(hand[:3, 3] - 2.0 * hand[:3, 1], (0, 1, 0), joint="hand")
    assert np.abs(sk.errors(q, [front])).max() < 1e-12
    assert sk.goal_errors(q, [behind])[0] == pytest.approx(2.0)
    kinds = [b.kind for b in sk.blocks(all_goals(np.random.default_rng(0)))]
    assert kinds[:4] == [
        BlockKind.POSITION,
        BlockKind.ROTATION,
        BlockKind.POSITION,
        BlockKind.ROTATION,
    ]


def test_target_based_jacobian():
    sk = tree("XYZ")
    q = np.zeros(sk.n_dofs)
    tgt = np.array([0.3, 0.4, 0.5])
    g = [PositionGoal(tgt, joint="hand")]
    Jt = sk.jacobian(q, g, target_based=True)
    F = sk.forward(q)
    # column of the elbow hinge: w × (t − p_elbow)
    w = F[0, :3, :3] @ (sk.joints[1].dofs.axis)
    np.testing.assert_allclose(Jt[:, 3], np.cross(w, tgt - F[1, :3, 3]), atol=1e-14)
    assert not np.allclose(Jt, sk.jacobian(q, g))


# ------------------------------------------------------------------ validation


def test_validation_errors():
    with pytest.raises(InvalidSkeletonError, match="unknown parent index 5"):
        Skeleton([Joint("a"), Joint("b", 5)])
    with pytest.raises(InvalidSkeletonError, match="parents must come before children"):
        Skeleton([Joint("a", 1), Joint("b", 0)])
    with pytest.raises(InvalidSkeletonError, match="parents must come before children"):
        Skeleton([Joint("a"), Joint("b", 1)])  # self-parent: a cycle
    with pytest.raises(InvalidSkeletonError, match="unique"):
        Skeleton([Joint("a"), Joint("a", 0)])
    with pytest.raises(InvalidSkeletonError, match="non-zero"):
        Hinge((0.0, 0.0, 0.0))
    with pytest.raises(InvalidLimitsError, match="lower <= upper"):
        Hinge((0, 0, 1), lower=1.0, upper=0.0)
    with pytest.raises(InvalidLimitsError, match="lower <= upper"):
        Ball(lower=(0, 0, 0), upper=(1, -1, 1))
    with pytest.raises(InvalidSkeletonError, match="Euler order"):
        Ball("XXY")
    with pytest.raises(InvalidSkeletonError, match="last row"):
        Joint("a", -1, np.ones((4, 4)))
    with pytest.raises(InvalidSkeletonError, match="at least one joint"):
        Skeleton([])
    sk = tree("XYZ")
    with pytest.raises(InvalidSkeletonError, match="no joint named 'foo'"):
        sk.joint_index("foo")
    with pytest.raises(InvalidSkeletonError, match="out of range"):
        sk.joint_index(17)
    with pytest.raises(InvalidGoalError, match="no joint named 'nope'"):
        sk.errors(np.zeros(sk.n_dofs), [PositionGoal((0, 0, 0), joint="nope")])
    with pytest.raises(InvalidGoalError, match="needs joint="):
        sk.errors(np.zeros(sk.n_dofs), [PositionGoal((0, 0, 0))])
    with pytest.raises(InvalidInputError, match=r"shape \(8,\) or \(B, 8\)"):
        sk.forward(np.zeros(7))
    with pytest.raises(InvalidInputError, match="finite"):
        sk.forward(np.full(8, np.nan))
    with pytest.raises(InvalidGoalError, match="finite"):
        PositionGoal((0.0, math.inf, 0.0), joint="hand")
    with pytest.raises(ShapeMismatchError):
        sk.errors(np.zeros(8), [PositionGoal(np.zeros((3, 3)), joint="hand")])
    with pytest.raises(ShapeMismatchError):
        sk.errors(np.zeros((2, 8)), [PositionGoal(np.zeros((3, 3)), joint="hand")])


# ------------------------------------------------------------------ caches and buffers


def test_goal_plan_reused_by_structure_not_by_targets():
    """New goal objects with the same types/joints/weights/points reuse the cached plan
    and still see their own targets; a different weight or point gets its own plan."""
    sk = tree("XYZ")
    fresh = tree("XYZ")
    rng = np.random.default_rng(3)
    q = rng.normal(size=sk.n_dofs)
    for _ in range(3):  # same structure, new targets each time
        goals = all_goals(rng)
        np.testing.assert_array_equal(sk.jacobian(q, goals), tree("XYZ").jacobian(q, goals))
        np.testing.assert_array_equal(sk.errors(q, goals), tree("XYZ").errors(q, goals))
    for changed in (
        [PositionGoal((0.1, 0.2, 0.3), joint="hand", weight=4.0)],
        [PositionGoal((0.1, 0.2, 0.3), joint="hand", point=(0.0, 0.1, 0.0))],
        [PositionGoal((0.1, 0.2, 0.3), joint="side_tip")],
    ):
        np.testing.assert_array_equal(sk.jacobian(q, changed), fresh.jacobian(q, changed))
        np.testing.assert_array_equal(sk.errors(q, changed), fresh.errors(q, changed))
    with pytest.raises(InvalidGoalError, match="no joint named 'nope'"):
        sk.errors(q, [PositionGoal((0, 0, 0), joint="nope")])


@pytest.mark.parametrize("batch", [1, 3])
def test_evaluate_with_memo_equals_plain_calls(batch):
    """The solvers' memo (gathered targets, reused FK buffers) changes no bit of e, J,
    goal errors or frames, also when q changes between calls."""
    sk = tree("YZX")
    rng = np.random.default_rng(5)
    goals = all_goals(rng, batch if batch > 1 else None)
    memo: dict[str, object] = {}
    for _ in range(3):
        q = rng.normal(size=(batch, sk.n_dofs))
        ev = sk.evaluate(q, goals, memo=memo)
        plain = sk.evaluate(q, goals)
        for a, b in ((ev.e, plain.e), (ev.J, plain.J), (ev.goal_error, plain.goal_error)):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ev.frames, plain.frames)
