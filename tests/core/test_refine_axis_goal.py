"""refine_axis_goal: a partial or aim goal corrected through the frame the model gave
lands in one step when what is reached differs from the model by a constant rotation
(a bone that does not inherit rotation, a constraint)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import axis_angle_to_matrix, refine_axis_goal


def _frame(rng: np.random.Generator) -> np.ndarray:
    m = np.eye(4)
    axis = rng.normal(size=3)
    m[:3, :3] = axis_angle_to_matrix(axis / np.linalg.norm(axis), rng.uniform(-3.0, 3.0))
    m[:3, 3] = rng.normal(size=3)
    return m


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_partial_goal_lands_in_one_step(seed: int) -> None:
    rng = np.random.default_rng(seed)
    axis = np.eye(3)[rng.integers(3)] * rng.choice((-1.0, 1.0))
    goal, target, q = _frame(rng), _frame(rng), _frame(rng)[:3, :3]
    model = goal.copy()  # the model meets the goal's axis, with a twist of its own
    model[:3, :3] = goal[:3, :3] @ axis_angle_to_matrix(axis, rng.uniform(-3.0, 3.0))
    reached = model.copy()
    reached[:3, :3] = q @ model[:3, :3]
    reached[:3, 3] += rng.normal(size=3) * 0.1
    new = refine_axis_goal(goal, reached, target, model)
    # the model points the axis along the new goal's; the reached one is q of it
    np.testing.assert_allclose(q @ new[:3, :3] @ axis, target[:3, :3] @ axis, atol=1e-12)
    np.testing.assert_allclose(new[:3, 3], goal[:3, 3] + target[:3, 3] - reached[:3, 3],
                               atol=1e-12)
    np.testing.assert_allclose(new[:3, :3] @ new[:3, :3].T, np.eye(3), atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_aim_goal_lands_in_one_step(seed: int) -> None:
    rng = np.random.default_rng(seed)
    goal, target, model, q = _frame(rng), _frame(rng), _frame(rng), _frame(rng)[:3, :3]
    reached = model.copy()
    reached[:3, :3] = q @ model[:3, :3]
    new = refine_axis_goal(goal, reached, target, model, aim=True)
    head = model[:3, 3]
    d = new[:3, 3] - head  # the direction the model aims along next
    assert np.isclose(np.linalg.norm(d), np.linalg.norm(goal[:3, 3] - head))
    want = target[:3, 3] - reached[:3, 3]
    got = q @ d
    np.testing.assert_allclose(got / np.linalg.norm(got), want / np.linalg.norm(want),
                               atol=1e-12)
    np.testing.assert_array_equal(new[:3, :3], goal[:3, :3])


def test_batches_broadcast() -> None:
    rng = np.random.default_rng(1)
    frames = np.stack([_frame(rng) for _ in range(12)]).reshape(4, 3, 4, 4)
    out = refine_axis_goal(frames[0], frames[1], frames[2], frames[3])
    assert out.shape == (3, 4, 4)
    one = refine_axis_goal(frames[0, 2], frames[1, 2], frames[2, 2], frames[3, 2])
    np.testing.assert_allclose(out[2], one, atol=1e-15)
