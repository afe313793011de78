"""Rotation conversions (matrix, quaternion, axis-angle, Blender Euler), batched.

Conventions used throughout this module
--------------------------------------
* Every array is ``float64``. Every function is batched over arbitrary leading
  axes ``...``; batch axes of several arguments broadcast against each other
  (non-broadcastable batch shapes raise :class:`~core.errors.ShapeMismatchError`).
* Rotation matrices have shape ``(..., 3, 3)`` and act on **column vectors**:
  ``v_rotated = R @ v``. Composition ``A @ B`` applies ``B`` first.
* Quaternions have shape ``(..., 4)`` and are ordered ``(w, x, y, z)`` like
  :class:`mathutils.Quaternion`. ``q`` and ``-q`` are the same rotation.
* Angles are in **radians**. A positive angle about an axis rotates
  counter-clockwise when looking down the axis towards the origin (right hand).
* Euler angles follow Blender/mathutils exactly. An angle array is
  ``(ax, ay, az)``: the rotation about X, about Y and about Z *in that component
  order regardless of the order string* (like ``bone.rotation_euler`` and
  ``mathutils.Euler((x, y, z), order)``). The order string is the application
  order: ``'XYZ'`` means ``R = Rz(az) @ Ry(ay) @ Rx(ax)`` (X applied first).
  The order string names three distinct axes (Tait-Bryan angles); the axis
  applied first is called *first*, the second one *middle*, the last one *last*.

Errors
------
Malformed input (wrong shape, non-finite values, zero-length axes or
quaternions, unknown Euler order) raises a subclass of
:class:`~core.errors.InvalidInputError` whose message names the offending value
and what would be valid. Functions that *read* a rotation matrix
(``matrix_to_*``, :func:`rotation_angle_between`) check shape and finiteness
only; they assume the matrix is a rotation. Validate untrusted matrices with
:func:`check_rotation` (or project them with :func:`orthonormalize`) first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import (
    InvalidInputError,
    InvalidOrderError,
    InvalidRotationError,
    ShapeMismatchError,
    format_value,
)
from .vec3 import TAU, ArrayOps, angle_of_rotation, mat_of, skew, wrap

__all__ = [
    "FloatArray",
    "EULER_ORDERS",
    "EulerSpec",
    "check_order",
    "euler_spec",
    "axis_angle_to_matrix",
    "matrix_to_axis_angle",
    "axis_angle_of",
    "quat_to_matrix",
    "matrix_to_quat",
    "quaternion_of",
    "quaternion_floats",
    "quaternion_rows",
    "euler_to_matrix",
    "matrix_to_euler",
    "matrix_to_euler_families",
    "wrap_angle",
    "angle_in_range",
    "rotation_angle_between",
    "relative_angle",
    "rodrigues",
    "rodrigues_rows",
    "rotation_about",
    "check_rotation",
    "orthonormalize",
]

FloatArray = NDArray[np.float64]

#: Blender's six Euler orders (application order, first-applied axis first).
EULER_ORDERS: tuple[str, ...] = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")

_AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
_EYE = np.eye(3)
#: Axes / quaternions shorter than this cannot be normalised.
_MIN_NORM = 1e-12
#: ``cos(middle angle)`` at or below this is treated as gimbal lock.
GIMBAL_COS = 1e-9


# --------------------------------------------------------------------------- helpers


def _as_float(value: ArrayLike, name: str) -> FloatArray:
    """``value`` as a float64 array, or :class:`InvalidInputError`."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{name} must be a real numeric array, got {format_value(value)} ({exc})"
        ) from exc


def _index_str(index: tuple[int, ...]) -> str:
    return "()" if not index else str(tuple(int(i) for i in index))


def _check_finite(arr: FloatArray, name: str) -> None:
    finite = np.isfinite(arr)
    if not finite.all():
        bad = tuple(int(i) for i in np.argwhere(~finite)[0])
        raise InvalidInputError(
            f"{name} must be finite, got {format_value(arr[bad])} at index {_index_str(bad)}"
        )


def _check_trailing(arr: FloatArray, trailing: tuple[int, ...], name: str) -> None:
    n = len(trailing)
    if arr.ndim < n or arr.shape[arr.ndim - n :] != trailing:
        want = "(..., " + ", ".join(str(t) for t in trailing) + ")"
        raise InvalidInputError(f"{name} must have shape {want}, got shape {arr.shape}")


def _vector(value: ArrayLike, size: int, name: str) -> FloatArray:
    arr = _as_float(value, name)
    _check_trailing(arr, (size,), name)
    _check_finite(arr, name)
    return arr


