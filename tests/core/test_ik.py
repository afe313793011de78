"""Tests of core.chain (solve): the iterative solvers (Buss 2009; Buss & Kim SDLS)."""

from __future__ import annotations

import numpy as np
import pytest

from core import (
    STEP_CLASSES,
    ClampRule,
    IKSolver,
    InvalidInputError,
    Method,
    NullSpace,
    PoseGoal,
    PositionGoal,
    SolveSettings,
    StepState,
    StopReason,
    UnsupportedMethodError,
    solve,
    step_once,
)
from tests.core.ik_test_helpers import FIXTURES, reachable_goals, single, step_state
from tests.fixtures import arm_chain, buss_double_y, buss_y, ki_sheen_chain, soch_chain

IMPLEMENTED = [
    Method.JACOBIAN_TRANSPOSE,
    Method.PSEUDOINVERSE,
    Method.DLS,
    Method.DLS_CLAMPED,
    Method.SDLS,
]

#: Iteration budgets to reach every goal within 1e-6 (m / rad) from q0 for ALL 8 reachable
#: targets per fixture (FK of q0 + U(−0.5, 0.5) per DOF, seed 42), default settings. Arm:
#: a full pose goal (position + orientation of the hand) unless "position" is noted;
#: Y / double-Y: one position goal per effector. Measured maxima in comments.
#: The Jacobian transpose (Buss §3, optimal α) alone is steepest descent on the
#: linearised error and converges linearly with the rate set by (σ_max/σ_min)² of J at the
#: solution (≈ 4·10³–2·10⁴ on the double-Y: 167,898 iterations, Buss §8 "extremely poor
#: for the double-Y"); with conjugate directions (JacobianTransposeStep) it needs
#: hundreds. On the arm it gets a position goal here; its pose goals are
#: test_jacobian_transpose_on_arm_pose_goals.
BUDGETS = {
    (Method.JACOBIAN_TRANSPOSE, "arm"): (100, True),  # 22 (position goal)
    (Method.JACOBIAN_TRANSPOSE, "Y"): (500, False),  # 98
    (Method.JACOBIAN_TRANSPOSE, "double-Y"): (1000, False),  # 201
    (Method.PSEUDOINVERSE, "arm"): (15, False),  # 8
    (Method.PSEUDOINVERSE, "Y"): (15, False),  # 8
    (Method.PSEUDOINVERSE, "double-Y"): (15, False),  # 10
    (Method.DLS, "arm"): (80, False),  # 52
    (Method.DLS, "Y"): (15, False),  # 8
    (Method.DLS, "double-Y"): (20, False),  # 11
    (Method.DLS_CLAMPED, "arm"): (80, False),  # 52
    (Method.DLS_CLAMPED, "Y"): (15, False),  # 9
    (Method.DLS_CLAMPED, "double-Y"): (20, False),  # 12
    (Method.SDLS, "arm"): (80, False),  # 52
    (Method.SDLS, "Y"): (15, False),  # 9
    (Method.SDLS, "double-Y"): (40, False),  # 25
}


@pytest.mark.parametrize(("method", "name"), list(BUDGETS), ids=lambda x: getattr(x, "name", x))
def test_converges_within_budget(method, name):
    fx = FIXTURES[name]()
    budget, position_only = BUDGETS[(method, name)]
    goals, q0, _ = reachable_goals(fx, position_only=position_only)
    assert q0.shape[0] == 8
    r = solve(fx.skeleton, goals, q0, method, SolveSettings(max_iterations=budget))
    assert np.all(r.reached), (r.iterations, r.error)
    assert np.all(r.error <= 1e-6) and np.all(r.iterations <= budget)
    assert all(x is StopReason.REACHED for x in r.reason) and np.all(r.converged)
    # the reported errors are measured at the returned q
    np.testing.assert_allclose(r.per_goal_error, fx.skeleton.goal_errors(r.q, goals), atol=1e-15)


