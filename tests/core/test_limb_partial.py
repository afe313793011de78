"""Tests of partial-orientation goals for the limb (Tolani, Goswami & Badler 2000, §3.3).

Everything is re-derived independently of ``core.limb.partial``: poses are checked with
``Limb.forward``; the wrist circle (Eq. 10) is w(ψ) = p − G(ψ)·R_Eᵀ·t_E with G(ψ) built
from the documented ψ convention (ψ = 0 puts the effector basis' second axis b along the
projection of the limb's swivel reference ⊥ ``direction``); Eq. 11/12 are checked against
dense sampling of ψ; joint limits by extracting both Euler families ourselves.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from core import (
    EULER_ORDERS,
    EulerLimits,
    InvalidGoalError,
    Limb,
    LimberError,
    LimbLimits,
    LimbSolution,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    PsiStrategy,
    ShapeMismatchError,
    feasible_swivel,
    matrix_to_euler_families,
    quat_to_matrix,
    solve_limb,
)
from tests.core.limb_test_helpers import (
    SETTINGS,
    SOLUTION_FIELDS,
    angle,
    circ_dist,
    no_warnings,
    pose_within,
    rand_rot,
    tf,
    unit,
)
from tests.core.limb_test_helpers import assert_finite as _assert_finite

PI = math.pi
TAU = 2.0 * PI
EXACT = 1e-10
N_PSI = 3600
PSI_GRID = np.linspace(-PI, PI, N_PSI, endpoint=False)
PSI_STEP = TAU / N_PSI


# ======================================================================================
# Independent helpers
# ======================================================================================


def assert_finite(sol: LimbSolution) -> None:
    _assert_finite(sol, (*SOLUTION_FIELDS, "psi"))


def fk_partial_errors(
    limb: Limb, sol: LimbSolution, goal: PartialOrientationGoal
) -> tuple[np.ndarray, np.ndarray]:
    """(position error m, axis error rad) of ``sol`` by our own forward kinematics."""
    f = limb.forward(sol.shoulder, sol.elbow, sol.wrist)
    pe = np.linalg.norm(f[..., :3, 3] - np.asarray(goal.position), axis=-1)
    ax = (f[..., :3, :3] @ np.asarray(goal.axis)[..., None])[..., 0]
    return pe, angle(ax, np.asarray(goal.direction))


def assert_truthful(
    limb: Limb, sol: LimbSolution, goal: PartialOrientationGoal
) -> tuple[np.ndarray, np.ndarray]:
    pe, ae = fk_partial_errors(limb, sol, goal)
    np.testing.assert_allclose(sol.position_error, pe, rtol=1e-9, atol=1e-13 * limb.length)
    np.testing.assert_allclose(sol.orientation_error, ae, rtol=1e-9, atol=1e-13)
    return pe, ae


def assert_exact(limb: Limb, sol: LimbSolution, goal: PartialOrientationGoal) -> None:
    assert_finite(sol)
    pe, ae = assert_truthful(limb, sol, goal)
    assert np.all(pe <= EXACT * limb.length), f"position error {np.max(pe)}"
    assert np.all(ae <= EXACT), f"axis error {np.max(ae)}"
    assert np.all(sol.reachable)


def effector_b(axis: np.ndarray) -> np.ndarray:
    """The documented second effector axis: the coordinate axis cyclically after the
    dominant component of ``axis``, made ⊥ ``axis``."""
    nxt = np.eye(3)[(int(np.argmax(np.abs(axis))) + 1) % 3]
    return unit(nxt - (nxt @ axis) * axis)


def goal_frame(limb: Limb, direction: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(û_g, v̂_g): the swivel reference projected ⊥ ``direction`` (Tolani §3.3)."""
    ref = np.asarray(limb.swivel_reference)
    u = unit(ref - (ref @ direction) * direction)
    return u, np.cross(direction, u)


def g_rotation(limb: Limb, axis: np.ndarray, direction: np.ndarray, psi: np.ndarray):
    """G(ψ): the rotation with R·axis = direction and R·b = cosψ û_g + sinψ v̂_g, (..., 3, 3)."""
    a = np.asarray(axis, dtype=float)
    b = effector_b(a)
    c = np.cross(a, b)
    u, v = goal_frame(limb, direction)
    p = np.asarray(psi, dtype=float)[..., None]
    rb = np.cos(p) * u + np.sin(p) * v
    rc = np.cross(direction, rb)
    g = np.stack(np.broadcast_arrays(direction, rb, rc), axis=-1)
    e = np.stack([a, b, c], axis=-1)
    return g @ e.T


def psi_of(limb: Limb, axis: np.ndarray, rot: np.ndarray) -> float:
    """ψ of an effector rotation ``rot`` whose ``axis`` is aligned (documented convention)."""
    d = rot @ axis
    u, v = goal_frame(limb, d)
    rb = rot @ effector_b(axis)
    return math.atan2(float(rb @ v), float(rb @ u))


def offset(limb: Limb) -> np.ndarray:
    """k = R_Eᵀ t_E: wrist centre → effector point, in the effector frame."""
    e = np.asarray(limb.effector)
    return e[:3, :3].T @ e[:3, 3]


def wrist_on_circle(limb: Limb, goal: PartialOrientationGoal, psi: np.ndarray) -> np.ndarray:
    """Eq. (10): the wrist centre for ψ, w(ψ) = p − G(ψ)·k."""
    g = g_rotation(limb, np.asarray(goal.axis), np.asarray(goal.direction), psi)
    return np.asarray(goal.position) - (g @ offset(limb)[:, None])[..., 0]


def wrist_reach(limb: Limb) -> tuple[float, float]:
    """Closed-form min and max |shoulder → wrist centre| over θ4:
    |tA + RA Rθ tB|² = |tA|² + |tB|² + 2 tA_lᵀ Rθ tB, a sinusoid in θ."""
    a, b = np.asarray(limb.a), np.asarray(limb.b)
    k = np.asarray(limb.elbow_axis)
    ta, tb = a[:3, 3], b[:3, 3]
    tal = a[:3, :3].T @ ta
    c0 = (k @ tal) * (k @ tb)
    r = math.hypot(float(tal @ tb - c0), float(tal @ np.cross(k, tb)))
    base = ta @ ta + tb @ tb + 2 * c0
    return math.sqrt(max(base - 2 * r, 0.0)), math.sqrt(base + 2 * r)


def keep_elbow_only(limb: Limb) -> Limb:
    """Same geometry, reference and elbow limits (hence the same θ4 root rule), no
    shoulder/wrist limits: the closed-form pose at any (φ, ψ)."""
    lim = limb.limits
    elbow = None if lim is None else lim.elbow
    return limb.with_limits(None if elbow is None else LimbLimits(elbow=elbow))


