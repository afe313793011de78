"""Skeleton.sum_squared_error equals ‖e‖² of Skeleton.evaluate bit for bit, on the
batch-last position path (many rows, position goals only) and on the general one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from core import PoseGoal, PositionGoal
from core.geometry.vec3 import sum_squares
from tests.fixtures.papers import Fixture, arm_chain, buss_double_y, buss_y, serial_chain


def _goals(fx, b: int, rng: np.random.Generator, weights: bool) -> tuple:
    sk = fx.skeleton
    frames = sk.forward(fx.q0 + rng.uniform(-1.0, 1.0, size=(b, sk.n_dofs)))
    out = []
    for i, g in enumerate(fx.goals):
        j = sk.joint_index(g.joint)
        w = 0.5 + i if weights else 1.0
        if isinstance(g, PoseGoal):
            out.append(PoseGoal(frames[:, j, :3, 3], frames[:, j, :3, :3], joint=g.joint, weight=w))
        else:
            out.append(PositionGoal(frames[:, j, :3, 3], joint=g.joint, weight=w))
    return tuple(out)


def _double_y_three() -> Fixture:
    """The double-Y with three of its four goals (9 residual entries)."""
    fx = buss_double_y()
    return replace(fx, goals=fx.goals[:3])


@pytest.mark.parametrize("make", [buss_y, buss_double_y, _double_y_three, arm_chain, serial_chain])
@pytest.mark.parametrize("b", [1, 5, 63, 64, 300])
@pytest.mark.parametrize("weights", [False, True])
def test_equals_the_evaluations_objective(make, b: int, weights: bool) -> None:
    fx = make()
    sk = fx.skeleton
    rng = np.random.default_rng(b)
    goals = _goals(fx, b, rng, weights)
    q = fx.q0 + rng.uniform(-1.0, 1.0, size=(b, sk.n_dofs))
    want = sum_squares(sk.evaluate(q, goals, jacobian=False).e)
    assert np.array_equal(sk.sum_squared_error(q, goals), want)
    # a subset of the batch's rows, with and without a memo kept across calls
    rows = np.arange(b)[::2]
    want_rows = sum_squares(sk.evaluate(q[rows], goals, rows=rows, jacobian=False).e)
    memo: dict = {}
    for _ in range(2):
        got = sk.sum_squared_error(q[rows], goals, rows=rows, memo=memo)
        assert np.array_equal(got, want_rows)
