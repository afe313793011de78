"""Tests of aiming goals for the limb (Tolani, Goswami & Badler 2000, §3.4).

Independent of ``core.limb.aim``: the aiming ray of a solution is recomputed with
``Limb.forward``; solvability for an elbow angle is decided here (the ray, rigid with the
shoulder's distal frame, must have a point at distance |t| from the shoulder ahead of its
origin); unreachable aims are compared with a coarse grid over the free joints; limits
are checked by extracting both Euler families ourselves.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core import (
    EULER_ORDERS,
    AimGoal,
    EulerLimits,
    InvalidGoalError,
    Limb,
    LimberError,
    LimbLimits,
    LimbSolution,
    PsiStrategy,
    ShapeMismatchError,
    feasible_swivel,
    matrix_to_euler_families,
    quat_to_matrix,
    solve_limb,
)
from tests.core.limb_test_helpers import (
    SETTINGS,
    angle,
    circ_dist,
    joints_within,
    no_warnings,
    pose_within,
    rand_rot,
    readme_arm,
    tf,
    unit,
)
from tests.core.limb_test_helpers import assert_finite as _assert_finite

PI = math.pi
TAU = 2.0 * PI
EXACT = 1e-10


# ======================================================================================
# Independent helpers
# ======================================================================================


def assert_finite(sol: LimbSolution) -> None:
    _assert_finite(sol, ("shoulder", "elbow", "wrist", "swivel", "orientation_error", "aim_error"))


def ray(limb: Limb, r1: np.ndarray, theta: np.ndarray | float, w: np.ndarray, goal: AimGoal):
    """(origin, direction) of the aiming ray, shoulder frame, by forward kinematics."""
    f = limb.forward(r1, theta, w)
    o = f[..., :3, 3] + (f[..., :3, :3] @ np.asarray(goal.origin)[..., None])[..., 0]
    d = (f[..., :3, :3] @ np.asarray(goal.axis)[..., None])[..., 0]
    return o, d


def aim_err(o: np.ndarray, d: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Angle between the ray and origin → target; 0 for a target at the origin."""
    to = target - o
    near = np.linalg.norm(to, axis=-1) <= 1e-12
    return np.where(near, 0.0, angle(d, np.where(near[..., None], d, to)))


def fk_aim_error(limb: Limb, sol: LimbSolution, goal: AimGoal) -> np.ndarray:
    o, d = ray(limb, sol.shoulder, sol.elbow, sol.wrist, goal)
    return aim_err(o, d, np.asarray(goal.target))


def assert_truthful(limb: Limb, sol: LimbSolution, goal: AimGoal) -> np.ndarray:
    err = fk_aim_error(limb, sol, goal)
    np.testing.assert_allclose(sol.aim_error, err, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(sol.orientation_error, err, rtol=1e-9, atol=1e-13)
    return err


def assert_exact(limb: Limb, sol: LimbSolution, goal: AimGoal) -> None:
    assert_finite(sol)
    err = assert_truthful(limb, sol, goal)
    assert np.all(err <= EXACT), f"aim error {np.max(err)}"
    assert np.all(sol.reachable)


def solvable(
    limb: Limb, theta: float | np.ndarray, w: np.ndarray, goal: AimGoal, margin: float = 0.0
) -> np.ndarray:
    """Whether the aim can be met with this θ4 and wrist: with R1 = I the ray is
    (h_o, a_o); R1 preserves distances from the shoulder, so some λ ≥ 0 must give
    |h_o + λ a_o| = |t| (|t| ≥ the ray line's distance from the shoulder, target ahead)."""
    o, d = ray(limb, np.eye(3), theta, w, goal)
    t2 = float(np.asarray(goal.target) @ np.asarray(goal.target))
    b = np.sum(o * d, axis=-1)
    disc = b * b - np.sum(o * o, axis=-1) + t2
    lam = -b + np.sqrt(np.maximum(disc, 0.0))
    return (disc >= margin * margin) & (lam >= margin)


def batch(goal: AimGoal, n: int) -> AimGoal:
    return AimGoal(
        np.broadcast_to(np.asarray(goal.target), (n, 3)).copy(),
        np.broadcast_to(np.asarray(goal.axis), (n, 3)).copy(),
        np.broadcast_to(np.asarray(goal.origin), (n, 3)).copy(),
    )


# --------------------------------------------------------------------------------------
# Limbs
# --------------------------------------------------------------------------------------


def hinge_quality(a: np.ndarray, b: np.ndarray, k: np.ndarray) -> tuple[float, float]:
    ta_l = a[:3, :3].T @ a[:3, 3]
    tb = b[:3, 3]
    r = math.hypot(float(ta_l @ tb - (k @ ta_l) * (k @ tb)), float(ta_l @ np.cross(k, tb)))
    normal = np.cross(ta_l, tb)
    nn = float(np.linalg.norm(normal))
    perp = abs(float(k @ normal)) / nn if nn > 1e-9 else 0.0
    return r / (np.linalg.norm(ta_l) * np.linalg.norm(tb)), perp


def random_limb(rng: np.random.Generator, limits: LimbLimits | None = None) -> Limb:
    while True:
        a = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.15, 0.5))
        b = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.15, 0.5))
        e = tf(rand_rot(rng), rng.normal(size=3) * 0.05)
        k = unit(rng.normal(size=3))
        r, perp = hinge_quality(a, b, k)
        if r > 0.3 and perp < 0.97:
            return Limb(a, b, elbow_axis=k, effector=e, limits=limits)


