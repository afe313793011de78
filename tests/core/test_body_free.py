"""The Free joint (3 translations then a ball rotation): q layout, limits, forward
kinematics, finite-difference Jacobians for every goal kind, and every numeric method."""

from __future__ import annotations

import numpy as np
import pytest

from core import (
    AimGoal,
    Ball,
    DirectionGoal,
    Free,
    Hinge,
    InvalidLimitsError,
    InvalidSkeletonError,
    Joint,
    Method,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    Skeleton,
    SolveSettings,
    euler_to_matrix,
    solve,
)


def _t(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def _skeleton(order: str = "ZXY") -> Skeleton:
    off = _t(0.1, 0.2, 0.3)
    off[:3, :3] = euler_to_matrix([0.3, -0.2, 0.5], "XYZ")
    return Skeleton(
        [
            Joint("root", -1, off, Free(order, translation_lower=-2.0, translation_upper=2.0)),
            Joint("a", 0, _t(0.0, 0.0, 0.5), Ball("XYZ")),
            Joint("b", 1, _t(0.0, 0.4, 0.1), Hinge((1, 0, 0))),
            Joint("c", 2, _t(0.0, 0.0, 0.3)),
        ]
    )


GOALS = [
    PositionGoal([1.0, 2.0, 3.0], joint="b", point=[0.1, 0.0, 0.2]),
    PoseGoal([0.0, 1.0, 0.0], np.eye(3), joint="a"),
    AimGoal([1.0, 1.0, 1.0], axis=(0, 1, 0), origin=(0.0, 0.05, 0.0), joint="c"),
    DirectionGoal((1, 0, 0), (0, 0, 1), joint="a"),
    OrientationGoal(euler_to_matrix([0.2, 0.1, -0.3], "XYZ"), joint="root"),
    PartialOrientationGoal([0.2, 0.1, 1.0], (0, 0, 1), (0, 1, 0), joint="c"),
    PositionGoal([0.0, 0.0, 0.0], joint="root"),
]


def test_free_q_layout_translations_then_rotation() -> None:
    sk = _skeleton("XYZ")
    assert sk.n_dofs == 6 + 3 + 1
    assert sk.dof_slices[0] == slice(0, 6)
    q = np.zeros(sk.n_dofs)
    q[:3] = (0.5, -0.25, 1.0)
    q[3:6] = (0.3, -0.4, 0.2)
    g = sk.forward(q)
    off = np.asarray(sk.joints[0].offset)
    # G = offset · T(t) · R(euler): the origin moves along the offset frame's axes
    np.testing.assert_allclose(g[0][:3, 3], off[:3, 3] + off[:3, :3] @ q[:3], atol=1e-15)
    np.testing.assert_allclose(
        g[0][:3, :3], off[:3, :3] @ euler_to_matrix(q[3:6], "XYZ"), atol=1e-15
    )
    np.testing.assert_array_equal(sk.lower[:3], -2.0)
    np.testing.assert_array_equal(sk.upper[:3], 2.0)
    assert np.all(np.isinf(sk.lower[3:6]))


@pytest.mark.parametrize("order", ["XYZ", "ZXY", "YZX"])
def test_free_jacobian_matches_finite_differences(order: str) -> None:
    sk = _skeleton(order)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.normal(size=sk.n_dofs)
        for goals in (GOALS, GOALS[:2], [GOALS[-1], GOALS[0]]):
            jac = sk.jacobian(q, goals)
            num = np.zeros_like(jac)
            h = 1e-6
            for i in range(sk.n_dofs):
                dq = np.zeros(sk.n_dofs)
                dq[i] = h
                num[:, i] = -(sk.errors(q + dq, goals) - sk.errors(q - dq, goals)) / (2 * h)
            np.testing.assert_allclose(jac, num, atol=1e-7)
            # batched rows (including the size where FK switches layout) agree
            for rows in (3, 70):
                jb = sk.jacobian(np.repeat(q[None], rows, axis=0), goals)
                np.testing.assert_allclose(jb[-1], jac, atol=1e-12)


def test_free_limits_are_validated() -> None:
    with pytest.raises(InvalidLimitsError):
        Free(translation_lower=1.0, translation_upper=0.0)
    with pytest.raises(InvalidLimitsError):
        Free(lower=(0.0, 0.0, 1.0), upper=(0.0, 0.0, 0.0))
    with pytest.raises(InvalidSkeletonError):
        Free(order="ABC")


@pytest.mark.parametrize("method", list(Method))
def test_every_method_handles_a_free_root(method: Method) -> None:
    sk = _skeleton()
    goal = [PoseGoal([1.0, 0.5, 0.2], euler_to_matrix([0.1, 0.2, 0.3], "XYZ"), joint="b")]
    res = solve(sk, goal, np.zeros(sk.n_dofs), method, SolveSettings(max_iterations=3000))
    assert res.reached, (method, res.error)
    assert np.all(res.q[:3] >= -2.0) and np.all(res.q[:3] <= 2.0)


def test_free_translation_limits_hold_in_solves() -> None:
    sk = Skeleton(
        [
            Joint("root", -1, np.eye(4), Free(translation_lower=-0.1, translation_upper=0.1)),
            Joint("tip", 0, _t(0.0, 0.0, 1.0)),
        ]
    )
    res = solve(sk, [PositionGoal([1.0, 0.0, 1.0], joint="tip")], np.zeros(6), Method.DLS)
    assert np.all(np.abs(res.q[:3]) <= 0.1 + 1e-12)
