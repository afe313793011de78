"""A limb solution refined against the limb's affine chain (stretched segments).

Blender composes a bone chain with each bone's pose scale: a segment scaled along its
length only (stretched) makes its child's frame sheared, so the end bone's pose is no
longer the rigid limb's :meth:`~.model.Limb.forward` for any link lengths.
:func:`core.affine_links` reads those links exactly and :func:`core.chain_pose` composes
them; :func:`refine_on_chain` moves the analytic solution's joint rotations (shoulder R1,
elbow θ about its hinge, wrist R2 where the goal sets it) by Gauss–Newton steps until the
chain's end bone is on the goal as :func:`core.goal_errors` measures it. Each step is the
least-norm joint change that cancels the residual to first order, damped: Buss (2009),
*Introduction to IK with Jacobian Transpose, Pseudoinverse and Damped Least Squares
methods*, §5, ``Δθ = Jᵀ(J·Jᵀ + λ²I)⁻¹·e`` (Levenberg–Marquardt: λ grows on a step that
makes the residual larger, shrinks on one that does not). The joints the goal leaves free
(the swivel, the twist a partial goal leaves open) thus stay where the analytic solution
put them, to first order. The Jacobian is taken by forward differences of
:func:`core.chain_pose`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidInputError
from ..geometry import (
    chain_pose,
    cross_rows,
    goal_errors,
    orthonormalize_yz,
    rodrigues,
    unit_rows,
)
from ..geometry.vec3 import skew_vee
from .feasible import within_limits
from .model import LimbLimits

FloatArray = NDArray[np.float64]

#: Steps of :func:`refine_on_chain` at most (measured: 0–4 from the analytic solution on
#: 20–25 % stretches to a tenth of the status tolerance; up to 12 on a mocap thigh scaled
#: (1.1, 1.3, 0.9), where the rigid solution starts far off). Rows stop as they converge.
CHAIN_ROUNDS = 16
#: Forward-difference step (rad) of the chain Jacobian.
_STEP = 1e-7
#: Smallest damping of the least-norm step, relative to the mean of ``J·Jᵀ``'s diagonal:
#: keeps a singular chain (a straight arm) from taking huge steps. A row whose step made
#: its residual larger goes back and retries with 10× the damping (Levenberg–Marquardt);
#: one that improved divides it by 10, down to this.
_DAMPING = 1e-9

_KINDS = ("POSITION", "POSE", "PARTIAL", "AIM")


@dataclass(frozen=True)
class ChainFit:
    """Result of :func:`refine_on_chain` (arrays with the input's leading axis N).

    Attributes:
        shoulder: R1 (N, 3, 3). elbow: θ (N,) rad about the hinge. wrist: R2 (N, 3, 3)
            (the given one where the goal holds it).
        position_error, orientation_error: (N,) of the chain's end bone against the
            target (:func:`core.goal_errors`: metres in the target's space, radians).
        converged: (N,) within the tolerances.
        within_limits: (N,) every joint within the limits (True without limits).
    """

    shoulder: FloatArray
    elbow: FloatArray
    wrist: FloatArray
    position_error: FloatArray
    orientation_error: FloatArray
    converged: NDArray[np.bool_]
    within_limits: NDArray[np.bool_]


def chain_residual(kind: str, axis: FloatArray, end: FloatArray, target: FloatArray
                   ) -> FloatArray:
    """The residual (..., m) that :func:`refine_on_chain` drives to zero: zero exactly when
    :func:`core.goal_errors` is (angles below π). POSITION: head − target (3); POSE: that
    and the skew part of ``Rtᵀ·Re`` (Y-first orthonormalised frames, 3); PARTIAL: the head
    and ``d × w`` for the end axis's direction ``d`` and the target's ``w`` (3 + 3); AIM:
    ``d × w`` with ``w`` the direction from the head to the target (3). A cross product has
    no part along ``d``, so the least-norm step is not thrown along it."""
    return _residual(kind, axis, end, target[..., :3, 3], _target_part(kind, axis, target))


def _target_part(kind: str, axis: FloatArray, target: FloatArray) -> FloatArray | None:
    """What of the target the residual compares beside its position: the Y-first rotation
    (POSE), the unit axis (PARTIAL), nothing (POSITION, AIM)."""
    if kind == "POSE":
        return np.swapaxes(orthonormalize_yz(target[..., :3, :3]), -1, -2)
    if kind == "PARTIAL":
        return unit_rows(target[..., :3, :3] @ axis)
    return None


def _residual(kind: str, axis: FloatArray, end: FloatArray, tpos: FloatArray,
              part: FloatArray | None) -> FloatArray:
    pos = end[..., :3, 3] - tpos
    if kind == "POSITION":
        return pos
    if kind == "POSE":
        assert part is not None  # Rtᵀ
        return np.concatenate((pos, skew_vee(part @ orthonormalize_yz(end[..., :3, :3]))),
                              axis=-1)
    d = unit_rows(end[..., :3, :3] @ axis)
    if kind == "PARTIAL":
        assert part is not None
        return np.concatenate((pos, cross_rows(d, part)), axis=-1)
    out: FloatArray = cross_rows(d, unit_rows(-pos))
    return out


def _exp(v: FloatArray) -> FloatArray:
    """Rotation matrices (..., 3, 3) of rotation vectors (..., 3)."""
    angle = np.linalg.norm(v, axis=-1)
    safe = np.where(angle > 0.0, angle, 1.0)
    axis = np.where((angle > 0.0)[..., None], v / safe[..., None], (1.0, 0.0, 0.0))
    return rodrigues(axis, angle)


def _perturbations(k: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(R1 factors (k + 1, 1, 3, 3), θ offsets (k + 1, 1), R2 factors (k + 1, 1, 3, 3)):
    unknown j (R1's rotation vector 0–2, θ 3, R2's 4–6) moved by :data:`_STEP` in slice
    j + 1 of a stack whose slice 0 is unmoved."""
    d1 = np.zeros((k + 1, 1, 3))
    d1[1:4, 0] = _STEP * np.eye(3)
    dth = np.zeros((k + 1, 1))
    dth[4, 0] = _STEP
    d2 = np.zeros((k + 1, 1, 3))
    d2[5:8, 0] = _STEP * np.eye(3)[: k - 4]
    return _exp(d1), dth, _exp(d2)


#: :func:`_perturbations` of the 4 (held wrist) and 7 unknowns.
_MOVES = {4: _perturbations(4), 7: _perturbations(7)}


def _solve_spd(a: FloatArray, b: FloatArray) -> FloatArray:
    """x with ``a·x = b`` for symmetric positive definite ``a`` (n, m, m), ``b`` (n, m):
    Gaussian elimination without pivoting (stable for such matrices), vectorised over
    the rows. Not LAPACK: for m ≤ 6 its call overhead, and its thread pool on a loaded
    machine, cost more than the arithmetic (see docs/decisions.md)."""
    a = a.copy()
    b = b.copy()
    m = a.shape[-1]
    for i in range(m - 1):
        f = a[:, i + 1:, i] / a[:, i, i, None]
        a[:, i + 1:, i:] -= f[:, :, None] * a[:, i, None, i:]
        b[:, i + 1:] -= f * b[:, i, None]
    x = np.empty_like(b)
    for i in range(m - 1, -1, -1):
        x[:, i] = (b[:, i] - np.einsum("nj,nj->n", a[:, i, i + 1:], x[:, i + 1:])) / a[:, i, i]
    return x


def refine_on_chain(
    frame: ArrayLike,
    links: tuple[ArrayLike, ...],
    shoulder: ArrayLike,
    elbow: ArrayLike,
    wrist: ArrayLike,
    hinge_axis: ArrayLike,
    kind: str,
    axis: ArrayLike,
    target: ArrayLike,
    *,
    solve_wrist: bool,
    limits: LimbLimits | None = None,
    position_tolerance: float = 1e-10,
    orientation_tolerance: float = 1e-10,
    rounds: int = CHAIN_ROUNDS,
) -> ChainFit:
    """Refine a limb pose so that the affine chain's end bone reaches the goal.

    Args:
        frame: (N, 4, 4) or (4, 4) the frame the shoulder rotation acts in (any affine
            matrix: the same space as ``target``).
        links: the (upper, lower, end) links of :func:`core.affine_links` ((4, 4) or
            (N, 4, 4) each).
        shoulder, wrist: R1, R2 ((N,) 3, 3) to start from (the analytic solution's);
            elbow: θ ((N,) rad) about ``hinge_axis`` (3,).
        kind: the goal type, ``'POSITION'``, ``'POSE'``, ``'PARTIAL'`` or ``'AIM'`` (as
            :func:`core.goal_errors` measures it); ``axis`` (3,) the end bone's unit axis.
        target: ((N,) 4, 4) target frames in the space of ``frame``.
        solve_wrist: move R2 too (goals that set the end bone's rotation); else R2 is
            held (position and aim goals).
        limits: the limb's joint limits, only to report ``within_limits`` (the steps do
            not enforce them).
        position_tolerance, orientation_tolerance: stop when every row is within them
            (metres in ``target``'s space, radians).
        rounds: at most this many Gauss–Newton steps.

    Returns a :class:`ChainFit`; each row keeps its best pose (the smallest residual,
    :func:`chain_residual`), so a target the chain cannot reach ends at the closest pose
    found, never further than the start.

    Raises:
        InvalidInputError: unknown ``kind``.
    """
    if kind not in _KINDS:
        raise InvalidInputError(f"kind must be one of {_KINDS}, got {kind!r}")
    f = np.asarray(frame, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    single = t.ndim == 2 and f.ndim == 2 and np.ndim(elbow) == 0
    r1 = np.array(shoulder, dtype=np.float64).reshape(-1, 3, 3)
    r2 = np.array(wrist, dtype=np.float64).reshape(-1, 3, 3)
    th = np.array(elbow, dtype=np.float64).reshape(-1)
    n = max(len(r1), len(th), 1 if t.ndim == 2 else len(t))
    r1, r2 = np.broadcast_to(r1, (n, 3, 3)).copy(), np.broadcast_to(r2, (n, 3, 3)).copy()
    th = np.broadcast_to(th, (n,)).copy()
    t = np.broadcast_to(t, (n, 4, 4))
    f = np.broadcast_to(f, (n, 4, 4))
    ls = tuple(np.asarray(x, dtype=np.float64) for x in links)
    hinge = unit_rows(np.asarray(hinge_axis, dtype=np.float64))
    ax = np.asarray(axis, dtype=np.float64)
    k = 7 if solve_wrist else 4
    e1, dth, e2 = _MOVES[k]
    tpos, part = t[:, :3, 3], _target_part(kind, ax, t)

    def end_of(a: FloatArray, b: FloatArray, c: FloatArray) -> FloatArray:
        return chain_pose(f, (a, rodrigues(hinge, b), c), ls)

    def pick(better: NDArray[np.bool_], new: FloatArray, old: FloatArray) -> FloatArray:
        out: FloatArray = np.where(better.reshape(better.shape + (1,) * (new.ndim - 1)),
                                   new, old)
        return out

    best: list[FloatArray] = []
    damping = np.full(n, _DAMPING)
    for round_ in range(rounds + 1):
        # the pose and its k perturbations in one stack: slice 0 gives the residual, the
        # others the Jacobian by forward differences
        ends = end_of(r1[None] @ e1, th[None] + dth, r2[None] @ e2)  # (k + 1, n, 4, 4)
        res = _residual(kind, ax, ends, tpos, part)  # (k + 1, n, m)
        norm2 = np.einsum("nm,nm->n", res[0], res[0])
        end = ends[0]
        if best:  # a row that got worse goes back to its best pose, more damped
            better = norm2 < best[5]
            damping = np.where(better, np.maximum(damping * 0.1, _DAMPING), damping * 10.0)
            best = [pick(better, v, b) for v, b in zip((r1, th, r2, end, np.moveaxis(
                res, 0, 1), norm2), best, strict=True)]
            r1, th, r2, end = best[:4]
            res = np.moveaxis(best[4], 1, 0)
        else:
            best = [r1, th, r2, end, np.moveaxis(res, 0, 1), norm2]
        pos, ori = goal_errors(kind, ax, end, t)
        todo = (pos > position_tolerance) | (ori > orientation_tolerance)
        if not todo.any() or round_ == rounds:
            break
        jac: FloatArray = np.moveaxis((res[1:] - res[:1]) / _STEP, 0, -1)  # (n, m, k)
        jt = np.swapaxes(jac, -1, -2)
        jj = jac @ jt
        m = jac.shape[-2]
        scale = np.trace(jj, axis1=-2, axis2=-1) / m + 1e-300
        y = _solve_spd(jj + (damping * scale)[:, None, None] * np.eye(m), res[0])
        step = np.where(todo[:, None], -(jt @ y[..., None])[..., 0], 0.0)
        r1 = r1 @ _exp(step[:, :3])
        th = th + step[:, 3]
        if solve_wrist:
            r2 = r2 @ _exp(step[:, 4:7])
    conv = (pos <= position_tolerance) & (ori <= orientation_tolerance)
    within = within_limits(limits, r1, th, r2)
    if single:
        return ChainFit(r1[0], th[0], r2[0], pos[0], ori[0], conv[0], within[0])
    return ChainFit(r1, th, r2, pos, ori, conv, within)
