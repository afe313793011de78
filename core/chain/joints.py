"""Joints of a skeleton: the DOF kinds (:class:`Ball`, :class:`Hinge`, :class:`Fixed`,
:class:`Free`) and :class:`Joint` (a node of the tree, its rest transform, DOFs and limits).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import (
    InvalidInputError,
    InvalidLimitsError,
    InvalidSkeletonError,
    finite_array,
    format_value,
)
from ..geometry.rotations import check_order, check_rotation
from ..goals import MAX_COORDINATE

FloatArray = NDArray[np.float64]

BoolArray = NDArray[np.bool_]

IntArray = NDArray[np.intp]

#: Hinge axes shorter than this are rejected.
_MIN_AXIS = 1e-9

AXES = {"X": 0, "Y": 1, "Z": 2}


def _limits(
    lower: ArrayLike | None, upper: ArrayLike | None, size: int, name: str
) -> tuple[FloatArray, FloatArray]:
    """Limits as float arrays of ``size`` (None / NaN-free ±inf meaning free)."""

    def one(value: ArrayLike | None, default: float, which: str) -> FloatArray:
        if value is None:
            return np.full(size, default)
        try:
            arr = np.array(
                [default if v is None else v for v in np.ravel(np.asarray(value, dtype=object))],
                dtype=np.float64,
            )
        except (TypeError, ValueError) as exc:
            raise InvalidLimitsError(
                f"{name}.{which} must be numeric, got {format_value(value)}"
            ) from exc
        if arr.size == 1 and size > 1:
            arr = np.full(size, float(arr[0]))
        if arr.shape != (size,):
            raise InvalidLimitsError(
                f"{name}.{which} must be a scalar or have {size} entries, got {format_value(value)}"
            )
        if np.any(np.isnan(arr)):
            raise InvalidLimitsError(f"{name}.{which} must not be NaN, got {format_value(value)}")
        return arr

    lo = one(lower, -np.inf, "lower")
    hi = one(upper, np.inf, "upper")
    bad = lo > hi
    if np.any(bad):
        i = int(np.argmax(bad))
        raise InvalidLimitsError(
            f"{name} limits must satisfy lower <= upper, got lower={format_value(lo[i])} > "
            f"upper={format_value(hi[i])}"
            f" (entry {i})"
        )
    lo.setflags(write=False)
    hi.setflags(write=False)
    return lo, hi


@dataclass(frozen=True, eq=False)
class Ball:
    """Three rotational DOFs: Blender Euler angles (x, y, z components) in ``order``.

    Attributes:
        order: one of Blender's six orders; ``'XYZ'`` means R = Rz·Ry·Rx.
        lower, upper: per-component limits (rad), each None (free), a scalar or three
            values (None / ±inf entries free). Raises InvalidLimitsError if lower > upper.
        locked: per component; locked angles are not solved for and stay 0.
    """

    order: str = "XYZ"
    lower: ArrayLike | None = None
    upper: ArrayLike | None = None
    locked: tuple[bool, bool, bool] = (False, False, False)
    #: Component indices (0 = x, 1 = y, 2 = z) of the unlocked angles, in q order.
    free: tuple[int, ...] = field(init=False, repr=False, default=())

    def __post_init__(self) -> None:
        try:
            check_order(self.order)
        except InvalidInputError as exc:
            raise InvalidSkeletonError(f"Ball.order: {exc}") from exc
        lo, hi = _limits(self.lower, self.upper, 3, "Ball")
        lk = self.locked
        if (
            not isinstance(lk, tuple | list | np.ndarray)
            or len(lk) != 3
            or not all(isinstance(v, bool | np.bool_) for v in lk)
        ):
            raise InvalidSkeletonError(
                "Ball.locked must be 3 bools (x, y, z), e.g. (False, True, False), got "
                f"{format_value(lk)}"
            )
        locked = tuple(bool(v) for v in lk)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "locked", locked)
        object.__setattr__(self, "free", tuple(i for i in range(3) if not locked[i]))

    @property
    def n_dofs(self) -> int:
        return len(self.free)


@dataclass(frozen=True, eq=False)
class Hinge:
    """One rotational DOF (rad, right hand) about ``axis`` (joint frame, normalised inside).

    Raises InvalidSkeletonError for a zero/non-finite axis, InvalidLimitsError if
    lower > upper. None / ±inf limits are free.
    """

    axis: ArrayLike = (0.0, 0.0, 1.0)
    lower: float | None = None
    upper: float | None = None

    def __post_init__(self) -> None:
        a = finite_array(self.axis, "Hinge.axis", InvalidSkeletonError)
        if a.shape != (3,):
            raise InvalidSkeletonError(f"Hinge.axis must have shape (3,), got {a.shape}")
        norm = float(np.linalg.norm(a))
        if norm <= _MIN_AXIS:
            raise InvalidSkeletonError(
                f"Hinge.axis must be non-zero (length > {_MIN_AXIS:g}), got {a.tolist()}"
            )
        lo, hi = _limits(self.lower, self.upper, 1, "Hinge")
        axis = a / norm
        axis.setflags(write=False)
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "lower", float(lo[0]))
        object.__setattr__(self, "upper", float(hi[0]))

    @property
    def n_dofs(self) -> int:
        return 1


@dataclass(frozen=True, eq=False)
class Fixed:
    """No DOF: the joint frame is ``parent · offset``."""

    @property
    def n_dofs(self) -> int:
        return 0


@dataclass(frozen=True, eq=False)
class Free:
    """Six DOFs, a joint that moves: three translations (m, along the x, y, z axes of
    ``parent · offset``) then a ball rotation (rad, Blender Euler angles in ``order``, as
    :class:`Ball`), in that order in ``q``: ``G = G_parent · offset · T(t) · R(euler)``.

    Attributes:
        order: the rotation's Euler order (Blender's six; ``'XYZ'`` means R = Rz·Ry·Rx).
        lower, upper: rotation limits (rad) per component (x, y, z): None (free), a scalar
            or three values (None / ±inf entries free).
        translation_lower, translation_upper: translation limits (m) per axis, the same
            forms. Raises InvalidLimitsError if a lower bound exceeds its upper bound.
    """

    order: str = "XYZ"
    lower: ArrayLike | None = None
    upper: ArrayLike | None = None
    translation_lower: ArrayLike | None = None
    translation_upper: ArrayLike | None = None
    #: The rotation as a Ball (its order and limits; no component locked).
    ball: Ball = field(init=False, repr=False, default_factory=Ball)

    def __post_init__(self) -> None:
        try:
            ball = Ball(self.order, self.lower, self.upper)
        except InvalidLimitsError as exc:
            raise InvalidLimitsError(f"Free rotation: {exc}") from exc
        except InvalidSkeletonError as exc:
            raise InvalidSkeletonError(f"Free: {exc}") from exc
        lo, hi = _limits(self.translation_lower, self.translation_upper, 3, "Free.translation")
        object.__setattr__(self, "ball", ball)
        object.__setattr__(self, "lower", ball.lower)
        object.__setattr__(self, "upper", ball.upper)
        object.__setattr__(self, "translation_lower", lo)
        object.__setattr__(self, "translation_upper", hi)

    @property
    def n_dofs(self) -> int:
        return 6


Dofs = Ball | Hinge | Fixed | Free


@dataclass(frozen=True, eq=False)
class Joint:
    """One joint of a :class:`Skeleton`.

    Attributes:
        name: unique non-empty name.
        parent: index of the parent joint, -1 for a root; must be smaller than this
            joint's own index (parents come before children).
        offset: 4×4 rest transform in the parent joint's frame (root: world frame);
            its 3×3 block must be a rotation and its last row (0, 0, 0, 1). Default eye.
        dofs: :class:`Ball`, :class:`Hinge`, :class:`Free` or :class:`Fixed` (default).
    """

    name: str
    parent: int = -1
    offset: ArrayLike = field(default_factory=lambda: np.eye(4))
    dofs: Dofs = field(default_factory=Fixed)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidSkeletonError(
                f"Joint.name must be a non-empty str, got {format_value(self.name)}"
            )
        if not isinstance(self.parent, int | np.integer) or isinstance(self.parent, bool):
            raise InvalidSkeletonError(
                f"Joint {format_value(self.name)}: parent must be an int index (-1 for a root), "
                f"got {format_value(self.parent)}"
            )
        m = finite_array(
            self.offset, f"Joint {format_value(self.name)} offset", InvalidSkeletonError
        )
        if m.shape != (4, 4):
            raise InvalidSkeletonError(
                f"Joint {format_value(self.name)}: offset must be a 4×4 transform, got shape "
                f"{m.shape}"
            )
        if np.max(np.abs(m[3] - (0.0, 0.0, 0.0, 1.0))) > 1e-12:
            raise InvalidSkeletonError(
                f"Joint {format_value(self.name)}: offset must have last row (0, 0, 0, 1), got "
                f"{format_value(m[3])}"
            )
        check_rotation(
            m[:3, :3],
            name=f"Joint {format_value(self.name)} offset[:3, :3]",
            error=InvalidSkeletonError,
        )
        if float(np.max(np.abs(m[:3, 3]))) > MAX_COORDINATE:
            raise InvalidSkeletonError(
                f"Joint {format_value(self.name)}: offset translation must be within "
                f"±{MAX_COORDINATE:g} m (core.goals.MAX_COORDINATE), got {format_value(m[:3, 3])}"
            )
        if not isinstance(self.dofs, Ball | Hinge | Fixed | Free):
            raise InvalidSkeletonError(
                f"Joint {format_value(self.name)}: dofs must be Ball(...), Hinge(...), Free(...) "
                f"or Fixed(), "
                f"got {format_value(self.dofs)}"
            )
        m = m.copy()
        m.setflags(write=False)
        object.__setattr__(self, "parent", int(self.parent))
        object.__setattr__(self, "offset", m)
