"""The elbow (knee) circle of a limb goal, labelled by the feasible swivel intervals.

Geometry for showing Tolani's swivel parameterisation (Tolani, Goswami & Badler 2000,
§3.2.2 Eq. 6 and §3.2.4): for a goal, the elbow may lie anywhere on a circle about the
shoulder–wrist axis n̂; the swivel angle φ is measured from û (the projection of
``Limb.swivel_reference`` onto the circle's plane), positive by the right-hand rule about
n̂, and joint limits cut the circle into feasible and infeasible arcs.

Everything is in the limb's *shoulder frame* (origin at the shoulder joint, the frame R1
acts in) and in the limb's length unit (metres in Blender scenes at unit scale); angles
are radians. A viewport transforms the points with the shoulder frame's world matrix.

:func:`swivel_arcs` is pure numpy and never NaN. :func:`blocking_limits` and
:func:`limits_at_bound` name the joint limits that empty the feasible set or that the
solved pose touches (for status lines).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidGoalError, InvalidInputError, finite_array, format_value
from ..geometry import vec3 as V
from ..geometry.rotations import matrix_to_euler_families
from ..goals import AimGoal, PartialOrientationGoal, PoseGoal, PositionGoal
from .feasible import feasible_sets, joint_coeffs
from .kernel import reduce_goal, solve_circle
from .model import LIMIT_TOLERANCE, EulerLimits, Limb, LimbLimits, effector_frame, limits_active
from .partial import partial_rotation
from .pose import broadcast_goal, prepare_goal
from .solve import feasible_swivel, solve_limb

FloatArray = NDArray[np.float64]

BoolArray = NDArray[np.bool_]


@dataclass(frozen=True, eq=False)
class SwivelArcs:
    """The elbow circle of one goal (or a batch: every array gains a leading axis N).

    Attributes:
        phi: (n,) the swivel angles of the samples, rad, φ_i = −π + 2π·i/n.
        points: (…, n, 3) elbow joint centres at φ_i (shoulder frame, length unit).
        feasible: (…, n) whether φ_i lies in a feasible interval (every joint limit met).
        centre: (…, 3) the circle's centre, on the shoulder–wrist axis.
        normal: (…, 3) unit n̂, shoulder → wrist; φ is right-handed about it.
        u, v: (…, 3) unit in-plane axes: φ = 0 points along u, φ = π/2 along v.
        radius: (…) circle radius (0 for a straight or folded limb: the points coincide).
        elbow: (…, 3) the elbow at ``swivel`` (the current elbow point).
        swivel: (…) that φ (rad, wrapped to [−π, π)).
        shoulder: (…, 3) the shoulder joint (the origin).
        wrist: (…, 3) the goal of the chain's terminal point: the wrist centre for pose and
            partial goals, the effector point for position goals. Out of reach, the limb
            stretches (or folds) toward it.
        intervals: the feasible intervals, as ``LimbSolution.feasible_swivel``.
    """

    phi: FloatArray
    points: FloatArray
    feasible: BoolArray
    centre: FloatArray
    normal: FloatArray
    u: FloatArray
    v: FloatArray
    radius: FloatArray
    elbow: FloatArray
    swivel: FloatArray
    shoulder: FloatArray
    wrist: FloatArray
    intervals: Any


def in_intervals(phi: ArrayLike, intervals: Any) -> BoolArray:
    """Whether each angle lies in one of the (lo, hi) intervals (mod 2π, closed).

    Args:
        phi: (…, n) angles (rad, any real).
        intervals: a tuple of (lo, hi) pairs, or an array (K, 2) or (…, K, 2) padded
            with NaN (as ``LimbSolution.feasible_swivel``); lo ≤ hi ≤ lo + 2π.

    Returns:
        (…, n) booleans; an empty interval set gives all False.
    """
    p = np.asarray(phi, dtype=np.float64)
    iv = np.asarray(intervals, dtype=np.float64)
    if iv.size == 0:
        return np.zeros(p.shape, dtype=bool)
    iv = iv.reshape(iv.shape[:-2] + (-1, 2)) if iv.ndim >= 2 else iv.reshape(-1, 2)
    lo = iv[..., None, :, 0]  # (…, 1, K)
    hi = iv[..., None, :, 1]
    d = np.mod(p[..., :, None] - lo, V.TAU)
    width = hi - lo
    with np.errstate(invalid="ignore"):
        inside = (d <= width + 1e-12) | (d >= V.TAU - 1e-12)
    inside &= ~np.isnan(lo)
    out: BoolArray = inside.any(axis=-1)
    return out


def _pose_goal(limb: Limb, goal: Any, wrist: Any, psi: Any, elbow: Any) -> tuple[Any, Any]:
    """The goal as a position/pose goal (with its wrist), as feasible_swivel reduces it."""
    if isinstance(goal, PartialOrientationGoal):
        rot = partial_rotation(goal, 0.0 if psi is None else psi, np.asarray(limb.swivel_reference))
        pos = np.broadcast_to(np.asarray(goal.position), rot.shape[:-2] + (3,))
        return PoseGoal(pos, rot), None
    if isinstance(goal, AimGoal):
        sol = solve_limb(limb, goal, wrist=wrist, elbow=elbow)
        fk = effector_frame(limb, sol.shoulder, sol.elbow, sol.wrist)
        return PoseGoal(fk[..., :3, 3], fk[..., :3, :3]), None
    if isinstance(goal, PositionGoal | PoseGoal):
        return goal, wrist
    raise InvalidGoalError(
        "goal must be a PositionGoal, PoseGoal, PartialOrientationGoal or AimGoal, got "
        f"{type(goal).__name__}"
    )


def swivel_arcs(
    limb: Limb,
    goal: Any,
    n: int = 128,
    *,
    swivel: ArrayLike | None = None,
    intervals: Any = None,
    wrist: ArrayLike | None = None,
    psi: ArrayLike | None = None,
    elbow: ArrayLike | None = None,
) -> SwivelArcs:
    """Points along the elbow circle of a goal, labelled feasible/infeasible (§3.2.2–3.2.4).

    Args:
        limb: the :class:`~core.limb.Limb`.
        goal: a position, pose, partial-orientation or aim goal in the shoulder frame
            (leading batch axis N allowed). A partial goal is taken at ``psi`` (rad,
            default 0); an aim goal at the pose :func:`~core.limb.solve_limb` chooses for
            it (θ4 = ``elbow`` if given), as :func:`~core.limb.feasible_swivel` does.
        n: number of samples around the circle, 3 ≤ n ≤ 100000; φ_i = −π + 2π·i/n.
        swivel: φ (rad, scalar or (N,)) of the current elbow point; default 0.
        intervals: the feasible intervals if already known (e.g. a solution's
            ``feasible_swivel``); default: computed with ``feasible_swivel``.
        wrist: R2 (3, 3) or (N, 3, 3) held by position and aim goals; default identity.

    Returns:
        :class:`SwivelArcs`. Never NaN: an out-of-reach goal gives the circle of the
        stretched (or folded) limb aimed at it (radius usually 0); a goal at the shoulder
        uses the limb's fallback axis.

    Raises:
        InvalidInputError: ``n`` out of range. InvalidGoalError (and the other
        :func:`~core.limb.solve_limb` errors): bad goal, wrist or swivel.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 3 <= n <= 100_000:
        raise InvalidInputError(
            f"n (samples around the circle) must be an int in [3, 100000], got {format_value(n)}"
        )
    pgoal, w_in = _pose_goal(limb, goal, wrist, psi, elbow)
    nb, w, sw, (_, pgoal) = prepare_goal(limb, pgoal, w_in, swivel, None)
    single = nb is None
    nn = 1 if nb is None else nb
    if single:
        sw = None if sw is None else np.array([sw])
    limits = limb.limits
    active = limits_active(limits)
    c = limb.constants
    # One goal: the scalar kernel (several times faster on one goal); a batch: vectorised.
    ops: V.Ops = V.ScalarOps if single else V.ArrayOps
    pr = reduce_goal(limb, pgoal, w, nb)
    aref = V.vec_of(np.asarray(limb.swivel_reference))
    elbow_lim = limits.elbow if (active and limits is not None) else None
    ci = solve_circle(ops, c, pr.wg, pr.tbe, aref, elbow_lim)
    if intervals is None and not active:
        iv = np.tile(np.array([[[-math.pi, math.pi]]]), (nn, 1, 1))
    elif intervals is None:
        assert limits is not None
        if single:
            pr_b = reduce_goal(limb, broadcast_goal(pgoal, 1), None if w is None else w[None], 1)
            ci_b = solve_circle(V.ArrayOps, c, pr_b.wg, pr_b.tbe, aref, elbow_lim)
        else:
            pr_b, ci_b = pr, ci
        sh, wr = joint_coeffs(V.ArrayOps, c, pr_b, ci_b, nn)
        iv = feasible_sets(limits, sh, wr, np.asarray(ci_b.theta, dtype=np.float64)).all
    else:  # given: a tuple of pairs / (K, 2) for one goal, (N, K, 2) for a batch
        iv = np.asarray(intervals, dtype=np.float64).reshape(nn, -1, 2)
        if iv.shape[1] == 0:
            iv = np.full((nn, 1, 2), np.nan)

    def arr(vec: V.Vec) -> FloatArray:
        cols = [np.broadcast_to(np.asarray(x, dtype=np.float64), (nn,)) for x in vec]
        return np.stack(cols, axis=-1)

    normal, u, v = arr(ci.n), arr(ci.u), arr(ci.v)
    ep = np.broadcast_to(np.asarray(ci.ep, dtype=np.float64), (nn,))
    radius = np.broadcast_to(np.asarray(ci.erad, dtype=np.float64), (nn,)).copy()
    centre = ep[:, None] * normal
    phi = -math.pi + V.TAU * np.arange(n) / n
    cp, sp = np.cos(phi), np.sin(phi)
    ring = cp[None, :, None] * u[:, None, :] + sp[None, :, None] * v[:, None, :]  # (N, n, 3)
    points = centre[:, None, :] + radius[:, None, None] * ring
    feasible = in_intervals(np.broadcast_to(phi, (nn, n)), iv)
    s = np.zeros(nn)
    if sw is not None:
        s = V.wrap(np.broadcast_to(np.asarray(sw, dtype=np.float64), (nn,)))
    elbow_pt = centre + radius[:, None] * (np.cos(s)[:, None] * u + np.sin(s)[:, None] * v)
    wg = arr(pr.wg)
    iv_out: Any = iv
    if single:
        iv_out = tuple((float(a), float(b)) for a, b in iv[0] if not math.isnan(a))

    def pick(a: NDArray[Any]) -> Any:
        return a[0] if single else a

    return SwivelArcs(
        phi=phi,
        points=pick(points),
        feasible=pick(feasible),
        centre=pick(centre),
        normal=pick(normal),
        u=pick(u),
        v=pick(v),
        radius=pick(radius),
        elbow=pick(elbow_pt),
        swivel=pick(s),
        shoulder=pick(np.zeros((nn, 3))),
        wrist=pick(wg),
        intervals=iv_out,
    )