def test_jacobian_transpose_on_arm_pose_goals():
    """JT's conjugate directions reach all 8 arm pose problems at the defaults, the
    near-singular one too (measured: 54, 49, 42, 58, 36, 78, 35, 35 iterations; with
    Barzilai–Borwein steps problem 5 took 1,671, with Buss's α alone it was 2.5e-5 off
    after 200,000). Problem 5's target has the elbow 0.027 rad from straight:
    σ_min(J) = 0.003 against σ_max = 1.9 (steepest descent's contraction ≈ 1 − 5e-6 per
    iteration; conjugate gradients do not depend on it on the linearised problem)."""
    fx = arm_chain()
    goals, q0, qs = reachable_goals(fx)
    sk = fx.skeleton
    assert abs(qs[5, 3]) < 0.03  # the near-straight elbow
    sv = np.linalg.svd(sk.jacobian(qs[5], [single(g, 5) for g in goals]), compute_uv=False)
    assert sv[-1] / sv[0] < 2e-3
    r = solve(sk, goals, q0, Method.JACOBIAN_TRANSPOSE)
    assert r.reached.all() and np.all(r.iterations < 200)


@pytest.mark.parametrize("method", IMPLEMENTED, ids=lambda m: m.name)
def test_every_method_reduces_error_and_converges_on_a_simple_case(method):
    fx = arm_chain()
    goals, q0, _ = reachable_goals(fx, batch=3, scale=0.2, position_only=True)
    start = fx.skeleton.goal_errors(q0, goals).max(axis=1)
    one = solve(fx.skeleton, goals, q0, method, SolveSettings(max_iterations=1))
    assert np.all(one.error < start)
    r = solve(fx.skeleton, goals, q0, method, SolveSettings(max_iterations=6000))
    assert np.all(r.reached)


@pytest.mark.parametrize("method", IMPLEMENTED, ids=lambda m: m.name)
def test_batched_agrees_with_one_by_one(method):
    fx = buss_y()
    goals, q0, _ = reachable_goals(fx, batch=4, scale=0.8)
    s = SolveSettings(max_iterations=60)
    r = solve(fx.skeleton, goals, q0, method, s)
    for b in range(4):
        rb = solve(fx.skeleton, [single(g, b) for g in goals], q0[b], method, s)
        np.testing.assert_allclose(rb.q, r.q[b], atol=1e-12, rtol=0)
        assert rb.iterations == r.iterations[b] and rb.reason is r.reason[b]
        assert rb.reached == r.reached[b] and rb.converged == r.converged[b]
        np.testing.assert_allclose(rb.per_goal_error, r.per_goal_error[b], atol=1e-12)


@pytest.mark.parametrize("method", IMPLEMENTED, ids=lambda m: m.name)
def test_limits_are_never_violated(method):
    fx = arm_chain(limits=True)
    sk = fx.skeleton
    rng = np.random.default_rng(7)
    # targets from configurations far outside the limits; start outside too
    _, _, qs = reachable_goals(fx, batch=6, scale=2.5)
    F = sk.forward(qs)
    goals = [PoseGoal(F[:, 3, :3, 3], F[:, 3, :3, :3], joint="hand")]
    q0 = rng.uniform(-3, 3, size=(6, sk.n_dofs))
    r = solve(sk, goals, q0, method, SolveSettings(max_iterations=150))
    assert np.all(r.q >= sk.lower) and np.all(r.q <= sk.upper)
    np.testing.assert_allclose(r.per_goal_error, sk.goal_errors(r.q, goals), atol=1e-15)


@pytest.mark.parametrize("method", IMPLEMENTED, ids=lambda m: m.name)
def test_unreachable_targets_report_truthfully(method):
    fx = buss_y()
    far = [
        PositionGoal((6.0, 1.0, 0.0), joint="effector_right"),
        PositionGoal((-6.0, 1.0, 0.0), joint="effector_left"),
    ]
    r = solve(fx.skeleton, far, fx.q0, method, SolveSettings(max_iterations=300))
    assert not r.reached
    assert r.error == pytest.approx(float(fx.skeleton.goal_errors(r.q, far).max()), abs=1e-15)
    assert r.error > 3.0 and np.all(np.isfinite(r.q))
    assert r.reason in (StopReason.STALLED, StopReason.MAX_ITERATIONS)
    assert r.converged == (r.reason is StopReason.STALLED)


