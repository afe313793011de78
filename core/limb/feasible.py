"""Feasible swivel intervals under joint limits (Tolani et al. §3.2.4) and the swivel
strategies choosing φ from them.

Each Euler angle of the shoulder and wrist is a ratio of sinusoids in φ; its limits give
the φ where it crosses a bound (closed form), and the feasible set is where every angle
and both families allow it.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidInputError
from ..geometry import vec3 as V
from ..geometry.rotations import matrix_to_euler_families
from .kernel import Circle, Problem, elbow_matrix
from .model import (
    LIMIT_TOLERANCE,
    BoolArray,
    EulerLimits,
    FloatArray,
    LimbConstants,
    LimbLimits,
    Objective,
    in_ranges,
)


class JointCoeffs:
    """R(φ) = P + cosφ·Q + sinφ·S for one spherical joint, arrays (N, 3, 3)."""

    __slots__ = ("P", "Q", "S", "SQP")

    def __init__(
        self, p: FloatArray, q: FloatArray, s: FloatArray, sqp: FloatArray | None = None
    ) -> None:
        self.P, self.Q, self.S = p, q, s
        #: [S, Q, P] stacked (3, N, 3, 3) when built so (S, Q, P are then its views)
        self.SQP = sqp

    def at(self, phi: FloatArray) -> FloatArray:
        """R at φ of shape (N, K) → (N, K, 3, 3)."""
        cp = np.cos(phi)[..., None, None]
        sp = np.sin(phi)[..., None, None]
        return self.P[:, None] + cp * self.Q[:, None] + sp * self.S[:, None]  # type: ignore[no-any-return]

    def rows(self, r: slice) -> JointCoeffs:
        """The coefficients of rows ``r``."""
        return JointCoeffs(self.P[r], self.Q[r], self.S[r])

    def entry(self, ij: tuple[int, int]) -> tuple[FloatArray, FloatArray, FloatArray]:
        i, j = ij
        return self.P[:, i, j], self.Q[:, i, j], self.S[:, i, j]


def _stack(m: V.Mat, n: int) -> FloatArray:
    """Component rows → array (n, 3, 3), broadcasting scalar components."""
    if type(m[0][0]) is float and type(m[1][1]) is float:  # one solve: scalar components
        a = np.array(m, dtype=np.float64)
        return a[None] if n == 1 else np.broadcast_to(a, (n, 3, 3))
    if np.ndim(m[0][0]) == 0 and np.ndim(m[1][1]) == 0:
        return np.broadcast_to(np.array(m, dtype=np.float64), (n, 3, 3))
    return V.mat_array(m, n)  # type: ignore[no-any-return]


def _outer_coeffs(
    left: tuple[V.Vec, V.Vec, V.Vec],
    right: tuple[V.Vec, V.Vec, V.Vec],
    sign: float,
    n: int,
    scalar: bool = False,
) -> JointCoeffs:
    """P = l0 r0ᵀ, Q = l1 r1ᵀ + l2 r2ᵀ, S = sign·(l2 r1ᵀ − l1 r2ᵀ) (``scalar``: every
    component a float, one solve)."""
    if scalar and n == 1:
        return _outer_coeffs_one(left, right, sign)
    (l0, l1, l2), (r0, r1, r2) = left, right
    rng = range(3)
    p = tuple(tuple(l0[i] * r0[j] for j in rng) for i in rng)
    q = tuple(tuple(l1[i] * r1[j] + l2[i] * r2[j] for j in rng) for i in rng)
    sg = tuple(tuple(sign * (l2[i] * r1[j] - l1[i] * r2[j]) for j in rng) for i in rng)
    return JointCoeffs(_stack(p, n), _stack(q, n), _stack(sg, n))  # type: ignore[arg-type]


def _outer_coeffs_one(
    left: tuple[V.Vec, V.Vec, V.Vec], right: tuple[V.Vec, V.Vec, V.Vec], sign: float
) -> JointCoeffs:
    """:func:`_outer_coeffs` of one solve (float components), arrays (1, 3, 3): every
    product l_a[i]·r_b[j] in one outer product, then the same sums in the same order."""
    lr = np.array((left, right), dtype=np.float64)  # (2, 3 vectors, 3)
    o = lr[0][:, None, :, None] * lr[1][None, :, None, :]  # o[a, b] = l_a r_bᵀ
    sqp = np.empty((3, 1, 3, 3))  # [S, Q, P], as _joint_equations stacks them
    np.subtract(o[2, 1], o[1, 2], out=sqp[0, 0])
    if sign != 1.0:
        np.multiply(sign, sqp[0, 0], out=sqp[0, 0])
    np.add(o[1, 1], o[2, 2], out=sqp[1, 0])
    sqp[2, 0] = o[0, 0]
    return JointCoeffs(sqp[2], sqp[1], sqp[0], sqp)


def joint_coeffs(
    ops: V.Ops, c: LimbConstants, pr: Problem, ci: Circle, n: int
) -> tuple[JointCoeffs, JointCoeffs]:
    """Coefficients of R1(φ) and R2(φ) as P + cosφ·Q + sinφ·S, arrays (n, 3, 3) (§3.2.4).

    R1 = [n̂, yφ, zφ]·[x_r, y_r, z_r]ᵀ (Eq. 7 with R1 = R0·Rφ), and R2 = (R1 Ra Rθ Rb)ᵀ R_W
    is the same sum of outer products with x_r, y_r, z_r → Mᵀ·(…) and n̂, û, v̂ → R_Wᵀ·(…).
    Works on scalar (n = 1) or batched circle components alike.
    """
    scalar = not ops.batched  # (ScalarOps: every component a float)
    sh = _outer_coeffs((ci.n, ci.u, ci.v), (ci.x_r, ci.y_r, ci.z_r), 1.0, n, scalar)
    if pr.RW is None:
        assert pr.R2 is not None
        z = np.zeros((n, 3, 3))
        return sh, JointCoeffs(_stack(pr.R2, n), z, z)
    m = elbow_matrix(ops, c, ci.theta)
    left = (V.mtv(m, ci.x_r), V.mtv(m, ci.y_r), V.mtv(m, ci.z_r))
    right = (V.mtv(pr.RW, ci.n), V.mtv(pr.RW, ci.u), V.mtv(pr.RW, ci.v))
    return sh, _outer_coeffs(left, right, -1.0, n, scalar)


def _sincos_roots(alpha: FloatArray, beta: FloatArray, gamma: FloatArray) -> FloatArray:
    """Roots φ ∈ [-π, π) of α sinφ + β cosφ + γ = 0, shape (..., 2); NaN where none."""
    r = np.hypot(alpha, beta)
    has = r > 1e-14
    ratio = -gamma / np.where(has, r, 1.0)
    ok = has & (np.abs(ratio) <= 1.0)
    base = np.arctan2(alpha, beta)
    off = np.arccos(np.clip(ratio, -1.0, 1.0))
    roots = V.wrap(np.stack([base + off, base - off], axis=-1))
    out: FloatArray = np.where(ok[..., None], roots, np.nan)
    return out


def _joint_equations(co: JointCoeffs, lim: EulerLimits) -> FloatArray:
    """(α, β, γ) stacked (3, N, E) of the joint's limit-crossing equations at φ."""
    w, v = lim.equations
    n = co.P.shape[0]
    if len(v) == 0:
        return np.zeros((3, n, 0))
    stacked = np.stack([co.S, co.Q, co.P]) if co.SQP is None else co.SQP
    out: FloatArray = stacked.reshape(3, n, 9) @ w.T
    out[2] -= v
    return out


