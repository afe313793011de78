"""The single-goal fast path: the scalar mirror of :func:`~core.limb.pose.solve_general`
for one position or pose goal without limits (or elbow limits only).

It repeats, in plain Python floats, the arithmetic of
:func:`~core.limb.kernel.reduce_goal`, :func:`~core.limb.kernel.solve_circle`,
:func:`~core.limb.kernel.desired_swivel` and :func:`~core.limb.kernel.pose_at`. Its
contract is bit-for-bit equality with the general path, asserted by
``tests/core/test_limb.py`` (the fast-path agreement tests); any change to the kernel
must be mirrored here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..geometry import vec3 as V
from ..geometry.rotations import GIMBAL_COS, euler_spec
from ..goals import PoseGoal, batch_size
from .kernel import elbow_matrix_cs, pick_root
from .model import (
    IDENTITY,
    LIMIT_TOLERANCE,
    REACH_TOLERANCE,
    EulerLimits,
    Limb,
    LimbGoal,
    LimbSolution,
    SwivelStrategy,
    bend_direction,
    bend_sign,
)

_FULL_CIRCLE = ((-math.pi, math.pi),)


def fast_solution(**fields: Any) -> LimbSolution:
    """A :class:`LimbSolution` without the frozen dataclass's per-field ``__setattr__``."""
    sol = object.__new__(LimbSolution)
    sol.__dict__.update(fields)
    return sol


def _scalar(value: Any) -> float | None:
    """``value`` as a finite float when it is a plain real scalar, else None."""
    if type(value) is float or type(value) is int or isinstance(value, np.floating):
        f = float(value)
        return f if math.isfinite(f) else None
    return None


def solve_fast(
    limb: Limb,
    goal: LimbGoal,
    swivel: Any,
    elbow_target: Any,
    strategy: Any,
    wrist: Any,
    elbow_near: Any,
) -> LimbSolution | None:
    """The single-goal solve without Euler limits, written out on Python floats.

    Exactly the arithmetic of :func:`reduce_goal`, :func:`solve_circle` (its regular branch),
    :func:`desired_swivel` and :func:`pose_at` on ``V.ScalarOps``, in the same order, with
    Eq. (5)'s goal-independent terms taken from the limb (:class:`_Eq5`), so the result
    is bit-for-bit the general path's. Covers a goal that is a single PositionGoal (origin
    point, default wrist) or PoseGoal, a limb without limits or with elbow limits only
    (then the swivel does not change feasibility: the feasible set is the whole circle),
    strategy CLOSEST or MIDPOINT, scalar ``swivel`` / ``elbow_near``, a (3,)
    ``elbow_target``. Returns None — the caller then takes the general path — for
    anything else, including input the general path rejects and the degenerate
    geometry of :func:`solve_circle`'s fallback branches (goal at the shoulder, reference
    along the shoulder–goal axis); a straight or folded limb takes its bend branch here
    too.
    """
    if wrist is not None or goal.joint is not None or batch_size(goal) is not None:
        return None
    rotation: V.Mat | None = None
    if type(goal) is PoseGoal:
        rotation = goal.rotation.tolist()  # type: ignore[union-attr]
    else:
        p0, p1, p2 = goal.point.tolist()  # type: ignore[union-attr]
        if p0 != 0.0 or p1 != 0.0 or p2 != 0.0:  # NaN too: the general path rejects it
            return None
    out = _solve_rows(limb, goal.position.tolist(), rotation,  # type: ignore[union-attr]
                      swivel, elbow_target, strategy, elbow_near)
    if out is None:
        return None
    r1, theta, r2, phi, reachable, pe, oe = out
    return fast_solution(
        shoulder=V.mat_array(r1, None),
        elbow=theta,
        wrist=IDENTITY.copy() if r2 is None else V.mat_array(r2, None),
        swivel=phi,
        reachable=reachable,
        within_limits=True,
        position_error=pe,
        orientation_error=oe,
        feasible_swivel=_FULL_CIRCLE,
        psi=None,
        aim_error=None,
    )


class FastPose(NamedTuple):
    """:func:`solve_pose_floats`' solution: the fields of the :class:`LimbSolution`
    :func:`~core.solve_limb` returns for the same pose goal, with the rotations as rows of
    Python floats (``shoulder`` R1, ``wrist`` R2; ``elbow`` θ4, rad)."""

    shoulder: V.Mat
    elbow: float
    wrist: V.Mat
    swivel: float
    reachable: bool
    position_error: float
    orientation_error: float
    within_limits: bool = True
    feasible_swivel: tuple[tuple[float, float], ...] = _FULL_CIRCLE


