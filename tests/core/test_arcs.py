"""core.swivel_arcs: the elbow circle labelled by the feasible swivel intervals.

Concerns: labels agree with feasible_swivel's intervals; points lie on the elbow circle
and are the elbows solve_limb produces; degenerate and unreachable goals stay finite;
batched equals single; which limits block or bind.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import (
    EulerLimits,
    InvalidInputError,
    Limb,
    LimbLimits,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    SwivelArcs,
    blocking_limits,
    euler_to_matrix,
    feasible_swivel,
    limits_at_bound,
    matrix_to_euler_families,
    solve_limb,
    swivel_arcs,
)

from .limb_test_helpers import README_LIMITS, TAU, circ_dist, rand_rot, readme_arm, wrap


def membership(phi: np.ndarray, intervals: tuple[tuple[float, float], ...]) -> np.ndarray:
    """Independent interval membership (one interval at a time)."""
    out = np.zeros(np.shape(phi), dtype=bool)
    for lo, hi in intervals:
        out |= ((phi - lo) % TAU) <= (hi - lo)
    return out


def near_endpoint(phi: np.ndarray, intervals: tuple[tuple[float, float], ...], d: float):
    out = np.zeros(np.shape(phi), dtype=bool)
    for lo, hi in intervals:
        out |= (circ_dist(phi, lo) <= d) | (circ_dist(phi, hi) <= d)
    return out


def fk_goal(limb: Limb, q: np.ndarray) -> PoseGoal:
    """A reachable pose goal from shoulder Euler XYZ, elbow and wrist Euler XYZ angles."""
    g = limb.forward(euler_to_matrix(q[:3]), q[3], euler_to_matrix(q[4:]))
    return PoseGoal(g[:3, 3], g[:3, :3])


def batch(goal: PoseGoal, n: int) -> PoseGoal:
    return PoseGoal(
        np.broadcast_to(goal.position, (n, 3)), np.broadcast_to(goal.rotation, (n, 3, 3))
    )


def assert_on_circle(arcs: SwivelArcs, tol: float = 1e-12) -> None:
    d = arcs.points - arcs.centre[..., None, :]
    dist = np.linalg.norm(d, axis=-1)
    np.testing.assert_allclose(dist, np.broadcast_to(arcs.radius[..., None], dist.shape), atol=tol)
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", d, arcs.normal), 0.0, atol=tol)
    for name in ("points", "centre", "normal", "u", "v", "radius", "elbow", "wrist"):
        assert np.all(np.isfinite(getattr(arcs, name))), name


GOAL_Q = [
    np.array([0.4, -0.3, 0.5, 1.1, 0.2, 0.1, -0.3]),
    np.array([1.0, 0.5, -0.8, 0.5, -0.5, 0.2, 0.6]),
    np.array([-0.5, 0.2, 0.3, 2.0, 0.9, -0.4, 1.0]),
]


# -- labels ----------------------------------------------------------------------------


@pytest.mark.parametrize("q", GOAL_Q)
def test_labels_agree_with_feasible_swivel_intervals(q: np.ndarray) -> None:
    limb = readme_arm(README_LIMITS)
    goal = fk_goal(limb, q)
    arcs = swivel_arcs(limb, goal, 360)
    intervals = feasible_swivel(limb, goal)
    assert arcs.intervals == intervals
    np.testing.assert_array_equal(arcs.feasible, membership(arcs.phi, intervals))
    assert arcs.feasible.any() and not arcs.feasible.all()  # a real mix of arcs


@pytest.mark.parametrize("q", GOAL_Q)
def test_feasible_points_are_poses_within_limits(q: np.ndarray) -> None:
    """Away from the interval ends, a point's label is what solving at its φ reports."""
    limb = readme_arm(README_LIMITS)
    goal = fk_goal(limb, q)
    arcs = swivel_arcs(limb, goal, 180)
    keep = ~near_endpoint(arcs.phi, arcs.intervals, 1e-6)
    free = readme_arm(LimbLimits())  # same geometry, no limits: solves at exactly φ
    sols = solve_limb(free, batch(goal, 180), swivel=arcs.phi)
    fam = matrix_to_euler_families
    assert README_LIMITS.shoulder is not None and README_LIMITS.wrist is not None
    ok = (
        README_LIMITS.shoulder.contains(fam(sols.shoulder)).any(axis=-1)
        & README_LIMITS.wrist.contains(fam(sols.wrist)).any(axis=-1)
        & README_LIMITS.elbow_contains(sols.elbow)
    )
    np.testing.assert_array_equal(arcs.feasible[keep], ok[keep])