def test_dls_stalls_on_unreachable_targets():
    fx = arm_chain()
    goal = [PositionGoal((2.0, 0.0, 0.0), joint="hand")]
    r = solve(fx.skeleton, goal, fx.q0, Method.DLS, SolveSettings(max_iterations=1000))
    assert r.reason is StopReason.STALLED and r.converged and not r.reached
    # nearly stretched towards the target: 2 m − (0.30 + 0.25 + 0.08) m at best
    assert 1.37 - 1e-12 <= r.error < 1.38


def _state(sk, goals, q, settings):
    return step_state(sk, goals, q[None], settings)


def test_null_space_rest_pose_moves_towards_rest_without_changing_primary_error():
    fx = buss_double_y()
    sk = fx.skeleton
    rng = np.random.default_rng(3)
    q_star = rng.uniform(-0.5, 0.5, size=sk.n_dofs)
    F = sk.forward(q_star + 1e-3)  # primary goals a little away
    goals = [PositionGoal(F[sk.joint_index(f"e{i}"), :3, 3], joint=f"e{i}") for i in range(4)]
    q_rest = np.full(sk.n_dofs, 0.1)
    # one step: the secondary motion lies in the null space of J and points to the rest pose
    step = STEP_CLASSES[Method.PSEUDOINVERSE]()
    s = SolveSettings(null_space=NullSpace.REST_POSE, null_space_gain=0.2, q_rest=q_rest)
    st = _state(sk, goals, q_star, s)
    extra = step.step(st)[0] - step.step(_state(sk, goals, q_star, SolveSettings()))[0]
    np.testing.assert_allclose(st.J[0] @ extra, 0.0, atol=1e-12)
    assert extra @ (q_rest - q_star) > 0.0
    # a whole solve: much closer to rest, primary goals still met
    plain = solve(sk, goals, q_star, Method.PSEUDOINVERSE, SolveSettings(tolerance=1e-9))
    s = SolveSettings(
        max_iterations=60,
        tolerance=0.0,
        null_space=NullSpace.REST_POSE,
        null_space_gain=0.1,
        q_rest=q_rest,
    )
    r = solve(sk, goals, q_star, Method.PSEUDOINVERSE, s)
    assert plain.reached and r.error < 1e-4
    assert np.linalg.norm(r.q - q_rest) < 0.8 * np.linalg.norm(plain.q - q_rest)


def test_null_space_joint_limits_moves_towards_mid_range():
    fx = arm_chain(limits=True)
    sk = fx.skeleton
    q_star = sk.clip(np.array([1.5, 0.9, 1.2, 2.4, 1.0, 0.4, 1.2]))
    F = sk.forward(q_star + 1e-3)
    goals = [PositionGoal(F[3, :3, 3], joint="hand")]
    mid = 0.5 * (sk.lower + sk.upper)
    s = SolveSettings(
        max_iterations=40, tolerance=0.0, null_space=NullSpace.JOINT_LIMITS, null_space_gain=5.0
    )
    r = solve(sk, goals, q_star, Method.PSEUDOINVERSE, s)
    rng_ = sk.upper - sk.lower

    def h(q):
        return np.sum(((q - mid) / rng_) ** 2)

    assert h(r.q) < h(q_star) and r.error < 1e-8


def test_null_space_needs_a_supporting_method():
    fx = arm_chain()
    s = SolveSettings(null_space=NullSpace.REST_POSE)
    with pytest.raises(UnsupportedMethodError, match="PSEUDOINVERSE"):
        solve(fx.skeleton, fx.goals, fx.q0, Method.DLS, s)


def _clamped_dls_step(sk, goals, q, lam, limit):
    e = sk.errors(q, goals).reshape(-1, 3)
    norm = np.linalg.norm(e, axis=1, keepdims=True)
    e = np.where(norm > limit, e * limit / norm, e).ravel()
    J = sk.jacobian(q, goals)
    return J.T @ np.linalg.solve(J @ J.T + lam**2 * np.eye(len(e)), e)


