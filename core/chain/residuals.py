"""Residuals and Jacobian columns of the goals, one function per block kind behind the
small :class:`Residual` protocol (like mink's ``Task.compute_error`` /
``compute_jacobian``), and the row blocks they fill.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

import numpy as np

from ..errors import InvalidGoalError, ShapeMismatchError, format_value
from ..geometry.rotations import axis_angle_of
from ..geometry.vec3 import norm_rows, skew
from ..goals import (
    AimGoal,
    DirectionGoal,
    Goal,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    batch_size,
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
    #: The batch-last path's (N, 4, 3, B) axis frames
    #: (:meth:`~core.chain.kinematics.KinematicPlan.frames_last`) behind ``frames``, or None.
    last: FloatArray | None = field(default=None, repr=False)

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
        f"DirectionGoal or AimGoal, got {format_value(goal)}"
    )


def inv_right_jacobian(phi: FloatArray) -> FloatArray:
    """(B, 3, 3) inverse right Jacobian of SO(3), J_r⁻¹(φ), for rotation vectors φ."""
    theta = norm_rows(phi)
    k = skew(phi)
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
    if arr.ndim == nd or batch_size(goal) is None:
        return arr
    sel = arr if rows is None else arr[rows]
    if sel.shape[0] != b:
        raise ShapeMismatchError(
            f"{type(goal).__name__} is batched with N = {batch_size(goal)} but q has "
            f"{b} rows; they must agree"
        )
    out: FloatArray = sel
    return out


class GoalFrame:
    """What a :class:`Residual` reads for one goal in one evaluation of ``b`` rows.

    ``rotation`` (b, 3, 3) and ``origin`` (b, 3): the goal joint's world frame;
    ``wt`` (b, 3, n): the DOFs' world axes (None when no Jacobian is asked for);
    ``mt`` (b, 3, n): p_d × w_d per DOF, so that w_d × (x − p_d) = mt − [x]× wt (None
    unless a position or aim block needs it); ``target_based``: Buss's alternate
    Jacobian (columns about the target instead of the effector); ``zero_point``: the
    goal's point is the joint origin.
    """

    __slots__ = ("rows", "b", "wt", "mt", "target_based", "rotation", "origin", "zero_point")

    def __init__(
        self,
        rows: IntArray | None,
        b: int,
        wt: FloatArray | None,
        mt: FloatArray | None,
        target_based: bool,
    ) -> None:
        self.rows = rows
        self.b = b
        self.wt = wt
        self.mt = mt
        self.target_based = target_based
        self.rotation: FloatArray = EYE3
        self.origin: FloatArray = EYE3[0]
        self.zero_point = False

    def target(self, goal: Goal, value: object, nd: int = 1) -> FloatArray:
        """The goal's ``value`` for these rows, (b, 3) or (b, 3, 3) (``nd`` = 2)."""
        return goal_rows(goal, value, self.rows, self.b, nd)

    def apply(self, v: FloatArray) -> FloatArray:
        """The joint rotation times a vector v (3,) or (b, 3)."""
        x = self.rotation
        out: FloatArray = x @ v if v.ndim == 1 else (x @ v[..., None])[..., 0]
        return out


class Residual(Protocol):
    """One block kind's residual: ``(error (b, 3), Jacobian columns (b, 3, n) or None)``.

    The error is target minus current (unweighted); the columns are ∂error/∂q up to the
    sign convention of the solvers (J = ∂(current)/∂q), for DOFs above the goal joint
    (the caller masks the others and applies the goal's weight)."""

    def __call__(self, goal: Goal, frame: GoalFrame) -> tuple[FloatArray, FloatArray | None]: ...


