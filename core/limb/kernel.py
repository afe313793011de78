"""The closed-form kernel (Tolani et al. §3.2.1–3.2.3, Eq. 5–7): the elbow angle θ4 from
the shoulder–terminal distance (Eq. 5), the swivel circle and its frames (Eq. 6), and the
shoulder and wrist rotations at a swivel angle φ (Eq. 7).

The same code runs on floats (one goal) and on (N,) arrays (a batch) through
:mod:`core.geometry.vec3`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..geometry import vec3 as V
from ..goals import PoseGoal
from .model import (
    EPS_LEN,
    LIMIT_TOLERANCE,
    TINY,
    Limb,
    LimbConstants,
    LimbGoal,
    bend_direction,
    bend_sign,
)


class Circle:
    """θ4, the rest triangle frame (x_r, y_r, z_r) and the goal frame (n, u, v)."""

    __slots__ = ("theta", "x_r", "y_r", "z_r", "n", "u", "v", "w0", "ep", "erad", "rw0", "rg")
    theta: Any
    x_r: V.Vec
    y_r: V.Vec
    z_r: V.Vec
    n: V.Vec
    u: V.Vec
    v: V.Vec
    w0: V.Vec
    ep: Any
    erad: Any
    rw0: Any
    rg: Any


def _reorthonormalise(ops: V.Ops, v: V.Vec, axis: V.Vec) -> V.Vec:
    """v made exactly ⊥ the unit ``axis`` and unit again (a second Gram–Schmidt pass).

    A direction found by dividing a short difference vector (near-straight limb, reference
    nearly along the axis) carries a relative error of eps/length along ``axis``.
    """
    p = V.axpy(-V.dot(v, axis), axis, v)
    return V.scale(p, 1.0 / ops.sqrt(V.dot(p, p)))


def solve_circle(
    ops: V.Ops,
    c: LimbConstants,
    wg: V.Vec,
    tbe: V.Vec,
    aref: V.Vec,
    elbow: tuple[float, float] | None,
    near: Any = None,
) -> Circle:
    """Solve θ4 (Eq. 5) and set up the elbow circle (Eq. 6) and triangle frames (Eq. 7).

    ``wg``: the goal of the chain's terminal point (wrist for pose goals, effector point
    for position goals); ``tbe``: that point in the elbow's distal frame. Out-of-reach
    goals clamp cos(θ4 − δ) to ±1: fully stretched or folded, aimed at the goal.
    """
    k = c.k
    ktb = V.dot(k, tbe)
    kxtb = V.cross(k, tbe)
    # 2 taᵀ Ra Rθ tb = |wg|² − |ta|² − |tb|², i.e. a cosθ + b sinθ = rhs  (Eq. 5)
    a = V.dot(c.ta_l, tbe) - c.kta * ktb
    b = V.dot(c.ta_l, kxtb)
    d2 = V.dot(wg, wg)
    rhs = 0.5 * (d2 - c.ta2 - V.dot(tbe, tbe)) - c.kta * ktb
    r = ops.sqrt(a * a + b * b)
    delta = ops.atan2(b, a)
    beta = ops.acos(rhs / ops.maximum(r, TINY))
    t_plus = V.wrap(delta + beta)
    if elbow is None and near is None:
        theta = t_plus
        plus: Any = True if not ops.batched else np.ones(np.shape(t_plus), dtype=bool)
    elif elbow is None:
        t_minus = V.wrap(delta - beta)
        plus = abs(V.wrap(t_plus - near)) <= abs(V.wrap(t_minus - near))
        theta = ops.where(plus, t_plus, t_minus)
    else:
        theta, plus = pick_root(ops, t_plus, V.wrap(delta - beta), elbow, near)

    def sigma() -> Any:  # which way θ4 moves away from the straight (β = 0) or folded pose
        return bend_sign(ops, ops.where(plus, beta, -beta), theta, elbow)

    cth = ops.cos(theta)
    sth = ops.sin(theta)
    omc = ktb * (1.0 - cth)
    rt = (
        tbe[0] * cth + kxtb[0] * sth + k[0] * omc,
        tbe[1] * cth + kxtb[1] * sth + k[1] * omc,
        tbe[2] * cth + kxtb[2] * sth + k[2] * omc,
    )
    w0 = V.add(c.ta, V.mv(c.Ra, rt))
    rw0 = ops.sqrt(V.dot(w0, w0))
    eps = EPS_LEN * c.length
    x_r = ops.lazy(rw0 > eps, lambda: V.scale(w0, 1.0 / ops.maximum(rw0, TINY)), lambda: c.ta_perp)
    ep = V.dot(c.ta, x_r)
    eperp = V.axpy(-ep, x_r, c.ta)
    erad = ops.sqrt(V.dot(eperp, eperp))
    y_r = ops.lazy(
        erad > c.eps_erad,
        lambda: V.scale(eperp, 1.0 / ops.maximum(erad, TINY)),
        lambda: bend_direction(ops, c, x_r, ep, rt, sigma()),
    )
    y_r = _reorthonormalise(ops, y_r, x_r)
    z_r = V.cross(x_r, y_r)

    rg = ops.sqrt(d2)
    n = ops.lazy(rg > eps, lambda: V.scale(wg, 1.0 / ops.maximum(rg, TINY)), lambda: x_r)
    ap = V.axpy(-V.dot(aref, n), n, aref)
    al = ops.sqrt(V.dot(ap, ap))

    def fallback_u() -> V.Vec:
        yp = V.axpy(-V.dot(y_r, n), n, y_r)
        zp = V.axpy(-V.dot(z_r, n), n, z_r)
        yl = V.dot(yp, yp)
        p = ops.lazy(yl >= 0.5, lambda: yp, lambda: zp)
        pl = ops.sqrt(V.dot(p, p))
        return V.scale(p, 1.0 / pl)

    u = ops.lazy(al > 1e-9, lambda: V.scale(ap, 1.0 / ops.maximum(al, TINY)), fallback_u)
    u = _reorthonormalise(ops, u, n)
    out = Circle()
    out.theta, out.x_r, out.y_r, out.z_r = theta, x_r, y_r, z_r
    out.n, out.u, out.v = n, u, V.cross(n, u)
    out.w0, out.ep, out.erad, out.rw0, out.rg = w0, ep, erad, rw0, rg
    return out


def pick_root(
    ops: V.Ops, t_plus: Any, t_minus: Any, elbow: tuple[float, float], near: Any = None
) -> tuple[Any, Any]:
    """θ4 root rule with elbow limits (lo, hi), depending on the limits only.

    The root inside the limits; if both are, the one nearer (circularly) the limits'
    middle — or ``near`` when given — ties to the + root; if neither, the limit nearest
    (circularly) to a root (the goal then is not reached). Returns (θ4, whether the +
    root's side was taken).
    """
    lo, hi = elbow
    mid = 0.5 * (lo + hi) if near is None else near

    def inside(t: Any) -> Any:
        d = (t - lo) % V.TAU
        return (d <= hi - lo + LIMIT_TOLERANCE) | (d >= V.TAU - LIMIT_TOLERANCE)

    in_p = inside(t_plus)
    in_m = inside(t_minus)
    d_p = abs(V.wrap(t_plus - mid))
    d_m = abs(V.wrap(t_minus - mid))
    take_plus = in_p & ops.where(in_m, d_p <= d_m, True)
    neither = ops.not_(in_p | in_m)
    dist_lo = ops.maximum(-abs(V.wrap(t_plus - lo)), -abs(V.wrap(t_minus - lo)))
    dist_hi = ops.maximum(-abs(V.wrap(t_plus - hi)), -abs(V.wrap(t_minus - hi)))
    clamped = ops.where(dist_lo >= dist_hi, lo, hi)
    theta = ops.where(neither, clamped, ops.where(take_plus, t_plus, t_minus))
    near_plus = abs(V.wrap(t_plus - clamped)) <= abs(V.wrap(t_minus - clamped))
    plus = ops.where(neither, near_plus, take_plus)
    return theta, plus


def shoulder_at(ops: V.Ops, ci: Circle, phi: Any) -> V.Mat:
    """R1(φ) = [n, yφ, zφ]·[x_r, y_r, z_r]ᵀ (Eq. 7), yφ = cosφ û + sinφ v̂."""
    cp = ops.cos(phi)
    sp = ops.sin(phi)
    u, v = ci.u, ci.v
    y_phi = (cp * u[0] + sp * v[0], cp * u[1] + sp * v[1], cp * u[2] + sp * v[2])
    z_phi = (cp * v[0] - sp * u[0], cp * v[1] - sp * u[1], cp * v[2] - sp * u[2])
    return V.frame_product((ci.n, y_phi, z_phi), (ci.x_r, ci.y_r, ci.z_r))


def elbow_matrix(ops: V.Ops, c: LimbConstants, theta: Any) -> V.Mat:
    """Ra·Rθ·Rb = C0 + cosθ·C1 + sinθ·C2."""
    return elbow_matrix_cs(c, ops.cos(theta), ops.sin(theta))


def elbow_matrix_cs(c: LimbConstants, ct: Any, st: Any) -> V.Mat:
    """:func:`elbow_matrix` from cosθ and sinθ."""
    c0, c1, c2 = c.C0, c.C1, c.C2
    return (
        (
            c0[0][0] + ct * c1[0][0] + st * c2[0][0],
            c0[0][1] + ct * c1[0][1] + st * c2[0][1],
            c0[0][2] + ct * c1[0][2] + st * c2[0][2],
        ),
        (
            c0[1][0] + ct * c1[1][0] + st * c2[1][0],
            c0[1][1] + ct * c1[1][1] + st * c2[1][1],
            c0[1][2] + ct * c1[1][2] + st * c2[1][2],
        ),
        (
            c0[2][0] + ct * c1[2][0] + st * c2[2][0],
            c0[2][1] + ct * c1[2][1] + st * c2[2][1],
            c0[2][2] + ct * c1[2][2] + st * c2[2][2],
        ),
    )


def desired_swivel(ci: Circle, swivel: Any, elbow_target: V.Vec | None, ops: V.Ops) -> Any:
    """φ_d: the given swivel, or the one nearest the elbow target (§3.2.2), or 0."""
    if elbow_target is not None:
        p = V.axpy(-ci.ep, ci.n, elbow_target)  # e_d − c, c = (e·x_r) n̂
        return ops.atan2(V.dot(p, ci.v), V.dot(p, ci.u))
    if swivel is not None:
        return V.wrap(swivel)
    return 0.0


class Problem:
    """A goal reduced to the chain's terminal point and, for pose goals, the wrist frame."""

    __slots__ = ("wg", "tbe", "RW", "R2", "goal_p", "n")
    wg: V.Vec
    tbe: V.Vec
    RW: V.Mat | None
    R2: V.Mat | None
    goal_p: V.Vec
    n: int | None


def reduce_goal(limb: Limb, goal: LimbGoal, wrist: Any, n: int | None) -> Problem:
    if isinstance(goal, PoseGoal):
        return reduce_target(limb, np.asarray(goal.position), np.asarray(goal.rotation), None, n)
    return reduce_target(limb, np.asarray(goal.position), None, wrist, n, np.asarray(goal.point))


def reduce_target(
    limb: Limb,
    position: Any,
    rotation: Any,
    wrist: Any,
    n: int | None,
    point: Any = None,
) -> Problem:
    """:func:`reduce_goal` of a target given by its arrays: ``position`` (3,) / (N, 3)
    and ``rotation`` (3, 3) / (N, 3, 3) of a pose goal, or (``rotation`` None) a
    position goal's ``position`` and ``point`` (None: the origin) with the wrist held
    at ``wrist``."""
    c = limb.constants
    pr = Problem()
    pr.n = n
    if rotation is not None:
        rg = V.mat_of(rotation)
        tg = V.vec_of(position)
        rw = rg if c.RE_identity else V.mm(rg, V.transpose(c.RE))  # wrist frame: R_G R_Eᵀ
        pr.RW = rw
        pr.R2 = None
        pr.wg = V.sub(tg, V.mv(rw, c.tE))
        pr.tbe = c.tb
        pr.goal_p = tg
    else:
        r2 = V.mat_of(wrist)
        pr.RW = None
        pr.R2 = r2
        te = c.tE if point is None or not point.any() else V.add(c.tE, V.mv(c.RE, V.vec_of(point)))
        pr.tbe = V.add(c.tb, V.mv(c.Rb, V.mv(r2, te)))
        pr.wg = V.vec_of(position)
        pr.goal_p = pr.wg
    if n is not None:  # broadcast constants to (N,) components
        ones = np.ones(n)
        pr.wg = tuple(x * ones for x in pr.wg)
    return pr


def pose_at(
    ops: V.Ops, c: LimbConstants, pr: Problem, ci: Circle, phi: Any
) -> tuple[V.Mat, V.Mat, Any, Any]:
    """R1, R2, position error and orientation error at swivel φ (errors from FK)."""
    r1 = shoulder_at(ops, ci, phi)
    p = V.mv(r1, ci.w0)  # the terminal point, by forward kinematics
    if pr.RW is None:
        r2 = pr.R2
        d = V.sub(p, pr.goal_p)
        assert r2 is not None
        return r1, r2, ops.sqrt(V.dot(d, d)), 0.0 * ci.rg
    n1 = V.mm(r1, elbow_matrix(ops, c, ci.theta))
    r2 = V.mtm(n1, pr.RW)
    w_fk = V.mm(n1, r2)
    d = V.sub(V.add(p, V.mv(w_fk, c.tE)), pr.goal_p)
    return r1, r2, ops.sqrt(V.dot(d, d)), V.rotation_angle(w_fk, pr.RW, ops)
