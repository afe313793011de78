"""A goaled limb's limit gap (``core.body.gap``): how far its goal lies from the limb's
within-limits workspace, its derivative with respect to the shoulder frame (forward
differences of a twist, chained with the skeleton's DOF axes) against central
differences, a zero gap meaning a feasible swivel, and the repair it drives inside
``solve_body`` (frames of a smooth motion stay off the whole-body pass)."""

from __future__ import annotations

import numpy as np
import pytest

import core.body.solve as body_solve
from benchmarks.body import motion
from core import BodySettings, solve_body
from core.body.closed import Kernel, Local
from core.body.gap import _sq_gap, limit_gap, twist_rows
from core.geometry.rotations import axis_angle_to_matrix
from core.limb import in_intervals
from core.limb.feasible import feasible_intervals
from tests.fixtures.humanoid import end_goals, humanoid, random_poses

BODY = humanoid()
SK = BODY.skeleton
INSET = 0.1


def _mismatched(seed: int, n: int) -> tuple[np.ndarray, tuple, dict]:
    """Poses ``q`` and end goals made from *other* random poses (so that many limbs have
    no feasible swivel from ``q``'s shoulders), with the solver's plan."""
    rng = np.random.default_rng(seed)
    q = random_poses(BODY, n, rng)
    goals = tuple(end_goals(BODY, random_poses(BODY, n, rng)))
    return q, goals, body_solve._plan(BODY, goals, BodySettings())


def _local(an: object, goals: tuple, q: np.ndarray, rows: np.ndarray) -> Local:
    return body_solve._shoulder_goals(BODY, goals, an, q, rows)


def _twisted(local: Local, k: int, h: float) -> Local:
    """The goal seen from the shoulder frame moved by ``h`` along twist direction ``k``
    (0–2 rotations about, 3–5 translations along its axes)."""
    if k < 3:
        turn = axis_angle_to_matrix(np.eye(3)[k], -h)
        rot = None if local.rotation is None else turn @ local.rotation
        return Local(local.position @ turn.T, rot)
    return Local(local.position - h * np.eye(3)[k - 3], local.rotation)


def _true_gap(model: object, local: Local) -> float:
    """One row's limit gap by a dense search over φ and golden-section refinement (the
    reference for the solver's samples and parabola)."""
    k = Kernel(model, local, None, swivel=np.zeros(1))
    lim = model.limits

    def f(phi: np.ndarray) -> np.ndarray:
        return _sq_gap(lim, k.sh, k.wr, phi[None], INSET)[0]

    grid = np.linspace(-np.pi, np.pi, 2000, endpoint=False)
    best = grid[np.argmin(f(grid))]
    a, b = best - 2 * np.pi / 2000, best + 2 * np.pi / 2000
    g = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(60):
        x1, x2 = b - g * (b - a), a + g * (b - a)
        f1, f2 = f(np.array([x1, x2]))
        a, b = (a, x2) if f1 < f2 else (x1, b)
    return float(np.sqrt(f(np.array([0.5 * (a + b)]))[0]))


def _gap_at(model: object, local: Local, phi: float) -> float:
    """One row's root-sum-square outside the inset limits at the swivel ``phi``."""
    k = Kernel(model, local, None, swivel=np.zeros(1))
    return float(np.sqrt(_sq_gap(model.limits, k.sh, k.wr, np.array([[phi]]), INSET)[0, 0]))


def test_gap_is_the_least_violation_over_the_swivel() -> None:
    """The samples and parabola find the gap from above, to within 0.01 rad; a search
    started at the returned φ finds it again."""
    q, goals, plan = _mismatched(3, 12)
    rows = np.arange(q.shape[0])
    for an in plan["analytic"]:
        local = _local(an, goals, q, rows)
        r, _, phi = limit_gap(an.model, local, None, INSET)
        again, _, _ = limit_gap(an.model, local, None, INSET, phi)
        assert np.all(again <= r + 1e-12)
        for i in range(rows.size):
            one = Local(local.position[i : i + 1], local.rotation[i : i + 1])
            assert -1e-12 <= r[i] - _true_gap(an.model, one) <= 1e-2