def _only(limits: LimbLimits, joint: str, axis: int | None) -> LimbLimits:
    """The limits of one joint (one Euler angle of it when ``axis`` is given)."""
    if joint == "elbow":
        return LimbLimits(elbow=limits.elbow)
    lim: EulerLimits = getattr(limits, joint)
    if axis is not None:
        lo, hi = lim.bounds()
        lo2 = [lo[i] if i == axis else None for i in range(3)]
        hi2 = [hi[i] if i == axis else None for i in range(3)]
        lim = EulerLimits(order=lim.order, lower=lo2, upper=hi2)
    return LimbLimits(shoulder=lim) if joint == "shoulder" else LimbLimits(wrist=lim)


def _limited_joints(limits: LimbLimits) -> list[str]:
    out = []
    for joint in ("shoulder", "elbow", "wrist"):
        v = getattr(limits, joint)
        if v is None or (isinstance(v, EulerLimits) and not any(v.limited)):
            continue
        out.append(joint)
    return out


def _empty(limb: Limb, limits: LimbLimits, goal: Any, wrist: Any, psi: Any, elbow: Any) -> bool:
    trial = limb.with_limits(limits)
    kw: dict[str, Any] = {}
    if isinstance(goal, PositionGoal | AimGoal) and wrist is not None:
        kw["wrist"] = wrist
    if isinstance(goal, PartialOrientationGoal) and psi is not None:
        kw["psi"] = psi
    if isinstance(goal, AimGoal) and elbow is not None:
        kw["elbow"] = elbow
    return len(feasible_swivel(trial, goal, **kw)) == 0


