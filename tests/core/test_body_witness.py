"""The whole-body rescue's witness search: the unlimited limb at evenly spaced swivels
(``core.body.closed.sampled_poses``) is what ``solve_limb`` gives for the repeated goals,
bit for bit, and the 2π shifts into the joints' ranges (``_into_range``) are the ones of
the plain loop over the shifts."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import PoseGoal, PositionGoal, solve_limb
from core.body.closed import Local, sampled_poses
from core.body.solve import _into_range
from core.geometry.rotations import euler_to_matrix
from core.geometry.vec3 import TAU
from tests.fixtures.humanoid import humanoid

BODY = humanoid()
PHIS = np.linspace(-math.pi, math.pi, 24, endpoint=False)


@settings(max_examples=40, deadline=None)
@given(
    limb=st.integers(0, len(BODY.models) - 1),
    rows=st.integers(1, 4),
    pose=st.booleans(),
    wrist=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_sampled_poses_are_solve_limbs_at_the_samples(
    limb: int, rows: int, pose: bool, wrist: bool, seed: int
) -> None:
    model = BODY.models[limb].with_limits(None)
    rng = np.random.default_rng(seed)
    pos = rng.normal(size=(rows, 3)) * 0.4 * model.length
    rot = euler_to_matrix(rng.uniform(-math.pi, math.pi, size=(rows, 3)), "XYZ")
    held = euler_to_matrix(rng.uniform(-1.0, 1.0, size=3), "XYZ") if wrist else None
    local = Local(pos, rot if pose else None)
    shoulder, elbow, wrist_m = sampled_poses(model, local, None if pose else held, PHIS)
    rep = np.repeat(pos, PHIS.size, axis=0)
    goal = PoseGoal(rep, np.repeat(rot, PHIS.size, axis=0)) if pose else PositionGoal(rep)
    sol = solve_limb(model, goal, swivel=np.tile(PHIS, rows), wrist=None if pose else held)
    np.testing.assert_array_equal(shoulder, sol.shoulder)
    np.testing.assert_array_equal(elbow, sol.elbow)
    np.testing.assert_array_equal(wrist_m, sol.wrist)


def _shifted_by_loop(a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    best = a
    best_out = np.maximum(lo - a, 0.0) + np.maximum(a - hi, 0.0)
    for k in (-2, -1, 1, 2):
        c = a + k * TAU
        out = np.maximum(lo - c, 0.0) + np.maximum(c - hi, 0.0)
        better = out < best_out - 1e-12
        best = np.where(better, c, best)
        best_out = np.where(better, out, best_out)
    return best


@settings(max_examples=200, deadline=None)
@given(
    rows=st.integers(1, 30),
    width=st.integers(1, 3),
    unlimited=st.booleans(),
    wide=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_into_range_takes_the_first_better_shift(
    rows: int, width: int, unlimited: bool, wide: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    lo = rng.uniform(-4.0, 1.0, width)
    hi = lo + rng.uniform(0.0, 7.0, width)
    if unlimited:
        lo[0], hi[0] = -np.inf, np.inf
    a = rng.uniform(-12.0, 12.0, (rows, width)) if wide else rng.uniform(-3.2, 3.2, (rows, width))
    a = np.where(rng.random((rows, width)) < 0.2, np.clip(a, lo, hi), a)
    np.testing.assert_array_equal(_into_range(a, lo, hi), _shifted_by_loop(a, lo, hi))