coord = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
quat = st.tuples(coord, coord, coord, coord).filter(lambda q: sum(x * x for x in q) > 0.05)
vec3 = st.tuples(coord, coord, coord).filter(lambda v: sum(x * x for x in v) > 0.05)
angles = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)


@st.composite
def limbs(draw: st.DrawFn) -> Limb:
    """General limbs: offsets off the bone lines, any effector, a hinge axis generally not
    perpendicular to the limb plane."""
    ra, rb, re = (quat_to_matrix(np.array(draw(quat))) for _ in range(3))
    ta = unit(np.array(draw(vec3))) * draw(st.floats(0.1, 0.5))
    tb = unit(np.array(draw(vec3))) * draw(st.floats(0.1, 0.5))
    te = np.array(draw(vec3)) * draw(st.floats(0.0, 0.1))
    k = unit(np.array(draw(vec3)))
    a, b = tf(ra, ta), tf(rb, tb)
    r, perp = hinge_quality(a, b, k)
    assume(r > 0.2 and perp < 0.999)
    return Limb(a, b, elbow_axis=k, effector=tf(re, te))


@st.composite
def aims(draw: st.DrawFn) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray, float]:
    """(R1, θ4, wrist, axis, origin, λ): a configuration and a ray through a target λ ahead."""
    r1 = quat_to_matrix(np.array(draw(quat)))
    w = quat_to_matrix(np.array(draw(quat)))
    theta = draw(st.floats(-PI, PI))
    axis = unit(np.array(draw(vec3)))
    origin = np.array(draw(st.tuples(coord, coord, coord))) * draw(st.floats(0.0, 0.2))
    lam = draw(st.floats(0.01, 3.0))
    return r1, theta, w, axis, origin, lam


def make_goal(limb: Limb, cfg: tuple) -> AimGoal:
    r1, theta, w, axis, origin, lam = cfg
    g = AimGoal((0.0, 0.0, 0.0), axis, origin)
    o, d = ray(limb, r1, theta, w, g)
    return AimGoal(o + lam * d, axis, origin)


def hand_circle_phi(limb: Limb, sol: LimbSolution, goal: AimGoal) -> float | None:
    """φ of the ray origin about the shoulder → target axis, measured from the swivel
    reference's projection (the documented convention); None where undefined."""
    t = np.asarray(goal.target)
    n = unit(t)
    o, _ = ray(limb, sol.shoulder, sol.elbow, sol.wrist, goal)
    perp = o - (o @ n) * n
    ref = np.asarray(limb.swivel_reference)
    u = ref - (ref @ n) * n
    if np.linalg.norm(perp) < 1e-6 or np.linalg.norm(u) < 1e-6:
        return None
    u = unit(u)
    v = np.cross(n, u)
    return math.atan2(float(perp @ v), float(perp @ u))


