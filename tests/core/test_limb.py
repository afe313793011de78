"""Tests of core.limb: the analytic 7-DOF limb solver (Tolani, Goswami & Badler 2000, §3.1–3.2).

Everything the solver reports is re-derived here independently: poses by calling
``Limb.forward`` ourselves, the swivel angle by measuring the elbow on Eq. (6)'s circle,
joint limits by extracting both Euler families and testing every angle ourselves, and the
feasible swivel intervals by brute-force sampling of φ (§3.2.4).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from core import (
    EULER_ORDERS,
    LIMIT_TOLERANCE,
    REACH_TOLERANCE,
    EulerLimits,
    InvalidGoalError,
    InvalidLimbError,
    InvalidLimitsError,
    InvalidOrderError,
    Limb,
    LimberError,
    LimbLimits,
    LimbSolution,
    PoseGoal,
    PositionGoal,
    ShapeMismatchError,
    SwivelStrategy,
    axis_angle_to_matrix,
    euler_to_matrix,
    feasible_swivel,
    matrix_to_euler_families,
    quat_to_matrix,
    solve_limb,
)
from tests.core.limb_test_helpers import (
    SETTINGS,
    assert_finite,
    circ_dist,
    euler_ok,
    in_range,
    no_warnings,
    pose_within,
    rand_rot,
    readme_arm,
    tf,
    unit,
    wrap,
)

PI = math.pi
TAU = 2.0 * math.pi
#: Round-trip accuracy demanded by the issue: position (× limb length) and orientation (rad).
EXACT = 1e-10
#: Dense swivel sampling for brute-force checks (≥ 7,200 values, step 0.05°).
N_PHI = 7200
PHI_GRID = np.linspace(-PI, PI, N_PHI, endpoint=False)
PHI_STEP = TAU / N_PHI


# ======================================================================================
# Helpers (independent of the solver's internals)
# ======================================================================================


def rot_angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (rad) of aᵀb, computed robustly via atan2 (accurate near 0)."""
    d = np.swapaxes(a, -1, -2) @ b
    skew = np.stack(
        [d[..., 2, 1] - d[..., 1, 2], d[..., 0, 2] - d[..., 2, 0], d[..., 1, 0] - d[..., 0, 1]],
        axis=-1,
    )
    tr = np.trace(d, axis1=-2, axis2=-1)
    return np.arctan2(0.5 * np.linalg.norm(skew, axis=-1), 0.5 * (tr - 1.0))


def is_rotation(r: np.ndarray, tol: float = 1e-12) -> bool:
    eye = np.eye(3)
    ok = np.abs(np.swapaxes(r, -1, -2) @ r - eye).max() <= tol
    return bool(ok and np.all(np.linalg.det(r) > 0.0))


def fk_errors(
    limb: Limb, sol: LimbSolution, goal: PositionGoal | PoseGoal
) -> tuple[np.ndarray, np.ndarray]:
    """Position and orientation errors of ``sol`` computed by our own forward kinematics."""
    f = limb.forward(sol.shoulder, sol.elbow, sol.wrist)
    pos = np.asarray(goal.position)
    pe = np.linalg.norm(f[..., :3, 3] - pos, axis=-1)
    if isinstance(goal, PoseGoal):
        oe = rot_angle(f[..., :3, :3], np.asarray(goal.rotation))
    else:
        oe = np.zeros_like(pe)
    return pe, oe


def assert_reported_errors_truthful(
    limb: Limb, sol: LimbSolution, goal: PositionGoal | PoseGoal
) -> tuple[np.ndarray, np.ndarray]:
    pe, oe = fk_errors(limb, sol, goal)
    np.testing.assert_allclose(sol.position_error, pe, rtol=1e-9, atol=1e-13 * limb.length)
    np.testing.assert_allclose(sol.orientation_error, oe, rtol=1e-9, atol=1e-13)
    return pe, oe


def assert_exact(limb: Limb, sol: LimbSolution, goal: PositionGoal | PoseGoal) -> None:
    """FK(IK(goal)) = goal to the issue's tolerance, checked by our own FK."""
    assert_finite(sol)
    pe, oe = assert_reported_errors_truthful(limb, sol, goal)
    assert np.all(pe <= EXACT * limb.length), f"position error {np.max(pe)}"
    assert np.all(oe <= EXACT), f"orientation error {np.max(oe)}"
    assert np.all(sol.reachable)


def elbow_ok(
    theta: np.ndarray, limits: LimbLimits | None, tol: float = LIMIT_TOLERANCE
) -> np.ndarray:
    if limits is None or limits.elbow is None:
        return np.ones(np.shape(theta), dtype=bool)
    return in_range(theta, limits.elbow[0], limits.elbow[1], tol)


def batch_goal(goal: PositionGoal | PoseGoal, n: int) -> PositionGoal | PoseGoal:
    if isinstance(goal, PoseGoal):
        return PoseGoal(
            np.broadcast_to(np.asarray(goal.position), (n, 3)).copy(),
            np.broadcast_to(np.asarray(goal.rotation), (n, 3, 3)).copy(),
        )
    return PositionGoal(np.broadcast_to(np.asarray(goal.position), (n, 3)).copy())


def unlimited(limb: Limb, keep_elbow: bool = True) -> Limb:
    """Same geometry and swivel reference, no shoulder/wrist limits.

    Keeping the elbow limits keeps the θ4 root rule (and thus the elbow circle) identical.
    """
    lim = limb.limits
    elbow = lim.elbow if (keep_elbow and lim is not None) else None
    return limb.with_limits(None if elbow is None else LimbLimits(elbow=elbow))


def sweep(
    limb: Limb, goal: PositionGoal | PoseGoal, phi: np.ndarray = PHI_GRID, **kw: object
) -> LimbSolution:
    """One batched solve of ``goal`` at every swivel angle ``phi``."""
    return solve_limb(limb, batch_goal(goal, len(phi)), swivel=phi, **kw)  # type: ignore[arg-type]


def in_intervals(phi: np.ndarray, intervals: tuple[tuple[float, float], ...]) -> np.ndarray:
    phi = np.asarray(phi)
    out = np.zeros(phi.shape, dtype=bool)
    for lo, hi in intervals:
        out |= ((phi - lo) % TAU) <= (hi - lo)
    return out


def near_endpoint(
    phi: np.ndarray, intervals: tuple[tuple[float, float], ...], d: float
) -> np.ndarray:
    out = np.zeros(np.shape(phi), dtype=bool)
    for lo, hi in intervals:
        out |= (circ_dist(phi, lo) <= d) | (circ_dist(phi, hi) <= d)
    return out


def check_interval_format(intervals: tuple[tuple[float, float], ...]) -> None:
    """Documented format: lo ∈ [-π, π), lo < hi ≤ lo + 2π, sorted and disjoint."""
    prev_hi = -math.inf
    for lo, hi in intervals:
        assert -PI - 1e-12 <= lo < PI, intervals
        assert lo < hi <= lo + TAU + 1e-12, intervals
        assert lo >= prev_hi, intervals
        prev_hi = hi
    if intervals:
        first_lo = intervals[0][0]
        assert intervals[-1][1] <= first_lo + TAU + 1e-12, intervals


# --------------------------------------------------------------------------------------
# Limbs
# --------------------------------------------------------------------------------------


@pytest.fixture
def arm() -> Limb:
    return readme_arm()


def hinge_quality(a: np.ndarray, b: np.ndarray, k: np.ndarray) -> tuple[float, float]:
    """(r / (L1 L2), |k · limb-plane normal|) of a candidate limb (Eq. 5's amplitude)."""
    ta_l = a[:3, :3].T @ a[:3, 3]
    tb = b[:3, 3]
    r = math.hypot(float(ta_l @ tb - (k @ ta_l) * (k @ tb)), float(ta_l @ np.cross(k, tb)))
    normal = np.cross(ta_l, tb)  # limb plane at θ4 = 0, in the elbow's frame
    nn = float(np.linalg.norm(normal))
    perp = abs(float(k @ normal)) / nn if nn > 1e-9 else 0.0
    return r / (np.linalg.norm(ta_l) * np.linalg.norm(tb)), perp


