"""Goals out of reach of a limb with joint limits: the pose within every limit nearest the
goal (position first, then orientation), checked against an independent reference. For a
position goal the distance is the effector point's; for a pose goal the wrist centre's to
its goal tG − R_G·tE (Tolani's decomposition, as without limits)."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

from core import (
    EulerLimits,
    Limb,
    LimbLimits,
    PoseGoal,
    PositionGoal,
    SwivelStrategy,
    euler_to_matrix,
    solve_limb,
)
from tests.core.limb_test_helpers import (
    PI,
    README_LIMITS,
    pose_within,
    rand_rot,
    readme_arm,
    tf,
    unit,
)

ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


def random_euler_limits(rng: np.random.Generator) -> EulerLimits:
    lo = rng.uniform(-2.5, 0.5, 3)
    width = rng.uniform(0.3, 2.5, 3)
    return EulerLimits(str(rng.choice(ORDERS)), lo, lo + width)


def random_limits(rng: np.random.Generator) -> LimbLimits:
    lo = float(rng.uniform(-1.0, 1.5))
    return LimbLimits(
        random_euler_limits(rng), (lo, lo + float(rng.uniform(0.3, 2.0))), random_euler_limits(rng)
    )


def random_limb(rng: np.random.Generator, limits: LimbLimits) -> Limb:
    """A limb with rotated segment frames, a general hinge axis and a hand offset."""
    while True:
        a = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.2, 0.4))
        b = tf(rand_rot(rng), unit(rng.normal(size=3)) * rng.uniform(0.2, 0.4))
        k = unit(rng.normal(size=3))
        try:
            return Limb(a, b, elbow_axis=k, effector=tf(rand_rot(rng), rng.normal(size=3) * 0.05),
                        limits=limits)  # fmt: skip
        except Exception:  # an ineffective hinge axis: draw again
            continue


def shell(limb: Limb, wrist: np.ndarray | None) -> tuple[float, float]:
    """Min and max shoulder → terminal-point distance over θ4 without limits (sampled):
    the effector with ``wrist`` held, or the wrist centre when ``wrist`` is None."""
    th = np.linspace(-PI, PI, 4001)
    if wrist is None:
        d = np.linalg.norm(limb.wrist_position(np.eye(3), th), axis=-1)
    else:
        d = np.linalg.norm(limb.forward(np.eye(3), th, wrist)[:, :3, 3], axis=-1)
    return float(d.min()), float(d.max())


def terminal_goal(limb: Limb, goal: PositionGoal | PoseGoal) -> np.ndarray:
    """The point the distance is measured to: the goal position, or the wrist centre's
    goal tG − R_G·R_Eᵀ·tE for a pose goal."""
    if isinstance(goal, PoseGoal):
        e = np.asarray(limb.effector)
        return np.asarray(goal.position) - goal.rotation @ e[:3, :3].T @ e[:3, 3]
    return np.asarray(goal.position)


def terminal(limb: Limb, goal: PositionGoal | PoseGoal, r1: np.ndarray, th: float,
             r2: np.ndarray) -> np.ndarray:  # fmt: skip
    if isinstance(goal, PoseGoal):
        return limb.wrist_position(r1, th)
    return limb.forward(r1, th, r2)[:3, 3]


def reference(
    limb: Limb, goal: PositionGoal | PoseGoal, wrist: np.ndarray | None, starts: int = 24
) -> float:
    """Least distance within the limits: bounded SLSQP over the shoulder's Euler angles and
    θ4 (the wrist does not move the wrist centre) from many random starts."""
    lim = limb.limits
    assert lim is not None and lim.shoulder is not None and lim.wrist is not None
    assert lim.elbow is not None
    g = terminal_goal(limb, goal)
    bounds = list(zip(lim.shoulder.lower, lim.shoulder.upper, strict=True)) + [lim.elbow]
    lo, hi = np.array(bounds).T
    w = np.eye(3) if wrist is None else wrist

    def err(x: np.ndarray) -> float:
        r1 = euler_to_matrix(x[:3], lim.shoulder.order)
        return float(np.sum((terminal(limb, goal, r1, x[3], w) - g) ** 2))

    rng = np.random.default_rng(99)
    best = math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(starts):
            x0 = rng.uniform(lo, hi)
            res = minimize(err, x0, method="SLSQP", bounds=list(zip(lo, hi, strict=True)),
                           options={"ftol": 1e-14, "maxiter": 300})  # fmt: skip
            best = min(best, err(np.clip(res.x, lo, hi)))
    return math.sqrt(best)


def out_of_reach_goal(
    limb: Limb, rng: np.random.Generator, kind: str, far: bool, wrist: np.ndarray | None
) -> PositionGoal | PoseGoal:
    """A goal whose terminal point (effector, or wrist centre for a pose goal) is beyond
    the reach of every elbow angle (far), or nearer the shoulder than any (not far)."""
    dmin, dmax = shell(limb, wrist)
    d = rng.uniform(1.1, 1.5) * dmax if far else rng.uniform(0.0, 0.9) * dmin
    p = unit(rng.normal(size=3)) * d
    if kind == "position":
        return PositionGoal(p)
    rot = rand_rot(rng)
    e = np.asarray(limb.effector)
    return PoseGoal(p + rot @ e[:3, :3].T @ e[:3, 3], rot)


def check_nearest(limb: Limb, goal: PositionGoal | PoseGoal, wrist: np.ndarray | None) -> None:
    kw = {} if wrist is None else {"wrist": wrist}
    sol = solve_limb(limb, goal, **kw)  # type: ignore[arg-type]
    assert sol.reachable is False
    assert sol.within_limits is True and bool(pose_within(limb, sol, tol=1e-9))
    f = limb.forward(sol.shoulder, sol.elbow, sol.wrist)
    pe = float(np.linalg.norm(f[:3, 3] - goal.position))
    assert sol.position_error == pytest.approx(pe, abs=1e-12)
    d = terminal(limb, goal, sol.shoulder, sol.elbow, sol.wrist) - terminal_goal(limb, goal)
    assert float(np.linalg.norm(d)) <= reference(limb, goal, wrist) + 1e-6
    if isinstance(goal, PoseGoal):  # the wrist (which keeps the wrist centre) is optimal
        assert sol.orientation_error <= wrist_reference(limb, goal, sol) + 1e-6


def wrist_reference(limb: Limb, goal: PoseGoal, sol: object, starts: int = 12) -> float:
    """Least orientation error over the wrist's Euler angles within its limits, shoulder
    and elbow held at the solution's (multi-start bounded SLSQP)."""
    lim = limb.limits
    assert lim is not None and lim.wrist is not None
    lo, hi = np.array(list(zip(lim.wrist.lower, lim.wrist.upper, strict=True))).T

    def cost(x: np.ndarray) -> float:
        r2 = euler_to_matrix(x, lim.wrist.order)
        rot = limb.forward(sol.shoulder, sol.elbow, r2)[:3, :3]  # type: ignore[attr-defined]
        return float(np.sum((rot - goal.rotation) ** 2))

    rng = np.random.default_rng(5)
    best = math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(starts):
            box = list(zip(lo, hi, strict=True))
            res = minimize(cost, rng.uniform(lo, hi), method="SLSQP", bounds=box)
            best = min(best, cost(np.clip(res.x, lo, hi)))
    return 2.0 * math.asin(min(1.0, math.sqrt(best / 8.0)))  # ‖R − G‖_F = 2√2 sin(angle/2)