def blocking_limits(
    limb: Limb,
    goal: Any,
    *,
    wrist: ArrayLike | None = None,
    psi: ArrayLike | None = None,
    elbow: ArrayLike | None = None,
) -> tuple[str, ...]:
    """Names of the joint limits that leave a (single) goal no feasible swivel.

    Each joint's limits are tried alone; for a shoulder or wrist that empties the set by
    itself, each of its Euler angles alone is tried too. Names: ``"shoulder X"``,
    ``"wrist Z"``, ``"elbow"``, ``"shoulder"`` (only the angles together), or, when no
    single joint does it, the pairs that do, e.g. ``"shoulder + wrist"``. ``()`` when the
    feasible set is not empty (or the limb has no limits).
    """
    limits = limb.limits
    if limits is None or not limits_active(limits):
        return ()
    if not _empty(limb, limits, goal, wrist, psi, elbow):
        return ()
    joints = _limited_joints(limits)
    names: list[str] = []
    for joint in joints:
        if not _empty(limb, _only(limits, joint, None), goal, wrist, psi, elbow):
            continue
        lim = getattr(limits, joint)
        axes = []
        if isinstance(lim, EulerLimits):
            axes = [
                f"{joint} {'XYZ'[i]}"
                for i in range(3)
                if lim.limited[i] and _empty(limb, _only(limits, joint, i), goal, wrist, psi, elbow)
            ]
        names.extend(axes or [joint])
    if names:
        return tuple(names)
    pairs = []
    for i, a in enumerate(joints):
        for b in joints[i + 1 :]:
            both = LimbLimits(
                shoulder=limits.shoulder if "shoulder" in (a, b) else None,
                elbow=limits.elbow if "elbow" in (a, b) else None,
                wrist=limits.wrist if "wrist" in (a, b) else None,
            )
            if _empty(limb, both, goal, wrist, psi, elbow):
                pairs.append(f"{a} + {b}")
    return tuple(pairs) if pairs else (" + ".join(joints),)


