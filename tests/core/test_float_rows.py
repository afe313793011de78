"""The row (Python float) forms of the one-frame kernels a live solve uses compute what
their array forms compute, bit for bit: :func:`core.pose_goal_rows` is
:func:`core.goal_in_frame`, :func:`core.solve_pose_floats` is :func:`core.solve_limb`,
:func:`core.quaternion_rows` is :func:`core.quaternion_floats`, :func:`core.rodrigues_rows`
is :func:`core.rodrigues`' single-axis branch, :func:`core.orthonormalize_yz_rows` is
:func:`core.orthonormalize_yz`."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import (
    LimbLimits,
    PoseGoal,
    SwivelStrategy,
    affine_inverse,
    goal_in_frame,
    orthonormalize_yz,
    orthonormalize_yz_rows,
    pose_goal_rows,
    quat_to_matrix,
    quaternion_floats,
    quaternion_rows,
    rodrigues,
    rodrigues_rows,
    solve_limb,
    solve_pose_floats,
)
from tests.core.limb_test_helpers import rand_rot, readme_arm
from tests.core.test_limb import random_limb

coord = st.floats(-1.0, 1.0, allow_nan=False)
quats = st.tuples(coord, coord, coord, coord).filter(lambda v: math.fsum(x * x for x in v) > 1e-6)
axis3 = st.tuples(coord, coord, coord).filter(lambda v: math.fsum(x * x for x in v) > 1e-6)


def _affine(rng: np.random.Generator, shear: bool) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = rand_rot(rng) * rng.uniform(0.2, 3.0)
    if shear:
        m[:3, :3] = m[:3, :3] @ (np.eye(3) + 0.3 * rng.normal(size=(3, 3)))
    m[:3, 3] = rng.normal(size=3)
    return m


@pytest.mark.parametrize("batch", [False, True])
def test_pose_goal_rows_equals_goal_in_frame(batch: bool) -> None:
    """Scaled and sheared frames, scaled targets (float32-like noise included): the same
    position and rotation as ``goal_in_frame`` of the orthonormalised target."""
    rng = np.random.default_rng(3)
    for i in range(300):
        frame = _affine(rng, shear=i % 2 == 1)
        target = _affine(rng, shear=i % 3 == 0)
        target = target.astype(np.float32).astype(np.float64)
        inv = affine_inverse(frame[None] if batch else frame)
        t = target[None] if batch else target
        g = goal_in_frame(frame, orthonormalize_yz(t), rigid_target=True, inverse=inv)
        g = g[0] if batch else g
        position, rotation = pose_goal_rows(inv, target.tolist())
        assert position == tuple(g[:3, 3].tolist())
        assert rotation == tuple(tuple(r) for r in g[:3, :3].tolist())


def test_orthonormalize_yz_rows_equals_the_array_form() -> None:
    rng = np.random.default_rng(5)
    for _ in range(200):
        m = rng.normal(size=(3, 3))
        assert orthonormalize_yz_rows(m.tolist()) == tuple(
            tuple(r) for r in orthonormalize_yz(m).tolist())
    with pytest.raises(ValueError, match="zero Y axis"):
        orthonormalize_yz_rows([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="parallel"):
        orthonormalize_yz_rows([[1.0, 0.0, 0.0], [0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])


@settings(max_examples=300)
@given(quats)
def test_quaternion_rows_equals_quaternion_floats(q: tuple[float, ...]) -> None:
    r = quat_to_matrix(q)
    assert quaternion_rows(r.tolist()) == quaternion_floats(r)
    assert quaternion_rows(tuple(tuple(row) for row in r.tolist())) == quaternion_floats(r)


@settings(max_examples=300)
@given(axis3, st.floats(-20.0, 20.0, allow_nan=False))
def test_rodrigues_rows_equals_rodrigues(axis: tuple[float, float, float], angle: float) -> None:
    k = np.array(axis) / math.sqrt(math.fsum(x * x for x in axis))
    assert np.array_equal(np.array(rodrigues_rows(k.tolist(), angle)), rodrigues(k, angle))


@pytest.mark.parametrize("elbow_limits", [None, (0.0, 2.6)])
def test_solve_pose_floats_equals_solve_limb(elbow_limits: tuple[float, float] | None) -> None:
    """Random limbs, reachable and unreachable pose goals, a swivel, an elbow target, both
    strategies: every field of ``solve_limb``'s solution, bit for bit; None only where the
    fast path does not apply."""
    rng = np.random.default_rng(11)
    taken = 0
    for _ in range(5):
        lim = None if elbow_limits is None else LimbLimits(elbow=elbow_limits)
        limb = random_limb(rng, lim)
        for _ in range(20):
            f = limb.forward(rand_rot(rng), rng.uniform(-math.pi, math.pi), rand_rot(rng))
            p = f[:3, 3] * rng.choice([1.0, 3.0, 0.05])
            for kw in (
                {},
                {"swivel": float(rng.uniform(-7.0, 7.0))},
                {"elbow_target": rng.normal(size=3)},
                {"strategy": SwivelStrategy.MIDPOINT, "swivel": 0.5},
            ):
                ref = solve_limb(limb, PoseGoal(p, f[:3, :3]), **kw)  # type: ignore[arg-type]
                got = solve_pose_floats(limb, tuple(p.tolist()), f[:3, :3].tolist(),
                                        **kw)  # type: ignore[arg-type]
                if got is None:
                    continue
                taken += 1
                assert np.array_equal(np.array(got.shoulder), ref.shoulder)
                assert np.array_equal(np.array(got.wrist), ref.wrist)
                for name in ("elbow", "swivel", "reachable", "within_limits",
                             "position_error", "orientation_error"):
                    assert getattr(got, name) == getattr(ref, name), name
                assert got.feasible_swivel == ref.feasible_swivel
    assert taken > 300


def test_solve_pose_floats_declines_what_solve_limb_must_handle() -> None:
    """Non-finite goals, Euler limits beyond the elbow's, a NaN swivel: None (then
    ``solve_limb`` validates, names the bad value or solves on its general path)."""
    from core import EulerLimits

    arm = readme_arm()
    rot = np.eye(3).tolist()
    assert solve_pose_floats(arm, (0.1, 0.4, 0.1), rot) is not None
    assert solve_pose_floats(arm, (0.1, math.nan, 0.1), rot) is None
    assert solve_pose_floats(arm, (0.1, 0.4, 0.1), [[math.inf, 0, 0], [0, 1, 0], [0, 0, 1]]) is None
    assert solve_pose_floats(arm, (0.1, 0.4, 0.1), rot, swivel=math.nan) is None
    lim = LimbLimits(shoulder=EulerLimits("XYZ", (-1.0, None, None), (1.0, None, None)))
    assert solve_pose_floats(arm.with_limits(lim), (0.1, 0.4, 0.1), rot) is None
