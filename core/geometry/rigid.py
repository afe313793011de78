"""Rigid and affine 4×4 transforms, frame orthonormalisation, goal errors and key
continuity: the transform arithmetic the Blender bridge needs, batched and tested here.

Conventions: 4×4 homogeneous matrices acting on column vectors (last row ``0 0 0 1``),
leading batch axes allowed everywhere (``(..., 4, 4)``), never a Python loop over them.
Quaternions are ``(w, x, y, z)``. Units: whatever the inputs use (metres, radians).

Frames of bones under non-uniform scale are sheared; their *orientation* is defined here
as the **Y-first Gram–Schmidt** orthonormalisation (:func:`orthonormalize_yz`): the Y
(bone) axis keeps its direction, Z is made orthogonal to it, X = Y × Z. That choice is
what makes goals exact on sheared frames: for an invertible 3×3 ``F`` and a rotation
``R``, ``orthonormalize_yz(F @ X) == R`` exactly when ``X = orthonormalize_yz(F⁻¹ @ R)``
up to right-multiplication by an upper-triangular (Y, Z, X order) positive matrix, which
the orthonormalisation ignores (see :func:`goal_in_frame`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .rotations import relative_angle
from .vec3 import Mat, wrap

FloatArray = NDArray[np.float64]

__all__ = [
    "orthonormalize_yz",
    "orthonormalize_yz_rows",
    "pose_goal_rows",
    "affine_inverse",
    "rigid_inverse",
    "translation",
    "goal_in_frame",
    "similarity_scale",
    "goal_errors",
    "continuous_quaternions",
    "continuous_eulers",
    "refine_goal",
    "refine_axis_goal",
    "basis_frame",
    "hinged_end",
    "hinged_frame",
    "basis_rotation",
    "goal_offset",
    "apply_goal_offset",
    "transform_points",
    "compose_trs",
    "bend_axis",
    "nearest_eulers",
    "extrapolate_offset",
    "limb_links",
    "affine_links",
    "chain_pose",
]


def _single(a: FloatArray) -> bool:
    """One matrix (no batch axis, or a batch of one): the scalar fast paths apply (numpy's
    per-call overhead dominates the per-frame work of a live solve)."""
    return a.ndim == 2 or (a.ndim == 3 and a.shape[0] == 1)


def _gs_one(a: FloatArray) -> None:
    """:func:`orthonormalize_yz` of one matrix in place, with Python floats."""
    a[:3, :3] = orthonormalize_yz_rows(a[:3, :3].tolist())
    if a.shape[-1] == 4:
        a[3] = (0.0, 0.0, 0.0, 1.0)


def orthonormalize_yz_rows(rows: Sequence[Sequence[float]]) -> Mat:
    """:func:`orthonormalize_yz` of one 3×3 block given as rows of Python floats (only the
    first three entries of the first three rows are read), as three rows of floats: the
    same operations as the single-matrix branch, without an array. Raises ``ValueError``
    for a degenerate frame, as :func:`orthonormalize_yz` does."""
    (_, yx, zx, *_), (_, yy, zy, *_), (_, yz, zz, *_) = rows[:3]
    ny = math.sqrt(yx * yx + yy * yy + yz * yz)
    if ny <= 0.0:
        raise ValueError("degenerate frame: zero Y axis")
    yx, yy, yz = yx / ny, yy / ny, yz / ny
    d = zx * yx + zy * yy + zz * yz
    zx, zy, zz = zx - d * yx, zy - d * yy, zz - d * yz
    nz = math.sqrt(zx * zx + zy * zy + zz * zz)
    if nz <= 0.0:
        raise ValueError("degenerate frame: Z axis parallel to Y")
    zx, zy, zz = zx / nz, zy / nz, zz / nz
    return (
        (yy * zz - yz * zy, yx, zx),
        (yz * zx - yx * zz, yy, zy),
        (yx * zy - yy * zx, yz, zz),
    )


def pose_goal_rows(inverse: FloatArray | Sequence[Sequence[float]],
                   target: Sequence[Sequence[float]]
                   ) -> tuple[tuple[float, float, float], Mat]:
    """:func:`goal_in_frame` of one target frame, on Python floats where it can be:
    ``target`` is the target's 4×4 world frame as rows of floats (its scale is ignored),
    ``inverse`` the frame's :func:`affine_inverse` ((4, 4) or a batch of one, or its rows
    as floats). Returns the
    goal's (position, rotation rows) — the values of ``goal_in_frame(frame, target,
    inverse=inverse)``, bit for bit: the target is orthonormalised as
    :func:`orthonormalize_yz` does, the product's first three rows taken as
    :func:`goal_in_frame` takes them (:func:`_product_rows`), the result orthonormalised
    again; no array is made. Raises ``ValueError`` for a degenerate frame."""
    (x0, y0, z0), (x1, y1, z1), (x2, y2, z2) = orthonormalize_yz_rows(target)
    t = (
        (x0, y0, z0, target[0][3]),
        (x1, y1, z1, target[1][3]),
        (x2, y2, z2, target[2][3]),
        (0.0, 0.0, 0.0, 1.0),
    )
    rows: Sequence[Sequence[float]] = (
        (inverse if inverse.ndim == 2 else inverse[0]).tolist()
        if isinstance(inverse, np.ndarray) else inverse)
    g = _product_rows(rows, t, 3)
    return (g[0][3], g[1][3], g[2][3]), orthonormalize_yz_rows(g)


def _product_rows(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]],
                  rows: int = 4) -> list[tuple[float, float, float, float]]:
    """The first ``rows`` rows of the 4×4 product ``a · b`` (rows of Python floats): entry
    ``(i, j)`` is ``((a[i][0]·b[0][j] + a[i][1]·b[1][j]) + a[i][2]·b[2][j]) + a[i][3]·b[3][j]``,
    every product and sum rounded on its own — what :func:`_affine_product` computes."""
    (b00, b01, b02, b03), (b10, b11, b12, b13), (b20, b21, b22, b23), (b30, b31, b32, b33) = b
    return [
        ((((a0 * b00 + a1 * b10) + a2 * b20) + a3 * b30),
         (((a0 * b01 + a1 * b11) + a2 * b21) + a3 * b31),
         (((a0 * b02 + a1 * b12) + a2 * b22) + a3 * b32),
         (((a0 * b03 + a1 * b13) + a2 * b23) + a3 * b33))
        for a0, a1, a2, a3 in a[:rows]
    ]


def _affine_product(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a @ b`` of 4×4 transforms ``(..., 4, 4)`` (batch axes broadcast), each entry the
    sum over k = 0…3 of ``a[..., i, k] · b[..., k, j]`` with every product and sum rounded
    on its own, in that order: the floats of :func:`_product_rows`, so a one-frame goal on
    Python floats (:func:`pose_goal_rows`) equals a batched one bit for bit. (numpy's
    ``matmul`` goes through BLAS, whose kernels fuse the multiply-adds on machines with
    FMA: its last bit differs, and Python has no fused multiply-add before 3.13.)"""
    if _single(a) and _single(b):
        shape = np.broadcast_shapes(a.shape, b.shape)
        rows = _product_rows((a if a.ndim == 2 else a[0]).tolist(),
                             (b if b.ndim == 2 else b[0]).tolist())
        return np.array(rows).reshape(shape)
    out = a[..., :, 0, None] * b[..., None, 0, :]
    for k in (1, 2, 3):
        out = out + a[..., :, k, None] * b[..., None, k, :]
    return out