@pytest.mark.parametrize("far", [True, False], ids=["beyond-reach", "too-close"])
@pytest.mark.parametrize("kind", ["position", "pose"])
def test_out_of_reach_random_limits_nearest_within_limits(kind: str, far: bool) -> None:
    """Random limbs and limits: within the limits, and no farther than the reference."""
    rng = np.random.default_rng(31 + 2 * far + (kind == "pose"))
    done = 0
    while done < 4:
        limb = random_limb(rng, random_limits(rng))
        wrist = None
        if kind == "position":
            lw = limb.limits.wrist  # type: ignore[union-attr]
            mid = 0.5 * (np.array(lw.lower) + np.array(lw.upper))  # type: ignore[union-attr,arg-type]
            wrist = euler_to_matrix(mid, lw.order)  # type: ignore[union-attr]
        if not far and shell(limb, wrist)[0] < 0.05 * limb.length:
            continue  # (no room for a goal too close)
        check_nearest(limb, out_of_reach_goal(limb, rng, kind, far, wrist), wrist)
        done += 1


@pytest.mark.parametrize("kind", ["position", "pose"])
def test_out_of_reach_human_arm_readme_limits(kind: str) -> None:
    """The README arm, far goals in random directions (behind the shoulder too)."""
    rng = np.random.default_rng(7)
    limb = readme_arm(README_LIMITS)
    for _ in range(4):
        check_nearest(limb, out_of_reach_goal(limb, rng, kind, True, None), None)