def _rotations_ok(
    rotations: tuple[FloatArray, FloatArray],
    limits: tuple[EulerLimits | None, EulerLimits | None],
) -> tuple[BoolArray, BoolArray]:
    """Whether some Euler family of each rotation array (..., 3, 3) is within its limits.

    Both joints' angles are extracted in one call when their Euler orders agree.
    """
    shape = rotations[0].shape[:-2]
    active = [i for i in (0, 1) if limits[i] is not None and any(limits[i].limited)]  # type: ignore[union-attr]
    out = [np.ones(shape, dtype=bool), np.ones(shape, dtype=bool)]
    orders = {limits[i].order for i in active}  # type: ignore[union-attr]
    if len(active) == 2 and len(orders) == 1:
        fam = matrix_to_euler_families(np.stack(rotations), orders.pop(), check=False)
        for i in active:
            out[i] = limits[i].contains_unchecked(fam[i]).any(axis=-1)  # type: ignore[union-attr]
    else:
        for i in active:
            lim = limits[i]
            assert lim is not None
            fam_i = matrix_to_euler_families(rotations[i], lim.order, check=False)
            out[i] = lim.contains_unchecked(fam_i).any(axis=-1)
    return out[0], out[1]


class _Feasible:
    """Merged feasible intervals, (N, R, 2) NaN-padded, for all limits and the shoulder alone."""

    __slots__ = ("all", "bp", "feas_shoulder")
    all: FloatArray
    bp: FloatArray
    feas_shoulder: BoolArray

    @property
    def shoulder(self) -> FloatArray:
        """Intervals satisfying the shoulder and elbow limits only (A1 ∪ A2)."""
        return _merge(self.bp, self.feas_shoulder)


