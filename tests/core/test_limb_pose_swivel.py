"""core.pose_swivel: the swivel φ of a limb pose is the one solve_limb needs to give that
pose back (round trip), and a straight limb has the φ its elbow leaves the axis by."""

from __future__ import annotations

import numpy as np
import pytest

from core import (
    Limb,
    LimbLimits,
    PoseGoal,
    PositionGoal,
    ShapeMismatchError,
    pose_swivel,
    pose_swivels,
    solve_limb,
)
from core.geometry.rotations import rodrigues


def _limb() -> Limb:
    a = np.eye(4)
    a[:3, 3] = (0.0, 0.3, 0.0)
    b = np.eye(4)
    b[:3, 3] = (0.0, 0.28, 0.0)
    return Limb(a, b, (1.0, 0.0, 0.0))


def _rotation(rng: np.random.Generator) -> np.ndarray:
    axis = rng.normal(size=3)
    return np.asarray(rodrigues(axis / np.linalg.norm(axis), rng.uniform(0.0, np.pi)))


@pytest.mark.parametrize("seed", range(20))
def test_pose_swivel_round_trips_through_solve_limb(seed: int) -> None:
    rng = np.random.default_rng(seed)
    limb = _limb()
    r1, r2 = _rotation(rng), _rotation(rng)
    theta = rng.uniform(0.2, 2.5)
    phi = pose_swivel(limb, r1, theta)
    assert phi is not None
    goal = limb.forward(r1, theta, r2)
    sol = solve_limb(limb, PoseGoal(goal[:3, 3], goal[:3, :3]), swivel=phi)
    assert np.allclose(sol.shoulder, r1, atol=1e-9)
    assert abs(float(sol.elbow) - theta) <= 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_a_straight_limb_has_the_swivel_of_its_elbow_leaving_the_axis(seed: int) -> None:
    rng = np.random.default_rng(seed)
    limb = _limb()
    r1 = _rotation(rng)
    phi = pose_swivel(limb, r1, 0.0)
    assert phi is not None
    bent = pose_swivel(limb, r1, 0.01)
    assert bent is not None
    assert abs(np.angle(np.exp(1j * (phi - bent)))) <= 1e-2  # the side, not the opposite one


@pytest.mark.parametrize("elbow", [None, (-2.5, 0.0), (0.0, 2.5)])
@pytest.mark.parametrize("seed", range(10))
def test_a_stretched_limb_keeps_its_swivel_beyond_reach(
    seed: int, elbow: tuple[float, float] | None
) -> None:
    """The elbow a few nanometres off the bending plane (as bone data in float32 leaves
    it): a goal beyond reach stretches the limb straight, where that offset is all that
    is left of the elbow's distance from the axis. With the same φ the limb bends to the
    same side as for a goal just inside reach (before: turned 90° about itself, the
    hinge axis along the offset; with elbow limits bending it negative, 180°), and
    pose_swivel gives φ back on both."""
    rng = np.random.default_rng(seed)
    a = np.eye(4)
    a[:3, 3] = (3e-9, 0.3, 0.0)  # off the plane the elbow (about X) bends in
    b = np.eye(4)
    b[:3, 3] = (0.0, 0.28, 0.0)
    limb = Limb(a, b, (1.0, 0.0, 0.0), limits=None if elbow is None else LimbLimits(elbow=elbow))
    d = rng.normal(size=3)
    d /= np.linalg.norm(d)
    phi = float(rng.uniform(-np.pi, np.pi))
    inside = solve_limb(limb, PositionGoal(d * 0.58 * (1.0 - 1e-6)), swivel=phi)
    beyond = solve_limb(limb, PositionGoal(d * 0.58 * 1.01), swivel=phi)
    assert bool(inside.reachable) and not bool(beyond.reachable)
    hinge_in, hinge_out = inside.shoulder[:, 0], beyond.shoulder[:, 0]
    assert float(hinge_in @ hinge_out) >= np.cos(1e-5)
    for sol in (inside, beyond):
        got = pose_swivel(limb, sol.shoulder, float(sol.elbow))
        assert got is not None
        assert abs(np.angle(np.exp(1j * (got - phi)))) <= 1e-9


# ------------------------------------------------------------------ batched: pose_swivels