# ======================================================================================
# Round trips
# ======================================================================================


@SETTINGS
@given(limb=limbs(), cfg=aims(), phi=angles)
def test_round_trip_elbow_given_any_swivel(limb: Limb, cfg: tuple, phi: float) -> None:
    """θ4 given (Eq. 13): exact for every φ; θ4 and the wrist are kept; φ is the ray
    origin's angle on the hand circle."""
    goal = make_goal(limb, cfg)
    _, theta, w, _, _, _ = cfg
    assume(np.linalg.norm(goal.target) > 1e-6)
    with no_warnings():
        sol = solve_limb(limb, goal, elbow=theta, wrist=w, swivel=phi)
    assert_exact(limb, sol, goal)
    assert sol.elbow == pytest.approx(theta, abs=1e-15)
    np.testing.assert_allclose(sol.wrist, w, atol=1e-15)
    assert circ_dist(sol.swivel, phi) <= 1e-12
    assert sol.position_error == 0.0
    measured = hand_circle_phi(limb, sol, goal)
    if measured is not None:
        assert circ_dist(measured, phi) <= 1e-8


@SETTINGS
@given(limb=limbs(), cfg=aims(), theta2=st.floats(-PI, PI), phi=angles)
def test_round_trip_any_solvable_elbow(limb: Limb, cfg: tuple, theta2: float, phi: float) -> None:
    """Any other θ4 for which the aim is solvable (decided here): exact for any φ."""
    goal = make_goal(limb, cfg)
    w = cfg[2]
    assume(bool(solvable(limb, theta2, w, goal, margin=1e-6 * limb.length)))
    with no_warnings():
        sol = solve_limb(limb, goal, elbow=theta2, wrist=w, swivel=phi)
    assert_exact(limb, sol, goal)
    assert circ_dist(sol.elbow, theta2) <= 1e-15


@settings(SETTINGS, max_examples=30)
@given(limb=limbs(), cfg=aims(), phi=angles)
def test_round_trip_elbow_free(limb: Limb, cfg: tuple, phi: float) -> None:
    """θ4 free: the 2-DOF problem; exact, and θ4 = 0 whenever the aim is solvable there."""
    goal = make_goal(limb, cfg)
    w = cfg[2]
    with no_warnings():
        sol = solve_limb(limb, goal, wrist=w, swivel=phi)
    assert_exact(limb, sol, goal)
    if solvable(limb, 0.0, w, goal, margin=1e-9):
        assert sol.elbow == 0.0


def test_round_trip_batched_matches_singles() -> None:
    """Fixed and free elbow, with and without limits: batched = singles (1e-12)."""
    rng = np.random.default_rng(3)
    n = 10
    for limits in (None, "box"):
        limb = random_limb(rng)
        if limits:
            box = EulerLimits("XYZ", (-1.5, -1.0, -2.0), (1.5, 1.0, 2.0))
            limb = limb.with_limits(LimbLimits(shoulder=box, elbow=(-2.0, 2.0), wrist=box))
        r1, th, w = rand_rot(rng, n), rng.uniform(-2, 2, n), rand_rot(rng, n)
        ax = unit(rng.normal(size=(n, 3)))
        org = rng.normal(size=(n, 3)) * 0.05
        g0 = AimGoal(np.zeros((n, 3)), ax, org)
        o, d = ray(limb, r1, th, w, g0)
        goal = AimGoal(o + rng.uniform(0.05, 1.0, (n, 1)) * d, ax, org)
        for kw in (
            {"elbow": th, "wrist": w, "swivel": rng.uniform(-4, 4, n)},
            {"elbow": 0.7, "wrist": w},
            {"elbow": th, "swivel": 0.3},
            {"wrist": w},
        ):
            with no_warnings():
                sol = solve_limb(limb, goal, **kw)
            for i in range(n):
                kw_i = {
                    k: (v[i] if isinstance(v, np.ndarray) and v.shape[:1] == (n,) else v)
                    for k, v in kw.items()
                }
                gi = AimGoal(goal.target[i], goal.axis[i], goal.origin[i])
                single = solve_limb(limb, gi, **kw_i)
                b = sol[i]
                np.testing.assert_allclose(b.shoulder, single.shoulder, rtol=0, atol=1e-12)
                np.testing.assert_allclose(b.wrist, single.wrist, rtol=0, atol=1e-12)
                assert abs(b.elbow - single.elbow) <= 1e-12
                assert circ_dist(b.swivel, single.swivel) <= 1e-12
                assert abs(b.aim_error - single.aim_error) <= 1e-12
                assert b.reachable == single.reachable
                assert b.within_limits == single.within_limits