@pytest.mark.parametrize("kind", ["position", "pose"])
def test_out_of_reach_batched_equals_single(kind: str) -> None:
    rng = np.random.default_rng(5)
    limb = readme_arm(README_LIMITS)
    n = 6
    d = unit(rng.normal(size=(n, 3))) * limb.length * rng.uniform(0.0, 1.5, (n, 1))
    d[0] *= 0.02  # too close
    rot = rand_rot(rng, n)
    goal = PoseGoal(d, rot) if kind == "pose" else PositionGoal(d)
    phi = rng.uniform(-PI, PI, n)
    batch = solve_limb(limb, goal, swivel=phi)
    assert not np.all(batch.reachable) and np.all(batch.within_limits)
    for i in range(n):
        gi = PoseGoal(d[i], rot[i]) if kind == "pose" else PositionGoal(d[i])
        s = solve_limb(limb, gi, swivel=phi[i])
        b = batch[i]
        np.testing.assert_allclose(b.shoulder, s.shoulder, rtol=0, atol=1e-14)
        np.testing.assert_allclose(b.wrist, s.wrist, rtol=0, atol=1e-14)
        assert abs(b.elbow - s.elbow) <= 1e-14
        assert abs(b.position_error - s.position_error) <= 1e-14
        assert abs(b.orientation_error - s.orientation_error) <= 1e-14
        assert (b.reachable, b.within_limits) == (s.reachable, s.within_limits)


@pytest.mark.parametrize("kind", ["position", "pose"])
def test_dragging_past_reach_is_continuous(kind: str) -> None:
    """A target dragged from inside reach to 1.4 × the arm's length: the effector and the
    elbow move no more per step than the target step explains (√step near the stretched
    singularity), and every pose is within the limits."""
    limb = readme_arm(README_LIMITS)
    start = limb.forward(
        euler_to_matrix(np.array([0.3, 0.2, 0.4]), "XYZ"),
        0.9,
        euler_to_matrix(np.array([0.2, 0.1, 0.3]), "XYZ"),
    )  # a pose within the limits, in reach
    rot = start[:3, :3]
    direction = unit(start[:3, 3])
    ts = np.linspace(np.linalg.norm(start[:3, 3]), 1.4 * limb.length, 801)
    goal = (
        PoseGoal(ts[:, None] * direction, np.broadcast_to(rot, (len(ts), 3, 3)))
        if kind == "pose"
        else PositionGoal(ts[:, None] * direction)
    )
    sol = solve_limb(limb, goal, swivel=0.5)
    assert np.all(sol.within_limits)
    assert sol.reachable[0] and not sol.reachable[-1]
    f = limb.forward(sol.shoulder, sol.elbow, sol.wrist)
    effector = f[:, :3, 3]
    elbow = limb.elbow_position(sol.shoulder)
    step = float(ts[1] - ts[0])
    assert np.max(np.linalg.norm(np.diff(effector, axis=0), axis=1)) <= 3.0 * step
    jump = np.linalg.norm(np.diff(elbow, axis=0), axis=1)
    assert np.max(jump) <= 3.0 * math.sqrt(step * limb.length)


