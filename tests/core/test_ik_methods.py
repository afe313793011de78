"""Tests of core.chain.steps: CCD (Lee), LBFGSB (Ki & Sheen §3), TASK_PRIORITY (Ki & Sheen
§5–7) and EXTENDED_JACOBIAN (Šoch & Lórencz)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from core import (
    STEP_CLASSES,
    DirectionGoal,
    InvalidInputError,
    Method,
    OrientationGoal,
    PoseGoal,
    PositionGoal,
    SolveSettings,
    StopReason,
    basic_elements,
    element_jacobian,
    solve,
    step_once,
)
from core.chain.steps.task_priority import budget
from tests.core.ik_test_helpers import FIXTURES, reachable_goals, single, step_state
from tests.fixtures import (
    arm_chain,
    buss_double_y,
    buss_y,
    ki_sheen_chain,
    soch_chain,
    soch_ellipse_targets,
)

NEW = [Method.CCD, Method.LBFGSB, Method.TASK_PRIORITY, Method.EXTENDED_JACOBIAN]
EJ_FAST = {"extended_weight": 0.1}


#: (method, fixture) → (iteration budget, position_only, extra settings). Budgets to
#: reach every goal within 1e-6 from q0 for ALL 8 problems of test_ik.py (seed 42), with
#: default settings unless extra ones are given; measured maxima in comments. LBFGSB
#: iterations are outer iterations of ≤ lbfgsb_iterations (100) L-BFGS-B iterations
#: each. CCD (one sweep per iteration) and EXTENDED_JACOBIAN with Šoch & Lórencz's w = 1
#: converge only linearly (CCD: coordinate descent; EJ: its zero-change element rows
#: are a permanent, configuration-dependent damping); the arm's problem 5 (target with
#: the elbow 0.027 rad from straight, σ_min/σ_max of J = 1.6e-3) dominates their arm
#: budgets. CCD gets a position goal on the arm here; its pose-goal limitation is
#: test_ccd_on_arm_pose_goals. EJ with w = 0.1 (less element damping) is budgeted too.
BUDGETS = {
    (Method.CCD, "arm"): (400, True, {}),  # 252 (position goal)
    (Method.CCD, "Y"): (1000, False, {}),  # 755
    (Method.CCD, "double-Y"): (5000, False, {}),  # 4579
    (Method.LBFGSB, "arm"): (10, False, {}),  # 3
    (Method.LBFGSB, "Y"): (15, False, {}),  # 8
    (Method.LBFGSB, "double-Y"): (10, False, {}),  # 4
    (Method.TASK_PRIORITY, "arm"): (15, False, {}),  # 8
    (Method.TASK_PRIORITY, "Y"): (15, False, {}),  # 8
    (Method.TASK_PRIORITY, "double-Y"): (15, False, {}),  # 10
    (Method.EXTENDED_JACOBIAN, "arm"): (30_000, False, {}),  # 23475
    (Method.EXTENDED_JACOBIAN, "Y"): (600, False, {}),  # 436
    (Method.EXTENDED_JACOBIAN, "double-Y"): (2000, False, {}),  # 1643
    (Method.EXTENDED_JACOBIAN, "arm w=0.1"): (400, False, EJ_FAST),  # 245
    (Method.EXTENDED_JACOBIAN, "double-Y w=0.1"): (50, False, EJ_FAST),  # 30
}


def test_all_methods_are_implemented():
    assert set(STEP_CLASSES) == set(Method)


@pytest.mark.parametrize(("method", "name"), list(BUDGETS), ids=lambda x: getattr(x, "name", x))
def test_converges_within_budget(method, name):
    budget, position_only, extra = BUDGETS[(method, name)]
    fx = FIXTURES[name.split()[0]]()
    goals, q0, _ = reachable_goals(fx, position_only=position_only)
    assert q0.shape[0] == 8
    r = solve(fx.skeleton, goals, q0, method, SolveSettings(max_iterations=budget, **extra))
    assert np.all(r.reached), (r.iterations, r.error)
    assert np.all(r.error <= 1e-6) and np.all(r.iterations <= budget)
    assert all(x is StopReason.REACHED for x in r.reason)
    np.testing.assert_allclose(r.per_goal_error, fx.skeleton.goal_errors(r.q, goals), atol=1e-15)


def test_extended_jacobian_default_stall_window_lets_it_converge():
    """EJ's error is not monotone: on the double-Y problem 2 it can stay above its best
    value for dozens of iterations at a time while converging, so its default stall window
    is wider than the other methods'. EJ's transients amplify last-bit rounding
    differences (the BLAS kernel decides whether a 20-iteration window happens to stall
    here), so neither a stall nor an iteration count is asserted: only the windows and
    that the default reaches the goal."""
    # JT: its clamped conjugate-gradient steps are not quite monotone either (issue 16)
    wide = {Method.EXTENDED_JACOBIAN: 100, Method.JACOBIAN_TRANSPOSE: 50}
    assert all(STEP_CLASSES[m].stall_window == w for m, w in wide.items())
    assert all(c.stall_window == 20 for m, c in STEP_CLASSES.items() if m not in wide)
    fx = buss_double_y()
    goals, q0, _ = reachable_goals(fx)
    g = [single(x, 2) for x in goals]
    r = solve(fx.skeleton, g, q0[2], Method.EXTENDED_JACOBIAN, SolveSettings(max_iterations=5000))
    assert r.reached and r.reason is StopReason.REACHED


@pytest.mark.parametrize("method", NEW, ids=lambda m: m.name)
def test_every_method_reduces_error_on_a_simple_case(method):
    fx = arm_chain()
    goals, q0, _ = reachable_goals(fx, batch=3, scale=0.2, position_only=True)
    start = fx.skeleton.goal_errors(q0, goals).max(axis=1)
    # EXTENDED_JACOBIAN in 3-D: twists about a bent segment barely move the elements, so
    # those directions are nearly undamped and a full step overshoots; a 0.1 rad clamp.
    ms = 0.1 if method is Method.EXTENDED_JACOBIAN else 0.5
    one = solve(fx.skeleton, goals, q0, method, SolveSettings(max_iterations=1, max_step=ms))
    assert np.all(one.error < start)
    budget = {Method.CCD: 3000, Method.EXTENDED_JACOBIAN: 3000}.get(method, 400)  # linear
    s = SolveSettings(max_iterations=budget, max_step=ms)
    r = solve(fx.skeleton, goals, q0, method, s)
    assert np.all(r.reached)


def test_ccd_on_pose_goals_and_the_double_y_reduces_error_monotonically():
    """CCD's guarantee: every DOF update is an exact 1-D minimisation of the weighted
    objective (for position, direction and rotation blocks), so the objective never
    increases over a sweep; convergence is linear, hence no 1e-6 budget here."""
    for fx, position_only in ((arm_chain(), False), (buss_double_y(), True)):
        sk = fx.skeleton
        goals, q0, _ = reachable_goals(fx, batch=8, position_only=position_only)
        s = SolveSettings(max_step=np.inf)
        q = q0
        objs = [np.sum(sk.errors(q, goals) ** 2, axis=1)]
        for _ in range(30):
            q = step_once(sk, goals, q, Method.CCD, s)
            objs.append(np.sum(sk.errors(q, goals) ** 2, axis=1))
        objs = np.array(objs)
        assert np.all(np.diff(objs, axis=0) <= 1e-12 * objs[:-1])
        assert np.all(objs[-1] < 0.05 * objs[0])


def test_ccd_on_arm_pose_goals():
    """Plain CCD reached the 8 arm pose problems in 1723, 11773, 16193, 1682, 1056, —,
    1163 and 1632 sweeps; Anderson-accelerated in 16, 19, 21, 155, 181, —, 19, 186, with
    problem 5 (elbow 0.027 rad from straight at the target, σ_min/σ_max < 2e-3) still
    ~5e-5 off after 2,000. With the damped least-squares rescue (CCDStep._accelerate) all
    8 are reached at the defaults (measured: 11, 19, 16, 15, 12, 26, 15, 19 iterations);
    monotonicity is checked above."""
    fx = arm_chain()
    sk = fx.skeleton
    goals, q0, _ = reachable_goals(fx)
    r = solve(sk, goals, q0, Method.CCD)
    assert np.all(r.reached) and np.all(r.iterations <= 60)


def test_ccd_direction_and_orientation_updates_are_exact_per_dof():
    """For one hinge the closed-form angle is the exact minimiser of the objective."""
    fx = arm_chain()
    sk = fx.skeleton
    rng = np.random.default_rng(5)
    R = sk.forward(rng.uniform(-1, 1, sk.n_dofs))[3, :3, :3]
    d = R @ np.array([0.0, 1.0, 0.0])
    for goals in (
        [OrientationGoal(R, joint="hand")],
        [DirectionGoal((0.0, 1.0, 0.0), d, joint="hand")],
        [PositionGoal((0.2, 0.3, 0.1), joint="hand"), OrientationGoal(R, joint="hand", weight=0.3)],
    ):
        q = fx.q0.copy()
        s = SolveSettings(max_step=np.inf)
        q1 = step_once(sk, goals, q, Method.CCD, s)
        # the last DOF (wrist z) was updated first from q: a grid search agrees
        grid = q[-1] + np.linspace(-np.pi, np.pi, 20001)
        qs = np.tile(q, (grid.size, 1))
        qs[:, -1] = grid
        obj = ccd_objective(sk, goals, qs)
        qc = q.copy()
        qc[-1] = q1[-1]  # the first update of the sweep (later DOFs are not the last)
        assert ccd_objective(sk, goals, qc[None])[0] <= obj.min() + 1e-9


def ccd_objective(sk, goals, qs):
    """CCD's per-DOF objective: ‖e‖² of position/direction blocks, 2(1 − cos θ) ≈ θ²
    for rotation blocks (module docstring)."""
    e = sk.errors(qs, goals)
    out = np.zeros(len(qs))
    for blk in sk.blocks(goals):
        eb = e[:, blk.rows]
        if blk.kind.name == "ROTATION":
            th = np.linalg.norm(eb, axis=1) / np.sqrt(blk.weight)
            out += blk.weight * 2 * (1 - np.cos(th))
        else:
            out += np.sum(eb * eb, axis=1)
    return out


def test_lbfgsb_never_violates_its_bounds():
    fx = arm_chain(limits=True)
    sk = fx.skeleton
    rng = np.random.default_rng(7)
    _, _, qs = reachable_goals(fx, batch=4, scale=2.5)
    F = sk.forward(qs)
    goals = [PoseGoal(F[:, 3, :3, 3], F[:, 3, :3, :3], joint="hand")]
    q0 = rng.uniform(-3, 3, size=(4, sk.n_dofs))
    for max_step in (0.2, np.inf):
        s = SolveSettings(max_iterations=5, max_step=max_step, lbfgsb_iterations=30)
        q = sk.clip(q0)
        for _ in range(5):  # every update, not just the returned q
            qn = step_once(sk, goals, q, Method.LBFGSB, s)
            assert np.all(qn >= sk.lower) and np.all(qn <= sk.upper)
            assert np.all(np.abs(qn - q) <= max_step + 1e-15)
            q = qn
        r = solve(sk, goals, q0, Method.LBFGSB, s)
        assert np.all(r.q >= sk.lower) and np.all(r.q <= sk.upper)


def test_lbfgsb_minimises_the_tikhonov_objective():
    """With γ > 0 the result is the bounded minimiser of ‖e‖² + γ²‖q − q_rest‖²: its
    projected gradient vanishes (first-order optimality under bounds)."""
    fx = arm_chain(limits=True)
    sk = fx.skeleton
    goals = [PositionGoal((0.3, 0.35, 0.2), joint="hand")]
    gamma = 0.05
    rest = 0.5 * (sk.lower + sk.upper)
    s = SolveSettings(max_iterations=30, tikhonov=gamma, q_rest=rest, max_step=np.inf)
    r = solve(sk, goals, fx.q0, Method.LBFGSB, s)
    e = sk.errors(r.q, goals)
    grad = -2 * sk.jacobian(r.q, goals).T @ e + 2 * gamma**2 * (r.q - rest)
    at_lo = r.q <= sk.lower + 1e-12
    at_hi = r.q >= sk.upper - 1e-12
    free = ~at_lo & ~at_hi
    assert np.all(np.abs(grad[free]) < 1e-6)
    assert np.all(grad[at_lo] >= -1e-6) and np.all(grad[at_hi] <= 1e-6)
    assert not r.reached  # the regulariser biases the solution (documented failure mode)


def test_lbfgsb_subdivision_follows_the_goal_path():
    """Ki & Sheen §3: with subdivisions the effector approaches a far target through the
    intermediate targets; the result still reaches it."""
    fx = ki_sheen_chain(2)
    sk = fx.skeleton
    target = PositionGoal((1.0, 4.0, 0.0), joint="tip2")
    s = SolveSettings(max_step=np.inf, subdivisions=4, max_iterations=20, lbfgsb_iterations=40)
    r = solve(sk, [target], fx.q0, Method.LBFGSB, s)
    assert r.reached
    # the subdivided path starts with a different first update than the direct one
    q1 = step_once(sk, [target], fx.q0, Method.LBFGSB, s)
    s1 = SolveSettings(max_step=np.inf, lbfgsb_iterations=40)
    q1p = step_once(sk, [target], fx.q0, Method.LBFGSB, s1)
    assert np.max(np.abs(q1 - q1p)) > 1e-3


def _task_setup():
    fx = arm_chain()
    sk = fx.skeleton
    hand = PositionGoal((0.25, 0.45, 0.15), joint="hand")
    # the elbow is 0.30 m from the shoulder: a target 0.5 m away conflicts
    elbow = PositionGoal((0.0, 0.2, 0.46), joint="elbow", priority=1)
    return sk, hand, elbow, fx.q0


def test_task_priority_meets_priority_zero_and_is_least_squares_in_the_null_space():
    """The damped variant (§7, c = 0.1) on the hand/elbow conflict. The elbow task
    projected into the hand's null space is near an algorithmic singularity (the elbow
    cannot move radially); the default settings (c = 0) are checked on the same case in
    test_ik_step_formulas.py."""
    sk, hand, elbow, q0 = _task_setup()
    s = SolveSettings(max_iterations=300, priority_damping=0.1)
    r = solve(sk, [hand, elbow], q0, Method.TASK_PRIORITY, s)
    assert r.per_goal_error[0] <= 1e-6
    assert r.per_goal_error[1] > 0.1  # genuinely conflicting
    # explicit null-space least squares at the result: no null-space step improves e2
    J1 = sk.jacobian(r.q, [hand])
    J2 = sk.jacobian(r.q, [elbow])
    e2 = sk.errors(r.q, [elbow])
    _, sv, vt = np.linalg.svd(J1)
    N = vt[np.sum(sv > 1e-9) :].T  # basis of the null space of J1
    # first-order optimality of min ‖e2‖² over the null space: Nᵀ J2ᵀ e2 = 0
    assert np.linalg.norm(N.T @ J2.T @ e2) < 1e-6
    # and e2 is the constrained optimum: compare with SLSQP on min ‖e2‖² s.t. e1 = 0
    res = scipy.optimize.minimize(
        lambda q: float(np.sum(sk.errors(q, [elbow]) ** 2)),
        r.q + 0.05,
        jac=lambda q: -2 * sk.jacobian(q, [elbow]).T @ sk.errors(q, [elbow]),
        constraints=[{"type": "eq", "fun": lambda q: sk.errors(q, [hand])}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    best = float(np.linalg.norm(sk.errors(res.x, [elbow])))
    assert np.linalg.norm(sk.errors(res.x, [hand])) < 1e-6
    assert r.per_goal_error[1] <= best + 1e-6
    # plain least squares (DLS) compromises the hand instead
    d = solve(sk, [hand, PositionGoal(elbow.position, joint="elbow")], q0, Method.DLS, s)
    assert d.per_goal_error[0] > 1e-3


def test_task_priority_three_levels_and_damped_variant():
    fx = ki_sheen_chain(3)
    sk = fx.skeleton
    g = list(fx.goals)
    # tip2 (main chain end) most important, then tip1, then tip3 pulled far away
    goals = [
        PositionGoal(g[1].position, joint="tip2", priority=0),
        PositionGoal(g[0].position, joint="tip1", priority=1),
        PositionGoal(np.array(g[2].position) + (1.0, -1.0, 0.0), joint="tip3", priority=2),
    ]
    # independent reference: min ‖e_tip3‖² s.t. tip2 and tip1 met (their x, y rows; z
    # is identically 0 on the planar chain), SLSQP from the start's priority-0/1 solution
    upper = SolveSettings(max_iterations=300)
    q_up = solve(sk, goals[:2], fx.q0, Method.TASK_PRIORITY, upper).q
    res = scipy.optimize.minimize(
        lambda q: float(np.sum(sk.errors(q, goals[2:]) ** 2)),
        q_up,
        jac=lambda q: -2.0 * sk.jacobian(q, goals[2:]).T @ sk.errors(q, goals[2:]),
        constraints=[{"type": "eq", "fun": lambda q: sk.errors(q, goals[:2])[[0, 1, 3, 4]]}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    assert np.max(sk.goal_errors(res.x, goals[:2])) < 1e-8
    best = float(np.linalg.norm(sk.errors(res.x, goals[2:])))
    assert best == pytest.approx(0.742254, abs=1e-6)
    for c in (0.0, 0.05):
        s = SolveSettings(max_iterations=1000, priority_damping=c)
        r = solve(sk, goals, fx.q0, Method.TASK_PRIORITY, s)
        assert r.per_goal_error[0] <= 1e-6 and r.per_goal_error[1] <= 1e-6
        # tip3 unreachable with the others met: its least-squares best under them. Slow
        # (756 iterations, STALLED): the optimum stretches tip3's two links, a singular
        # configuration, so the lowest level's Gauss–Newton rate tends to 1 there.
        assert r.per_goal_error[2] == pytest.approx(best, abs=1e-6)
        assert r.iterations <= 900


def test_task_priority_reachable_lower_levels_converge_fast():
    """The lower levels' residual-scaled damping vanishes as their residual does, so
    consistent lower levels keep the Gauss–Newton (pseudo-inverse) speed: Ki & Sheen's
    2- and 3-effector chains with every level reachable reach all goals in 7 and 9
    iterations (6 and 7 undamped before the damping)."""
    for n_eff, measured in ((2, 7), (3, 9)):
        fx = ki_sheen_chain(n_eff)
        g = list(fx.goals)
        goals = [PositionGoal(g[1].position, joint="tip2", priority=0)]
        goals.append(PositionGoal(g[0].position, joint="tip1", priority=1))
        if n_eff == 3:
            goals.append(PositionGoal(g[2].position, joint="tip3", priority=2))
        r = solve(fx.skeleton, goals, fx.q0, Method.TASK_PRIORITY)
        assert r.reason is StopReason.REACHED and r.iterations <= measured + 3


def test_task_priority_single_level_step_is_the_pseudoinverse_step():
    """All goals at one priority: the step is exactly PSEUDOINVERSE's J⁺e (same SVD
    cutoff); the lower levels' damping and the second-order correction do not apply."""
    fx = arm_chain()
    q = fx.q0 + 0.2
    raw = SolveSettings(max_step=np.inf, use_limits=False)
    tp = step_once(fx.skeleton, fx.goals, q, Method.TASK_PRIORITY, raw)
    pinv = step_once(fx.skeleton, fx.goals, q, Method.PSEUDOINVERSE, raw)
    np.testing.assert_allclose(tp, pinv, rtol=0, atol=1e-12)