def random_geometry(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random A, B (rotations, offsets off any bone line), E, and a general hinge axis."""
    while True:
        a = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.15, 0.5))
        b = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.15, 0.5))
        e = tf(rand_rot(rng), rng.normal(size=3) * 0.05)
        k = unit(rng.normal(size=3))
        r, perp = hinge_quality(a, b, k)
        if r > 0.3 and perp < 0.97:
            return {"a": a, "b": b, "effector": e, "elbow_axis": k}


def random_limb(rng: np.random.Generator, limits: LimbLimits | None = None) -> Limb:
    return Limb(**random_geometry(rng), limits=limits)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Hypothesis strategies
# --------------------------------------------------------------------------------------

coord = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
quat = st.tuples(coord, coord, coord, coord).filter(lambda q: sum(x * x for x in q) > 0.05)
vec3 = st.tuples(coord, coord, coord).filter(lambda v: sum(x * x for x in v) > 0.05)


@st.composite
def limbs(draw: st.DrawFn) -> Limb:
    """General limbs: A and B rotated with offsets off the bone line, any effector, and a
    hinge axis that is generally NOT perpendicular to the limb plane (§3.2.1)."""
    ra, rb, re = (quat_to_matrix(np.array(draw(quat))) for _ in range(3))
    ta = unit(np.array(draw(vec3))) * draw(st.floats(0.1, 0.5))
    tb = unit(np.array(draw(vec3))) * draw(st.floats(0.1, 0.5))
    te = np.array(draw(vec3)) * draw(st.floats(0.0, 0.1))
    k = unit(np.array(draw(vec3)))
    a, b = tf(ra, ta), tf(rb, tb)
    r, perp = hinge_quality(a, b, k)
    assume(r > 0.2 and perp < 0.999)  # generic: not the paper's perpendicular-axis special case
    return Limb(a, b, elbow_axis=k, effector=tf(re, te))


@st.composite
def configs(draw: st.DrawFn) -> tuple[np.ndarray, float, np.ndarray]:
    r1 = quat_to_matrix(np.array(draw(quat)))
    r2 = quat_to_matrix(np.array(draw(quat)))
    theta = draw(st.floats(-PI, PI))
    return r1, theta, r2


swivels = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)


# ======================================================================================
# Round trips (FK(IK(goal)) = goal)
# ======================================================================================


@SETTINGS
@given(limb=limbs(), cfg=configs(), phi=swivels)
def test_round_trip_pose_goal(
    limb: Limb, cfg: tuple[np.ndarray, float, np.ndarray], phi: float
) -> None:
    r1, theta, r2 = cfg
    g = limb.forward(r1, theta, r2)
    goal = PoseGoal(g[:3, 3], g[:3, :3])
    with no_warnings():
        sol = solve_limb(limb, goal, swivel=phi)
    assert_exact(limb, sol, goal)
    assert sol.within_limits is True
    assert is_rotation(sol.shoulder) and is_rotation(sol.wrist)
    assert -PI <= sol.swivel < PI
    assert circ_dist(sol.swivel, phi) <= 1e-12
    assert sol.feasible_swivel == ((-PI, PI),)


@SETTINGS
@given(limb=limbs(), cfg=configs(), phi=swivels)
def test_round_trip_position_goal(
    limb: Limb, cfg: tuple[np.ndarray, float, np.ndarray], phi: float
) -> None:
    r1, theta, r2 = cfg
    g = limb.forward(r1, theta, r2)
    goal = PositionGoal(g[:3, 3])
    with no_warnings():
        sol = solve_limb(limb, goal, swivel=phi, wrist=r2)
    assert_exact(limb, sol, goal)
    np.testing.assert_array_equal(sol.wrist, r2)  # the wrist is held fixed
    assert sol.orientation_error == 0.0
    assert circ_dist(sol.swivel, phi) <= 1e-12


@SETTINGS
@given(
    limb=limbs(), r1=st.tuples(coord, coord, coord, coord), theta=st.floats(-PI, PI), phi=swivels
)
def test_round_trip_position_goal_default_wrist_is_identity(
    limb: Limb, r1: tuple[float, ...], theta: float, phi: float
) -> None:
    assume(sum(x * x for x in r1) > 0.05)
    g = limb.forward(quat_to_matrix(np.array(r1)), theta, np.eye(3))
    goal = PositionGoal(g[:3, 3])
    sol = solve_limb(limb, goal, swivel=phi)
    assert_exact(limb, sol, goal)
    np.testing.assert_array_equal(sol.wrist, np.eye(3))


@pytest.mark.parametrize("kind", ["pose", "position"])
def test_round_trip_batched_random_limbs(kind: str) -> None:
    """Many random limbs × many random configurations and swivels, batched."""
    rng = np.random.default_rng(20240611)
    for _ in range(20):
        limb = random_limb(rng)
        n = 200
        r1, r2 = rand_rot(rng, n), rand_rot(rng, n)
        theta = rng.uniform(-PI, PI, n)
        g = limb.forward(r1, theta, r2)
        phi = rng.uniform(-20, 20, n)
        if kind == "pose":
            goal: PositionGoal | PoseGoal = PoseGoal(g[:, :3, 3], g[:, :3, :3])
            with no_warnings():
                sol = solve_limb(limb, goal, swivel=phi)
        else:
            goal = PositionGoal(g[:, :3, 3])
            with no_warnings():
                sol = solve_limb(limb, goal, swivel=phi, wrist=r2)
        assert_exact(limb, sol, goal)
        assert np.all(circ_dist(sol.swivel, phi) <= 1e-12)
        assert np.all((sol.swivel >= -PI) & (sol.swivel < PI))


def test_round_trip_human_arm(arm: Limb) -> None:
    rng = np.random.default_rng(7)
    n = 2000
    r1, r2 = rand_rot(rng, n), rand_rot(rng, n)
    theta = rng.uniform(-PI, PI, n)
    g = arm.forward(r1, theta, r2)
    phi = rng.uniform(-PI, PI, n)
    goal = PoseGoal(g[:, :3, 3], g[:, :3, :3])
    sol = solve_limb(arm, goal, swivel=phi)
    assert_exact(arm, sol, goal)
    # The hinge is the only elbow DOF and there are two roots ±: |θ4| is determined.
    np.testing.assert_allclose(np.abs(wrap(sol.elbow)), np.abs(wrap(theta)), atol=1e-7)
    assert np.isclose(arm.length, 0.63)


def test_forward_matches_chain_product() -> None:
    """Limb.forward is G = T1(R1)·A·T_k(θ4)·B·T2(R2)·E (Eq. 3), batched, plus positions."""
    rng = np.random.default_rng(3)
    limb = random_limb(rng)
    r1, r2 = rand_rot(rng, 5), rand_rot(rng, 5)
    theta = rng.uniform(-PI, PI, 5)
    got = limb.forward(r1, theta, r2)
    for i in range(5):
        hinge = tf(axis_angle_to_matrix(limb.elbow_axis, theta[i]))
        want = tf(r1[i]) @ limb.a @ hinge @ limb.b @ tf(r2[i]) @ limb.effector
        np.testing.assert_allclose(got[i], want, atol=1e-14)
        np.testing.assert_allclose(limb.forward(r1[i], theta[i], r2[i]), want, atol=1e-14)
        np.testing.assert_allclose(
            limb.elbow_position(r1[i]), (tf(r1[i]) @ limb.a)[:3, 3], atol=1e-15
        )
        np.testing.assert_allclose(
            limb.wrist_position(r1[i], theta[i]),
            (tf(r1[i]) @ limb.a @ hinge @ limb.b)[:3, 3],
            atol=1e-15,
        )
    ta, tb, te = (np.linalg.norm(np.asarray(m)[:3, 3]) for m in (limb.a, limb.b, limb.effector))
    assert limb.length == pytest.approx(ta + tb + te, rel=1e-15)


def test_frames_are_the_chain_products_of_each_bone() -> None:
    """Limb.frames: T1, T1·A·T_k(θ4), T1·A·T_k(θ4)·B·T2 per pose; the last times E is
    Limb.forward; broadcasting like forward."""
    rng = np.random.default_rng(4)
    limb = random_limb(rng)
    r1, r2 = rand_rot(rng, 5), rand_rot(rng, 5)
    theta = rng.uniform(-PI, PI, 5)
    got = limb.frames(r1, theta, r2)
    assert got.shape == (5, 3, 4, 4)
    for i in range(5):
        hinge = tf(axis_angle_to_matrix(limb.elbow_axis, theta[i]))
        np.testing.assert_allclose(got[i, 0], tf(r1[i]), atol=1e-14)
        np.testing.assert_allclose(got[i, 1], tf(r1[i]) @ limb.a @ hinge, atol=1e-14)
        np.testing.assert_allclose(got[i, 2] @ limb.effector, limb.forward(r1[i], theta[i], r2[i]),
                                   atol=1e-14)
    np.testing.assert_allclose(limb.frames(r1[0], theta, r2[0])[3],
                               limb.frames(r1[0], theta[3], r2[0]), atol=1e-14)
    with pytest.raises(ShapeMismatchError):
        limb.frames(r1, theta[:3], r2)


def test_pole_position_lies_on_the_elbow_side_of_the_swivel_plane() -> None:
    """The pole point is in the plane of shoulder, elbow and wrist, on the elbow's side of
    the shoulder-wrist line, |tA| beyond the elbow along the circle's radius; on a straight
    limb it is the elbow."""
    rng = np.random.default_rng(5)
    limb = random_limb(rng)
    r1 = rand_rot(rng, 6)
    theta = rng.uniform(0.3, 2.5, 6)
    pole = limb.pole_position(r1, theta)
    e, w = limb.elbow_position(r1), limb.wrist_position(r1, theta)
    for i in range(6):
        n = np.cross(e[i], w[i])
        assert abs(np.dot(pole[i], n)) < 1e-12 * np.linalg.norm(n) * 10
        wn = w[i] / np.linalg.norm(w[i])
        radius = e[i] - wn * np.dot(e[i], wn)
        step = pole[i] - e[i]
        np.testing.assert_allclose(step, radius / np.linalg.norm(radius)
                                   * np.linalg.norm(np.asarray(limb.a)[:3, 3]), atol=1e-12)
    np.testing.assert_allclose(limb.pole_position(r1[0], theta[0], distance=0.0), e[0],
                               atol=1e-15)


# ======================================================================================
# The swivel angle: the elbow on Eq. (6)'s circle
# ======================================================================================


def circle_frame(limb: Limb, wg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n̂ (shoulder → wrist target), û (swivel reference projected ⊥ n̂), v̂ = n̂ × û."""
    n = unit(wg)
    ref = np.asarray(limb.swivel_reference)
    u = unit(ref - (ref @ n) * n)
    return n, u, np.cross(n, u)


def check_elbow_circle(limb: Limb, goal: PoseGoal | PositionGoal, wrist: np.ndarray | None) -> None:
    phi = np.linspace(-PI, PI, 97)[:-1] + 0.01
    kw = {} if wrist is None else {"wrist": wrist}
    if isinstance(goal, PoseGoal):  # wrist target: goal minus the rotated effector offset
        rw = np.asarray(goal.rotation) @ np.asarray(limb.effector)[:3, :3].T
        wg = np.asarray(goal.position) - rw @ np.asarray(limb.effector)[:3, 3]
    else:  # position goals: the chain's terminal point is the effector point
        wg = np.asarray(goal.position)
    # The circle needs a shoulder-wrist axis; the folded goal at the shoulder (d = 0) is
    # tested on its own (test_goal_at_shoulder_no_nan), and the property tests skip it.
    if float(np.linalg.norm(wg)) <= 1e-6:
        return
    sol = sweep(limb, goal, phi, **kw)
    assert np.all(sol.reachable)
    if isinstance(goal, PoseGoal):
        reached = limb.wrist_position(sol.shoulder, sol.elbow)
        np.testing.assert_allclose(reached, np.broadcast_to(wg, reached.shape), atol=1e-12)
        l2 = float(np.linalg.norm(np.asarray(limb.b)[:3, 3]))
    else:
        l2 = float(np.linalg.norm(limb.forward(np.eye(3), 0.0, wrist)[:3, 3] - limb.a[:3, 3]))  # type: ignore[index]
    n, u, v = circle_frame(limb, wg)
    e = limb.elbow_position(sol.shoulder)
    # Independent triangle: |e| = L1, |wg − e| = L2, |wg| = d.
    l1 = float(np.linalg.norm(np.asarray(limb.a)[:3, 3]))
    d = float(np.linalg.norm(wg))
    np.testing.assert_allclose(np.linalg.norm(e, axis=-1), l1, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(wg - e, axis=-1), l2, rtol=1e-10)
    cos_a = (l1 * l1 + d * d - l2 * l2) / (2 * l1 * d)
    centre = l1 * cos_a * n
    radius = l1 * math.sqrt(max(0.0, 1.0 - cos_a * cos_a))
    rel = e - centre
    np.testing.assert_allclose(rel @ n, 0.0, atol=1e-12)  # plane ⊥ n̂ through the centre
    # Squared radii: sqrt(1 - cos²) loses half the digits on a nearly degenerate circle
    # (limb almost straight or folded), the squares keep them.
    np.testing.assert_allclose(np.sum(rel * rel, axis=-1), radius * radius, atol=1e-12)
    if radius > 1e-3 * l1:
        measured = np.arctan2(rel @ v, rel @ u)  # angle from û about n̂
        assert np.max(circ_dist(measured, phi)) < 1e-9
        assert np.max(circ_dist(sol.swivel, phi)) < 1e-12


@SETTINGS
@given(limb=limbs(), cfg=configs())
def test_elbow_traces_eq6_circle_pose_goal(
    limb: Limb, cfg: tuple[np.ndarray, float, np.ndarray]
) -> None:
    r1, theta, r2 = cfg
    g = limb.forward(r1, theta, r2)
    check_elbow_circle(limb, PoseGoal(g[:3, 3], g[:3, :3]), None)


@settings(SETTINGS, max_examples=30)
@given(limb=limbs(), cfg=configs())
def test_elbow_traces_eq6_circle_position_goal(
    limb: Limb, cfg: tuple[np.ndarray, float, np.ndarray]
) -> None:
    r1, theta, r2 = cfg
    g = limb.forward(r1, theta, r2)
    check_elbow_circle(limb, PositionGoal(g[:3, 3]), r2)


def test_elbow_circle_explicit_swivel_reference(arm: Limb) -> None:
    """φ is measured from the projection of an explicit reference, by the right-hand rule."""
    ref = unit(np.array([0.3, -0.2, 0.9]))
    limb = readme_arm(swivel_reference=ref)
    np.testing.assert_allclose(limb.swivel_reference, ref, atol=1e-15)
    g = limb.forward(rand_rot(np.random.default_rng(1)), 1.2, np.eye(3))
    check_elbow_circle(limb, PoseGoal(g[:3, 3], g[:3, :3]), None)
    # A non-unit reference is normalised.
    assert np.allclose(readme_arm(swivel_reference=5 * ref).swivel_reference, ref)


def test_default_swivel_reference_zero_pose_has_zero_swivel() -> None:
    """Default â: the bent zero pose has φ = 0; for a straight zero pose (the human arm),
    φ = 0 puts the elbow on the side it moves to when θ4 becomes positive."""
    arm = readme_arm()
    for theta in (0.3, 1.0, 2.5):
        g = arm.forward(np.eye(3), theta, np.eye(3))
        sol = solve_limb(arm, PoseGoal(g[:3, 3], g[:3, :3]), swivel=0.0)
        np.testing.assert_allclose(sol.shoulder, np.eye(3), atol=1e-12)
        assert sol.elbow == pytest.approx(theta, abs=1e-12)
    rng = np.random.default_rng(11)
    for _ in range(10):
        limb = random_limb(rng)
        g = limb.forward(np.eye(3), 0.0, np.eye(3))
        sol = solve_limb(limb, PoseGoal(g[:3, 3], g[:3, :3]), swivel=0.0)
        # The elbow circle only depends on distances, so either θ4 root puts the elbow
        # at the zero pose's elbow when φ = 0.
        np.testing.assert_allclose(
            limb.elbow_position(sol.shoulder), np.asarray(limb.a)[:3, 3], atol=1e-12
        )


# ======================================================================================
# Reach: out of reach, folded, stretched and degenerate goals
# ======================================================================================


def reach_range(limb: Limb, wrist: np.ndarray, terminal: str = "effector") -> tuple[float, float]:
    """Min and max shoulder→terminal-point distance over θ4 (dense sampling + refinement)."""

    def dist(th: float | np.ndarray) -> np.ndarray:
        if terminal == "effector":
            return np.linalg.norm(limb.forward(np.eye(3), th, wrist)[..., :3, 3], axis=-1)
        return np.linalg.norm(limb.wrist_position(np.eye(3), th), axis=-1)

    th = np.linspace(-PI, PI, 20001)
    d = dist(th)
    out = []
    for sign, i in ((1.0, int(np.argmin(d))), (-1.0, int(np.argmax(d)))):
        res = minimize_scalar(
            lambda t, s=sign: s * float(dist(t)),
            bounds=(th[i] - 1e-3, th[i] + 1e-3),
            method="bounded",
            options={"xatol": 1e-12},
        )
        out.append(sign * float(res.fun))
    return out[0], out[1]


@pytest.mark.parametrize("seed", range(8))
def test_unreachable_far_position_goal_stretches_toward_goal(seed: int) -> None:
    rng = np.random.default_rng(seed)
    limb = readme_arm() if seed == 0 else random_limb(rng)
    wrist = np.eye(3) if seed == 0 else rand_rot(rng)
    _, dmax = reach_range(limb, wrist)
    for scale in (1.0 + 1e-6, 1.5, 10.0, 1e6):
        target = unit(rng.normal(size=3)) * dmax * scale
        goal = PositionGoal(target)
        for phi in (0.0, 2.0):
            with no_warnings():
                sol = solve_limb(limb, goal, swivel=phi, wrist=wrist)
            assert_finite(sol)
            assert sol.reachable is False
            p = limb.forward(sol.shoulder, sol.elbow, sol.wrist)[:3, 3]
            # On the ray from the shoulder to the goal, at max reach.
            assert np.linalg.norm(np.cross(unit(p), unit(target))) < 1e-9
            assert p @ target > 0
            assert np.linalg.norm(p) == pytest.approx(dmax, abs=1e-9 * limb.length)
            assert_reported_errors_truthful(limb, sol, goal)
            assert sol.position_error == pytest.approx(np.linalg.norm(target) - dmax, rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_unreachable_far_pose_goal_aims_wrist_at_goal(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    limb = readme_arm() if seed == 0 else random_limb(rng)
    _, wmax = reach_range(limb, np.eye(3), terminal="wrist")
    rot = rand_rot(rng)
    pos = unit(rng.normal(size=3)) * 3.0 * limb.length
    goal = PoseGoal(pos, rot)
    e = np.asarray(limb.effector)
    wg = pos - rot @ e[:3, :3].T @ e[:3, 3]
    with no_warnings():
        sol = solve_limb(limb, goal, swivel=0.4)
    assert_finite(sol)
    assert sol.reachable is False
    w = limb.wrist_position(sol.shoulder, sol.elbow)
    assert np.linalg.norm(np.cross(unit(w), unit(wg))) < 1e-9 and w @ wg > 0
    assert np.linalg.norm(w) == pytest.approx(wmax, abs=1e-9 * limb.length)
    _, oe = assert_reported_errors_truthful(limb, sol, goal)
    assert oe <= 1e-12  # the wrist still takes the goal's orientation


@pytest.mark.parametrize("seed", range(8))
def test_unreachable_too_close_folds_toward_goal(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    if seed == 0:
        limb, wrist = readme_arm(), np.eye(3)
    else:
        while True:
            limb, wrist = random_limb(rng), rand_rot(rng)
            dmin, _ = reach_range(limb, wrist)
            if dmin > 0.05 * limb.length:
                break
    dmin, _ = reach_range(limb, wrist)
    assert dmin > 0.0
    for frac in (0.999, 0.5, 1e-3):
        target = unit(rng.normal(size=3)) * dmin * frac
        goal = PositionGoal(target)
        with no_warnings():
            sol = solve_limb(limb, goal, swivel=-1.0, wrist=wrist)
        assert_finite(sol)
        assert sol.reachable is False
        p = limb.forward(sol.shoulder, sol.elbow, sol.wrist)[:3, 3]
        assert np.linalg.norm(np.cross(unit(p), unit(target))) < 1e-9 and p @ target > 0
        assert np.linalg.norm(p) == pytest.approx(dmin, abs=1e-9 * limb.length)
        assert_reported_errors_truthful(limb, sol, goal)


def test_human_arm_too_close_is_folded(arm: Limb) -> None:
    """|L1 − L2| = |0.30 − 0.33| (forearm + hand): closer goals fold the elbow to ±π."""
    goal = PositionGoal((0.0, 0.0, 0.01))
    with no_warnings():
        sol = solve_limb(arm, goal)
    assert_finite(sol)
    assert sol.reachable is False
    assert circ_dist(sol.elbow, PI) < 1e-12  # fully folded
    assert sol.position_error == pytest.approx(0.02, abs=1e-12)


def _straight_goals(arm: Limb, kind: str) -> list[PositionGoal | PoseGoal]:
    rng = np.random.default_rng(5)
    out: list[PositionGoal | PoseGoal] = []
    for _ in range(5):
        g = arm.forward(rand_rot(rng), 0.0, np.eye(3))  # fully stretched, reachable
        out.append(PoseGoal(g[:3, 3], g[:3, :3]) if kind == "pose" else PositionGoal(g[:3, 3]))
    return out


@pytest.mark.parametrize("kind", ["pose", "position"])
def test_fully_stretched_goal_no_nan_no_warnings(arm: Limb, kind: str) -> None:
    """A goal exactly at max reach: finite for any φ, no warnings, errors truthful."""
    for goal in _straight_goals(arm, kind):
        for phi in np.linspace(-PI, PI, 13):
            with no_warnings():
                sol = solve_limb(arm, goal, swivel=phi)
            assert_finite(sol)
            pe, oe = assert_reported_errors_truthful(arm, sol, goal)
            assert pe <= 1e-7 * arm.length and oe <= 1e-7
        with no_warnings():
            batch = sweep(arm, goal, np.linspace(-PI, PI, 13))
        assert_finite(batch)
        assert_reported_errors_truthful(arm, batch, batch_goal(goal, 13))


@pytest.mark.parametrize("kind", ["pose", "position"])
def test_fully_stretched_reachable_goal_any_swivel(arm: Limb, kind: str) -> None:
    """A goal exactly at max reach is reached exactly, whatever φ (and R1 is a rotation)."""
    for goal in _straight_goals(arm, kind):
        for phi in np.linspace(-PI, PI, 13):
            sol = solve_limb(arm, goal, swivel=phi)
            assert is_rotation(sol.shoulder, tol=1e-13), sol.shoulder
            assert_exact(arm, sol, goal)
        batch = sweep(arm, goal, np.linspace(-PI, PI, 13))
        assert_exact(arm, batch, batch_goal(goal, 13))


@pytest.mark.parametrize("kind", ["pose", "position"])
def test_near_straight_goals_exact(arm: Limb, kind: str) -> None:
    """Goals 0 to 1e10 ulps inside max reach (θ4 ≈ 0 … 1e-3): R1 orthonormal, FK exact."""
    rng = np.random.default_rng(55)
    d = unit(rng.normal(size=3))
    k = np.array([0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 1e2, 1e3, 1e4, 1e6, 1e8, 1e10])
    scale = 1.0 - k * 2.0**-53
    goals: list[PositionGoal | PoseGoal]
    if kind == "pose":
        rot = rand_rot(rng)
        hand = rot @ np.array([0.0, 0.08, 0.0])  # effector offset in the goal frame
        goals = [PoseGoal(0.55 * s_ * d + hand, rot) for s_ in scale]
    else:
        goals = [PositionGoal(0.63 * s_ * d) for s_ in scale]
    for i, goal in enumerate(goals):
        sol = solve_limb(arm, goal, swivel=0.3)
        assert is_rotation(sol.shoulder, tol=1e-13), (k[i], sol.shoulder)
        assert_exact(arm, sol, goal)


def test_straight_random_limbs_reachable_at_max_reach() -> None:
    rng = np.random.default_rng(17)
    for _ in range(10):
        limb = random_limb(rng)
        _, dmax = reach_range(limb, np.eye(3))
        target = unit(rng.normal(size=3)) * dmax
        goal = PositionGoal(target)
        for phi in (0.0, 1.0, -3.0):
            with no_warnings():
                sol = solve_limb(limb, goal, swivel=phi)
            assert_finite(sol)
            pe, _ = assert_reported_errors_truthful(limb, sol, goal)
            assert pe <= 1e-8 * limb.length  # exactly at the reach boundary (sampled dmax)


def test_goal_at_shoulder_no_nan() -> None:
    arm = readme_arm()
    for goal in (
        PositionGoal((0.0, 0.0, 0.0)),
        PoseGoal((0.0, 0.0, 0.0), np.eye(3)),
        PoseGoal((0.0, 0.0, 0.0), rand_rot(np.random.default_rng(0))),
    ):
        with no_warnings():
            sol = solve_limb(arm, goal, swivel=0.5)
            sol_b = sweep(arm, goal, np.array([0.0, 0.5]))
            et = solve_limb(arm, goal, elbow_target=(0.0, 0.0, 0.0))
        for s in (sol, sol_b, et):
            assert_finite(s)
            assert_reported_errors_truthful(arm, s, goal if s is not sol_b else batch_goal(goal, 2))
        if isinstance(goal, PositionGoal):  # min reach of the hand is |0.30 − 0.33| > 0
            assert sol.reachable is False
            assert sol.position_error == pytest.approx(0.03, abs=1e-12)
    # Equal segments: the wrist *can* reach the shoulder (fully folded), so it is reachable.
    limb = Limb(tf(t=(0, 0.3, 0)), tf(t=(0, 0.3, 0)), elbow_axis=(1, 0, 0))
    for goal in (PoseGoal((0.0, 0.0, 0.0), np.eye(3)), PositionGoal((0.0, 0.0, 0.0))):
        with no_warnings():
            sol = solve_limb(limb, goal, swivel=1.0)
            sol_b = sweep(limb, goal, np.array([1.0, 2.0]))
        assert_exact(limb, sol, goal)
        assert_exact(limb, sol_b, batch_goal(goal, 2))


def test_swivel_reference_parallel_to_shoulder_wrist_axis_no_nan() -> None:
    rng = np.random.default_rng(8)
    arm = readme_arm()
    g = arm.forward(rand_rot(rng), 1.0, np.eye(3))
    for goal, axis in (
        (PositionGoal(g[:3, 3]), g[:3, 3]),
        (PoseGoal(g[:3, 3], g[:3, :3]), g[:3, 3] - g[:3, :3] @ np.array([0.0, 0.08, 0.0])),
    ):
        for sign in (1.0, -1.0):
            limb = readme_arm(swivel_reference=sign * axis)
            with no_warnings():
                sols = [solve_limb(limb, goal, swivel=p) for p in (0.0, 1.0, -2.0)]
                batch = sweep(limb, goal, np.array([0.0, 1.0, -2.0]))
            for s in sols:
                assert_exact(limb, s, goal)
            assert_exact(limb, batch, batch_goal(goal, 3))
            for i, s in enumerate(sols):
                np.testing.assert_allclose(batch[i].shoulder, s.shoulder, atol=1e-14)
            # φ still parametrises the circle: different φ, different elbows.
            e = [limb.elbow_position(s.shoulder) for s in sols]
            assert np.linalg.norm(e[0] - e[1]) > 1e-3


def test_elbow_target_on_axis_no_nan(arm: Limb) -> None:
    rng = np.random.default_rng(9)
    g = arm.forward(rand_rot(rng), 1.3, np.eye(3))
    goal = PositionGoal(g[:3, 3])
    for target in (0.5 * g[:3, 3], np.zeros(3), 2.0 * g[:3, 3], -g[:3, 3]):
        with no_warnings():
            sol = solve_limb(arm, goal, elbow_target=target)
            batch = solve_limb(arm, batch_goal(goal, 2), elbow_target=np.stack([target, target]))
        assert_exact(arm, sol, goal)
        assert_exact(arm, batch, batch_goal(goal, 2))
    # Also on a stretched (degenerate) goal where the elbow itself is on the axis.
    straight = PositionGoal(arm.forward(rand_rot(rng), 0.0, np.eye(3))[:3, 3])
    with no_warnings():
        sol = solve_limb(arm, straight, elbow_target=(0.1, 0.2, 0.3))
    assert_exact(arm, sol, straight)


def test_continuity_near_straight() -> None:
    """R1 varies continuously as a goal approaches (and passes) max reach at fixed φ."""
    rng = np.random.default_rng(12)
    cases = [(readme_arm(), np.eye(3))] + [(random_limb(rng), rand_rot(rng)) for _ in range(6)]
    for limb, wrist in cases:
        d = unit(rng.normal(size=3))
        # Max reach along d, as the solver's own stretched pose for a far goal.
        far = solve_limb(limb, PositionGoal(d * 10 * limb.length), swivel=0.7, wrist=wrist)
        dmax = float(np.linalg.norm(limb.forward(far.shoulder, far.elbow, wrist)[:3, 3]))
        eps = np.array([1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-8, 1e-10, 1e-12, 1e-14, 0.0])
        s = dmax * np.concatenate([1.0 - eps, [1.0 + 1e-12, 1.0 + 1e-6]])
        with no_warnings():
            sol = solve_limb(limb, PositionGoal(s[:, None] * d), swivel=0.7, wrist=wrist)
        assert_finite(sol)
        jumps = rot_angle(sol.shoulder[:-1], sol.shoulder[1:])
        steps = np.abs(np.diff(s)) / limb.length
        # Moving the goal by δ moves R1 by O(√δ) near the straight pose; never a flip.
        assert np.all(jumps <= 100.0 * np.sqrt(steps) + 1e-6), (jumps, steps)
        assert np.all(jumps[3:] < 0.5), jumps
        # ... and converges to the stretched pose aimed beyond reach (same φ), O(√ε).
        to_straight = rot_angle(sol.shoulder, far.shoulder)
        gap = np.concatenate([eps, [0.0, 0.0]])
        assert np.all(to_straight <= 100.0 * np.sqrt(gap) + 1e-5), to_straight


# ======================================================================================
# Joint limits: feasible swivel intervals against brute force (§3.2.4)
# ======================================================================================


@dataclass
class LimitsCase:
    limb: Limb  # with limits
    goal: PositionGoal | PoseGoal
    wrist: np.ndarray | None  # for position goals


def random_euler_limits(
    rng: np.random.Generator, r: np.ndarray, centred: bool
) -> EulerLimits | None:
    if rng.uniform() < 0.15:
        return None
    order = str(rng.choice(EULER_ORDERS))
    fam = matrix_to_euler_families(r, order)[int(rng.integers(2))]
    lo: list[float | None] = []
    hi: list[float | None] = []
    for i in range(3):
        if rng.uniform() < 0.25:
            lo.append(None)
            hi.append(None)
            continue
        c = float(fam[i]) if centred else float(rng.uniform(-PI, PI))
        kind = rng.integers(3)
        w = rng.uniform(*((0.02, 0.3), (0.3, 1.2), (1.2, 3.0))[kind], size=2)
        shift = TAU * float(rng.choice([-1.0, 0.0, 0.0, 1.0]))  # ranges past ±π
        lo.append(c - w[0] + shift)
        hi.append(c + w[1] + shift)
    return EulerLimits(order, lo, hi)


def random_limits_case(seed: int) -> LimitsCase:
    """A random limb and reachable goal (FK of a random configuration) with random limits,
    usually centred on the generating configuration so the feasible set is often partial."""
    rng = np.random.default_rng(1000 + seed)
    geom = random_geometry(rng) if seed % 5 else {}
    base = Limb(**geom) if geom else readme_arm()  # type: ignore[arg-type]
    r1, r2 = rand_rot(rng), rand_rot(rng)
    theta = float(rng.uniform(-PI, PI))
    centred = seed % 4 != 3
    elbow = None
    if rng.uniform() < 0.6:
        w = rng.uniform(0.05, 1.5, size=2)
        c = theta if centred else float(rng.uniform(-PI, PI))
        shift = TAU * float(rng.choice([-1.0, 0.0, 1.0]))
        elbow = (c - w[0] + shift, c + w[1] + shift)
    limits = LimbLimits(
        shoulder=random_euler_limits(rng, r1, centred),
        elbow=elbow,
        wrist=random_euler_limits(rng, r2, centred),
    )
    limb = Limb(base.a, base.b, base.elbow_axis, base.effector, limits)  # own reference
    g = limb.forward(r1, theta, r2)
    if seed % 3 == 2:
        return LimitsCase(limb, PositionGoal(g[:3, 3]), r2)
    return LimitsCase(limb, PoseGoal(g[:3, 3], g[:3, :3]), None)


def explicit_limits_cases() -> list[LimitsCase]:
    """Hand-made cases: the lower=2.5, upper=4.0 wrap-around, narrow and wide ranges."""
    rng = np.random.default_rng(77)
    out = []
    for order in EULER_ORDERS:
        r1 = euler_to_matrix(np.array([3.1, 0.2, -0.4]), order)  # x near π
        r2 = rand_rot(rng)
        shoulder = EulerLimits(order, (2.5, -0.6, -1.5), (4.0, 0.6, 0.5))
        wrist = EulerLimits(order, (-2.0, None, -0.05), (2.0, None, 3.5))
        limb = readme_arm(LimbLimits(shoulder=shoulder, elbow=(0.0, 2.6), wrist=wrist))
        g = limb.forward(r1, 1.1, r2)
        out.append(LimitsCase(limb, PoseGoal(g[:3, 3], g[:3, :3]), None))
    # Narrow around the truth everywhere (a tiny feasible set).
    r1, r2 = rand_rot(rng), rand_rot(rng)
    f1 = matrix_to_euler_families(r1, "ZYX")[0]
    f2 = matrix_to_euler_families(r2, "YZX")[1]
    narrow = LimbLimits(
        shoulder=EulerLimits("ZYX", tuple(f1 - 0.05), tuple(f1 + 0.05)),
        elbow=(0.9, 1.3),
        wrist=EulerLimits("YZX", tuple(f2 - 0.1), tuple(f2 + 0.1)),
    )
    limb = readme_arm(narrow)
    g = limb.forward(r1, 1.1, r2)
    out.append(LimitsCase(limb, PoseGoal(g[:3, 3], g[:3, :3]), None))
    return out


LIMIT_CASES = [pytest.param(i, id=f"random{i}") for i in range(48)] + [
    pytest.param(-1 - i, id=f"explicit{i}") for i in range(len(explicit_limits_cases()))
]


def get_case(i: int) -> LimitsCase:
    return random_limits_case(i) if i >= 0 else explicit_limits_cases()[-1 - i]


def brute_force(case: LimitsCase) -> tuple[np.ndarray, LimbSolution]:
    """Feasibility of every φ on the grid, from poses of the same limb without
    shoulder/wrist limits and both Euler families of each joint tested ourselves."""
    limb = case.limb
    kw = {} if case.wrist is None else {"wrist": case.wrist}
    free = unlimited(limb)
    poses = sweep(free, case.goal, **kw)
    assert np.all(circ_dist(poses.swivel, PHI_GRID) < 1e-12)
    # Same θ4 (root rule) as the limited limb, hence the same elbow circle.
    limited_sol = solve_limb(limb, case.goal, **kw)
    if limited_sol.feasible_swivel:  # (unsolvable pose goals may move the wrist centre)
        np.testing.assert_allclose(poses.elbow, limited_sol.elbow, atol=1e-12)
    return pose_within(limb, poses), poses


def assert_case_solution(case: LimitsCase, sol: LimbSolution) -> None:
    """Exact when the elbow root rule can reach the goal; otherwise (θ4 clamped to an elbow
    limit) unreachable but finite and truthful."""
    kw = {} if case.wrist is None else {"wrist": case.wrist}
    if solve_limb(unlimited(case.limb), case.goal, **kw).reachable:
        assert_exact(case.limb, sol, case.goal)
    else:
        assert_finite(sol)
        assert sol.reachable is False
        assert_reported_errors_truthful(case.limb, sol, case.goal)


def has_effective_limits(limb: Limb) -> bool:
    lim = limb.limits
    return lim is not None and (
        lim.elbow is not None
        or any(j is not None and any(j.limited) for j in (lim.shoulder, lim.wrist))
    )


def same_intervals(a: tuple[tuple[float, float], ...], b: tuple[tuple[float, float], ...]) -> bool:
    return len(a) == len(b) and all(
        abs(x0 - y0) <= 1e-12 and abs(x1 - y1) <= 1e-12
        for (x0, x1), (y0, y1) in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("case_id", LIMIT_CASES)
def test_feasible_intervals_match_brute_force(case_id: int) -> None:
    case = get_case(case_id)
    kw = {} if case.wrist is None else {"wrist": case.wrist}
    with no_warnings():
        intervals = feasible_swivel(case.limb, case.goal, **kw)
    assert isinstance(intervals, tuple)
    check_interval_format(intervals)
    ok, _ = brute_force(case)
    analytic = in_intervals(PHI_GRID, intervals)
    skip = near_endpoint(PHI_GRID, intervals, PHI_STEP)
    bad = (ok != analytic) & ~skip
    assert not np.any(bad), (
        f"{int(bad.sum())} samples disagree, e.g. φ={PHI_GRID[bad][:5]}; intervals {intervals}; "
        f"brute feasible fraction {ok.mean():.4f}"
    )
    # The solution reports the same intervals (to rounding: single solves use a scalar kernel).
    sol = solve_limb(case.limb, case.goal, **kw)
    assert same_intervals(sol.feasible_swivel, intervals), (sol.feasible_swivel, intervals)


def test_feasible_interval_cases_are_not_vacuous() -> None:
    """The random cases above cover empty, partial (several intervals) and full sets."""
    kinds = {"empty": 0, "partial": 0, "multi": 0, "full": 0, "wrapping": 0}
    for (case_id,) in (p.values for p in LIMIT_CASES):
        case = get_case(case_id)  # type: ignore[arg-type]
        kw = {} if case.wrist is None else {"wrist": case.wrist}
        iv = feasible_swivel(case.limb, case.goal, **kw)
        assert isinstance(iv, tuple)
        total = sum(hi - lo for lo, hi in iv)
        kinds["empty"] += not iv
        kinds["full"] += bool(iv) and total >= TAU - 1e-9
        kinds["partial"] += bool(iv) and total < TAU - 1e-9
        kinds["multi"] += len(iv) >= 2
        kinds["wrapping"] += any(hi > PI for _, hi in iv) and total < TAU - 1e-9
    assert kinds["empty"] >= 3 and kinds["partial"] >= 20 and kinds["multi"] >= 3, kinds
    assert kinds["full"] >= 1 and kinds["wrapping"] >= 3, kinds


@pytest.mark.parametrize("case_id", LIMIT_CASES)
def test_solve_within_limits_when_feasible(case_id: int) -> None:
    """Non-empty feasible set → within_limits, reachable, and really within limits (CLOSEST)."""
    case = get_case(case_id)
    kw = {} if case.wrist is None else {"wrist": case.wrist}
    intervals = feasible_swivel(case.limb, case.goal, **kw)
    assert isinstance(intervals, tuple)
    if not intervals:  # unsolvable: finite, truthful, position exact
        with no_warnings():
            sol = solve_limb(case.limb, case.goal, swivel=0.5, **kw)
        assert_finite(sol)
        assert sol.feasible_swivel == ()
        pe, _ = assert_reported_errors_truthful(case.limb, sol, case.goal)
        assert sol.within_limits == bool(pose_within(case.limb, sol, tol=1e-8))
        if solve_limb(unlimited(case.limb), case.goal, **kw).reachable:  # θ4 not clamped
            # The position stays exact unless that would break a limit (the wrist-centre
            # update emptied the shoulder set): then the limits win, the error is reported.
            assert pe <= EXACT * case.limb.length or sol.within_limits
        if sol.within_limits:  # every limit met yet no feasible φ: the goal is not attained
            assert sol.reachable is False
        return
    rng = np.random.default_rng(abs(case_id))
    for phi_d in (0.0, *rng.uniform(-PI, PI, 4)):
        with no_warnings():
            sol = solve_limb(case.limb, case.goal, swivel=phi_d, **kw)
        assert_case_solution(case, sol)
        assert sol.within_limits is True
        assert pose_within(case.limb, sol, tol=1e-8), sol
        # CLOSEST: φ_d itself when feasible, else the nearest interval end.
        if in_intervals(np.array([phi_d]), intervals)[0]:
            assert circ_dist(sol.swivel, phi_d) < 1e-12
        else:
            ends = np.array([x for iv in intervals for x in iv])
            nearest = ends[np.argmin(circ_dist(ends, phi_d))]
            assert circ_dist(sol.swivel, nearest) < 1e-12
            assert circ_dist(sol.swivel, phi_d) == pytest.approx(
                float(np.min(circ_dist(ends, phi_d))), abs=1e-12
            )


def test_unsolvable_pose_goals_within_limits_when_shoulder_set_nonempty() -> None:
    """Pose goals with no feasible φ but a clearly non-empty shoulder set (shoulder and
    elbow limits met on ≥ 20 grid samples with 1e-3 rad margin) are solved within limits:
    the wrist is optimised within its limits."""
    bad = []
    for param in LIMIT_CASES:
        case = get_case(param.values[0])  # type: ignore[arg-type]
        if not isinstance(case.goal, PoseGoal) or feasible_swivel(case.limb, case.goal) != ():
            continue
        lim = case.limb.limits
        assert lim is not None
        _, poses = brute_force(case)
        sh_ok = euler_ok(poses.shoulder, lim.shoulder, tol=-1e-3) & elbow_ok(poses.elbow, lim)
        if sh_ok.sum() < 20:
            continue
        sol = solve_limb(case.limb, case.goal, swivel=0.5)
        if not (sol.within_limits and pose_within(case.limb, sol, tol=1e-8)):
            bad.append(param.id)
    assert not bad, bad


@pytest.mark.parametrize("case_id", LIMIT_CASES[::3])
def test_midpoint_strategy_returns_middle_of_largest_interval(case_id: int) -> None:
    case = get_case(case_id)
    kw = {} if case.wrist is None else {"wrist": case.wrist}
    intervals = feasible_swivel(case.limb, case.goal, **kw)
    assert isinstance(intervals, tuple)
    if not intervals:
        pytest.skip("empty feasible set")
    with no_warnings():
        sol = solve_limb(case.limb, case.goal, strategy=SwivelStrategy.MIDPOINT, swivel=1.0, **kw)
    assert_case_solution(case, sol)
    assert sol.within_limits is True and pose_within(case.limb, sol, tol=1e-8)
    lengths = [hi - lo for lo, hi in intervals]
    lo, hi = intervals[int(np.argmax(lengths))]
    if not has_effective_limits(case.limb):  # strategies are ignored without limits
        assert circ_dist(sol.swivel, 1.0) < 1e-12
        return
    assert circ_dist(sol.swivel, 0.5 * (lo + hi)) < 1e-12
    # Against brute force: the middle of the longest run of feasible samples.
    ok, _ = brute_force(case)
    if ok.all():
        return
    start = int(np.argmin(ok))  # an infeasible sample: unroll the circle from there
    rolled = np.roll(ok, -start)
    best_len, best_mid, run = 0, 0.0, 0
    for j, f in enumerate(np.append(rolled, False)):
        if f:
            run += 1
        elif run:
            if run > best_len:
                best_len, best_mid = run, PHI_GRID[0] + PHI_STEP * (start + j - run + (run - 1) / 2)
            run = 0
    if (
        max(lengths) - sorted(lengths)[-2 if len(lengths) > 1 else -1] > 4 * PHI_STEP
        or len(lengths) == 1
    ):
        assert circ_dist(sol.swivel, best_mid) <= 2 * PHI_STEP


def _objective_for(order: str, target: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """−trace(Rtᵀ R1): smooth in φ and the same for both Euler families."""

    def objective(angles: np.ndarray) -> np.ndarray:
        assert angles.ndim == 2 and angles.shape[1] == 7
        r = euler_to_matrix(angles[:, :3], order)
        return -np.einsum("mij,ij->m", r, target)

    return objective


def _constrained_minimiser(
    grid_values: np.ndarray,
    f_of_phi: Callable[[float], float],
    ok: np.ndarray,
    intervals: tuple[tuple[float, float], ...],
) -> float:
    """Minimiser over the feasible set: best feasible sample, refined within its interval."""
    values = np.where(ok, grid_values, np.inf)
    best = float(PHI_GRID[int(np.argmin(values))])
    lo_b, hi_b = best - PHI_STEP, best + PHI_STEP
    for lo, hi in intervals:  # clip the bracket to the analytic interval holding `best`
        k = math.floor((best - lo) / TAU)
        if lo + k * TAU <= best <= hi + k * TAU:
            lo_b, hi_b = max(lo_b, lo + k * TAU), min(hi_b, hi + k * TAU)
    res = minimize_scalar(f_of_phi, bounds=(lo_b, hi_b), method="bounded", options={"xatol": 1e-11})
    return float(res.x)


OBJECTIVE_CASES = [
    pytest.param(
        c.values[0],
        inside,
        id=f"{c.id}-{'min-inside' if inside else 'min-outside'}",
    )
    for c in [*LIMIT_CASES[::4], LIMIT_CASES[-1]]
    for inside in (True, False)
]


@pytest.mark.parametrize(("case_id", "inside"), OBJECTIVE_CASES)
def test_objective_strategy_minimises_over_feasible_set(case_id: int, inside: bool) -> None:
    case = get_case(case_id)
    kw = {} if case.wrist is None else {"wrist": case.wrist}
    intervals = feasible_swivel(case.limb, case.goal, **kw)
    assert isinstance(intervals, tuple)
    ok, poses = brute_force(case)
    if not intervals or not ok.any() or (not inside and ok.all()):
        pytest.skip("no feasible set / no infeasible φ")
    if not has_effective_limits(case.limb):  # documented: strategies ignored without limits
        sol = solve_limb(case.limb, case.goal, strategy=lambda a: a[:, 0], swivel=0.5, **kw)
        assert circ_dist(sol.swivel, 0.5) < 1e-12
        return
    # The unconstrained minimiser is R1(φ_t): inside or outside the feasible set.
    candidates = np.nonzero(ok if inside else ~ok)[0]
    j = int(candidates[len(candidates) // 3])
    target = poses.shoulder[j]
    order = case.limb.limits.shoulder.order if case.limb.limits.shoulder else "XYZ"  # type: ignore[union-attr]
    free = unlimited(case.limb)

    def f_of_phi(p: float) -> float:
        r1 = solve_limb(free, case.goal, swivel=p, **kw).shoulder
        return float(-np.sum(r1 * target))

    with no_warnings():
        sol = solve_limb(case.limb, case.goal, strategy=_objective_for(order, target), **kw)
    assert_case_solution(case, sol)
    assert sol.within_limits is True and pose_within(case.limb, sol, tol=1e-8)
    grid_values = -np.einsum("nij,ij->n", poses.shoulder, target)
    want = _constrained_minimiser(grid_values, f_of_phi, ok, intervals)
    # Compare objective values first (robust), then the minimiser itself.
    assert f_of_phi(sol.swivel) <= f_of_phi(want) + 1e-12
    assert circ_dist(sol.swivel, want) <= 1e-6, (sol.swivel, want)


def test_objective_strategy_minimal_human_arm(arm: Limb) -> None:
    """Minimal case: the objective −trace(R1(φ_t)ᵀ R1) has its unique minimum at φ_t = 0.4,
    well inside the feasible set (shoulder limits only)."""
    limits = LimbLimits(shoulder=EulerLimits("XYZ", (-3.0, -1.5, -3.0), (3.0, 1.5, 3.0)))
    limb = arm.with_limits(limits)
    rng = np.random.default_rng(1)
    r1, r2 = rand_rot(rng), rand_rot(rng)
    g = limb.forward(r1, 1.0, r2)
    goal = PoseGoal(g[:3, 3], g[:3, :3])
    assert in_intervals(np.array([0.4]), feasible_swivel(limb, goal))[0]  # type: ignore[arg-type]
    target = solve_limb(unlimited(limb), goal, swivel=0.4).shoulder
    sol = solve_limb(limb, goal, strategy=_objective_for("XYZ", target))
    assert circ_dist(sol.swivel, 0.4) <= 1e-6, (
        sol.swivel
    )  # was 0.3724 before the golden-section fix


def test_objective_strategy_receives_joint_angles(arm: Limb) -> None:
    limits = LimbLimits(
        shoulder=EulerLimits("YXZ", (-2.0, -1.0, -2.0), (2.0, 1.0, 2.0)),
        elbow=(0.0, 2.6),
        wrist=EulerLimits("ZXY", (-1.5, -1.0, -1.5), (1.5, 1.0, 1.5)),
    )
    limb = arm.with_limits(limits)
    g = limb.forward(euler_to_matrix(np.array([0.2, 0.3, -0.1]), "YXZ"), 1.0, np.eye(3))
    goal = PoseGoal(g[:3, 3], g[:3, :3])
    seen: list[np.ndarray] = []

    def objective(angles: np.ndarray) -> np.ndarray:
        seen.append(angles.copy())
        return (angles[:, 2] - 0.1) ** 2

    sol = solve_limb(limb, goal, strategy=objective)
    allang = np.concatenate(seen)
    assert allang.shape[1] == 7
    np.testing.assert_allclose(allang[:, 3], sol.elbow, atol=0)  # θ4 column
    # Columns 0–2 / 4–6 recompose to R1 / R2 in the limits' orders at some φ.
    r1 = euler_to_matrix(allang[:, :3], "YXZ")
    r2 = euler_to_matrix(allang[:, 4:], "ZXY")
    m = r1 @ (limb.forward(np.eye(3), sol.elbow, np.eye(3))[:3, :3]) @ r2
    np.testing.assert_allclose(m, np.broadcast_to(g[:3, :3], m.shape), atol=1e-10)


# ======================================================================================
# Elbow target and strategies
# ======================================================================================


@pytest.mark.parametrize("seed", range(10))
def test_elbow_target_minimises_elbow_distance(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    limb = readme_arm() if seed == 0 else random_limb(rng)
    r2 = rand_rot(rng)
    g = limb.forward(rand_rot(rng), float(rng.uniform(0.3, 2.8)), r2)
    goal = PoseGoal(g[:3, 3], g[:3, :3]) if seed % 2 else PositionGoal(g[:3, 3])
    kw = {} if seed % 2 else {"wrist": r2}
    poses = sweep(limb, goal, **kw)
    elbows = limb.elbow_position(poses.shoulder)
    for _ in range(4):
        target = rng.normal(size=3) * limb.length
        with no_warnings():
            sol = solve_limb(limb, goal, elbow_target=target, **kw)
        assert_exact(limb, sol, goal)
        dist = np.linalg.norm(elbows - target, axis=-1)
        mine = float(np.linalg.norm(limb.elbow_position(sol.shoulder) - target))
        assert mine <= dist.min() + 1e-12
        assert circ_dist(sol.swivel, PHI_GRID[int(np.argmin(dist))]) <= PHI_STEP


def test_elbow_target_with_limits_takes_closest_feasible(arm: Limb) -> None:
    limits = LimbLimits(shoulder=EulerLimits("XYZ", (-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)))
    limb = arm.with_limits(limits)
    g = limb.forward(euler_to_matrix(np.array([0.3, 0.2, -0.1]), "XYZ"), 1.2, np.eye(3))
    goal = PoseGoal(g[:3, 3], g[:3, :3])
    intervals = feasible_swivel(limb, goal)
    assert isinstance(intervals, tuple) and intervals
    free_sol_targets = sweep(unlimited(limb), goal, np.linspace(-PI, PI, 24, endpoint=False))
    elbows = limb.elbow_position(free_sol_targets.shoulder)
    for i, e in enumerate(elbows):
        sol = solve_limb(limb, goal, elbow_target=e * 1.7)  # φ_d = the i-th grid angle
        phi_d = free_sol_targets.swivel[i]
        sol_sw = solve_limb(limb, goal, swivel=phi_d)
        assert circ_dist(sol.swivel, sol_sw.swivel) < 1e-9
        assert sol.within_limits is True


def test_closest_strategy_is_default_and_swivel_defaults_to_zero(arm: Limb) -> None:
    rng = np.random.default_rng(4)
    g = arm.forward(rand_rot(rng), 1.0, np.eye(3))
    goal = PoseGoal(g[:3, 3], g[:3, :3])
    a = solve_limb(arm, goal)
    b = solve_limb(arm, goal, swivel=0.0, strategy=SwivelStrategy.CLOSEST)
    assert a.swivel == 0.0 and b.swivel == 0.0
    np.testing.assert_array_equal(a.shoulder, b.shoulder)
    # Strategies are ignored without limits.
    c = solve_limb(arm, goal, swivel=1.0, strategy=SwivelStrategy.MIDPOINT)
    assert c.swivel == pytest.approx(1.0, abs=1e-15)


# ======================================================================================
# Unsolvable (empty feasible set) and the θ4 root rule
# ======================================================================================


def _unsolvable_wrist_case(arm: Limb, wrist_order: str = "XYZ") -> tuple[Limb, PoseGoal]:
    """Feasible shoulder and elbow, but a wrist box far from the goal's wrist rotation."""
    limits = LimbLimits(
        shoulder=EulerLimits("XYZ", (-2.5, -1.2, -2.5), (2.5, 1.2, 2.5)),
        elbow=(0.0, 2.6),
        wrist=EulerLimits(wrist_order, (-0.05, -0.05, -0.05), (0.05, 0.05, 0.05)),
    )
    limb = arm.with_limits(limits)
    r1 = euler_to_matrix(np.array([0.4, 0.3, 0.2]), "XYZ")
    r2 = euler_to_matrix(np.array([1.5, 1.0, -2.0]), wrist_order)  # far outside the wrist box
    g = limb.forward(r1, 1.2, r2)
    return limb, PoseGoal(g[:3, 3], g[:3, :3])


def _bare_arm() -> Limb:
    """The human arm without the hand offset: the effector is the wrist centre."""
    return Limb(tf(t=(0.0, 0.30, 0.0)), tf(t=(0.0, 0.25, 0.0)), elbow_axis=(1.0, 0.0, 0.0))


UNSOLVABLE = [
    pytest.param(arm_kind, order, id=f"{arm_kind}-{order}")
    for arm_kind in ("bare", "hand")
    for order in ("XYZ", "ZXY")
]


@pytest.mark.parametrize(("arm_kind", "order"), UNSOLVABLE)
def test_unsolvable_pose_goal_keeps_position_and_reports_truthfully(
    arm_kind: str, order: str
) -> None:
    """Empty feasible set, shoulder set non-empty: position exact (the effector point, also
    with a hand offset), within limits, orientation error truthful, reachable False."""
    limb, goal = _unsolvable_wrist_case(_bare_arm() if arm_kind == "bare" else readme_arm(), order)
    assert feasible_swivel(limb, goal) == ()
    with no_warnings():
        sol = solve_limb(limb, goal, swivel=0.3)
    assert_finite(sol)
    assert sol.feasible_swivel == ()
    pe, oe = assert_reported_errors_truthful(limb, sol, goal)
    assert oe > 1e-3 and sol.reachable is False
    assert sol.within_limits is True and pose_within(limb, sol, tol=1e-8)
    assert is_rotation(sol.shoulder) and is_rotation(sol.wrist)
    assert pe <= EXACT * limb.length  # position stays exact
    # Batched: truthful and exact too.
    batch = solve_limb(limb, batch_goal(goal, 2), swivel=np.array([0.3, -1.0]))
    bpe, _ = assert_reported_errors_truthful(limb, batch, batch_goal(goal, 2))
    assert np.all(bpe <= EXACT * limb.length)
    assert np.all(batch.within_limits) and np.all(pose_within(limb, batch, tol=1e-8))
    assert not np.any(batch.reachable)


@pytest.mark.parametrize("order", ["XYZ", "ZXY"])
def test_unsolvable_pose_goal_minimises_orientation_error(order: str) -> None:
    """Without an effector offset the wrist centre is fixed, so the optimum over (φ in the
    shoulder set) × (wrist in its box) is checkable by sampling: the solver does no worse."""
    limb, goal = _unsolvable_wrist_case(_bare_arm(), order)
    sol = solve_limb(limb, goal, swivel=0.3)
    lim = limb.limits
    assert lim is not None and lim.wrist is not None
    poses = sweep(unlimited(limb), goal, np.linspace(-PI, PI, 360, endpoint=False))
    sh_ok = euler_ok(poses.shoulder, lim.shoulder)
    grid = [np.linspace(lo, hi, 5) for lo, hi in zip(lim.wrist.lower, lim.wrist.upper, strict=True)]  # type: ignore[arg-type]
    boxes = np.stack(np.meshgrid(*grid, indexing="ij"), axis=-1).reshape(-1, 3)
    r2s = euler_to_matrix(boxes, lim.wrist.order)
    best = math.inf
    for r1 in poses.shoulder[sh_ok]:
        f = limb.forward(r1, sol.elbow, r2s)
        best = min(best, float(rot_angle(f[:, :3, :3], np.asarray(goal.rotation)).min()))
    assert sol.orientation_error <= best + 1e-9, (sol.orientation_error, best)


def test_unsolvable_shoulder_set_empty_no_nan(arm: Limb) -> None:
    """No φ satisfies the shoulder: errors still truthful and within_limits honest."""
    limits = LimbLimits(shoulder=EulerLimits("XYZ", (-0.01, -0.01, -0.01), (0.01, 0.01, 0.01)))
    limb = arm.with_limits(limits)
    g = limb.forward(euler_to_matrix(np.array([2.0, 1.0, -2.0]), "XYZ"), 1.0, np.eye(3))
    for goal in (PoseGoal(g[:3, 3], g[:3, :3]), PositionGoal(g[:3, 3])):
        assert feasible_swivel(limb, goal) == ()
        with no_warnings():
            sol = solve_limb(limb, goal)
        assert_finite(sol)
        assert_reported_errors_truthful(limb, sol, goal)
        assert sol.within_limits == bool(pose_within(limb, sol))
        assert sol.within_limits is False
        assert sol.position_error <= EXACT * limb.length
        if isinstance(goal, PositionGoal):
            # With only shoulder limits on a position goal, the pose is exact anyway.
            assert sol.reachable is True


def test_elbow_root_rule_keeps_elbow_within_limits(arm: Limb) -> None:
    limb = arm.with_limits(LimbLimits(elbow=(0.0, 2.6)))
    rng = np.random.default_rng(31)
    n = 3000
    pts = unit(rng.normal(size=(n, 3))) * rng.uniform(0.0, 0.7, size=(n, 1))
    with no_warnings():
        sol = solve_limb(limb, PositionGoal(pts), swivel=rng.uniform(-PI, PI, n))
    assert_finite(sol)
    assert_reported_errors_truthful(limb, sol, PositionGoal(pts))
    el = np.asarray(sol.elbow)
    assert np.all((el >= -LIMIT_TOLERANCE) & (el <= 2.6 + LIMIT_TOLERANCE))
    assert np.all(sol.within_limits)
    # Reachable exactly when some root lies in [0, 2.6] (|θ4| is fixed by the distance).
    d = np.linalg.norm(pts, axis=-1)
    cos_t = (d * d - 0.30**2 - 0.33**2) / (2 * 0.30 * 0.33)
    beta = np.arccos(np.clip(cos_t, -1, 1))
    expect = (np.abs(cos_t) <= 1.0) & (beta <= 2.6)
    margin = np.abs(beta - 2.6) > 1e-6
    np.testing.assert_array_equal(sol.reachable[margin], expect[margin])
    np.testing.assert_allclose(el[sol.reachable], beta[sol.reachable], atol=1e-7)


def test_elbow_root_rule_clamps_when_neither_root_inside(arm: Limb) -> None:
    rng = np.random.default_rng(32)
    for lo, hi in ((0.5, 0.6), (-0.6, -0.5), (2.0, 2.2), (3.0, 3.5), (-4.0, -3.0)):
        limb = arm.with_limits(LimbLimits(elbow=(lo, hi)))
        for beta in (1.5, 0.1, 2.8):
            g = arm.forward(rand_rot(rng), beta, np.eye(3))  # roots ±β
            roots = np.array([beta, -beta])
            if np.any(in_range(roots, lo, hi)):
                continue
            for goal in (PoseGoal(g[:3, 3], g[:3, :3]), PositionGoal(g[:3, 3])):
                with no_warnings():
                    sol = solve_limb(limb, goal, swivel=0.2)
                assert_finite(sol)
                assert sol.reachable is False and sol.within_limits is True
                # Clamped to the limit nearest (circularly) to a root.
                d_lo = float(np.min(circ_dist(roots, lo)))
                d_hi = float(np.min(circ_dist(roots, hi)))
                want = lo if d_lo <= d_hi else hi
                assert circ_dist(sol.elbow, want) < 1e-12, (lo, hi, beta, sol.elbow)
                assert_reported_errors_truthful(limb, sol, goal)
                assert sol.position_error > 1e-6


def test_elbow_root_rule_both_inside_prefers_middle(arm: Limb) -> None:
    """Both roots inside the limits: the one nearer the limits' middle."""
    rng = np.random.default_rng(33)
    limb = arm.with_limits(LimbLimits(elbow=(-1.0, 2.0)))  # middle 0.5
    for beta, want in ((0.8, 0.8), (0.2, 0.2)):
        g = arm.forward(rand_rot(rng), -beta, np.eye(3))
        sol = solve_limb(limb, PoseGoal(g[:3, 3], g[:3, :3]))
        assert sol.elbow == pytest.approx(want, abs=1e-9)
    limb = arm.with_limits(LimbLimits(elbow=(-2.0, 1.0)))  # middle -0.5
    g = arm.forward(rand_rot(rng), 0.8, np.eye(3))
    sol = solve_limb(limb, PoseGoal(g[:3, 3], g[:3, :3]))
    assert sol.elbow == pytest.approx(-0.8, abs=1e-9)
    assert_exact(limb, sol, PoseGoal(g[:3, 3], g[:3, :3]))


# ======================================================================================
# Determinism, batching
# ======================================================================================


def test_repeatable_and_state_free() -> None:
    rng = np.random.default_rng(41)
    limb = get_case(1).limb
    g = limb.forward(rand_rot(rng), 1.0, rand_rot(rng))
    goal = PoseGoal(g[:3, 3], g[:3, :3])
    first = solve_limb(limb, goal, swivel=0.3)
    # Interleave other solves (single and batched), then repeat.
    for _ in range(5):
        h = limb.forward(rand_rot(rng), float(rng.uniform(-3, 3)), rand_rot(rng))
        solve_limb(limb, PoseGoal(h[:3, 3], h[:3, :3]), swivel=float(rng.uniform(-3, 3)))
        sweep(limb, PoseGoal(h[:3, 3], h[:3, :3]), np.array([0.0, 1.0]))
    again = solve_limb(limb, goal, swivel=0.3)
    for name in ("shoulder", "elbow", "wrist", "swivel", "position_error", "orientation_error"):
        np.testing.assert_array_equal(getattr(again, name), getattr(first, name))
    assert again.feasible_swivel == first.feasible_swivel
    assert (again.reachable, again.within_limits) == (first.reachable, first.within_limits)


@pytest.mark.parametrize("limited", [False, True])
def test_closed_loop_returns_to_same_joint_angles(arm: Limb, limited: bool) -> None:
    limits = LimbLimits(
        shoulder=EulerLimits("XYZ", (-2.0, -1.2, -2.0), (2.0, 1.2, 2.0)), elbow=(0.0, 2.6)
    )
    limb = arm.with_limits(limits) if limited else arm
    t = np.linspace(0.0, TAU, 65)  # closed loop: last == first
    pos = np.stack([0.2 * np.cos(t), 0.35 + 0.1 * np.sin(t), 0.15 * np.sin(2 * t)], axis=-1)
    rot = axis_angle_to_matrix(np.array([0.0, 0.0, 1.0]), 0.5 * np.sin(t))
    sols = [solve_limb(limb, PoseGoal(p, r), swivel=0.4) for p, r in zip(pos, rot, strict=True)]
    assert sols[0].reachable and sols[-1].reachable
    for name in ("shoulder", "elbow", "wrist", "swivel"):
        np.testing.assert_allclose(getattr(sols[-1], name), getattr(sols[0], name), atol=1e-14)
    # Walking backwards lands on the same angles at each step.
    back = [
        solve_limb(limb, PoseGoal(p, r), swivel=0.4)
        for p, r in zip(pos[::-1], rot[::-1], strict=True)
    ]
    for a, b in zip(sols, back[::-1], strict=True):
        np.testing.assert_array_equal(a.shoulder, b.shoulder)
        assert a.elbow == b.elbow


def assert_batch_matches_singles(
    batch: LimbSolution,
    singles: list[LimbSolution],
    rows: list[int] | None = None,
    tol: float = 1e-14,
) -> None:
    assert len(batch) == len(singles)
    for i in range(len(singles)) if rows is None else rows:
        s, b = singles[i], batch[i]
        for name in ("shoulder", "wrist"):
            np.testing.assert_allclose(
                getattr(b, name), getattr(s, name), rtol=0, atol=tol, err_msg=f"row {i} {name}"
            )
        assert abs(b.elbow - s.elbow) <= tol, i
        assert circ_dist(b.swivel, s.swivel) <= tol, i
        assert abs(b.position_error - s.position_error) <= tol, i
        assert abs(b.orientation_error - s.orientation_error) <= tol, i
        assert b.reachable == s.reachable and b.within_limits == s.within_limits, i
        assert len(b.feasible_swivel) == len(s.feasible_swivel), i
        for (bl, bh), (sl, sh) in zip(b.feasible_swivel, s.feasible_swivel, strict=True):
            assert abs(bl - sl) <= tol and abs(bh - sh) <= tol, i


@pytest.mark.parametrize("limited", [False, True], ids=["no-limits", "limits"])
@pytest.mark.parametrize("kind", ["pose", "position"])
@pytest.mark.parametrize("mode", ["swivel-array", "swivel-scalar", "elbow-target", "default"])
def test_batched_and_single_agree(limited: bool, kind: str, mode: str) -> None:
    rng = np.random.default_rng(51)
    base = random_limb(rng)
    limits = LimbLimits(
        shoulder=EulerLimits("ZXY", (-2.0, -1.2, -2.5), (2.0, 1.2, 2.5)),
        elbow=(-2.0, 2.0),
        wrist=EulerLimits("YZX", (2.5, -1.0, -1.0), (4.0, 1.0, 1.0)),
    )
    limb = base.with_limits(limits if limited else None)
    n = 12
    r1, r2 = rand_rot(rng, n), rand_rot(rng, n)
    theta = rng.uniform(-2.0, 2.0, n)
    g = limb.forward(r1, theta, r2)
    g[-1, :3, 3] *= 5.0  # one unreachable goal
    pose = kind == "pose"
    goal: PositionGoal | PoseGoal = (
        PoseGoal(g[:, :3, 3], g[:, :3, :3]) if pose else PositionGoal(g[:, :3, 3])
    )
    singles_goals = [
        PoseGoal(g[i, :3, 3], g[i, :3, :3]) if pose else PositionGoal(g[i, :3, 3]) for i in range(n)
    ]
    wk = [{} if pose else {"wrist": r2[i]} for i in range(n)]
    bw = {} if pose else {"wrist": r2}
    phi = rng.uniform(-PI, PI, n)
    targets = rng.normal(size=(n, 3)) * 0.3
    if mode == "swivel-array":
        batch = solve_limb(limb, goal, swivel=phi, **bw)
        singles = [solve_limb(limb, singles_goals[i], swivel=phi[i], **wk[i]) for i in range(n)]
    elif mode == "swivel-scalar":
        batch = solve_limb(limb, goal, swivel=0.7, **bw)
        singles = [solve_limb(limb, singles_goals[i], swivel=0.7, **wk[i]) for i in range(n)]
    elif mode == "elbow-target":
        batch = solve_limb(limb, goal, elbow_target=targets, **bw)
        singles = [
            solve_limb(limb, singles_goals[i], elbow_target=targets[i], **wk[i]) for i in range(n)
        ]
    else:
        batch = solve_limb(limb, goal, **bw)
        singles = [solve_limb(limb, singles_goals[i], **wk[i]) for i in range(n)]
    assert batch.shoulder.shape == (n, 3, 3) and np.shape(batch.elbow) == (n,)
    fs = np.asarray(batch.feasible_swivel)
    assert fs.ndim == 3 and fs.shape[0] == n and fs.shape[2] == 2
    # Pose goals with no feasible φ take the iterative "unsolvable" path: see the next test.
    unsolvable = [i for i in range(n) if pose and limited and not singles[i].feasible_swivel]
    solvable = [i for i in range(n) if i not in unsolvable]
    assert_batch_matches_singles(batch, singles, solvable)
    assert_batch_matches_singles(batch, singles, unsolvable, tol=1e-7)  # 1e-14: next test
    if limited:
        assert np.any(batch.within_limits)
    assert not batch.reachable[-1]


def test_batched_and_single_agree_unsolvable_pose_goals() -> None:
    """Rows with an empty feasible set (pose goals) agree to 1e-14 as well."""
    rng = np.random.default_rng(51)  # the same limb and goals as test_batched_and_single_agree
    base = random_limb(rng)
    limits = LimbLimits(
        shoulder=EulerLimits("ZXY", (-2.0, -1.2, -2.5), (2.0, 1.2, 2.5)),
        elbow=(-2.0, 2.0),
        wrist=EulerLimits("YZX", (2.5, -1.0, -1.0), (4.0, 1.0, 1.0)),
    )
    limb = base.with_limits(limits)
    g = limb.forward(rand_rot(rng, 12), rng.uniform(-2.0, 2.0, 12), rand_rot(rng, 12))
    goals = [PoseGoal(g[i, :3, 3], g[i, :3, :3]) for i in range(11)]
    goals = [gl for gl in goals if feasible_swivel(limb, gl) == ()]
    assert len(goals) >= 2
    batch_g = PoseGoal(
        np.stack([np.asarray(gl.position) for gl in goals]),
        np.stack([np.asarray(gl.rotation) for gl in goals]),
    )
    batch = solve_limb(limb, batch_g, swivel=0.7)
    singles = [solve_limb(limb, gl, swivel=0.7) for gl in goals]
    assert_batch_matches_singles(batch, singles)


def test_batched_feasible_swivel_is_nan_padded() -> None:
    case = get_case(1)
    kw = {} if case.wrist is None else {"wrist": case.wrist}
    single = feasible_swivel(case.limb, case.goal, **kw)
    batched = feasible_swivel(case.limb, batch_goal(case.goal, 3), **kw)
    assert isinstance(batched, np.ndarray) and batched.ndim == 3 and batched.shape[0] == 3
    assert isinstance(single, tuple)
    k = len(single)
    for row in batched:
        np.testing.assert_allclose(row[:k], np.array(single).reshape(-1, 2), atol=1e-14)
        assert np.all(np.isnan(row[k:]))
    # Mixed batch: different numbers of intervals per row.
    rng = np.random.default_rng(61)
    arm = readme_arm(LimbLimits(shoulder=EulerLimits("XYZ", (-1.0, -0.6, -1.0), (1.0, 0.6, 1.0))))
    r1 = euler_to_matrix(rng.uniform(-0.6, 0.6, (8, 3)), "XYZ")
    r1[4:] = rand_rot(rng, 4)  # mostly infeasible rows
    g = arm.forward(r1, rng.uniform(0.2, 2.5, 8), rand_rot(rng, 8))
    goal = PoseGoal(g[:, :3, 3], g[:, :3, :3])
    arr = feasible_swivel(arm, goal)
    sol = solve_limb(arm, goal)
    assert isinstance(arr, np.ndarray)
    np.testing.assert_array_equal(np.asarray(sol.feasible_swivel), arr)
    counts = set()
    for i in range(8):
        one = feasible_swivel(arm, PoseGoal(g[i, :3, 3], g[i, :3, :3]))
        assert isinstance(one, tuple)
        assert same_intervals(sol[i].feasible_swivel, one)
        row = arr[i][~np.isnan(arr[i, :, 0])]
        assert np.all(np.isnan(arr[i][len(row) :]))  # padding only after the intervals
        assert len(row) == len(one)
        counts.add(len(one))
    assert len(counts) >= 2, counts


def test_single_solution_indexing_and_types(arm: Limb) -> None:
    g = arm.forward(np.eye(3), 1.0, np.eye(3))
    sol = solve_limb(arm, PoseGoal(g[:3, 3], g[:3, :3]))
    assert sol.shoulder.shape == (3, 3) and sol.wrist.shape == (3, 3)
    assert isinstance(sol.reachable, bool) and isinstance(sol.within_limits, bool)
    assert np.ndim(sol.elbow) == 0 and np.ndim(sol.swivel) == 0
    with pytest.raises(TypeError):
        len(sol)


# ======================================================================================
# Bad input
# ======================================================================================


def _limb_kwargs(**over: object) -> dict[str, object]:
    kw: dict[str, object] = {
        "a": tf(t=(0.0, 0.3, 0.0)),
        "b": tf(t=(0.0, 0.25, 0.0)),
        "elbow_axis": (1.0, 0.0, 0.0),
    }
    kw.update(over)
    return kw


def _bad_rot(eps: float) -> np.ndarray:
    r = np.eye(3)
    r[0, 1] = eps
    return r


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"a": tf(t=(0.0, math.nan, 0.0))}, "nan"),
        ({"b": tf(t=(0.0, math.inf, 0.0))}, "inf"),
        ({"effector": tf(t=(math.nan, 0.0, 0.0))}, "nan"),
        ({"elbow_axis": (math.nan, 0.0, 0.0)}, "nan"),
        ({"swivel_reference": (0.0, math.inf, 0.0)}, "inf"),
        ({"a": tf(_bad_rot(1e-5), (0.0, 0.3, 0.0))}, "orthonormal"),
        ({"effector": tf(np.diag([1.0, 1.0, -1.0]))}, "det"),
        ({"a": tf()}, r"0\., 0\., 0\."),
        ({"b": tf(t=(0.0, 1e-12, 0.0))}, "e-12"),
        ({"elbow_axis": (0.0, 0.0, 0.0)}, r"0\., 0\., 0\."),
        ({"elbow_axis": (0.0, 2.0, 0.0)}, r"0\., 1\., 0\."),  # along the bones: ineffective
        ({"swivel_reference": (0.0, 0.0, 0.0)}, r"0\., 0\., 0\."),
        ({"a": np.eye(3)}, r"\(3, 3\)"),
    ],
)
def test_invalid_limb_raises(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidLimbError, match=match):
        Limb(**_limb_kwargs(**kwargs))  # type: ignore[arg-type]


def test_with_limits_keeps_geometry_and_swivel_reference() -> None:
    """``Limb.with_limits`` swaps the limits only: the default swivel reference depends on
    the limits, so it must carry the original one over (φ names the same elbow)."""
    base = Limb(**_limb_kwargs())  # type: ignore[arg-type]
    limits = LimbLimits(elbow=(0.1, 2.0))
    limited = base.with_limits(limits)
    assert limited.limits is limits
    for name in ("a", "b", "elbow_axis", "effector", "swivel_reference"):
        np.testing.assert_array_equal(getattr(limited, name), getattr(base, name))
    assert limited.with_limits(None).limits is None
    with pytest.raises(InvalidLimitsError):
        base.with_limits((0.1, 2.0))  # type: ignore[arg-type]


def test_nearly_orthonormal_rotations_accepted() -> None:
    Limb(**_limb_kwargs(a=tf(_bad_rot(1e-7), (0.0, 0.3, 0.0))))  # type: ignore[arg-type]
    PoseGoal((0.1, 0.2, 0.3), _bad_rot(1e-7))


def test_hinge_axis_perpendicular_to_limb_plane_is_not_required() -> None:
    """Any axis across the limb works (§3.2.1), e.g. one tilted out of the limb plane."""
    limb = Limb(**_limb_kwargs(elbow_axis=(1.0, 0.3, 0.5)))  # type: ignore[arg-type]
    g = limb.forward(np.eye(3), 1.0, np.eye(3))
    goal = PoseGoal(g[:3, 3], g[:3, :3])
    assert_exact(limb, solve_limb(limb, goal, swivel=0.4), goal)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: EulerLimits("XYZ", (1.0, 0.0, 0.0), (0.0, 0.0, 0.0)), InvalidLimitsError, "1.0"),
        (lambda: EulerLimits("XYY"), InvalidOrderError, "XYY"),
        (lambda: EulerLimits("xyz"), InvalidOrderError, "xyz"),
        (lambda: EulerLimits("XYZ", (math.nan, 0.0, 0.0)), InvalidLimitsError, "nan"),
        (lambda: EulerLimits("XYZ", (0.0, 0.0)), InvalidLimitsError, "3"),
        (lambda: LimbLimits(elbow=(1.0, 0.5)), InvalidLimitsError, "0.5"),
        (lambda: LimbLimits(elbow=(0.0, math.inf)), InvalidLimitsError, "inf"),
        (lambda: LimbLimits(elbow=(math.nan, 1.0)), InvalidLimitsError, "nan"),
        (lambda: LimbLimits(shoulder=(0, 1)), InvalidLimitsError, r"\(0, 1\)"),  # type: ignore[arg-type]
        (lambda: Limb(**_limb_kwargs(limits="wide")), InvalidLimitsError, "wide"),  # type: ignore[arg-type]
    ],
)
def test_invalid_limits_raise(
    make: Callable[[], object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        make()
    assert issubclass(error, LimberError)


def test_wide_limits_mean_unlimited() -> None:
    lim = EulerLimits("XYZ", (-4.0, None, -math.inf), (4.0, None, math.inf))
    assert lim.limited == (False, False, False)
    assert LimbLimits(elbow=(-4.0, 4.0)).elbow is None
    assert EulerLimits("XYZ", (2.5, 0, 0), (4.0, 0, 0)).limited == (True, True, True)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: PositionGoal((0.0, math.nan, 0.0)), InvalidGoalError, "nan"),
        (lambda: PositionGoal((0.0, 0.0, math.inf)), InvalidGoalError, "inf"),
        (lambda: PositionGoal((0.0, 0.0)), InvalidGoalError, r"\(2,\)"),
        (lambda: PoseGoal((0.0, 0.0, 0.0), np.full((3, 3), math.nan)), InvalidGoalError, "nan"),
        (lambda: PoseGoal((0.0, 0.0, 0.0), _bad_rot(1e-5)), InvalidGoalError, "orthonormal"),
        (lambda: PoseGoal((0.0, 0.0, 0.0), -np.eye(3)), InvalidGoalError, "det"),
        (lambda: PoseGoal(np.zeros((3, 3)), np.stack([np.eye(3)] * 4)), ShapeMismatchError, "3"),
    ],
)
def test_invalid_goal_raises(
    make: Callable[[], object], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        make()


def test_invalid_solve_arguments_raise(arm: Limb) -> None:
    p = PositionGoal(np.zeros((3, 3)) + (0.0, 0.4, 0.0))
    one = PositionGoal((0.0, 0.4, 0.0))
    pose = PoseGoal((0.0, 0.4, 0.0), np.eye(3))
    with pytest.raises(ShapeMismatchError, match=r"3.*4|4.*3"):
        solve_limb(arm, p, swivel=np.zeros(4))
    with pytest.raises(ShapeMismatchError, match=r"3.*2|2.*3"):
        solve_limb(arm, p, elbow_target=np.zeros((2, 3)))
    with pytest.raises(ShapeMismatchError, match=r"3.*5|5.*3"):
        solve_limb(arm, p, wrist=np.stack([np.eye(3)] * 5))
    with pytest.raises(ShapeMismatchError):
        feasible_swivel(arm, p, wrist=np.stack([np.eye(3)] * 5))
    with pytest.raises(InvalidGoalError, match="swivel.*elbow_target|elbow_target.*swivel"):
        solve_limb(arm, one, swivel=0.1, elbow_target=(0.0, 0.1, 0.0))
    with pytest.raises(InvalidGoalError, match="nan"):
        solve_limb(arm, one, swivel=math.nan)
    with pytest.raises(InvalidGoalError, match="inf"):
        solve_limb(arm, one, elbow_target=(0.0, math.inf, 0.0))
    with pytest.raises(InvalidGoalError, match="orthonormal"):
        solve_limb(arm, one, wrist=_bad_rot(1e-5))
    with pytest.raises(InvalidGoalError, match="wrist"):
        solve_limb(arm, pose, wrist=np.eye(3))
    with pytest.raises(InvalidGoalError, match="bogus"):
        solve_limb(arm, one, strategy="bogus")  # type: ignore[arg-type]
    with pytest.raises(InvalidGoalError, match="tuple"):
        solve_limb(arm, (0.0, 0.4, 0.0))  # type: ignore[arg-type]
    with pytest.raises(InvalidLimbError, match="str"):
        solve_limb("arm", one)  # type: ignore[arg-type]
    with pytest.raises(InvalidGoalError, match=r"\(2, 2\)"):
        solve_limb(arm, one, swivel=np.zeros((2, 2)))
    # Every error is a LimberError and a ValueError.
    with pytest.raises(LimberError):
        solve_limb(arm, one, swivel=math.inf)
    with pytest.raises(ValueError):
        solve_limb(arm, one, swivel=math.inf)


def test_reach_tolerance_semantics(arm: Limb) -> None:
    """reachable ⇔ position error ≤ REACH_TOLERANCE × length and orientation ≤ REACH_TOLERANCE."""
    for d in (0.63 * (1 + 0.5 * REACH_TOLERANCE), 0.63 * (1 + 5 * REACH_TOLERANCE)):
        sol = solve_limb(arm, PositionGoal((0.0, d, 0.0)))
        assert sol.reachable == (sol.position_error <= REACH_TOLERANCE * arm.length)
    near = solve_limb(arm, PositionGoal((0.0, 0.63 * (1 + 0.5 * REACH_TOLERANCE), 0.0)))
    far = solve_limb(arm, PositionGoal((0.0, 0.63 * (1 + 5 * REACH_TOLERANCE), 0.0)))
    assert near.reachable is True and far.reachable is False


# ======================================================================================
# The single-goal fast path (core.limb.fast_path.solve_fast) equals the general path
# ======================================================================================


def _general_solve(limb: Limb, goal: PositionGoal | PoseGoal, **kw: object) -> LimbSolution:
    """``solve_limb`` through the general (ops-generic) path, bypassing the fast path."""
    from core.limb import model, pose

    get: Any = kw.get
    n, w, sw, (et, pgoal) = pose.prepare_goal(
        limb, goal, get("wrist"), get("swivel"), get("elbow_target")
    )
    near = get("elbow_near")
    near = None if near is None else float(near)
    limits = limb.limits if model.limits_active(limb.limits) else None
    strategy = get("strategy", SwivelStrategy.CLOSEST)
    return pose.solve_general(limb, pgoal, w, sw, et, strategy, n, limits, near)


def _assert_identical(a: LimbSolution, b: LimbSolution) -> None:
    for name in (
        "shoulder",
        "elbow",
        "wrist",
        "swivel",
        "reachable",
        "within_limits",
        "position_error",
        "orientation_error",
    ):
        x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
        assert x.shape == y.shape and np.array_equal(x, y), (name, x, y)
    assert a.feasible_swivel == b.feasible_swivel
    assert type(a.reachable) is bool and type(a.within_limits) is bool
    assert a.psi is None and a.aim_error is None


@pytest.mark.parametrize("elbow_limits", [None, (0.0, 2.6), (-2.0, -0.3)])
@pytest.mark.parametrize("kind", ["pose", "position"])
def test_fast_path_equals_general_path(kind: str, elbow_limits: tuple[float, float] | None) -> None:
    """Single goals without Euler limits: bit-for-bit the general path's solution, for
    random limbs (general hinge axes, effector offsets), reachable and unreachable goals,
    every way of giving φ_d, both strategies and ``elbow_near``."""
    from core.limb import fast_path

    rng = np.random.default_rng(7)
    taken = 0
    for _ in range(6):
        lim = None if elbow_limits is None else LimbLimits(elbow=elbow_limits)
        limb = random_limb(rng, lim)
        for _ in range(25):
            r1, r2 = rand_rot(rng), rand_rot(rng)
            th = rng.uniform(-PI, PI)
            f = limb.forward(r1, th, r2 if kind == "pose" else np.eye(3))
            scale = rng.choice([1.0, 1.0, 3.0, 0.05])  # some goals out of reach
            p = f[:3, 3] * scale
            goal = PoseGoal(p, f[:3, :3]) if kind == "pose" else PositionGoal(p)
            for kw in (
                {},
                {"swivel": float(rng.uniform(-7.0, 7.0))},
                {"swivel": 1},
                {"elbow_target": rng.normal(size=3)},
                {"elbow_target": list(rng.normal(size=3))},
                {"elbow_near": float(rng.uniform(-PI, PI))},
                {"strategy": SwivelStrategy.MIDPOINT, "swivel": np.float64(0.5)},
            ):
                fast = fast_path.solve_fast(
                    limb, goal, kw.get("swivel"), kw.get("elbow_target"),
                    kw.get("strategy", SwivelStrategy.CLOSEST), None, kw.get("elbow_near"),
                )  # fmt: skip
                general = _general_solve(limb, goal, **kw)
                if fast is not None:
                    taken += 1
                    _assert_identical(fast, general)
                _assert_identical(solve_limb(limb, goal, **kw), general)  # type: ignore[arg-type]
    assert taken > 900  # the fast path is the common case


@pytest.mark.parametrize("elbow_limits", [None, (0.0, 2.6), (-2.0, 0.0)])
def test_fast_path_equals_general_path_for_stretched_limbs(
    elbow_limits: tuple[float, float] | None,
) -> None:
    """Limbs whose elbow is straight (or a few nanometres off the bending plane, as
    float32 bone data leave it) at full reach, goals at and beyond it: the fast path
    takes the bend branch, bit-for-bit the general path's."""
    from core.limb import fast_path

    rng = np.random.default_rng(3)
    lim = None if elbow_limits is None else LimbLimits(elbow=elbow_limits)
    taken = 0
    for off in (0.0, 3e-9, -2e-8):
        a, b = np.eye(4), np.eye(4)
        a[:3, 3], b[:3, 3] = (off, 0.3, 0.0), (0.0, 0.28, 0.0)
        limb = Limb(a, b, (1.0, 0.0, 0.0), limits=lim)
        for _ in range(20):
            d = rng.normal(size=3)
            d /= np.linalg.norm(d)
            p = d * 0.58 * rng.choice([1.0, 1.0 + 1e-12, 1.01, 2.0])
            goal = PoseGoal(p, rand_rot(rng)) if rng.random() < 0.5 else PositionGoal(p)
            for kw in ({}, {"swivel": float(rng.uniform(-7.0, 7.0))},
                       {"elbow_near": float(rng.uniform(-PI, PI))}):
                fast = fast_path.solve_fast(limb, goal, kw.get("swivel"), None,
                                            SwivelStrategy.CLOSEST, None, kw.get("elbow_near"))
                general = _general_solve(limb, goal, **kw)
                if fast is not None:
                    taken += 1
                    _assert_identical(fast, general)
    assert taken >= 120


def test_fast_path_declines_what_it_does_not_cover(arm: Limb) -> None:
    """Batched goals, Euler limits, a given wrist, an effector point, callable strategies
    and degenerate geometry go to the general path (which validates and handles them)."""
    from core.limb import fast_path

    goal = PositionGoal((0.1, 0.4, 0.1))
    cl = SwivelStrategy.CLOSEST

    def fast(limb: Limb, g: PositionGoal | PoseGoal, **kw: object) -> LimbSolution | None:
        return fast_path.solve_fast(
            limb, g, kw.get("swivel"), kw.get("elbow_target"), kw.get("strategy", cl),
            kw.get("wrist"), kw.get("elbow_near"),
        )  # fmt: skip

    assert fast(arm, goal) is not None
    assert fast(arm, PositionGoal(np.array([[0.1, 0.4, 0.1]]))) is None
    assert fast(arm, PositionGoal((0.1, 0.4, 0.1), point=(0.0, 0.01, 0.0))) is None
    assert fast(arm, goal, wrist=np.eye(3)) is None
    assert fast(arm, goal, strategy=lambda a: a[:, 0]) is None
    assert fast(arm, goal, swivel=np.array([0.1, 0.2])) is None
    assert fast(arm, goal, swivel=math.nan) is None
    assert fast(arm, goal, elbow_target=(0.0, math.inf, 0.0)) is None
    assert fast(arm, goal, swivel=0.1, elbow_target=(0.0, 0.0, 1.0)) is None
    lim = LimbLimits(shoulder=EulerLimits("XYZ", (-1.0, None, None), (1.0, None, None)))
    assert fast(arm.with_limits(lim), goal) is None
    straight = PositionGoal((0.0, 0.63, 0.0))  # the bend branch: covered
    _assert_identical(fast(arm, straight), _general_solve(arm, straight))  # type: ignore[arg-type]
    assert fast(arm, PositionGoal((0.0, 0.0, 0.0))) is None  # goal at the shoulder
    # Full-turn limits do not restrict: the fast path applies.
    free = LimbLimits(shoulder=EulerLimits("XYZ", (-4.0, None, None), (4.0, None, None)))
    assert fast(arm.with_limits(free), goal) is not None


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_single_within_limits_check_equals_array_check(order: str) -> None:
    """The plain-Python limits check of a single solution agrees with the array one
    (both Euler families, wrap-around ranges, gimbal lock, angles on the limits)."""
    from core.limb import fast_path

    rng = np.random.default_rng(11)
    lim = EulerLimits(order, (-1.0, -0.7, 2.5), (1.2, 0.9, 4.0))
    rots = list(rand_rot(rng, 400))
    angles = rng.uniform(-PI, PI, size=(200, 3))
    angles[:50] = np.where(rng.random((50, 3)) < 0.5, lim.lower, lim.upper)  # on the limits
    angles[50:60, "XYZ".index(order[1])] = PI / 2  # gimbal lock
    rots += list(euler_to_matrix(angles, order))
    for r in rots:
        expected = bool(lim.contains(matrix_to_euler_families(r, order)).any())
        assert fast_path.euler_ok_one(r.tolist(), lim) is expected
        fam = fast_path.euler_families_one(r.tolist(), order)
        assert np.allclose(fam, matrix_to_euler_families(r, order), rtol=0.0, atol=1e-15)