def broadcast(goal: PartialOrientationGoal, n: int) -> PartialOrientationGoal:
    return PartialOrientationGoal(
        np.broadcast_to(np.asarray(goal.position), (n, 3)).copy(),
        np.broadcast_to(np.asarray(goal.axis), (n, 3)).copy(),
        np.broadcast_to(np.asarray(goal.direction), (n, 3)).copy(),
    )


def grid_poses(limb: Limb, goal: PartialOrientationGoal, phis: np.ndarray, psis: np.ndarray):
    """One batched solve at every (φ, ψ) of the grid (flattened, φ major)."""
    ph, ps = np.meshgrid(phis, psis, indexing="ij")
    n = ph.size
    return solve_limb(limb, broadcast(goal, n), swivel=ph.ravel(), psi=ps.ravel())


# --------------------------------------------------------------------------------------
# Limbs and goals
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
    """Random A, B, a general hinge axis (not ⊥ the limb plane) and an effector whose
    offset is far from any coordinate axis (so the wrist circle has a real radius)."""
    while True:
        a = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.15, 0.5))
        b = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.15, 0.5))
        e = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.04, 0.15))
        k = unit(rng.normal(size=3))
        r, perp = hinge_quality(a, b, k)
        if r > 0.3 and perp < 0.97:
            return Limb(a, b, elbow_axis=k, effector=e, limits=limits)


def arm(limits: LimbLimits | None = None) -> Limb:
    """Human-like arm along +Y; the hand (effector) is offset off its Y axis."""
    return Limb(
        tf(t=(0.0, 0.30, 0.0)),
        tf(t=(0.0, 0.25, 0.0)),
        elbow_axis=(1.0, 0.0, 0.0),
        effector=tf(t=(0.0, 0.08, 0.03)),
        limits=limits,
    )


def off_axis(rng: np.random.Generator, limb: Limb) -> np.ndarray:
    """A unit effector axis making at least 20° with the effector offset k."""
    k = unit(offset(limb))
    while True:
        a = unit(rng.normal(size=3))
        if abs(a @ k) < math.cos(math.radians(20)):
            return a


coord = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
quat = st.tuples(coord, coord, coord, coord).filter(lambda q: sum(x * x for x in q) > 0.05)
vec3 = st.tuples(coord, coord, coord).filter(lambda v: sum(x * x for x in v) > 0.05)
angles = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)


@st.composite
def limbs(draw: st.DrawFn) -> Limb:
    """General limbs; the effector offset is generally off the aligned axis and the
    hinge axis generally not perpendicular to the limb plane."""
    ra, rb, re = (quat_to_matrix(np.array(draw(quat))) for _ in range(3))
    ta = unit(np.array(draw(vec3))) * draw(st.floats(0.1, 0.5))
    tb = unit(np.array(draw(vec3))) * draw(st.floats(0.1, 0.5))
    te = unit(np.array(draw(vec3))) * draw(st.floats(0.02, 0.15))
    k = unit(np.array(draw(vec3)))
    a, b = tf(ra, ta), tf(rb, tb)
    r, perp = hinge_quality(a, b, k)
    assume(r > 0.2 and perp < 0.999)
    return Limb(a, b, elbow_axis=k, effector=tf(re, te))


@st.composite
def configs(draw: st.DrawFn) -> tuple[np.ndarray, float, np.ndarray]:
    r1 = quat_to_matrix(np.array(draw(quat)))
    r2 = quat_to_matrix(np.array(draw(quat)))
    return r1, draw(st.floats(-PI, PI)), r2


def goal_from(limb: Limb, cfg: tuple[np.ndarray, float, np.ndarray], axis: np.ndarray):
    f = limb.forward(*cfg)
    return PartialOrientationGoal(f[:3, 3], axis, f[:3, :3] @ axis), f


# ======================================================================================
# Round trips
# ======================================================================================


@SETTINGS
@given(limb=limbs(), cfg=configs(), axis=vec3, phi=angles)
def test_round_trip_generating_psi(
    limb: Limb, cfg: tuple[np.ndarray, float, np.ndarray], axis: tuple, phi: float
) -> None:
    """ψ of the generating configuration: exact for any φ; the effector rotation is G(ψ)
    of the documented convention, and ``psi`` reports it."""
    ax = unit(np.array(axis))
    k = offset(limb)
    assume(np.linalg.norm(k - (k @ ax) * ax) >= 0.01)  # the wrist moves with ψ
    goal, f = goal_from(limb, cfg, ax)
    psi = psi_of(limb, ax, f[:3, :3])
    with no_warnings():
        sol = solve_limb(limb, goal, psi=psi, swivel=phi)
    assert_exact(limb, sol, goal)
    assert circ_dist(sol.psi, psi) <= 1e-12
    assert -PI <= sol.psi < PI
    assert circ_dist(sol.swivel, phi) <= 1e-12
    rot = limb.forward(sol.shoulder, sol.elbow, sol.wrist)[:3, :3]
    np.testing.assert_allclose(rot, g_rotation(limb, ax, goal.direction, psi), atol=1e-10)


@SETTINGS
@given(limb=limbs(), cfg=configs(), axis=vec3, psi=angles, phi=angles)
def test_round_trip_any_psi(
    limb: Limb, cfg: tuple[np.ndarray, float, np.ndarray], axis: tuple, psi: float, phi: float
) -> None:
    """Any ψ whose wrist (Eq. 10) is within reach and any φ: FK meets the partial goal."""
    ax = unit(np.array(axis))
    k = offset(limb)
    assume(np.linalg.norm(k - (k @ ax) * ax) >= 0.01)  # the wrist moves with ψ
    goal, _ = goal_from(limb, cfg, ax)
    lo, hi = wrist_reach(limb)
    d = float(np.linalg.norm(wrist_on_circle(limb, goal, np.array(psi))))
    assume(lo + 1e-9 * limb.length <= d <= hi - 1e-9 * limb.length)
    with no_warnings():
        sol = solve_limb(limb, goal, psi=psi, swivel=phi)
    assert_exact(limb, sol, goal)
    assert circ_dist(sol.psi, psi) <= 1e-12
    np.testing.assert_allclose(
        limb.wrist_position(sol.shoulder, sol.elbow),
        wrist_on_circle(limb, goal, np.array(psi)),
        atol=1e-10 * limb.length,
    )


