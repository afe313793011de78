"""solve_body keeps its plan (which limbs are analytic, the numeric level's unknowns and
constants) on the Body per goal structure and settings: new goal objects of the same
structure reuse it, anything the plan reads makes a new one, and a kept plan solves
exactly as a fresh one."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import threading

import numpy as np

from core import BodySettings, PositionGoal, solve_body
from core.body.model import plan_store
from core.body.solve import _PLANS_KEPT, _cached_plan
from tests.fixtures.humanoid import end_goals, humanoid, random_poses


def _frames(n: int) -> np.ndarray:
    body = humanoid()
    return random_poses(body, n, np.random.default_rng(7))


def test_same_structure_reuses_the_plan_and_solves_as_a_fresh_body() -> None:
    body = humanoid()
    q = _frames(3)
    settings = BodySettings()
    first = _cached_plan(body, tuple(end_goals(body, q[1])), settings)
    again = _cached_plan(body, tuple(end_goals(body, q[2])), BodySettings())
    assert again is first
    kept = solve_body(body, end_goals(body, q[2]), q[0])
    fresh_body = humanoid()
    fresh = solve_body(fresh_body, end_goals(fresh_body, q[2]), q[0])
    np.testing.assert_array_equal(kept.q, fresh.q)
    assert kept.iterations == fresh.iterations


def test_what_the_plan_reads_makes_a_new_plan() -> None:
    body = humanoid()
    q = _frames(2)[1]
    settings = BodySettings()
    goals = end_goals(body, q)
    base = _cached_plan(body, tuple(goals), settings)
    heavier = [dataclasses.replace(goals[0], weight=2.0), *goals[1:]]
    lower = [dataclasses.replace(goals[0], priority=1), *goals[1:]]
    for other in (heavier, lower):
        assert _cached_plan(body, tuple(other), settings) is not base
    rest = np.zeros(body.skeleton.n_dofs)
    with_rest = BodySettings(q_rest=rest)
    plan_rest = _cached_plan(body, tuple(goals), with_rest)
    rest[3] = 0.1  # the settings' array changed in place: a new plan
    assert _cached_plan(body, tuple(goals), with_rest) is not plan_rest
    margin = BodySettings(shell_margin=1e-3)
    assert _cached_plan(body, tuple(goals), margin) is not base
    # a PositionGoal's point is read by the plan (the limb's effector)
    sk = body.skeleton
    hand = sk.joint_index(body.limbs[0].end)
    pos = sk.forward(q)[hand, :3, 3]
    at_joint = [PositionGoal(pos, joint=hand), *goals[1:]]
    off_joint = [PositionGoal(pos, point=(0.0, 0.05, 0.0), joint=hand), *goals[1:]]
    assert _cached_plan(body, tuple(at_joint), settings) is not _cached_plan(
        body, tuple(off_joint), settings
    )


def test_plans_kept_are_bounded() -> None:
    body = humanoid()
    goals = end_goals(body, _frames(2)[1])
    for i in range(2 * _PLANS_KEPT):
        _cached_plan(body, tuple(goals), BodySettings(shell_margin=1e-4 * (i + 1)))
    assert len(plan_store(body)) == _PLANS_KEPT


def test_threads_sharing_a_body_solve_as_one_thread() -> None:
    """Solves on one Body from several threads, with more goal structures than it keeps
    (so plans are dropped while others are read), give what a lone solve gives."""
    body = humanoid()
    q = _frames(3)
    goals = end_goals(body, q[1])
    structures = [
        [dataclasses.replace(goals[0], weight=1.0 + 0.5 * k), *goals[1:]]
        for k in range(_PLANS_KEPT + 4)
    ]
    expected = [solve_body(humanoid(), s, q[0]).q for s in structures]
    failures: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(len(structures)):
                k = (i + offset) % len(structures)
                np.testing.assert_array_equal(solve_body(body, structures[k], q[0]).q, expected[k])
        except BaseException as exc:  # noqa: BLE001 (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert len(plan_store(body)) <= _PLANS_KEPT + len(threads)


def test_a_body_that_has_solved_pickles_and_copies_and_solves_the_same() -> None:
    """What a solve keeps on the Body and its Skeleton (plans, each thread's forward-
    kinematics buffers) does not stop it going to another process or being copied."""
    body = humanoid()
    q = _frames(3)
    first = solve_body(body, end_goals(body, q[1]), q[0])
    body.skeleton.goal_errors(q[:1], end_goals(body, q[1]))
    for other in (pickle.loads(pickle.dumps(body)), copy.deepcopy(body)):
        again = solve_body(other, end_goals(other, q[1]), q[0])
        np.testing.assert_array_equal(again.q, first.q)
        np.testing.assert_array_equal(
            other.skeleton.kinematics(q[:2])[1], body.skeleton.kinematics(q[:2])[1]
        )