# ======================================================================================
# Degenerate cases
# ======================================================================================


def test_target_at_shoulder_no_nan() -> None:
    rng = np.random.default_rng(5)
    for limb in (readme_arm(), random_limb(rng), random_limb(rng)):
        goal = AimGoal((0.0, 0.0, 0.0), unit(rng.normal(size=3)), rng.normal(size=3) * 0.05)
        for kw in ({}, {"elbow": 0.5}, {"elbow": 0.5, "swivel": 2.0}):
            with no_warnings():
                sol = solve_limb(limb, goal, **kw)
            assert_finite(sol)
            err = assert_truthful(limb, sol, goal)
            assert sol.reachable == bool(err <= 1e-9)


def test_target_on_the_ray_origin() -> None:
    """Target exactly at the ray's origin of a reachable configuration: the ray passes
    through it (aim error 0 by definition) — exact, no NaN."""
    rng = np.random.default_rng(6)
    for limb in (readme_arm(), random_limb(rng), random_limb(rng)):
        org = rng.normal(size=3) * 0.05
        ax = unit(rng.normal(size=3))
        theta = float(rng.uniform(-2, 2))
        o, _ = ray(limb, rand_rot(rng), theta, np.eye(3), AimGoal((0, 0, 0), ax, org))
        goal = AimGoal(o, ax, org)
        for phi in (0.0, 1.0, -2.0):
            with no_warnings():
                sol = solve_limb(limb, goal, elbow=theta, swivel=phi)
                free = solve_limb(limb, goal, swivel=phi)
            assert_exact(limb, sol, goal)
            assert_exact(limb, free, goal)


def test_aiming_axis_parallel_to_forearm() -> None:
    """The ray along the forearm (through the wrist and elbow): exact for solvable targets,
    including the straight arm aiming along itself (a degenerate hand circle)."""
    limb = readme_arm()
    rng = np.random.default_rng(7)
    ax = np.array([0.0, 1.0, 0.0])
    for _ in range(5):
        r1, theta = rand_rot(rng), float(rng.uniform(-2.5, 2.5))
        o, d = ray(limb, r1, theta, np.eye(3), AimGoal((0, 0, 0), ax))
        goal = AimGoal(o + 0.4 * d, ax)
        for phi in (0.0, 2.5):
            with no_warnings():
                sol = solve_limb(limb, goal, elbow=theta, swivel=phi)
            assert_exact(limb, sol, goal)
        with no_warnings():
            assert_exact(limb, solve_limb(limb, goal), goal)
    for target in ((0.0, 1.0, 0.0), (0.3, 0.0, -0.8)):  # along the straight arm
        goal = AimGoal(target, ax)
        for phi in (0.0, 1.3):
            with no_warnings():
                sol = solve_limb(limb, goal, elbow=0.0, swivel=phi)
            assert_exact(limb, sol, goal)


# ======================================================================================
# Unreachable aims
# ======================================================================================


def rotation_grid(n: int, seed: int) -> np.ndarray:
    """A coarse set of rotations (seeded random, plus identity)."""
    rng = np.random.default_rng(seed)
    return np.concatenate([np.eye(3)[None], rand_rot(rng, n)])