def orthonormalize_yz(m: ArrayLike) -> FloatArray:
    """Y-first Gram–Schmidt of the 3×3 part of ``m`` (``(..., 3, 3)`` or ``(..., 4, 4)``).

    Y keeps its direction, Z loses its Y component, X = Y × Z. A 4×4 input keeps its
    translation and gets the last row ``0 0 0 1``. Removes uniform and non-uniform scale
    and float32 noise; exact (to rounding) for rotations. Raises ``ValueError`` for a
    zero Y axis or Z parallel to Y (a degenerate frame).
    """
    a = np.array(m, dtype=np.float64)
    if _single(a):
        _gs_one(a if a.ndim == 2 else a[0])
        return a
    y = a[..., :3, 1]
    ny = np.linalg.norm(y, axis=-1, keepdims=True)
    z = a[..., :3, 2]
    if np.any(ny <= 0.0):
        raise ValueError("degenerate frame: zero Y axis")
    y = y / ny
    z = z - np.sum(z * y, axis=-1, keepdims=True) * y
    nz = np.linalg.norm(z, axis=-1, keepdims=True)
    if np.any(nz <= 0.0):
        raise ValueError("degenerate frame: Z axis parallel to Y")
    z = z / nz
    a[..., :3, 0] = np.cross(y, z)
    a[..., :3, 1] = y
    a[..., :3, 2] = z
    if a.shape[-1] == 4:
        a[..., 3, :] = (0.0, 0.0, 0.0, 1.0)
    return a


def affine_inverse(m: ArrayLike) -> FloatArray:
    """Inverse of affine 4×4 transforms ``(..., 4, 4)`` (any invertible 3×3 part: scale
    and shear allowed). Raises ``numpy.linalg.LinAlgError`` for a singular one."""
    a = np.asarray(m, dtype=np.float64)
    if _single(a):
        return _affine_inverse_one(a)
    # The cofactor formula in numpy, term for term the one of _affine_inverse_one (the
    # same floats as a single matrix gives): no LAPACK call, whose thread pool costs
    # milliseconds per call on a loaded machine.
    p, q, r, x = (a[..., 0, j] for j in range(4))
    u, v, w, y = (a[..., 1, j] for j in range(4))
    g, h, k, z = (a[..., 2, j] for j in range(4))
    c00, c01, c02 = v * k - w * h, r * h - q * k, q * w - r * v
    det = p * c00 + u * c01 + g * c02
    if not bool(np.all((det != 0.0) & np.isfinite(det))):
        raise np.linalg.LinAlgError("Singular matrix")
    s = 1.0 / det
    out = np.zeros(a.shape)
    rows = (
        (c00, c01, c02),
        (w * g - u * k, p * k - r * g, r * u - p * w),
        (u * h - v * g, q * g - p * h, p * v - q * u),
    )
    for i, (e0, e1, e2) in enumerate(rows):
        i0, i1, i2 = e0 * s, e1 * s, e2 * s
        out[..., i, 0], out[..., i, 1], out[..., i, 2] = i0, i1, i2
        out[..., i, 3] = -(i0 * x + i1 * y + i2 * z)
    out[..., 3, 3] = 1.0
    return out