def solve_pose_floats(
    limb: Limb,
    position: Sequence[float],
    rotation: V.Mat,
    *,
    swivel: float | None = None,
    elbow_target: Any = None,
    strategy: SwivelStrategy = SwivelStrategy.CLOSEST,
) -> FastPose | None:
    """:func:`~core.solve_limb` of a single pose goal (``position`` three floats, m;
    ``rotation`` three rows of three floats, an orthonormal rotation; shoulder frame) on
    Python floats: the fast path's arithmetic (:func:`solve_fast`), so the values equal
    ``solve_limb(limb, PoseGoal(position, rotation), swivel=..., elbow_target=...,
    strategy=...)``'s bit for bit. For a caller whose goal is already floats (a live
    solve, :func:`~core.geometry.rigid.pose_goal_rows`) and that writes rows
    (:func:`~core.geometry.rotations.quaternion_rows`): no arrays either way.

    Returns None — then call :func:`~core.solve_limb`, which solves or names the bad
    value — wherever :func:`solve_fast` would (limits beyond the elbow's, other
    strategies, degenerate geometry, bad ``swivel`` / ``elbow_target``) and for a
    non-finite goal. The rotation is not validated (the caller's contract, as for
    :func:`~core.trusted_goal`).
    """
    if type(limb) is not Limb:
        return None
    x, y, z = position
    (a, b, c), (d, e, f), (g, h, i) = rotation
    if not math.isfinite(x + y + z + a + b + c + d + e + f + g + h + i):
        return None
    out = _solve_rows(limb, position, rotation, swivel, elbow_target, strategy, None)
    if out is None:
        return None
    r1, theta, r2, phi, reachable, pe, oe = out
    assert r2 is not None  # a pose goal sets R2
    return FastPose(r1, theta, r2, phi, reachable, pe, oe)


