"""``core.trusted_goal``: the goal the validating constructors make from values already in
validated form, and their error for a non-finite value."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core.goals import batch_size


def _same_fields(got: object, ref: object) -> None:
    """Every attribute the validating constructor sets, set alike (a field added to the
    goal classes must reach trusted_goal too)."""
    assert vars(got).keys() == vars(ref).keys()
    for name, value in vars(ref).items():
        assert np.array_equal(np.asarray(getattr(got, name), dtype=object),
                              np.asarray(value, dtype=object)), name


def _rigid(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return core.orthonormalize_yz(np.eye(4) + 0.3 * rng.normal(size=(4, 4)))


@pytest.mark.parametrize("seed", range(5))
def test_pose_goal_equals_the_validated_one(seed: int) -> None:
    g = _rigid(seed)
    got = core.trusted_goal(g[:3, 3], g[:3, :3])
    ref = core.PoseGoal(position=g[:3, 3], rotation=g[:3, :3])
    assert type(got) is core.PoseGoal
    _same_fields(got, ref)
    assert (got.joint, got.weight, got.priority, batch_size(got)) == (None, 1.0, 0, None)
    a, b = np.eye(4), np.eye(4)
    a[1, 3], b[1, 3] = 0.3, 0.25
    limb = core.Limb(a=a, b=b, elbow_axis=(1.0, 0.0, 0.0))
    s1, s2 = core.solve_limb(limb, got, swivel=0.2), core.solve_limb(limb, ref, swivel=0.2)
    assert np.array_equal(s1.shoulder, s2.shoulder) and s1.elbow == s2.elbow


def test_position_goal_equals_the_validated_one() -> None:
    g = _rigid(7)
    got = core.trusted_goal(g[:3, 3])
    ref = core.PositionGoal(position=g[:3, 3])
    assert type(got) is core.PositionGoal
    _same_fields(got, ref)
    assert (got.joint, got.weight, got.priority, batch_size(got)) == (None, 1.0, 0, None)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_raise_like_the_constructors(bad: float) -> None:
    g = _rigid(3)
    p = g[:3, 3].copy()
    p[1] = bad
    with pytest.raises(core.InvalidGoalError, match="position"):
        core.trusted_goal(p)
    with pytest.raises(core.InvalidGoalError, match="position"):
        core.trusted_goal(p, g[:3, :3])
    r = g[:3, :3].copy()
    r[2, 0] = bad
    with pytest.raises(core.InvalidGoalError, match="rotation"):
        core.trusted_goal(g[:3, 3], r)
