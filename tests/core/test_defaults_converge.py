"""Numeric solvers at their defaults (issue 16).

Concerns: success rates of every method with ``SolveSettings()`` on random reachable
targets (Buss's Y and double-Y, the 7-DOF arm with position and pose goals, a 12-hinge
chain, random trees), starting 0.3 rad (σ) from the answer; strict priority of
TASK_PRIORITY against an SLSQP reference constrained to level 0. The problems are drawn by
:func:`tests.fixtures.reachable_problems`; hypothesis runs derandomized (repeatable) with
bounded examples.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.optimize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import Method, PositionGoal, SolveSettings, solve
from tests.fixtures import (
    arm_chain,
    buss_double_y,
    buss_y,
    random_tree,
    reachable_problems,
    serial_chain,
)

FIXTURES = {
    "Y": (buss_y, False),
    "double-Y": (buss_double_y, False),
    "arm-position": (arm_chain, False),
    "arm-pose": (arm_chain, True),
    "chain12": (serial_chain, False),
}
#: Issue 16's target: ≥ 99 % reached at the defaults, by every method on every fixture
#: (within each method's default budget, ``IKSolver.default_max_iterations``).
RATE = 0.99


@pytest.mark.parametrize("fixture", list(FIXTURES))
@pytest.mark.parametrize("method", list(Method), ids=lambda m: m.name)
def test_success_rate_at_defaults(method, fixture):
    make, pose = FIXTURES[fixture]
    fx = make()
    n = 30 if method is Method.LBFGSB else 100  # LBFGSB minimises row by row
    goals, q0, _ = reachable_problems(fx, n, seed=1, pose=pose)
    r = solve(fx.skeleton, goals, q0, method)
    rate = float(np.mean(r.reached))
    assert rate >= RATE, (method.name, fixture, rate)
    # honest: reached ⇔ every goal within tolerance at the returned q
    errors = fx.skeleton.goal_errors(r.q, goals)
    np.testing.assert_allclose(r.error, errors.max(axis=1), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(r.reached, r.error <= SolveSettings().tolerance)


def _conditioning(fx, goals, qs):
    """σ_min / σ_max of the goals' Jacobian at the answers (min over rank of J)."""
    jac = fx.skeleton.jacobian(qs, goals)
    s = np.linalg.svd(jac, compute_uv=False)
    return s[:, min(jac.shape[1:]) - 1] / s[:, 0]


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(seed=st.integers(0, 10_000))
@pytest.mark.parametrize(
    "method", [m for m in Method if m is not Method.LBFGSB], ids=lambda m: m.name
)
def test_random_trees_at_defaults(method, seed):
    """Random trees (:func:`tests.fixtures.random_tree`), 10 problems each: results are
    honest and, away from singular answers (σ_min/σ_max > 0.02; measured over 40 trees:
    DLS 133/134, JT 134/134, CCD 132/134, EJ 133/134), at least 60 % per tree are
    reached: a start 0.3 rad away can still end in another local minimum (tree 255: the
    undamped Newton steps of PSEUDOINVERSE, single-level TASK_PRIORITY and
    EXTENDED_JACOBIAN end 0.09 and 0.06 m off in 2 of 7 problems that DLS, JT and CCD
    reach)."""
    fx = random_tree(seed)
    goals, q0, qs = reachable_problems(fx, 10, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = solve(fx.skeleton, goals, q0, method)
    assert np.all(np.isfinite(r.q)) and np.all(np.isfinite(r.error))
    np.testing.assert_array_equal(r.reached, r.error <= SolveSettings().tolerance)
    good = _conditioning(fx, goals, qs) > 0.02
    if good.sum() >= 3:
        assert np.mean(r.reached[good]) >= 0.6, (seed, r.error[good])


def _slsqp_reference(sk, high, low, q0):
    """min ‖e_low‖² subject to e_high = 0 from q0 (SLSQP), or None if it fails level 0."""

    def e(goals, x):
        return sk.errors(np.nan_to_num(x), goals)

    def jac(goals, x):
        return sk.jacobian(np.nan_to_num(x), goals)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = scipy.optimize.minimize(
            lambda x: float(np.sum(e(low, x) ** 2)),
            q0,
            jac=lambda x: -2.0 * jac(low, x).T @ e(low, x),
            constraints=[
                {"type": "eq", "fun": lambda x: e(high, x), "jac": lambda x: -jac(high, x)}
            ],
            method="SLSQP",
            options={"maxiter": 500, "ftol": 1e-14},
        )
    if np.max(np.abs(e(high, res.x))) > 1e-6:
        return None
    return float(np.linalg.norm(e(low, res.x)))


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    distance=st.floats(0.5, 10.0),
    direction=st.tuples(*[st.floats(-1.0, 1.0)] * 3).filter(lambda v: np.linalg.norm(v) > 0.2),
)
def test_task_priority_meets_level_zero_and_lower_levels_match_slsqp(seed, distance, direction):
    """Buss's Y: a reachable priority-0 goal on one tip, a priority-1 goal ``distance``
    from the origin (often unreachable) on the other tip, sharing the trunk. Level 0 is
    met to the tolerance (issue 16: before, 1.5–9.9 mm off in 3 of 5 draws, reported
    converged), the result says so per level, and level 1 is no worse than SLSQP's
    optimum of ‖e₁‖² subject to e₀ = 0 (:func:`_no_worse`), from the same start and from
    the result (a constrained local optimum)."""
    fx = buss_y()
    sk = fx.skeleton
    high, low, q0 = _y_priority_draw(sk, seed, distance, np.asarray(direction))
    r = solve(sk, high + low, q0, Method.TASK_PRIORITY)
    tol = SolveSettings().tolerance
    assert r.per_goal_error[0] <= tol
    assert r.level_reached[0] and r.level_error[0] == r.per_goal_error[0]
    assert r.level_error[1] == r.per_goal_error[1]
    assert r.reached == bool(r.level_reached.all())
    for start in (q0, r.q):
        assert _no_worse(r.per_goal_error[1], _slsqp_reference(sk, high, low, start))