def _affine_inverse_one(a: FloatArray) -> FloatArray:
    """:func:`affine_inverse` of one matrix ((4, 4) or (1, 4, 4)) on Python floats: the
    3×3 inverse by cofactors over the determinant (no LAPACK call: a live solve inverts one
    frame per limb and frame, where a library call's overhead — and, on a loaded machine,
    its thread pool — costs far more than the arithmetic)."""
    (p, q, r, x), (u, v, w, y), (g, h, k, z) = a.reshape(4, 4)[:3].tolist()
    c00, c01, c02 = v * k - w * h, r * h - q * k, q * w - r * v
    det = p * c00 + u * c01 + g * c02
    if not (det != 0.0 and math.isfinite(det)):
        raise np.linalg.LinAlgError("Singular matrix")
    c10, c11, c12 = w * g - u * k, p * k - r * g, r * u - p * w
    c20, c21, c22 = u * h - v * g, q * g - p * h, p * v - q * u
    s = 1.0 / det
    i00, i01, i02 = c00 * s, c01 * s, c02 * s
    i10, i11, i12 = c10 * s, c11 * s, c12 * s
    i20, i21, i22 = c20 * s, c21 * s, c22 * s
    out = np.array(
        (
            (i00, i01, i02, -(i00 * x + i01 * y + i02 * z)),
            (i10, i11, i12, -(i10 * x + i11 * y + i12 * z)),
            (i20, i21, i22, -(i20 * x + i21 * y + i22 * z)),
            (0.0, 0.0, 0.0, 1.0),
        )
    )
    return out if a.ndim == 2 else out[None]


def rigid_inverse(m: ArrayLike) -> FloatArray:
    """Inverse of rigid 4×4 transforms ``(..., 4, 4)`` (transpose, no linear solve)."""
    a = np.asarray(m, dtype=np.float64)
    out = np.zeros(a.shape)
    rt = np.swapaxes(a[..., :3, :3], -1, -2)
    out[..., :3, :3] = rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", rt, a[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def translation(t: ArrayLike) -> FloatArray:
    """Translation matrices ``(..., 4, 4)`` for offsets ``(..., 3)``."""
    v = np.asarray(t, dtype=np.float64)
    out = np.zeros(v.shape[:-1] + (4, 4))
    out[..., :, :] = np.eye(4)
    out[..., :3, 3] = v
    return out


def goal_in_frame(
    frame: ArrayLike,
    target: ArrayLike,
    rigid_target: bool = False,
    inverse: ArrayLike | None = None,
) -> FloatArray:
    """A target frame expressed in an affine ``frame`` as a rigid goal, ``(..., 4, 4)``.

    ``frame``: the (possibly scaled or sheared) frame in which the solved rotations act,
    ``target``: the target's frame in the same space as ``frame`` (its scale is ignored).
    Position: ``frame⁻¹ · p`` exactly (the solved chain's point maps back onto ``p``).
    Rotation: :func:`orthonormalize_yz` of ``frame⁻¹ · orthonormalize_yz(target)``, so the
    chain's end frame pushed through ``frame`` has the target's Y-first orientation.
    ``rigid_target``: the target is already orthonormal (skips its orthonormalisation).
    ``inverse``: ``affine_inverse(frame)`` when the caller has it (a frame that did not
    change since the last goal); ``frame`` is then not read.
    """
    t = np.asarray(target, dtype=np.float64) if rigid_target else orthonormalize_yz(target)
    inv = affine_inverse(frame) if inverse is None else np.asarray(inverse, dtype=np.float64)
    return orthonormalize_yz(_affine_product(inv, t))


