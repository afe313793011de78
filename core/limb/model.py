"""The limb model (Tolani, Goswami & Badler 2000, §3.1): :class:`Limb`, its joint limits
(:class:`EulerLimits`, :class:`LimbLimits`), the swivel strategies and the result
:class:`LimbSolution`, plus the limb's derived constants used by the kernel.

Conventions: rotation matrices act on column vectors; Euler angles follow Blender
(component order (x, y, z), order string ``'XYZ'`` meaning R = Rz·Ry·Rx). Units: metres
and radians, everything in the shoulder frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import (
    InvalidGoalError,
    InvalidInputError,
    InvalidLimbError,
    InvalidLimitsError,
    ShapeMismatchError,
    finite_array,
    format_value,
)
from ..geometry import vec3 as V
from ..geometry.rotations import check_order, check_rotation, euler_spec, rodrigues
from ..goals import MAX_COORDINATE, ROTATION_TOLERANCE, PoseGoal, PositionGoal

FloatArray = NDArray[np.float64]

BoolArray = NDArray[np.bool_]

#: Slack (rad) when testing a joint angle against its limits.
LIMIT_TOLERANCE = 1e-9

#: A goal counts as reached when the position error is at most this × limb length and the
#: orientation error at most this (rad).
REACH_TOLERANCE = 1e-9

EPS_LEN = 1e-9

#: A limb whose elbow lies within this × its upper length of the shoulder–terminal axis is
#: straight (or folded) for the swivel: its elbow circle's frame and :func:`core.pose_swivel`
#: take the side the elbow bends to (:func:`bend_direction`), not the direction of that
#: residual offset. A limb read from float32 bone data keeps an offset of ~1e-8 of its length
#: at full extension, in no particular direction (an A-pose game arm's is 90° off its bend):
#: φ measured from it turns a stretched limb about itself.
STRAIGHT_OFFSET = 1e-4

#: A straight (or folded) limb's elbow angle within this (rad) of the straight (folded)
#: angle is *at* it for the side it bends to: the side is then the elbow limits' middle
#: (without limits: + from straight, − from folded) in :func:`~core.limb.kernel.solve_circle`,
#: the fast path and :func:`core.pose_swivel` alike, not the sign of the angle's float
#: noise (a body's straight arm at θ4 = δ − 3e-12 named the other side than its re-solve
#: at the end of reach, β = 0: the arm turned 180° about itself).
BEND_NOISE = 1e-8

TINY = 1e-300

IDENTITY = np.eye(3)


IDENTITY.setflags(write=False)


def _in_range(a: Any, lo: float, hi: float, tol: float) -> BoolArray:
    """Unchecked :func:`core.geometry.rotations.angle_in_range` for trusted limits (lo <= hi)."""
    d = np.mod(a - lo, V.TAU)
    ok: BoolArray = (d <= hi - lo + tol) | (d >= V.TAU - tol)
    return ok


def _transform(value: ArrayLike, name: str) -> FloatArray:
    m = finite_array(value, name, InvalidLimbError)
    if m.shape != (4, 4):
        raise InvalidLimbError(f"{name} must be a 4×4 transform, got shape {m.shape}")
    if np.max(np.abs(m[3] - (0.0, 0.0, 0.0, 1.0))) > 1e-12:
        raise InvalidLimbError(
            f"{name} must have bottom row (0, 0, 0, 1), got {format_value(m[3])}"
        )
    check_rotation(
        m[:3, :3], tol=ROTATION_TOLERANCE, name=f"{name}[:3, :3]", error=InvalidLimbError
    )
    m = m.copy()
    m.setflags(write=False)
    return m


def _unit(value: ArrayLike, name: str, error: type[Exception]) -> FloatArray:
    v = finite_array(value, name, error)
    if v.shape != (3,):
        raise error(f"{name} must be a 3-vector, got shape {v.shape}")
    n = float(np.linalg.norm(v))
    if n < 1e-12:
        raise error(f"{name} must be a non-zero vector, got {format_value(v)}")
    out = v / n
    out.setflags(write=False)
    return out


def batch_of(arr: FloatArray, core_ndim: int, name: str) -> int | None:
    """Leading batch size (None for a single value) of an array with ``core_ndim`` dims."""
    if arr.ndim == core_ndim:
        return None
    if arr.ndim == core_ndim + 1:
        return int(arr.shape[0])
    raise InvalidGoalError(
        f"{name} must have shape {'(3,)' if core_ndim == 1 else '(3, 3)'} or a leading "
        f"batch axis, got shape {arr.shape}"
    )


def _public_array(value: ArrayLike, name: str, tail: tuple[int, ...]) -> FloatArray:
    """``value`` as a finite float array whose last axes are ``tail`` (the public methods'
    arguments); raises InvalidInputError naming it otherwise."""
    arr = finite_array(value, name, InvalidInputError)
    if arr.ndim < len(tail) or arr.shape[arr.ndim - len(tail) :] != tail:
        raise InvalidInputError(
            f"{name} must have shape (…, {', '.join(map(str, tail))}), got {arr.shape}"
        )
    return arr


def _tolerance(tol: object) -> float:
    """``tol`` of the membership tests: a finite number ≥ 0 (rad)."""
    if (
        not isinstance(tol, int | float | np.integer | np.floating)
        or isinstance(tol, bool)
        or not math.isfinite(tol)
        or tol < 0.0
    ):
        raise InvalidInputError(f"tol must be a finite number >= 0 (rad), got {format_value(tol)}")
    return float(tol)


def _angle_bounds(
    value: Sequence[float | None] | ArrayLike | None, default: float, name: str
) -> tuple[float, float, float]:
    if value is None:
        return (default, default, default)
    items = list(value) if isinstance(value, list | tuple | np.ndarray) else []
    if len(items) != 3:
        raise InvalidLimitsError(
            f"{name} must be 3 angles (x, y, z) in rad (None or ±inf: free), got "
            f"{format_value(value)}"
        )
    out = []
    for v in items:
        if v is not None and (
            not isinstance(v, int | float | np.integer | np.floating) or isinstance(v, bool)
        ):
            raise InvalidLimitsError(
                f"{name} entries must be numbers (rad) or None, got {format_value(v)} in "
                f"{format_value(value)}"
            )
        f = default if v is None else float(v)
        if math.isnan(f):
            raise InvalidLimitsError(f"{name} must not contain NaN, got {format_value(value)}")
        out.append(f)
    return (out[0], out[1], out[2])


@dataclass(frozen=True)
class EulerLimits:
    """Limits on a spherical joint's Euler angles.

    Attributes:
        order: Blender Euler order string ('XYZ', 'XZY', 'YXZ', 'YZX', 'ZXY', 'ZYX');
            'XYZ' means R = Rz·Ry·Rx. Default 'XYZ'.
        lower, upper: per-angle bounds in radians, in component order (x, y, z) whatever
            the order string (like ``bone.rotation_euler``). ``None`` or ±inf leaves an
            angle free, as does a range of 2π or more. Ranges may extend past ±π (e.g.
            lower = 2.5, upper = 4.0 wraps around π): an angle a is within limits when
            some a + 2πk lies in [lower, upper].

    Raises:
        InvalidOrderError: unknown order. InvalidLimitsError: lower > upper, NaN, not 3.
    """

    order: str = "XYZ"
    lower: tuple[float, float, float] | Sequence[float | None] | None = None
    upper: tuple[float, float, float] | Sequence[float | None] | None = None
    # Derived in __post_init__ (not part of equality or the repr).
    _limited: tuple[bool, bool, bool] = field(init=False, repr=False, compare=False)
    _lo: FloatArray = field(init=False, repr=False, compare=False)
    _width: FloatArray = field(init=False, repr=False, compare=False)
    _equations: tuple[FloatArray, FloatArray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", check_order(self.order))
        lo = _angle_bounds(self.lower, -math.inf, "EulerLimits.lower")
        hi = _angle_bounds(self.upper, math.inf, "EulerLimits.upper")
        for i in range(3):
            if lo[i] > hi[i]:
                raise InvalidLimitsError(
                    f"EulerLimits angle {'xyz'[i]}: lower {format_value(lo[i])} > upper "
                    f"{format_value(hi[i])}; "
                    "need lower <= upper"
                )
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        limited = tuple(bool(hi[i] - lo[i] < 2.0 * math.pi) for i in range(3))
        object.__setattr__(self, "_limited", limited)
        object.__setattr__(self, "_lo", np.array([lo[i] if limited[i] else 0.0 for i in range(3)]))
        object.__setattr__(
            self, "_width", np.array([hi[i] - lo[i] if limited[i] else np.inf for i in range(3)])
        )
        object.__setattr__(self, "_equations", _limit_equations(self.order, lo, hi, limited))

    @property
    def limited(self) -> tuple[bool, bool, bool]:
        """Per angle (x, y, z): whether its range is narrower than a full turn."""
        return self._limited

    @property
    def range_start(self) -> FloatArray:
        """Per angle (x, y, z): its lower bound when limited, else 0 (rad, (3,))."""
        out: FloatArray = self._lo
        return out

    @property
    def range_width(self) -> FloatArray:
        """Per angle (x, y, z): upper − lower when limited, else inf (rad, (3,))."""
        out: FloatArray = self._width
        return out

    @property
    def equations(self) -> tuple[FloatArray, FloatArray]:
        """The φ-crossing equations of the limits, ``(W (E, 9), v (E,))`` (see
        :func:`_limit_equations`)."""
        eq: tuple[FloatArray, FloatArray] = self._equations
        return eq

    def bounds(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        lo, hi = self.lower, self.upper
        assert isinstance(lo, tuple) and isinstance(hi, tuple)
        return lo, hi

    def contains(self, angles: ArrayLike, tol: float = LIMIT_TOLERANCE) -> BoolArray:
        """Whether Euler angles (..., 3) (rad, finite) lie within the limits (mod 2π, with
        slack ``tol`` ≥ 0 rad). Raises InvalidInputError for non-finite, non-numeric or
        wrongly shaped angles."""
        return self.contains_unchecked(_public_array(angles, "angles", (3,)), _tolerance(tol))

    def contains_unchecked(self, angles: FloatArray, tol: float = LIMIT_TOLERANCE) -> BoolArray:
        """:meth:`contains` without validation, for the solvers' float64 (..., 3) arrays,
        which may hold NaN-padded Euler families (NaN is never inside: False)."""
        return in_ranges(angles, self._lo, self._width, tol)


def in_ranges(angles: FloatArray, start: FloatArray, width: FloatArray,
              tol: float = LIMIT_TOLERANCE) -> BoolArray:
    """Whether Euler angles (..., 3) lie in the ranges ``[start, start + width]`` (mod 2π,
    with slack ``tol``), all three at once: :meth:`EulerLimits.contains_unchecked` with
    the ranges given (``start``/``width`` broadcast against ``angles``, e.g. per row of
    several limbs; width inf: unlimited). NaN is never inside."""
    d = np.mod(angles - start, V.TAU)
    ok: BoolArray = ((d <= width + tol) | (d >= V.TAU - tol)).all(axis=-1)
    return ok


def family_violations(fam: FloatArray, lim: EulerLimits) -> FloatArray:
    """Angular distance (rad) of each Euler family outside the limits: ``fam`` (..., 2, 3)
    in ``lim``'s order → (..., 2), the sum over the limited angles of how far each lies
    outside its range (circularly, to the nearer bound)."""
    lo, hi = lim.bounds()
    tot = np.zeros(fam.shape[:-1])
    for i, on in enumerate(lim.limited):
        if not on:
            continue
        d = (fam[..., i] - lo[i]) % V.TAU
        width = hi[i] - lo[i]
        outside = np.where(d <= width, 0.0, np.minimum(d - width, V.TAU - d))
        tot = tot + outside
    return tot


def least_violating_family(fam: FloatArray, lim: EulerLimits | None) -> FloatArray:
    """The Euler family a joint's angles are read in: of ``fam`` (2, 3), the one least
    outside ``lim`` (:func:`family_violations`; the first on a tie, and without limits)."""
    out: FloatArray = fam[0 if lim is None else int(np.argmin(family_violations(fam, lim)))]
    return out


def _limit_equations(
    order: str,
    lo: tuple[float, float, float],
    hi: tuple[float, float, float],
    limited: tuple[bool, ...],
) -> tuple[FloatArray, FloatArray]:
    """The φ-crossing equations of a joint's Euler limits, as weights on matrix entries.

    Each row e of the returned ``(W (E, 9), v (E,))`` is the equation
    Σⱼ W[e, j]·R(φ).flat[j] = v[e]: an Euler angle meeting one of its limits, or the
    middle angle reaching ±π/2 (gimbal lock, where the outer angles jump) — §3.2.4's
    sin θ1 = f1(φ) and Eq. (8) (written y cos α − x sin α = 0). With R(φ) = P + cosφ Q
    + sinφ S each becomes α sinφ + β cosφ + γ = 0.
    """
    spec = euler_spec(order)
    rows: list[FloatArray] = []
    vals: list[float] = []
    if not any(limited):
        return np.zeros((0, 9)), np.zeros(0)

    def unit(ij: tuple[int, int], w: float) -> FloatArray:
        r = np.zeros(9)
        r[3 * ij[0] + ij[1]] = w
        return r

    values = [1.0, -1.0]
    if limited[spec.middle]:
        values += [math.sin(lo[spec.middle]), math.sin(hi[spec.middle])]
    for val in values:  # sin θm = sign·R[sin_entry] = val
        rows.append(unit(spec.sin_entry, spec.sin_sign))
        vals.append(val)
    for idx, ye, ys, xe, xs in (
        (spec.first, spec.first_y, spec.first_y_sign, spec.first_x, spec.first_x_sign),
        (spec.last, spec.last_y, spec.last_y_sign, spec.last_x, spec.last_x_sign),
    ):
        if not limited[idx]:
            continue
        for ang in (lo[idx], hi[idx]):  # y cos(a) − x sin(a) = 0
            rows.append(unit(ye, ys * math.cos(ang)) - unit(xe, xs * math.sin(ang)))
            vals.append(0.0)
    return np.array(rows), np.array(vals)


@dataclass(frozen=True)
class LimbLimits:
    """Joint limits of a limb; ``None`` means unlimited.

    Attributes:
        shoulder: :class:`EulerLimits` of R1 (shoulder / hip).
        elbow: (lower, upper) radians of θ4, lower <= upper; may extend past ±π.
        wrist: :class:`EulerLimits` of R2 (wrist / ankle).
    """

    shoulder: EulerLimits | None = None
    elbow: tuple[float, float] | None = None
    wrist: EulerLimits | None = None

    def __post_init__(self) -> None:
        if self.elbow is not None:
            try:
                lo, hi = (float(x) for x in self.elbow)
            except (TypeError, ValueError) as exc:
                raise InvalidLimitsError(
                    f"LimbLimits.elbow must be (lower, upper) in radians, got "
                    f"{format_value(self.elbow)}"
                ) from exc
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
                raise InvalidLimitsError(
                    f"LimbLimits.elbow must be finite with lower <= upper, got "
                    f"{format_value(self.elbow)}"
                )
            object.__setattr__(self, "elbow", (lo, hi) if hi - lo < 2 * math.pi else None)
        for name in ("shoulder", "wrist"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, EulerLimits):
                raise InvalidLimitsError(
                    f"LimbLimits.{name} must be an EulerLimits or None, got {format_value(v)}"
                )

    def elbow_contains(self, angle: ArrayLike, tol: float = LIMIT_TOLERANCE) -> BoolArray:
        """Whether elbow angles (any shape; rad, finite) lie within ``elbow`` (slack ``tol``
        ≥ 0 rad; all True without elbow limits). Raises InvalidInputError for non-finite
        or non-numeric angles."""
        return self.elbow_contains_unchecked(_public_array(angle, "angle", ()), _tolerance(tol))

    def elbow_contains_unchecked(
        self, angle: FloatArray, tol: float = LIMIT_TOLERANCE
    ) -> BoolArray:
        """:meth:`elbow_contains` without validation (the solvers' float64 arrays; NaN is
        never inside: False)."""
        if self.elbow is None:
            return np.ones(np.shape(angle), dtype=bool)
        return _in_range(angle, *self.elbow, tol)


class LimbConstants:
    """Derived constants of a limb, as Python floats (for the scalar kernel)."""

    def __init__(self, a: FloatArray, b: FloatArray, k: FloatArray, eff: FloatArray) -> None:
        self.Ra: V.Mat = V.mat_of(a[:3, :3])
        self.Rb: V.Mat = V.mat_of(b[:3, :3])
        self.ta: V.Vec = V.vec_of(a[:3, 3])
        self.tb: V.Vec = V.vec_of(b[:3, 3])
        self.k: V.Vec = V.vec_of(k)
        self.RE: V.Mat = V.mat_of(eff[:3, :3])
        self.tE: V.Vec = V.vec_of(eff[:3, 3])
        self.RE_identity = bool(np.array_equal(eff[:3, :3], np.eye(3)))
        self.ta_l = V.mtv(self.Ra, self.ta)  # ta in the elbow's proximal frame
        self.kta = V.dot(self.k, self.ta_l)
        self.ta2 = V.dot(self.ta, self.ta)
        self.L1 = math.sqrt(self.ta2)
        self.L2 = math.sqrt(V.dot(self.tb, self.tb))
        self.length = self.L1 + self.L2 + math.sqrt(V.dot(self.tE, self.tE))
        # Ra·Rθ·Rb = C0 + cosθ·C1 + sinθ·C2 (Rodrigues about k).
        ra = a[:3, :3]
        rb = b[:3, :3]
        kk = np.outer(k, k)
        kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
        self.C0: V.Mat = V.mat_of(ra @ kk @ rb)
        self.C1: V.Mat = V.mat_of(ra @ (np.eye(3) - kk) @ rb)
        self.C2: V.Mat = V.mat_of(ra @ kx @ rb)
        # A unit vector ⊥ ta (fallback shoulder–wrist axis when the wrist sits on the shoulder).
        t = np.asarray(a[:3, 3])
        helper = np.eye(3)[int(np.argmin(np.abs(t)))]
        p = np.cross(t, helper)
        self.ta_perp: V.Vec = V.vec_of(p / np.linalg.norm(p))
        # For the single-goal fast path (:func:`solve_fast`): the goal-independent part of
        # Eq. (5) for the two terminal points that do not depend on the goal — the wrist
        # centre (pose goals) and the effector with the default wrist (position goals),
        # computed exactly as :func:`reduce_goal` and :func:`solve_circle` compute them.
        self.REt: V.Mat = V.transpose(self.RE)
        self.eps = EPS_LEN * self.length
        self.eps_erad = STRAIGHT_OFFSET * self.L1
        ident = V.mat_of(IDENTITY)
        self.eq5_pose = _Eq5(self, self.tb)
        self.eq5_position = _Eq5(self, V.add(self.tb, V.mv(self.Rb, V.mv(ident, self.tE))))
        # Set by Limb: the limits if any restricts the limb, else None; elbow-only flag.
        self.limits: LimbLimits | None = None
        self.elbow_only = False
        self.aref: V.Vec = (0.0, 0.0, 0.0)  # swivel_reference components, set by Limb


class _Eq5:
    """Goal-independent terms of Eq. (5) for a terminal point ``tbe`` (elbow distal frame)."""

    __slots__ = ("tbe", "ktb", "kxtb", "a", "b", "tbe2", "kta_ktb", "r", "delta")

    def __init__(self, c: LimbConstants, tbe: V.Vec) -> None:
        ops = V.ScalarOps
        self.tbe = tbe
        self.ktb = V.dot(c.k, tbe)
        self.kxtb = V.cross(c.k, tbe)
        self.a = V.dot(c.ta_l, tbe) - c.kta * self.ktb
        self.b = V.dot(c.ta_l, self.kxtb)
        self.tbe2 = V.dot(tbe, tbe)
        self.kta_ktb = c.kta * self.ktb
        self.r = ops.maximum(ops.sqrt(self.a * self.a + self.b * self.b), TINY)
        self.delta = ops.atan2(self.b, self.a)


@dataclass(frozen=True, eq=False)
class Limb:
    """A 7-DOF limb: spherical shoulder, hinge elbow, spherical wrist (Tolani §3.1).

    Attributes:
        a: 4×4, shoulder joint's distal frame → elbow joint's proximal frame (Tolani's A).
            Its translation (the upper-arm segment, metres) must be non-zero.
        b: 4×4, elbow joint's distal frame → wrist joint's proximal frame (Tolani's B).
            Its translation (the forearm) must be non-zero.
        elbow_axis: unit hinge axis in the elbow's proximal frame; default (0, 1, 0) as in
            the paper. Any axis works (Eq. 5 is solved in general, §3.2.1) except one that
            cannot change the shoulder–wrist distance.
        effector: 4×4, wrist distal frame → end effector (Tolani's E); default identity.
        limits: :class:`LimbLimits` or None (no limits).
        swivel_reference: unit vector in the shoulder frame (Tolani's â); φ = 0 puts the
            elbow on its side of the shoulder–wrist axis. Default: derived so that the
            bent zero pose has φ = 0; for a straight zero pose, the side the elbow moves to
            when it starts bending (positive θ4, or toward the elbow limits' middle).

    Raises:
        InvalidLimbError: non-finite values, non-rigid transforms (rotation part off by more
            than ``ROTATION_TOLERANCE``), zero-length segments, zero or ineffective hinge axis.
        InvalidLimitsError: ``limits`` not a LimbLimits.
    """

    a: ArrayLike
    b: ArrayLike
    elbow_axis: ArrayLike = (0.0, 1.0, 0.0)
    effector: ArrayLike = field(default_factory=lambda: np.eye(4))
    limits: LimbLimits | None = None
    swivel_reference: ArrayLike | None = None
    _c: LimbConstants = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        a = _transform(self.a, "Limb.a")
        b = _transform(self.b, "Limb.b")
        eff = _transform(self.effector, "Limb.effector")
        k = _unit(self.elbow_axis, "Limb.elbow_axis", InvalidLimbError)
        for name, t in (("Limb.a", a), ("Limb.b", b), ("Limb.effector", eff)):
            if name != "Limb.effector" and np.linalg.norm(t[:3, 3]) < 1e-9:
                raise InvalidLimbError(
                    f"{name} translation (segment length) must be non-zero, got "
                    f"{format_value(t[:3, 3])}"
                )
            if float(np.max(np.abs(t[:3, 3]))) > MAX_COORDINATE:
                raise InvalidLimbError(
                    f"{name} translation must be within ±{MAX_COORDINATE:g} m "
                    f"(core.goals.MAX_COORDINATE), got {format_value(t[:3, 3])}"
                )
        if self.limits is not None and not isinstance(self.limits, LimbLimits):
            raise InvalidLimitsError(
                f"Limb.limits must be LimbLimits or None, got {format_value(self.limits)}"
            )
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "effector", eff)
        object.__setattr__(self, "elbow_axis", k)
        c = LimbConstants(a, b, k, eff)
        # The hinge must be able to change the shoulder–wrist distance (Eq. 5: r > 0).
        ktb = V.dot(c.k, c.tb)
        r = math.hypot(V.dot(c.ta_l, c.tb) - c.kta * ktb, V.dot(c.ta_l, V.cross(c.k, c.tb)))
        if r < 1e-9 * c.L1 * c.L2:
            raise InvalidLimbError(
                f"Limb.elbow_axis {format_value(k)} cannot change the shoulder-wrist distance "
                f"(it is "
                "parallel to the upper arm or the forearm); choose an axis across the limb"
            )
        object.__setattr__(self, "_c", c)
        if limits_active(self.limits):
            c.limits = self.limits
            assert self.limits is not None
            c.elbow_only = not any(
                lim is not None and any(lim.limited)
                for lim in (self.limits.shoulder, self.limits.wrist)
            )
        if self.swivel_reference is None:
            ref = _default_reference(c, self.limits)
        else:
            ref = _unit(self.swivel_reference, "Limb.swivel_reference", InvalidLimbError)
        ref.setflags(write=False)
        object.__setattr__(self, "swivel_reference", ref)
        c.aref = V.vec_of(ref)

    def with_limits(self, limits: LimbLimits | None) -> Limb:
        """The same limb — geometry and swivel reference, so a swivel angle names the same
        elbow — with other ``limits`` (None: no limits). Raises as the constructor does."""
        return Limb(self.a, self.b, self.elbow_axis, self.effector, limits, self.swivel_reference)

    # -- forward kinematics ------------------------------------------------------------

    @property
    def constants(self) -> LimbConstants:
        """The limb's precomputed constants (:class:`LimbConstants`) the kernel, the fast
        path and the other solvers read."""
        c: LimbConstants = self._c
        return c

    @property
    def length(self) -> float:
        """|A translation| + |B translation| + |E translation| (m)."""
        return self._c.length

    def _elbow_rot(self, elbow: FloatArray | float) -> FloatArray:
        c = self._c
        cc: FloatArray = np.asarray(c.C0)
        return (
            cc
            + np.cos(elbow)[..., None, None] * np.asarray(c.C1)
            + np.sin(elbow)[..., None, None] * np.asarray(c.C2)
        )

    def forward(self, shoulder: ArrayLike, elbow: ArrayLike, wrist: ArrayLike) -> FloatArray:
        """Effector frame (…, 4, 4) in the shoulder frame: T1·A·T_k(θ4)·B·T2·E (Eq. 3).

        Args:
            shoulder: R1, rotation(s) (…, 3, 3). elbow: θ4 (…) radians.
            wrist: R2, rotation(s) (…, 3, 3). Leading axes broadcast.
        """
        r1 = _public_array(shoulder, "shoulder", (3, 3))
        r2 = _public_array(wrist, "wrist", (3, 3))
        th = _public_array(elbow, "elbow", ())
        try:
            return effector_frame(self, r1, th, r2)
        except ValueError as exc:
            raise ShapeMismatchError(
                f"shoulder {r1.shape}, elbow {th.shape} and wrist {r2.shape} do not broadcast"
            ) from exc

    def elbow_position(self, shoulder: ArrayLike) -> FloatArray:
        """Elbow joint centre (…, 3) in the shoulder frame: R1 · tA."""
        r1 = _public_array(shoulder, "shoulder", (3, 3))
        out: FloatArray = r1 @ np.asarray(self.a)[:3, 3]
        return out

    def wrist_position(self, shoulder: ArrayLike, elbow: ArrayLike) -> FloatArray:
        """Wrist joint centre (…, 3) in the shoulder frame: R1 (tA + RA Rθ tB)."""
        r1 = _public_array(shoulder, "shoulder", (3, 3))
        th = _public_array(elbow, "elbow", ())
        try:
            return wrist_centre(self, r1, th)
        except ValueError as exc:
            raise ShapeMismatchError(
                f"shoulder {r1.shape} and elbow {th.shape} do not broadcast"
            ) from exc

    def frames(self, shoulder: ArrayLike, elbow: ArrayLike, wrist: ArrayLike) -> FloatArray:
        """The three joint frames (…, 3, 4, 4) in the shoulder frame: T1, T1·A·T_k(θ4),
        T1·A·T_k(θ4)·B·T2 (upper, lower and end bone; Eq. 3 without the effector E).

        Args: as :meth:`forward` (leading axes broadcast).
        """
        r1 = _public_array(shoulder, "shoulder", (3, 3))
        r2 = _public_array(wrist, "wrist", (3, 3))
        th = _public_array(elbow, "elbow", ())
        try:
            shape = np.broadcast_shapes(r1.shape[:-2], th.shape, r2.shape[:-2])
        except ValueError as exc:
            raise ShapeMismatchError(
                f"shoulder {r1.shape}, elbow {th.shape} and wrist {r2.shape} do not broadcast"
            ) from exc
        t1 = np.zeros(shape + (4, 4))
        t1[..., :3, :3] = r1
        t1[..., 3, 3] = 1.0
        tk = np.zeros(shape + (4, 4))
        tk[..., :3, :3] = rodrigues(np.asarray(self.elbow_axis, dtype=np.float64), th)
        tk[..., 3, 3] = 1.0
        t2 = np.zeros(shape + (4, 4))
        t2[..., :3, :3] = r2
        t2[..., 3, 3] = 1.0
        lower = t1 @ np.asarray(self.a) @ tk
        end = lower @ np.asarray(self.b) @ t2
        out: FloatArray = np.stack([t1, lower, end], axis=-3)
        return out

    def pole_position(
        self, shoulder: ArrayLike, elbow: ArrayLike, distance: float | None = None
    ) -> FloatArray:
        """A pole point (…, 3) in the shoulder frame for the pose (R1, θ4): out from the
        swivel circle's centre (the elbow projected on the shoulder–wrist line) through
        the elbow, ``distance`` beyond it (default: the upper segment's length, |tA|). On
        a straight limb (the elbow on that line) the elbow itself. A pole there names the
        pose's swivel in any pole convention that turns the elbow toward the pole."""
        e = self.elbow_position(shoulder)
        w = self.wrist_position(shoulder, elbow)
        e, w = np.broadcast_arrays(e, w)
        d = float(np.linalg.norm(np.asarray(self.a)[:3, 3])) if distance is None else distance
        wn = w / np.maximum(np.linalg.norm(w, axis=-1, keepdims=True), 1e-300)
        out_dir = e - wn * np.sum(e * wn, axis=-1, keepdims=True)
        n = np.linalg.norm(out_dir, axis=-1, keepdims=True)
        step = np.where(n > 1e-9 * self.length, out_dir / np.maximum(n, 1e-300) * d, 0.0)
        result: FloatArray = e + step
        return result


def effector_frame(
    limb: Limb, r1: FloatArray, th: FloatArray | float, r2: FloatArray
) -> FloatArray:
    """:meth:`Limb.forward` without its input checks, for the solvers' own float64 arrays
    (R1 (…, 3, 3), θ4 (…), R2 (…, 3, 3); leading axes broadcast, ValueError otherwise)."""
    e = np.asarray(limb.effector)
    m = limb._elbow_rot(th)  # Ra Rθ Rb
    rot_w = r1 @ m @ r2
    p_w = wrist_centre(limb, r1, th)[..., None]
    shape = np.broadcast_shapes(rot_w.shape[:-2], p_w.shape[:-2])
    out = np.zeros(shape + (4, 4))
    out[..., :3, :3] = rot_w @ e[:3, :3]
    out[..., :3, 3] = p_w[..., 0] + (rot_w @ e[:3, 3])
    out[..., 3, 3] = 1.0
    return out


def wrist_centre(limb: Limb, r1: FloatArray, th: FloatArray | float) -> FloatArray:
    """:meth:`Limb.wrist_position` without its input checks, for the solvers' own float64
    arrays (R1 (…, 3, 3), θ4 (…); leading axes broadcast, ValueError otherwise)."""
    a = np.asarray(limb.a)
    b = np.asarray(limb.b)
    local = (
        a[:3, 3]
        + (
            a[:3, :3]
            @ rodrigues(np.asarray(limb.elbow_axis, dtype=np.float64), th)
            @ b[:3, 3][:, None]
        )[..., 0]
    )
    out: FloatArray = (r1 @ local[..., None])[..., 0]
    return out


LimbGoal = PositionGoal | PoseGoal


class SwivelStrategy(Enum):
    """How φ is chosen from the feasible intervals when limits are set (§3.2.4)."""

    #: The feasible φ nearest the desired one (``swivel``, ``elbow_target`` or 0).
    CLOSEST = "closest"
    #: The midpoint of the largest feasible interval (clearance from the limits).
    MIDPOINT = "midpoint"


#: A callable strategy: maps joint angles (M, 7) → (M,) cost; columns are the shoulder
#: Euler angles (x, y, z in the shoulder limits' order, 'XYZ' if none), θ4, and the wrist
#: Euler angles likewise — the family within limits where there is one.
Objective = Callable[[FloatArray], FloatArray]


@dataclass(frozen=True, eq=False)
class LimbSolution:
    """Result of :func:`solve_limb`; arrays gain a leading axis N for batched goals.

    Attributes:
        shoulder: R1 (3, 3). elbow: θ4 (rad). wrist: R2 (3, 3).
        swivel: φ (rad, in [-π, π)).
        reachable: the goal was attained: position error ≤ REACH_TOLERANCE × limb length
            and orientation error ≤ REACH_TOLERANCE rad.
        within_limits: every joint within its limits (± LIMIT_TOLERANCE).
        position_error: |FK effector position − goal position| (m), from forward kinematics.
        orientation_error: angle (rad) between the FK effector frame and the goal's (0 for
            position goals).
        feasible_swivel: the φ set satisfying every limit, as (lo, hi) intervals with
            lo ∈ [-π, π) and lo < hi ≤ lo + 2π (an interval through π has hi > π; the whole
            circle is ((-π, π),)); ``((-π, π),)`` without limits; ``()`` when empty. For a
            batch: an (N, K, 2) array padded with NaN.
        psi: for partial-orientation goals, ψ (rad, [-π, π)); else None.
        aim_error: for aim goals, the angle (rad) between the aiming ray and the direction
            from its origin to the target; else None. For partial goals
            ``orientation_error`` is the angle between the effector axis and ``direction``.
    """

    shoulder: FloatArray
    elbow: Any
    wrist: FloatArray
    swivel: Any
    reachable: Any
    within_limits: Any
    position_error: Any
    orientation_error: Any
    feasible_swivel: Any
    psi: Any = None
    aim_error: Any = None

    def __len__(self) -> int:
        if np.ndim(self.elbow) == 0:
            raise TypeError("a single LimbSolution has no len()")
        return int(np.shape(self.elbow)[0])

    def __getitem__(self, i: int) -> LimbSolution:
        """Element ``i`` of a batched solution, as a single solution."""
        fs = self.feasible_swivel[i]
        return LimbSolution(
            shoulder=self.shoulder[i],
            elbow=float(self.elbow[i]),
            wrist=self.wrist[i],
            swivel=float(self.swivel[i]),
            reachable=bool(self.reachable[i]),
            within_limits=bool(self.within_limits[i]),
            position_error=float(self.position_error[i]),
            orientation_error=float(self.orientation_error[i]),
            feasible_swivel=tuple((float(a), float(b)) for a, b in fs if not math.isnan(a)),
            psi=None if self.psi is None else float(self.psi[i]),
            aim_error=None if self.aim_error is None else float(self.aim_error[i]),
        )


def bend_sign(ops: V.Ops, d: Any, theta: Any, elbow: tuple[float, float] | None) -> Any:
    """σ of :func:`bend_direction`: the way the elbow angle θ4 (``theta``) leaves the
    straight (folded) angle δ, for θ4 at ``d`` = θ4 − δ (wrapped into [−π, π); ±β for
    Eq. 5's two roots). The side θ4 lies on: the sign of ``d`` near the straight angle,
    the opposite near the folded one; within :data:`BEND_NOISE` of either angle (at the
    end of reach, where both roots coincide) into the middle of the ``elbow`` limits
    (without limits: + from straight, − from folded). The one rule of
    :func:`~core.limb.kernel.solve_circle`, the fast path and :func:`core.pose_swivel`:
    where they disagreed on a straight limb, its re-solve turned it 180° about itself."""
    ad = abs(d)
    straight = ops.where(ad < 0.5 * math.pi, 1.0, -1.0)
    if elbow is None:
        at_end = straight
    else:
        at_end = ops.where(V.wrap(0.5 * (elbow[0] + elbow[1]) - theta) >= 0.0, 1.0, -1.0)
    end = (ad <= BEND_NOISE) | (ad >= math.pi - BEND_NOISE)
    return ops.where(end, at_end, ops.where(d > 0.0, 1.0, -1.0) * straight)


def bend_direction(
    ops: V.Ops, c: LimbConstants, x_r: V.Vec, ep: Any, rt: V.Vec, sigma: Any
) -> V.Vec:
    """Unit bend direction ⊥ x_r for a straight (or folded) limb.

    The limit, as the limb starts to bend in the direction ``sigma`` of θ4, of the
    direction from the shoulder–wrist axis to the elbow: −sign(e·x_r)·σ·(∂w/∂θ4)⊥.
    """
    dw = V.mv(c.Ra, V.cross(c.k, rt))
    dwp = V.axpy(-V.dot(dw, x_r), x_r, dw)
    nl = ops.sqrt(V.dot(dwp, dwp))
    s = -ops.sign(ep) * sigma / ops.maximum(nl, TINY)
    return V.scale(dwp, s)


def _default_reference(c: LimbConstants, limits: LimbLimits | None) -> FloatArray:
    """â such that the zero pose has φ = 0 (see :class:`Limb`)."""
    ops = V.ScalarOps
    w0 = V.add(c.ta, V.mv(c.Ra, c.tb))
    rw0 = math.sqrt(V.dot(w0, w0))
    if rw0 < EPS_LEN * c.length:
        return np.array(c.ta_perp)
    x_r = V.scale(w0, 1.0 / rw0)
    ep = V.dot(c.ta, x_r)
    eperp = V.axpy(-ep, x_r, c.ta)
    erad = math.sqrt(V.dot(eperp, eperp))
    if erad > EPS_LEN * c.L1:
        return np.array(V.scale(eperp, 1.0 / erad))
    # σ = the sign of θ4's change as the limb leaves the zero pose, as solve_circle's root rule
    # would take it: toward the elbow limits' middle; without limits the + root, which
    # increases θ4 from a stretched pose (a > 0 in Eq. 5) and decreases it from a folded one.
    if limits is not None and limits.elbow is not None:
        sigma = -1.0 if V.wrap(0.5 * (limits.elbow[0] + limits.elbow[1])) < 0.0 else 1.0
    else:
        ktb = V.dot(c.k, c.tb)
        sigma = 1.0 if V.dot(c.ta_l, c.tb) - c.kta * ktb > 0.0 else -1.0
    return np.array(bend_direction(ops, c, x_r, ep, c.tb, sigma))


def limits_active(limits: LimbLimits | None) -> bool:
    """Whether any joint limit actually restricts the limb (a full-turn range does not)."""
    return limits is not None and (
        limits.elbow is not None
        or any(lim is not None and any(lim.limited) for lim in (limits.shoulder, limits.wrist))
    )