def baseline_fixed_elbow(limb: Limb, goal: AimGoal, theta: float, w: np.ndarray) -> float:
    r1 = rotation_grid(4000, 1)
    o, d = ray(limb, r1, theta, w, goal)
    return float(np.min(aim_err(o, d, np.asarray(goal.target))))


def baseline_free_elbow(limb: Limb, goal: AimGoal, w: np.ndarray, within: bool = False):
    r1 = rotation_grid(1500, 2)
    ths = np.linspace(-PI, PI, 24, endpoint=False)
    rr = np.broadcast_to(r1[:, None], (len(r1), len(ths), 3, 3))
    tt = np.broadcast_to(ths[None, :], (len(r1), len(ths)))
    o, d = ray(limb, rr, tt, w, goal)
    err = aim_err(o, d, np.asarray(goal.target))
    if within:
        err = np.where(joints_within(limb, rr, tt, np.broadcast_to(w, rr.shape)), err, np.inf)
    return float(np.min(err))


def unsolvable_goal(rng: np.random.Generator, limb: Limb, theta: float, kind: str) -> AimGoal:
    """A target the ray cannot pass through with this θ4: inside the unreachable cone
    (|t| < the ray line's distance from the shoulder) or behind the ray's origin."""
    while True:
        ax = unit(rng.normal(size=3))
        org = rng.normal(size=3) * 0.05
        g = AimGoal((0.0, 0.0, 0.0), ax, org)
        o, d = ray(limb, np.eye(3), theta, np.eye(3), g)
        dline = float(np.linalg.norm(o - (o @ d) * d))
        if kind == "cone":
            t = unit(rng.normal(size=3)) * dline * rng.uniform(0.05, 0.9)
        else:  # behind: ray heading away from the shoulder, |t| in [dline, |o|)
            if o @ d <= 0.05 * np.linalg.norm(o):
                continue
            t = unit(rng.normal(size=3)) * (
                dline + rng.uniform(0.1, 0.9) * (np.linalg.norm(o) - dline)
            )
        goal = AimGoal(t, ax, org)
        if not solvable(limb, theta, np.eye(3), goal):
            return goal


@pytest.mark.parametrize("kind", ["cone", "behind"])
def test_unreachable_fixed_elbow_no_nan_truthful(kind: str) -> None:
    rng = np.random.default_rng(30 if kind == "cone" else 31)
    for limb in (readme_arm(), random_limb(rng), random_limb(rng), random_limb(rng)):
        theta = float(rng.uniform(-2.5, 2.5))
        goal = unsolvable_goal(rng, limb, theta, kind)
        for phi in (0.0, 1.5):
            with no_warnings():
                sol = solve_limb(limb, goal, elbow=theta, swivel=phi)
            assert_finite(sol)
            assert sol.reachable is False
            assert_truthful(limb, sol, goal)
            assert sol.elbow == theta


@pytest.mark.parametrize("kind", ["cone", "behind"])
def test_unreachable_fixed_elbow_no_worse_than_grid(kind: str) -> None:
    rng = np.random.default_rng(30 if kind == "cone" else 31)
    worse = []
    for limb in (readme_arm(), random_limb(rng), random_limb(rng), random_limb(rng)):
        theta = float(rng.uniform(-2.5, 2.5))
        goal = unsolvable_goal(rng, limb, theta, kind)
        for phi in (0.0, 1.5):
            sol = solve_limb(limb, goal, elbow=theta, swivel=phi)
            base = baseline_fixed_elbow(limb, goal, theta, np.eye(3))
            if sol.aim_error > base + 1e-9:
                worse.append((sol.aim_error, base))
    assert not worse, worse


def test_unreachable_fixed_elbow_minimal() -> None:
    """Straight arm (θ4 = 0), ray along the effector's X from the hand, target 0.1 m from
    the shoulder (inside the 0.63 m unreachable cone): the solver points the hand at the
    target, 90° off; the best aim is ≈ 80.9° (hand ⊥ target, ray toward its side)."""
    limb = readme_arm()
    goal = AimGoal((0.0, 0.0, 0.1), (1.0, 0.0, 0.0))
    sol = solve_limb(limb, goal, elbow=0.0)
    assert sol.reachable is False
    assert sol.aim_error <= baseline_fixed_elbow(limb, goal, 0.0, np.eye(3)) + 1e-9