def _solve_rows(
    limb: Limb,
    position: Sequence[float],
    rotation: V.Mat | None,
    swivel: Any,
    elbow_target: Any,
    strategy: Any,
    elbow_near: Any,
) -> tuple[V.Mat, float, V.Mat | None, float, bool, float, float] | None:
    """:func:`solve_fast`'s arithmetic on a goal given as floats (``rotation`` None: a
    position goal): (R1 rows, θ4, R2 rows or None, φ, reachable, position error,
    orientation error), or None where the general path must solve."""
    c = limb.constants
    limits = c.limits
    if limits is not None and not c.elbow_only:
        return None
    if strategy is not SwivelStrategy.CLOSEST and strategy is not SwivelStrategy.MIDPOINT:
        return None
    near = None
    if elbow_near is not None:
        near = _scalar(elbow_near)
        if near is None:
            return None
    sw = None
    if swivel is not None:
        sw = _scalar(swivel)
        if sw is None or elbow_target is not None:
            return None
    et: list[float] | None = None
    if elbow_target is not None:
        try:
            eta = np.asarray(elbow_target, dtype=np.float64)
        except (TypeError, ValueError):
            return None  # the general path names the bad value
        if eta.shape != (3,):
            return None
        et = eta.tolist()
        if not (math.isfinite(et[0]) and math.isfinite(et[1]) and math.isfinite(et[2])):
            return None
    # reduce_goal
    g0, g1, g2 = position
    if rotation is not None:
        rw = rotation if c.RE_identity else V.mm(rotation, c.REt)
        te0, te1, te2 = c.tE
        (q00, q01, q02), (q10, q11, q12), (q20, q21, q22) = rw
        w0_ = g0 - (q00 * te0 + q01 * te1 + q02 * te2)
        w1_ = g1 - (q10 * te0 + q11 * te1 + q12 * te2)
        w2_ = g2 - (q20 * te0 + q21 * te1 + q22 * te2)
        eq = c.eq5_pose
    else:
        w0_, w1_, w2_ = g0, g1, g2
        rw = None
        eq = c.eq5_position
    # solve_circle, regular branch
    sqrt = math.sqrt
    d2 = w0_ * w0_ + w1_ * w1_ + w2_ * w2_
    x = (0.5 * (d2 - c.ta2 - eq.tbe2) - eq.kta_ktb) / eq.r
    beta = math.acos(1.0 if x > 1.0 else (-1.0 if x < -1.0 else x))
    delta = eq.delta
    t_plus = V.wrap(delta + beta)
    elbow_lim = None if limits is None else limits.elbow
    plus = True
    if elbow_lim is not None:
        theta, plus = pick_root(V.ScalarOps, t_plus, V.wrap(delta - beta), elbow_lim, near)
        lo, hi = elbow_lim
        dl = (theta - lo) % V.TAU
        if not (dl <= hi - lo + LIMIT_TOLERANCE or dl >= V.TAU - LIMIT_TOLERANCE):
            return None  # θ4 outside the elbow limits: no feasible φ (general path)
    elif near is None:
        theta = t_plus
    else:
        t_minus = V.wrap(delta - beta)
        plus = abs(V.wrap(t_plus - near)) <= abs(V.wrap(t_minus - near))
        theta = t_plus if plus else t_minus
    cth = math.cos(theta)
    sth = math.sin(theta)
    ktb = eq.ktb
    omc = ktb * (1.0 - cth)
    (b0, b1, b2), (kx0, kx1, kx2), (k0, k1, k2) = eq.tbe, eq.kxtb, c.k
    rt0 = b0 * cth + kx0 * sth + k0 * omc
    rt1 = b1 * cth + kx1 * sth + k1 * omc
    rt2 = b2 * cth + kx2 * sth + k2 * omc
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = c.Ra
    ta0, ta1, ta2 = c.ta
    e0 = ta0 + (a00 * rt0 + a01 * rt1 + a02 * rt2)
    e1 = ta1 + (a10 * rt0 + a11 * rt1 + a12 * rt2)
    e2 = ta2 + (a20 * rt0 + a21 * rt1 + a22 * rt2)
    rw0 = sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    eps = c.eps
    if not rw0 > eps:
        return None
    s_ = 1.0 / rw0
    x0, x1, x2 = e0 * s_, e1 * s_, e2 * s_
    ep = ta0 * x0 + ta1 * x1 + ta2 * x2
    p0, p1, p2 = -ep * x0 + ta0, -ep * x1 + ta1, -ep * x2 + ta2
    erad = sqrt(p0 * p0 + p1 * p1 + p2 * p2)
    if erad > c.eps_erad:
        s_ = 1.0 / erad
        y0, y1, y2 = p0 * s_, p1 * s_, p2 * s_
    else:  # straight or folded: the side θ4 bends to (solve_circle's σ)
        sigma = bend_sign(V.ScalarOps, beta if plus else -beta, theta, elbow_lim)
        y0, y1, y2 = bend_direction(V.ScalarOps, c, (x0, x1, x2), ep, (rt0, rt1, rt2), sigma)
    s_ = -(y0 * x0 + y1 * x1 + y2 * x2)  # _reorthonormalise
    p0, p1, p2 = s_ * x0 + y0, s_ * x1 + y1, s_ * x2 + y2
    s_ = 1.0 / sqrt(p0 * p0 + p1 * p1 + p2 * p2)
    y0, y1, y2 = p0 * s_, p1 * s_, p2 * s_
    z0, z1, z2 = x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0
    rg = sqrt(d2)
    if not rg > eps:
        return None
    s_ = 1.0 / rg
    n0, n1, n2 = w0_ * s_, w1_ * s_, w2_ * s_
    r0, r1_, r2_ = c.aref
    s_ = -(r0 * n0 + r1_ * n1 + r2_ * n2)
    p0, p1, p2 = s_ * n0 + r0, s_ * n1 + r1_, s_ * n2 + r2_
    al = sqrt(p0 * p0 + p1 * p1 + p2 * p2)
    if not al > 1e-9:
        return None
    s_ = 1.0 / al
    u0, u1, u2 = p0 * s_, p1 * s_, p2 * s_
    s_ = -(u0 * n0 + u1 * n1 + u2 * n2)  # _reorthonormalise
    p0, p1, p2 = s_ * n0 + u0, s_ * n1 + u1, s_ * n2 + u2
    s_ = 1.0 / sqrt(p0 * p0 + p1 * p1 + p2 * p2)
    u0, u1, u2 = p0 * s_, p1 * s_, p2 * s_
    v0, v1, v2 = n1 * u2 - n2 * u1, n2 * u0 - n0 * u2, n0 * u1 - n1 * u0
    # desired_swivel, then the strategy's choice on the whole circle
    if et is not None:
        p0, p1, p2 = -ep * n0 + et[0], -ep * n1 + et[1], -ep * n2 + et[2]
        phi = math.atan2(p0 * v0 + p1 * v1 + p2 * v2, p0 * u0 + p1 * u1 + p2 * u2)
    elif sw is not None:
        phi = V.wrap(sw)
    else:
        phi = 0.0
    if limits is not None:
        phi = V.wrap(phi) if strategy is SwivelStrategy.CLOSEST else V.wrap(0.0)
    # pose_at: R1 = [n, yφ, zφ]·[x_r, y_r, z_r]ᵀ (Eq. 7), then forward kinematics
    cp = math.cos(phi)
    sp = math.sin(phi)
    yp0, yp1, yp2 = cp * u0 + sp * v0, cp * u1 + sp * v1, cp * u2 + sp * v2
    zp0, zp1, zp2 = cp * v0 - sp * u0, cp * v1 - sp * u1, cp * v2 - sp * u2
    m00 = n0 * x0 + yp0 * y0 + zp0 * z0
    m01 = n0 * x1 + yp0 * y1 + zp0 * z1
    m02 = n0 * x2 + yp0 * y2 + zp0 * z2
    m10 = n1 * x0 + yp1 * y0 + zp1 * z0
    m11 = n1 * x1 + yp1 * y1 + zp1 * z1
    m12 = n1 * x2 + yp1 * y2 + zp1 * z2
    m20 = n2 * x0 + yp2 * y0 + zp2 * z0
    m21 = n2 * x1 + yp2 * y1 + zp2 * z1
    m22 = n2 * x2 + yp2 * y2 + zp2 * z2
    r1 = ((m00, m01, m02), (m10, m11, m12), (m20, m21, m22))
    q0 = m00 * e0 + m01 * e1 + m02 * e2
    q1 = m10 * e0 + m11 * e1 + m12 * e2
    q2 = m20 * e0 + m21 * e1 + m22 * e2
    if rw is None:
        r2 = None
        d0, d1, d2_ = q0 - g0, q1 - g1, q2 - g2
        oe = 0.0
    else:
        n1m = V.mm(r1, elbow_matrix_cs(c, cth, sth))
        r2 = V.mtm(n1m, rw)
        w_fk = V.mm(n1m, r2)
        (f00, f01, f02), (f10, f11, f12), (f20, f21, f22) = w_fk
        d0 = q0 + (f00 * te0 + f01 * te1 + f02 * te2) - g0
        d1 = q1 + (f10 * te0 + f11 * te1 + f12 * te2) - g1
        d2_ = q2 + (f20 * te0 + f21 * te1 + f22 * te2) - g2
        oe = V.rotation_angle(w_fk, rw, V.ScalarOps)
    pe = sqrt(d0 * d0 + d1 * d1 + d2_ * d2_)
    tol = REACH_TOLERANCE
    return r1, theta, r2, V.wrap(phi), pe <= tol * c.length and oe <= tol, pe, oe


