"""Component-wise 3-vector / 3×3-matrix algebra shared by the scalar and batched paths.

A vector is a 3-tuple of components and a matrix a 3-tuple of rows; each component is
either a Python ``float`` (single solve: pure-Python arithmetic is several times faster
than numpy on one 3×3 matrix) or a float64 array of shape ``(N,)`` (batched solve: every
operation is one vectorised numpy call over the batch). The same kernel code runs on
both, so single and batched results agree to rounding (≤ 1e-14).

``ScalarOps`` and ``ArrayOps`` supply the few functions whose spelling differs.

The same few operations on float64 arrays whose last axis holds the components (the
chain solvers' layout): :func:`cross_rows`, :func:`unit_rows` and :func:`skew`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
Vec = tuple[Any, Any, Any]
Mat = tuple[Vec, Vec, Vec]

PI = math.pi
TAU = 2.0 * math.pi


class ScalarOps:
    """Operations on Python floats."""

    batched = False
    sqrt = staticmethod(math.sqrt)
    atan2 = staticmethod(math.atan2)
    cos = staticmethod(math.cos)
    sin = staticmethod(math.sin)

    @staticmethod
    def acos(x: float) -> float:
        """``acos`` with its argument clipped to [-1, 1]."""
        return math.acos(1.0 if x > 1.0 else (-1.0 if x < -1.0 else x))

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> Any:
        return a if cond else b

    @staticmethod
    def lazy(cond: Any, fa: Callable[[], Any], fb: Callable[[], Any]) -> Any:
        """``fa()`` where ``cond`` else ``fb()``; only the needed branch runs."""
        return fa() if cond else fb()

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return a if a > b else b

    @staticmethod
    def sign(a: Any) -> Any:
        return -1.0 if a < 0.0 else 1.0

    @staticmethod
    def not_(a: Any) -> Any:
        return not a


class ArrayOps:
    """Operations on float64 arrays of shape (N,)."""

    batched = True
    sqrt = staticmethod(np.sqrt)
    atan2 = staticmethod(np.arctan2)
    cos = staticmethod(np.cos)
    sin = staticmethod(np.sin)

    @staticmethod
    def acos(x: Any) -> Any:
        return np.arccos(np.clip(x, -1.0, 1.0))

    @staticmethod
    def where(cond: Any, a: Any, b: Any) -> Any:
        return np.where(cond, a, b)

    @staticmethod
    def lazy(cond: Any, fa: Callable[[], Any], fb: Callable[[], Any]) -> Any:
        """Both branches evaluated, selected per element (vectors component-wise); only
        one when ``cond`` is uniform (the common case: a fallback no element needs)."""
        if cond.all():
            return fa()
        if not cond.any():
            return fb()
        a, b = fa(), fb()
        if isinstance(a, tuple):
            return tuple(np.where(cond, ai, bi) for ai, bi in zip(a, b, strict=True))
        return np.where(cond, a, b)

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return np.maximum(a, b)

    @staticmethod
    def sign(a: Any) -> Any:
        return np.where(a < 0.0, -1.0, 1.0)

    @staticmethod
    def not_(a: Any) -> Any:
        return np.logical_not(a)


Ops = type[ScalarOps] | type[ArrayOps]


def wrap(a: Any) -> Any:
    """Angle(s) (rad) wrapped to [-π, π): the one wrap of the core.

    Works on floats and arrays alike. Swivel angles and feasible intervals use it as is;
    :func:`core.geometry.rotations.wrap_angle` (Blender's Euler range, (-π, π]) is
    ``-wrap(-a)``.
    """
    return (a + PI) % TAU - PI


def dot(a: Vec, b: Vec) -> Any:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross(a: Vec, b: Vec) -> Vec:
    return (
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    )


def add(a: Vec, b: Vec) -> Vec:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def sub(a: Vec, b: Vec) -> Vec:
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def scale(a: Vec, s: Any) -> Vec:
    return (a[0] * s, a[1] * s, a[2] * s)


def axpy(s: Any, x: Vec, y: Vec) -> Vec:
    """s·x + y."""
    return (s * x[0] + y[0], s * x[1] + y[1], s * x[2] + y[2])


def mv(m: Mat, v: Vec) -> Vec:
    """m · v."""
    return (dot(m[0], v), dot(m[1], v), dot(m[2], v))


def mtv(m: Mat, v: Vec) -> Vec:
    """mᵀ · v."""
    return (
        m[0][0] * v[0] + m[1][0] * v[1] + m[2][0] * v[2],
        m[0][1] * v[0] + m[1][1] * v[1] + m[2][1] * v[2],
        m[0][2] * v[0] + m[1][2] * v[1] + m[2][2] * v[2],
    )


def transpose(m: Mat) -> Mat:
    return (
        (m[0][0], m[1][0], m[2][0]),
        (m[0][1], m[1][1], m[2][1]),
        (m[0][2], m[1][2], m[2][2]),
    )


def mm(a: Mat, b: Mat) -> Mat:
    """a · b (written out: no helper calls in this hot path)."""
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = a
    (b00, b01, b02), (b10, b11, b12), (b20, b21, b22) = b
    return (
        (
            a00 * b00 + a01 * b10 + a02 * b20,
            a00 * b01 + a01 * b11 + a02 * b21,
            a00 * b02 + a01 * b12 + a02 * b22,
        ),
        (
            a10 * b00 + a11 * b10 + a12 * b20,
            a10 * b01 + a11 * b11 + a12 * b21,
            a10 * b02 + a11 * b12 + a12 * b22,
        ),
        (
            a20 * b00 + a21 * b10 + a22 * b20,
            a20 * b01 + a21 * b11 + a22 * b21,
            a20 * b02 + a21 * b12 + a22 * b22,
        ),
    )


def mtm(a: Mat, b: Mat) -> Mat:
    """aᵀ · b."""
    return mm(transpose(a), b)


def frame_product(g: tuple[Vec, Vec, Vec], r: tuple[Vec, Vec, Vec]) -> Mat:
    """Σᵢ gᵢ rᵢᵀ: the rotation taking orthonormal frame ``r`` onto frame ``g``."""
    return mm(transpose(g), r)


def _angle_from(s0: Any, s1: Any, s2: Any, tr: Any, ops: Ops) -> Any:
    """The rotation angle from the skew part (s0, s1, s2) = vee(m − mᵀ) and the trace."""
    return ops.atan2(ops.sqrt(s0 * s0 + s1 * s1 + s2 * s2), tr - 1.0)  # 2 sin θ, 2 cos θ


def angle_of_rotation(m: Mat, ops: Ops) -> Any:
    """Angle (rad, [0, π]) of the rotation ``m``, via atan2 of its skew part and trace
    (accurate near 0 and π, unlike acos of the trace): the core's one rotation angle
    (:func:`rotation_angle` applies it to aᵀb, :func:`core.geometry.rotations.relative_angle`
    to arrays)."""
    s0 = m[2][1] - m[1][2]
    s1 = m[0][2] - m[2][0]
    s2 = m[1][0] - m[0][1]
    tr = m[0][0] + m[1][1] + m[2][2]
    return _angle_from(s0, s1, s2, tr, ops)


def rotation_angle(a: Mat, b: Mat, ops: Ops) -> Any:
    """Angle (rad, [0, π]) of aᵀb: :func:`angle_of_rotation` of :func:`mtm`, with the
    entries of aᵀb (the same sums) formed only as the skew part and trace consume them,
    so batched components hold few temporaries at once."""
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = a
    (b00, b01, b02), (b10, b11, b12), (b20, b21, b22) = b
    s0 = (a02 * b01 + a12 * b11 + a22 * b21) - (a01 * b02 + a11 * b12 + a21 * b22)
    s1 = (a00 * b02 + a10 * b12 + a20 * b22) - (a02 * b00 + a12 * b10 + a22 * b20)
    s2 = (a01 * b00 + a11 * b10 + a21 * b20) - (a00 * b01 + a10 * b11 + a20 * b21)
    tr = (
        (a00 * b00 + a10 * b10 + a20 * b20)
        + (a01 * b01 + a11 * b11 + a21 * b21)
        + (a02 * b02 + a12 * b12 + a22 * b22)
    )
    return _angle_from(s0, s1, s2, tr, ops)


_NEXT = np.array([1, 2, 0], dtype=np.intp)
_NEXT2 = np.array([2, 0, 1], dtype=np.intp)


def cross_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    """a × b over the last axis of float64 arrays (broadcast), by components: faster than
    ``np.cross`` on the small arrays of the solvers. The array form of :func:`cross`."""
    out: FloatArray = a[..., _NEXT] * b[..., _NEXT2] - a[..., _NEXT2] * b[..., _NEXT]
    return out


def _skew_table() -> FloatArray:
    """(3, 9) table E with ``(v @ E).reshape(3, 3)`` the cross-product matrix [v]×."""
    t = np.zeros((3, 9))
    t[2, 1], t[1, 2], t[2, 3] = -1.0, 1.0, 1.0
    t[0, 5], t[1, 6], t[0, 7] = -1.0, -1.0, 1.0
    t.setflags(write=False)
    return t


_SKEW = _skew_table()


def skew(v: FloatArray) -> FloatArray:
    """[v]× for v (..., 3): (..., 3, 3), with [v]× u = v × u."""
    out: FloatArray = (v @ _SKEW).reshape(v.shape[:-1] + (3, 3))
    return out


def skew_vee(m: FloatArray) -> FloatArray:
    """vee((m − mᵀ)/2) (..., 3) of m (..., 3, 3), the inverse of :func:`skew` on its
    skew part: the rotation vector of a near-identity rotation, the angular velocity
    of Ṙ·Rᵀ."""
    out: FloatArray = 0.5 * np.stack(
        (m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1]),
        axis=-1,
    )
    return out


#: :func:`sum_squares` and :func:`row_max` work column by column on (rows, k) arrays
#: from this many rows per extra column on (rows ≥ this × (k − 1)): one element-wise call
#: per column costs about as much as this many rows of numpy's reduction.
ROWS_PER_COLUMN = 12


def _by_columns(a: FloatArray, widest: int) -> bool:
    """Whether :func:`sum_squares` / :func:`row_max` / :func:`norm_rows` reduce the last
    axis of ``a`` column by column: 2 to ``widest`` columns and at least
    :data:`ROWS_PER_COLUMN` × (k − 1) rows."""
    k = a.shape[-1]
    return a.ndim > 1 and 2 <= k <= widest and a.size >= ROWS_PER_COLUMN * k * (k - 1)


def _column_sum_squares(v: FloatArray) -> FloatArray:
    """Σ v² over the last axis (k ≥ 2), column by column in the reduction's order."""
    sq = v * v
    total: FloatArray = sq[..., 0] + sq[..., 1]
    for j in range(2, v.shape[-1]):
        total += sq[..., j]
    return total


def sum_squares(v: FloatArray) -> FloatArray:
    """Σ v² over the last axis of a float64 array, as ``np.add.reduce(v * v, axis=-1)``.

    numpy reduces a last axis of fewer than 8 entries in order, left to right, but with
    an iterator step per row; with many rows (:data:`ROWS_PER_COLUMN`) the same sums
    are formed column by column (element-wise additions over all rows, in the same order:
    the same values, several times faster)."""
    if _by_columns(v, 7):
        return _column_sum_squares(v)
    out: FloatArray = np.add.reduce(v * v, axis=-1)
    return out


def row_max(a: FloatArray) -> FloatArray:
    """``np.maximum.reduce(a, axis=-1)`` of a float64 (..., k) array; with up to 8 columns
    and many rows (:data:`ROWS_PER_COLUMN`) by k − 1 element-wise maxima of its columns,
    in the reduction's order (the same values, NaN propagated alike): numpy's reduction
    over a short last axis takes an iterator step per row."""
    if not _by_columns(a, 8):
        out: FloatArray = np.maximum.reduce(a, axis=-1)
        return out
    out = np.maximum(a[..., 0], a[..., 1])
    for j in range(2, a.shape[-1]):
        np.maximum(out, a[..., j], out=out)
    return out


def norm_rows(v: FloatArray, keepdims: bool = False) -> FloatArray:
    """|v| over the last axis of a float64 array: ``np.linalg.norm(v, axis=-1)``'s
    arithmetic (√ of the summed squares, :func:`sum_squares`) without its wrapper's
    checks and copy."""
    if not _by_columns(v, 7):
        out: FloatArray = np.sqrt(np.add.reduce(v * v, axis=-1, keepdims=keepdims))
        return out
    total = _column_sum_squares(v)
    root: FloatArray = np.sqrt(total, out=total)
    return root[..., None] if keepdims else root


def unit_rows(v: FloatArray) -> FloatArray:
    """v / |v| over the last axis of a float64 array; zero vectors stay zero."""
    n = norm_rows(v, keepdims=True)
    out: FloatArray = v / np.where(n > 0.0, n, 1.0)
    return out


def vec_of(arr: Any) -> Vec:
    """Components of an array of shape (3,) or (N, 3)."""
    if arr.ndim == 1:
        x, y, z = arr.tolist()
        return (x, y, z)
    return (arr[:, 0], arr[:, 1], arr[:, 2])


def mat_of(arr: Any) -> Mat:
    """Rows of components of an array of shape (3, 3) (Python floats) or (..., 3, 3)
    (arrays of the batch shape)."""
    if arr.ndim == 2:
        r0, r1, r2 = arr.tolist()
        return (tuple(r0), tuple(r1), tuple(r2))
    return tuple(  # type: ignore[return-value]
        tuple(arr[..., i, j] for j in range(3)) for i in range(3)
    )


def mat_array(m: Mat, n: int | None) -> Any:
    """Back to an array: (3, 3) when ``n`` is None (scalar components), else (N, 3, 3)."""
    if n is None:  # a flat tuple converts faster than nested ones
        (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = m
        flat = np.array((a00, a01, a02, a10, a11, a12, a20, a21, a22), dtype=np.float64)
        return flat.reshape(3, 3)
    out = np.empty((n, 3, 3))
    for i in range(3):
        for j in range(3):
            out[:, i, j] = m[i][j]
    return out


def vec_array(v: Vec, n: int | None) -> Any:
    if n is None:
        return np.array(v, dtype=np.float64)
    out = np.empty((n, 3))
    for i in range(3):
        out[:, i] = v[i]
    return out
