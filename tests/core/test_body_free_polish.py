"""The body finish below a conflict (``core.body.solve._free_polish``): the levels under a
level left unmet are minimised over the DOFs that move no goal above them only, so the
levels above stay exactly as they were (strict priority), and a level is never made worse.
The DOFs it may use (``_moved_goals``) are those whose Jacobian column is zero for every
goal above, checked against finite differences."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import BodySettings, PositionGoal
from core.body.solve import _evaluation_cache, _free_polish, _moved_goals
from tests.fixtures.humanoid import end_goals, humanoid, random_poses

BODY = humanoid()
SK = BODY.skeleton


def _conflict(q: np.ndarray, rng: np.random.Generator) -> tuple:
    """Feet pinned where ``q`` has them (0), the left hand's target 2 m out (1: beyond
    reach, unmet), the head's aim at a point ~0.3 m from where it looks (2)."""
    feet = [
        dataclasses.replace(g, priority=0)
        for g in end_goals(BODY, q)
        if g.joint in ("foot_l", "foot_r")
    ]
    hand = PositionGoal(
        np.array([0.2, 0.0, 1.45]) + 2.0 * np.array([0.0, 1.0, 0.0]), joint="hand_l", priority=1
    )
    head = next(g for g in end_goals(BODY, q) if g.joint == "head")
    aim = dataclasses.replace(head, target=head.target + rng.normal(size=3) * 0.3, priority=2)
    return (*feet, hand, aim)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_levels_above_stay_exact_and_the_level_never_worsens(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q = random_poses(BODY, 1, rng, root=0.2)[0]
    goals = _conflict(q, rng)
    at = _evaluation_cache(SK, goals)
    before = at(q, jacobian=False)
    e_above = before.e[0, : 3 * 4].copy()  # feet (2 × 2 blocks) and the hand (1 block)
    err_before = before.goal_error[0].copy()
    out = _free_polish(SK, at, q.copy(), goals, 1, BodySettings())
    after = at(out, jacobian=False)
    np.testing.assert_array_equal(after.e[0, : 3 * 4], e_above)
    np.testing.assert_array_equal(after.goal_error[0, :3], err_before[:3])
    assert after.goal_error[0, 3] <= err_before[3]
    assert np.all((out >= SK.lower) & (out <= SK.upper))
    moved = np.flatnonzero(out != q)
    assert not _moved_goals(SK, goals)[moved][:, :3].any()


def test_an_aim_the_neck_can_reach_is_met() -> None:
    """The head's aim ~0.3 m off where it looks, the hands in conflict above: the neck and
    head alone meet it (ten stances)."""
    for seed in range(10):
        rng = np.random.default_rng(seed)
        q = random_poses(BODY, 1, rng, root=0.2)[0]
        goals = _conflict(q, rng)
        at = _evaluation_cache(SK, goals)
        out = _free_polish(SK, at, q.copy(), goals, 1, BodySettings())
        assert at(out, jacobian=False).goal_error[0, 3] <= 1e-6, seed


def test_the_dofs_it_uses_move_no_goal_above() -> None:
    rng = np.random.default_rng(3)
    q = random_poses(BODY, 1, rng, root=0.2)[0]
    goals = _conflict(q, rng)
    moves = _moved_goals(SK, goals)
    h = 1e-6
    for i in range(SK.n_dofs):
        dq = np.zeros(SK.n_dofs)
        dq[i] = h
        for gi, goal in enumerate(goals):
            d = SK.errors(q + dq, [goal]) - SK.errors(q - dq, [goal])
            if not moves[i, gi]:
                assert np.all(d == 0.0), (i, gi)
    # the head's aim is moved by the neck and head, none of which moves the feet or hand
    free = ~moves[:, :3].any(axis=1) & moves[:, 3]
    assert free.sum() >= 3