def _merge_one(bp: list[float], feas: list[bool]) -> list[tuple[float, float]]:
    """:func:`_merge` for one row, in plain Python (a single solve has ~10 segments)."""
    runs: list[tuple[float, float]] = []
    for k, ok in enumerate(feas):
        if not ok:
            continue
        if runs and k > 0 and feas[k - 1]:
            runs[-1] = (runs[-1][0], bp[k + 1])
        else:
            runs.append((bp[k], bp[k + 1]))
    if len(runs) >= 2 and feas[0] and runs[-1][1] == bp[-1]:
        last = runs.pop()
        runs[0] = (last[0], runs[0][1] + V.TAU)
        runs.sort()
    return runs


def _merge(bp: FloatArray, feas: BoolArray) -> FloatArray:
    """Merge feasible segments [bp_k, bp_k+1] into intervals, wrap-around joined at ±π."""
    n, k = feas.shape
    if n == 1 and not np.isnan(bp[0, -1]):
        runs = _merge_one(bp[0].tolist(), feas[0].tolist())
        return np.array(runs if runs else [(np.nan, np.nan)], dtype=np.float64)[None]
    false = np.zeros((n, 1), dtype=bool)
    prev = np.concatenate([false, feas[:, :-1]], axis=1)
    nxt = np.concatenate([feas[:, 1:], false], axis=1)
    starts = feas & ~prev
    ends = feas & ~nxt
    lo = np.sort(np.where(starts, bp[:, :-1], np.nan), axis=1)
    hi = np.sort(np.where(ends, bp[:, 1:], np.nan), axis=1)
    nruns = starts.sum(axis=1)
    last_seg = np.sum(~np.isnan(bp), axis=1) - 2
    rows = np.arange(n)
    wrapped = feas[:, 0] & feas[rows, np.maximum(last_seg, 0)] & (nruns >= 2)
    if np.any(wrapped):
        w = np.nonzero(wrapped)[0]
        lastrun = nruns[w] - 1
        lo[w, 0] = lo[w, lastrun]
        hi[w, 0] = hi[w, 0] + V.TAU
        lo[w, lastrun] = np.nan
        hi[w, lastrun] = np.nan
        order = np.argsort(lo, axis=1)
        lo = np.take_along_axis(lo, order, axis=1)
        hi = np.take_along_axis(hi, order, axis=1)
    width = int(max(1, nruns.max(initial=0)))
    return np.stack([lo[:, :width], hi[:, :width]], axis=-1)


#: Rows whose joint rotations :func:`feasible_sets` tests at once.
_ROW_BLOCK = 512


def _equations(limits: LimbLimits, sh: JointCoeffs, wr: JointCoeffs, n: int) -> FloatArray:
    """(α, β, γ) (3, N, E) of both joints' limit-crossing equations."""
    eqs = [np.zeros((3, n, 0))]
    if limits.shoulder is not None:
        eqs.append(_joint_equations(sh, limits.shoulder))
    if limits.wrist is not None:
        eqs.append(_joint_equations(wr, limits.wrist))
    return np.concatenate(eqs, axis=2)


def _segments(coef: FloatArray) -> tuple[FloatArray, BoolArray, FloatArray]:
    """The breakpoints (N, K + 1) of φ ∈ [-π, π] where an equation of ``coef`` (3, N, E)
    holds, NaN-padded (no root) at the end of a row; whether each segment between them
    has a length (N, K); the segments' middles (0 where not)."""
    n = coef.shape[1]
    roots = _sincos_roots(coef[0], coef[1], coef[2]).reshape(n, -1)  # (N, 2E)
    ends = np.empty((n, 2))
    ends[:, 0] = -math.pi
    ends[:, 1] = math.pi
    bp = np.sort(np.concatenate([roots, ends], axis=1), axis=1)
    # NaN padding (no root) sorts last: drop the columns that are NaN in every row.
    bp = bp[:, : int(np.max(np.sum(~np.isnan(bp), axis=1)))]
    lo_b, hi_b = bp[:, :-1], bp[:, 1:]
    valid = (hi_b - lo_b) > 1e-13
    mid = np.where(valid, 0.5 * (lo_b + hi_b), 0.0)
    return bp, valid, mid