def test_gap_gradient_is_the_twist_derivative_at_its_swivel() -> None:
    """The gradient (envelope theorem: the swivel held at the minimum) against central
    differences of the violation at that swivel along each twist of the shoulder frame."""
    q, goals, plan = _mismatched(3, 12)
    rows = np.arange(q.shape[0])
    checked = 0
    for an in plan["analytic"]:
        local = _local(an, goals, q, rows)
        r, grad, phi = limit_gap(an.model, local, None, INSET)
        for i in np.flatnonzero(r > 0.02):
            one = Local(local.position[i : i + 1], local.rotation[i : i + 1])
            h = 1e-5
            fd = [
                (
                    _gap_at(an.model, _twisted(one, k, h), phi[i])
                    - _gap_at(an.model, _twisted(one, k, -h), phi[i])
                )
                / (2 * h)
                for k in range(6)
            ]
            scale = max(1.0, float(np.max(np.abs(fd))))
            np.testing.assert_allclose(grad[i], fd, atol=1e-3 * scale)
            checked += 1
    assert checked >= 6


def test_gap_row_over_q_matches_finite_differences() -> None:
    q, goals, plan = _mismatched(4, 8)
    free = plan["free"]
    rows = np.arange(q.shape[0])
    checked = 0
    for an in plan["analytic"]:
        kin = SK.kinematics(q)
        local = body_solve._shoulder_goals(BODY, goals, an, q, rows, kin)
        r, grad, phi = limit_gap(an.model, local, None, INSET)
        frt, _ = body_solve._shoulder_frame(BODY, an, q, kin)
        row = twist_rows(SK, kin, BODY.joints[an.limb][0], free, grad, frt)
        for i in np.flatnonzero(r > 0.02)[:3]:
            fd = np.zeros(free.size)
            h = 1e-6
            sel = np.array([i])
            for d in range(free.size):
                qp, qm = q[sel].copy(), q[sel].copy()
                qp[0, free[d]] += h
                qm[0, free[d]] -= h
                rp = _gap_at(an.model, _local(an, goals, qp, sel), phi[i])
                rm = _gap_at(an.model, _local(an, goals, qm, sel), phi[i])
                fd[d] = (rp - rm) / (2 * h)
            scale = max(1.0, float(np.max(np.abs(fd))))
            np.testing.assert_allclose(row[i], fd, atol=1e-3 * scale)
            checked += 1
    assert checked >= 4


def test_zero_gap_means_a_feasible_swivel_with_margin() -> None:
    rng = np.random.default_rng(7)
    q = random_poses(BODY, 40, rng)
    goals = tuple(end_goals(BODY, q))  # reachable from q's own shoulders
    plan = body_solve._plan(BODY, goals, BodySettings())
    rows = np.arange(q.shape[0])
    zero = 0
    for an in plan["analytic"]:
        local = _local(an, goals, q, rows)
        r, _, phi = limit_gap(an.model, local, None, INSET)
        sets = feasible_intervals([Kernel(an.model, local, None, swivel=phi).feasible_part()])[0]
        for i in np.flatnonzero(r == 0.0):
            assert in_intervals(phi[i : i + 1], sets[i]).all()
            zero += 1
    assert zero >= 40


def test_repair_keeps_a_smooth_motion_off_the_whole_body_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The benchmark's warm-started motion: before the limit rows 16 of its 48 frames went
    through the whole-body pass (a limb without a feasible swivel after the numeric
    level); the repair settles all but a few in the warm path, every goal met within
    limits."""
    calls = []
    whole = body_solve._whole_body

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return whole(*args, **kwargs)

    monkeypatch.setattr(body_solve, "_whole_body", counted)
    frames = motion(49)
    q = frames[0].copy()
    for f in range(1, 49):
        sol = solve_body(BODY, end_goals(BODY, frames[f]), q)
        assert np.all(sol.goal_error <= 1e-6) and sol.within_limits
        q = sol.q
    assert len(calls) <= 6