@SETTINGS
@given(limb=limbs(), cfg=configs(), axis=vec3, target=vec3, up=vec3, phi=angles)
def test_round_trip_free_psi_reaches(
    limb: Limb,
    cfg: tuple[np.ndarray, float, np.ndarray],
    axis: tuple,
    target: tuple,
    up: tuple,
    phi: float,
) -> None:
    """ψ free (``psi=None`` or a strategy) on a reachable goal: some ψ reaches it (the
    generating one), so the solution is exact for any φ, whatever ψ is preferred."""
    ax = unit(np.array(axis))
    goal, _ = goal_from(limb, cfg, ax)
    for kw in (
        {"swivel": phi},
        {"psi_strategy": PsiStrategy.CLOSEST_WRIST, "wrist_target": target, "swivel": phi},
        {"psi_strategy": PsiStrategy.LOWEST_WRIST, "up": up},
        {"psi_strategy": PsiStrategy.HIGHEST_WRIST, "up": up, "swivel": phi},
    ):
        with no_warnings():
            sol = solve_limb(limb, goal, **kw)
        assert_exact(limb, sol, goal)


def test_round_trip_batched_psi_and_swivel_sweeps() -> None:
    """Every (φ, ψ) of a 36 × 36 grid with the wrist in reach is exact (batched solve)."""
    rng = np.random.default_rng(4)
    for _ in range(6):
        limb = random_limb(rng)
        ax = off_axis(rng, limb)
        goal, _ = goal_from(limb, (rand_rot(rng), rng.uniform(-PI, PI), rand_rot(rng)), ax)
        phis = np.linspace(-PI, PI, 36, endpoint=False)
        psis = np.linspace(-PI, PI, 36, endpoint=False) + 0.01
        with no_warnings():
            sol = grid_poses(limb, goal, phis, psis)
        _, ps = np.meshgrid(phis, psis, indexing="ij")
        lo, hi = wrist_reach(limb)
        dist = np.linalg.norm(wrist_on_circle(limb, goal, ps.ravel()), axis=-1)
        ok = (dist > lo + 1e-9 * limb.length) & (dist < hi - 1e-9 * limb.length)
        assert ok.sum() >= 36  # not vacuous
        assert_finite(sol)
        pe, ae = assert_truthful(limb, sol, broadcast(goal, len(ps.ravel())))
        assert np.all(pe[ok] <= EXACT * limb.length) and np.all(ae[ok] <= EXACT)
        assert np.all(np.asarray(sol.reachable)[ok])
        assert np.all(circ_dist(sol.psi, ps.ravel()) <= 1e-12)


def test_direction_parallel_to_swivel_reference() -> None:
    """``direction`` ∥ the projection axis that builds û_g (the limb's swivel reference):
    defined, no NaN, no warnings; a ψ sweep reaches the goal exactly wherever its wrist
    circle is in reach (counted convention-free: the circle's points within reach)."""
    rng = np.random.default_rng(8)
    for limb in (arm(), random_limb(rng), random_limb(rng)):
        ref = np.asarray(limb.swivel_reference)
        lo, hi = wrist_reach(limb)
        for sign in (1.0, -1.0):
            for tilt in (0.0, 1e-13, 1e-10):
                d = unit(sign * ref + tilt * unit(np.cross(ref, (0.3, 0.5, 0.7))))
                f = limb.forward(rand_rot(rng), rng.uniform(-PI, PI), rand_rot(rng))
                ax = f[:3, :3].T @ d  # the effector axis that this pose aligns with d
                goal = PartialOrientationGoal(f[:3, 3], ax, d)
                psis = np.linspace(-PI, PI, 720, endpoint=False)
                with no_warnings():
                    sweep = solve_limb(limb, broadcast(goal, len(psis)), psi=psis, swivel=0.7)
                    single = solve_limb(limb, goal, psi=0.3)
                assert_finite(sweep)
                assert_finite(single)
                pe, ae = assert_truthful(limb, sweep, broadcast(goal, len(psis)))
                assert_truthful(limb, single, goal)
                exact = (pe <= EXACT * limb.length) & (ae <= EXACT)
                # The circle's points in reach, with our own parametrisation of it.
                k = offset(limb)
                kp = k - (ax @ k) * ax
                e1 = unit(np.cross(d, (0.3, -0.2, 0.9)))
                e2 = np.cross(d, e1)
                r = np.linalg.norm(kp)
                pts = (f[:3, 3] - (ax @ k) * d) + r * (
                    np.cos(psis)[:, None] * e1 + np.sin(psis)[:, None] * e2
                )
                dist = np.linalg.norm(pts, axis=-1)
                inside = int(np.sum((dist > lo + 1e-9) & (dist < hi - 1e-9)))
                assert exact.sum() >= 1
                assert abs(int(exact.sum()) - inside) <= 4, (int(exact.sum()), inside)


# ======================================================================================
# Eq. 11 and Eq. 12: ψ choices against dense sampling
# ======================================================================================


def circle_offsets(limb: Limb, goal: PartialOrientationGoal, psi: np.ndarray) -> np.ndarray:
    """w(ψ) − centre = −G(ψ)·(k − (a·k)a): the wrist on its circle relative to the centre,
    without cancellation."""
    a = np.asarray(goal.axis)
    k = offset(limb)
    kp = k - (a @ k) * a
    g = g_rotation(limb, a, np.asarray(goal.direction), psi)
    return -(g @ kp[:, None])[..., 0]


def circle_centre(limb: Limb, goal: PartialOrientationGoal) -> np.ndarray:
    a = np.asarray(goal.axis)
    return np.asarray(goal.position) - (a @ offset(limb)) * np.asarray(goal.direction)


def reachable_grid(limb: Limb, goal: PartialOrientationGoal) -> np.ndarray:
    """Which ψ of PSI_GRID put the wrist (Eq. 10) strictly within reach (our own test)."""
    lo, hi = wrist_reach(limb)
    dist = np.linalg.norm(wrist_on_circle(limb, goal, PSI_GRID), axis=-1)
    return (dist > lo + 1e-9 * limb.length) & (dist < hi - 1e-9 * limb.length)


def shell_distance(limb: Limb, goal: PartialOrientationGoal, psi: np.ndarray) -> np.ndarray:
    """How far the wrist at ψ is outside the reachable shell (m; 0 inside)."""
    lo, hi = wrist_reach(limb)
    dist = np.linalg.norm(wrist_on_circle(limb, goal, psi), axis=-1)
    return np.maximum(np.maximum(dist - hi, lo - dist), 0.0)


