"""Helpers shared by the step modules."""

from __future__ import annotations

import numpy as np

from ...goals import Goal
from ..loop import FloatArray, StepState
from ..skeleton import Skeleton


def dof_bounds(state: StepState) -> tuple[FloatArray, FloatArray]:
    """(b, n) lower/upper bounds of this step: limits (if used) ∩ trust box ±max_step."""
    st = state.settings
    q = state.q
    lo = q - st.max_step
    hi = q + st.max_step
    if st.use_limits:
        lo = np.maximum(lo, state.skeleton.lower)
        hi = np.minimum(hi, state.skeleton.upper)
    return lo, hi


def goal_joints(skeleton: Skeleton, goals: tuple[Goal, ...]) -> list[int]:
    return [skeleton.joint_index(g.joint) for g in goals]  # type: ignore[arg-type]
