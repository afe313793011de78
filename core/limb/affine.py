"""A limb solution refined against the limb's affine chain (stretched segments).

Blender composes a bone chain with each bone's pose scale: a segment scaled along its
length only (stretched) makes its child's frame sheared, so the end bone's pose is no
longer the rigid limb's :meth:`~.model.Limb.forward` for any link lengths.
:func:`core.affine_links` reads those links exactly and :func:`core.chain_pose` composes
them; :func:`refine_on_chain` moves the analytic solution's joint rotations (shoulder R1,
elbow θ about its hinge, wrist R2 where the goal sets it) by Gauss–Newton steps until the
chain's end bone is on the goal as :func:`core.goal_errors` measures it. Each step is the
least-norm joint change that cancels the residual to first order (damped least squares,
Nakamura & Hanafusa 1986; Buss 2004 §5), so the joints the goal leaves free (the swivel,
the twist a partial goal leaves open) stay where the analytic solution put them, to first
order. The Jacobian is taken by forward differences of :func:`core.chain_pose`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidInputError
from ..geometry import chain_pose, goal_errors, orthonormalize_yz, rodrigues, unit_rows
from .feasible import within_limits
from .model import LimbLimits

FloatArray = NDArray[np.float64]

#: Gauss–Newton rounds of :func:`refine_on_chain` (each converges quadratically; a 20 %
#: stretch needs 2–3 from the analytic solution).
CHAIN_ROUNDS = 8
#: Forward-difference step (rad) of the chain Jacobian.
_STEP = 1e-7
#: Starting damping of the least-norm step, relative to the mean of ``J·Jᵀ``'s diagonal:
#: keeps a singular chain (a straight arm) from taking huge steps. A row whose step made
#: it worse goes back and retries with 100× the damping (Levenberg–Marquardt); one that
#: improved divides it by 10.
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


def _skew_vee(m: FloatArray) -> FloatArray:
    """(m − mᵀ)/2 as a vector (..., 3): the rotation vector of a near-identity rotation."""
    return 0.5 * np.stack((m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                           m[..., 1, 0] - m[..., 0, 1]), axis=-1)


def chain_residual(kind: str, axis: FloatArray, end: FloatArray, target: FloatArray
                   ) -> FloatArray:
    """The residual (..., m) that :func:`refine_on_chain` drives to zero: zero exactly when
    :func:`core.goal_errors` is (angles below π). POSITION: head − target (3); POSE: that
    and the skew part of ``Rtᵀ·Re`` (Y-first orthonormalised frames, 3); PARTIAL: the head
    and ``d × w`` for the end axis's direction ``d`` and the target's ``w`` (3 + 3); AIM:
    ``d × w`` with ``w`` the direction from the head to the target (3). A cross product has
    no part along ``d``, so the least-norm step is not thrown along it."""
    pos = end[..., :3, 3] - target[..., :3, 3]
    if kind == "POSITION":
        return pos
    if kind == "POSE":
        re = orthonormalize_yz(end[..., :3, :3])
        rt = orthonormalize_yz(target[..., :3, :3])
        return np.concatenate((pos, _skew_vee(np.swapaxes(rt, -1, -2) @ re)), axis=-1)
    d = unit_rows(end[..., :3, :3] @ axis)
    if kind == "PARTIAL":
        w = unit_rows(target[..., :3, :3] @ axis)
        return np.concatenate((pos, np.cross(d, w)), axis=-1)
    out: FloatArray = np.cross(d, unit_rows(-pos))
    return out


def _exp(v: FloatArray) -> FloatArray:
    """Rotation matrices (..., 3, 3) of rotation vectors (..., 3)."""
    angle = np.linalg.norm(v, axis=-1)
    safe = np.where(angle > 0.0, angle, 1.0)
    axis = np.where((angle > 0.0)[..., None], v / safe[..., None], (1.0, 0.0, 0.0))
    return rodrigues(axis, angle)


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

    Returns a :class:`ChainFit`; each row keeps its best pose (by
    ``position_error + orientation_error``), so a target the chain cannot reach ends at
    the closest pose found, never further than the start.

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
    # unknown j perturbed in slice j + 1 of a (k + 1, n) stack; slice 0 is unperturbed
    d1 = np.zeros((k + 1, 1, 3))
    d1[1:4, 0] = _STEP * np.eye(3)
    dth = np.zeros((k + 1, 1))
    dth[4, 0] = _STEP
    d2 = np.zeros((k + 1, 1, 3))
    if solve_wrist:
        d2[5:8, 0] = _STEP * np.eye(3)
    e1, e2 = _exp(d1), _exp(d2)

    def end_of(a: FloatArray, b: FloatArray, c: FloatArray) -> FloatArray:
        return chain_pose(f, (a, rodrigues(hinge, b), c), ls)

    best = None
    damping = np.full(n, _DAMPING)
    for round_ in range(rounds + 1):
        end = end_of(r1, th, r2)
        pos, ori = goal_errors(kind, ax, end, t)
        score = pos + ori
        if best is None:
            best = [r1, th, r2, pos, ori, score]
        else:  # a row that got worse goes back to its best pose with a larger damping
            better = score < best[5]
            damping = np.where(better, damping * 0.1, damping * 100.0)
            for i, v in enumerate((r1, th, r2, pos, ori, score)):
                best[i] = np.where(better.reshape((-1,) + (1,) * (v.ndim - 1)), v, best[i])
            r1, th, r2 = best[:3]
        todo = (best[3] > position_tolerance) | (best[4] > orientation_tolerance)
        if not todo.any() or round_ == rounds:
            break
        ends = end_of(r1[None] @ e1, th[None] + dth, r2[None] @ e2)  # (k + 1, n, 4, 4)
        res = chain_residual(kind, ax, ends, t[None])  # (k + 1, n, m)
        jac: FloatArray = np.moveaxis((res[1:] - res[:1]) / _STEP, 0, -1)  # (n, m, k)
        jt = np.swapaxes(jac, -1, -2)
        jj = jac @ jt
        m = jac.shape[-2]
        scale = np.trace(jj, axis1=-2, axis2=-1) / m + 1e-300
        y: FloatArray = np.linalg.solve(jj + (damping * scale)[:, None, None] * np.eye(m),
                                        res[0][..., None])
        step = np.where(todo[:, None], -(jt @ y)[..., 0], 0.0)
        r1 = r1 @ _exp(step[:, :3])
        th = th + step[:, 3]
        if solve_wrist:
            r2 = r2 @ _exp(step[:, 4:7])
    assert best is not None
    r1, th, r2, pos, ori = best[:5]
    conv = (pos <= position_tolerance) & (ori <= orientation_tolerance)
    within = within_limits(limits, r1, th, r2)
    if single:
        return ChainFit(r1[0], th[0], r2[0], pos[0], ori[0], conv[0], within[0])
    return ChainFit(r1, th, r2, pos, ori, conv, within)
