"""The product in :func:`core.goal_in_frame` (the frame's inverse times the target) rounds
every product and sum of an entry on its own, in a fixed order: the one-frame rows on
Python floats (``_product_rows``, :func:`core.pose_goal_rows`, a live solve), one matrix
and a batch (a bake) give the same floats, bit for bit; and they are within a few units
in the last place of numpy's ``matmul`` (which may fuse the multiply-adds)."""

from __future__ import annotations

import numpy as np

from core import affine_inverse, goal_in_frame, orthonormalize_yz, pose_goal_rows
from core.geometry.rigid import _affine_product, _product_rows
from tests.core.limb_test_helpers import rand_rot


def _frames(rng: np.random.Generator, n: int, shear: bool) -> np.ndarray:
    """``n`` affine 4×4 frames: rotation × (non-uniform, sheared) scale, a translation."""
    out = np.zeros((n, 4, 4))
    for i in range(n):
        m = rand_rot(rng) * rng.uniform(0.2, 3.0)
        if shear:
            m = m @ (np.eye(3) + 0.4 * rng.normal(size=(3, 3)))
        out[i, :3, :3] = m
        out[i, :3, 3] = rng.normal(scale=5.0, size=3)
        out[i, 3, 3] = 1.0
    return out


def test_one_matrix_a_batch_and_the_float_rows_agree_bit_for_bit() -> None:
    rng = np.random.default_rng(11)
    a = affine_inverse(_frames(rng, 300, shear=True))
    b = _frames(rng, 300, shear=False)
    batch = _affine_product(a, b)
    for i in range(len(a)):
        one = _affine_product(a[i], b[i])
        assert one.shape == (4, 4)
        assert np.array_equal(batch[i], one)
        assert np.array_equal(_affine_product(a[i:i + 1], b[i:i + 1]), one[None])
        assert np.array_equal(np.array(_product_rows(a[i].tolist(), b[i].tolist())), one)
        assert _product_rows(a[i].tolist(), b[i].tolist(), 3) == [
            tuple(r) for r in one[:3].tolist()]
    # one frame against a stack of targets (broadcast), as a bake with a still frame
    still = _affine_product(a[0], b)
    assert still.shape == b.shape
    for i in range(len(b)):
        assert np.array_equal(still[i], _affine_product(a[0], b[i]))


def test_within_a_few_ulps_of_matmul() -> None:
    rng = np.random.default_rng(12)
    a = affine_inverse(_frames(rng, 500, shear=True))
    b = _frames(rng, 500, shear=False)
    ours = _affine_product(a, b)
    ref = a @ b
    # four rounded products and three rounded sums: |error| ≤ 4·eps·Σ|a||b| (a loose bound)
    bound = 4.0 * np.finfo(np.float64).eps * (np.abs(a) @ np.abs(b))
    assert np.all(np.abs(ours - ref) <= bound)


def test_a_batched_goal_is_each_frames_float_goal() -> None:
    """What a bake computes for a range (goal_in_frame of stacks) is, frame by frame, what
    a live solve computes on floats (pose_goal_rows), bit for bit."""
    rng = np.random.default_rng(13)
    frames = _frames(rng, 200, shear=True)
    targets = _frames(rng, 200, shear=False)
    inv = affine_inverse(frames)
    goals = goal_in_frame(frames, targets, inverse=inv)
    for i in range(len(frames)):
        position, rotation = pose_goal_rows(inv[i], targets[i].tolist())
        assert pose_goal_rows(inv[i].tolist(), targets[i].tolist()) == (position, rotation)
        assert tuple(goals[i, :3, 3].tolist()) == position
        assert tuple(map(tuple, goals[i, :3, :3].tolist())) == rotation
        one = goal_in_frame(frames[i:i + 1], targets[i:i + 1], inverse=inv[i:i + 1])
        assert np.array_equal(one[0], goals[i])
    assert np.array_equal(goals, goal_in_frame(frames, orthonormalize_yz(targets),
                                               rigid_target=True, inverse=inv))