@pytest.mark.parametrize("chain", ["ki-sheen", "arm"])
def test_task_priority_default_settings_on_random_conflicts(chain):
    """Default settings, conflicting lower goals drawn at random (Ki & Sheen's 2-effector
    chain: tip1's target moved by 2–3.5 in the plane; the arm: elbow targets 0.35–0.6 m
    from the shoulder, whose elbow is 0.30 m from it) from perturbed starts: priority 0
    met to 1e-6 and the lower residual no larger than an SLSQP run from the result finds
    (min ‖e₁‖² s.t. e₀ = 0); reachable lower goals (a few draws) are met as well."""
    rng = np.random.default_rng(1)
    if chain == "arm":
        fx = arm_chain()
        high = PositionGoal((0.25, 0.45, 0.15), joint="hand")
        moving = np.arange(3)
    else:
        fx = ki_sheen_chain(2)
        high = PositionGoal(fx.goals[1].position, joint="tip2")
        moving = np.arange(2)
    sk = fx.skeleton
    conflicts = 0
    for _ in range(8):
        if chain == "arm":
            t = rng.normal(size=3)
            t *= rng.uniform(0.35, 0.6) / np.linalg.norm(t)
            low = PositionGoal(t, joint="elbow", priority=1)
        else:
            a = rng.uniform(0.0, 2.0 * np.pi)
            t = (
                np.asarray(fx.goals[0].position)
                + rng.uniform(2.0, 3.5) * np.r_[np.cos(a), np.sin(a), 0.0]
            )
            low = PositionGoal(t, joint="tip1", priority=1)
        q0 = fx.q0 + rng.uniform(-0.3, 0.3, sk.n_dofs)
        r = solve(sk, [high, low], q0, Method.TASK_PRIORITY, SolveSettings(max_iterations=1000))
        assert r.per_goal_error[0] <= 1e-6
        res = scipy.optimize.minimize(
            lambda q, low=low: float(np.sum(sk.errors(q, [low]) ** 2)),
            r.q,
            jac=lambda q, low=low: -2.0 * sk.jacobian(q, [low]).T @ sk.errors(q, [low]),
            constraints=[{"type": "eq", "fun": lambda q: sk.errors(q, [high])[moving]}],
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        assert np.linalg.norm(sk.errors(res.x, [high])) < 1e-8
        assert r.per_goal_error[1] <= np.linalg.norm(sk.errors(res.x, [low])) + 1e-6
        conflicts += bool(r.per_goal_error[1] > 0.01)
    # measured: all 8 arm draws conflict, 5 of the 8 Ki & Sheen ones (the others are
    # reachable in tip2's null space)
    assert conflicts == (8 if chain == "arm" else 5)


def test_task_priority_damped_step_is_bounded_at_a_singularity():
    fx = soch_chain(target=(300.0, 60.0, 0.0))
    sk = fx.skeleton  # q = 0: the stretched chain is singular
    s = SolveSettings(max_step=np.inf, use_limits=False)
    plain = step_once(sk, fx.goals, sk.zero() + 1e-3, Method.TASK_PRIORITY, s) - 1e-3
    damped = step_once(
        sk,
        fx.goals,
        sk.zero() + 1e-3,
        Method.TASK_PRIORITY,
        SolveSettings(max_step=np.inf, use_limits=False, priority_damping=50.0),
    )
    damped = damped - 1e-3
    assert np.max(np.abs(damped)) < 0.1 and np.max(np.abs(plain)) > 100.0


def test_basic_elements_of_the_planar_chain_match_soch_lorencz_eq_8():
    fx = soch_chain()
    sk = fx.skeleton
    assert len(basic_elements(sk)) == 5  # n − 1 pairs
    rng = np.random.default_rng(1)
    q = rng.uniform(-1, 1, sk.n_dofs)
    L = np.array([90.0, 60.0, 90.0, 150.0, 150.0, 90.0])
    Jx = element_jacobian(sk, q[None])[0].reshape(5, 3, 6)
    for i in range(5):
        a, b = q[i], q[i] + q[i + 1]
        # d/dq of (x, y) = (l_i cos q_i + l_{i+1} cos(q_i + q_{i+1}), ...)
        expect = np.zeros((3, 6))
        expect[0, i] = -L[i] * np.sin(a) - L[i + 1] * np.sin(b)
        expect[0, i + 1] = -L[i + 1] * np.sin(b)
        expect[1, i] = L[i] * np.cos(a) + L[i + 1] * np.cos(b)
        expect[1, i + 1] = L[i + 1] * np.cos(b)
        np.testing.assert_allclose(Jx[i], expect, atol=1e-9)
    # extended normal matrix is regular at the singular start q = 0
    J = sk.jacobian(sk.zero(), fx.goals)
    Jx0 = element_jacobian(sk, sk.zero()[None])[0]
    A = J.T @ J + Jx0.T @ Jx0
    assert np.linalg.matrix_rank(J) == 1 and np.linalg.matrix_rank(A) == 6


def _track(method, steps=7, **kw):
    """Šoch & Lórencz §3: from q = 0 the target walks the ellipse (64 points), one raw
    update per target. Returns distances to the target, tip displacements, max |Δq|."""
    fx = soch_chain()
    sk = fx.skeleton
    T = soch_ellipse_targets(64)
    q = sk.zero()
    tip = sk.forward(q)[-1, :3, 3]
    dist, disp, dq = [], [], []
    s = SolveSettings(max_step=np.inf, use_limits=False, **kw)
    for k in range(1, steps + 1):
        qn = step_once(sk, [PositionGoal(T[k], joint="tip")], q, method, s)
        dq.append(np.max(np.abs(qn - q)))
        q = qn
        t2 = sk.forward(q)[-1, :3, 3]
        disp.append(np.linalg.norm(t2 - tip))
        dist.append(np.linalg.norm(t2 - T[k]))
        tip = t2
    return np.array(dist), np.array(disp), np.array(dq)


def test_soch_lorencz_pseudoinverse_jumps_extended_jacobian_does_not():
    """Their Figs. 4–5: the ellipse step is 5.3 points; the pseudo-inverse jumps by
    ~340 points (Δq ≈ 7 rad) on step 2 from the near-singular stretched chain, the
    extended Jacobian moves < 25 points per step and stays within 20 points of the path."""
    step = np.linalg.norm(soch_ellipse_targets(64)[1] - soch_ellipse_targets(64)[0])
    pd, pdisp, pdq = _track(Method.PSEUDOINVERSE)
    # their weight w = 1 (the default became 0.01 in issue 16, for convergence at rest)
    ed, edisp, edq = _track(Method.EXTENDED_JACOBIAN, extended_weight=1.0)
    assert step == pytest.approx(5.3, abs=0.05)
    assert pdisp.max() > 300.0 and pdq.max() > 5.0 and pd.max() > 250.0
    assert edisp.max() < 25.0 and edq.max() < 0.5 and ed.max() < 20.0
    # both recover from the first, singular step (distance after step 1 below 2 points)
    assert pd[0] < 2.0 and ed[0] < 2.0
    # Šoch & Lórencz: w → 0 gives the plain (singular) Jacobian back: the jump returns
    wd, wdisp, _ = _track(Method.EXTENDED_JACOBIAN, extended_weight=1e-6)
    assert wdisp.max() > 300.0


@pytest.mark.parametrize("method", NEW, ids=lambda m: m.name)
def test_batched_agrees_with_one_by_one(method):
    fx = buss_y()
    goals, q0, _ = reachable_goals(fx, batch=3, scale=0.8)
    s = SolveSettings(max_iterations=30, lbfgsb_iterations=20)
    r = solve(fx.skeleton, goals, q0, method, s)
    for b in range(3):
        rb = solve(fx.skeleton, [single(g, b) for g in goals], q0[b], method, s)
        np.testing.assert_allclose(rb.q, r.q[b], atol=1e-10, rtol=0)
        assert rb.iterations == r.iterations[b] and rb.reason is r.reason[b]
        np.testing.assert_allclose(rb.per_goal_error, r.per_goal_error[b], atol=1e-10)


@pytest.mark.parametrize("method", NEW, ids=lambda m: m.name)
def test_limits_are_never_violated(method):
    fx = arm_chain(limits=True)
    sk = fx.skeleton
    rng = np.random.default_rng(7)
    _, _, qs = reachable_goals(fx, batch=4, scale=2.5)
    F = sk.forward(qs)
    goals = [PoseGoal(F[:, 3, :3, 3], F[:, 3, :3, :3], joint="hand")]
    q0 = rng.uniform(-3, 3, size=(4, sk.n_dofs))
    r = solve(sk, goals, q0, method, SolveSettings(max_iterations=40, lbfgsb_iterations=20))
    assert np.all(r.q >= sk.lower) and np.all(r.q <= sk.upper)
    np.testing.assert_allclose(r.per_goal_error, sk.goal_errors(r.q, goals), atol=1e-15)


@pytest.mark.parametrize("method", NEW, ids=lambda m: m.name)
def test_max_step_bounds_each_update(method):
    fx = arm_chain()
    goal = [PositionGoal((0.0, -0.4, 0.3), joint="hand")]
    q1 = step_once(fx.skeleton, goal, fx.q0, method, SolveSettings(max_step=0.05))
    assert 0.0 < np.max(np.abs(q1 - fx.q0)) <= 0.05 + 1e-15


@pytest.mark.parametrize("method", NEW, ids=lambda m: m.name)
def test_unreachable_targets_report_truthfully(method):
    fx = buss_y()
    far = [
        PositionGoal((6.0, 1.0, 0.0), joint="effector_right"),
        PositionGoal((-6.0, 1.0, 0.0), joint="effector_left"),
    ]
    r = solve(fx.skeleton, far, fx.q0, method, SolveSettings(max_iterations=60))
    assert not r.reached and r.error > 3.0 and np.all(np.isfinite(r.q))
    assert r.error == pytest.approx(float(fx.skeleton.goal_errors(r.q, far).max()), abs=1e-15)


def test_new_settings_are_validated():
    for bad in (
        {"tikhonov": -1.0},
        {"lbfgsb_iterations": 0},
        {"lbfgsb_memory": 0},
        {"lbfgsb_memory": 100},
        {"subdivisions": -1},
        {"subdivisions": 1.5},
        {"priority_damping": float("nan")},
        {"extended_weight": 0.0},
        {"stall_iterations": 0},
        {"stall_iterations": 2.0},
    ):
        with pytest.raises(InvalidInputError, match=next(iter(bad))):
            SolveSettings(**bad)


@pytest.mark.parametrize("method", list(Method), ids=lambda m: m.name)
def test_results_are_deterministic(method):
    """No unseeded randomness: the same problem solved twice gives identical results."""
    fx = arm_chain(limits=True)
    goals, q0, _ = reachable_goals(fx, batch=2, scale=0.3)
    s = SolveSettings(max_iterations=8, lbfgsb_iterations=5)
    a = solve(fx.skeleton, goals, q0, method, s)
    b = solve(fx.skeleton, goals, q0, method, s)
    assert np.array_equal(a.q, b.q) and np.array_equal(a.iterations, b.iterations)
    assert np.array_equal(a.per_goal_error, b.per_goal_error)


def test_task_priority_budget_keeps_every_component_within_max_step():
    """budget: the largest α ∈ [0, 1] with max |dq + α·delta| ≤ max_step, given
    max |dq| ≤ max_step; rounding-noise components of delta do not limit α."""
    rng = np.random.default_rng(3)
    m = 0.5
    for _ in range(200):
        dq = rng.uniform(-m, m, size=(4, 6))
        delta = rng.normal(size=(4, 6)) * rng.choice([0.01, 1.0, 10.0], size=(4, 1))
        a = budget(dq, delta, m)
        assert np.all((a >= 0.0) & (a <= 1.0))
        full = np.abs(dq + a[:, None] * delta)
        assert np.all(full <= m + 1e-12)
        # maximal: either the whole increment fits or some component sits at the bound
        at_bound = np.isclose(full.max(axis=1), m, rtol=0, atol=1e-12)
        assert np.all((a == 1.0) | at_bound)
    # a DOF already at the bound with a noise-level increment does not block the level
    dq = np.array([[m, 0.0]])
    assert budget(dq, np.array([[1e-17, 1.0]]), m)[0] == pytest.approx(0.5)
    assert budget(dq, np.array([[1.0, 0.0]]), m)[0] == 0.0
    assert budget(dq, np.array([[-1.0, 0.0]]), m)[0] == 1.0
    assert np.all(budget(dq, np.ones((1, 2)), np.inf) == 1.0)


def _ccd_sweeps(sk, goals, q0, s):
    """(fast, general) CCD updates of one sweep from q0 (b, n)."""
    from core import CCDStep
    from core.chain.steps.common import dof_bounds, goal_joints

    st = step_state(sk, goals, q0, s)
    lo, hi = dof_bounds(st)
    gj = goal_joints(sk, st.goals)
    active = [b for b in st.blocks if b.weight > 0]
    return CCDStep._fast_sweep(st, active, gj, lo, hi), CCDStep._general_sweep(st, gj, lo, hi)


def test_ccd_fast_path_equals_the_re_evaluating_sweep():
    """The sweep without forward kinematics per DOF (Rodrigues updates of goal points,
    goal rotations and inner Euler axes) gives the same update as the general sweep
    (forward kinematics after every DOF): hinge trees with weighted position goals, the
    arm with pose goals, Balls of every Euler order with a locked component, limits,
    an active trust box (max_step) and the target-based Jacobian."""
    from core import Ball, Hinge, Joint, Skeleton

    fx = buss_double_y()
    goals, q0, _ = reachable_goals(fx, batch=3, scale=0.8)
    goals = [
        PositionGoal(g.position, joint=g.joint, weight=w)
        for g, w in zip(goals, (1, 2, 0.5, 0), strict=True)
    ]
    cases = [(fx.skeleton, goals, q0)]
    arm = arm_chain(limits=True)
    goals, q0, _ = reachable_goals(arm, batch=3, scale=0.8)
    goals = [PoseGoal(goals[0].position, goals[0].rotation, joint="hand", weight=0.7)]
    cases.append((arm.skeleton, goals, arm.skeleton.clip(q0)))
    rng = np.random.default_rng(11)
    for order in ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"):
        sk = Skeleton(
            [
                Joint("a", -1, np.eye(4), Ball(order)),
                Joint("b", 0, _offset((0.0, 0.3, 0.0)), Hinge((1.0, 0.0, 0.0))),
                Joint("c", 1, _offset((0.0, 0.25, 0.0)), Ball(order, locked=(False, True, False))),
                Joint("d", 2, _offset((0.0, 0.1, 0.05))),
            ]
        )
        qs = rng.uniform(-1, 1, size=(3, sk.n_dofs))
        F = sk.forward(qs)
        g = [
            OrientationGoal(F[:, 3, :3, :3], joint="d", weight=0.3),
            PositionGoal(F[:, 3, :3, 3], joint="d", point=(0.0, 0.02, 0.0)),
            PositionGoal(F[:, 1, :3, 3], joint="b", weight=0.5),
        ]
        cases.append((sk, g, np.zeros((3, sk.n_dofs))))
    for sk, goals, q0 in cases:
        for s in (SolveSettings(), SolveSettings(max_step=0.05, target_jacobian=True)):
            fast, slow = _ccd_sweeps(sk, goals, q0, s)
            assert np.max(np.abs(fast)) > 0.01
            np.testing.assert_allclose(fast, slow, atol=1e-12, rtol=0)


def _offset(t):
    m = np.eye(4)
    m[:3, 3] = t
    return m


def test_task_priority_conflicts_batched_equal_one_by_one():
    """The lower levels' damping and the second-order correction (one re-evaluation at
    q + Δq) act row by row: a batch of hand/elbow conflicts (batched elbow targets, rows
    finishing at different iterations) equals the problems solved one by one."""
    fx = arm_chain()
    rng = np.random.default_rng(4)
    t = rng.normal(size=(4, 3))
    t *= rng.uniform(0.35, 0.6, size=(4, 1)) / np.linalg.norm(t, axis=1, keepdims=True)
    goals = [
        PositionGoal((0.25, 0.45, 0.15), joint="hand"),
        PositionGoal(t, joint="elbow", priority=1),
    ]
    q0 = fx.q0 + rng.uniform(-0.3, 0.3, size=(4, fx.skeleton.n_dofs))
    s = SolveSettings(max_iterations=400)
    r = solve(fx.skeleton, goals, q0, Method.TASK_PRIORITY, s)
    assert len(set(r.iterations.tolist())) > 1
    for b in range(4):
        one = [goals[0], PositionGoal(t[b], joint="elbow", priority=1)]
        rb = solve(fx.skeleton, one, q0[b], Method.TASK_PRIORITY, s)
        assert rb.iterations == r.iterations[b] and rb.reason is r.reason[b]
        np.testing.assert_allclose(rb.q, r.q[b], rtol=0, atol=1e-9)
        assert r.per_goal_error[b, 0] <= 1e-6


def test_task_priority_with_limits_keeps_priority_zero_and_stays_inside():
    """The limited arm (README limb limits) with random conflicting elbow targets: on the
    way the lower level pushes DOFs into their limits (the results end inside). The
    step's clamping loop (a DOF past a limit is clamped for every level when priority 0
    takes it there, else frozen for the lower levels) meets the hand to 1e-6 in every
    draw with q inside the limits. Measured before the loop (the loop's clip alone): the
    hand 7e-3–7e-2 off in 8/8."""
    fx = arm_chain(limits=True)
    sk = fx.skeleton
    hand = PositionGoal((0.25, 0.45, 0.15), joint="hand")
    rng = np.random.default_rng(1)
    for _ in range(8):
        t = rng.normal(size=3)
        t *= rng.uniform(0.35, 0.6) / np.linalg.norm(t)
        elbow = PositionGoal(t, joint="elbow", priority=1)
        q0 = sk.clip(fx.q0 + rng.uniform(-0.3, 0.3, sk.n_dofs))
        r = solve(sk, [hand, elbow], q0, Method.TASK_PRIORITY, SolveSettings(max_iterations=1000))
        assert r.per_goal_error[0] <= 1e-6 and r.per_goal_error[1] > 0.05
        assert np.all(r.q >= sk.lower) and np.all(r.q <= sk.upper)
