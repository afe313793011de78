"""Goals out of reach of a limb with joint limits: reach toward them within the limits.

Tolani, Goswami & Badler (2000) §3.2.1 put an unreachable goal's wrist on the reachable
shell (the limb fully stretched or folded, aimed at the goal); §3.2.4 ("Unsolvable
problems") then minimises the violation numerically. With joint limits the stretched pose
aimed at the goal may break a limit, so :func:`reach_toward` returns instead the pose
*within every limit* whose end-effector point is nearest the goal position — for pose
goals, position distance first and the orientation error second — by bounded SLSQP over
the joint angles (shoulder Euler angles, θ4 and, for pose goals, the wrist Euler angles;
each limited angle boxed by its limits), multi-started from the analytic candidate (the
solver's shell pose, clipped into the limits) and a few fixed points of the box.

Frames and units as in :mod:`core.limb`: the shoulder frame, metres, radians.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ShapeMismatchError
from ..geometry import vec3 as V
from ..geometry.rotations import (
    euler_spec,
    euler_to_matrix,
    matrix_to_euler_families,
    relative_angle,
)
from .model import (
    EPS_LEN,
    EulerLimits,
    Limb,
    LimbLimits,
    bend_direction,
    bend_sign,
    effector_frame,
    least_violating_family,
    wrist_centre,
)
from .unsolvable import bounded_min, central_cost_grad, euler_box

FloatArray = NDArray[np.float64]

Box = list[tuple[float | None, float | None]]

_TAU = 2.0 * math.pi

_STEP = 1e-6


# Distance (rad) kept between a middle Euler angle and gimbal lock in returned poses: the
# outer angles are then recovered from the matrix to ~1e-16 / 5e-7 = 2e-10 rad (within
_GIMBAL_OFFSET = 5e-7

_EXTRA_STARTS = np.random.default_rng(20000601).uniform(0.0, 1.0, (4, 7))


def _into(a: float, lo: float | None, hi: float | None) -> tuple[float, float]:
    """Angle ``a`` shifted by 2πk into [lo, hi], else clipped to the circularly nearer
    bound; returns (angle, how far it was moved)."""
    if lo is None or hi is None:
        return a, 0.0
    d = (a - lo) % _TAU
    if d <= hi - lo:
        return lo + d, 0.0
    over, under = d - (hi - lo), _TAU - d
    return (hi, over) if over <= under else (lo, under)


def _start_angles(rot: FloatArray, lim: EulerLimits | None, box: Box) -> list[float]:
    """The Euler angles of ``rot`` in the family least outside ``lim``
    (:func:`~core.limb.model.least_violating_family`), moved into ``box``."""
    order = "XYZ" if lim is None else lim.order
    fam = least_violating_family(matrix_to_euler_families(rot, order, check=False), lim)
    return [_into(a, lo, hi)[0] for a, (lo, hi) in zip(fam.tolist(), box, strict=True)]


def _off_gimbal(x: FloatArray, first: int, order: str, box: Box) -> None:
    """Move a joint's middle Euler angle (in place) off gimbal lock (±π/2) by
    :data:`_GIMBAL_OFFSET`, inside its box: at the lock only a sum or difference of the
    outer angles is defined, and a limits check that decomposes the matrix (both Euler
    families, first angle 0) may then put the outer angles outside limits they met."""
    m = euler_spec(order).middle
    y = float(x[first + m])
    lock = 0.5 * math.pi + math.pi * round((y - 0.5 * math.pi) / math.pi)
    if abs(y - lock) >= _GIMBAL_OFFSET:
        return
    lo, hi = box[m]
    side = 1.0 if y >= lock else -1.0
    for v in (lock + side * _GIMBAL_OFFSET, lock - side * _GIMBAL_OFFSET):
        if (lo is None or v >= lo) and (hi is None or v <= hi):
            x[first + m] = v
            return


def swivel_of(limb: Limb, shoulder: FloatArray, terminal: FloatArray) -> float | None:
    """φ (rad) of a pose per Eq. (6)–(7): the elbow's direction off the shoulder→terminal
    axis, measured from the swivel reference; None when the elbow is on the axis."""
    tn = float(np.linalg.norm(terminal))
    if tn < 1e-12 * limb.length:
        return None
    n = terminal / tn
    e = shoulder @ np.asarray(limb.a)[:3, 3]
    ep = e - (e @ n) * n
    aref = np.asarray(limb.swivel_reference)
    u = aref - (aref @ n) * n
    un = float(np.linalg.norm(u))
    if float(np.linalg.norm(ep)) < 1e-9 * limb.length or un < 1e-9:
        return None
    u /= un
    return math.atan2(float(ep @ np.cross(n, u)), float(ep @ u))


def pose_swivel(limb: Limb, shoulder: ArrayLike, elbow: float) -> float | None:
    """φ (rad) of the limb pose (R1 ``shoulder``, θ4 ``elbow``): :func:`swivel_of` its
    elbow and wrist centre, the φ :func:`core.solve_limb` needs to give the pose back. A
    straight (or folded) limb, its elbow within :data:`~core.limb.model.STRAIGHT_OFFSET`
    of the shoulder–wrist axis (a T-pose arm, an arm stretched toward a goal beyond
    reach), has the φ of the side its elbow leaves the axis to as θ4 moves away from the
    straight (folded) angle, as :func:`core.solve_limb` places such a limb: the side θ4
    lies on, and at the straight (folded) angle (within ``BEND_NOISE``) toward the middle
    of the elbow limits (without limits: toward positive θ4 from straight, negative from
    folded). None
    only when the wrist centre sits on the shoulder or the reference is along the
    axis. Batched: :func:`pose_swivels` (the same arithmetic on arrays)."""
    r1 = V.mat_of(np.asarray(shoulder, dtype=np.float64).reshape(3, 3))
    phi, ok = _pose_swivel(V.ScalarOps, limb, r1, float(elbow))
    return float(phi) if ok else None


def pose_swivels(limb: Limb, shoulder: ArrayLike, elbow: ArrayLike) -> FloatArray:
    """:func:`pose_swivel` of B limb poses at once: R1 ``shoulder`` (B, 3, 3), θ4
    ``elbow`` (B,) (rad) → φ (B,) (rad), NaN where :func:`pose_swivel` gives None. Each
    row's value is :func:`pose_swivel`'s arithmetic on that row (component-wise, as
    :mod:`core.geometry.vec3` runs it on floats and on arrays; equal to rounding).

    Raises:
        ShapeMismatchError: ``shoulder`` not (B, 3, 3) or ``elbow`` not (B,).
    """
    r1 = np.asarray(shoulder, dtype=np.float64)
    th = np.asarray(elbow, dtype=np.float64)
    if r1.ndim != 3 or r1.shape[1:] != (3, 3) or th.shape != r1.shape[:1]:
        raise ShapeMismatchError(
            f"shoulder must be (B, 3, 3) and elbow (B,), got {r1.shape} and {th.shape}"
        )
    phi, ok = _pose_swivel(V.ArrayOps, limb, V.mat_of(r1), th)
    out: FloatArray = np.where(ok, phi, np.nan)
    return out


def _pose_swivel(ops: V.Ops, limb: Limb, r1: V.Mat, th: Any) -> tuple[Any, Any]:
    """:func:`pose_swivel`'s arithmetic on components (``ops``: Python floats or (B,)
    arrays): φ and whether it is defined (where not, φ is a finite placeholder)."""
    c = limb.constants
    cs, sn = ops.cos(th), ops.sin(th)
    # the wrist centre with the shoulder at rest (solve_circle's triangle, Eq. 7):
    # x_r = tA + RA·Rot(k, θ4)·tB, Rot(k, θ4)·tB by Rodrigues' formula
    rt = V.add(
        V.add(V.scale(c.tb, cs), V.scale(V.cross(c.k, c.tb), sn)),
        V.scale(c.k, (1.0 - cs) * V.dot(c.k, c.tb)),
    )
    x_r = V.add(c.ta, V.mv(c.Ra, rt))
    rw = ops.sqrt(V.dot(x_r, x_r))
    ok = rw >= EPS_LEN * c.length
    x_r = V.scale(x_r, 1.0 / ops.where(ok, rw, 1.0))
    ep = V.dot(c.ta, x_r)
    off = V.axpy(-ep, x_r, c.ta)
    bent = ops.sqrt(V.dot(off, off)) > c.eps_erad
    n = V.mv(r1, x_r)  # the shoulder–wrist axis (unit)

    def elbow_off_axis() -> V.Vec:
        """Bent: the elbow's offset from the axis (swivel_of's, Eq. 6–7)."""
        e = V.mv(r1, c.ta)
        return V.axpy(-V.dot(e, n), n, e)

    def bend_side() -> V.Vec:
        """Straight (folded): the side θ4 leaves the axis to — the side θ4 lies on;
        at the angle (within :data:`~core.limb.model.BEND_NOISE`) into the elbow limits,
        else + (straight) / − (folded)."""
        rng = limb.limits.elbow if limb.limits is not None else None
        sigma = bend_sign(ops, V.wrap(th - c.eq5_pose.delta), th, rng)
        return V.mv(r1, bend_direction(ops, c, x_r, ep, rt, sigma))

    e = ops.lazy(bent, elbow_off_axis, bend_side)
    ok = ok & ops.where(bent, ops.sqrt(V.dot(e, e)) >= 1e-9 * c.length, True)
    aref = V.vec_of(np.asarray(limb.swivel_reference, dtype=np.float64))
    u = V.axpy(-V.dot(aref, n), n, aref)
    un = ops.sqrt(V.dot(u, u))
    ok = ok & (un >= 1e-9)
    u = V.scale(u, 1.0 / ops.where(un >= 1e-9, un, 1.0))
    return ops.atan2(V.dot(e, V.cross(n, u)), V.dot(e, u)), ok


def reach_toward(
    limb: Limb,
    limits: LimbLimits,
    position: FloatArray,
    rotation: FloatArray | None,
    wrist: FloatArray | None,
    point: FloatArray | None,
    start: tuple[FloatArray, float, FloatArray],
) -> tuple[FloatArray, float, FloatArray, float, float]:
    """The pose within ``limits`` whose effector point is nearest ``position``.

    Args:
        position: (3,) m, shoulder frame: the goal of the chain's terminal point — the
            effector point for a position goal, the wrist centre (tG − R_G·R_Eᵀ·tE, as in
            §3.2's decomposition) for a pose goal. rotation: the goal's effector rotation
            (3, 3) for a pose goal (its error minimised second), None for a position goal.
            wrist: R2 held fixed for a position goal (not moved: a given wrist outside the
            wrist limits stays outside). point: the effector-frame point (3,) m of a
            position goal; None for a pose goal (the terminal point is the wrist centre).
        start: (R1, θ4, R2) of the analytic candidate.

    Returns:
        (R1, θ4, R2, terminal-point distance m, orientation error rad) from forward
        kinematics; every shoulder / elbow (/ wrist, pose goals) angle within its limits.
    """
    pose = rotation is not None
    so, sbox = euler_box(limits.shoulder)
    wo, wbox = euler_box(limits.wrist)
    ebox: Box = [limits.elbow if limits.elbow is not None else (None, None)]
    box = sbox + ebox + (wbox if pose else [])
    r1s, ths, r2s = start
    x0 = np.array(
        _start_angles(r1s, limits.shoulder, sbox)
        + [_into(float(ths), *ebox[0])[0]]
        + (_start_angles(r2s, limits.wrist, wbox) if pose else [])
    )
    scale = limb.length
    g = np.asarray(position, dtype=np.float64)

    rgoal = np.eye(3) if rotation is None else np.asarray(rotation, dtype=np.float64)
    held = np.eye(3) if wrist is None else np.asarray(wrist, dtype=np.float64)

    def evaluate(xs: FloatArray) -> tuple[FloatArray, FloatArray]:
        r1 = euler_to_matrix(xs[:, 0:3], so)
        r2 = euler_to_matrix(xs[:, 4:7], wo) if pose else held
        f = effector_frame(limb, r1, xs[:, 3], r2)
        rot = f[:, :3, :3]
        if point is None:
            return wrist_centre(limb, r1, xs[:, 3]), rot
        return f[:, :3, 3] + rot @ point, rot

    def distance2(xs: FloatArray) -> FloatArray:
        """Squared terminal-point distance / length² of (shoulder angles, θ4) rows (the
        wrist is held for position goals and does not move the wrist centre)."""
        r1 = euler_to_matrix(xs[:, 0:3], so)
        if point is None:
            p = wrist_centre(limb, r1, xs[:, 3])
        else:
            f = effector_frame(limb, r1, xs[:, 3], held)
            p = f[:, :3, 3] + f[:, :3, :3] @ point
        out: FloatArray = np.sum((p - g) ** 2, axis=-1) / (scale * scale)
        return out

    lo = np.array([-math.pi if b[0] is None else b[0] for b in box])
    hi = np.array([math.pi if b[1] is None else b[1] for b in box])
    starts = [x0[:4]] + [lo[:4] + u[:4] * (hi[:4] - lo[:4]) for u in _EXTRA_STARTS]
    fg1 = central_cost_grad(distance2, _STEP, 4)
    best4, best_f = x0[:4], float(distance2(x0[None, :4])[0])
    for s in starts:
        x, f = bounded_min(fg1, s, box[:4])
        if f < best_f:
            best4, best_f = x, f
    best_x = np.concatenate([best4, x0[4:]])
    if pose:  # the wrist does not move the wrist centre: orientation over its box alone
        fixed = best_x[:4]
        # The wrist giving the goal's orientation exactly (maybe outside its limits):
        # R1·M·R2·R_E = R_G with F0 = R1·M·R_E (R2 = I) gives R2 = R_E·F0ᵀ·R_G·R_Eᵀ.
        f0 = effector_frame(limb, euler_to_matrix(fixed[:3], so), fixed[3], np.eye(3))[:3, :3]
        re = np.asarray(limb.effector)[:3, :3]
        exact = re @ f0.T @ rgoal @ re.T
        wstarts = [np.array(_start_angles(exact, limits.wrist, wbox)), x0[4:7]]
        wstarts += [lo[4:7] + u[:3] * (hi[4:7] - lo[4:7]) for u in _EXTRA_STARTS]

        def orientation(xs: FloatArray) -> FloatArray:
            _, rot = evaluate(np.hstack([np.broadcast_to(fixed, (len(xs), 4)), xs]))
            out: FloatArray = 3.0 - np.sum(rot * rgoal, axis=(-2, -1))  # 3 − tr(R_Gᵀ R)
            return out

        fgw = central_cost_grad(orientation, _STEP, 3)
        best_w, best_o = x0[4:7], math.inf
        for s in wstarts:
            xw, fw = bounded_min(fgw, s, wbox)
            if fw < best_o:
                best_w, best_o = xw, fw
        best_x = np.concatenate([fixed, best_w])
    best_x = np.clip(
        best_x,
        [-math.inf if b[0] is None else b[0] for b in box],
        [math.inf if b[1] is None else b[1] for b in box],
    )
    for first, order, jbox in ((0, so, sbox), (4, wo, wbox if pose else None)):
        if jbox is not None:
            _off_gimbal(best_x, first, order, jbox)
    r1 = euler_to_matrix(best_x[0:3], so)
    r2 = euler_to_matrix(best_x[4:7], wo) if pose else held
    th = float(best_x[3])
    p, rot = evaluate(best_x[None])
    pe = float(np.linalg.norm(p[0] - g))
    oe = 0.0 if rotation is None else float(relative_angle(rot[0], rotation))
    return r1, th, r2, pe, oe