def check_choice(
    limb: Limb,
    goal: PartialOrientationGoal,
    sol: LimbSolution,
    crit_of: object,
) -> None:
    """The solver's ψ minimises the criterion over the ψ whose wrist is in reach (sampled
    on PSI_GRID) within the sampling step: by value always, and by argument when the
    minimum is well separated. If no ψ reaches, ψ puts the wrist nearest the reachable
    shell (Table 3's best compromise) and the goal is reported unreachable."""
    assert_finite(sol)
    ok = reachable_grid(limb, goal)
    if not ok.any():
        assert sol.reachable is False
        gap = float(shell_distance(limb, goal, np.array(sol.psi)))
        assert gap <= float(np.min(shell_distance(limb, goal, PSI_GRID))) + 1e-12
        return
    criterion = crit_of(PSI_GRID)  # type: ignore[operator]
    f_sol = float(crit_of(np.array([sol.psi]))[0])  # type: ignore[operator]
    amp = float(np.max(criterion) - np.min(criterion))
    # A sinusoid's value within half a step of its minimum: ≤ amp/2·(1 − cos(step/2)).
    slack = 0.5 * amp * (1 - math.cos(PSI_STEP / 2)) + 1e-15 * (1 + np.max(np.abs(criterion)))
    best_f = float(np.min(criterion[ok]))
    assert f_sol <= best_f + slack, (f_sol, best_f, amp)
    if amp > 1e-12:
        best = PSI_GRID[ok][int(np.argmin(criterion[ok]))]
        assert circ_dist(sol.psi, best) <= PSI_STEP, (sol.psi, best)


def strategy_cases() -> list[tuple[int, Limb, PartialOrientationGoal]]:
    rng = np.random.default_rng(11)
    out = []
    for i in range(10):
        limb = arm() if i == 0 else random_limb(rng)
        ax = off_axis(rng, limb) if i else np.array([0.0, 1.0, 0.0])
        goal, _ = goal_from(limb, (rand_rot(rng), rng.uniform(-PI, PI), rand_rot(rng)), ax)
        out.append((i, limb, goal))
    return out


@pytest.mark.parametrize("strategy", [PsiStrategy.LOWEST_WRIST, PsiStrategy.HIGHEST_WRIST])
def test_eq11_lowest_highest_wrist_match_dense_sampling(strategy: PsiStrategy) -> None:
    rng = np.random.default_rng(12)
    sign = 1.0 if strategy is PsiStrategy.LOWEST_WRIST else -1.0
    for _, limb, goal in strategy_cases():
        d = np.asarray(goal.direction)
        perp = unit(np.cross(d, rng.normal(size=3)))
        ups = [unit(rng.normal(size=3)), np.array([0.0, 0.0, 1.0])]
        ups += [unit(d + eps * perp) for eps in (1e-3, 1e-6)]  # nearly along the circle axis
        ups += [3.7 * unit(rng.normal(size=3))]  # not unit: only its direction counts
        for up in ups:
            upn = unit(up)

            def height(
                psi: np.ndarray, upn: np.ndarray = upn, limb: Limb = limb, goal=goal
            ) -> np.ndarray:
                return sign * (circle_offsets(limb, goal, psi) @ upn)

            with no_warnings():
                sol = solve_limb(limb, goal, psi_strategy=strategy, up=up, swivel=0.3)
            check_choice(limb, goal, sol, height)
            pe, ae = assert_truthful(limb, sol, goal)
            lo, hi = wrist_reach(limb)
            dist = float(np.linalg.norm(wrist_on_circle(limb, goal, np.array(sol.psi))))
            if lo + 1e-9 < dist < hi - 1e-9:  # the pose really puts the wrist there
                assert_exact(limb, sol, goal)
                w = limb.wrist_position(sol.shoulder, sol.elbow)
                h_fk = sign * ((w - circle_centre(limb, goal)) @ upn)
                ok = reachable_grid(limb, goal)
                assert h_fk <= float(np.min(height(PSI_GRID)[ok])) + 1e-9 * limb.length


def test_eq12_closest_wrist_matches_dense_sampling() -> None:
    rng = np.random.default_rng(13)
    n_checked = 0
    for i, limb, goal in strategy_cases():
        c = circle_centre(limb, goal)
        d = np.asarray(goal.direction)
        perp = unit(np.cross(d, rng.normal(size=3)))
        targets = [c + rng.normal(size=3) * 0.3, limb.forward(np.eye(3), 0.5, np.eye(3))[:3, 3]]
        # Near the circle's axis: tiny radial components, any axial one.
        targets += [c + 0.2 * d + eps * limb.length * perp for eps in (1e-3, 1e-6, 1e-9)]
        targets += [c - 0.4 * d + 1e-7 * perp]
        for wt in targets:
            q = c - wt

            def dist2(psi: np.ndarray, q: np.ndarray = q, limb: Limb = limb, goal=goal):
                # |w − w_d|² − |q|² − radius² = 2 q·(w − c), free of cancellation.
                return 2.0 * (circle_offsets(limb, goal, psi) @ q)

            with no_warnings():
                sol = solve_limb(
                    limb, goal, psi_strategy=PsiStrategy.CLOSEST_WRIST, wrist_target=wt
                )
            check_choice(limb, goal, sol, dist2)
            assert_truthful(limb, sol, goal)
            n_checked += 1
        del i
    assert n_checked == 60


@pytest.mark.parametrize(
    ("strategy", "kw"),
    [
        (PsiStrategy.CLOSEST_WRIST, "on-axis"),
        (PsiStrategy.LOWEST_WRIST, "up-along-axis"),
        (PsiStrategy.HIGHEST_WRIST, "no-offset"),
        (PsiStrategy.CLOSEST_WRIST, "offset-along-axis"),
    ],
)
def test_flat_criteria_keep_given_psi(strategy: PsiStrategy, kw: str) -> None:
    """Where the criterion does not depend on ψ (wrist target on the circle's axis, ``up``
    along it, no effector offset or an offset along the aligned axis) the given ψ
    (default 0) is kept; no NaN, no warnings."""
    rng = np.random.default_rng(14)
    limb = arm()
    ax = np.array([0.0, 1.0, 0.0])
    if kw == "no-offset":
        limb = Limb(limb.a, limb.b, elbow_axis=limb.elbow_axis).with_limits(None)
    if kw == "offset-along-axis":
        limb = Limb(limb.a, limb.b, elbow_axis=limb.elbow_axis, effector=tf(t=(0.0, 0.08, 0.0)))
    goal, _ = goal_from(limb, (rand_rot(rng), 1.0, rand_rot(rng)), ax)
    c = circle_centre(limb, goal)
    d = np.asarray(goal.direction)
    extra = {
        "on-axis": {"wrist_target": c + 0.3 * d},
        "up-along-axis": {"up": -2.0 * d},
        "no-offset": {"up": (0.0, 0.0, 1.0)},
        "offset-along-axis": {"wrist_target": (0.1, 0.2, 0.3)},
    }[kw]
    for psi in (None, 0.8):
        with no_warnings():
            sol = solve_limb(limb, goal, psi_strategy=strategy, psi=psi, **extra)
        assert_finite(sol)
        assert circ_dist(sol.psi, 0.0 if psi is None else psi) <= 1e-12
        assert_truthful(limb, sol, goal)


