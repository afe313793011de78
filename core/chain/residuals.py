"""Residuals and Jacobian columns of the goals, one function per block kind behind the
small :class:`Residual` protocol (like mink's ``Task.compute_error`` /
``compute_jacobian``), and the row blocks they fill.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from ..errors import InvalidGoalError, ShapeMismatchError
from ..goals import (
    AimGoal,
    DirectionGoal,
    Goal,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
)
from .joints import FloatArray, IntArray
from .kinematics import EYE3

#: Aim targets closer than this to the ray origin count as hit.
MIN_AIM_DISTANCE = 1e-12


class BlockKind(Enum):
    """What a 3-row block of the residual measures (see the module docstring)."""

    POSITION = "position"
    ROTATION = "rotation"
    DIRECTION = "direction"
    AIM = "aim"


@dataclass(frozen=True)
class RowBlock:
    """Three rows of the stacked residual/Jacobian belonging to one goal.

    Attributes:
        goal: index of the goal in the goal list.
        priority: the goal's priority (0 = most important).
        rows: the rows of ``e`` / ``J`` (a slice of length 3).
        kind: what the rows measure.
        weight: the goal's weight (rows are scaled by sqrt(weight)).
    """

    goal: int
    priority: int
    rows: slice
    kind: BlockKind
    weight: float


@dataclass(frozen=True)
class Evaluation:
    """Everything one evaluation at ``q`` produces (always batched, leading axis B).

    Attributes:
        e: (B, m) weighted residual. J: (B, m, n_dofs) weighted Jacobian (None if not
        requested). goal_error: (B, G) unweighted per-goal errors. blocks: row layout.
        frames: the forward kinematics behind them, for the solvers (internal node
        layout; :meth:`Skeleton.kinematics_of` turns it into joint and DOF frames). The
        batch-last position path makes it on first access (from buffers the next
        evaluation with the same memo overwrites, like the frames themselves).
    """

    e: FloatArray
    J: FloatArray | None
    goal_error: FloatArray
    blocks: tuple[RowBlock, ...]
    source: FloatArray | Callable[[], FloatArray] | None = field(default=None, repr=False)

    @property
    def frames(self) -> FloatArray | None:
        """(B, N, ≥3, 5) node frames (see the class docstring), or None."""
        src = self.source
        return src() if callable(src) else src


def goal_kinds(goal: Goal) -> tuple[BlockKind, ...]:
    if isinstance(goal, PositionGoal):
        return (BlockKind.POSITION,)
    if isinstance(goal, OrientationGoal):
        return (BlockKind.ROTATION,)
    if isinstance(goal, PoseGoal):
        return (BlockKind.POSITION, BlockKind.ROTATION)
    if isinstance(goal, PartialOrientationGoal):
        return (BlockKind.POSITION, BlockKind.DIRECTION)
    if isinstance(goal, DirectionGoal):
        return (BlockKind.DIRECTION,)
    if isinstance(goal, AimGoal):
        return (BlockKind.AIM,)
    raise InvalidGoalError(
        f"goal must be a PositionGoal, OrientationGoal, PoseGoal, PartialOrientationGoal, "
        f"DirectionGoal or AimGoal, got {goal!r}"
    )


def inv_right_jacobian(phi: FloatArray) -> FloatArray:
    """(B, 3, 3) inverse right Jacobian of SO(3), J_r⁻¹(φ), for rotation vectors φ."""
    theta = np.sqrt(np.sum(phi * phi, axis=-1))
    k = np.zeros(phi.shape[:-1] + (3, 3))
    k[..., 0, 1] = -phi[..., 2]
    k[..., 0, 2] = phi[..., 1]
    k[..., 1, 0] = phi[..., 2]
    k[..., 1, 2] = -phi[..., 0]
    k[..., 2, 0] = -phi[..., 1]
    k[..., 2, 1] = phi[..., 0]
    small = theta < 1e-4
    t = np.where(small, 1.0, theta)
    s = np.maximum(np.sin(t), 1e-12)
    c = np.where(
        small,
        1.0 / 12.0 + theta * theta / 720.0,
        1.0 / (t * t) - (1.0 + np.cos(t)) / (2.0 * t * s),
    )
    out: FloatArray = EYE3 + 0.5 * k + c[..., None, None] * (k @ k)
    return out


def goal_rows(goal: Goal, value: object, rows: IntArray | None, b: int, nd: int = 1) -> FloatArray:
    """A goal's target array for the b rows being evaluated: shared arrays (unbatched
    ndim ``nd``) as they are, to broadcast against the rows; batched ones at ``rows`` (all
    N rows when None). ShapeMismatchError when that is not b rows."""
    arr = np.asarray(value)
    if goal._n is None or arr.ndim == nd:
        return arr
    sel = arr if rows is None else arr[rows]
    if sel.shape[0] != b:
        raise ShapeMismatchError(
            f"{type(goal).__name__} is batched with N = {goal._n} but q has "
            f"{b} rows; they must agree"
        )
    out: FloatArray = sel
    return out