def position_residual(goal: Goal, frame: GoalFrame) -> tuple[FloatArray, FloatArray | None]:
    """A point of the joint frame (PositionGoal's ``point``, else the origin) to
    ``position``; columns w_d × (x − p_d)."""
    if frame.zero_point or not isinstance(goal, PositionGoal):
        s = frame.origin
    else:
        s = frame.apply(frame.target(goal, goal.point)) + frame.origin
    tgt = frame.target(goal, goal.position)  # type: ignore[union-attr]
    err = tgt - s
    cols = None
    if frame.wt is not None and frame.mt is not None:
        ref = tgt if frame.target_based else s
        cols = frame.mt - skew(ref) @ frame.wt
    return err, cols


def rotation_residual(goal: Goal, frame: GoalFrame) -> tuple[FloatArray, FloatArray | None]:
    """The joint rotation to ``rotation``: the axis-angle vector of R_t R_jᵀ; columns
    through the inverse right Jacobian of SO(3)."""
    rt = frame.target(goal, goal.rotation, 2)  # type: ignore[union-attr]
    err = rotation_errors(rt, frame.rotation)
    return err, rotation_columns(err, frame)


def rotation_errors(targets: FloatArray, rotations: FloatArray) -> FloatArray:
    """(..., 3) :func:`rotation_residual`'s error, the axis-angle vector of R_t R_jᵀ, of
    target rotations ``targets`` and joint rotations ``rotations`` (..., 3, 3) — one goal's
    rows or several goals' stacked (each matrix by the same operations)."""
    # R_t R_jᵀ of finite rotations: finite, so the unvalidated kernel
    axis, angle = axis_angle_of(targets @ np.swapaxes(rotations, -1, -2))
    err: FloatArray = axis * angle[..., None]
    return err


def rotation_columns(err: FloatArray, frame: GoalFrame) -> FloatArray | None:
    """:func:`rotation_residual`'s Jacobian columns for its error ``err`` (b, 3): through
    the inverse right Jacobian of SO(3) (None without a Jacobian)."""
    if frame.wt is None:
        return None
    cols: FloatArray = inv_right_jacobian(err) @ frame.wt
    return cols


def direction_residual(goal: Goal, frame: GoalFrame) -> tuple[FloatArray, FloatArray | None]:
    """A joint axis to ``direction``: direction − R_j·axis; columns −[a]× w_d."""
    assert isinstance(goal, DirectionGoal | PartialOrientationGoal)
    a = frame.apply(frame.target(goal, goal.axis))
    err = frame.target(goal, goal.direction) - a
    cols = None if frame.wt is None else -(skew(a) @ frame.wt)
    return err, cols


def aim_residual(goal: Goal, frame: GoalFrame) -> tuple[FloatArray, FloatArray | None]:
    """A joint axis through ``origin`` at ``target``: u − a with u the unit vector from the
    ray origin to the target (u = a, error 0, when the target sits on the origin)."""
    assert isinstance(goal, AimGoal)
    a = frame.apply(frame.target(goal, goal.axis))
    o = frame.apply(frame.target(goal, goal.origin)) + frame.origin
    v = frame.target(goal, goal.target) - o
    dist = norm_rows(v)
    hit = dist < MIN_AIM_DISTANCE
    safe = np.where(hit, 1.0, dist)
    u = np.where(hit[:, None], a, v / safe[:, None])
    err: FloatArray = u - a
    cols = None
    if frame.wt is not None and frame.mt is not None:
        dv = frame.mt - skew(o) @ frame.wt  # −∂v/∂q, (b, 3, n)
        proj: FloatArray = dv - u[:, :, None] * (u[:, None, :] @ dv)
        proj = np.where(hit[:, None, None], 0.0, proj / safe[:, None, None])
        cols = proj - skew(a) @ frame.wt
    return err, cols


#: The residual of each block kind.
RESIDUALS: dict[BlockKind, Residual] = {
    BlockKind.POSITION: position_residual,
    BlockKind.ROTATION: rotation_residual,
    BlockKind.DIRECTION: direction_residual,
    BlockKind.AIM: aim_residual,
}