def test_strategies_batched_match_singles() -> None:
    """Batched goals, wrist targets and ψ agree with single solves to 1e-12."""
    rng = np.random.default_rng(15)
    limb = random_limb(rng)
    n = 12
    cfg = (rand_rot(rng, n), rng.uniform(-PI, PI, n), rand_rot(rng, n))
    f = limb.forward(*cfg)
    ax = unit(rng.normal(size=(n, 3)))
    goal = PartialOrientationGoal(f[:, :3, 3], ax, (f[:, :3, :3] @ ax[..., None])[..., 0])
    wt = rng.normal(size=(n, 3)) * 0.3
    calls = [
        {"psi": rng.uniform(-4, 4, n), "swivel": rng.uniform(-4, 4, n)},
        {"psi": 0.4},
        {"swivel": rng.uniform(-4, 4, n)},
        {"psi_strategy": PsiStrategy.CLOSEST_WRIST, "wrist_target": wt},
        {"psi_strategy": PsiStrategy.CLOSEST_WRIST, "wrist_target": wt[0]},
        {"psi_strategy": PsiStrategy.LOWEST_WRIST, "up": (0.0, 0.0, 1.0), "swivel": 1.0},
        {"psi_strategy": PsiStrategy.HIGHEST_WRIST, "up": (0.3, 0.0, 1.0)},
    ]
    lo, hi = wrist_reach(limb)
    for kw in calls:
        with no_warnings():
            batch = solve_limb(limb, goal, **kw)
        for i in range(n):
            kw_i = {
                k: (v[i] if isinstance(v, np.ndarray) and v.shape[:1] == (n,) else v)
                for k, v in kw.items()
            }
            gi = PartialOrientationGoal(goal.position[i], goal.axis[i], goal.direction[i])
            single = solve_limb(limb, gi, **kw_i)
            # A strategy's ψ moved to the edge of the reachable set gives a nearly
            # stretched / folded limb, where rounding of ψ is amplified ~1/√margin.
            dist = float(np.linalg.norm(wrist_on_circle(limb, gi, np.array(single.psi))))
            edge = min(dist - lo, hi - dist) <= 1e-6 * limb.length
            assert_same(batch[i], single, 1e-9 if edge else 1e-12)


def assert_same(b: LimbSolution, s: LimbSolution, tol: float) -> None:
    np.testing.assert_allclose(b.shoulder, s.shoulder, rtol=0, atol=tol)
    np.testing.assert_allclose(b.wrist, s.wrist, rtol=0, atol=tol)
    assert abs(b.elbow - s.elbow) <= tol
    assert circ_dist(b.swivel, s.swivel) <= tol
    assert circ_dist(b.psi, s.psi) <= tol
    assert abs(b.position_error - s.position_error) <= tol
    assert abs(b.orientation_error - s.orientation_error) <= tol
    assert b.reachable == s.reachable and b.within_limits == s.within_limits
    assert len(b.feasible_swivel) == len(s.feasible_swivel)
    for (bl, bh), (sl, sh) in zip(b.feasible_swivel, s.feasible_swivel, strict=True):
        assert abs(bl - sl) <= tol and abs(bh - sh) <= tol


# ======================================================================================
# Joint limits (§3.3 "Joint limits")
# ======================================================================================


def centred_limits(
    rng: np.random.Generator, r1: np.ndarray, theta: float, r2: np.ndarray
) -> LimbLimits:
    """Random limits around a configuration (so it satisfies them)."""

    def euler(r: np.ndarray) -> EulerLimits | None:
        if rng.uniform() < 0.15:
            return None
        order = str(rng.choice(EULER_ORDERS))
        fam = matrix_to_euler_families(r, order)[int(rng.integers(2))]
        lo: list[float | None] = []
        hi: list[float | None] = []
        for i in range(3):
            if rng.uniform() < 0.2:
                lo.append(None)
                hi.append(None)
                continue
            w = rng.uniform(0.05, 0.9, size=2)
            lo.append(float(fam[i] - w[0]))
            hi.append(float(fam[i] + w[1]))
        return EulerLimits(order, lo, hi)

    elbow = None
    if rng.uniform() < 0.7:
        w = rng.uniform(0.05, 1.0, size=2)
        elbow = (theta - w[0], theta + w[1])
    return LimbLimits(shoulder=euler(r1), elbow=elbow, wrist=euler(r2))


def limits_case(seed: int) -> tuple[Limb, PartialOrientationGoal, float]:
    rng = np.random.default_rng(500 + seed)
    base = arm() if seed % 6 == 0 else random_limb(rng)
    r1, r2, theta = rand_rot(rng), rand_rot(rng), float(rng.uniform(-PI, PI))
    limb = base.with_limits(centred_limits(rng, r1, theta, r2))
    ax = off_axis(rng, limb)
    goal, _ = goal_from(limb, (r1, theta, r2), ax)
    return limb, goal, float(rng.uniform(-PI, PI))


N_GRID = 180
GRID = np.linspace(-PI, PI, N_GRID, endpoint=False)


@functools.cache
def dense_feasible_case(seed: int) -> np.ndarray:
    limb, goal, _ = limits_case(seed)
    return dense_feasible(limb, goal)[0]


def dense_feasible(limb: Limb, goal: PartialOrientationGoal) -> tuple[np.ndarray, LimbSolution]:
    """Limit-satisfying, exact poses on a dense (φ, ψ) grid (2° steps), checked by us."""
    poses = grid_poses(keep_elbow_only(limb), goal, GRID, GRID)
    pe, ae = fk_partial_errors(limb, poses, broadcast(goal, N_GRID * N_GRID))
    exact = (pe <= EXACT * limb.length) & (ae <= EXACT)
    return exact & pose_within(limb, poses), poses


LIMIT_SEEDS = list(range(24))


def prefer(limb: Limb, goal: PartialOrientationGoal, psi: float) -> dict[str, object]:
    """Free-ψ keywords whose preferred ψ is ``psi``: CLOSEST_WRIST with the wrist target
    on the wrist circle at ``psi`` (Eq. 12's minimum is then ``psi`` itself)."""
    return {
        "psi_strategy": PsiStrategy.CLOSEST_WRIST,
        "wrist_target": wrist_on_circle(limb, goal, np.array(psi)),
    }


def dense_phi_feasible(limb: Limb, goal: PartialOrientationGoal, psi: float) -> np.ndarray:
    """Limit-satisfying, exact poses of G(ψ) at 720 φ (0.5° steps), checked by us."""
    phis = np.linspace(-PI, PI, 720, endpoint=False)
    poses = grid_poses(keep_elbow_only(limb), goal, phis, np.array([psi]))
    pe, ae = fk_partial_errors(limb, poses, broadcast(goal, len(phis)))
    return (pe <= EXACT * limb.length) & (ae <= EXACT) & pose_within(limb, poses)