UNSOLVABLE_FREE = [
    AimGoal((0.0, 0.05, 0.0), (0.0, 1.0, 0.0)),
    AimGoal((0.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    AimGoal((0.0, 0.2, 0.02), (0.0, 1.0, 0.0), (0.0, 0.02, 0.0)),
]


def test_unreachable_free_elbow_no_nan_truthful() -> None:
    """Targets no θ4 can aim at (checked on a dense θ4 grid): elbow limits keep the
    forearm from turning back, the target sits behind the hand."""
    limb = readme_arm(LimbLimits(elbow=(0.0, 1.0)))
    ths = np.linspace(0.0, 1.0, 501)
    for goal in UNSOLVABLE_FREE:
        assert not np.any(solvable(limb, ths, np.eye(3), goal))
        with no_warnings():
            sol = solve_limb(limb, goal, swivel=0.4)
        assert_finite(sol)
        assert sol.reachable is False
        assert_truthful(limb, sol, goal)
        assert sol.within_limits == bool(pose_within(limb, sol))


def test_unreachable_free_elbow_no_worse_than_grid() -> None:
    limb = readme_arm(LimbLimits(elbow=(0.0, 1.0)))
    worse = []
    for goal in UNSOLVABLE_FREE:
        sol = solve_limb(limb, goal, swivel=0.4)
        base = baseline_free_elbow(limb, goal, np.eye(3), within=True)
        if sol.aim_error > base + 1e-9:
            worse.append((sol.aim_error, base))
    assert not worse, worse


# ======================================================================================
# Joint limits
# ======================================================================================


def limited_case(seed: int) -> tuple[Limb, AimGoal, float, np.ndarray]:
    """Limits centred on a configuration that aims exactly at the target."""
    rng = np.random.default_rng(700 + seed)
    base = readme_arm() if seed % 5 == 0 else random_limb(rng)
    r1, w, theta = rand_rot(rng), rand_rot(rng), float(rng.uniform(-PI, PI))

    def euler(r: np.ndarray) -> EulerLimits:
        order = str(rng.choice(EULER_ORDERS))
        fam = matrix_to_euler_families(r, order)[int(rng.integers(2))]
        wl, wh = rng.uniform(0.05, 0.8, size=(2, 3))
        return EulerLimits(order, tuple(fam - wl), tuple(fam + wh))

    ew = rng.uniform(0.1, 1.0, size=2)
    limits = LimbLimits(shoulder=euler(r1), elbow=(theta - ew[0], theta + ew[1]), wrist=euler(w))
    limb = base.with_limits(limits)
    ax = unit(rng.normal(size=3))
    org = rng.normal(size=3) * 0.05
    o, d = ray(limb, r1, theta, w, AimGoal((0, 0, 0), ax, org))
    goal = AimGoal(o + rng.uniform(0.1, 1.0) * d, ax, org)
    return limb, goal, theta, w


def free_limb(limb: Limb) -> Limb:
    return limb.with_limits(None)


def rot_about(axis: np.ndarray, ang: np.ndarray) -> np.ndarray:
    """Rodrigues, (..., 3, 3) for angles (...)."""
    k = unit(axis)
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    c, s = np.cos(ang)[..., None, None], np.sin(ang)[..., None, None]
    return np.eye(3) + s * kx + (1 - c) * (kx @ kx)


def aiming_shoulders(
    limb: Limb, goal: AimGoal, theta: float, w: np.ndarray, n_phi: int
) -> np.ndarray:
    """Every R1 aiming exactly, for θ4 and wrist fixed, built here: the ray (h_o, a_o) at
    R1 = I meets the sphere |x| = |t| at t'± = h_o + λ± a_o (λ± ≥ 0, up to two circles of
    solutions); R1 = Rot(t̂, φ)·(the minimal rotation t̂'± → t̂), φ on a grid. (M, 3, 3)."""
    o, d = ray(limb, np.eye(3), theta, w, goal)
    t = np.asarray(goal.target)
    b = float(o @ d)
    disc = b * b - float(o @ o) + float(t @ t)
    out = []
    if disc < 0:
        return np.zeros((0, 3, 3))
    phis = np.linspace(-PI, PI, n_phi, endpoint=False)
    for lam in {-b + math.sqrt(disc), -b - math.sqrt(disc)}:
        if lam < 0:
            continue
        tp = unit(o + lam * d)
        tn = unit(t)
        cross = np.cross(tp, tn)
        if np.linalg.norm(cross) < 1e-12:
            perp = unit(np.cross(tp, (0.3, 0.5, 0.8)))
            align = np.eye(3) if tp @ tn > 0 else rot_about(perp, np.array(PI))
        else:
            align = rot_about(cross, np.array(math.atan2(np.linalg.norm(cross), tp @ tn)))
        out.append(rot_about(tn, phis) @ align)
    return np.concatenate(out) if out else np.zeros((0, 3, 3))


@pytest.mark.parametrize("seed", range(10))
def test_limits_fixed_elbow_whenever_dense_swivel_grid_has_a_solution(seed: int) -> None:
    limb, goal, theta, w = limited_case(seed)
    r1 = aiming_shoulders(limb, goal, theta, w, 1440)
    o, d = ray(limb, r1, theta, w, goal)
    assert np.all(aim_err(o, d, np.asarray(goal.target)) <= 1e-9)  # our grid really aims
    ok = joints_within(limb, r1, np.full(len(r1), theta), np.broadcast_to(w, r1.shape))
    assert ok.any()  # the generating configuration lies on one of the circles
    for phi in (0.0, 2.0):
        with no_warnings():
            sol = solve_limb(limb, goal, elbow=theta, wrist=w, swivel=phi)
        assert_exact(limb, sol, goal)
        assert sol.within_limits is True and bool(pose_within(limb, sol))
        fs = feasible_swivel(limb, goal, elbow=theta, wrist=w)
        assert isinstance(fs, tuple) and fs
        assert any((sol.swivel - a) % TAU <= b - a + 1e-12 for a, b in fs)


@pytest.mark.parametrize("seed", range(10))
def test_limits_free_elbow_whenever_dense_grid_has_a_solution(seed: int) -> None:
    """θ4 free with limits: a dense (θ4, φ) grid of exact aims (both circles, built here)."""
    limb, goal, _, w = limited_case(seed)
    lo, hi = limb.limits.elbow  # type: ignore[union-attr, misc]
    feasible = 0
    for th in np.linspace(lo, hi, 60):
        r1 = aiming_shoulders(limb, goal, float(th), w, 360)
        if len(r1):
            ok = joints_within(limb, r1, np.full(len(r1), th), np.broadcast_to(w, r1.shape))
            feasible += int(ok.sum())
    with no_warnings():
        sol = solve_limb(limb, goal, wrist=w)
    assert_finite(sol)
    assert_truthful(limb, sol, goal)
    assert sol.within_limits == bool(pose_within(limb, sol))
    if feasible:
        assert_exact(limb, sol, goal)
        assert sol.within_limits is True


def _second_root_case() -> tuple[Limb, AimGoal]:
    """Arm with θ4 = 1, ray along the hand's −Y: it crosses the sphere |x| = |t| twice
    ahead of its origin (λ ≈ 0.10 and 0.88); the target is the near crossing. R1 = I,
    θ4 = 1 aims exactly within the limits."""
    lim = LimbLimits(shoulder=EulerLimits("XYZ", (-0.2,) * 3, (0.2,) * 3), elbow=(0.8, 1.2))
    limb = readme_arm(lim)
    o, d = ray(limb, np.eye(3), 1.0, np.eye(3), AimGoal((0, 0, 0), (0.0, -1.0, 0.0)))
    return limb, AimGoal(o + 0.1 * d, (0.0, -1.0, 0.0))


def test_limits_second_root_fixed_elbow_minimal() -> None:
    limb, goal = _second_root_case()
    assert bool(joints_within(limb, np.eye(3), np.array(1.0), np.eye(3)))
    sol = solve_limb(limb, goal, elbow=1.0)
    assert sol.within_limits is True


def test_limits_second_root_free_elbow_minimal() -> None:
    limb, goal = _second_root_case()
    sol = solve_limb(limb, goal)
    assert sol.within_limits is True


# ======================================================================================
# Bad input
# ======================================================================================


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: AimGoal((0.0, 0.3, 0.2), (0.0, 0.0, 0.0)), InvalidGoalError),
        (lambda: AimGoal((0.0, 0.3, 0.2), (0.0, 2.0, 0.0)), InvalidGoalError),
        (lambda: AimGoal((0.0, math.nan, 0.2), (0.0, 1.0, 0.0)), InvalidGoalError),
        (lambda: AimGoal((0.0, 0.3, 0.2), (0.0, 1.0, 0.0), (0.0, math.inf, 0.0)), InvalidGoalError),
        (lambda: AimGoal((0.0, 0.3), (0.0, 1.0, 0.0)), InvalidGoalError),
        (lambda: AimGoal(np.zeros((3, 3)), np.tile((0.0, 1.0, 0.0), (2, 1))), ShapeMismatchError),
    ],
)
def test_invalid_aim_goal_raises(make: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        make()  # type: ignore[operator]


def test_invalid_aim_solve_arguments_raise() -> None:
    limb = readme_arm()
    one = AimGoal((0.0, 0.3, 0.2), (0.0, 1.0, 0.0))
    many = batch(one, 3)
    bad_rot = np.eye(3) + 1e-3
    cases: list[tuple[dict, type[Exception], AimGoal]] = [
        ({"elbow": math.nan}, InvalidGoalError, one),
        ({"elbow": np.zeros((2, 2))}, InvalidGoalError, one),
        ({"elbow": np.zeros(4)}, ShapeMismatchError, many),
        ({"swivel": np.zeros(2)}, ShapeMismatchError, many),
        ({"swivel": math.inf}, InvalidGoalError, one),
        ({"elbow": np.zeros(2), "swivel": np.zeros(3)}, ShapeMismatchError, one),
        ({"wrist": np.stack([np.eye(3)] * 2)}, ShapeMismatchError, many),
        ({"wrist": bad_rot}, InvalidGoalError, one),
        ({"elbow_target": (0.0, 0.1)}, InvalidGoalError, one),
    ]
    for kw, error, goal in cases:
        with pytest.raises(error):
            solve_limb(limb, goal, **kw)
        with pytest.raises(LimberError):
            solve_limb(limb, goal, **kw)


@pytest.mark.parametrize(
    "kw",
    [
        {"psi": 0.3},
        {"psi_strategy": PsiStrategy.LOWEST_WRIST, "up": (0.0, 0.0, 1.0)},
        {"wrist_target": (0.0, 0.1, 0.0)},
    ],
    ids=["psi", "strategy-up", "wrist_target"],
)
def test_partial_arguments_rejected_for_aim_goals(kw: dict) -> None:
    with pytest.raises(InvalidGoalError):
        solve_limb(readme_arm(), AimGoal((0.0, 0.3, 0.2), (0.0, 1.0, 0.0)), **kw)


def test_limits_free_elbow_exact_aim_near_solvability_boundary() -> None:
    from tests.fixtures import human_arm as sample_arm

    limb = sample_arm(limits=True)
    target = np.array([0.07323190775017302, -0.0541480123870664, 0.46366180246748845])
    wrist = np.array(
        [
            [0.32111214981887753, 0.5633697329638548, -0.7612499794541434],
            [-0.04360097998440895, 0.8117614159138923, 0.5823593033324631],
            [0.9460369663935432, -0.15381140274279922, 0.2852299258549048],
        ]
    )
    goal = AimGoal(target, (0.0, 1.0, 0.0))
    sol = solve_limb(limb, goal, wrist=wrist)
    assert sol.within_limits is True
    assert fk_aim_error(limb, sol, goal) <= EXACT