def test_given_intervals_are_used_as_given() -> None:
    limb = readme_arm(README_LIMITS)
    goal = fk_goal(limb, GOAL_Q[0])
    iv = ((0.0, 1.0), (2.5, 4.0))  # through π
    arcs = swivel_arcs(limb, goal, 64, intervals=iv)
    np.testing.assert_array_equal(arcs.feasible, membership(arcs.phi, iv))
    none = swivel_arcs(limb, goal, 64, intervals=())
    assert not none.feasible.any() and none.intervals == ()


def test_without_limits_the_whole_circle_is_feasible() -> None:
    arcs = swivel_arcs(readme_arm(), fk_goal(readme_arm(), GOAL_Q[1]), 50)
    assert arcs.feasible.all()
    assert arcs.intervals == ((-math.pi, math.pi),)


# -- geometry --------------------------------------------------------------------------


@pytest.mark.parametrize("q", GOAL_Q)
def test_points_are_the_elbows_solve_limb_produces(q: np.ndarray) -> None:
    limb = readme_arm()
    goal = fk_goal(limb, q)
    n = 72
    arcs = swivel_arcs(limb, goal, n, swivel=0.7)
    assert_on_circle(arcs)
    sols = solve_limb(limb, batch(goal, n), swivel=arcs.phi)
    np.testing.assert_allclose(limb.elbow_position(sols.shoulder), arcs.points, atol=1e-12)
    one = solve_limb(limb, goal, swivel=0.7)
    np.testing.assert_allclose(limb.elbow_position(one.shoulder), arcs.elbow, atol=1e-12)
    assert arcs.swivel == pytest.approx(0.7)
    # The wrist centre is the axis end; φ = 0 lies along u, φ = π/2 along v.
    fk = limb.forward(one.shoulder, one.elbow, one.wrist)
    wrist_centre = fk[:3, 3] - fk[:3, :3] @ np.array([0.0, 0.08, 0.0])
    np.testing.assert_allclose(arcs.wrist, wrist_centre, atol=1e-12)
    axis = wrist_centre / np.linalg.norm(wrist_centre)
    np.testing.assert_allclose(arcs.normal, axis, atol=1e-12)
    np.testing.assert_allclose(np.cross(arcs.normal, arcs.u), arcs.v, atol=1e-12)
    assert arcs.shoulder.tolist() == [0.0, 0.0, 0.0]


def test_position_and_partial_goals() -> None:
    limb = readme_arm(README_LIMITS)
    goal = fk_goal(limb, GOAL_Q[0])
    wrist = rand_rot(np.random.default_rng(3))
    pos = PositionGoal(goal.position)
    arcs = swivel_arcs(limb, pos, 90, wrist=wrist)
    assert_on_circle(arcs)
    np.testing.assert_array_equal(
        arcs.feasible, membership(arcs.phi, feasible_swivel(limb, pos, wrist=wrist))
    )
    np.testing.assert_allclose(arcs.wrist, goal.position, atol=0)  # the effector point
    part = PartialOrientationGoal(
        position=goal.position, axis=(0, 1, 0), direction=goal.rotation[:, 1]
    )
    arcs_p = swivel_arcs(limb, part, 90, psi=0.3)
    assert_on_circle(arcs_p)
    np.testing.assert_array_equal(
        arcs_p.feasible, membership(arcs_p.phi, feasible_swivel(limb, part, psi=0.3))
    )


@pytest.mark.parametrize(
    "position",
    [
        (0.0, 0.0, 0.0),  # at the shoulder
        (0.0, 5.0, 0.0),  # far out of reach, straight ahead
        (3.0, -2.0, 1.0),  # out of reach, elsewhere
        (0.0, 0.63, 0.0),  # exactly stretched
        (1e-12, 0.0, 0.0),  # next to the shoulder
    ],
)
@pytest.mark.parametrize("limits", [None, README_LIMITS])
def test_degenerate_and_unreachable_goals_are_defined(position, limits) -> None:
    limb = readme_arm(limits)
    for goal in (PositionGoal(position), PoseGoal(position, np.eye(3))):
        arcs = swivel_arcs(limb, goal, 40, swivel=1.0)
        assert_on_circle(arcs)
        assert np.isfinite(arcs.swivel)
        assert arcs.radius >= 0.0
        np.testing.assert_array_equal(arcs.feasible, membership(arcs.phi, arcs.intervals))


