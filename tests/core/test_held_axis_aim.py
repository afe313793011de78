"""held_axis_aim: an aim goal whose ray direction does not turn with the limb (an end
bone that does not inherit rotation) becomes a wrist position on the ray; a position
solve there aims exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import LimbLimits, PositionGoal, held_axis_aim, solve_limb
from tests.core.test_limb_aim import aim_err, random_limb


def _limb(rng: np.random.Generator, limits: LimbLimits | None = None):  # type: ignore[no-untyped-def]
    lb = random_limb(rng, limits)
    return type(lb)(lb.a, lb.b, elbow_axis=lb.elbow_axis, limits=limits)  # effector = I


def _shell(limb) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """The wrist's shoulder distances over the elbow angles, sampled (an independent check)."""
    r = np.linalg.norm(limb.wrist_position(np.eye(3), np.linspace(-np.pi, np.pi, 20001)), axis=-1)
    return float(r.min()), float(r.max())


def _rest(limb) -> float:  # type: ignore[no-untyped-def]
    return float(np.linalg.norm(limb.wrist_position(np.eye(3), 0.0)))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_position_solve_at_the_point_aims_exactly(seed: int) -> None:
    rng = np.random.default_rng(seed)
    limb = _limb(rng)
    t = rng.normal(size=3)
    t *= rng.uniform(0.05, 1.5) * limb.length / np.linalg.norm(t)
    d = rng.normal(size=3)
    p, exact = held_axis_aim(limb, t, d)
    d = d / np.linalg.norm(d)
    lo, hi = _shell(limb)
    if not exact:  # only where the ray passes beyond the reach
        assert np.linalg.norm(np.cross(t, d)) > hi - 1e-6 or float(t @ d) <= 0.0
        return
    mu = float((t - p) @ d)
    assert mu > 0.0
    np.testing.assert_allclose(t - mu * d, p, atol=1e-12)  # on the ray before the target
    r = float(np.linalg.norm(p))
    assert lo - 1e-6 <= r <= hi + 1e-6  # (the sampled shell: to 1e-6)
    if abs(r - _rest(limb)) > 1e-9:  # the zero elbow's distance unless the ray forbids it
        nearest = float(np.linalg.norm(t - max(float(t @ d), 0.0) * d))
        assert np.isclose(r, max(nearest, lo), atol=1e-6) or np.isclose(r, hi, atol=1e-6) \
            or mu <= 1e-3 * limb.length + 1e-12
    sol = solve_limb(limb, PositionGoal(position=p))
    w = limb.wrist_position(sol.shoulder, sol.elbow)
    np.testing.assert_allclose(w, p, atol=1e-9)
    assert float(aim_err(w, d, t)) <= 1e-8


def test_the_zero_elbow_distance_on_the_near_side() -> None:
    """A target straight ahead along the held axis: the wrist at the zero pose's distance
    from the shoulder, between the shoulder and the target."""
    limb = _limb(np.random.default_rng(3))
    rest = _rest(limb)
    d = np.array([0.3, -0.2, 0.9])
    d /= np.linalg.norm(d)
    t = 2.0 * limb.length * d + 1e-3 * np.array([1.0, 0.0, 0.0])
    p, exact = held_axis_aim(limb, t, d)
    assert exact
    assert np.isclose(np.linalg.norm(p), rest)
    assert float(p @ d) > 0.0


def test_elbow_limits_move_the_distance() -> None:
    """A zero elbow angle outside the elbow limits: the distance of the nearer limit."""
    rng = np.random.default_rng(5)
    free = _limb(rng)
    limits = LimbLimits(elbow=(0.4, 1.2))
    limb = type(free)(free.a, free.b, elbow_axis=free.elbow_axis, limits=limits)
    want = float(np.linalg.norm(limb.wrist_position(np.eye(3), 0.4)))
    d = np.array([0.0, 0.0, 1.0])
    t = 3.0 * limb.length * d
    p, exact = held_axis_aim(limb, t, d)
    assert exact and np.isclose(np.linalg.norm(p), want)


def test_out_of_reach_ray_and_batches() -> None:
    rng = np.random.default_rng(7)
    limb = _limb(rng)
    d = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    far = np.array([5.0 * limb.length, 0.0, 1.0])  # the ray passes 5 lengths away
    near = np.array([0.0, 0.0, 2.0 * limb.length])
    p, exact = held_axis_aim(limb, np.stack([far, near]), d)
    assert p.shape == (2, 3) and exact.tolist() == [False, True]
    np.testing.assert_allclose(p[0], (far[0], 0.0, 0.0))  # its point nearest the shoulder
    for i, t in enumerate((far, near)):
        one, ok = held_axis_aim(limb, t, d[i])
        np.testing.assert_allclose(one, p[i], atol=1e-15)
        assert bool(ok) == bool(exact[i])


