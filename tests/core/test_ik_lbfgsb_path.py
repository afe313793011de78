"""Issue 4, LBFGSB's "optional goal-path subdivision (their §3 interpolation of
intermediate targets)": the intermediate targets are Ki & Sheen's smoothed Ỹ_i — measured
from the chain's root O, the direction of Ỹ_i − O is at angle iθ/(M+1) from Y − O in the
plane of Y − O and X − O (their Y_i on the segment YX, split by the sine ratio), and its
length is t|X − O| + (1 − t)|Y − O| with t = i/(M+1)."""

from __future__ import annotations

import math

import numpy as np

from core import PoseGoal, PositionGoal
from core.chain.steps.lbfgsb import subdivided_offsets
from tests.core.ik_test_helpers import step_state
from tests.fixtures import arm_chain, buss_y


def _angle(a, b):
    c = np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    return np.arccos(np.clip(c, -1.0, 1.0))


def _check(sk, goals, q, origin, m):
    st = step_state(sk, goals, q)
    offs = subdivided_offsets(st, m)
    assert len(offs) == m
    moved = 0
    for blk in st.blocks:
        goal = goals[blk.goal]
        sw = math.sqrt(blk.weight)
        if blk.kind.name != "POSITION":
            for off in offs:  # other blocks keep their final target
                np.testing.assert_array_equal(off[:, blk.rows], 0.0)
            continue
        x = np.broadcast_to(goal.position, (q.shape[0], 3)) - origin
        y = x - st.e[:, blk.rows] / sw  # current effector point − O
        theta = _angle(y, x)
        normal = np.cross(y, x)
        for i, off in enumerate(offs, start=1):
            t = i / (m + 1)
            yi = x - off[:, blk.rows] / sw  # Ỹ_i − O
            np.testing.assert_allclose(
                np.linalg.norm(yi, axis=-1),
                t * np.linalg.norm(x, axis=-1) + (1 - t) * np.linalg.norm(y, axis=-1),
                rtol=1e-12,
            )
            np.testing.assert_allclose(_angle(y, yi), t * theta, atol=1e-7)
            np.testing.assert_allclose(_angle(yi, x), (1 - t) * theta, atol=1e-7)
            np.testing.assert_allclose(np.sum(normal * yi, -1), 0.0, atol=1e-12)
            moved += 1
    assert moved


def test_subdivision_points_follow_ki_and_sheens_smoothed_path_on_the_y():
    """Root j0 at (0, −0.5, 0): distances and angles are measured from it, not from the
    world origin; two effectors, batched targets."""
    fx = buss_y()
    sk = fx.skeleton
    origin = np.asarray(sk.joints[0].offset)[:3, 3]
    assert np.linalg.norm(origin) > 0.1
    q = np.random.default_rng(2).uniform(-0.4, 0.4, size=(3, sk.n_dofs))
    targets = np.array([[2.0, 1.5, 0.5], [1.0, -0.2, 1.2], [0.3, 2.0, -0.7]])
    goals = [
        PositionGoal(targets, joint="effector_right"),
        PositionGoal(targets[::-1] * (-1.0, 1.0, 1.0), joint="effector_left", weight=2.0),
    ]
    for m in (1, 4):
        _check(sk, goals, q, origin, m)


def test_subdivision_moves_position_rows_only_for_pose_goals():
    fx = arm_chain()
    sk = fx.skeleton
    F = sk.forward(np.array([0.9, -0.6, 1.0, 1.4, 0.5, 0.3, -0.6]))
    goals = [PoseGoal(F[3, :3, 3], F[3, :3, :3], joint="hand")]
    _check(sk, goals, fx.q0[None], np.zeros(3), 3)