def test_batched_equals_single() -> None:
    limb = readme_arm(README_LIMITS)
    goals = [fk_goal(limb, q) for q in GOAL_Q]
    batch = PoseGoal(np.stack([g.position for g in goals]), np.stack([g.rotation for g in goals]))
    sw = np.array([0.1, -2.0, 3.0])
    arcs = swivel_arcs(limb, batch, 48, swivel=sw)
    assert arcs.points.shape == (3, 48, 3) and arcs.feasible.shape == (3, 48)
    for i, g in enumerate(goals):
        one = swivel_arcs(limb, g, 48, swivel=sw[i])
        np.testing.assert_allclose(arcs.points[i], one.points, atol=1e-14)
        np.testing.assert_array_equal(arcs.feasible[i], one.feasible)
        np.testing.assert_allclose(arcs.elbow[i], one.elbow, atol=1e-14)


@pytest.mark.parametrize("n", [2, 0, -1, 100_001, 3.0, True])
def test_bad_sample_count_raises(n) -> None:
    with pytest.raises(InvalidInputError, match="samples"):
        swivel_arcs(readme_arm(), PositionGoal((0.0, 0.4, 0.0)), n)


# -- hypothesis ------------------------------------------------------------------------

angles = st.floats(-math.pi, math.pi, allow_nan=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    q=st.lists(angles, min_size=7, max_size=7),
    scale=st.floats(0.0, 2.0),
    swivel=st.floats(-10.0, 10.0, allow_nan=False),
    limited=st.booleans(),
)
def test_property_on_circle_and_labels_match(q, scale, swivel, limited) -> None:
    limb = readme_arm(README_LIMITS if limited else None)
    g = fk_goal(limb, np.array(q))
    goal = PoseGoal(g.position * scale, g.rotation)  # toward the shoulder or past reach
    arcs = swivel_arcs(limb, goal, 64, swivel=swivel)
    assert_on_circle(arcs)
    assert circ_dist(arcs.swivel, wrap(swivel)) < 1e-12
    # a sample on an interval's end (e.g. φ = −π/2 exactly, the end rounded 3e-16 inside)
    # may take either label
    iv = feasible_swivel(limb, goal)
    clear = ~near_endpoint(arcs.phi, iv, 1e-12)
    np.testing.assert_array_equal(arcs.feasible[clear], membership(arcs.phi, iv)[clear])


# -- which limits block or bind --------------------------------------------------------


def test_blocking_limits_names_the_joint_angle() -> None:
    """A shoulder X range that no pose on the circle can meet empties the set by itself."""
    tight = LimbLimits(shoulder=EulerLimits("XYZ", (3.0, None, None), (3.01, None, None)))
    limb = readme_arm(tight)
    goal = fk_goal(readme_arm(), GOAL_Q[0])
    assert feasible_swivel(limb, goal) == ()
    assert blocking_limits(limb, goal) == ("shoulder X",)
    assert blocking_limits(readme_arm(README_LIMITS), goal) == ()
    assert blocking_limits(readme_arm(), goal) == ()


def test_limits_at_bound_reports_the_clamped_joint() -> None:
    limb = readme_arm(README_LIMITS)
    goal = fk_goal(limb, GOAL_Q[0])
    iv = feasible_swivel(limb, goal)
    lo, hi = iv[0]
    outside = wrap(hi + 0.5 * (TAU - (hi - lo)))  # the middle of the gap after the interval
    sol = solve_limb(limb, goal, swivel=outside)
    assert sol.within_limits
    assert min(circ_dist(sol.swivel, e) for e in (lo, hi) + tuple(x for p in iv for x in p)) < 1e-9
    names = limits_at_bound(limb, sol.shoulder, sol.elbow, sol.wrist)
    assert names and all(n.split()[0] in ("shoulder", "wrist", "elbow") for n in names)
    inside = solve_limb(limb, goal, swivel=0.5 * (lo + hi))
    assert limits_at_bound(limb, inside.shoulder, inside.elbow, inside.wrist) == ()
    assert limits_at_bound(readme_arm(), inside.shoulder, inside.elbow, inside.wrist) == ()