@pytest.mark.parametrize("mode", ["free", "prefer_psi_d", "given_psi_d"])
@pytest.mark.parametrize("seed", LIMIT_SEEDS)
def test_limits_satisfied_whenever_dense_grid_has_a_solution(seed: int, mode: str) -> None:
    """ψ free (``psi=None``, or a strategy preferring ψ_d): whenever the dense (φ, ψ) grid
    has an exact, limit-satisfying pose, so does the solution. ψ given: the same over the
    φ of G(ψ_d) — the given ψ is honoured, like a given swivel."""
    limb, goal, psi_d = limits_case(seed)
    if mode == "given_psi_d":
        ok = dense_phi_feasible(limb, goal, psi_d)
        kw: dict[str, object] = {"psi": psi_d, "swivel": -psi_d}
    else:
        ok = dense_feasible_case(seed)
        kw = {} if mode == "free" else prefer(limb, goal, psi_d)
    with no_warnings():
        sol = solve_limb(limb, goal, **kw)
    assert_finite(sol)
    pe, ae = assert_truthful(limb, sol, goal)
    assert sol.within_limits == bool(pose_within(limb, sol, tol=1e-8))
    if mode == "given_psi_d":
        assert circ_dist(sol.psi, psi_d) <= 1e-12
    if ok.any():
        assert sol.within_limits, f"grid has {int(ok.sum())} feasible poses; solution violates"
        assert pe <= EXACT * limb.length and ae <= EXACT, (pe, ae)
        assert sol.reachable is True


def test_limit_cases_are_not_vacuous() -> None:
    """Some cases need the (φ, ψ) optimisation: G(ψ_d) has no feasible φ yet the grid has
    feasible points elsewhere; some given-ψ cases have feasible φ, some do not."""
    need_opt = given_ok = given_none = 0
    for seed in LIMIT_SEEDS:
        limb, goal, psi_d = limits_case(seed)
        ok = dense_feasible_case(seed)
        if ok.any() and not feasible_swivel(limb, goal, psi=psi_d):
            need_opt += 1
        if dense_phi_feasible(limb, goal, psi_d).any():
            given_ok += 1
        elif ok.any():
            given_none += 1
    assert need_opt >= 5 and given_ok >= 5 and given_none >= 5, (need_opt, given_ok, given_none)


def _arm_goal(limits: LimbLimits, theta: float) -> tuple[Limb, PartialOrientationGoal]:
    limb = arm(limits)
    goal, _ = goal_from(limb, (np.eye(3), theta, np.eye(3)), np.array([0.0, 1.0, 0.0]))
    return limb, goal


def test_limits_optimisation_keeps_elbow_root() -> None:
    """P2: elbow limits admitting only negative θ4; the preferred ψ = 1 has no feasible φ,
    so the (φ, ψ) optimisation runs; its poses must take the Eq. (5) root inside the elbow
    limits (once the + root, θ4 ≈ +1.16, outside (−1.5, −0.9))."""
    box = EulerLimits("XYZ", (-0.3, -0.3, -0.3), (0.3, 0.3, 0.3))
    limb, goal = _arm_goal(LimbLimits(shoulder=box, elbow=(-1.5, -0.9), wrist=box), -1.2)
    assert feasible_swivel(limb, goal, psi=0.0)
    assert not feasible_swivel(limb, goal, psi=1.0)
    with no_warnings():
        sol = solve_limb(limb, goal, **prefer(limb, goal, 1.0))
    assert sol.within_limits is True and bool(pose_within(limb, sol)), sol.elbow
    assert_exact(limb, sol, goal)


def test_limits_clamped_elbow_is_not_a_solution() -> None:
    """P3: elbow limits only, (−1.3, −1.1); the goal is reached within limits at ψ = 0
    (θ4 = −1.2), while at ψ = 2 θ4 would be clamped to −1.1 (feasible_swivel(psi=2) still
    reports the full circle). ψ free, preferring 2: a reachable ψ is taken. ψ = 2 given:
    honoured, reported unreachable."""
    limb, goal = _arm_goal(LimbLimits(elbow=(-1.3, -1.1)), -1.2)
    sol0 = solve_limb(limb, goal, psi=0.0)
    assert sol0.reachable and sol0.within_limits
    with no_warnings():
        sol = solve_limb(limb, goal, **prefer(limb, goal, 2.0))
    assert_exact(limb, sol, goal)
    assert sol.within_limits is True
    given = solve_limb(limb, goal, psi=2.0)
    assert given.reachable is False and circ_dist(given.psi, 2.0) <= 1e-12
    assert_truthful(limb, given, goal)
    assert given.position_error > 1e-3


def test_limits_optimisation_stays_in_reach() -> None:
    """P4: the (φ, ψ) optimisation keeps ψ where the wrist is in reach (position exact)
    for every limit case whose preferred ψ needs it."""
    ran = 0
    for seed in LIMIT_SEEDS:
        limb, goal, psi_d = limits_case(seed)
        if feasible_swivel(limb, goal, psi=psi_d):
            continue
        with no_warnings():
            sol = solve_limb(limb, goal, **prefer(limb, goal, psi_d))
        assert_finite(sol)
        pe, ae = assert_truthful(limb, sol, goal)
        if dense_feasible_case(seed).any():
            assert pe <= EXACT * limb.length and ae <= EXACT, (seed, pe, ae)
            ran += 1
    assert ran >= 5


def test_limits_gradient_matches_finite_differences() -> None:
    """§3.3's analytic gradient of F(φ, ψ) (plus the violation penalty) agrees with central
    differences of the closed-form cost wherever the wrist is within reach."""
    from core.limb.partial import (
        limits_cost,
        limits_cost_grad,
        partial_rotation,
        pose_and_derivatives,
    )

    rng = np.random.default_rng(40)
    h = 1e-6
    checked = 0
    for seed in range(0, 24, 2):
        limb, goal, _ = limits_case(seed)
        lim = limb.limits
        assert lim is not None
        near = None if lim.elbow is None else 0.5 * (lim.elbow[0] + lim.elbow[1])
        ref = np.asarray(limb.swivel_reference)
        x = rng.uniform(-PI, PI, size=(30, 2))
        sol, dr1, dth, dr2, ok = pose_and_derivatives(limb, goal, ref, x, near)
        f, g = limits_cost_grad(lim, sol, dr1, dth, dr2)
        np.testing.assert_allclose(
            f, limits_cost(lim, sol.shoulder, np.asarray(sol.elbow), sol.wrist), atol=1e-12
        )

        def cost(xx: np.ndarray, limb: Limb = limb, goal=goal, ref=ref, near=near, lim=lim):
            gb = broadcast(goal, len(xx))
            pg = PoseGoal(gb.position, partial_rotation(gb, xx[:, 1], ref))
            s = solve_limb(limb.with_limits(None), pg, swivel=xx[:, 0], elbow_near=near)
            return limits_cost(lim, s.shoulder, np.asarray(s.elbow), s.wrist)

        steps = np.array([[h, 0.0], [-h, 0.0], [0.0, h], [0.0, -h]])
        fd = cost((x[:, None, :] + steps).reshape(-1, 2)).reshape(-1, 4)
        num = np.stack([fd[:, 0] - fd[:, 1], fd[:, 2] - fd[:, 3]], axis=-1) / (2 * h)
        err = np.max(np.abs(num - g), axis=-1) / (1.0 + np.max(np.abs(num), axis=-1))
        assert np.all(err[ok] <= 1e-5), (seed, np.max(err[ok]))
        checked += int(ok.sum())
    assert checked >= 150, checked