def _join_short(bp: FloatArray, valid: BoolArray, *feasible: BoolArray) -> None:
    """A zero-length segment between two feasible ones must not split them (in place)."""
    short = ~valid & ~np.isnan(bp[:, :-1]) & ~np.isnan(bp[:, 1:])
    if np.any(short):
        for f in feasible:
            prev = np.concatenate([f[:, :1], f[:, :-1]], axis=1)
            nxt = np.concatenate([f[:, 1:], f[:, -1:]], axis=1)
            f |= short & prev & nxt


def feasible_sets(
    limits: LimbLimits, sh: JointCoeffs, wr: JointCoeffs, theta: FloatArray
) -> _Feasible:
    """Feasible φ intervals (§3.2.4): (A1 ∪ A2) ∩ (B1 ∪ B2), and A1 ∪ A2 alone."""
    n = len(theta)
    if n == 0:  # an empty batch: no intervals
        out0 = _Feasible()
        out0.all = np.zeros((0, 1, 2))
        out0.bp, out0.feas_shoulder = np.zeros((0, 2)), np.zeros((0, 1), dtype=bool)
        return out0
    bp, valid, mid = _segments(_equations(limits, sh, wr, n))
    # both joints' rotations at the segment middles; a large batch in blocks of rows (each
    # row is tested alone: the same results with (rows, K, 3, 3) temporaries of bounded size)
    joints = (limits.shoulder, limits.wrist)
    if n <= _ROW_BLOCK:
        ok_sh, ok_wr = _rotations_ok((sh.at(mid), wr.at(mid)), joints)
    else:
        ok_sh = np.empty(mid.shape, dtype=bool)
        ok_wr = np.empty(mid.shape, dtype=bool)
        for b in range(0, n, _ROW_BLOCK):
            r = slice(b, b + _ROW_BLOCK)
            rot = (sh.rows(r).at(mid[r]), wr.rows(r).at(mid[r]))
            ok_sh[r], ok_wr[r] = _rotations_ok(rot, joints)
    ok_sh &= valid
    elbow_ok = limits.elbow_contains_unchecked(theta)[:, None]
    feas_sh = ok_sh & elbow_ok
    feas = feas_sh & ok_wr
    _join_short(bp, valid, feas, feas_sh)
    out = _Feasible()
    out.all = _merge(bp, feas)
    out.bp, out.feas_shoulder = bp, feas_sh
    return out


def _joint_bounds(
    joints: list[EulerLimits | None], sizes: list[int]
) -> tuple[FloatArray, FloatArray, BoolArray]:
    """Per row of several limbs' stacked rows (``sizes`` rows each): the joint's range
    starts and widths (N, 3) as in :meth:`EulerLimits.contains_unchecked`, and whether the
    joint is limited at all (N,)."""
    active = [lim is not None and any(lim.limited) for lim in joints]
    lo = [lim.range_start if on else np.zeros(3) for lim, on in zip(joints, active, strict=True)]  # type: ignore[union-attr]
    width = [
        lim.range_width if on else np.full(3, np.inf)  # type: ignore[union-attr]
        for lim, on in zip(joints, active, strict=True)
    ]
    return (
        np.repeat(np.array(lo), sizes, axis=0),
        np.repeat(np.array(width), sizes, axis=0),
        np.repeat(np.array(active), sizes),
    )