def test_dls_clamped_clamps_each_effector_error():
    fx = buss_y()
    sk = fx.skeleton
    far = [
        PositionGoal((3.0, 1.0, 0.5), joint="effector_right"),
        PositionGoal((-0.9, 1.8, 0.1), joint="effector_left"),  # close: not clamped
    ]
    s = SolveSettings(max_iterations=1, clamp_distance=0.3, max_step=np.inf, use_limits=False)
    r = solve(sk, far, fx.q0, Method.DLS_CLAMPED, s)
    expected = fx.q0 + _clamped_dls_step(sk, far, fx.q0, s.damping, 0.3)
    np.testing.assert_allclose(r.q, expected, atol=1e-12)
    plain = solve(sk, far, fx.q0, Method.DLS, s)
    assert not np.allclose(plain.q, r.q)
    # Buss's per-effector rule: no clamping on the first iteration (D_max,i = ∞)
    s2 = SolveSettings(
        max_iterations=1, clamp_rule=ClampRule.PER_EFFECTOR, max_step=np.inf, use_limits=False
    )
    np.testing.assert_allclose(solve(sk, far, fx.q0, Method.DLS_CLAMPED, s2).q, plain.q, atol=1e-12)
    # ... afterwards D_i = max(d_i, 0) + D with d_i how much block i got closer: a
    # previous error 0.2 longer along the same direction lets the far block reach 0.5
    e = sk.errors(fx.q0, far).reshape(-1, 3)
    norm = np.linalg.norm(e, axis=1, keepdims=True)
    assert norm[0, 0] > 0.5 > norm[1, 0]
    prev = (e * (norm + 0.2) / norm).ravel()
    s4 = SolveSettings(
        clamp_rule=ClampRule.PER_EFFECTOR, clamp_distance=0.3, max_step=np.inf, use_limits=False
    )
    q1 = step_once(sk, far, fx.q0, Method.DLS_CLAMPED, s4, iteration=1, previous_e=prev)
    np.testing.assert_allclose(
        q1, fx.q0 + _clamped_dls_step(sk, far, fx.q0, s4.damping, 0.5), atol=1e-12
    )
    # ... and it still converges afterwards on a reachable problem
    goals, q0, _ = reachable_goals(fx, batch=4)
    s3 = SolveSettings(clamp_rule=ClampRule.PER_EFFECTOR, clamp_distance=0.1)
    assert np.all(solve(sk, goals, q0, Method.DLS_CLAMPED, s3).reached)


def test_jacobian_transpose_step_uses_busss_optimal_alpha():
    fx = arm_chain()
    sk = fx.skeleton
    goal = [PositionGoal((0.2, 0.3, 0.2), joint="hand")]
    s = SolveSettings(max_iterations=1, max_step=np.inf, use_limits=False)
    r = solve(sk, goal, fx.q0, Method.JACOBIAN_TRANSPOSE, s)
    e = sk.errors(fx.q0, goal)
    J = sk.jacobian(fx.q0, goal)
    jje = J @ J.T @ e
    alpha = (e @ jje) / (jje @ jje)
    np.testing.assert_allclose(r.q, fx.q0 + alpha * J.T @ e, atol=1e-14)


def test_sdls_step_is_bounded_by_gamma_max():
    fx = buss_double_y()
    sk = fx.skeleton
    s = SolveSettings(max_iterations=1, max_step=np.inf, use_limits=False, gamma_max=0.1)
    r = solve(sk, fx.goals, fx.q0, Method.SDLS, s)  # Buss's far-away targets
    assert np.max(np.abs(r.q - fx.q0)) <= 0.1 + 1e-15
    assert np.max(np.abs(r.q - fx.q0)) > 0.0


def test_pseudoinverse_step_solves_the_linear_system():
    fx = buss_y()
    sk = fx.skeleton
    goals, _, _ = reachable_goals(fx, batch=1, scale=0.3)
    goals = [single(g, 0) for g in goals]
    s = SolveSettings(max_iterations=1, max_step=np.inf, use_limits=False)
    r = solve(sk, goals, fx.q0, Method.PSEUDOINVERSE, s)
    J = sk.jacobian(fx.q0, goals)
    np.testing.assert_allclose(r.q - fx.q0, np.linalg.pinv(J) @ sk.errors(fx.q0, goals), atol=1e-12)