def test_limited_path_emits_no_warnings() -> None:
    """Unlimited Euler angles beside limited ones: the (φ, ψ) optimisation's range middles
    must not compute −inf + inf (once a RuntimeWarning)."""
    box = EulerLimits("XYZ", (-0.3, None, -0.3), (0.3, None, 0.3))
    limb, goal = _arm_goal(LimbLimits(shoulder=box, wrist=box), -1.2)
    for psi in np.linspace(-PI, PI, 12, endpoint=False):
        if feasible_swivel(limb, goal, psi=psi):
            continue  # the optimisation runs only where G(ψ) has no feasible φ
        with no_warnings():
            sol = solve_limb(limb, goal, **prefer(limb, goal, float(psi)))
        assert sol.within_limits
        break
    else:
        pytest.skip("no ψ without a feasible φ for this limb")


def test_limits_feasible_swivel_with_psi_matches_solution() -> None:
    """feasible_swivel(goal, psi=ψ) = the solution's intervals when ψ is given (the pose
    goal G(ψ)), and the chosen φ lies in them when there are any."""
    checked = 0
    for seed in LIMIT_SEEDS[:12]:
        limb, goal, psi_d = limits_case(seed)
        for psi in (psi_d, 0.0):
            iv = feasible_swivel(limb, goal, psi=psi)
            if not iv:
                continue
            sol = solve_limb(limb, goal, psi=psi)
            assert len(sol.feasible_swivel) == len(iv)
            for (a, b), (c, d) in zip(sol.feasible_swivel, iv, strict=True):
                assert abs(a - c) <= 1e-12 and abs(b - d) <= 1e-12
            assert any((sol.swivel - a) % TAU <= b - a + 1e-12 for a, b in iv)
            assert circ_dist(sol.psi, psi) <= 1e-12
            checked += 1
    assert checked >= 6


def test_limits_batched_match_singles() -> None:
    """Batched and single solves agree on limited limbs, ψ given (1e-12 where G(ψ) has a
    feasible φ, else 1e-9: the pose solver's compromise) and ψ free (1e-9 where the
    optimisation runs)."""
    for seed in (4, 7, 10):
        limb, goal, psi_d = limits_case(seed)
        psis = np.array([psi_d, 0.0, 1.0, -2.0, psi_d + 0.5])
        gb = broadcast(goal, len(psis))
        targets = wrist_on_circle(limb, goal, psis)
        strategy = PsiStrategy.CLOSEST_WRIST
        with no_warnings():
            batch = solve_limb(limb, gb, psi=psis)
            free = solve_limb(limb, gb, psi_strategy=strategy, wrist_target=targets)
        for i, psi in enumerate(psis):
            with no_warnings():
                single = solve_limb(limb, goal, psi=float(psi))
                single_free = solve_limb(limb, goal, psi_strategy=strategy, wrist_target=targets[i])
            analytic = bool(feasible_swivel(limb, goal, psi=float(psi)))
            assert_same(batch[i], single, 1e-12 if analytic else 1e-9)
            assert_same(free[i], single_free, 1e-12 if analytic else 1e-9)


# ======================================================================================
# Unreachable goals (Table 3)
# ======================================================================================


def baseline(limb: Limb, goal: PartialOrientationGoal, limited: bool) -> float:
    """Best score pe/length + axis error over a coarse (φ, ψ) grid of closed-form poses
    (36 × 12); with ``limited`` only limit-satisfying poses count (inf if none)."""
    psis = np.linspace(-PI, PI, 36, endpoint=False)
    phis = np.linspace(-PI, PI, 12, endpoint=False)
    poses = grid_poses(keep_elbow_only(limb), goal, phis, psis)
    pe, ae = fk_partial_errors(limb, poses, broadcast(goal, len(psis) * len(phis)))
    score = pe / limb.length + ae
    if limited:
        score = np.where(pose_within(limb, poses), score, np.inf)
    return float(np.min(score))


def far_goal(rng: np.random.Generator, limb: Limb, scale: float) -> PartialOrientationGoal:
    _, hi = wrist_reach(limb)
    p = unit(rng.normal(size=3)) * (hi + np.linalg.norm(offset(limb))) * scale
    return PartialOrientationGoal(p, off_axis(rng, limb), unit(rng.normal(size=3)))


@pytest.mark.parametrize("scale", [1.2, 3.0, 1e4])
def test_unreachable_far_no_nan_truthful(scale: float) -> None:
    rng = np.random.default_rng(20)
    for limb in (arm(), random_limb(rng), random_limb(rng)):
        goal = far_goal(rng, limb, scale)
        for kw in (
            {},
            {"psi": 2.0, "swivel": 1.0},
            {"psi_strategy": PsiStrategy.CLOSEST_WRIST, "wrist_target": (0.0, 0.1, 0.0)},
            {"psi_strategy": PsiStrategy.LOWEST_WRIST, "up": (0.0, 0.0, 1.0)},
        ):
            with no_warnings():
                sol = solve_limb(limb, goal, **kw)
            assert_finite(sol)
            assert sol.reachable is False
            assert_truthful(limb, sol, goal)


def test_unreachable_far_no_worse_than_coarse_grid() -> None:
    """ψ free and no ψ reaches (Table 3): ψ puts the wrist nearest the reachable shell, no
    worse than the best of a coarse (φ, ψ) grid."""
    rng = np.random.default_rng(21)
    worse = []
    for limb in (arm(), random_limb(rng), random_limb(rng), random_limb(rng)):
        for scale in (1.05, 1.5):
            goal = far_goal(rng, limb, scale)
            with no_warnings():
                sol = solve_limb(limb, goal)
            pe, ae = assert_truthful(limb, sol, goal)
            score = pe / limb.length + ae
            base = baseline(limb, goal, limited=False)
            if score > base + 1e-9:
                worse.append((score, base))
    assert not worse, worse