def feasible_intervals(
    parts: list[tuple[LimbLimits, JointCoeffs, JointCoeffs, FloatArray]],
) -> list[FloatArray]:
    """``feasible_sets(limits, sh, wr, theta).all`` of several limbs (``parts``), the same
    values from one pass over all their rows (the equations padded with empty ones, each
    row's Euler angles tested against its own limb's limits). Falls back to one call per
    limb when the limbs' Euler orders differ or the rows are many."""
    sizes = [len(p[3]) for p in parts]
    orders = {lim.order for p in parts for lim in (p[0].shoulder, p[0].wrist) if lim is not None}
    if len(parts) < 2 or len(orders) > 1 or sum(sizes) > _ROW_BLOCK or 0 in sizes:
        return [feasible_sets(*p).all for p in parts]
    if len(orders) == 1 and all(k == 1 for k in sizes) and all(_fully_limited(p[0]) for p in parts):
        return _intervals_one_each(parts, orders.pop())
    # each limb's equations (shoulder's, then wrist's) in its rows, the rest zero
    eqs = []
    start = width_e = 0
    for (lim, sh_k, wr_k, _), k in zip(parts, sizes, strict=True):
        col = 0
        for co, joint in ((sh_k, lim.shoulder), (wr_k, lim.wrist)):
            if joint is not None:
                e = _joint_equations(co, joint)
                eqs.append((slice(start, start + k), slice(col, col + e.shape[2]), e))
                col += e.shape[2]
        start += k
        width_e = max(width_e, col)
    coef = np.zeros((3, start, width_e))
    for rows, cols, e in eqs:
        coef[:, rows, cols] = e
    bp, valid, mid = _segments(coef)
    sh = JointCoeffs(*(np.concatenate([getattr(p[1], a) for p in parts]) for a in "PQS"))
    wr = JointCoeffs(*(np.concatenate([getattr(p[2], a) for p in parts]) for a in "PQS"))
    ok = []
    if orders:
        fam = matrix_to_euler_families(
            np.stack((sh.at(mid), wr.at(mid))), orders.pop(), check=False
        )
        for i, fam_i in enumerate(fam):
            lo, width, active = _joint_bounds(
                [p[0].shoulder if i == 0 else p[0].wrist for p in parts], sizes
            )
            inside = in_ranges(fam_i, lo[:, None, None], width[:, None, None])
            ok.append(inside.any(axis=-1) | ~active[:, None])
    else:
        ok = [np.ones(mid.shape, dtype=bool)] * 2
    elbow_ok = np.concatenate([p[0].elbow_contains_unchecked(p[3]) for p in parts])[:, None]
    feas = ok[0] & valid & elbow_ok & ok[1]
    _join_short(bp, valid, feas)
    merged = _merge(bp, feas)
    # each limb's intervals as wide as its own _merge makes them: its most runs before the
    # wrap-around join, after it for one row
    runs = np.sum(feas & ~np.concatenate([np.zeros((len(feas), 1), bool), feas[:, :-1]], 1), 1)
    one = np.repeat(np.array(sizes) == 1, sizes)
    runs[one] = np.sum(~np.isnan(merged[one, :, 0]), axis=1)
    ends = np.cumsum(sizes)
    return [
        merged[e - k : e, : max(1, int(runs[e - k : e].max()))]
        for k, e in zip(sizes, ends, strict=True)
    ]


def _fully_limited(limits: LimbLimits) -> bool:
    """Both joints limited (some angle each) and the elbow too."""
    return limits.elbow is not None and all(
        j is not None and any(j.limited) for j in (limits.shoulder, limits.wrist)
    )


