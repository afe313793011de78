"""Skeleton.evaluate(columns=...): the chosen Jacobian columns, equal to the full
Jacobian's up to rounding (BLAS products of another width), on every evaluation path
(batch-first with per-goal residuals, grouped position goals, batch-last; Free root
translations, masked and weighted goals)."""

from __future__ import annotations

import numpy as np
import pytest

from core import AimGoal, PoseGoal, PositionGoal
from tests.fixtures.humanoid import end_goals, humanoid, random_poses

BODY = humanoid()
SK = BODY.skeleton


def _goal_sets(q: np.ndarray) -> dict[str, list]:
    ends = end_goals(BODY, q)
    shoulders = [
        PositionGoal(np.zeros(3), joint=BODY.joints[i][0], weight=w)
        for i, w in zip(range(4), (1.0, 2.0, 1.0, 0.5), strict=True)
    ]
    return {
        "ends": ends,  # pose goals and an aim: per-goal residuals
        "grouped": shoulders,  # origin position goals only (batch-last from 64 rows)
        "mixed": [
            ends[-1],
            *shoulders,
            PositionGoal(ends[0].position, point=(0.0, 0.1, 0.0), joint="head"),
        ],
    }


@pytest.mark.parametrize("rows", [1, 5, 80])
@pytest.mark.parametrize("kind", ["ends", "grouped", "mixed"])
def test_columns_are_the_full_jacobians_columns(rows: int, kind: str) -> None:
    rng = np.random.default_rng(rows)
    q = random_poses(BODY, rows, rng)
    goals = _goal_sets(random_poses(BODY, rows, rng))[kind]
    full = SK.evaluate(q, goals)
    assert full.J is not None
    for columns in (
        np.arange(SK.n_dofs),
        np.arange(0, SK.n_dofs, 2),  # includes the root translations 0 and 2
        np.array([SK.n_dofs - 1, 3, 1, 7]),  # any order
        rng.permutation(SK.n_dofs)[:11],
    ):
        memo: dict = {}
        for _ in range(2):  # a second call reuses the memo and the cached column plan
            part = SK.evaluate(q, goals, memo=memo, columns=columns)
            assert part.J is not None
            assert part.J.shape == (rows, full.J.shape[1], columns.size)
            np.testing.assert_allclose(part.J, full.J[:, :, columns], rtol=0.0, atol=1e-14)
            np.testing.assert_array_equal(part.e, full.e)
            np.testing.assert_array_equal(part.goal_error, full.goal_error)


def test_columns_without_jacobian() -> None:
    q = random_poses(BODY, 3, np.random.default_rng(0))
    goals = [
        PoseGoal(np.zeros(3), np.eye(3), joint="hand_l"),
        AimGoal((0, 0, 2), (0, 1, 0), joint="head"),
    ]
    ev = SK.evaluate(q, goals, jacobian=False, columns=np.arange(4))
    assert ev.J is None
    np.testing.assert_array_equal(ev.e, SK.evaluate(q, goals, jacobian=False).e)