def test_adaptive_damping_and_target_jacobian_options_converge():
    fx = buss_y()
    goals, q0, _ = reachable_goals(fx, batch=4)
    r = solve(fx.skeleton, goals, q0, Method.DLS, SolveSettings(adaptive_damping=True))
    assert np.all(r.reached) and np.all(r.iterations <= 20)
    r = solve(fx.skeleton, goals, q0, Method.DLS, SolveSettings(target_jacobian=True))
    assert np.all(r.reached)


def test_max_step_clamps_each_update():
    fx = arm_chain()
    goal = [PositionGoal((0.0, -0.4, 0.3), joint="hand")]
    s = SolveSettings(max_iterations=1, max_step=0.05)
    for method in IMPLEMENTED:
        r = solve(fx.skeleton, goal, fx.q0, method, s)
        assert np.max(np.abs(r.q - fx.q0)) <= 0.05 + 1e-15


def test_paper_chains_solve():
    fx = soch_chain()
    r = solve(fx.skeleton, fx.goals, fx.q0, Method.DLS, SolveSettings(damping=1.0))
    assert r.reached
    for n in (2, 3):
        fx = ki_sheen_chain(n)
        assert solve(fx.skeleton, fx.goals, fx.q0, Method.DLS).reached
    fx = ki_sheen_chain(4)
    s = SolveSettings(max_iterations=1000)
    assert solve(fx.skeleton, fx.goals, fx.q0, Method.SDLS, s).reached


def test_unsupported_methods_raise_a_clear_error():
    fx = arm_chain()
    for method in Method:
        if method in STEP_CLASSES:
            continue
        with pytest.raises(UnsupportedMethodError, match=method.name) as info:
            solve(fx.skeleton, fx.goals, fx.q0, method)
        for name in ("JACOBIAN_TRANSPOSE", "PSEUDOINVERSE", "DLS", "DLS_CLAMPED", "SDLS"):
            assert name in str(info.value)
    with pytest.raises(InvalidInputError, match="Method member"):
        solve(fx.skeleton, fx.goals, fx.q0, "dls")  # type: ignore[arg-type]


def test_input_validation():
    fx = arm_chain()
    with pytest.raises(InvalidInputError, match=r"shape \(7,\)"):
        solve(fx.skeleton, fx.goals, np.zeros(6))
    with pytest.raises(InvalidInputError, match="finite"):
        solve(fx.skeleton, fx.goals, np.full(7, np.inf))
    with pytest.raises(InvalidInputError, match="at least one goal"):
        solve(fx.skeleton, [], fx.q0)
    for bad in (
        {"max_iterations": -1},
        {"tolerance": -1.0},
        {"max_step": 0.0},
        {"svd_cutoff": 1.0},
        {"damping": float("nan")},
        {"null_space": "rest"},
        {"q_rest": [np.nan]},
        {"use_limits": "no"},
        {"adaptive_damping": 1},
        {"target_jacobian": None},
        {"clamp_rule": "fixed"},
    ):
        with pytest.raises(InvalidInputError):
            SolveSettings(**bad)
    with pytest.raises(InvalidInputError, match="q_rest"):
        solve(fx.skeleton, fx.goals, fx.q0, Method.PSEUDOINVERSE, SolveSettings(q_rest=[0.0]))


def test_a_new_step_class_plugs_into_the_loop():
    """The extension point: subclass IKSolver, implement step(), register."""

    class HalfGaussNewton(IKSolver):
        method = Method.DLS

        def step(self, state: StepState) -> np.ndarray:
            return 0.5 * np.linalg.lstsq(state.J[0], state.e[0], rcond=None)[0][None]

    fx = arm_chain()
    goals, q0, _ = reachable_goals(fx, batch=1, scale=0.2)
    r = HalfGaussNewton().run(fx.skeleton, [single(g, 0) for g in goals], q0[0], SolveSettings())
    assert r.reached and 15 < r.iterations < 60
