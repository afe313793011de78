"""Full-body IK (core.body): one shell per goaled limb with a hysteresis. A goal inside the
limb's true shell is met where it is (nothing pulls it inward by the margin); a goal
farther outside than ``BodySettings.shell_margin`` is pushed to the shell shrunk by it, one
outside by less (float32 rounding, a held goal's drift) just inside. Straight legs (a
T-pose, a standing frame) with the feet pinned and the pelvis pinned below them are then
no conflict: the numeric level settles in the warm path, no whole-body pass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import BodySettings, Goal, solve_body
from core.body.solve import _DRIFT_INSET, _shell_target
from tests.core.test_body_repeat import _beyond_reach, _swivels
from tests.fixtures.humanoid import end_goals, humanoid

BODY = humanoid()
SK = BODY.skeleton
LEGS = [k for k, bl in enumerate(BODY.limbs) if bl.name.startswith("leg")]


def _leg_lengths(q: np.ndarray) -> np.ndarray:
    """Each leg's hip–ankle distance at ``q``."""
    _, org, _, _ = SK.kinematics(q[None])
    return np.array(
        [np.linalg.norm(org[0, BODY.joints[k][2]] - org[0, BODY.joints[k][0]]) for k in LEGS]
    )


@pytest.mark.parametrize("float32", [False, True])
def test_straight_legs_under_a_pinned_pelvis_settle_in_the_warm_path(float32: bool) -> None:
    # the rest pose: both legs exactly straight, their ankles on the true shell's boundary
    # (``float32``: every target rounded as Blender stores it, so the ankles' goals lie a
    # rounding error inside or outside it)
    q = np.zeros(SK.n_dofs)
    np.testing.assert_allclose(_leg_lengths(q), [BODY.shells[k][1] for k in LEGS], rtol=1e-15)
    pelvis = SK.dof_slices[SK.joint_index("pelvis")]
    # feet pinned at priority 0, hands at 1, the head's aim at 2, the pelvis at 3; the
    # left hand dragged forward and down, each frame warm-started; past 1.0 the arm
    # alone is too short and the clavicle and spine lean (the legs' ankles drift out of
    # their shells by second order: brought back just inside, not by the margin)
    for reach in (0.9, 0.94, 0.98, 1.0, 1.015, 1.03):
        goals = _beyond_reach(BODY, np.zeros(SK.n_dofs), 1.0, reach, np.array([0.3, -0.5, 0.2]))
        if float32:
            goals = [_rounded(g) for g in goals]
        sol = solve_body(BODY, goals, q, BodySettings(swivel=_swivels(BODY, q)))
        # the warm path's minimum-norm steps alone (a whole-body pass or the rest-term
        # solve would add their iterations): the pelvis pin costs nothing
        assert sol.iterations <= (2 if reach <= 1.0 else 6), reach
        assert sol.reason.name == "REACHED"
        assert sol.reached.all() and sol.within_limits
        if reach <= 1.0 and not float32:
            np.testing.assert_array_equal(sol.q[pelvis], q[pelvis])
            assert sol.goal_error[-1] <= 1e-12
        for k, bl in enumerate(BODY.limbs):
            assert sol.limb_reached[k], bl.name
            assert sol.goal_error[[g.joint for g in goals].index(_end(k))] <= 1e-9
        q = sol.q


def _rounded(goal: Goal) -> Goal:
    """``goal`` with its targets rounded to float32."""
    fields = ("position", "rotation", "target")
    return dataclasses.replace(
        goal,
        **{
            f: np.asarray(getattr(goal, f), dtype=np.float32).astype(np.float64)
            for f in fields
            if hasattr(goal, f)
        },
    )


def _end(k: int) -> str:
    return SK.joints[BODY.joints[k][2]].name


@pytest.mark.parametrize("drop", [0.0, 1e-5, 1e-3])
def test_feet_below_straight_legs(drop: float) -> None:
    # the feet pinned ``drop`` m below the straight legs, the pelvis free. On the
    # boundary (drop 0) nothing moves; less than the margin beyond it (1e-5 m, 1.1e-5 of
    # the leg) the body lowers the pelvis until each ankle lies just inside its shell;
    # farther out, until each ankle lies the margin inside
    q = np.zeros(SK.n_dofs)
    goals = [
        dataclasses.replace(g, position=np.asarray(g.position) - [0.0, 0.0, drop])
        for g in end_goals(BODY, q)
        if g.joint.startswith("foot")
    ]
    bs = BodySettings()
    sol = solve_body(BODY, goals, q, bs)
    assert sol.reached.all() and sol.within_limits and sol.reason.name == "REACHED"
    assert sol.goal_error.max() <= 1e-9
    assert all(sol.limb_reached[k] for k in LEGS)
    d_max = np.array([BODY.shells[k][1] for k in LEGS])
    length = np.array([BODY.models[k].length for k in LEGS])
    if drop == 0.0:
        assert sol.iterations == 1
        np.testing.assert_array_equal(sol.q, q)
        return
    if drop > bs.shell_margin * length.min():  # pushed: met within the tolerance
        np.testing.assert_allclose(
            _leg_lengths(sol.q), d_max - bs.shell_margin * length, atol=bs.tolerance
        )
    else:  # a near miss: brought 1e-7 of the length inside by one Newton step
        np.testing.assert_allclose(_leg_lengths(sol.q), d_max - _DRIFT_INSET * length, atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(
    d=st.lists(st.floats(0.0, 2.0), min_size=4, max_size=4),
    was=st.one_of(st.none(), st.lists(st.booleans(), min_size=4, max_size=4)),
)
def test_shell_target_hysteresis(d: list[float], was: list[bool] | None) -> None:
    # true shell [0.5, 1.5], shrunk shell [0.6, 1.4] (margin 0.1), inset 0.01
    lo, hi = np.full(4, 0.6), np.full(4, 1.4)
    shells = (lo, hi, np.full(4, 0.5), np.full(4, 1.5), np.full(4, 0.01))
    dist = np.array([d])
    before = None if was is None else np.array([was])
    c, push = _shell_target(dist, before, shells, 1e-6)
    inside = (dist >= 0.5) & (dist <= 1.5)
    far = (dist < 0.4) | (dist > 1.6)
    on_shrunk = (dist >= 0.6 - 1e-6) & (dist <= 1.4 + 1e-6)
    # pushed to the shrunk shell: farther out than the margin, or pushed before and not
    # on the shrunk shell yet; a goal out by less is brought just inside the true shell;
    # inside it, a goal not pushed is met where it is
    want = far if before is None else far | (before & ~on_shrunk)
    np.testing.assert_array_equal(push, want)
    near_miss = ~inside & ~push
    np.testing.assert_array_equal(
        c,
        np.where(push, np.clip(dist, lo, hi), np.where(near_miss, np.clip(dist, 0.51, 1.49), dist)),
    )
    if not push.any() and not near_miss.any():
        assert c is dist