def _intervals_one_each(
    parts: list[tuple[LimbLimits, JointCoeffs, JointCoeffs, FloatArray]], order: str
) -> list[FloatArray]:
    """:func:`feasible_intervals` of limbs of one row each, every joint and elbow limited
    and one Euler order (a warm frame's limbs): the same arithmetic on the same values
    (each limb's equations by its own product, the rotations at the segment middles as
    P + cosφ Q + sinφ S, the limit tests of every limb and joint in one call each)."""
    n = len(parts)
    eqs = [
        np.concatenate(
            [_joint_equations(p[1], p[0].shoulder), _joint_equations(p[2], p[0].wrist)],  # type: ignore[arg-type]
            axis=2,
        )
        for p in parts
    ]
    width_e = max(e.shape[2] for e in eqs)
    coef = np.zeros((3, n, width_e))
    for i, e in enumerate(eqs):
        coef[:, i : i + 1, : e.shape[2]] = e
    bp, valid, mid = _segments(coef)
    # (2 joints, n, 1, 3, 3) coefficients; R at the middles (2, n, K, 3, 3)
    pqs = [
        np.array([[getattr(p[j], a)[0] for p in parts] for j in (1, 2)])[:, :, None] for a in "PQS"
    ]
    cp = np.cos(mid)[..., None, None]
    sp = np.sin(mid)[..., None, None]
    rot = pqs[0] + cp * pqs[1] + sp * pqs[2]
    fam = matrix_to_euler_families(rot, order, check=False)  # (2, n, K, 2, 3)
    bounds = [[p[0].shoulder, p[0].wrist] for p in parts]
    lo = np.array([[j.range_start for j in b] for b in bounds]).transpose(1, 0, 2)  # type: ignore[union-attr]
    width = np.array([[j.range_width for j in b] for b in bounds]).transpose(1, 0, 2)  # type: ignore[union-attr]
    ok = in_ranges(fam, lo[:, :, None, None], width[:, :, None, None]).any(axis=-1)
    elbows = np.array([p[0].elbow for p in parts])  # (n, 2): every elbow limited
    theta = np.concatenate([p[3] for p in parts])
    d = np.mod(theta - elbows[:, 0], V.TAU)
    elbow_ok = (d <= elbows[:, 1] - elbows[:, 0] + LIMIT_TOLERANCE) | (d >= V.TAU - LIMIT_TOLERANCE)
    feas = ok[0] & valid & elbow_ok[:, None] & ok[1]
    _join_short(bp, valid, feas)
    merged = _merge(bp, feas)
    runs = np.sum(~np.isnan(merged[:, :, 0]), axis=1).tolist()
    return [merged[i : i + 1, : max(1, r)] for i, r in enumerate(runs)]


def closest_swivel(intervals: FloatArray, phi_d: FloatArray) -> tuple[FloatArray, BoolArray]:
    """Per row, the φ in the intervals nearest φ_d (circularly); flag rows with none."""
    if len(phi_d) == 1:  # one solve: a few intervals, plain Python
        p1 = float(phi_d[0])
        best, best_d = math.nan, math.inf
        for lo1, hi1 in intervals[0].tolist():
            if math.isnan(lo1):
                continue
            if (p1 - lo1) % V.TAU <= hi1 - lo1:
                best, best_d = p1, 0.0
                break
            d_lo1, d_hi1 = abs(V.wrap(p1 - lo1)), abs(V.wrap(p1 - hi1))
            if min(d_lo1, d_hi1) < best_d:
                best, best_d = (lo1, d_lo1) if d_lo1 <= d_hi1 else (hi1, d_hi1)
        has1 = not math.isnan(best)
        return np.array([V.wrap(best) if has1 else 0.0]), np.array([has1])
    lo, hi = intervals[..., 0], intervals[..., 1]
    pd = phi_d[:, None]
    inside = ((pd - lo) % V.TAU) <= (hi - lo)
    d_lo = np.abs(V.wrap(pd - lo))
    d_hi = np.abs(V.wrap(pd - hi))
    cand = np.where(inside, pd, np.where(d_lo <= d_hi, lo, hi))
    dist = np.where(inside, 0.0, np.minimum(d_lo, d_hi))
    dist = np.where(np.isnan(lo), np.inf, dist)
    j = np.argmin(dist, axis=1)
    rows = np.arange(len(phi_d))
    return V.wrap(cand[rows, j]), ~np.isnan(lo[:, 0])


def midpoint_swivel(intervals: FloatArray) -> tuple[FloatArray, BoolArray]:
    """Per row, the midpoint of the largest interval."""
    lo, hi = intervals[..., 0], intervals[..., 1]
    length = np.where(np.isnan(lo), -1.0, hi - lo)
    j = np.argmax(length, axis=1)
    rows = np.arange(len(lo))
    return V.wrap(0.5 * (lo[rows, j] + hi[rows, j])), ~np.isnan(lo[:, 0])


def _angles_at(
    limits: LimbLimits | None, sh: JointCoeffs, wr: JointCoeffs, theta: FloatArray, phi: FloatArray
) -> FloatArray:
    """Joint angles (N, K, 7) at φ (N, K): shoulder Euler, θ4, wrist Euler (see Objective)."""

    def euler(co: JointCoeffs, lim: EulerLimits | None) -> FloatArray:
        fam = matrix_to_euler_families(co.at(phi), lim.order if lim else "XYZ", check=False)
        if lim is None:
            first: FloatArray = fam[..., 0, :]
            return first
        ok1 = lim.contains_unchecked(fam[..., 0, :])
        ok2 = lim.contains_unchecked(fam[..., 1, :])
        use2 = ~ok1 & ok2
        out: FloatArray = np.where(use2[..., None], fam[..., 1, :], fam[..., 0, :])
        return out

    th = np.broadcast_to(theta[:, None], phi.shape)[..., None]
    return np.concatenate(
        [
            euler(sh, limits.shoulder if limits else None),
            th,
            euler(wr, limits.wrist if limits else None),
        ],
        axis=-1,
    )