def _no_worse(error: float, ref: float | None) -> bool:
    """A lower level's error is no worse than SLSQP's ``ref`` (None: SLSQP failed level
    0): within 1e-6 relative + 1e-9 m of it (SLSQP's own stopping tolerance, ftol =
    1e-14 on ‖e₁‖², is of that order in ‖e₁‖), or both within the tolerance (both
    reached)."""
    tol = SolveSettings().tolerance
    return ref is None or error <= ref * (1.0 + 1e-6) + 1e-9 or max(error, ref) <= tol


def _y_priority_draw(
    sk: object, seed: int, distance: float, direction: np.ndarray
) -> tuple[list[PositionGoal], list[PositionGoal], np.ndarray]:
    """Buss's Y: a reachable priority-0 goal on the right tip (FK of a random q*), a
    priority-1 goal ``distance`` from the origin along ``direction`` on the left tip, and
    a start q* + N(0, 0.3²)."""
    rng = np.random.default_rng(seed)
    qs = rng.uniform(-1.0, 1.0, sk.n_dofs)  # type: ignore[attr-defined]
    q0 = qs + rng.normal(0.0, 0.3, sk.n_dofs)  # type: ignore[attr-defined]
    tip = sk.forward(qs)[sk.joint_index("effector_right"), :3, 3]  # type: ignore[attr-defined]
    d = np.asarray(direction, dtype=float) / np.linalg.norm(direction)
    high = [PositionGoal(tip, joint="effector_right")]
    low = [PositionGoal(distance * d, joint="effector_left", priority=1)]
    return high, low, q0


def test_task_priority_lower_level_no_worse_than_slsqp_from_the_same_start():
    """Issue 16's reference, from the same start, over 40 random draws (reachable
    priority-0 tip, the other tip's goal 0.5–10 m away in a random direction): level 0
    is met in every draw and level 1 is no worse than SLSQP's optimum of ‖e₁‖² subject
    to e₀ = 0 started from the same q0 (:func:`_no_worse`) in every draw. Both are local
    methods: without TASK_PRIORITY's lower-level finish (its class docstring) the
    cascade ended in another constrained local optimum than SLSQP's in 4 of 100 and 1 of
    150 other draws (1.5e-5 to 23 % higher, once 0.18 m off where SLSQP meets level 1)."""
    fx = buss_y()
    sk = fx.skeleton
    rng = np.random.default_rng(16)
    tol = SolveSettings().tolerance
    worse = []
    draws = 0
    while draws < 40:
        seed, distance = int(rng.integers(0, 10_000)), float(rng.uniform(0.5, 10.0))
        direction = rng.uniform(-1.0, 1.0, 3)
        if np.linalg.norm(direction) < 0.2:
            continue
        draws += 1
        high, low, q0 = _y_priority_draw(sk, seed, distance, direction)
        r = solve(sk, high + low, q0, Method.TASK_PRIORITY)
        assert r.per_goal_error[0] <= tol and r.level_reached[0], seed
        if not _no_worse(r.per_goal_error[1], _slsqp_reference(sk, high, low, q0)):
            worse.append(seed)
    assert not worse, worse


def test_stalled_task_priority_with_level_zero_unmet_is_not_converged():
    """Priority 0 out of reach (10 m away on the arm): the row stalls, level 0 unmet, so it
    is not ``converged`` (the other methods keep ``converged`` for STALLED rows)."""
    fx = arm_chain()
    goals = [
        PositionGoal((10.0, 0.0, 0.0), joint="hand"),
        PositionGoal((0.0, 0.3, 0.0), joint="elbow", priority=1),
    ]
    r = solve(fx.skeleton, goals, fx.q0, Method.TASK_PRIORITY)
    assert not r.level_reached[0] and not r.converged and not r.reached
    d = solve(fx.skeleton, goals, fx.q0, Method.DLS)
    assert d.converged and not d.reached
