"""Skeleton.evaluate with several rotation blocks (their errors computed in one stacked
call) gives each goal's rows exactly as the goal evaluated alone; the forward-kinematics
buffers a thread keeps (KinematicPlan.shared_workspace) give the same frames as fresh
ones and are never shared between threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from core import AimGoal, OrientationGoal, PoseGoal, PositionGoal
from core.chain.residuals import BlockKind
from core.geometry.rotations import euler_to_matrix
from tests.fixtures.humanoid import humanoid, random_poses

BODY = humanoid()
SK = BODY.skeleton


def _goals(rng: np.random.Generator, rows: int) -> list:
    goals: list = []
    for j in rng.choice(SK.n_joints, size=5, replace=False):
        shape = (rows, 3) if rng.random() < 0.5 else (3,)
        rot = euler_to_matrix(rng.uniform(-np.pi, np.pi, size=shape), "XYZ")
        kind = len(goals) % 4
        if kind == 0:
            goals.append(PoseGoal(rng.normal(size=shape), rot, joint=int(j), weight=0.3))
        elif kind == 1:
            goals.append(OrientationGoal(rot, joint=int(j)))
        elif kind == 2:
            goals.append(AimGoal(rng.normal(size=shape), (0.0, 1.0, 0.0), joint=int(j)))
        else:
            goals.append(PoseGoal(rng.normal(size=shape), rot, joint=int(j)))
    goals.append(PositionGoal(rng.normal(size=3), joint=int(SK.n_joints - 1)))
    return goals


@pytest.mark.parametrize("rows", [1, 3, 70])
@pytest.mark.parametrize("jacobian", [False, True])
def test_stacked_rotation_rows_equal_each_goal_alone(rows: int, jacobian: bool) -> None:
    rng = np.random.default_rng(rows + 10 * jacobian)
    for _ in range(20):
        q = random_poses(BODY, rows, rng)
        goals = _goals(rng, rows)
        ev = SK.evaluate(q, goals, jacobian=jacobian)
        for gi, goal in enumerate(goals):
            if not isinstance(goal, PoseGoal | OrientationGoal):
                continue
            alone = SK.evaluate(q, [goal], jacobian=jacobian)
            (blk,) = [b for b in ev.blocks if b.goal == gi and b.kind is BlockKind.ROTATION]
            (one,) = [b for b in alone.blocks if b.kind is BlockKind.ROTATION]
            assert np.array_equal(ev.e[:, blk.rows], alone.e[:, one.rows])
            assert np.array_equal(ev.goal_error[:, gi], alone.goal_error[:, 0])
            if jacobian:
                assert np.array_equal(ev.J[:, blk.rows], alone.J[:, one.rows])


@pytest.mark.parametrize("rows", [1, 4])
def test_kept_workspace_gives_fresh_frames(rows: int) -> None:
    rng = np.random.default_rng(rows)
    plan = SK.kinematic_plan
    for _ in range(5):
        q = random_poses(BODY, rows, rng)
        kept = plan.frames(q, plan.shared_workspace(rows)).copy()
        assert np.array_equal(kept, plan.frames(q, plan.workspace(rows)))
        assert np.array_equal(SK.kinematics(q)[1], SK.kinematics_of(plan.frames(q))[1])
    assert plan.shared_workspace(rows) is plan.shared_workspace(rows)


def test_each_thread_keeps_its_own_workspace() -> None:
    plan = SK.kinematic_plan
    seen: list = []
    thread = threading.Thread(target=lambda: seen.append(plan.shared_workspace(1)))
    thread.start()
    thread.join()
    assert seen[0] is not plan.shared_workspace(1)