def objective_swivel(
    objective: Objective,
    limits: LimbLimits | None,
    sh: JointCoeffs,
    wr: JointCoeffs,
    theta: FloatArray,
    intervals: FloatArray,
    samples: int = 96,
    iterations: int = 48,
) -> tuple[FloatArray, BoolArray]:
    """Minimise ``objective`` over the feasible φ set (§3.2.4, 1-D minimisation).

    Dense sampling of the union of intervals (by arc length), then golden-section search
    around the best sample inside its interval; vectorised over the batch.
    """
    n = len(theta)
    lo, hi = intervals[..., 0], intervals[..., 1]
    length = np.where(np.isnan(lo), 0.0, hi - lo)
    has = length.sum(axis=1) > 0
    cum = np.cumsum(length, axis=1)
    total = cum[:, -1:]
    t = (np.arange(samples) + 0.5) / samples * total  # (N, S)
    j = np.minimum((t[:, :, None] >= cum[:, None, :]).sum(axis=2), length.shape[1] - 1)
    start = np.take_along_axis(np.nan_to_num(lo), j, axis=1)
    before = np.take_along_axis(np.concatenate([np.zeros((n, 1)), cum[:, :-1]], 1), j, axis=1)
    phi = start + (t - before)

    def cost(p: FloatArray) -> FloatArray:
        ang = _angles_at(limits, sh, wr, theta, p).reshape(-1, 7)
        try:
            f = np.asarray(objective(ang), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"strategy (a callable objective) must return numbers, failed with {exc!r}"
            ) from exc
        if f.shape != (len(ang),):
            raise InvalidInputError(
                f"strategy (a callable objective) must map angles ({len(ang)}, 7) to costs "
                f"({len(ang)},), returned shape {f.shape}"
            )
        # NaN costs (outside the objective's domain) never win the minimisation
        out: FloatArray = np.where(np.isnan(f), np.inf, f).reshape(p.shape)
        return out

    f = cost(phi)
    best = np.argmin(f, axis=1)
    rows = np.arange(n)
    jb = j[rows, best]
    seg_lo = np.nan_to_num(lo)[rows, jb]
    seg_hi = np.nan_to_num(hi)[rows, jb]
    step = total[:, 0] / samples
    a = np.maximum(phi[rows, best] - step, seg_lo)
    b = np.minimum(phi[rows, best] + step, seg_hi)
    g = (math.sqrt(5.0) - 1.0) / 2.0
    x1 = b - g * (b - a)
    x2 = a + g * (b - a)
    f1 = cost(x1[:, None])[:, 0]
    f2 = cost(x2[:, None])[:, 0]
    for _ in range(iterations):
        left = f1 < f2  # the minimum lies in [a, x2]
        a, b = np.where(left, a, x1), np.where(left, x2, b)
        x_new = np.where(left, b - g * (b - a), a + g * (b - a))
        f_new = cost(x_new[:, None])[:, 0]
        x1, f1, x2, f2 = (
            np.where(left, x_new, x2),
            np.where(left, f_new, f2),
            np.where(left, x1, x_new),
            np.where(left, f1, f_new),
        )
    xm = 0.5 * (a + b)
    fm = cost(xm[:, None])[:, 0]
    choose = fm <= f[rows, best]
    return V.wrap(np.where(choose, xm, phi[rows, best])), has


def coeffs_row(co: JointCoeffs, i: int) -> JointCoeffs:
    return JointCoeffs(co.P[i : i + 1], co.Q[i : i + 1], co.S[i : i + 1])


def within_limits(
    limits: LimbLimits | None, shoulder: FloatArray, theta: FloatArray, wrist: FloatArray
) -> BoolArray:
    n = len(theta)
    ok = np.ones(n, dtype=bool)
    if limits is None:
        return ok
    ok &= limits.elbow_contains_unchecked(theta)
    ok_sh, ok_wr = _rotations_ok((shoulder, wrist), (limits.shoulder, limits.wrist))
    return ok & ok_sh & ok_wr
