"""A goaled limb's closed form inside the body: one pass of the limb kernel (Tolani et al.
2000, Eq. 5–7 and §3.2.4) gives both its feasible swivel intervals and, where a feasible φ
exists and the goal is in reach, its pose at the feasible φ nearest the numeric swivel —
the same computation as :func:`~core.limb.solve_limb` with ``SwivelStrategy.CLOSEST``
for those rows. Rows without a feasible φ are only flagged (the body rescues them);
rows out of reach go through :func:`~core.limb.solve_limb` (its within-limits reach).

One row is solved on Python floats (the limb's scalar kernel), several rows vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..geometry import vec3 as V
from ..goals import PoseGoal, PositionGoal
from ..limb import REACH_TOLERANCE, EulerLimits, Limb, LimbLimits, solve_limb
from ..limb.fast_path import euler_families_one
from ..limb.feasible import JointCoeffs, closest_swivel, joint_coeffs
from ..limb.kernel import (
    Circle,
    Problem,
    desired_swivel,
    elbow_matrix,
    pose_at,
    reduce_target,
    shoulder_at,
    solve_circle,
)

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class Local:
    """A limb's goal in its shoulder frame for B rows: position (B, 3) and, for a pose
    goal, rotation (B, 3, 3) (None: a position goal, the wrist held)."""

    position: FloatArray
    rotation: FloatArray | None

    def goal(self, rows: NDArray[np.intp] | None = None) -> PositionGoal | PoseGoal:
        """The limb goal of ``rows`` (all by default); one row unbatched (the limb's
        scalar kernel)."""
        pos = self.position if rows is None else self.position[rows]
        rot = self.rotation if rows is None or self.rotation is None else self.rotation[rows]
        if pos.shape[0] == 1:
            pos = pos[0]
            rot = None if rot is None else rot[0]
        return PositionGoal(pos) if rot is None else PoseGoal(pos, rot)


@dataclass
class LimbRows:
    """A limb solved for B rows: R1 (B, 3, 3), θ4 (B,), R2 (B, 3, 3), φ (B,), the goal
    reached (B,), the feasible intervals (B, M, 2) NaN-padded (None: not computed), and
    which rows carry a pose (``solved``; rows left unsolved hold identity / zeros)."""

    shoulder: FloatArray
    elbow: FloatArray
    wrist: FloatArray
    swivel: FloatArray
    reachable: BoolArray
    intervals: FloatArray | None
    solved: BoolArray


def _empty(b: int) -> LimbRows:
    eye = np.broadcast_to(np.eye(3), (b, 3, 3)).copy()
    return LimbRows(
        eye,
        np.zeros(b),
        eye.copy(),
        np.zeros(b),
        np.zeros(b, dtype=bool),
        None,
        np.zeros(b, dtype=bool),
    )


def _take(out: LimbRows, rows: BoolArray | NDArray[np.intp], part: LimbRows, sel: Any) -> None:
    """Copy the rows ``sel`` of ``part`` into the rows ``rows`` of ``out``."""
    for name in ("shoulder", "elbow", "wrist", "swivel", "reachable", "solved"):
        getattr(out, name)[rows] = getattr(part, name)[sel]


def solve_rows(
    limb: Limb,
    local: Local,
    rows: NDArray[np.intp],
    wrist: FloatArray | None,
    **options: Any,
) -> LimbRows:
    """:func:`~core.limb.solve_limb` for the rows ``rows`` of the local goal ``local``
    (``options``: ``swivel`` (B,) or ``elbow_target`` (B, 3) for all B rows),
    as arrays with a leading row axis (one row through the limb's scalar path)."""
    one = len(rows) == 1
    kw = {k: (v[rows][0] if one else v[rows]) for k, v in options.items()}
    sol = solve_limb(limb, local.goal(rows), wrist=wrist, **kw)
    if one:
        fs = np.array(sol.feasible_swivel or (), dtype=np.float64).reshape(1, -1, 2)
        return LimbRows(
            np.asarray(sol.shoulder)[None],
            np.array([sol.elbow]),
            np.asarray(sol.wrist)[None],
            np.array([sol.swivel]),
            np.array([bool(sol.reachable)]),
            fs if fs.shape[1] else np.full((1, 1, 2), np.nan),
            np.ones(1, dtype=bool),
        )
    return LimbRows(
        np.asarray(sol.shoulder),
        np.asarray(sol.elbow, dtype=np.float64),
        np.asarray(sol.wrist),
        np.asarray(sol.swivel, dtype=np.float64),
        np.asarray(sol.reachable, dtype=bool),
        np.asarray(sol.feasible_swivel),
        np.ones(len(rows), dtype=bool),
    )


def solve_all(limb: Limb, local: Local, wrist: FloatArray | None, **options: Any) -> LimbRows:
    """:func:`solve_rows` for every row of ``local``."""
    return solve_rows(limb, local, np.arange(local.position.shape[0]), wrist, **options)


def _circle(
    limb: Limb,
    position: FloatArray,
    rotation: FloatArray | None,
    wrist: FloatArray | None,
    ops: Any,
    n: int | None,
) -> tuple[Problem, Circle]:
    """The goal (``position``, and ``rotation`` for a pose goal, else a position goal at
    the end joint's origin) reduced to the limb's terminal point and its elbow circle
    (Eq. 5–7), as :func:`~core.limb.solve_limb` computes them (``n``: the rows, None for
    one unbatched goal on ``ops`` = ``ScalarOps``; ``wrist``: R2 held for a position
    goal, default I)."""
    w = None if rotation is not None else (np.eye(3) if wrist is None else wrist)
    pr = reduce_target(limb, position, rotation, w, n)
    aref = V.vec_of(np.asarray(limb.swivel_reference))
    elbow = None if limb.limits is None else limb.limits.elbow
    return pr, solve_circle(ops, limb.constants, pr.wg, pr.tbe, aref, elbow)


def _column(x: Any) -> Any:
    """Each (N,) array of ``x`` (or of a tuple of them: :mod:`~core.geometry.vec3`
    components, nested) as a column (N, 1), to broadcast against samples (N, S); floats
    (shared) as they are."""
    if isinstance(x, tuple):
        return tuple(_column(a) for a in x)
    return x[:, None] if isinstance(x, np.ndarray) and x.ndim == 1 else x


def _rows_of(m: V.Mat, b: int, s: int) -> FloatArray:
    """A matrix of components broadcast to (B, S) as an array (B·S, 3, 3)."""
    out = np.empty((b, s, 3, 3))
    for i in range(3):
        for j in range(3):
            out[:, :, i, j] = m[i][j]
    return out.reshape(b * s, 3, 3)


def sampled_poses(
    limb: Limb, local: Local, wrist: FloatArray | None, phis: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``limb`` (without limits: the witness's) at each swivel of ``phis`` (S,) for each
    of the B rows of ``local``: R1 (B·S, 3, 3), θ4 (B·S,), R2 (B·S, 3, 3), row by row,
    S samples each — the values :func:`~core.limb.solve_limb` gives for the B·S goals
    (each row's goal repeated) with ``swivel`` = ``phis`` tiled, by its arithmetic
    element by element: the goal reduced and its elbow circle (Eq. 5–6) computed once
    per row (:func:`_circle`), the poses (Eq. 7) with the rows' values broadcast against
    the samples."""
    b, s = local.position.shape[0], phis.size
    # (a given wrist per row, as solve_limb holds it for the repeated goals)
    held = None if wrist is None else np.broadcast_to(wrist, (b, 3, 3))
    pr, ci = _circle(limb, local.position, local.rotation, held, V.ArrayOps, b)
    for name in ("RW", "R2"):
        setattr(pr, name, _column(getattr(pr, name)))
    for name in ("theta", "n", "u", "v", "x_r", "y_r", "z_r"):
        setattr(ci, name, _column(getattr(ci, name)))
    phi = V.wrap(np.tile(phis, b)).reshape(b, s)
    # pose_at's R1 and R2 (without its errors)
    r1 = shoulder_at(V.ArrayOps, ci, phi)
    if pr.RW is None:
        assert pr.R2 is not None
        r2 = pr.R2
    else:
        r2 = V.mtm(V.mm(r1, elbow_matrix(V.ArrayOps, limb.constants, ci.theta)), pr.RW)
    theta = np.broadcast_to(np.asarray(ci.theta, dtype=np.float64), (b, s)).reshape(b * s)
    return _rows_of(r1, b, s), theta, _rows_of(r2, b, s)


#: A numeric elbow nearer than this (× the limb's length) to its shoulder–wrist line
#: marks a straight limb (:func:`straight_targets`).
STRAIGHT = 1e-6
#: A numeric elbow nearer than this (× the limb's length) to its shoulder–wrist line is
#: nearly straight: its elbow point lies so near the axis that the goal's axis, moved with
#: the trunk, passes it on either side, so the limb keeps its own swivel (the side it
#: bends to, :func:`core.pose_swivel`) instead of the φ nearest that point.
NEAR_STRAIGHT = 1e-3


def straight_targets(
    limb: Limb,
    local: Local,
    wrist: FloatArray | None,
    target: FloatArray,
    straight: BoolArray,
    fallback: float | FloatArray,
) -> FloatArray:
    """``target`` (B, 3), elbow targets in the shoulder frame, with each row in
    ``straight`` (B,) replaced by a point whose desired swivel (§3.2.2:
    :func:`~core.limb.kernel.desired_swivel`) on that row's elbow circle is ``fallback``
    (rad; or per row, (B,)). A straight limb's elbow lies on the shoulder–wrist axis,
    where the swivel of the nearest elbow is rounding noise: a straight (T-pose) arm
    would turn about itself by up to π while its hand stays on target. The rows' circles
    are this goal's, as :class:`Kernel` and :func:`~core.limb.solve_limb` compute them."""
    rows = np.flatnonzero(straight)
    if not rows.size:
        return target
    c = limb.constants
    rot = None if local.rotation is None else local.rotation[rows]
    _, ci = _circle(limb, local.position[rows], rot, wrist, V.ArrayOps, rows.size)
    phi = fallback if np.ndim(fallback) == 0 else np.asarray(fallback)[rows]
    cos, sin = np.cos(phi) * c.length, np.sin(phi) * c.length
    point = V.axpy(ci.ep, ci.n, V.add(V.scale(ci.u, cos), V.scale(ci.v, sin)))
    out = target.copy()
    out[rows] = np.stack([np.broadcast_to(x, rows.shape) for x in point], axis=-1)
    return out


class Kernel:
    """One pass of the limb kernel for a limb with limits (B rows): the reduced goal, the
    elbow circle, the desired swivel and both joints' coefficients R(φ) = P + cosφ Q +
    sinφ S (:func:`~core.limb.feasible.joint_coeffs`) — what the feasible sets and the
    pose at a chosen φ are computed from."""

    def __init__(
        self,
        limb: Limb,
        local: Local,
        wrist: FloatArray | None,
        swivel: FloatArray | None = None,
        elbow_target: FloatArray | None = None,
    ):
        limits = limb.limits
        assert limits is not None
        self.limb, self.local, self.wrist = limb, local, wrist
        # φ_d: the swivel (B,), or the one whose elbow is nearest ``elbow_target`` (B, 3)
        # (§3.2.2); the same options for the rows left to solve_limb
        self.options = (
            {"swivel": swivel} if elbow_target is None else {"elbow_target": elbow_target}
        )
        self.b = b = local.position.shape[0]
        self.single = single = b == 1
        self.ops: Any = V.ScalarOps if single else V.ArrayOps
        self.n = None if single else b
        c = limb.constants
        pos, rot = local.position, local.rotation
        if single:  # one unbatched goal, as Local.goal gives it
            pos, rot = pos[0], (None if rot is None else rot[0])
        self.pr, self.ci = pr, ci = _circle(limb, pos, rot, wrist, self.ops, self.n)
        if elbow_target is not None:
            self.phi_d = desired_swivel(
                ci, None, V.vec_of(elbow_target[0] if single else elbow_target), self.ops
            )
        else:
            assert swivel is not None
            self.phi_d = desired_swivel(ci, float(swivel[0]) if single else swivel, None, self.ops)
        self.theta = np.array([ci.theta]) if single else np.asarray(ci.theta, dtype=np.float64)
        self.sh, self.wr = joint_coeffs(self.ops, c, pr, ci, b)

    def feasible_part(self) -> tuple[LimbLimits, JointCoeffs, JointCoeffs, FloatArray]:
        """The arguments of :func:`~core.limb.feasible.feasible_sets` for this pass (one
        part of :func:`~core.limb.feasible.feasible_intervals`)."""
        assert self.limb.limits is not None
        return self.limb.limits, self.sh, self.wr, self.theta


def closed_pose(
    k: Kernel, intervals: FloatArray, in_shell: BoolArray
) -> tuple[LimbRows, BoolArray]:
    """The limb (with limits) of the kernel pass ``k`` (B rows) at the feasible φ nearest
    its φ_d, from its feasible ``intervals`` (B, M, 2) (several limbs' from one
    :func:`~core.limb.feasible.feasible_intervals` call). Returns the rows and, per row,
    whether it has no feasible φ although its goal lies in the limb's shell
    (``in_shell``): those rows are left unsolved. Rows in reach with a feasible φ are
    posed here; the others (out of reach, or no feasible φ outside the shell) by
    :func:`~core.limb.solve_limb`."""
    limb, local, wrist = k.limb, k.local, k.wrist
    single, ops, n, pr, ci, theta, b = k.single, k.ops, k.n, k.pr, k.ci, k.theta, k.b
    c = limb.constants
    phi, has = closest_swivel(intervals, np.atleast_1d(np.asarray(k.phi_d, dtype=np.float64)))
    r1, r2, pe, oe = pose_at(ops, c, pr, ci, float(phi[0]) if single else phi)
    if single and has[0] and abs(ci.rw0 - ci.rg) <= REACH_TOLERANCE * c.length:
        # one row in reach with a feasible φ (a warm frame's limb): posed here, on floats
        one = LimbRows(
            np.array(r1)[None],
            theta.copy(),
            np.array(r2)[None],
            np.array([V.wrap(float(phi[0]))]),
            np.array([pe <= REACH_TOLERANCE * c.length and oe <= REACH_TOLERANCE]),
            intervals,
            np.ones(1, dtype=bool),
        )
        return one, np.zeros(1, dtype=bool)
    gap = np.abs(np.asarray(ci.rw0, dtype=np.float64) - np.asarray(ci.rg, dtype=np.float64))
    in_reach = np.atleast_1d(gap <= REACH_TOLERANCE * c.length)
    tol = REACH_TOLERANCE
    bad = in_shell & ~has
    direct = has & in_reach
    posed = None
    if direct.any():
        shoulder: FloatArray
        wrist_m: FloatArray
        if single:
            shoulder = np.array(r1)[None]
            wrist_m = np.array(r2)[None]
        else:
            shoulder = V.mat_array(r1, n)
            wrist_m = (
                V.mat_array(r2, n)
                if np.ndim(r2[0][0])
                else np.array(np.broadcast_to(V.mat_array(r2, None), (b, 3, 3)))
            )
        pe_a = np.atleast_1d(np.asarray(pe, dtype=np.float64))
        oe_a = np.broadcast_to(np.asarray(oe, dtype=np.float64), (b,))
        posed = LimbRows(
            shoulder,
            np.array(np.broadcast_to(theta, (b,))),
            wrist_m,
            V.wrap(phi),
            (pe_a <= tol * c.length) & (oe_a <= tol),
            intervals,
            np.ones(b, dtype=bool),
        )
        if direct.all():  # every row posed here (a single solve, typically)
            return posed, bad
    out = _empty(b)
    out.intervals = intervals
    if posed is not None:
        _take(out, direct, posed, direct)
    rest = np.flatnonzero(~bad & ~direct)
    if rest.size:
        _take(out, rest, solve_rows(limb, local, rest, wrist, **k.options), slice(None))
    return out, bad


def euler_in_limits_one(rot: FloatArray, lim: EulerLimits | None, order: str) -> list[float]:
    """One rotation's Euler angles (``order``): the family least outside ``lim`` (the
    first on a tie) — the float arithmetic of ``family_violations`` for one matrix."""
    one, two = euler_families_one(rot.tolist(), order)
    if lim is None:
        return one
    lo, hi = lim.bounds()
    outside = []
    for fam in (one, two):
        tot = 0.0
        for i, on in enumerate(lim.limited):
            if on:
                d = (fam[i] - lo[i]) % V.TAU
                width = hi[i] - lo[i]
                tot += 0.0 if d <= width else min(d - width, V.TAU - d)
        outside.append(tot)
    return two if outside[1] < outside[0] else one


def into_range_one(a: list[float], lo: list[float], hi: list[float]) -> list[float]:
    """Angles shifted by a multiple of 2π into [lo, hi] where one fits (else the shift
    leaving them nearest the range; unlimited entries stay): floats, one row."""
    out = []
    for v, lo_, hi_ in zip(a, lo, hi, strict=True):
        if lo_ <= v <= hi_:  # inside already: no shift leaves it nearer
            out.append(v)
            continue
        best, best_out = v, max(lo_ - v, 0.0) + max(v - hi_, 0.0)
        for k in (-2, -1, 1, 2):
            c = v + k * V.TAU
            o = max(lo_ - c, 0.0) + max(c - hi_, 0.0)
            if o < best_out - 1e-12:
                best, best_out = c, o
        out.append(best)
    return out