def _matrix(value: ArrayLike, name: str) -> FloatArray:
    arr = _as_float(value, name)
    _check_trailing(arr, (3, 3), name)
    _check_finite(arr, name)
    return arr


def _broadcast(shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Broadcast batch shapes or raise :class:`ShapeMismatchError` naming them."""
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError as exc:
        desc = ", ".join(f"{k} batch shape {v}" for k, v in shapes.items())
        raise ShapeMismatchError(
            f"batch shapes do not broadcast: {desc}; leading axes must agree or be 1"
        ) from exc


def _normalise(arr: FloatArray, name: str) -> FloatArray:
    norm = np.sqrt(np.sum(arr * arr, axis=-1))
    small = norm <= _MIN_NORM
    if small.any():
        bad = tuple(int(i) for i in np.argwhere(small)[0]) if small.ndim else ()
        raise InvalidInputError(
            f"{name} must have length > {_MIN_NORM:g} to be normalised, got "
            f"{format_value(arr[bad])} (length {float(norm[bad]):.3g}) at batch index "
            f"{_index_str(bad)}"
        )
    out: FloatArray = arr / norm[..., None]
    return out


def _elementary_tables() -> tuple[FloatArray, FloatArray, FloatArray]:
    """Constant, cosine and sine coefficients of the three elementary rotations."""
    base = np.zeros((3, 3, 3))
    cos_c = np.zeros((3, 3, 3))
    sin_c = np.zeros((3, 3, 3))
    for a in range(3):
        j, k = (a + 1) % 3, (a + 2) % 3
        base[a, a, a] = 1.0
        cos_c[a, j, j] = cos_c[a, k, k] = 1.0
        sin_c[a, k, j] = 1.0
        sin_c[a, j, k] = -1.0
    return base, cos_c, sin_c


_ELEM_BASE, _ELEM_COS, _ELEM_SIN = _elementary_tables()


def _elementary3(angles: FloatArray) -> FloatArray:
    """``(..., 3, 3, 3)``: index ``[..., a, :, :]`` is the rotation about axis ``a``
    (0=X, 1=Y, 2=Z) by ``angles[..., a]`` radians."""
    c = np.cos(angles)[..., None, None]
    s = np.sin(angles)[..., None, None]
    out: FloatArray = _ELEM_BASE + c * _ELEM_COS + s * _ELEM_SIN
    return out


# --------------------------------------------------------------------------- angles


def wrap_angle(a: ArrayLike) -> FloatArray:
    """Wrap angles (radians) into ``(-pi, pi]``; values already there are returned exactly.

    Non-finite values propagate as NaN (no error is raised).
    """
    arr = _as_float(a, "angle")
    inside = (arr > -math.pi) & (arr <= math.pi)
    if inside.all():
        return arr
    out: FloatArray = np.where(inside, arr, -wrap(-arr))
    return out


def angle_in_range(
    a: ArrayLike, lower: ArrayLike, upper: ArrayLike, tol: float = 1e-9
) -> NDArray[np.bool_]:
    """Whether some ``a + 2*pi*k`` (integer ``k``) lies in ``[lower - tol, upper + tol]``.

    All values are radians and broadcast together. The limits may lie outside
    ``(-pi, pi]`` (e.g. ``lower=2.5, upper=4.0`` covers the wrap-around at ``pi``);
    a range with ``upper - lower >= 2*pi`` contains every finite angle.
    Non-finite ``a`` gives ``False``.

    Raises:
        InvalidInputError: a limit is non-finite, or ``lower > upper``.
        ShapeMismatchError: the three arguments do not broadcast.
    """
    arr = _as_float(a, "angle")
    lo = _as_float(lower, "lower")
    hi = _as_float(upper, "upper")
    _broadcast({"angle": arr.shape, "lower": lo.shape, "upper": hi.shape})
    _check_finite(lo, "lower")
    _check_finite(hi, "upper")
    width = hi - lo
    if not (width >= 0.0).all():
        lo_b, hi_b = np.broadcast_arrays(lo, hi)
        bad = tuple(int(i) for i in np.argwhere(~(hi_b >= lo_b))[0]) if lo_b.ndim else ()
        raise InvalidInputError(
            f"angle range must satisfy lower <= upper, got "
            f"lower={format_value(float(lo_b[bad]))} > "
            f"upper={format_value(float(hi_b[bad]))} at index {_index_str(bad)}"
        )
    d = np.mod(arr - lo, TAU)  # in [0, 2*pi)
    result: NDArray[np.bool_] = np.isfinite(arr) & (
        (width >= TAU) | (d <= width + tol) | (d >= TAU - tol)
    )
    return result


# --------------------------------------------------------------------------- axis-angle


def axis_angle_to_matrix(axis: ArrayLike, angle: ArrayLike) -> FloatArray:
    """Rotation matrix of ``angle`` radians about ``axis`` (Rodrigues' formula).

    Args:
        axis: ``(..., 3)`` rotation axis, normalised inside (right-hand rule).
        angle: ``(...)`` angle in radians.

    Returns:
        ``(..., 3, 3)`` rotation matrices (batch = broadcast of both batches),
        equal to ``mathutils.Matrix.Rotation(angle, 3, axis)``.

    Raises:
        InvalidInputError: wrong shape, non-finite, or axis length <= 1e-12.
        ShapeMismatchError: batch shapes of ``axis`` and ``angle`` do not broadcast.
    """
    ax = _as_float(axis, "axis")
    ang = _as_float(angle, "angle")
    if ax.shape == (3,) and ang.ndim == 0:
        # One axis and angle: the same checks on Python floats (numpy's per-call cost
        # dominates a single 3x3).
        x, y, z = ax.tolist()
        a = float(ang)
        n = math.sqrt(x * x + y * y + z * z)
        if math.isfinite(n) and math.isfinite(a) and n > _MIN_NORM:
            return rodrigues(ax / n, a)
    _check_trailing(ax, (3,), "axis")
    _check_finite(ax, "axis")
    _check_finite(ang, "angle")
    _broadcast({"axis": ax.shape[:-1], "angle": ang.shape})
    return rodrigues(_normalise(ax, "axis"), ang)


def rodrigues(axis: FloatArray, angle: ArrayLike) -> FloatArray:
    """Rotation matrices ``(..., 3, 3)`` about unit ``axis`` ``(..., 3)`` by ``angle``
    ``(...)`` (rad; batches broadcast): Rodrigues' formula
    ``cos θ·I + sin θ·[k]× + (1 − cos θ)·k kᵀ``, unvalidated (for callers that already
    hold unit float64 axes; :func:`axis_angle_to_matrix` validates, then calls it).

    One axis ``(3,)`` with a scalar angle takes a branch on Python floats that performs
    the same operations entry by entry (same result, a fraction of the cost)."""
    if axis.ndim == 1 and (type(angle) is float or np.ndim(angle) == 0):
        return np.array(rodrigues_rows(axis.tolist(), angle))  # type: ignore[arg-type]
    cb = np.cos(angle)[..., None, None]
    sb = np.sin(angle)[..., None, None]
    out: FloatArray = (
        cb * _EYE + sb * skew(axis) + (1.0 - cb) * (axis[..., :, None] * axis[..., None, :])
    )
    return out


def rodrigues_rows(axis: Sequence[float], angle: float
                   ) -> tuple[tuple[float, float, float], ...]:
    """:func:`rodrigues` of one unit ``axis`` (three Python floats) and a scalar ``angle``
    (rad) as three rows of Python floats: the operations of its single-axis branch,
    without an array (unvalidated)."""
    c, s = math.cos(angle), math.sin(angle)
    x, y, z = axis
    t = 1.0 - c
    return (
        (c + t * (x * x), t * (x * y) - s * z, t * (x * z) + s * y),
        (t * (y * x) + s * z, c + t * (y * y), t * (y * z) - s * x),
        (t * (z * x) - s * y, t * (z * y) + s * x, c + t * (z * z)),
    )


def rotation_about(axis: ArrayLike, angle: float) -> FloatArray:
    """Rot(axis, angle) for one unit ``axis`` given as any 3-sequence: :func:`rodrigues`
    (unvalidated; ``angle`` in rad)."""
    return rodrigues(np.asarray(axis, dtype=np.float64).reshape(3), angle)


def matrix_to_axis_angle(R: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Axis and angle of rotation matrices.

    Computed from the quaternion of :func:`matrix_to_quat` (``w >= 0``) as
    ``angle = 2 * atan2(|xyz|, w)``, which is accurate near 0 and near pi (no
    ``acos``, no NaN).

    Args:
        R: ``(..., 3, 3)`` rotation matrices (assumed orthonormal, det +1).

    Returns:
        ``(axis, angle)``: unit ``axis`` ``(..., 3)`` and ``angle`` ``(...)`` in
        ``[0, pi]`` radians. For the identity (angle 0) the axis is ``(1, 0, 0)``.
        For angle exactly pi the axis sign is such that its largest-magnitude
        component is positive.

    Raises:
        InvalidInputError: wrong shape or non-finite entries.
    """
    return axis_angle_of(_matrix(R, "rotation"))


def axis_angle_of(m: FloatArray) -> tuple[FloatArray, FloatArray]:
    """:func:`matrix_to_axis_angle` of float64 rotation matrices ``(..., 3, 3)``,
    unvalidated (for callers that already hold finite float64 matrices)."""
    q = quaternion_of(m)
    v = q[..., 1:]
    n = np.sqrt(np.add.reduce(v * v, axis=-1))
    angle: FloatArray = 2.0 * np.arctan2(n, q[..., 0])
    pos = n > 0.0
    axis = v / np.where(pos, n, 1.0)[..., None]
    axis[..., 0] = np.where(pos, axis[..., 0], 1.0)
    return axis, angle


# --------------------------------------------------------------------------- quaternions


def quat_to_matrix(q: ArrayLike) -> FloatArray:
    """Rotation matrices of quaternions ``(w, x, y, z)``.

    Args:
        q: ``(..., 4)`` quaternions, normalised inside (any non-zero length).

    Returns:
        ``(..., 3, 3)``, equal to ``mathutils.Quaternion(q).to_matrix()``.

    Raises:
        InvalidInputError: wrong shape, non-finite, or length <= 1e-12.
    """
    u = _normalise(_vector(q, 4, "quaternion"), "quaternion")
    w, x, y, z = u[..., 0], u[..., 1], u[..., 2], u[..., 3]
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    out = np.empty(u.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1.0 - 2.0 * (yy + zz)
    out[..., 0, 1] = 2.0 * (xy - wz)
    out[..., 0, 2] = 2.0 * (xz + wy)
    out[..., 1, 0] = 2.0 * (xy + wz)
    out[..., 1, 1] = 1.0 - 2.0 * (xx + zz)
    out[..., 1, 2] = 2.0 * (yz - wx)
    out[..., 2, 0] = 2.0 * (xz - wy)
    out[..., 2, 1] = 2.0 * (yz + wx)
    out[..., 2, 2] = 1.0 - 2.0 * (xx + yy)
    return out


def matrix_to_quat(R: ArrayLike) -> FloatArray:
    """Unit quaternions ``(w, x, y, z)`` with ``w >= 0`` of rotation matrices.

    Shepperd/Markley method: the four candidate (unnormalised) quaternions
    ``4 q_i q`` are formed from sums/differences of entries and, per matrix, the
    one with the largest ``q_i^2`` is normalised; this is accurate for every
    rotation (including angles near pi) and gives a sensible unit quaternion for
    slightly non-orthonormal input. The sign is then flipped so ``w >= 0``; when
    ``w == 0`` (angle pi) the largest-magnitude vector component is positive.

    Args:
        R: ``(..., 3, 3)`` rotation matrices.

    Returns:
        ``(..., 4)``; equal to ``Matrix.to_quaternion()`` up to sign.

    Raises:
        InvalidInputError: wrong shape or non-finite entries.
    """
    return quaternion_of(_matrix(R, "rotation"))


def _quat_tables() -> tuple[FloatArray, FloatArray]:
    """Shepperd's candidates as matrix products of the flattened ``R`` (9,).

    Candidate row ``b`` (``b`` = w, x, y, z) equals ``4 q_b q`` for a rotation with unit
    quaternion ``q``. Its off-diagonal entries are a sum or difference of two entries of
    ``R`` (``R_flat @ offdiag``: one rounding, whatever order the product sums in); its
    diagonal entry ``4 q_b^2 = ((1 + s0 R00) + s1 R11) + s2 R22`` is formed term by term
    with the signs ``signs[:, b]`` (``offdiag``'s diagonal columns are zero).
    """
    pairs = {  # (row b, column c): ((sign, row, col), (sign, row, col))
        (0, 1): ((1, 2, 1), (-1, 1, 2)),
        (0, 2): ((1, 0, 2), (-1, 2, 0)),
        (0, 3): ((1, 1, 0), (-1, 0, 1)),
        (1, 2): ((1, 0, 1), (1, 1, 0)),
        (1, 3): ((1, 0, 2), (1, 2, 0)),
        (2, 3): ((1, 1, 2), (1, 2, 1)),
    }
    offdiag = np.zeros((9, 16))
    for (b, c), terms in pairs.items():
        for sign, r, col in terms:
            offdiag[3 * r + col, 4 * b + c] = sign
            offdiag[3 * r + col, 4 * c + b] = sign
    signs = np.array(((1.0, 1.0, -1.0, -1.0), (1.0, -1.0, 1.0, -1.0), (1.0, -1.0, -1.0, 1.0)))
    return offdiag, signs


_QUAT_OFFDIAG, _QUAT_SIGNS = _quat_tables()
#: The w candidate's columns of :data:`_QUAT_OFFDIAG` (contiguous).
_QUAT_W_ROW = np.ascontiguousarray(_QUAT_OFFDIAG[:, :4])


def quaternion_floats(m: FloatArray) -> tuple[float, float, float, float]:
    """:func:`quaternion_of` of one float64 rotation matrix (``(3, 3)`` or a batch of one)
    as Python floats (w, x, y, z), unvalidated: the same operations as the batched
    branch, for a caller that writes the values one by one (a live solve's bones)."""
    return quaternion_rows(m.reshape(3, 3).tolist())


def quaternion_rows(rows: Sequence[Sequence[float]]) -> tuple[float, float, float, float]:
    """:func:`quaternion_floats` of a rotation given as three rows of three Python floats
    (e.g. :func:`rodrigues_rows`' or :func:`core.solve_pose_floats`' output): the same
    operations, without an array."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = rows
    a, b, c = m21 - m12, m02 - m20, m10 - m01
    e, f, g = m01 + m10, m02 + m20, m12 + m21
    # the first largest diagonal term, as np.argmax picks it
    d = ((1.0 + m00) + m11) + m22
    q, best = (d, a, b, c), d
    d = ((1.0 + m00) - m11) - m22
    if d > best:
        q, best = (a, d, e, f), d
    d = ((1.0 - m00) + m11) - m22
    if d > best:
        q, best = (b, e, d, g), d
    d = ((1.0 - m00) - m11) + m22
    if d > best:
        q = (c, f, g, d)
    w, x, y, z = q
    scale = (-1.0 if w < 0.0 else 1.0) / math.sqrt(w * w + x * x + y * y + z * z)
    return (w * scale, x * scale, y * scale, z * scale)


def quaternion_of(m: FloatArray) -> FloatArray:
    """:func:`matrix_to_quat` of float64 rotation matrices ``(..., 3, 3)``, unvalidated
    (for callers that already hold finite float64 matrices).

    One matrix (``(3, 3)``, or a batch of one) takes a branch on Python floats that
    performs the same operations as the batched branch (same result, a fraction of the
    cost)."""
    if m.size == 9:
        return np.array(quaternion_floats(m)).reshape(m.shape[:-2] + (4,))
    m9 = m.reshape(m.shape[:-2] + (9,))
    diag = (1.0 + m9[..., 0:1] * _QUAT_SIGNS[0]) + m9[..., 4:5] * _QUAT_SIGNS[1]
    diag = diag + m9[..., 8:9] * _QUAT_SIGNS[2]
    # the w candidate's row of the products for every matrix (w = its diagonal term);
    # the rows whose largest diagonal term is another (rotations near π) are redone
    # with all four candidates
    qb = m9 @ _QUAT_W_ROW
    qb[..., 0] = diag[..., 0]
    best = np.argmax(diag, axis=-1)
    sign: float | FloatArray = 1.0  # w ≥ 1 > 0 where it is the largest diagonal term
    if best.any():
        other = np.nonzero(best)
        cand = m9[other] @ _QUAT_OFFDIAG
        cand[:, ::5] = diag[other]
        pick = best[other][:, None, None]
        qb[other] = np.take_along_axis(cand.reshape(-1, 4, 4), pick, axis=-2)[:, 0, :]
        sign = np.where(qb[..., 0] < 0.0, -1.0, 1.0)
    qq = qb * qb
    norm = np.sqrt(((qq[..., 0] + qq[..., 1]) + qq[..., 2]) + qq[..., 3])
    out: FloatArray = qb * (sign / norm)[..., None]
    return out


# --------------------------------------------------------------------------- Euler


@dataclass(frozen=True)
class EulerSpec:
    """How the Euler angles of one order are read off a rotation matrix.

    Component indices (``middle``, ``first``, ``last``) index the ``(ax, ay, az)``
    angle array; entry pairs ``(row, col)`` index ``R`` (column-vector
    convention, ``R = R_last @ R_middle @ R_first``). With ``θm = angles[middle]``:

    * ``sin(θm) = sin_sign * R[sin_entry]``;
    * ``first_y_sign * R[first_y] = cos(θm) * sin(angles[first])`` and
      ``first_x_sign * R[first_x] = cos(θm) * cos(angles[first])``, so in family 1
      (``cos θm > 0``) ``angles[first] = atan2(first_y_sign * R[first_y],
      first_x_sign * R[first_x])`` and in family 2 (``cos θm < 0``) the same
      with both atan2 arguments negated;
    * likewise ``last_y_sign * R[last_y] = cos(θm) * sin(angles[last])`` and
      ``last_x_sign * R[last_x] = cos(θm) * cos(angles[last])``.

    At gimbal lock (``cos θm = 0``) the four y/x entries vanish and only the
    sum/difference of the outer angles is determined.
    """

    order: str
    middle: int
    sin_entry: tuple[int, int]
    sin_sign: float
    first: int
    first_y: tuple[int, int]
    first_y_sign: float
    first_x: tuple[int, int]
    first_x_sign: float
    last: int
    last_y: tuple[int, int]
    last_y_sign: float
    last_x: tuple[int, int]
    last_x_sign: float


def _make_spec(order: str) -> EulerSpec:
    # R = R_k(c) R_j(b) R_i(a) with i first, j middle, k last; p = +1 when
    # (i, j, k) is a cyclic permutation of (0, 1, 2), else -1. Then
    #   R[k, i] = -p sin b,  R[k, j] = p cb sa,  R[k, k] = cb ca,
    #   R[j, i] =  p cb sc,  R[i, i] = cb cc.
    i, j, k = (_AXIS_INDEX[ch] for ch in order)
    p = 1.0 if (j - i) % 3 == 1 else -1.0
    return EulerSpec(
        order=order,
        middle=j,
        sin_entry=(k, i),
        sin_sign=-p,
        first=i,
        first_y=(k, j),
        first_y_sign=p,
        first_x=(k, k),
        first_x_sign=1.0,
        last=k,
        last_y=(j, i),
        last_y_sign=p,
        last_x=(i, i),
        last_x_sign=1.0,
    )


_SPECS: dict[str, EulerSpec] = {o: _make_spec(o) for o in EULER_ORDERS}


def check_order(order: str) -> str:
    """Return ``order`` if it is one of :data:`EULER_ORDERS`.

    Raises:
        InvalidOrderError: any other value (case-sensitive, like Blender).
    """
    if not isinstance(order, str) or order not in _SPECS:
        raise InvalidOrderError(
            f"Euler order must be one of {', '.join(EULER_ORDERS)}; got {format_value(order)}"
        )
    return order


def euler_spec(order: str) -> EulerSpec:
    """The :class:`EulerSpec` of ``order`` (cached; raises :class:`InvalidOrderError`)."""
    return _SPECS[check_order(order)]


def euler_to_matrix(angles: ArrayLike, order: str = "XYZ") -> FloatArray:
    """Rotation matrices of Blender Euler angles.

    Args:
        angles: ``(..., 3)`` radians ``(ax, ay, az)`` (about X, Y, Z in that
            component order regardless of ``order``).
        order: application order; ``'XYZ'`` gives ``Rz(az) @ Ry(ay) @ Rx(ax)``.

    Returns:
        ``(..., 3, 3)``, equal to ``mathutils.Euler(angles, order).to_matrix()``.

    Raises:
        InvalidOrderError: unknown ``order``.
        InvalidInputError: wrong shape or non-finite angles.
    """
    check_order(order)
    ang = _vector(angles, 3, "euler angles")
    i, j, k = (_AXIS_INDEX[ch] for ch in order)
    e = _elementary3(ang)
    out: FloatArray = e[..., k, :, :] @ (e[..., j, :, :] @ e[..., i, :, :])
    return out


def _gather_table(spec: EulerSpec) -> tuple[NDArray[np.intp], NDArray[np.intp], FloatArray]:
    """Rows, columns and signs of the seven entries :func:`_family_one` reads."""
    i, j, k = spec.first, spec.middle, spec.last
    p = spec.first_y_sign  # parity of (first, middle, last)
    entries = [
        (spec.sin_entry, spec.sin_sign),
        (spec.first_y, spec.first_y_sign),
        (spec.first_x, spec.first_x_sign),
        ((i, k), 1.0),
        ((i, j), -p),
        ((j, j), 1.0),
        ((j, k), -p),
    ]
    rows = np.array([e[0][0] for e in entries], dtype=np.intp)
    cols = np.array([e[0][1] for e in entries], dtype=np.intp)
    signs = np.array([e[1] for e in entries], dtype=np.float64)
    return rows, cols, signs


_GATHER = {o: _gather_table(spec) for o, spec in _SPECS.items()}
#: Family 2 = family 1 * _F2_SIGN[order] + pi (then wrapped).
_F2_SIGN = {
    o: np.array([-1.0 if a == spec.middle else 1.0 for a in range(3)]) for o, spec in _SPECS.items()
}


def _family_one(m: FloatArray, spec: EulerSpec) -> FloatArray:
    """``(..., 3)`` family-1 angles ``(ax, ay, az)`` of ``(..., 3, 3)`` matrices ``m``."""
    rows, cols, signs = _GATHER[spec.order]
    e = m[..., rows, cols] * signs
    fy = e[..., 1]
    fx = e[..., 2]
    cos_mid = np.hypot(fy, fx)
    # Gimbal lock: the first-applied angle is set to 0.
    first = np.arctan2(fy, fx) * (cos_mid > GIMBAL_COS)
    # The last angle is read from M = R @ R_first(first)^T = R_last(c) @ R_middle(b),
    # whose middle-axis column is R_last(c) e_middle. For cos(middle) > 0 this equals
    # the spec's atan2(last_y_sign R[last_y], last_x_sign R[last_x]) mathematically,
    # but it stays exact at and near gimbal lock: it absorbs whatever rotation
    # `first` did not take, so the result always recomposes to R.
    ca = np.cos(first)
    sa = np.sin(first)
    out = np.empty(e.shape[:-1] + (3,))
    out[..., spec.first] = first
    out[..., spec.middle] = np.arctan2(e[..., 0], cos_mid)
    out[..., spec.last] = np.arctan2(
        sa * e[..., 3] + ca * e[..., 4], ca * e[..., 5] + sa * e[..., 6]
    )
    # atan2 returns [-pi, pi]; move -pi to pi so every angle lies in (-pi, pi].
    out += TAU * (out <= -math.pi)
    return out


def matrix_to_euler_families(R: ArrayLike, order: str = "XYZ", *, check: bool = True) -> FloatArray:
    """Both Euler-angle solutions ("two families", Tolani et al. 2000, §3.2.4).

    Index 0 is family 1: middle angle ``θm`` in ``[-pi/2, pi/2]``, outer angles in
    ``(-pi, pi]``. Index 1 is family 2: middle ``wrap(pi - θm)``, each outer angle
    ``wrap(angle + pi)`` (``wrap`` into ``(-pi, pi]``). Both recompose (via
    :func:`euler_to_matrix`) to ``R``. Read off with :func:`euler_spec`.

    Gimbal lock: when ``cos θm <= 1e-9`` only a sum/difference of the outer angles
    is determined; the first-applied angle is then set to 0 (family 2: pi) and the
    whole remaining rotation goes into the last-applied angle. Never NaN. (Blender
    instead zeroes the last-applied angle; both recompose to the same matrix.)

    Args:
        R: ``(..., 3, 3)`` rotation matrices (assumed orthonormal, det +1).
        order: one of :data:`EULER_ORDERS`.
        check: validate shape and finiteness (skip only for trusted float64 arrays).

    Returns:
        ``(..., 2, 3)`` radians, components ``(ax, ay, az)``.

    Raises:
        InvalidOrderError: unknown ``order``.
        InvalidInputError: wrong shape or non-finite entries.
    """
    spec = euler_spec(order)
    one = _family_one(_matrix(R, "rotation") if check else np.asarray(R), spec)
    two = one * _F2_SIGN[order] + math.pi  # in (0, 2*pi]
    out = np.empty(one.shape[:-1] + (2, 3))
    out[..., 0, :] = one
    out[..., 1, :] = two - TAU * (two > math.pi)
    return out


def matrix_to_euler(R: ArrayLike, order: str = "XYZ") -> FloatArray:
    """Family-1 Euler angles of rotation matrices (see :func:`matrix_to_euler_families`).

    The middle angle is in ``[-pi/2, pi/2]``, the outer angles in ``(-pi, pi]``;
    at gimbal lock the first-applied angle is 0. Returns ``(..., 3)`` radians
    ``(ax, ay, az)``. Raises :class:`InvalidOrderError` / :class:`InvalidInputError`.
    """
    return _family_one(_matrix(R, "rotation"), euler_spec(order))


# --------------------------------------------------------------------------- matrices


def rotation_angle_between(R1: ArrayLike, R2: ArrayLike) -> FloatArray:
    """Angle in ``[0, pi]`` radians of the relative rotation ``R1^T @ R2``.

    Uses ``atan2(|skew part|, trace - 1)`` (``= atan2(2 sin θ, 2 cos θ)``), which is
    accurate near 0 and near pi, unlike ``acos((trace - 1) / 2)``.

    Raises:
        InvalidInputError: wrong shape or non-finite entries.
        ShapeMismatchError: batch shapes do not broadcast.
    """
    a = _matrix(R1, "R1")
    b = _matrix(R2, "R2")
    _broadcast({"R1": a.shape[:-2], "R2": b.shape[:-2]})
    return relative_angle(a, b)


def relative_angle(a: FloatArray, b: FloatArray) -> FloatArray:
    """Angle ``[0, pi]`` of ``a^T @ b`` for float64 rotation arrays ``(..., 3, 3)`` (batches
    broadcast): :func:`rotation_angle_between` unvalidated, the component kernel's
    :func:`~core.geometry.vec3.angle_of_rotation` on the entries of the product (Python
    floats for one pair of matrices, the same result as its row of a batch)."""
    out: FloatArray = angle_of_rotation(mat_of(np.swapaxes(a, -1, -2) @ b), ArrayOps)
    return out


def check_rotation(
    R: ArrayLike,
    *,
    tol: float = 1e-6,
    name: str = "rotation",
    error: type[Exception] = InvalidRotationError,
) -> FloatArray:
    """Validate rotation matrices and return them as float64.

    Valid means: shape ``(..., 3, 3)``, all entries finite,
    ``max |R^T R - I| <= tol`` and ``det R > 0`` for every matrix of the batch.

    Raises:
        error: (default :class:`InvalidRotationError`) naming ``name``, the worst
            offending batch index and value, and what is valid.
    """
    try:
        m = np.asarray(R, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(
            f"{name} must be a real (..., 3, 3) rotation matrix, got {format_value(R)}"
        ) from exc
    if m.ndim < 2 or m.shape[-2:] != (3, 3):
        raise error(f"{name} must have shape (..., 3, 3) (rotation matrices), got shape {m.shape}")
    batch = m.shape[:-2]
    if m.ndim == 2 and single_rotation_ok(m, tol):
        return m  # one valid matrix: checked on floats (False for any non-finite entry)
    if m.size == 0:
        return m
    if not np.isfinite(m).all():
        finite = np.isfinite(m).all(axis=(-2, -1))
        bad = tuple(int(i) for i in np.argwhere(~finite)[0]) if batch else ()
        raise error(
            f"{name} must be a finite rotation matrix; batch index {_index_str(bad)} "
            f"contains non-finite entries: {m[bad].tolist()}"
        )
    dev = np.abs(np.swapaxes(m, -1, -2) @ m - _EYE).max(axis=(-2, -1))
    if not dev.max() <= tol:
        worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(dev)), batch))
        raise error(
            f"{name} must be orthonormal (max |R^T R - I| <= {tol:g}); batch index "
            f"{_index_str(worst)} has max |R^T R - I| = {float(dev[worst]):.3g}: "
            f"{m[worst].tolist()}"
        )
    det = np.einsum(
        "...i,...i->...", m[..., :, 0], np.cross(m[..., :, 1], m[..., :, 2])
    )  # no LAPACK call per check
    if not det.min() > 0.0:
        bad = tuple(int(i) for i in np.argwhere(det <= 0.0)[0]) if batch else ()
        raise error(
            f"{name} must be a proper rotation (det +1); batch index {_index_str(bad)} "
            f"has det = {float(det[bad]):.6g} (a reflection): {m[bad].tolist()}"
        )
    return m


def single_rotation_ok(m: FloatArray, tol: float) -> bool:
    """True when one finite 3×3 matrix passes :func:`check_rotation`'s tests (max
    |RᵀR − I| ≤ tol and det > 0), computed on Python floats. False for any non-finite
    entry (every entry enters the determinant, and a NaN or infinite determinant fails
    ``det > 0`` or the deviation test). False sends the caller to the array checks, which
    name the failure."""
    (a, b, c), (d, e, f), (g, h, i) = m.tolist()
    dev = max(
        abs(a * a + d * d + g * g - 1.0),
        abs(b * b + e * e + h * h - 1.0),
        abs(c * c + f * f + i * i - 1.0),
        abs(a * b + d * e + g * h),
        abs(a * c + d * f + g * i),
        abs(b * c + e * f + h * i),
    )
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    return bool(dev <= tol and det > 0.0)


def orthonormalize(R: ArrayLike) -> FloatArray:
    """Nearest rotation matrix (Frobenius norm) of ``(..., 3, 3)`` matrices.

    Polar decomposition by SVD ``R = U S V^T``; returns ``U diag(1, 1, d) V^T``
    with ``d = sign det(U V^T)`` so the result has det +1 even for reflections.

    Raises:
        InvalidInputError: wrong shape or non-finite entries.
    """
    m = _matrix(R, "matrix")
    u, _, vt = np.linalg.svd(m)
    d = np.where(np.linalg.det(u @ vt) < 0.0, -1.0, 1.0)
    u[..., :, 2] *= d[..., None]
    out: FloatArray = u @ vt
    return out