@pytest.mark.parametrize("kind", ["position", "pose"])
def test_no_limits_out_of_reach_unchanged(kind: str) -> None:
    """Without limits an out-of-reach goal still gives the stretched limb aimed at the goal
    (the wrist keeping the goal's orientation for pose goals)."""
    rng = np.random.default_rng(3)
    limb = readme_arm(None)
    for _ in range(5):
        p = unit(rng.normal(size=3)) * limb.length * 1.3
        rot = rand_rot(rng)
        goal = PoseGoal(p, rot) if kind == "pose" else PositionGoal(p)
        sol = solve_limb(limb, goal, swivel=0.3)
        assert sol.reachable is False and sol.within_limits is True
        assert abs(sol.elbow) <= 1e-12  # fully stretched
        if kind == "pose":
            assert sol.orientation_error <= 1e-12
            w = limb.wrist_position(sol.shoulder, sol.elbow)
            wg = p - rot @ np.array([0.0, 0.08, 0.0])
            assert np.linalg.norm(np.cross(unit(w), unit(wg))) < 1e-12
        else:
            assert sol.position_error == pytest.approx(1.3 * limb.length - limb.length, abs=1e-12)


def test_out_of_reach_limit_at_gimbal_lock_is_within_limits() -> None:
    """The sample arm's shoulder limits its middle Euler angle at exactly π/2 (gimbal lock):
    poses pinned there are still reported, and are, within the limits."""
    from tests.fixtures import human_arm as sample_arm

    limb = sample_arm(limits=True)
    rng = np.random.default_rng(3)
    d = unit(rng.normal(size=(40, 3))) * limb.length * rng.uniform(1.1, 1.5, (40, 1))
    for goal in (PositionGoal(d), PoseGoal(d[:8], rand_rot(rng, 8))):
        sol = solve_limb(limb, goal)
        assert not np.any(sol.reachable)
        assert np.all(sol.within_limits) and np.all(pose_within(limb, sol, tol=1e-9))


@pytest.mark.parametrize("kind", ["position", "point", "pose"])
@pytest.mark.parametrize("option", ["elbow_target", "elbow_near", "midpoint", "objective"])
def test_out_of_reach_options_batched_equals_single(kind: str, option: str) -> None:
    """Every way of choosing φ, and an effector point: batched rows equal single solves,
    all within the limits."""
    rng = np.random.default_rng(2)
    limb = readme_arm(README_LIMITS)
    n = 4
    d = unit(rng.normal(size=(n, 3))) * limb.length * 1.3
    rot = rand_rot(rng, n)
    kws: dict[str, object] = {
        "elbow_target": {"elbow_target": rng.normal(size=(n, 3)) * 0.3},
        "elbow_near": {"elbow_near": rng.uniform(0.0, 2.0, n)},
        "midpoint": {"strategy": SwivelStrategy.MIDPOINT},
        "objective": {"strategy": lambda a: np.sum(a**2, axis=1)},
    }[option]  # type: ignore[assignment]

    def goal(i: int | slice) -> PositionGoal | PoseGoal:
        if kind == "pose":
            return PoseGoal(d[i], rot[i])
        return PositionGoal(d[i], point=(0.0, 0.05, 0.0) if kind == "point" else (0.0, 0.0, 0.0))

    batch = solve_limb(limb, goal(slice(None)), **kws)  # type: ignore[arg-type]
    assert np.all(batch.within_limits) and not np.any(batch.reachable)
    for i in range(n):
        kw = {k: (v[i] if isinstance(v, np.ndarray) else v) for k, v in kws.items()}
        s = solve_limb(limb, goal(i), **kw)  # type: ignore[arg-type]
        b = batch[i]
        np.testing.assert_allclose(b.shoulder, s.shoulder, rtol=0, atol=1e-14)
        assert abs(b.elbow - s.elbow) <= 1e-14
        assert abs(b.position_error - s.position_error) <= 1e-14