def similarity_scale(m: ArrayLike, tol: float = 1e-6) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Per-matrix uniform scale of the 3×3 part of ``m`` and whether it *is* a similarity
    (scale × rotation, no shear, no reflection) within relative tolerance ``tol``.

    Returns ``(scale (...,), ok (...,))``; scale is the mean column length.
    """
    a = np.asarray(m, dtype=np.float64)[..., :3, :3]
    if _single(a):
        (p, q, r), (u, v, w), (x, y, z) = (a if a.ndim == 2 else a[0]).tolist()
        g00, g11, g22 = p * p + u * u + x * x, q * q + v * v + y * y, r * r + w * w + z * z
        sq = (g00 + g11 + g22) / 3.0
        dev1 = max(
            abs(g00 - sq),
            abs(g11 - sq),
            abs(g22 - sq),
            abs(p * q + u * v + x * y),
            abs(p * r + u * w + x * z),
            abs(q * r + v * w + y * z),
        )
        det1 = p * (v * z - w * y) - q * (u * z - w * x) + r * (u * y - v * x)
        good = sq > 0.0 and dev1 <= tol * sq and det1 > 0.0
        shape = a.shape[:-2]
        return (np.full(shape, math.sqrt(max(sq, 0.0))), np.full(shape, good, dtype=bool))
    s2 = np.einsum("...ij,...ij->...", a, a) / 3.0
    gram = np.swapaxes(a, -1, -2) @ a
    dev = np.abs(gram - s2[..., None, None] * np.eye(3)).max(axis=(-1, -2))
    det = np.einsum(
        "...i,...i->...", a[..., :, 0], np.cross(a[..., :, 1], a[..., :, 2])
    )  # no LAPACK call per matrix
    ok = (s2 > 0.0) & (dev <= tol * s2) & (det > 0.0)
    return np.sqrt(s2), ok


def goal_errors(
    kind: str, axis: ArrayLike, end: ArrayLike, target: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Position and orientation error of end frames against target frames.

    ``kind``: ``'POSITION'`` (head to target origin; orientation error 0), ``'POSE'``
    (head, and the angle between the Y-first orientations), ``'PARTIAL'`` (head, and the
    angle between the end frame's ``axis`` and the target's same axis), ``'AIM'`` (0, and
    the angle between the end frame's ``axis`` and the direction from its head to the
    target origin). ``axis`` (3,) is a unit axis of the end frame. ``end`` / ``target``:
    ``(..., 4, 4)`` in one space (scale and shear allowed; positions in that space's
    units, angles in radians). Returns ``(position (...,), orientation (...,))``.
    """
    e = np.asarray(end, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    ax = np.asarray(axis, dtype=np.float64)
    if e.ndim == 2 and t.ndim == 2 and kind in _KINDS:
        try:
            return _goal_errors_one(kind, ax, e, t)
        except ZeroDivisionError:
            pass  # a degenerate frame or direction: the array path says what it gives
    shape = np.broadcast_shapes(e.shape, t.shape)[:-2]
    zero = np.zeros(shape)
    pos = np.linalg.norm(e[..., :3, 3] - t[..., :3, 3], axis=-1) * np.ones(shape)
    if kind == "POSITION":
        return pos, zero
    if kind == "POSE":
        ye, yt = orthonormalize_yz(e[..., :3, :3]), orthonormalize_yz(t[..., :3, :3])
        return pos, relative_angle(ye, yt)
    d = e[..., :3, :3] @ ax
    d = d / np.linalg.norm(d, axis=-1, keepdims=True)
    if kind == "PARTIAL":
        w = t[..., :3, :3] @ ax
    elif kind == "AIM":
        w = t[..., :3, 3] - e[..., :3, 3]
        pos = zero
    else:
        raise ValueError(f"kind must be POSITION, POSE, PARTIAL or AIM, got {kind!r}")
    w = w / np.linalg.norm(w, axis=-1, keepdims=True)
    cross = np.linalg.norm(np.cross(d, w), axis=-1)
    ori: FloatArray = np.arctan2(cross, np.sum(d * w, axis=-1)) * np.ones(shape)
    return pos, ori


_KINDS = ("POSITION", "POSE", "PARTIAL", "AIM")


def _unit3(x: float, y: float, z: float) -> tuple[float, float, float]:
    n = math.sqrt(x * x + y * y + z * z)
    return x / n, y / n, z / n


def _angle3(d: tuple[float, float, float], w: tuple[float, float, float]) -> float:
    """Angle between unit vectors, ``atan2(|d × w|, d · w)`` (as the batched path)."""
    cx, cy, cz = d[1] * w[2] - d[2] * w[1], d[2] * w[0] - d[0] * w[2], d[0] * w[1] - d[1] * w[0]
    return math.atan2(
        math.sqrt(cx * cx + cy * cy + cz * cz), d[0] * w[0] + d[1] * w[1] + d[2] * w[2]
    )


def _goal_errors_one(
    kind: str, ax: FloatArray, e: FloatArray, t: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """:func:`goal_errors` of one end frame against one target on Python floats (a
    verification measures one end bone per limb and frame)."""
    (e00, e01, e02, ex), (e10, e11, e12, ey), (e20, e21, e22, ez) = e[:3].tolist()
    (t00, t01, t02, tx), (t10, t11, t12, ty), (t20, t21, t22, tz) = t[:3].tolist()
    dx, dy, dz = ex - tx, ey - ty, ez - tz
    pos = math.sqrt(dx * dx + dy * dy + dz * dz)
    ori = 0.0
    if kind == "POSE":  # the angle between the Y-first orientations
        ye, yt = _unit3(e01, e11, e21), _unit3(t01, t11, t21)
        ze, zt = (e02, e12, e22), (t02, t12, t22)
        k = ze[0] * ye[0] + ze[1] * ye[1] + ze[2] * ye[2]
        ze = _unit3(ze[0] - k * ye[0], ze[1] - k * ye[1], ze[2] - k * ye[2])
        k = zt[0] * yt[0] + zt[1] * yt[1] + zt[2] * yt[2]
        zt = _unit3(zt[0] - k * yt[0], zt[1] - k * yt[1], zt[2] - k * yt[2])
        xe = (
            ye[1] * ze[2] - ye[2] * ze[1],
            ye[2] * ze[0] - ye[0] * ze[2],
            ye[0] * ze[1] - ye[1] * ze[0],
        )
        xt = (
            yt[1] * zt[2] - yt[2] * zt[1],
            yt[2] * zt[0] - yt[0] * zt[2],
            yt[0] * zt[1] - yt[1] * zt[0],
        )
        ce, ct = (xe, ye, ze), (xt, yt, zt)  # columns

        def m(i: int, j: int) -> float:  # (Reᵀ·Rt)[i, j]
            a, b = ce[i], ct[j]
            return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]

        vx, vy, vz = m(2, 1) - m(1, 2), m(0, 2) - m(2, 0), m(1, 0) - m(0, 1)
        ori = math.atan2(math.sqrt(vx * vx + vy * vy + vz * vz), m(0, 0) + m(1, 1) + m(2, 2) - 1.0)
    elif kind != "POSITION":
        a0, a1, a2 = ax.tolist()
        d = _unit3(
            e00 * a0 + e01 * a1 + e02 * a2,
            e10 * a0 + e11 * a1 + e12 * a2,
            e20 * a0 + e21 * a1 + e22 * a2,
        )
        if kind == "PARTIAL":
            w = _unit3(
                t00 * a0 + t01 * a1 + t02 * a2,
                t10 * a0 + t11 * a1 + t12 * a2,
                t20 * a0 + t21 * a1 + t22 * a2,
            )
        else:  # AIM
            w = _unit3(-dx, -dy, -dz)
            pos = 0.0
        ori = _angle3(d, w)
    return np.array(pos), np.array(ori)


def continuous_quaternions(q: ArrayLike, previous: ArrayLike | None = None) -> FloatArray:
    """Quaternion keys ``(N, 4)`` with signs flipped so that each is in the hemisphere of
    the one before it; the first one in the hemisphere of ``previous`` (4,) when given
    (a kept key before the range), else as given. Same rotations, no 360° spins."""
    a = np.array(q, dtype=np.float64)
    if not len(a):
        return a
    ref = a[:1] if previous is None else np.asarray(previous, dtype=np.float64)[None]
    dots = np.einsum("ij,ij->i", a, np.concatenate([ref, a[:-1]]))
    flips = np.cumprod(np.where(dots < 0.0, -1.0, 1.0))
    a *= flips[:, None]
    return a


def continuous_eulers(e: ArrayLike, previous: ArrayLike | None = None) -> FloatArray:
    """Euler keys ``(N, 3)`` unwrapped (each angle within π of the key before it); the
    first within π of ``previous`` (3,) when given. Same rotations."""
    a = np.array(e, dtype=np.float64)
    if not len(a):
        return a
    if previous is not None:
        p = np.asarray(previous, dtype=np.float64)
        a[0] = p + wrap(a[0] - p)
    out: FloatArray = np.unwrap(a, axis=0, period=2.0 * math.pi)
    return out


def refine_goal(
    goal: ArrayLike, reached: ArrayLike, target: ArrayLike, rotation: bool = True
) -> FloatArray:
    """The next goal of a fixed-point correction (rigid ``(..., 4, 4)``).

    ``rotation=True``: ``goal · reached⁻¹ · target``; when what is reached differs from
    what was asked by a constant offset on either side (``reached = L·goal`` or
    ``goal·C``), one step lands on target. ``rotation=False`` (position-only goals):
    the goal's position moves by ``target − reached`` and its rotation is kept.
    """
    g = np.asarray(goal, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    if rotation:
        out: FloatArray = g @ rigid_inverse(reached) @ t
        return out
    out = g.copy()
    out[..., :3, 3] += t[..., :3, 3] - np.asarray(reached, dtype=np.float64)[..., :3, 3]
    return out


def refine_axis_goal(
    goal: ArrayLike, reached: ArrayLike, target: ArrayLike, model: ArrayLike, aim: bool = False
) -> FloatArray:
    """The next goal of a fixed-point correction for a goal on one axis of the end frame
    (rigid ``(..., 4, 4)``, one space): a partial-orientation goal (position and the
    direction of one axis) or, with ``aim``, an aim goal (that axis's ray through the
    goal's position).

    ``model`` is the end frame the solver's model gave for ``goal`` and ``reached`` the
    one evaluated; their difference is taken as a rotation ``Q = R_reached · R_modelᵀ``
    after the model (what a bone that does not inherit its parent's rotation, or a
    constraint, does). Partial: the position moves by ``target − reached``, and the
    rotation becomes ``R_model · R_reachedᵀ · R_target``, so the model points any axis
    where ``Q`` makes the reached one point along the target's (the twist about it, which
    the goal leaves free, is the model's own). Aim: the aim point is placed, at its
    distance from the model's head, along ``Qᵀ`` of the direction from the reached head
    to the target's position. One step lands on target when ``Q`` and the head stay the
    same."""
    g = np.asarray(goal, dtype=np.float64)
    r = np.asarray(reached, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    m = np.asarray(model, dtype=np.float64)
    back = m[..., :3, :3] @ np.swapaxes(r[..., :3, :3], -1, -2)  # Qᵀ
    out = np.array(np.broadcast_to(g, np.broadcast_shapes(g.shape, r.shape, t.shape, m.shape)))
    if aim:
        w = t[..., :3, 3] - r[..., :3, 3]
        w = w / np.linalg.norm(w, axis=-1, keepdims=True)
        reach = np.linalg.norm(g[..., :3, 3] - m[..., :3, 3], axis=-1, keepdims=True)
        out[..., :3, 3] = m[..., :3, 3] + reach * np.einsum("...ij,...j->...i", back, w)
        return out
    out[..., :3, :3] = back @ t[..., :3, :3]
    out[..., :3, 3] += t[..., :3, 3] - r[..., :3, 3]
    return out


def goal_offset(goal: ArrayLike, target: ArrayLike) -> FloatArray:
    """The offset ``D`` (``(..., 4, 4)``) between an asked goal and the target it aims
    at: rotation ``R_goal · R_targetᵀ`` and translation ``p_goal − p_target``, so that
    :func:`apply_goal_offset` ``(D, target) == goal``. A verification that had to ask
    for ``goal`` to reach ``target`` starts the next, similar target from it."""
    g = np.asarray(goal, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    out = np.zeros(np.broadcast_shapes(g.shape, t.shape))
    out[..., :3, :3] = g[..., :3, :3] @ np.swapaxes(t[..., :3, :3], -1, -2)
    out[..., :3, 3] = g[..., :3, 3] - t[..., :3, 3]
    out[..., 3, 3] = 1.0
    return out


def extrapolate_offset(*offsets: ArrayLike) -> FloatArray:
    """Goal offsets (see :func:`goal_offset`) of consecutive frames, oldest first,
    extrapolated one frame on: one offset is kept; from two, the translation linearly
    (``2·t₁ − t₀``) and the rotation by repeating the last step (``(R₁·R₀ᵀ)·R₁``); from
    three (the last three are used), the translation quadratically (``3·t₂ − 3·t₁ + t₀``)
    and the rotation by a step grown as much as the last one grew (steps ``A = R₁·R₀ᵀ``,
    ``B = R₂·R₁ᵀ``: ``B·Aᵀ·B·R₂``; exact for a turn about a fixed axis whose angle is
    quadratic in time), re-orthonormalised. For offsets that change smoothly from frame
    to frame (a checked bake's corrections: the grown step needs about half as many
    corrective solves as the repeated one)."""
    m = [np.asarray(o, dtype=np.float64) for o in offsets]
    if not m:
        raise ValueError("extrapolate_offset needs at least one offset")
    out = np.array(m[-1])
    if len(m) == 1:
        return out
    p, q = m[-2][..., :3, :3], m[-1][..., :3, :3]
    step = q @ np.swapaxes(p, -1, -2)
    if len(m) == 2:
        out[..., :3, :3] = step @ q
        out[..., :3, 3] = 2.0 * m[-1][..., :3, 3] - m[-2][..., :3, 3]
    else:
        before = p @ np.swapaxes(m[-3][..., :3, :3], -1, -2)
        out[..., :3, :3] = step @ np.swapaxes(before, -1, -2) @ step @ q
        out[..., :3, 3] = 3.0 * m[-1][..., :3, 3] - 3.0 * m[-2][..., :3, 3] + m[-3][..., :3, 3]
    return orthonormalize_yz(out)


def apply_goal_offset(offset: ArrayLike, target: ArrayLike) -> FloatArray:
    """The goal ``offset`` (see :func:`goal_offset`) asks for when aiming at ``target``."""
    d = np.asarray(offset, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    out = np.array(np.broadcast_to(t, np.broadcast_shapes(d.shape, t.shape)))
    out[..., :3, :3] = d[..., :3, :3] @ t[..., :3, :3]
    out[..., :3, 3] = t[..., :3, 3] + d[..., :3, 3]
    return out


def transform_points(m: ArrayLike, p: ArrayLike) -> FloatArray:
    """Points ``p`` (``(..., 3)``) mapped by affine 4×4 ``m`` (``(..., 4, 4)``, broadcast)."""
    a = np.asarray(m, dtype=np.float64)
    out: FloatArray = (
        np.einsum("...ij,...j->...i", a[..., :3, :3], np.asarray(p, dtype=np.float64))
        + a[..., :3, 3]
    )
    return out


def compose_trs(location: ArrayLike, rotation: ArrayLike, scale: ArrayLike) -> FloatArray:
    """``T(location) · R · S(scale)`` as ``(..., 4, 4)`` (Blender's object and bone local
    matrices): location ``(..., 3)``, rotation ``(..., 3, 3)``, scale ``(..., 3)``."""
    loc = np.asarray(location, dtype=np.float64)
    r = np.asarray(rotation, dtype=np.float64)
    s = np.asarray(scale, dtype=np.float64)
    shape = np.broadcast_shapes(loc.shape[:-1], r.shape[:-2], s.shape[:-1])
    out = np.zeros(shape + (4, 4))
    out[..., :3, :3] = r * s[..., None, :]
    out[..., :3, 3] = loc
    out[..., 3, 3] = 1.0
    return out


def bend_axis(upper: ArrayLike, lower: ArrayLike, straight_sine: float = 1e-4) -> FloatArray | None:
    """The axis (in the lower bone's frame, unit (3,)) about which a positive angle bends a
    two-bone chain further: ``upper_Y × lower_Y`` expressed in ``lower``. ``upper`` /
    ``lower``: the bones' rest rotations (3×3, Y along the bone). None when the chain is
    straight (the sine of the bend below ``straight_sine``)."""
    ru = np.asarray(upper, dtype=np.float64)[:3, :3]
    rl = np.asarray(lower, dtype=np.float64)[:3, :3]
    c = np.cross(ru[:, 1], rl[:, 1])
    n = float(np.linalg.norm(c))
    if n < straight_sine:
        return None
    k: FloatArray = rl.T @ (c / n)
    out: FloatArray = k / np.linalg.norm(k)
    return out


def nearest_eulers(
    families: ArrayLike, current: ArrayLike, allowed: ArrayLike | None = None
) -> FloatArray:
    """Pick, frame by frame, one of two Euler families: ``families`` ``(N, 2, 3)`` (the two
    angle triples of each rotation), ``allowed`` ``(N, 2)`` (e.g. inside the joint limits;
    a frame with neither allowed may take both). Each pick is the allowed family nearest
    (sum of wrapped angle differences) the previous pick, the first nearest ``current``
    (3,). Sequential by nature: each frame depends on the previous pick. Returns ``(N, 3)``."""
    fam = np.asarray(families, dtype=np.float64)
    ok = np.ones(fam.shape[:2], dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    ok = np.where(ok.any(axis=1, keepdims=True), ok, True)
    out = np.empty((len(fam), 3))
    cur = np.asarray(current, dtype=np.float64)
    for n in range(len(fam)):
        d = np.abs(wrap(fam[n] - cur)).sum(axis=1)
        d = np.where(ok[n], d, np.inf)
        cur = out[n] = fam[n, int(np.argmin(d))]
    return out


def basis_frame(pose: ArrayLike, basis: ArrayLike) -> FloatArray:
    """The frame a bone's local rotation and scale act in: ``pose · (basis without its
    translation)⁻¹`` for pose matrices ``pose`` and local matrices ``basis`` (``(..., 4,
    4)``, Blender's ``matrix`` and ``matrix_basis``). With that frame ``F``, the bone's
    pose for another local rotation ``R`` (same scale ``S``) is ``F · R · S``: its head
    (translation) does not depend on its own rotation. Exact whatever the parent chain
    does (scale, inherit modes, constraints above the bone)."""
    b = np.array(basis, dtype=np.float64)
    b[..., :3, 3] = 0.0
    out: FloatArray = np.asarray(pose, dtype=np.float64) @ affine_inverse(b)
    return out


def basis_rotation(basis: ArrayLike) -> FloatArray:
    """The rotation ``R`` of local matrices ``basis = T · R · S`` (``(..., 4, 4)`` →
    ``(..., 3, 3)``; S positive diagonal, as Blender composes ``matrix_basis``)."""
    b = np.asarray(basis, dtype=np.float64)[..., :3, :3]
    out: FloatArray = b / np.linalg.norm(b, axis=-2, keepdims=True)
    return out


def hinged_end(to_frame: ArrayLike, poses: ArrayLike, link: ArrayLike
               ) -> tuple[FloatArray, FloatArray]:
    """A limb's end bone that does not inherit its parent's rotation, for a rigid limb
    model whose end frame is ``lower · link · R2``.

    ``poses`` ``(..., 3, 4, 4)``: the evaluated lower and end bones' pose matrices and
    the end bone's rest matrix, in one space (armature space); ``to_frame`` ``(..., 4,
    4)``: from that space into the model's frame (its 3×3 part a rotation times a uniform
    scale); ``link``: the model's rigid lower → end rotation ``(..., 3, 3)``. Returns
    ``(wrist, acts_in)`` in the model's frame, ``(..., 3, 3)`` each: the wrist R2 that
    gives the end bone's evaluated orientation (held goals keep it relative to the lower
    bone; Y-first orthonormalised) and :func:`hinged_frame` of its rest."""
    p = np.asarray(poses, dtype=np.float64)
    m = np.asarray(to_frame, dtype=np.float64)[..., :3, :3]
    lower = orthonormalize_yz(m @ p[..., 0, :3, :3])
    end = orthonormalize_yz(m @ p[..., 1, :3, :3])
    wrist: FloatArray = np.swapaxes(lower @ np.asarray(link, dtype=np.float64), -1, -2) @ end
    return wrist, hinged_frame(to_frame, p[..., 2, :, :])


def hinged_frame(to_frame: ArrayLike, rest: ArrayLike) -> FloatArray:
    """The rotation ``(..., 3, 3)``, in a model's frame, that the local rotation of a bone
    that does not inherit its parent's rotation acts in.

    Blender evaluates such a bone's orientation as its rest orientation (``rest``, the
    bone's ``matrix_local``, armature space) scaled by what it inherits of its parent's
    scale, times its local rotation ``R``: the parent's rotation does not enter. With
    ``to_frame`` ``(..., 4, 4)`` from armature space into the model's frame, the frame
    is ``F = orth(to_frame · rest)`` (Y-first) and the local rotation that shows a model
    orientation ``M`` is ``Fᵀ · M``: exact where the inherited scale is uniform (else the
    pose is off by the shear it adds, and verified)."""
    m = np.asarray(to_frame, dtype=np.float64)[..., :3, :3]
    return orthonormalize_yz(m @ np.asarray(rest, dtype=np.float64)[..., :3, :3])


def limb_links(
    pose: ArrayLike, basis: ArrayLike, tol: float = 1e-6
) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_]]:
    """A three-bone limb's links as Blender evaluates them, for a rigid limb model.

    ``pose``, ``basis``: ``(..., 3, 4, 4)`` pose and local matrices of (upper, lower,
    end) in one space (armature space). Returns ``(frame, a, b, ok)``: ``frame`` the
    upper bone's :func:`basis_frame`; ``a`` / ``b`` rigid ``(..., 4, 4)`` links such that
    ``frame · R1 · a · Rθ · b · R2`` is the end bone's pose up to a uniform scale of its
    3×3 part, whatever sits between the bones (helper bones, pose scale of the upper and
    lower bones); ``ok`` whether that holds — each link is a similarity (uniform scale
    and rotation); a stretched (non-uniformly scaled) segment is not. The lower bone's
    and the end bone's rotations must act in frames that follow their parents (Inherit
    Rotation on, full Inherit Scale) for the links to stay constant while R1, Rθ change.
    """
    p = np.asarray(pose, dtype=np.float64)
    bs = np.asarray(basis, dtype=np.float64)
    frames = basis_frame(p, bs)  # (..., 3, 4, 4)
    rot = np.zeros(p.shape)
    rot[..., :3, :3] = basis_rotation(bs)
    rot[..., 3, 3] = 1.0
    # link i: (frame_i · R_i)⁻¹ · frame_{i+1} = S_i · (what sits between the bones)
    link = affine_inverse(frames[..., :2, :, :] @ rot[..., :2, :, :]) @ frames[..., 1:, :, :]
    s, ok = similarity_scale(link, tol)
    a = link[..., 0, :, :].copy()
    b = link[..., 1, :, :].copy()
    a[..., :3, :3] /= s[..., 0, None, None]
    b[..., :3, :3] /= s[..., 1, None, None]
    b[..., :3, 3] *= s[..., 0, None]
    return frames[..., 0, :, :], orthonormalize_yz(a), orthonormalize_yz(b), ok.all(axis=-1)


def affine_links(pose: ArrayLike, basis: ArrayLike
                 ) -> tuple[FloatArray, tuple[FloatArray, ...]]:
    """A bone chain's links exactly as Blender composes them, scale and shear included.

    ``pose``, ``basis``: ``(..., K, 4, 4)`` pose and local matrices of K bones in one
    space, each bone's rotation acting in a frame that follows the bone before it
    (Inherit Rotation on, full Inherit Scale; anything constant may sit between them).
    Returns ``(frame, links)``: ``frame`` the first bone's :func:`basis_frame` and K
    affine ``(..., 4, 4)`` links (``L_i = (F_i · R_i)⁻¹ · F_{i+1}``: bone i's pose scale
    and what sits between the bones; the last one ``(F_K · R_K)⁻¹ · pose_K``, the last
    bone's own scale) such that :func:`chain_pose` ``(frame, rotations, links)`` is the
    last bone's pose for any local rotations with the same locations and scales. Unlike
    :func:`limb_links` nothing is made rigid: a stretched segment stays stretched.
    """
    p = np.asarray(pose, dtype=np.float64)
    frames = basis_frame(p, basis)
    rot = np.zeros(p.shape)
    rot[..., :3, :3] = basis_rotation(basis)
    rot[..., 3, 3] = 1.0
    inv = affine_inverse(frames @ rot)
    links = [inv[..., i, :, :] @ frames[..., i + 1, :, :] for i in range(p.shape[-3] - 1)]
    links.append(inv[..., -1, :, :] @ p[..., -1, :, :])
    return frames[..., 0, :, :], tuple(links)


def chain_pose(frame: ArrayLike, rotations: tuple[ArrayLike, ...],
               links: tuple[ArrayLike, ...]) -> FloatArray:
    """``frame · R_1 · L_1 · … · R_K · L_K`` (``(..., 4, 4)``, batch axes broadcast): the
    last bone's pose of a chain whose links came from :func:`affine_links`, for local
    rotations ``R_i`` (``(..., 3, 3)``)."""
    out = np.asarray(frame, dtype=np.float64)
    for r, link in zip(rotations, links, strict=True):
        out = _times_rotation(out, np.asarray(r, dtype=np.float64)) @ np.asarray(
            link, dtype=np.float64)
    return out


def _times_rotation(m: FloatArray, r: FloatArray) -> FloatArray:
    """``m · R`` for affine ``m`` (``(..., 4, 4)``) and a rotation ``R`` (``(..., 3, 3)``)."""
    shape = np.broadcast_shapes(m.shape[:-2], r.shape[:-2])
    out = np.empty(shape + (4, 4))
    out[..., :, :3] = m[..., :, :3] @ r
    out[..., :, 3] = m[..., :, 3]
    return out
