"""An aim goal with an elbow target (a pole): it aims exactly, and of the hand circle the
solve settles on, its elbow is the one nearest the target."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import AimGoal, solve_limb
from tests.core.test_limb_aim import aim_err, random_limb


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_aims_with_the_elbow_nearest_the_target(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lb = random_limb(rng)
    limb = type(lb)(lb.a, lb.b, elbow_axis=lb.elbow_axis)
    d = rng.normal(size=3)
    t = d / np.linalg.norm(d) * rng.uniform(1.5, 3.0) * limb.length
    goal = AimGoal(target=t, axis=(0.0, 1.0, 0.0))
    pole = rng.normal(size=3) * limb.length
    sol = solve_limb(limb, goal, elbow_target=pole)
    frame = limb.forward(sol.shoulder, sol.elbow, np.eye(3))
    assert float(aim_err(frame[:3, 3], frame[:3, 1], t)) <= 1e-9
    best = float(np.linalg.norm(limb.elbow_position(sol.shoulder) - pole))
    # the same hand circle (the same elbow angle) at 72 swivel angles
    circle = AimGoal(target=np.tile(t, (72, 1)), axis=np.tile((0.0, 1.0, 0.0), (72, 1)))
    others = solve_limb(limb, circle, elbow=np.full(72, float(sol.elbow)),
                        swivel=np.linspace(-np.pi, np.pi, 72, endpoint=False))
    dist = np.linalg.norm(limb.elbow_position(others.shoulder) - pole, axis=-1)
    assert best <= float(dist.min()) + 1e-9


def test_batched_rows_match() -> None:
    rng = np.random.default_rng(4)
    lb = random_limb(rng)
    limb = type(lb)(lb.a, lb.b, elbow_axis=lb.elbow_axis)
    t = np.array([[0.0, 2.0, 0.5], [1.0, 1.5, -0.5]]) * limb.length
    poles = np.array([[0.3, 0.1, 0.0], [-0.2, 0.0, 0.4]])
    goal = AimGoal(target=t, axis=np.tile((0.0, 1.0, 0.0), (2, 1)))
    sol = solve_limb(limb, goal, elbow_target=poles)
    for i in range(2):
        one = solve_limb(limb, AimGoal(target=t[i], axis=(0.0, 1.0, 0.0)), elbow_target=poles[i])
        np.testing.assert_allclose(one.shoulder, sol.shoulder[i], atol=1e-9)
