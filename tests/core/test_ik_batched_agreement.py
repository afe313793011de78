"""Issue 4, "Batched solves agree with one-by-one solves", beyond the Y with position goals
of test_ik.py / test_ik_methods.py: every method on the 7-DOF arm WITH limits and a full
pose goal (rotation rows, Ball joints, clipping at the limits; CCD's fast sweep with
rotation blocks) and on the double-Y tree, where rows finish at different iterations.
"""

from __future__ import annotations

import numpy as np
import pytest

from core import Method, SolveSettings, solve
from tests.core.ik_test_helpers import reachable_goals, single
from tests.fixtures import arm_chain, buss_double_y

SETTINGS = SolveSettings(max_iterations=25, lbfgsb_iterations=10)


def _agree(sk, goals, q0, method):
    """Each row of the batched solve against its one-problem solve: equal to rounding
    (a single DLS problem is solved by LAPACK's Cholesky, a small batch by LU; last-bit
    differences grow over the iterations to ~1e-10 rad on the double-Y)."""
    r = solve(sk, goals, q0, method, SETTINGS)
    iterations = set()
    for b in range(q0.shape[0]):
        rb = solve(sk, [single(g, b) for g in goals], q0[b], method, SETTINGS)
        np.testing.assert_allclose(rb.q, r.q[b], atol=1e-9, rtol=0)
        assert rb.iterations == r.iterations[b] and rb.reason is r.reason[b]
        assert rb.reached == r.reached[b] and rb.converged == r.converged[b]
        assert rb.error == pytest.approx(r.error[b], abs=1e-10)
        np.testing.assert_allclose(rb.per_goal_error, r.per_goal_error[b], atol=1e-10)
        iterations.add(int(r.iterations[b]))
    return r, iterations


@pytest.mark.parametrize("method", list(Method), ids=lambda m: m.name)
def test_batched_agrees_with_one_by_one_on_the_arm_with_limits_and_pose_goals(method):
    fx = arm_chain(limits=True)
    sk = fx.skeleton
    goals, q0, _ = reachable_goals(fx, batch=3, scale=0.6)
    assert type(goals[0]).__name__ == "PoseGoal"
    q0 = q0 + np.array([[0.0] * 7, [3.0] * 7, [-0.2] * 7])  # row 1 starts outside limits
    r, _ = _agree(sk, goals, q0, method)
    assert np.all(r.q >= sk.lower) and np.all(r.q <= sk.upper)


@pytest.mark.parametrize(
    "method",
    [Method.DLS, Method.SDLS, Method.PSEUDOINVERSE, Method.TASK_PRIORITY, Method.DLS_CLAMPED],
    ids=lambda m: m.name,
)
def test_batched_agrees_with_one_by_one_on_the_double_y_with_rows_finishing_apart(method):
    fx = buss_double_y()
    goals, q0, _ = reachable_goals(fx, batch=4, scale=0.8)
    q0 = q0 + np.linspace(0.0, 0.3, 4)[:, None]  # different starts: different iteration counts
    _, iterations = _agree(fx.skeleton, goals, q0, method)
    assert len(iterations) > 1