def limits_at_bound(
    limb: Limb,
    shoulder: ArrayLike,
    elbow: float,
    wrist: ArrayLike,
    tol: float = 1e-6,
) -> tuple[str, ...]:
    """Names of the joint angles of a (single) pose that sit on one of their limits.

    Args:
        shoulder, wrist: R1, R2 (3, 3). elbow: θ4 (rad).
        tol: how close (rad) to a bound counts as on it; default 1e-6.

    Returns e.g. ``("elbow", "shoulder Z")``; ``()`` with no limits or none on a bound.
    A spherical joint's angles are read in its limits' Euler order, from the Euler family
    that lies within the limits (the first family if neither does).
    """
    if not isinstance(limb, Limb):
        raise InvalidGoalError(f"limb must be a Limb, got {limb!r}")
    t_arr = finite_array(elbow, "elbow", InvalidGoalError)
    if t_arr.shape != ():
        raise InvalidGoalError(f"elbow must be one angle (rad), got {elbow!r}")
    for name, rot in (("shoulder", shoulder), ("wrist", wrist)):
        if finite_array(rot, name, InvalidGoalError).shape != (3, 3):
            raise InvalidGoalError(f"{name} must be a 3×3 rotation, got {rot!r}")
    limits = limb.limits
    if limits is None:
        return ()
    out: list[str] = []
    if limits.elbow is not None:
        lo, hi = limits.elbow
        t = float(t_arr)
        if any(abs(V.wrap(t - b)) <= tol for b in (lo, hi)):
            out.append("elbow")
    for joint, rot in (("shoulder", shoulder), ("wrist", wrist)):
        lim = getattr(limits, joint)
        if lim is None or not any(lim.limited):
            continue
        fam = matrix_to_euler_families(np.asarray(rot, dtype=np.float64), lim.order)
        ok = lim.contains_unchecked(fam, LIMIT_TOLERANCE + tol)
        ang = fam[int(np.argmax(ok))]
        lo3, hi3 = lim.bounds()
        for i in range(3):
            if lim.limited[i] and any(abs(V.wrap(ang[i] - b)) <= tol for b in (lo3[i], hi3[i])):
                out.append(f"{joint} {'XYZ'[i]}")
    return tuple(out)