def euler_families_one(r: list[list[float]], order: str) -> tuple[list[float], list[float]]:
    """Both Euler families (x, y, z) of one rotation in plain Python: the arithmetic of
    :func:`core.geometry.rotations.matrix_to_euler_families` (its ``_family_one``) on floats."""
    spec = euler_spec(order)
    i, j, k = spec.first, spec.middle, spec.last
    p = spec.first_y_sign
    (s0, s0s), (fy_, fys), (fx_, fxs) = (
        (spec.sin_entry, spec.sin_sign),
        (spec.first_y, spec.first_y_sign),
        (spec.first_x, spec.first_x_sign),
    )
    e0 = r[s0[0]][s0[1]] * s0s
    fy = r[fy_[0]][fy_[1]] * fys
    fx = r[fx_[0]][fx_[1]] * fxs
    e3, e4, e5, e6 = r[i][k] * 1.0, r[i][j] * -p, r[j][j] * 1.0, r[j][k] * -p
    cos_mid = float(np.hypot(fy, fx))
    first = math.atan2(fy, fx) * (cos_mid > GIMBAL_COS)
    ca, sa = math.cos(first), math.sin(first)
    one = [0.0, 0.0, 0.0]
    one[i] = first
    one[j] = math.atan2(e0, cos_mid)
    one[k] = math.atan2(sa * e3 + ca * e4, ca * e5 + sa * e6)
    one = [a + V.TAU * (a <= -math.pi) for a in one]
    two = [a * (-1.0 if ax == j else 1.0) + math.pi for ax, a in enumerate(one)]
    return one, [a - V.TAU * (a > math.pi) for a in two]


def euler_ok_one(r: list[list[float]], lim: EulerLimits | None) -> bool:
    """Whether some Euler family of one rotation is within ``lim`` (:meth:`EulerLimits.contains`
    with the default tolerance, on floats)."""
    if lim is None or not any(lim.limited):
        return True
    lo, width = lim.range_start.tolist(), lim.range_width.tolist()
    tol = LIMIT_TOLERANCE
    for fam in euler_families_one(r, lim.order):
        ok = True
        for a, lo_, w_ in zip(fam, lo, width, strict=True):
            d = (a - lo_) % V.TAU
            if not (d <= w_ + tol or d >= V.TAU - tol):
                ok = False
                break
        if ok:
            return True
    return False
