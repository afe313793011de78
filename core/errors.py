"""The one error hierarchy of ``core``.

Every invalid input raises a subclass of :class:`LimberError` whose message names
the offending value and what would be valid.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "format_value",
    "finite_array",
    "LimberError",
    "InvalidInputError",
    "InvalidLimbError",
    "InvalidGoalError",
    "InvalidLimitsError",
    "InvalidRotationError",
    "InvalidOrderError",
    "ShapeMismatchError",
]


class LimberError(Exception):
    """Base class of every error raised by ``core``."""


class InvalidInputError(LimberError, ValueError):
    """An argument is malformed: wrong shape, non-finite, out of range."""


class InvalidLimbError(InvalidInputError):
    """A :class:`~core.limb.Limb` cannot be built from the given geometry."""


class InvalidGoalError(InvalidInputError):
    """A goal is malformed (non-finite, not a rotation, wrong shape)."""


class InvalidLimitsError(InvalidInputError):
    """Joint limits are malformed (lower > upper, non-finite, wrong size)."""


class InvalidRotationError(InvalidInputError):
    """A matrix that must be a rotation is not orthonormal with det +1."""


class InvalidOrderError(InvalidInputError):
    """An Euler order string is not one of Blender's six orders."""


class ShapeMismatchError(InvalidInputError):
    """Batched inputs have leading batch shapes that do not agree."""


class InvalidSkeletonError(InvalidInputError):
    """A :class:`~core.chain.skeleton.Skeleton` or one of its joints is malformed (unknown or
    later parent index, duplicate names, zero hinge axis, bad offset, unknown joint)."""


class UnsupportedMethodError(InvalidInputError):
    """A numeric IK method (or option) that exists in :class:`~core.chain.settings.Method`
    but is not implemented (or not supported by the chosen method)."""


__all__ += ["InvalidSkeletonError", "UnsupportedMethodError"]


def format_value(value: object) -> str:
    """``repr(value)`` with numpy scalars shown as the Python numbers they hold.

    Error messages quote values through this so that they read the same under numpy 1
    and 2 (numpy 2's ``repr(np.float64(1.5))`` is ``'np.float64(1.5)'``). Tuples and
    lists are formatted element-wise; arrays keep numpy's ``repr`` (the same in both).
    """
    if isinstance(value, np.generic):
        return repr(value.item())
    if type(value) is tuple or type(value) is list:
        inner = ", ".join(format_value(v) for v in value)
        if type(value) is list:
            return f"[{inner}]"
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def finite_array(value: ArrayLike, name: str, error: type[Exception]) -> NDArray[np.float64]:
    """``value`` as a float64 array; raises ``error`` naming ``name`` when it is not numeric
    or not finite."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be numeric, got {format_value(value)}") from exc
    if not np.isfinite(arr).all():
        raise error(f"{name} must be finite, got {format_value(arr)}")
    return arr
