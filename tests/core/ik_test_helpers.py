"""Problems shared by the numeric-IK test modules (test_ik.py, test_ik_methods.py)."""

from __future__ import annotations

import numpy as np

from core import PoseGoal, PositionGoal, SolveSettings, StepState
from tests.fixtures import arm_chain, buss_double_y, buss_y

#: The fixtures the iteration budgets are stated for.
FIXTURES = {"arm": arm_chain, "Y": buss_y, "double-Y": buss_double_y}


def reachable_goals(fx, batch=8, seed=42, scale=0.5, position_only=False):
    """Goals at FK of random configurations near the fixture's q0 (always reachable):
    (goals, q0 tiled to the batch, the configurations)."""
    sk = fx.skeleton
    rng = np.random.default_rng(seed)
    qs = fx.q0 + rng.uniform(-scale, scale, size=(batch, sk.n_dofs))
    F = sk.forward(qs)
    out = []
    for g in fx.goals:
        j = sk.joint_index(g.joint)
        if isinstance(g, PoseGoal) and not position_only:
            out.append(PoseGoal(F[:, j, :3, 3], F[:, j, :3, :3], joint=g.joint))
        else:
            out.append(PositionGoal(F[:, j, :3, 3], joint=g.joint))
    return out, np.tile(fx.q0, (batch, 1)), qs


def single(goal, b):
    """Row ``b`` of a batched position or pose goal."""
    if isinstance(goal, PoseGoal):
        return PoseGoal(goal.position[b], goal.rotation[b], joint=goal.joint)
    return PositionGoal(goal.position[b], joint=goal.joint)


def step_state(sk, goals, q, settings=None):
    """The StepState the loop would hand a step at batched q (b, n) on its first
    iteration (previous_e NaN); ``evaluate`` returns the evaluation at q whatever it is
    given (for steps that do not re-evaluate)."""
    settings = SolveSettings() if settings is None else settings
    ev = sk.evaluate(q, goals, target_based=settings.target_jacobian)
    return StepState(
        q=q,
        e=ev.e,
        J=ev.J,
        goal_error=ev.goal_error,
        previous_e=np.full_like(ev.e, np.nan),
        blocks=ev.blocks,
        rows=np.arange(q.shape[0]),
        iteration=0,
        skeleton=sk,
        goals=tuple(goals),
        settings=settings,
        evaluate=lambda x: (ev.e, ev.J, ev.goal_error),
    )