def test_unreachable_with_given_psi_no_worse_than_phi_grid() -> None:
    """With ψ given (ψ not free), the free parameter is φ: no worse than a φ grid at that ψ."""
    rng = np.random.default_rng(22)
    for limb in (arm(), random_limb(rng), random_limb(rng)):
        goal = far_goal(rng, limb, 1.3)
        for psi in (0.0, 2.0):
            with no_warnings():
                sol = solve_limb(limb, goal, psi=psi)
            pe, ae = assert_truthful(limb, sol, goal)
            grid = grid_poses(limb, goal, np.linspace(-PI, PI, 24, endpoint=False), np.array([psi]))
            gpe, gae = fk_partial_errors(limb, grid, broadcast(goal, 24))
            assert pe / limb.length + ae <= float(np.min(gpe / limb.length + gae)) + 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_unreachable_with_limits_no_nan_truthful(seed: int) -> None:
    """ψ given and ψ free: no NaN, unreachable, truthful; ψ free is no worse than the best
    limit-satisfying pose of a coarse (φ, ψ) grid, and within limits when that grid has one."""
    limb, goal0, _ = limits_case(seed)
    rng = np.random.default_rng(seed)
    goal = PartialOrientationGoal(
        np.asarray(goal0.position) * 5.0 + 0.5 * limb.length * unit(rng.normal(size=3)),
        goal0.axis,
        goal0.direction,
    )
    for kw in ({"psi": 0.5}, {}):
        with no_warnings():
            sol = solve_limb(limb, goal, **kw)
        assert_finite(sol)
        assert sol.reachable is False
        pe, ae = assert_truthful(limb, sol, goal)
        assert sol.within_limits == bool(pose_within(limb, sol, tol=1e-8))
    base = baseline(limb, goal, limited=True)
    if math.isfinite(base):
        assert sol.within_limits
        assert pe / limb.length + ae <= base + 1e-9, (pe / limb.length + ae, base)


# ======================================================================================
# Bad input
# ======================================================================================


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: PartialOrientationGoal((0, 0, 0.3), (0, 0, 0), (0, 0, 1)), InvalidGoalError),
        (lambda: PartialOrientationGoal((0, 0, 0.3), (0, 1, 0), (0, 0, 0)), InvalidGoalError),
        (lambda: PartialOrientationGoal((0, 0, 0.3), (0, 1.1, 0), (0, 0, 1)), InvalidGoalError),
        (lambda: PartialOrientationGoal((0, 0, 0.3), (0, 1, 0), (0, 0, 0.5)), InvalidGoalError),
        (lambda: PartialOrientationGoal((0, math.nan, 0), (0, 1, 0), (0, 0, 1)), InvalidGoalError),
        (lambda: PartialOrientationGoal((0, 0, 0), (0, math.inf, 0), (0, 0, 1)), InvalidGoalError),
        (lambda: PartialOrientationGoal((0, 0), (0, 1, 0), (0, 0, 1)), InvalidGoalError),
        (
            lambda: PartialOrientationGoal(np.zeros((3, 3)), np.tile((0, 1, 0), (4, 1)), (0, 0, 1)),
            ShapeMismatchError,
        ),
    ],
)
def test_invalid_partial_goal_raises(make: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        make()  # type: ignore[operator]


def test_invalid_solve_arguments_raise() -> None:
    limb = arm()
    one = PartialOrientationGoal((0.0, 0.3, 0.2), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    many = broadcast(one, 3)
    pose = PoseGoal((0.0, 0.3, 0.2), np.eye(3))
    pos = PositionGoal((0.0, 0.3, 0.2))
    cases: list[tuple[dict, type[Exception], PartialOrientationGoal | PoseGoal | PositionGoal]] = [
        ({"psi": math.nan}, InvalidGoalError, one),
        ({"psi": math.inf}, InvalidGoalError, one),
        ({"psi": np.zeros((2, 2))}, InvalidGoalError, one),
        ({"psi": np.zeros(4)}, ShapeMismatchError, many),
        ({"swivel": np.zeros(4)}, ShapeMismatchError, many),
        ({"psi": np.zeros(3), "swivel": np.zeros(2)}, ShapeMismatchError, one),
        ({"psi_strategy": PsiStrategy.CLOSEST_WRIST}, InvalidGoalError, one),
        ({"psi_strategy": PsiStrategy.LOWEST_WRIST}, InvalidGoalError, one),
        ({"psi_strategy": PsiStrategy.HIGHEST_WRIST}, InvalidGoalError, one),
        ({"psi_strategy": PsiStrategy.LOWEST_WRIST, "up": (0, 0, 0)}, InvalidGoalError, one),
        ({"psi_strategy": PsiStrategy.LOWEST_WRIST, "up": (0, math.nan, 1)}, InvalidGoalError, one),
        ({"psi_strategy": PsiStrategy.LOWEST_WRIST, "up": (0, 1)}, InvalidGoalError, one),
        ({"psi_strategy": "closest"}, InvalidGoalError, one),
        ({"wrist": np.eye(3)}, InvalidGoalError, one),
        ({"elbow": 0.5}, InvalidGoalError, one),
        ({"psi": 0.3}, InvalidGoalError, pose),
        ({"psi": 0.3}, InvalidGoalError, pos),
        ({"up": (0, 0, 1)}, InvalidGoalError, pose),
        ({"wrist_target": (0, 0, 1)}, InvalidGoalError, pos),
    ]
    for kw, error, goal in cases:
        with pytest.raises(error):
            solve_limb(limb, goal, **kw)
        with pytest.raises(LimberError):
            solve_limb(limb, goal, **kw)


def test_invalid_wrist_target_raises_limber_error() -> None:
    limb = arm()
    one = PartialOrientationGoal((0.0, 0.3, 0.2), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    many = broadcast(one, 3)
    s = PsiStrategy.CLOSEST_WRIST
    with pytest.raises(InvalidGoalError, match="wrist_target"):
        solve_limb(limb, one, psi_strategy=s, wrist_target=(0.0, math.nan, 0.0))
    with pytest.raises(InvalidGoalError, match="wrist_target"):
        solve_limb(limb, one, psi_strategy=s, wrist_target=(0.0, 1.0))
    with pytest.raises(ShapeMismatchError):
        solve_limb(limb, many, psi_strategy=s, wrist_target=np.zeros((2, 3)))


def test_feasible_swivel_rejects_misplaced_arguments() -> None:
    limb = arm(LimbLimits(elbow=(0.0, 2.5)))
    one = PartialOrientationGoal((0.0, 0.3, 0.2), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    with pytest.raises(InvalidGoalError):
        feasible_swivel(limb, PoseGoal((0.0, 0.3, 0.2), np.eye(3)), psi=0.3)
    with pytest.raises(InvalidGoalError):
        feasible_swivel(limb, one, elbow=0.3)
