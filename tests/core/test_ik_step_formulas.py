"""Issue 4, the Method bullets: each step equals the formula the issue (and the paper)
states, computed here independently with plain numpy on one problem at a time
(``step_once`` with the per-step clamp and the limits switched off):

* PSEUDOINVERSE — J⁺e by SVD with singular values ≤ svd_cutoff · σ_max cut;
* DLS — Jᵀ(JJᵀ + λ²I)⁻¹e with a fixed λ (both the m ≤ n and the m > n branch) and the
  documented adaptive λ² = λ_max²(1 − (σ_min/ε)²) for σ_min < ε, else 0;
* SDLS — Buss & Kim's selectively damped least squares, the issue's formula term by term;
* EXTENDED_JACOBIAN — the least-squares solution of [J; w·J_elements] Δq = [e; 0];
* TASK_PRIORITY (default: priority 0 exact, c = 0) — a conflicting lower level ends at its
  least-squares best in the null space of the higher one (an independent SLSQP optimum).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize

from core import Method, PoseGoal, PositionGoal, SolveSettings, element_jacobian, solve, step_once
from tests.core.ik_test_helpers import reachable_goals, single
from tests.fixtures import arm_chain, buss_double_y, buss_y, ki_sheen_chain, soch_chain

RAW = {"max_step": math.inf, "use_limits": False}


def _raw_step(sk, goals, q, method, **kw):
    """One unclamped, unclipped update Δq of ``method`` from q (n,)."""
    return step_once(sk, goals, q, method, SolveSettings(**RAW, **kw)) - q


def _problems():
    """(skeleton, goals, q) on the Y, the double-Y (far targets: Buss's) and the arm."""
    out = []
    for fx, batch_goals in ((buss_y(), True), (buss_double_y(), False), (arm_chain(), True)):
        if batch_goals:
            goals, q0, _ = reachable_goals(fx, batch=1, scale=0.6)
            goals = [single(g, 0) for g in goals]
        else:
            goals = list(fx.goals)
        q = fx.q0 + np.random.default_rng(5).uniform(-0.3, 0.3, fx.skeleton.n_dofs)
        out.append((fx.skeleton, goals, q))
    return out


# ------------------------------------------------------------------ PSEUDOINVERSE


def test_pseudoinverse_cuts_singular_values_below_the_relative_threshold():
    for sk, goals, q in _problems():
        J = sk.jacobian(q, goals)
        e = sk.errors(q, goals)
        s = np.linalg.svd(J, compute_uv=False)
        # a threshold between the two smallest relative singular values cuts exactly one
        cut = math.sqrt(s[-1] * s[-2]) / s[0]
        for cutoff, rank in ((1e-6, len(s)), (cut, len(s) - 1)):
            u, sv, vt = np.linalg.svd(J, full_matrices=False)
            inv = np.zeros_like(sv)
            inv[:rank] = 1.0 / sv[:rank]
            expect = vt.T @ (inv * (u.T @ e))
            dq = _raw_step(sk, goals, q, Method.PSEUDOINVERSE, svd_cutoff=cutoff)
            np.testing.assert_allclose(dq, expect, atol=1e-9 * np.abs(expect).max())


def test_pseudoinverse_at_an_exact_singularity_is_finite_and_minimal():
    """Šoch & Lórencz's stretched chain at q = 0: J (3×6) has rank 1. The cut leaves the
    minimum-norm least-squares step (numpy's pinv with the same relative cutoff)."""
    fx = soch_chain()
    sk, q = fx.skeleton, fx.skeleton.zero()
    J = sk.jacobian(q, fx.goals)
    e = sk.errors(q, fx.goals)
    assert np.linalg.matrix_rank(J) == 1
    dq = _raw_step(sk, fx.goals, q, Method.PSEUDOINVERSE)
    np.testing.assert_allclose(dq, np.linalg.pinv(J, rcond=1e-6) @ e, atol=1e-12)
    assert np.all(np.isfinite(dq)) and np.abs(dq).max() < 1.0


# ------------------------------------------------------------------ DLS


def _dls_reference(J, e, lam):
    return J.T @ np.linalg.solve(J @ J.T + lam**2 * np.eye(len(e)), e)


@pytest.mark.parametrize("lam", [0.01, 0.3, 2.0])
def test_dls_fixed_damping_is_busss_equation_11(lam):
    fx = arm_chain()
    sk = fx.skeleton
    rng = np.random.default_rng(2)
    q = rng.uniform(-1, 1, sk.n_dofs)
    F = sk.forward(rng.uniform(-1, 1, sk.n_dofs))
    few = [PoseGoal(F[3, :3, 3], F[3, :3, :3], joint="hand")]  # m = 6 ≤ n = 7
    many = few + [PoseGoal(F[2, :3, 3], F[2, :3, :3], joint="wrist")]  # m = 12 > n = 7
    for goals in (few, many):
        J = sk.jacobian(q, goals)
        e = sk.errors(q, goals)
        dq = _raw_step(sk, goals, q, Method.DLS, damping=lam)
        np.testing.assert_allclose(dq, _dls_reference(J, e, lam), rtol=1e-9, atol=1e-12)


def test_dls_single_problem_falls_back_to_lu_when_cholesky_fails(monkeypatch):
    """One problem is solved by LAPACK's Cholesky (dposv); should the factorisation
    report JJᵀ + λ²I not positive definite (rounding at a singularity), the step is the
    batched path's LU solve — the same Δq to rounding."""
    import core.chain.steps.dls as ik

    fx = arm_chain()
    sk = fx.skeleton
    rng = np.random.default_rng(4)
    q = rng.uniform(-1, 1, sk.n_dofs)
    goal = PositionGoal(sk.forward(rng.uniform(-1, 1, sk.n_dofs))[3, :3, 3], joint="hand")
    s = SolveSettings(**RAW, damping=0.05)
    chol = step_once(sk, [goal], q, Method.DLS, s)
    monkeypatch.setattr(ik, "dposv", lambda a, b, lower: (a, b, 1))  # "not PD"
    lu = step_once(sk, [goal], q, Method.DLS, s)
    np.testing.assert_allclose(lu, chol, rtol=0, atol=1e-13)


def test_dls_adaptive_damping_follows_the_documented_rule():
    """λ² = λ_max²(1 − (σ_min/ε)²) when σ_min < ε, else 0 (Gauss–Newton, = J⁺e for a
    full-row-rank J)."""
    lam_max = 0.5
    for sk, goals, q in _problems():
        J = sk.jacobian(q, goals)
        e = sk.errors(q, goals)
        smin = np.linalg.svd(J, compute_uv=False)[-1]
        # ε below σ_min: no damping at all
        eps = 0.5 * smin
        dq = _raw_step(
            sk, goals, q, Method.DLS, adaptive_damping=True, damping=lam_max, damping_threshold=eps
        )
        np.testing.assert_allclose(dq, np.linalg.pinv(J) @ e, rtol=1e-7, atol=1e-10)
        # ε above σ_min: the rule's λ
        for eps in (2.0 * smin, 10.0 * smin):
            lam = lam_max * math.sqrt(1.0 - (smin / eps) ** 2)
            dq = _raw_step(
                sk,
                goals,
                q,
                Method.DLS,
                adaptive_damping=True,
                damping=lam_max,
                damping_threshold=eps,
            )
            np.testing.assert_allclose(dq, _dls_reference(J, e, lam), rtol=1e-9, atol=1e-12)
    # at an exact singularity (σ_min = 0) the full λ_max
    fx = soch_chain()
    sk, q = fx.skeleton, fx.skeleton.zero()
    J, e = sk.jacobian(q, fx.goals), sk.errors(q, fx.goals)
    dq = _raw_step(sk, fx.goals, q, Method.DLS, adaptive_damping=True, damping=lam_max)
    np.testing.assert_allclose(dq, _dls_reference(J, e, lam_max), rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ SDLS


def _sdls_reference(J, e, gamma_max, cutoff):
    """Buss & Kim's SDLS, literally as issue 4 states it (loops, one problem)."""

    def clamp_max_abs(w, d):
        m = np.abs(w).max()
        return w if m <= d else w * (d / m)

    u, s, vt = np.linalg.svd(J, full_matrices=False)
    n_blocks = J.shape[0] // 3
    rho = np.array(
        [
            sum(np.linalg.norm(J[3 * lb : 3 * lb + 3, j]) for lb in range(n_blocks))
            for j in range(J.shape[1])
        ]
    )
    total = np.zeros(J.shape[1])
    for i, sigma in enumerate(s):
        if sigma <= cutoff * s[0] or sigma <= 0.0:
            continue
        alpha = u[:, i] @ e
        n_i = sum(np.linalg.norm(u[3 * lb : 3 * lb + 3, i]) for lb in range(n_blocks))
        m_i = np.sum(np.abs(vt[i]) * rho) / sigma
        gamma = min(1.0, n_i / m_i) * gamma_max
        total += clamp_max_abs(alpha / sigma * vt[i], gamma)
    return clamp_max_abs(total, gamma_max)


@pytest.mark.parametrize("gamma_max", [math.pi / 4, 0.05])
def test_sdls_step_is_buss_and_kims_formula(gamma_max):
    clamped = 0
    for sk, goals, q in _problems():
        J = sk.jacobian(q, goals)
        e = sk.errors(q, goals)
        expect = _sdls_reference(J, e, gamma_max, 1e-6)
        dq = _raw_step(sk, goals, q, Method.SDLS, gamma_max=gamma_max)
        np.testing.assert_allclose(dq, expect, rtol=1e-9, atol=1e-13)
        clamped += np.abs(dq).max() >= gamma_max - 1e-12
    if gamma_max < 0.1:
        assert clamped  # the final ClampMaxAbs was exercised


def test_sdls_batched_step_equals_single_steps():
    fx = buss_double_y()
    sk = fx.skeleton
    goals, _, qs = reachable_goals(fx, batch=4, scale=0.8)
    q = np.zeros_like(qs)
    s = SolveSettings(**RAW)
    batched = step_once(sk, goals, q, Method.SDLS, s)
    for b in range(4):
        one = step_once(sk, [single(g, b) for g in goals], q[b], Method.SDLS, s)
        np.testing.assert_allclose(batched[b], one, atol=1e-13, rtol=0)


# ------------------------------------------------------------------ EXTENDED_JACOBIAN


@pytest.mark.parametrize("weight", [1.0, 0.1])
def test_extended_jacobian_step_is_the_stacked_least_squares_solution(weight):
    """Normal equations + LU give the least-squares solution of [J; w J_x] Δq = [e; 0]
    (Šoch & Lórencz: element rows with desired change 0): on their planar chain (full
    column rank, their method) and on the double-Y (3-D tree generalisation). The
    implementation adds the documented guard μ = 1e-12 · max diag(AᵀA) to the normal
    matrix: exact agreement with the ridge included, and within 1e-4 (relative) without
    it (the guard moves the step by ~5e-6 relative on the double-Y with w = 0.1, where
    cond(A)² ≈ 3e6)."""
    fx = soch_chain(target=(350.0, 40.0, 0.0))
    cases = [(fx.skeleton, list(fx.goals), np.full(6, 0.2))]
    dy = buss_double_y()
    cases.append((dy.skeleton, list(dy.goals), np.full(dy.skeleton.n_dofs, 0.1)))
    for sk, goals, q in cases:
        n = sk.n_dofs
        J = sk.jacobian(q, goals)
        e = sk.errors(q, goals)
        Jx = weight * element_jacobian(sk, q[None])[0]
        A = np.vstack([J, Jx])
        assert np.linalg.matrix_rank(A) == n  # over-determined, full column rank
        rhs = np.concatenate([e, np.zeros(len(Jx))])
        plain = np.linalg.lstsq(A, rhs, rcond=None)[0]
        mu = 1e-12 * np.max(np.diag(A.T @ A))
        ridge = np.linalg.lstsq(
            np.vstack([A, math.sqrt(mu) * np.eye(n)]),
            np.concatenate([rhs, np.zeros(n)]),
            rcond=None,
        )[0]
        dq = _raw_step(sk, goals, q, Method.EXTENDED_JACOBIAN, extended_weight=weight)
        scale = np.abs(plain).max()
        np.testing.assert_allclose(dq, ridge, rtol=0, atol=1e-8 * scale)
        np.testing.assert_allclose(dq, plain, rtol=0, atol=1e-4 * scale)


# ------------------------------------------------------------------ TASK_PRIORITY


def _ki_sheen_conflict(offset):
    """Ki & Sheen's 2-effector chain: tip2 at priority 0 (reachable), tip1 at priority 1
    pulled by ``offset`` to a point it cannot reach while tip2 is held."""
    fx = ki_sheen_chain(2)
    tip1_goal, tip2_goal = fx.goals
    high = PositionGoal(tip2_goal.position, joint="tip2", priority=0)
    low = PositionGoal(np.asarray(tip1_goal.position) + offset, joint="tip1", priority=1)
    return fx.skeleton, high, low, fx.q0


def _null_space_gradient(sk, high, low, q):
    """‖Nᵀ J₁ᵀ e₁‖ with N a basis of the null space of the priority-0 rows at q: zero at
    the least-squares best of the lower goal within that null space (first order)."""
    J0 = sk.jacobian(q, [high])
    J1 = sk.jacobian(q, [low])
    e1 = sk.errors(q, [low])
    _, sv, vt = np.linalg.svd(J0)
    null = vt[np.sum(sv > 1e-9 * sv[0]) :].T
    assert null.shape[1] == sk.n_dofs - 2  # planar: tip2 fixes 2 of the 9 DOFs
    return float(np.linalg.norm(null.T @ J1.T @ e1)), float(np.linalg.norm(J1.T @ e1))


def test_task_priority_damped_keeps_priority_zero_against_an_unreachable_lower_goal():
    """The damped variant (§7, c = 1): tip2 met to 1e-6, tip1 at its least-squares best
    within tip2's null space, while weighted DLS compromises tip2."""
    sk, high, low, q0 = _ki_sheen_conflict((0.0, 2.0, 0.0))
    s = SolveSettings(max_iterations=1000, priority_damping=1.0)
    r = solve(sk, [high, low], q0, Method.TASK_PRIORITY, s)
    assert r.per_goal_error[0] <= 1e-6
    assert r.per_goal_error[1] > 0.4  # genuinely in conflict
    projected, full = _null_space_gradient(sk, high, low, r.q)
    assert projected < 1e-5 and full > 1.0
    d = solve(sk, [high, PositionGoal(low.position, joint="tip1")], q0, Method.DLS)
    assert d.per_goal_error[0] > 1e-3


def _arm_conflict():
    """test_ik_methods.py's case: the hand (priority 0) and an elbow target 0.5 m from
    the shoulder (the elbow is 0.30 m from it)."""
    fx = arm_chain()
    hand = PositionGoal((0.25, 0.45, 0.15), joint="hand")
    elbow = PositionGoal((0.0, 0.2, 0.46), joint="elbow", priority=1)
    return fx.skeleton, hand, elbow, fx.q0


def _null_space_optimum(sk, high, low, starts):
    """Independent reference: the smallest ‖e_low‖ over SLSQP runs of
    min ‖e_low(q)‖² s.t. e_high(q) = 0 (rows of e_high that move: a planar chain's z row
    is identically 0 and would make the constraint Jacobian singular) from ``starts``."""
    moving = np.flatnonzero(np.abs(sk.jacobian(starts[0], [high])).sum(axis=1) > 0.0)
    best = math.inf
    for q in starts:
        res = scipy.optimize.minimize(
            lambda x: float(np.sum(sk.errors(x, [low]) ** 2)),
            q,
            jac=lambda x: -2.0 * sk.jacobian(x, [low]).T @ sk.errors(x, [low]),
            constraints=[
                {
                    "type": "eq",
                    "fun": lambda x: sk.errors(x, [high])[moving],
                    "jac": lambda x: -sk.jacobian(x, [high])[moving],
                }
            ],
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 1000},
        )
        if np.linalg.norm(sk.errors(res.x, [high])) <= 1e-8:
            best = min(best, float(np.linalg.norm(sk.errors(res.x, [low]))))
    return best


#: case → (measured iterations with the defaults, the lower goal's optimum (SLSQP))
_EXACT_CASES = {
    "ki-sheen-(2,3)": (103, 1.665657),
    "ki-sheen-(0,2)": (83, 0.484851),
    "arm-elbow": (68, 0.243828),
}


@pytest.mark.parametrize("case", list(_EXACT_CASES))
def test_task_priority_exact_keeps_priority_zero_against_an_unreachable_lower_goal(case):
    """The default settings (priority 0 undamped, c = 0): priority 0 met to 1e-6 and the
    conflicting lower goal at its least-squares best within priority 0's null space, equal
    to an independent SLSQP optimum (min ‖e₁‖² s.t. e₀ = 0) from the result and from
    priority-0 solutions near six other starts. Before the lower levels' residual-scaled
    damping and the second-order correction (TaskPriorityStep) the exact lower level
    oscillated at full max_step and its drift kept priority 0 off: tip2 ≈ 0.1 (STALLED
    after 28 iterations), the arm's hand 7.2e-3 (STALLED after 52)."""
    if case == "arm-elbow":
        sk, high, low, q0 = _arm_conflict()
    else:
        offset = (2.0, 3.0, 0.0) if case == "ki-sheen-(2,3)" else (0.0, 2.0, 0.0)
        sk, high, low, q0 = _ki_sheen_conflict(offset)
    r = solve(sk, [high, low], q0, Method.TASK_PRIORITY, SolveSettings(max_iterations=1000))
    assert r.per_goal_error[0] <= 1e-6
    measured, optimum = _EXACT_CASES[case]
    assert r.iterations <= 2 * measured  # STALLED once ‖e₁‖ stops improving
    rng = np.random.default_rng(0)
    near = [r.q + 0.05] + [q0 + rng.uniform(-1.0, 1.0, sk.n_dofs) for _ in range(6)]
    high_only = SolveSettings(max_iterations=500)
    starts = [r.q] + [solve(sk, [high], q, Method.DLS, high_only).q for q in near]
    best = _null_space_optimum(sk, high, low, starts)
    assert best == pytest.approx(optimum, abs=1e-6)
    assert r.per_goal_error[1] == pytest.approx(best, abs=1e-6)
    if case != "arm-elbow":  # the arm's null-space basis has its own test (test_ik_methods)
        # first order: the stall rule stops the linear convergence with ‖e₁‖² ~1e-10
        # above its optimum, i.e. a projected gradient of ~1e-5
        projected, full = _null_space_gradient(sk, high, low, r.q)
        assert projected < 1e-4 and full > 0.1