def _poses(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n shoulder rotations and elbow angles: bent, and (every third) exactly straight,
    exactly folded or a few nanoradians off straight."""
    r1 = np.stack([_rotation(rng) for _ in range(n)])
    theta = rng.uniform(-2.5, 2.5, size=n)
    theta[::3] = rng.choice([0.0, np.pi, -np.pi, 3e-9, -3e-9], size=theta[::3].shape)
    return r1, theta


@pytest.mark.parametrize("elbow", [None, (-2.5, 0.0), (0.0, 2.5)])
@pytest.mark.parametrize("offset", [0.0, 3e-9])
def test_pose_swivels_is_pose_swivel_row_by_row(
    elbow: tuple[float, float] | None, offset: float
) -> None:
    a = np.eye(4)
    a[:3, 3] = (offset, 0.3, 0.0)
    b = np.eye(4)
    b[:3, 3] = (0.0, 0.28, 0.0)
    limb = Limb(a, b, (1.0, 0.0, 0.0), limits=None if elbow is None else LimbLimits(elbow=elbow))
    r1, theta = _poses(np.random.default_rng(7), 60)
    got = pose_swivels(limb, r1, theta)
    for i in range(60):
        one = pose_swivel(limb, r1[i], float(theta[i]))
        if one is None:
            assert np.isnan(got[i])
        else:
            assert abs(np.angle(np.exp(1j * (got[i] - one)))) <= 1e-12, i
    # a batch of one, and the rows in another order, give the same values
    perm = np.random.default_rng(8).permutation(60)
    np.testing.assert_allclose(pose_swivels(limb, r1[perm], theta[perm]), got[perm], atol=1e-12)
    np.testing.assert_allclose(pose_swivels(limb, r1[:1], theta[:1]), got[:1], atol=1e-12)


def test_pose_swivels_without_a_swivel_gives_nan() -> None:
    """The wrist centre on the shoulder (a folded limb of equal segments) has no φ."""
    a = np.eye(4)
    a[:3, 3] = (0.0, 0.3, 0.0)
    b = np.eye(4)
    b[:3, 3] = (0.0, 0.3, 0.0)
    limb = Limb(a, b, (1.0, 0.0, 0.0))
    got = pose_swivels(limb, np.stack([np.eye(3)] * 2), np.array([np.pi, 1.0]))
    assert np.isnan(got[0]) and np.isfinite(got[1])
    assert pose_swivel(limb, np.eye(3), np.pi) is None


@pytest.mark.parametrize(
    ("shoulder", "elbow"),
    [
        (np.eye(3), np.zeros(1)),
        (np.stack([np.eye(3)] * 2), np.zeros(3)),
        (np.zeros((2, 3, 4)), np.zeros(2)),
    ],
)
def test_pose_swivels_names_bad_shapes(shoulder: np.ndarray, elbow: np.ndarray) -> None:
    with pytest.raises(ShapeMismatchError, match=r"\(B, 3, 3\)"):
        pose_swivels(_limb(), shoulder, elbow)


@pytest.mark.parametrize("noise", [-3e-12, 4e-11, -5e-9, 5e-9])
@pytest.mark.parametrize("elbow", [None, (-2.5, 0.0), (0.0, 2.5)])
@pytest.mark.parametrize("seed", range(4))
def test_float_noise_at_the_straight_angle_names_no_other_side(
    seed: int, elbow: tuple[float, float] | None, noise: float
) -> None:
    """A straight limb whose elbow angle sits a few picoradians off the straight angle
    (a body's answer) has the φ of the limb exactly at it, so solving it again toward a
    goal beyond reach (β = 0) with that φ gives the same upper bone: before, the noise's
    sign named the other side and the re-solve turned the limb 180° about itself."""
    a = np.eye(4)
    a[:3, 3] = (3e-9, 0.3, 0.0)
    b = np.eye(4)
    b[:3, 3] = (0.0, 0.28, 0.0)
    limb = Limb(a, b, (1.0, 0.0, 0.0), limits=None if elbow is None else LimbLimits(elbow=elbow))
    delta = limb.constants.eq5_pose.delta  # the straight angle
    r1 = _rotation(np.random.default_rng(seed))
    exact = pose_swivel(limb, r1, delta)
    phi = pose_swivel(limb, r1, delta + noise)
    assert exact is not None and phi is not None
    assert abs(np.angle(np.exp(1j * (phi - exact)))) <= 1e-6
    wrist = limb.wrist_position(r1, delta)
    again = solve_limb(limb, PositionGoal(wrist * 1.01), swivel=phi)
    assert not bool(again.reachable)
    np.testing.assert_allclose(again.shoulder, r1, atol=1e-6)
