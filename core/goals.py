"""Goals shared by the analytic limb solver and the numeric chain/tree solvers.

Every goal is a frozen dataclass validated on construction. Targets are float64 arrays
with an optional leading batch axis N (one goal per problem of a batched solve); all
arrays of one goal share the same N (or have none).

Frames: for the limb solver (:func:`core.solve_limb`) targets are in the *shoulder frame*
and ``joint`` must be None (the limb's end effector is meant). For the numeric solvers
(:func:`core.solve`) targets are in the skeleton's root (world) frame and ``joint`` names
the joint (index or name) whose frame the goal acts on. Units: metres, radians.

Common fields:
    joint: int index or str name of the joint (numeric solvers); None for limbs.
    weight: relative weight ≥ 0 of the goal's error in least-squares methods; default 1.
    priority: 0 = most important; larger numbers are satisfied only in the null space of
        smaller ones by the task-priority solver; default 0.

Raises :class:`InvalidGoalError` for non-finite values, bad shapes, non-rotations,
non-unit or zero axes (tolerance :data:`UNIT_TOLERANCE`), negative weights or
priorities, and :class:`ShapeMismatchError` for disagreeing batch sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InvalidGoalError, ShapeMismatchError, format_value
from .geometry.rotations import check_rotation, single_rotation_ok
from .geometry.vec3 import norm_rows

FloatArray = NDArray[np.float64]

__all__ = [
    "PositionGoal",
    "PoseGoal",
    "OrientationGoal",
    "PartialOrientationGoal",
    "DirectionGoal",
    "AimGoal",
    "Goal",
    "ROTATION_TOLERANCE",
    "UNIT_TOLERANCE",
    "MAX_COORDINATE",
    "batch_size",
    "trusted_goal",
]

#: Max |RᵀR − I| accepted for a goal rotation matrix.
ROTATION_TOLERANCE = 1e-6
#: Max | |axis| − 1 | accepted for a goal's unit vectors.
UNIT_TOLERANCE = 1e-6
#: Largest coordinate magnitude (m) accepted for a goal's points (position, point,
#: target, origin) and, in :mod:`core.skeleton` / :mod:`core.limb`, for the skeleton's
#: joint offsets and the limb's segments: 1e12 m. Beyond it squared distances (≈ 1e24
#: times the solvers' fourth-order terms) leave float64's exact range and, above ~1e154,
#: overflow, which made every solver report ``reached=True, error=0``; the bound keeps
#: every result finite and honest with margin. Larger values raise InvalidGoalError.
MAX_COORDINATE = 1e12


def _array(value: ArrayLike, name: str) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidGoalError(f"{name} must be numeric, got {format_value(value)}") from exc
    if not np.isfinite(arr).all():
        raise InvalidGoalError(f"{name} must be finite, got {format_value(arr)}")
    return arr


#: The default ``point``/``origin`` (0, 0, 0), validated once and shared read-only.
_ZERO3_DEFAULT = (0.0, 0.0, 0.0)
_ZERO3 = np.zeros(3)
_ZERO3.flags.writeable = False


def _vector(value: ArrayLike, name: str) -> tuple[FloatArray, int | None]:
    if value is _ZERO3_DEFAULT:
        return _ZERO3, None
    if type(value) is np.ndarray and value.shape == (3,) and value.dtype == np.float64:
        # one float64 point (a live solve's goal): the checks below on Python floats
        x, y, z = value.tolist()
        if math.isfinite(x + y + z) and max(abs(x), abs(y), abs(z)) <= MAX_COORDINATE:
            return value, None
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidGoalError(f"{name} must be numeric, got {format_value(value)}") from exc
    big = float(np.abs(v).max(initial=0.0))  # NaN where any is NaN
    bad_shape = v.ndim not in (1, 2) or v.shape[-1] != 3
    if not big <= MAX_COORDINATE:  # one test for NaN, ±inf and too large
        _array(v, name)  # NaN or ±inf: "must be finite"
    if bad_shape:
        raise InvalidGoalError(f"{name} must have shape (3,) or (N, 3), got {v.shape}")
    if big > MAX_COORDINATE:
        raise InvalidGoalError(
            f"{name} coordinates must be within ±{MAX_COORDINATE:g} m "
            f"(core.goals.MAX_COORDINATE), got magnitude {big:g}"
        )
    return v, (None if v.ndim == 1 else int(v.shape[0]))


def _unit(value: ArrayLike, name: str) -> tuple[FloatArray, int | None]:
    v, n = _vector(value, name)
    norm = norm_rows(v)
    bad = np.abs(norm - 1.0) > UNIT_TOLERANCE
    if bad.any():
        worst = float(np.max(np.abs(norm - 1.0)))
        raise InvalidGoalError(
            f"{name} must be a unit vector (|v| = 1 ± {UNIT_TOLERANCE}), got norm "
            f"{format_value(float(np.ravel(norm)[int(np.argmax(np.abs(np.ravel(norm) - 1.0)))]))} "
            f"(off by {worst:.3g}); normalise it first"
        )
    return v / norm[..., None], n


def _rotation(value: ArrayLike, name: str) -> tuple[FloatArray, int | None]:
    if (
        type(value) is np.ndarray
        and value.shape == (3, 3)
        and value.dtype == np.float64
        and single_rotation_ok(value, ROTATION_TOLERANCE)
    ):
        return value, None  # one float64 rotation, checked on floats (False for NaN/inf)
    r = _array(value, name)
    if r.ndim not in (2, 3) or r.shape[-2:] != (3, 3):
        raise InvalidGoalError(f"{name} must have shape (3, 3) or (N, 3, 3), got {r.shape}")
    check_rotation(r, tol=ROTATION_TOLERANCE, name=name, error=InvalidGoalError)
    return r, (None if r.ndim == 2 else int(r.shape[0]))


def _common(goal: Any, sizes: dict[str, int | None]) -> None:
    """Validate joint/weight/priority, agree batch sizes, store ``_n``."""
    w, p = goal.weight, goal.priority
    if (
        goal.joint is None
        and type(w) is float
        and 0.0 <= w <= 1e12
        and type(p) is int
        and p >= 0
        and all(v is None for v in sizes.values())
    ):
        object.__setattr__(goal, "_n", None)  # the common single goal: nothing to convert
        return
    cls = type(goal).__name__
    batched = {k: v for k, v in sizes.items() if v is not None}
    if len(set(batched.values())) > 1:
        raise ShapeMismatchError(f"{cls} batch sizes must agree, got {batched}")
    j = goal.joint
    if j is not None and (not isinstance(j, int | str | np.integer) or isinstance(j, bool)):
        raise InvalidGoalError(
            f"{cls}.joint must be an int index, a str name or None, got {format_value(j)}"
        )
    w = goal.weight
    ok = isinstance(w, int | float | np.integer | np.floating) and not isinstance(w, bool)
    w = float(w) if ok else -1.0
    if not np.isfinite(w) or w < 0.0 or w > 1e12:
        raise InvalidGoalError(
            f"{cls}.weight must be a number in [0, 1e12], got {format_value(goal.weight)}"
        )
    p = goal.priority
    if not isinstance(p, int | np.integer) or isinstance(p, bool) or p < 0:
        raise InvalidGoalError(f"{cls}.priority must be an int >= 0, got {format_value(p)}")
    object.__setattr__(goal, "weight", w)
    object.__setattr__(goal, "priority", int(p))
    object.__setattr__(goal, "_n", next(iter(batched.values())) if batched else None)


def batch_size(goal: Any) -> int | None:
    """The batch size N of a validated goal (its fields' common leading axis), or None
    for a single goal."""
    n: int | None = goal._n
    return n


@dataclass(frozen=True, eq=False)
class PositionGoal:
    """A point of a joint frame (limbs: the end effector) goes to ``position``.

    Attributes:
        position: target (3,) or (N, 3), metres.
        joint: see the module docstring.
        point: the point in the joint's frame (metres); default its origin. For limbs, a
            point in the end-effector frame.
    """

    position: ArrayLike
    joint: int | str | None = None
    point: ArrayLike = _ZERO3_DEFAULT
    weight: float = 1.0
    priority: int = 0
    _n: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        p, n_p = _vector(self.position, "PositionGoal.position")
        q, n_q = _vector(self.point, "PositionGoal.point")
        object.__setattr__(self, "position", p)
        object.__setattr__(self, "point", q)
        _common(self, {"position": n_p, "point": n_q})


@dataclass(frozen=True, eq=False)
class OrientationGoal:
    """A joint frame's rotation goes to ``rotation`` ((3, 3) or (N, 3, 3))."""

    rotation: ArrayLike
    joint: int | str | None = None
    weight: float = 1.0
    priority: int = 0
    _n: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        r, n_r = _rotation(self.rotation, "OrientationGoal.rotation")
        object.__setattr__(self, "rotation", r)
        _common(self, {"rotation": n_r})


@dataclass(frozen=True, eq=False)
class PoseGoal:
    """A joint frame (limbs: the effector frame) goes to (``position``, ``rotation``).

    Attributes:
        position: (3,) or (N, 3), metres. rotation: (3, 3) or (N, 3, 3).
    """

    position: ArrayLike
    rotation: ArrayLike
    joint: int | str | None = None
    weight: float = 1.0
    priority: int = 0
    _n: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        p, n_p = _vector(self.position, "PoseGoal.position")
        r, n_r = _rotation(self.rotation, "PoseGoal.rotation")
        object.__setattr__(self, "position", p)
        object.__setattr__(self, "rotation", r)
        _common(self, {"position": n_p, "rotation": n_r})


@dataclass(frozen=True, eq=False)
class PartialOrientationGoal:
    """Position plus one aligned axis (Tolani §3.3); rotation about the axis is free.

    Attributes:
        position: where the joint's origin (limbs: the end-effector point) goes, (3,) or
            (N, 3), metres.
        axis: unit vector in the joint's (effector's) frame, e.g. (0, 1, 0).
        direction: unit vector in the target frame that ``axis`` must align with.
    """

    position: ArrayLike
    axis: ArrayLike
    direction: ArrayLike
    joint: int | str | None = None
    weight: float = 1.0
    priority: int = 0
    _n: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        p, n_p = _vector(self.position, "PartialOrientationGoal.position")
        a, n_a = _unit(self.axis, "PartialOrientationGoal.axis")
        d, n_d = _unit(self.direction, "PartialOrientationGoal.direction")
        object.__setattr__(self, "position", p)
        object.__setattr__(self, "axis", a)
        object.__setattr__(self, "direction", d)
        _common(self, {"position": n_p, "axis": n_a, "direction": n_d})


@dataclass(frozen=True, eq=False)
class DirectionGoal:
    """A joint's ``axis`` (unit, joint frame) aligns with ``direction`` (unit); no position."""

    axis: ArrayLike
    direction: ArrayLike
    joint: int | str | None = None
    weight: float = 1.0
    priority: int = 0
    _n: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        a, n_a = _unit(self.axis, "DirectionGoal.axis")
        d, n_d = _unit(self.direction, "DirectionGoal.direction")
        object.__setattr__(self, "axis", a)
        object.__setattr__(self, "direction", d)
        _common(self, {"axis": n_a, "direction": n_d})


@dataclass(frozen=True, eq=False)
class AimGoal:
    """The ray from ``origin`` along ``axis`` (both in the joint's / effector's frame)
    passes through ``target`` (Tolani §3.4).

    Attributes:
        target: (3,) or (N, 3), metres, in the target frame.
        axis: unit vector, joint (effector) frame.
        origin: the ray's start in the joint (effector) frame; default its origin.
    """

    target: ArrayLike
    axis: ArrayLike
    origin: ArrayLike = _ZERO3_DEFAULT
    joint: int | str | None = None
    weight: float = 1.0
    priority: int = 0
    _n: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        t, n_t = _vector(self.target, "AimGoal.target")
        a, n_a = _unit(self.axis, "AimGoal.axis")
        o, n_o = _vector(self.origin, "AimGoal.origin")
        object.__setattr__(self, "target", t)
        object.__setattr__(self, "axis", a)
        object.__setattr__(self, "origin", o)
        _common(self, {"target": n_t, "axis": n_a, "origin": n_o})


Goal = PositionGoal | OrientationGoal | PoseGoal | PartialOrientationGoal | DirectionGoal | AimGoal


def trusted_goal(position: FloatArray, rotation: FloatArray | None = None
                 ) -> PositionGoal | PoseGoal:
    """A single limb goal (``joint`` None, weight 1, priority 0) from values its
    validation would return unchanged, made without that validation: a
    :class:`PoseGoal` for ``rotation`` given, else a :class:`PositionGoal` (its origin
    point).

    For callers that have already produced the values in validated form: ``position``
    a (3,) float64 array, ``rotation`` a (3, 3) float64 rotation (orthonormal within
    :data:`ROTATION_TOLERANCE`, e.g. :func:`core.goal_in_frame`'s). Only finiteness
    is checked here (on Python floats): a non-finite value goes through the validating
    constructor, which raises :class:`InvalidGoalError` naming it. Anything else
    unchecked is the caller's contract; user input goes through the constructors.
    """
    x, y, z = position.tolist()
    if rotation is None:
        if not math.isfinite(x + y + z):
            return PositionGoal(position=position)
        goal: PositionGoal | PoseGoal = object.__new__(PositionGoal)
        goal.__dict__.update(position=position, point=_ZERO3, joint=None, weight=1.0,
                             priority=0, _n=None)
        return goal
    (a, b, c), (d, e, f), (g, h, i) = rotation.tolist()
    if not math.isfinite(x + y + z + a + b + c + d + e + f + g + h + i):
        return PoseGoal(position=position, rotation=rotation)
    goal = object.__new__(PoseGoal)
    goal.__dict__.update(position=position, rotation=rotation, joint=None, weight=1.0,
                         priority=0, _n=None)
    return goal
