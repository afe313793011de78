"""Analytic inverse kinematics of a 7-DOF limb (Tolani, Goswami & Badler 2000, §3.1–3.2).

The chain is Tolani's Eq. (3), extended by an end-effector transform E::

    G = T1(R1) · A · T_k(θ4) · B · T2(R2) · E

with R1 the shoulder (hip) rotation, θ4 the elbow (knee) hinge angle about the unit axis
``k`` of the elbow's proximal frame, R2 the wrist (ankle) rotation and E the fixed wrist →
end-effector transform. Everything is expressed in the *shoulder frame*: the frame in
which R1 acts, with the shoulder joint at its origin. Units: metres and radians.

For a reachable goal the solution set is a circle: the elbow may swivel about the
shoulder–wrist axis n̂ by the *swivel angle* φ (§3.2.2, Eq. 6), measured from the
projection of ``Limb.swivel_reference`` (Tolani's â) onto the circle's plane, positive by
the right-hand rule about n̂. Joint limits turn into a set of feasible φ intervals, found
analytically (§3.2.4) and from which φ is chosen by a :class:`SwivelStrategy`.

Conventions: rotation matrices act on column vectors; Euler angles follow Blender
(component order (x, y, z), order string ``'XYZ'`` meaning R = Rz·Ry·Rx).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _vec as V
from .errors import (
    InvalidGoalError,
    InvalidInputError,
    InvalidLimbError,
    InvalidLimitsError,
    ShapeMismatchError,
)
from .goals import (
    MAX_COORDINATE,
    ROTATION_TOLERANCE,
    AimGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
)
from .limb_partial import PsiStrategy
from .rotations import (
    _GIMBAL_COS,
    check_order,
    check_rotation,
    euler_spec,
    euler_to_matrix,
    matrix_to_euler_families,
)

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

__all__ = [
    "EulerLimits",
    "LimbLimits",
    "Limb",
    "PositionGoal",
    "PoseGoal",
    "SwivelStrategy",
    "LimbSolution",
    "solve_limb",
    "feasible_swivel",
    "ROTATION_TOLERANCE",
    "LIMIT_TOLERANCE",
    "REACH_TOLERANCE",
]

#: Slack (rad) when testing a joint angle against its limits.
LIMIT_TOLERANCE = 1e-9
#: A goal counts as reached when the position error is at most this × limb length and the
#: orientation error at most this (rad).
REACH_TOLERANCE = 1e-9
# Lengths below this × limb length are treated as zero (degenerate directions).
_EPS_LEN = 1e-9
_TINY = 1e-300
_IDENTITY = np.eye(3)
# Tight tolerances: the unsolvable-goal optimum feeds a fixed point that must be exact.
_SLSQP_OPTIONS = {"ftol": 1e-15, "maxiter": 200}
_IDENTITY.setflags(write=False)


# --------------------------------------------------------------------------------------
# Input validation helpers
# --------------------------------------------------------------------------------------


def _in_range(a: Any, lo: float, hi: float, tol: float) -> BoolArray:
    """Unchecked :func:`core.rotations.angle_in_range` for trusted limits (lo <= hi)."""
    d = np.mod(a - lo, V.TAU)
    ok: BoolArray = (d <= hi - lo + tol) | (d >= V.TAU - tol)
    return ok


def _finite_array(value: ArrayLike, name: str, error: type[Exception]) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be numeric, got {value!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise error(f"{name} must be finite, got {arr!r}")
    return arr


def _public_array(value: ArrayLike, name: str, tail: tuple[int, ...]) -> FloatArray:
    """``value`` as a finite float array whose last axes are ``tail`` (the public methods'
    arguments); raises InvalidInputError naming it otherwise."""
    arr = _finite_array(value, name, InvalidInputError)
    if arr.ndim < len(tail) or arr.shape[arr.ndim - len(tail) :] != tail:
        raise InvalidInputError(
            f"{name} must have shape (…, {', '.join(map(str, tail))}), got {arr.shape}"
        )
    return arr


def _lenient_array(value: ArrayLike, name: str, tail: tuple[int, ...]) -> FloatArray:
    """As :func:`_public_array`, but a float64 ndarray of the right trailing shape passes
    as it is, NaN included (the membership tests take the solvers' NaN-padded angle
    families; NaN is never inside a limit, so their boolean answer stays honest)."""
    if (
        type(value) is np.ndarray
        and value.dtype == np.float64
        and value.ndim >= len(tail)
        and value.shape[value.ndim - len(tail) :] == tail
    ):
        return value
    return _public_array(value, name, tail)


def _transform(value: ArrayLike, name: str) -> FloatArray:
    m = _finite_array(value, name, InvalidLimbError)
    if m.shape != (4, 4):
        raise InvalidLimbError(f"{name} must be a 4×4 transform, got shape {m.shape}")
    if np.max(np.abs(m[3] - (0.0, 0.0, 0.0, 1.0))) > 1e-12:
        raise InvalidLimbError(f"{name} must have bottom row (0, 0, 0, 1), got {m[3]!r}")
    check_rotation(
        m[:3, :3], tol=ROTATION_TOLERANCE, name=f"{name}[:3, :3]", error=InvalidLimbError
    )
    m = m.copy()
    m.setflags(write=False)
    return m


def _unit(value: ArrayLike, name: str, error: type[Exception]) -> FloatArray:
    v = _finite_array(value, name, error)
    if v.shape != (3,):
        raise error(f"{name} must be a 3-vector, got shape {v.shape}")
    n = float(np.linalg.norm(v))
    if n < 1e-12:
        raise error(f"{name} must be a non-zero vector, got {v!r}")
    out = v / n
    out.setflags(write=False)
    return out


def _batch_of(arr: FloatArray, core_ndim: int, name: str) -> int | None:
    """Leading batch size (None for a single value) of an array with ``core_ndim`` dims."""
    if arr.ndim == core_ndim:
        return None
    if arr.ndim == core_ndim + 1:
        return int(arr.shape[0])
    raise InvalidGoalError(
        f"{name} must have shape {'(3,)' if core_ndim == 1 else '(3, 3)'} or a leading "
        f"batch axis, got shape {arr.shape}"
    )


# --------------------------------------------------------------------------------------
# Limits
# --------------------------------------------------------------------------------------


def _angle_bounds(
    value: Sequence[float | None] | ArrayLike | None, default: float, name: str
) -> tuple[float, float, float]:
    if value is None:
        return (default, default, default)
    items = list(value) if isinstance(value, list | tuple | np.ndarray) else []
    if len(items) != 3:
        raise InvalidLimitsError(
            f"{name} must be 3 angles (x, y, z) in rad (None or ±inf: free), got {value!r}"
        )
    out = []
    for v in items:
        if v is not None and (
            not isinstance(v, int | float | np.integer | np.floating) or isinstance(v, bool)
        ):
            raise InvalidLimitsError(
                f"{name} entries must be numbers (rad) or None, got {v!r} in {value!r}"
            )
        f = default if v is None else float(v)
        if math.isnan(f):
            raise InvalidLimitsError(f"{name} must not contain NaN, got {value!r}")
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
                    f"EulerLimits angle {'xyz'[i]}: lower {lo[i]!r} > upper {hi[i]!r}; "
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

    def bounds(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        lo, hi = self.lower, self.upper
        assert isinstance(lo, tuple) and isinstance(hi, tuple)
        return lo, hi

    def contains(self, angles: ArrayLike, tol: float = LIMIT_TOLERANCE) -> BoolArray:
        """Whether Euler angles (..., 3) lie within the limits (mod 2π, with slack ``tol``)."""
        a = _lenient_array(angles, "angles", (3,))
        width = self._width
        d = np.mod(a - self._lo, V.TAU)
        ok: BoolArray = ((d <= width + tol) | (d >= V.TAU - tol)).all(axis=-1)
        return ok


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
                    f"LimbLimits.elbow must be (lower, upper) in radians, got {self.elbow!r}"
                ) from exc
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
                raise InvalidLimitsError(
                    f"LimbLimits.elbow must be finite with lower <= upper, got {self.elbow!r}"
                )
            object.__setattr__(self, "elbow", (lo, hi) if hi - lo < 2 * math.pi else None)
        for name in ("shoulder", "wrist"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, EulerLimits):
                raise InvalidLimitsError(
                    f"LimbLimits.{name} must be an EulerLimits or None, got {v!r}"
                )

    def elbow_contains(self, angle: ArrayLike, tol: float = LIMIT_TOLERANCE) -> BoolArray:
        if self.elbow is None:
            return np.ones(np.shape(angle), dtype=bool)
        return _in_range(_lenient_array(angle, "angle", ()), *self.elbow, tol)


# --------------------------------------------------------------------------------------
# Limb
# --------------------------------------------------------------------------------------


class _Consts:
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
        # For the single-goal fast path (:func:`_solve_fast`): the goal-independent part of
        # Eq. (5) for the two terminal points that do not depend on the goal — the wrist
        # centre (pose goals) and the effector with the default wrist (position goals),
        # computed exactly as :func:`_problem` and :func:`_circle` compute them.
        self.REt: V.Mat = V.transpose(self.RE)
        self.eps = _EPS_LEN * self.length
        self.eps_erad = _EPS_LEN * self.L1
        ident = V.mat_of(_IDENTITY)
        self.eq5_pose = _Eq5(self, self.tb)
        self.eq5_position = _Eq5(self, V.add(self.tb, V.mv(self.Rb, V.mv(ident, self.tE))))
        # Set by Limb: the limits if any restricts the limb, else None; elbow-only flag.
        self.limits: LimbLimits | None = None
        self.elbow_only = False
        self.aref: V.Vec = (0.0, 0.0, 0.0)  # swivel_reference components, set by Limb


class _Eq5:
    """Goal-independent terms of Eq. (5) for a terminal point ``tbe`` (elbow distal frame)."""

    __slots__ = ("tbe", "ktb", "kxtb", "a", "b", "tbe2", "kta_ktb", "r", "delta")

    def __init__(self, c: _Consts, tbe: V.Vec) -> None:
        ops = V.ScalarOps
        self.tbe = tbe
        self.ktb = V.dot(c.k, tbe)
        self.kxtb = V.cross(c.k, tbe)
        self.a = V.dot(c.ta_l, tbe) - c.kta * self.ktb
        self.b = V.dot(c.ta_l, self.kxtb)
        self.tbe2 = V.dot(tbe, tbe)
        self.kta_ktb = c.kta * self.ktb
        self.r = ops.maximum(ops.sqrt(self.a * self.a + self.b * self.b), _TINY)
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
    _c: _Consts = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        a = _transform(self.a, "Limb.a")
        b = _transform(self.b, "Limb.b")
        eff = _transform(self.effector, "Limb.effector")
        k = _unit(self.elbow_axis, "Limb.elbow_axis", InvalidLimbError)
        for name, t in (("Limb.a", a), ("Limb.b", b), ("Limb.effector", eff)):
            if name != "Limb.effector" and np.linalg.norm(t[:3, 3]) < 1e-9:
                raise InvalidLimbError(
                    f"{name} translation (segment length) must be non-zero, got {t[:3, 3]!r}"
                )
            if float(np.max(np.abs(t[:3, 3]))) > MAX_COORDINATE:
                raise InvalidLimbError(
                    f"{name} translation must be within ±{MAX_COORDINATE:g} m "
                    f"(core.goals.MAX_COORDINATE), got {t[:3, 3].tolist()}"
                )
        if self.limits is not None and not isinstance(self.limits, LimbLimits):
            raise InvalidLimitsError(f"Limb.limits must be LimbLimits or None, got {self.limits!r}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "effector", eff)
        object.__setattr__(self, "elbow_axis", k)
        c = _Consts(a, b, k, eff)
        # The hinge must be able to change the shoulder–wrist distance (Eq. 5: r > 0).
        ktb = V.dot(c.k, c.tb)
        r = math.hypot(V.dot(c.ta_l, c.tb) - c.kta * ktb, V.dot(c.ta_l, V.cross(c.k, c.tb)))
        if r < 1e-9 * c.L1 * c.L2:
            raise InvalidLimbError(
                f"Limb.elbow_axis {k!r} cannot change the shoulder-wrist distance (it is "
                "parallel to the upper arm or the forearm); choose an axis across the limb"
            )
        object.__setattr__(self, "_c", c)
        if _limits_active(self.limits):
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
    def length(self) -> float:
        """|A translation| + |B translation| + |E translation| (m)."""
        return self._c.length

    def _elbow_rot(self, elbow: FloatArray) -> FloatArray:
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
        e = np.asarray(self.effector)
        try:
            m = self._elbow_rot(th)  # Ra Rθ Rb
            rot_w = r1 @ m @ r2
            p_w = self.wrist_position(r1, th)[..., None]
            shape = np.broadcast_shapes(rot_w.shape[:-2], p_w.shape[:-2])
        except ValueError as exc:
            raise ShapeMismatchError(
                f"shoulder {r1.shape}, elbow {th.shape} and wrist {r2.shape} do not broadcast"
            ) from exc
        out = np.zeros(shape + (4, 4))
        out[..., :3, :3] = rot_w @ e[:3, :3]
        out[..., :3, 3] = p_w[..., 0] + (rot_w @ e[:3, 3])
        out[..., 3, 3] = 1.0
        return out

    def elbow_position(self, shoulder: ArrayLike) -> FloatArray:
        """Elbow joint centre (…, 3) in the shoulder frame: R1 · tA."""
        r1 = _public_array(shoulder, "shoulder", (3, 3))
        out: FloatArray = r1 @ np.asarray(self.a)[:3, 3]
        return out

    def wrist_position(self, shoulder: ArrayLike, elbow: ArrayLike) -> FloatArray:
        """Wrist joint centre (…, 3) in the shoulder frame: R1 (tA + RA Rθ tB)."""
        r1 = _public_array(shoulder, "shoulder", (3, 3))
        th = _public_array(elbow, "elbow", ())
        a = np.asarray(self.a)
        b = np.asarray(self.b)
        local = a[:3, 3] + (a[:3, :3] @ _hinge(self.elbow_axis, th) @ b[:3, 3][:, None])[..., 0]
        try:
            out: FloatArray = (r1 @ local[..., None])[..., 0]
        except ValueError as exc:
            raise ShapeMismatchError(
                f"shoulder {r1.shape} and elbow {th.shape} do not broadcast"
            ) from exc
        return out


def _hinge(axis: ArrayLike, angle: FloatArray) -> FloatArray:
    k = np.asarray(axis, dtype=np.float64)
    kk = np.outer(k, k)
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    c = np.cos(angle)[..., None, None]
    s = np.sin(angle)[..., None, None]
    out: FloatArray = kk + c * (np.eye(3) - kk) + s * kx
    return out


# --------------------------------------------------------------------------------------
# Goals
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Solution
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# The kernel: θ4, the elbow circle and the reference frames (§3.2.1–3.2.3)
# --------------------------------------------------------------------------------------


class _Circle:
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


def _bend_direction(ops: V.Ops, c: _Consts, x_r: V.Vec, ep: Any, rt: V.Vec, sigma: Any) -> V.Vec:
    """Unit bend direction ⊥ x_r for a straight (or folded) limb.

    The limit, as the limb starts to bend in the direction ``sigma`` of θ4, of the
    direction from the shoulder–wrist axis to the elbow: −sign(e·x_r)·σ·(∂w/∂θ4)⊥.
    """
    dw = V.mv(c.Ra, V.cross(c.k, rt))
    dwp = V.axpy(-V.dot(dw, x_r), x_r, dw)
    nl = ops.sqrt(V.dot(dwp, dwp))
    s = -ops.sign(ep) * sigma / ops.maximum(nl, _TINY)
    return V.scale(dwp, s)


def _default_reference(c: _Consts, limits: LimbLimits | None) -> FloatArray:
    """â such that the zero pose has φ = 0 (see :class:`Limb`)."""
    ops = V.ScalarOps
    w0 = V.add(c.ta, V.mv(c.Ra, c.tb))
    rw0 = math.sqrt(V.dot(w0, w0))
    if rw0 < _EPS_LEN * c.length:
        return np.array(c.ta_perp)
    x_r = V.scale(w0, 1.0 / rw0)
    ep = V.dot(c.ta, x_r)
    eperp = V.axpy(-ep, x_r, c.ta)
    erad = math.sqrt(V.dot(eperp, eperp))
    if erad > _EPS_LEN * c.L1:
        return np.array(V.scale(eperp, 1.0 / erad))
    # σ = the sign of θ4's change as the limb leaves the zero pose, as _circle's root rule
    # would take it: toward the elbow limits' middle; without limits the + root, which
    # increases θ4 from a stretched pose (a > 0 in Eq. 5) and decreases it from a folded one.
    if limits is not None and limits.elbow is not None:
        sigma = -1.0 if V.wrap(0.5 * (limits.elbow[0] + limits.elbow[1])) < 0.0 else 1.0
    else:
        ktb = V.dot(c.k, c.tb)
        sigma = 1.0 if V.dot(c.ta_l, c.tb) - c.kta * ktb > 0.0 else -1.0
    return np.array(_bend_direction(ops, c, x_r, ep, c.tb, sigma))


def _limits_active(limits: LimbLimits | None) -> bool:
    """Whether any joint limit actually restricts the limb (a full-turn range does not)."""
    return limits is not None and (
        limits.elbow is not None
        or any(lim is not None and any(lim.limited) for lim in (limits.shoulder, limits.wrist))
    )


def _reorthonormalise(ops: V.Ops, v: V.Vec, axis: V.Vec) -> V.Vec:
    """v made exactly ⊥ the unit ``axis`` and unit again (a second Gram–Schmidt pass).

    A direction found by dividing a short difference vector (near-straight limb, reference
    nearly along the axis) carries a relative error of eps/length along ``axis``.
    """
    p = V.axpy(-V.dot(v, axis), axis, v)
    return V.scale(p, 1.0 / ops.sqrt(V.dot(p, p)))


def _circle(
    ops: V.Ops,
    c: _Consts,
    wg: V.Vec,
    tbe: V.Vec,
    aref: V.Vec,
    elbow: tuple[float, float] | None,
    near: Any = None,
) -> _Circle:
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
    beta = ops.acos(rhs / ops.maximum(r, _TINY))
    t_plus = V.wrap(delta + beta)
    if elbow is None and near is None:
        theta = t_plus
        plus: Any = True if not ops.batched else np.ones(np.shape(t_plus), dtype=bool)
    elif elbow is None:
        t_minus = V.wrap(delta - beta)
        plus = abs(V.wrap(t_plus - near)) <= abs(V.wrap(t_minus - near))
        theta = ops.where(plus, t_plus, t_minus)
    else:
        theta, plus = _pick_root(ops, t_plus, V.wrap(delta - beta), elbow, near)

    def sigma() -> Any:  # which way θ4 moves away from the straight (β = 0) or folded pose
        return ops.where(plus, 1.0, -1.0) * ops.where(beta < 0.5 * math.pi, 1.0, -1.0)

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
    eps = _EPS_LEN * c.length
    x_r = ops.lazy(rw0 > eps, lambda: V.scale(w0, 1.0 / ops.maximum(rw0, _TINY)), lambda: c.ta_perp)
    ep = V.dot(c.ta, x_r)
    eperp = V.axpy(-ep, x_r, c.ta)
    erad = ops.sqrt(V.dot(eperp, eperp))
    y_r = ops.lazy(
        erad > _EPS_LEN * c.L1,
        lambda: V.scale(eperp, 1.0 / ops.maximum(erad, _TINY)),
        lambda: _bend_direction(ops, c, x_r, ep, rt, sigma()),
    )
    y_r = _reorthonormalise(ops, y_r, x_r)
    z_r = V.cross(x_r, y_r)

    rg = ops.sqrt(d2)
    n = ops.lazy(rg > eps, lambda: V.scale(wg, 1.0 / ops.maximum(rg, _TINY)), lambda: x_r)
    ap = V.axpy(-V.dot(aref, n), n, aref)
    al = ops.sqrt(V.dot(ap, ap))

    def fallback_u() -> V.Vec:
        yp = V.axpy(-V.dot(y_r, n), n, y_r)
        zp = V.axpy(-V.dot(z_r, n), n, z_r)
        yl = V.dot(yp, yp)
        p = ops.lazy(yl >= 0.5, lambda: yp, lambda: zp)
        pl = ops.sqrt(V.dot(p, p))
        return V.scale(p, 1.0 / pl)

    u = ops.lazy(al > 1e-9, lambda: V.scale(ap, 1.0 / ops.maximum(al, _TINY)), fallback_u)
    u = _reorthonormalise(ops, u, n)
    out = _Circle()
    out.theta, out.x_r, out.y_r, out.z_r = theta, x_r, y_r, z_r
    out.n, out.u, out.v = n, u, V.cross(n, u)
    out.w0, out.ep, out.erad, out.rw0, out.rg = w0, ep, erad, rw0, rg
    return out


def _pick_root(
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


def _shoulder_at(ops: V.Ops, ci: _Circle, phi: Any) -> V.Mat:
    """R1(φ) = [n, yφ, zφ]·[x_r, y_r, z_r]ᵀ (Eq. 7), yφ = cosφ û + sinφ v̂."""
    cp = ops.cos(phi)
    sp = ops.sin(phi)
    u, v = ci.u, ci.v
    y_phi = (cp * u[0] + sp * v[0], cp * u[1] + sp * v[1], cp * u[2] + sp * v[2])
    z_phi = (cp * v[0] - sp * u[0], cp * v[1] - sp * u[1], cp * v[2] - sp * u[2])
    return V.frame_product((ci.n, y_phi, z_phi), (ci.x_r, ci.y_r, ci.z_r))


def _elbow_matrix(ops: V.Ops, c: _Consts, theta: Any) -> V.Mat:
    """Ra·Rθ·Rb = C0 + cosθ·C1 + sinθ·C2."""
    return _elbow_matrix_cs(c, ops.cos(theta), ops.sin(theta))


def _elbow_matrix_cs(c: _Consts, ct: Any, st: Any) -> V.Mat:
    """:func:`_elbow_matrix` from cosθ and sinθ."""
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


def _desired_swivel(ci: _Circle, swivel: Any, elbow_target: V.Vec | None, ops: V.Ops) -> Any:
    """φ_d: the given swivel, or the one nearest the elbow target (§3.2.2), or 0."""
    if elbow_target is not None:
        p = V.axpy(-ci.ep, ci.n, elbow_target)  # e_d − c, c = (e·x_r) n̂
        return ops.atan2(V.dot(p, ci.v), V.dot(p, ci.u))
    if swivel is not None:
        return V.wrap(swivel)
    return 0.0


class _Problem:
    """A goal reduced to the chain's terminal point and, for pose goals, the wrist frame."""

    __slots__ = ("wg", "tbe", "RW", "R2", "goal_p", "n")
    wg: V.Vec
    tbe: V.Vec
    RW: V.Mat | None
    R2: V.Mat | None
    goal_p: V.Vec
    n: int | None


def _problem(limb: Limb, goal: LimbGoal, wrist: Any, n: int | None) -> _Problem:
    c = limb._c
    pr = _Problem()
    pr.n = n
    if isinstance(goal, PoseGoal):
        rg = V.mat_of(np.asarray(goal.rotation))
        tg = V.vec_of(np.asarray(goal.position))
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
        point = np.asarray(goal.point)
        te = c.tE if not point.any() else V.add(c.tE, V.mv(c.RE, V.vec_of(point)))
        pr.tbe = V.add(c.tb, V.mv(c.Rb, V.mv(r2, te)))
        pr.wg = V.vec_of(np.asarray(goal.position))
        pr.goal_p = pr.wg
    if n is not None:  # broadcast constants to (N,) components
        ones = np.ones(n)
        pr.wg = tuple(x * ones for x in pr.wg)
    return pr


def _pose(
    ops: V.Ops, c: _Consts, pr: _Problem, ci: _Circle, phi: Any
) -> tuple[V.Mat, V.Mat, Any, Any]:
    """R1, R2, position error and orientation error at swivel φ (errors from FK)."""
    r1 = _shoulder_at(ops, ci, phi)
    p = V.mv(r1, ci.w0)  # the terminal point, by forward kinematics
    if pr.RW is None:
        r2 = pr.R2
        d = V.sub(p, pr.goal_p)
        assert r2 is not None
        return r1, r2, ops.sqrt(V.dot(d, d)), 0.0 * ci.rg
    n1 = V.mm(r1, _elbow_matrix(ops, c, ci.theta))
    r2 = V.mtm(n1, pr.RW)
    w_fk = V.mm(n1, r2)
    d = V.sub(V.add(p, V.mv(w_fk, c.tE)), pr.goal_p)
    return r1, r2, ops.sqrt(V.dot(d, d)), V.rotation_angle(w_fk, pr.RW, ops)


# --------------------------------------------------------------------------------------
# Feasible swivel intervals (§3.2.4)
# --------------------------------------------------------------------------------------


class _Coeffs:
    """R(φ) = P + cosφ·Q + sinφ·S for one spherical joint, arrays (N, 3, 3)."""

    __slots__ = ("P", "Q", "S")

    def __init__(self, p: FloatArray, q: FloatArray, s: FloatArray) -> None:
        self.P, self.Q, self.S = p, q, s

    def at(self, phi: FloatArray) -> FloatArray:
        """R at φ of shape (N, K) → (N, K, 3, 3)."""
        cp = np.cos(phi)[..., None, None]
        sp = np.sin(phi)[..., None, None]
        return self.P[:, None] + cp * self.Q[:, None] + sp * self.S[:, None]  # type: ignore[no-any-return]

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
    left: tuple[V.Vec, V.Vec, V.Vec], right: tuple[V.Vec, V.Vec, V.Vec], sign: float, n: int
) -> _Coeffs:
    """P = l0 r0ᵀ, Q = l1 r1ᵀ + l2 r2ᵀ, S = sign·(l2 r1ᵀ − l1 r2ᵀ)."""
    (l0, l1, l2), (r0, r1, r2) = left, right
    rng = range(3)
    p = tuple(tuple(l0[i] * r0[j] for j in rng) for i in rng)
    q = tuple(tuple(l1[i] * r1[j] + l2[i] * r2[j] for j in rng) for i in rng)
    sg = tuple(tuple(sign * (l2[i] * r1[j] - l1[i] * r2[j]) for j in rng) for i in rng)
    return _Coeffs(_stack(p, n), _stack(q, n), _stack(sg, n))  # type: ignore[arg-type]


def _joint_coeffs(
    ops: V.Ops, c: _Consts, pr: _Problem, ci: _Circle, n: int
) -> tuple[_Coeffs, _Coeffs]:
    """Coefficients of R1(φ) and R2(φ) as P + cosφ·Q + sinφ·S, arrays (n, 3, 3) (§3.2.4).

    R1 = [n̂, yφ, zφ]·[x_r, y_r, z_r]ᵀ (Eq. 7 with R1 = R0·Rφ), and R2 = (R1 Ra Rθ Rb)ᵀ R_W
    is the same sum of outer products with x_r, y_r, z_r → Mᵀ·(…) and n̂, û, v̂ → R_Wᵀ·(…).
    Works on scalar (n = 1) or batched circle components alike.
    """
    sh = _outer_coeffs((ci.n, ci.u, ci.v), (ci.x_r, ci.y_r, ci.z_r), 1.0, n)
    if pr.RW is None:
        assert pr.R2 is not None
        z = np.zeros((n, 3, 3))
        return sh, _Coeffs(_stack(pr.R2, n), z, z)
    m = _elbow_matrix(ops, c, ci.theta)
    left = (V.mtv(m, ci.x_r), V.mtv(m, ci.y_r), V.mtv(m, ci.z_r))
    right = (V.mtv(pr.RW, ci.n), V.mtv(pr.RW, ci.u), V.mtv(pr.RW, ci.v))
    return sh, _outer_coeffs(left, right, -1.0, n)


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


def _joint_equations(co: _Coeffs, lim: EulerLimits) -> FloatArray:
    """(α, β, γ) stacked (3, N, E) of the joint's limit-crossing equations at φ."""
    w, v = lim._equations
    n = co.P.shape[0]
    if len(v) == 0:
        return np.zeros((3, n, 0))
    out: FloatArray = np.stack([co.S, co.Q, co.P]).reshape(3, n, 9) @ w.T
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
            out[i] = limits[i].contains(fam[i]).any(axis=-1)  # type: ignore[union-attr]
    else:
        for i in active:
            lim = limits[i]
            assert lim is not None
            fam_i = matrix_to_euler_families(rotations[i], lim.order, check=False)
            out[i] = lim.contains(fam_i).any(axis=-1)
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


def _feasible(limits: LimbLimits, sh: _Coeffs, wr: _Coeffs, theta: FloatArray) -> _Feasible:
    """Feasible φ intervals (§3.2.4): (A1 ∪ A2) ∩ (B1 ∪ B2), and A1 ∪ A2 alone."""
    n = len(theta)
    if n == 0:  # an empty batch: no intervals
        out0 = _Feasible()
        out0.all = np.zeros((0, 1, 2))
        out0.bp, out0.feas_shoulder = np.zeros((0, 2)), np.zeros((0, 1), dtype=bool)
        return out0
    eqs = [np.zeros((3, n, 0))]
    if limits.shoulder is not None:
        eqs.append(_joint_equations(sh, limits.shoulder))
    if limits.wrist is not None:
        eqs.append(_joint_equations(wr, limits.wrist))
    coef = np.concatenate(eqs, axis=2)  # (3, N, E)
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
    ok_sh, ok_wr = _rotations_ok((sh.at(mid), wr.at(mid)), (limits.shoulder, limits.wrist))
    ok_sh &= valid
    elbow_ok = limits.elbow_contains(theta)[:, None]
    feas_sh = ok_sh & elbow_ok
    feas = feas_sh & ok_wr
    # A zero-length segment between two feasible ones must not split them.
    short = ~valid & ~np.isnan(lo_b) & ~np.isnan(hi_b)
    if np.any(short):
        for f in (feas, feas_sh):
            prev = np.concatenate([f[:, :1], f[:, :-1]], axis=1)
            nxt = np.concatenate([f[:, 1:], f[:, -1:]], axis=1)
            f |= short & prev & nxt
    out = _Feasible()
    out.all = _merge(bp, feas)
    out.bp, out.feas_shoulder = bp, feas_sh
    return out


def _closest(intervals: FloatArray, phi_d: FloatArray) -> tuple[FloatArray, BoolArray]:
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


def _midpoint(intervals: FloatArray) -> tuple[FloatArray, BoolArray]:
    """Per row, the midpoint of the largest interval."""
    lo, hi = intervals[..., 0], intervals[..., 1]
    length = np.where(np.isnan(lo), -1.0, hi - lo)
    j = np.argmax(length, axis=1)
    rows = np.arange(len(lo))
    return V.wrap(0.5 * (lo[rows, j] + hi[rows, j])), ~np.isnan(lo[:, 0])


def _angles_at(
    limits: LimbLimits | None, sh: _Coeffs, wr: _Coeffs, theta: FloatArray, phi: FloatArray
) -> FloatArray:
    """Joint angles (N, K, 7) at φ (N, K): shoulder Euler, θ4, wrist Euler (see Objective)."""

    def euler(co: _Coeffs, lim: EulerLimits | None) -> FloatArray:
        fam = matrix_to_euler_families(co.at(phi), lim.order if lim else "XYZ", check=False)
        if lim is None:
            first: FloatArray = fam[..., 0, :]
            return first
        ok1 = lim.contains(fam[..., 0, :])
        ok2 = lim.contains(fam[..., 1, :])
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


def _objective_swivel(
    objective: Objective,
    limits: LimbLimits | None,
    sh: _Coeffs,
    wr: _Coeffs,
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


# --------------------------------------------------------------------------------------
# Unsolvable goals (§3.2.4 "Unsolvable problems")
# --------------------------------------------------------------------------------------


def _violation(fam: FloatArray, lim: EulerLimits) -> FloatArray:
    """Angular distance (rad) of Euler families (..., 2, 3) outside the limits, best family."""
    lo, hi = lim.bounds()
    tot = np.zeros(fam.shape[:-1])
    for i, on in enumerate(lim.limited):
        if not on:
            continue
        d = (fam[..., i] - lo[i]) % V.TAU
        width = hi[i] - lo[i]
        outside = np.where(d <= width, 0.0, np.minimum(d - width, V.TAU - d))
        tot = tot + outside
    return tot.min(axis=-1)  # type: ignore[no-any-return]


def _least_violating_swivel(sh: _Coeffs, lim: EulerLimits | None) -> float:
    """φ minimising the shoulder's limit violation: dense sampling of the circle, then
    dense sampling of ever smaller brackets around the best sample (one vectorised
    evaluation per stage; 720 samples, then 6 stages of 65 shrinking the step 32×, to
    ~3e-12 rad)."""
    if lim is None:
        return 0.0
    phi = np.linspace(-math.pi, math.pi, 721)[:-1]
    step = math.pi / 360
    for stage in range(7):
        viol = _violation(matrix_to_euler_families(sh.at(phi[None]), lim.order), lim)[0]
        best = float(phi[int(np.argmin(viol))])
        if stage < 6:
            phi = np.linspace(best - step, best + step, 65)
            step /= 32.0
    return float(V.wrap(best))


def _euler_box(lim: EulerLimits | None) -> tuple[str, list[tuple[float | None, float | None]]]:
    """A joint's Euler order and per-angle (lower, upper) bounds for :func:`_bounded_min`
    ((None, None) for an unlimited angle; no limits: XYZ, all free)."""
    if lim is None:
        return "XYZ", [(None, None)] * 3
    lo, hi = lim.bounds()
    return lim.order, [(lo[i], hi[i]) if lim.limited[i] else (None, None) for i in range(3)]


def _bounded_min(
    fg: Callable[[FloatArray], tuple[float, FloatArray]],
    x0: FloatArray,
    bounds: Sequence[tuple[float | None, float | None]],
) -> tuple[FloatArray, float]:
    """Minimise a smooth f with its gradient over a box: scipy's SLSQP. Returns (x, f).

    Not L-BFGS-B: scipy's L-BFGS-B calls the bundled multithreaded OpenBLAS on every
    iteration, and on a loaded 2-core machine that cost 5–120 ms per 4-variable
    minimisation (0.7 ms with one BLAS thread), i.e. up to seconds per unsolvable goal;
    SLSQP does not call BLAS. Its line search may step outside the box, where scipy
    evaluates f at the clipped point and warns; that warning is silenced here.
    """
    import warnings

    from scipy.optimize import minimize

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Values in x were outside bounds")
        res = minimize(fg, x0, jac=True, method="SLSQP", bounds=bounds, options=_SLSQP_OPTIONS)
    return np.asarray(res.x, dtype=np.float64), float(res.fun)


def _unsolvable_pose(
    limits: LimbLimits,
    sh: _Coeffs,
    m: FloatArray,
    rw: FloatArray,
    shoulder_intervals: FloatArray,
    warm: FloatArray | None = None,
) -> tuple[float, FloatArray, FloatArray]:
    """One element: φ and R2 minimising the orientation error within the limits.

    Position stays exact: φ ranges over the shoulder-feasible set A1 ∪ A2 (one bounded
    search per interval) and the wrist's Euler angles over their limits (box bounds), the
    objective being ‖R1(φ)·M·R2(θ5, θ6, θ7) − R_W‖²_F (:func:`_bounded_min`). If no φ satisfies
    the shoulder limits, φ minimises the shoulder's violation instead and only the wrist
    is optimised. ``warm`` (φ, θ5, θ6, θ7) from a previous, nearby solve replaces the
    multi-start when its φ lies in one of the intervals. Returns (φ, R2, x).
    """
    wlim = limits.wrist
    order, bounds_w = _euler_box(wlim)

    def r1_of(phi: float) -> FloatArray:
        out: FloatArray = sh.at(np.array([[phi]]))[0, 0]
        return out

    axes = [("XYZ".index(ch)) for ch in order]  # application order: first, middle, last
    gens = np.zeros((3, 3, 3))  # [e_i]x
    for i in range(3):
        gens[i] = np.cross(np.eye(3)[i], np.eye(3))  # rows: e_i × e_j, i.e. ([e_i]x)ᵀ
        gens[i] = gens[i].T

    # tr(R_Wᵀ R1(φ) M X) = Σ L(φ)ᵀ ∘ X with L(φ) = R_Wᵀ R1(φ) M = LP + cosφ LQ + sinφ LS.
    lp, lq, ls = (rw.T @ co[0] @ m for co in (sh.P, sh.Q, sh.S))

    def elementary(axis: int, angle: float) -> FloatArray:
        """Rotation by ``angle`` about coordinate axis ``axis`` (0 = X, 1 = Y, 2 = Z)."""
        c, s = math.cos(angle), math.sin(angle)
        if axis == 0:
            return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
        if axis == 1:
            return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])

    def cost_grad(x: FloatArray) -> tuple[float, FloatArray]:
        """f = ‖R1(φ)·M·R2(θ) − R_W‖²_F = 6 − 2 tr(R_Wᵀ R1 M R2) and its exact gradient."""
        xs = x.tolist()
        cp, sp = math.cos(xs[0]), math.sin(xs[0])
        e0, e1, e2 = (elementary(a, xs[1 + a]) for a in axes)  # first, middle, last
        e21 = e2 @ e1
        e10 = e1 @ e0
        r2 = e21 @ e0
        lt = (lp + cp * lq + sp * ls).T
        g = np.empty(4)
        g[0] = -2.0 * float(np.sum((cp * ls - sp * lq).T * r2))
        g[1 + axes[0]] = -2.0 * float(np.sum(lt * (r2 @ gens[axes[0]])))
        g[1 + axes[1]] = -2.0 * float(np.sum(lt * (e21 @ gens[axes[1]] @ e0)))
        g[1 + axes[2]] = -2.0 * float(np.sum(lt * (e2 @ gens[axes[2]] @ e10)))
        return 6.0 - 2.0 * float(np.sum(lt * r2)), g

    def wrist_only(phi: float) -> Callable[[FloatArray], tuple[float, FloatArray]]:
        def fg(x: FloatArray) -> tuple[float, FloatArray]:
            f, g = cost_grad(np.concatenate([[phi], x]))
            return f, g[1:]

        return fg

    def start_wrist(phi: float) -> FloatArray:
        r2 = (r1_of(phi) @ m).T @ rw
        fam = matrix_to_euler_families(r2, order)
        best = fam[0]
        if wlim is not None:
            wlo, whi = wlim.bounds()
            cl = [np.clip(f_, np.array(wlo), np.array(whi)) for f_ in fam]
            best = min(cl, key=lambda x: float(np.sum((x - fam[0]) ** 2)))
        return np.asarray(best)

    intervals = [(a, b) for a, b in shoulder_intervals if not math.isnan(a)]
    if not intervals:
        phi0 = _least_violating_swivel(sh, limits.shoulder)
        x0 = warm[1:] if warm is not None else start_wrist(phi0)
        xw, _ = _bounded_min(wrist_only(phi0), x0, bounds_w)
        return phi0, euler_to_matrix(xw, order), np.concatenate([[phi0], xw])
    starts: list[tuple[float, float, FloatArray]] = []
    if warm is not None:
        for a, b in intervals:
            phi_w = a + (float(warm[0]) - a) % V.TAU  # the warm φ, unwrapped past a
            if phi_w <= b:
                starts.append((a, b, np.concatenate([[phi_w], warm[1:]])))
    if not starts:
        for a, b in intervals:
            for phi0 in np.linspace(a, b, 3)[[1, 0, 2]] if b - a > 1e-6 else [0.5 * (a + b)]:
                starts.append((a, b, np.concatenate([[phi0], start_wrist(float(phi0))])))
    best_x: FloatArray | None = None
    best_f = math.inf
    for a, b, x0 in starts:
        xb, fb = _bounded_min(cost_grad, x0, [(a, b), *bounds_w])
        if fb < best_f:
            best_f, best_x = fb, xb
    assert best_x is not None
    return float(V.wrap(best_x[0])), euler_to_matrix(best_x[1:], order), best_x


def _unsolvable_element(
    limb: Limb,
    limits: LimbLimits,
    tg: FloatArray,
    rw: FloatArray,
    iterations: int = 16,
) -> tuple[float, float, FloatArray, FloatArray]:
    """One pose goal with no feasible φ: (φ, θ4, R1, R2) per "Unsolvable problems".

    :func:`_unsolvable_pose` keeps the wrist centre on its target and minimises the
    orientation error within the limits. With an effector offset E the end-effector point
    would then move with the orientation error, so the wrist-centre target is updated to
    tG − W·tE for the achieved wrist frame W and the problem re-solved until the effector
    point is exact (a fixed point, Anderson-accelerated). The first iterate — the wrist
    centre exactly on target, Tolani's formulation — is kept unless a later one is closer
    to the goal without losing a limit the first one met (a wrist-centre update can empty
    the shoulder's feasible set); the loop stops when converged or stalled. Runs on the
    array kernel with N = 1 for single and batched calls alike (identical results).
    """
    c = limb._c
    te = np.asarray(c.tE)
    aref = V.vec_of(np.asarray(limb.swivel_reference))
    warm: FloatArray | None = None

    def evaluate(
        wc: FloatArray,
    ) -> tuple[tuple[float, float, FloatArray, FloatArray], FloatArray, bool]:
        """Solve for wrist-centre target ``wc``: the pose, tG − W·tE, shoulder set non-empty."""
        nonlocal warm
        pr = _Problem()
        pr.n, pr.tbe, pr.RW, pr.R2 = 1, c.tb, V.mat_of(rw), None
        pr.wg = V.vec_of(wc[None])
        pr.goal_p = pr.wg
        ci = _circle(V.ArrayOps, c, pr.wg, pr.tbe, aref, limits.elbow)
        sh, wr = _joint_coeffs(V.ArrayOps, c, pr, ci, 1)
        theta = float(ci.theta[0])
        sets = _feasible(limits, sh, wr, np.array([theta])).shoulder[0]
        m = V.mat_array(_elbow_matrix(V.ArrayOps, c, np.array([theta])), 1)[0]
        phi, r2, warm = _unsolvable_pose(limits, sh, m, rw, sets, warm=warm)
        r1 = sh.at(np.array([[phi]]))[0, 0]
        ok = bool(np.any(~np.isnan(sets[:, 0])))
        return (phi, theta, r1, r2), tg - (r1 @ m @ r2) @ te, ok

    # Anderson-accelerated fixed point wc = tG − W(wc)·tE (the plain iteration can
    # oscillate slowly when the optimum sits on a limit).
    x = tg - rw @ te
    xs: list[FloatArray] = []
    fs: list[FloatArray] = []
    best_err, best_pose = math.inf, None
    first_ok = True
    stall = 0
    for k in range(iterations):
        pose, g, ok = evaluate(x)
        f = g - x  # = the effector-position error of ``pose``
        err = float(np.linalg.norm(f))
        first_ok = ok if k == 0 else first_ok
        if (ok or not first_ok) and err < best_err:  # keep every limit the first one kept
            stall = 0 if err < 0.5 * best_err else stall + 1
            best_err, best_pose = err, pose
        else:
            stall += 1
        if err <= 1e-13 * c.length or not te.any() or stall >= 4:
            break
        xs.append(x)
        fs.append(f)
        xs, fs = xs[-4:], fs[-4:]
        if len(xs) >= 2:
            dx = np.diff(np.array(xs), axis=0).T
            df = np.diff(np.array(fs), axis=0).T
            gamma = np.linalg.lstsq(df, f, rcond=None)[0]
            x = x + f - (dx + df) @ gamma
        else:
            x = g
    assert best_pose is not None
    return best_pose


# --------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------


def _prepare(
    limb: Limb, goal: LimbGoal, wrist: ArrayLike | None, swivel: Any, elbow_target: Any
) -> tuple[int | None, Any, Any, Any]:
    if not isinstance(limb, Limb):
        raise InvalidLimbError(f"limb must be a Limb, got {type(limb).__name__}")
    if not isinstance(goal, PositionGoal | PoseGoal):
        raise InvalidGoalError(
            f"goal must be PositionGoal or PoseGoal for a limb, got {type(goal).__name__}"
        )
    if goal.joint is not None:
        raise InvalidGoalError(
            f"limb goals act on the limb's end effector: joint must be None, got {goal.joint!r}"
        )
    n = goal._n
    sizes = {"goal": n}
    w = None
    if isinstance(goal, PositionGoal):
        if wrist is None:
            w = _IDENTITY
        else:
            w = _finite_array(wrist, "wrist", InvalidGoalError)
            sizes["wrist"] = _batch_of(w, 2, "wrist")
            if w.shape[-2:] != (3, 3):
                raise InvalidGoalError(f"wrist must be a rotation (…, 3, 3), got shape {w.shape}")
            check_rotation(w, tol=ROTATION_TOLERANCE, name="wrist", error=InvalidGoalError)
    elif wrist is not None:
        raise InvalidGoalError("wrist applies to PositionGoal only; a PoseGoal fixes the wrist")
    sw = None
    if swivel is not None:
        sw = _finite_array(swivel, "swivel", InvalidGoalError)
        if sw.ndim > 1:
            raise InvalidGoalError(f"swivel must be a scalar or shape (N,), got {sw.shape}")
        sizes["swivel"] = None if sw.ndim == 0 else int(sw.shape[0])
        sw = float(sw) if sw.ndim == 0 else sw  # type: ignore[assignment]
    et = None
    if elbow_target is not None:
        if swivel is not None:
            raise InvalidGoalError("give swivel or elbow_target, not both")
        et = _finite_array(elbow_target, "elbow_target", InvalidGoalError)
        sizes["elbow_target"] = _batch_of(et, 1, "elbow_target")
        if et.shape[-1] != 3:
            raise InvalidGoalError(f"elbow_target must be (…, 3), got shape {et.shape}")
    batched = {k: v for k, v in sizes.items() if v is not None}
    if len(set(batched.values())) > 1:
        raise ShapeMismatchError(f"batch sizes must agree, got {batched}")
    n_all = next(iter(batched.values())) if batched else None
    if n_all is not None:
        if w is not None and w.ndim == 2 and wrist is not None:  # (the default stays shared)
            w = np.broadcast_to(w, (n_all, 3, 3))
        if et is not None and et.ndim == 1:
            et = np.broadcast_to(et, (n_all, 3))
        if isinstance(sw, float):
            sw = np.full(n_all, sw)
        if n is None:
            goal = _broadcast_goal(goal, n_all)
    return n_all, w, sw, (et, goal)


def _broadcast_goal(goal: LimbGoal, n: int) -> LimbGoal:
    if isinstance(goal, PoseGoal):
        return PoseGoal(
            np.broadcast_to(np.asarray(goal.position), (n, 3)),
            np.broadcast_to(np.asarray(goal.rotation), (n, 3, 3)),
        )
    return PositionGoal(np.broadcast_to(np.asarray(goal.position), (n, 3)), point=goal.point)


def solve_limb(
    limb: Limb,
    goal: LimbGoal | PartialOrientationGoal | AimGoal,
    *,
    swivel: ArrayLike | None = None,
    elbow_target: ArrayLike | None = None,
    strategy: SwivelStrategy | Objective = SwivelStrategy.CLOSEST,
    wrist: ArrayLike | None = None,
    psi: ArrayLike | None = None,
    psi_strategy: PsiStrategy = PsiStrategy.GIVEN,
    wrist_target: ArrayLike | None = None,
    up: ArrayLike | None = None,
    elbow: ArrayLike | None = None,
    elbow_near: ArrayLike | None = None,
) -> LimbSolution:
    """Solve the limb for a goal in closed form (Tolani et al. §3.2–3.4).

    Args:
        limb: the :class:`Limb`.
        goal: :class:`PositionGoal` or :class:`PoseGoal` in the shoulder frame; batched
            goals (leading axis N) give a batched solution.
        swivel: desired φ (rad, any real; scalar or (N,)). Default 0.
        elbow_target: a point (m, shoulder frame; (3,) or (N, 3)); φ_d then minimises the
            elbow's distance to it (§3.2.2). Mutually exclusive with ``swivel``.
        strategy: with limits, how φ is chosen from the feasible set:
            ``SwivelStrategy.CLOSEST`` (nearest φ_d), ``SwivelStrategy.MIDPOINT`` (middle
            of the largest interval) or a callable objective (see :data:`Objective`)
            minimised over the feasible set. Ignored without limits.
        wrist: for position and aim goals, R2 held fixed ((3, 3) or (N, 3, 3)); default
            identity.
        psi, psi_strategy, wrist_target, up: for :class:`PartialOrientationGoal` (§3.3): ψ
            (rad), the rotation about the aligned axis. ``psi`` given (GIVEN): honoured like
            ``swivel`` — the pose goal G(ψ), with limits φ from its feasible intervals (the
            pose solver's compromise if none), ``reachable=False`` if its wrist is out of
            reach. ψ free: ``psi=None`` (GIVEN, 0 preferred), or the ψ putting the wrist
            nearest ``wrist_target`` (CLOSEST_WRIST, Eq. 12) or lowest / highest along ``up``
            (LOWEST_WRIST / HIGHEST_WRIST, Eq. 11) — taken among the ψ whose wrist is in
            reach (closed form); with limits, where that ψ admits no φ within them, the
            (φ, ψ) minimisation of §3.3; see :mod:`core.limb_partial`.
        elbow: for :class:`AimGoal` (§3.4): θ4 held at this value (rad); default free.
        elbow_near: θ4 (rad, scalar or (N,)) whose nearer root of Eq. (5) is taken when the
            root rule has a choice (no elbow limits, or both roots inside them) — e.g. the
            current FK elbow, so switching FK → IK never flips the elbow. Default: the
            + root without limits, the limits' middle with them.

    Returns:
        :class:`LimbSolution`. Never NaN. Goals out of reach (no elbow angle within the
        elbow limits brings the effector point — for pose goals the wrist centre, goal
        tG − R_G·R_Eᵀ·tE — to the goal's distance; §3.2.1) give ``reachable=False`` and
        the stretched / folded limb (the elbow limit nearest the needed bend) aimed at the
        goal, φ chosen as for reachable goals (so ``swivel`` is honoured where feasible).
        With limits, where that pose breaks one, the pose *within every limit* nearest the
        goal instead: the terminal point's distance minimised first, then the orientation
        error (pose goals), by bounded SLSQP over the joint angles (see
        :mod:`core.limb_reach`); ``within_limits`` is then True unless a given ``wrist``
        (position goals, never moved) is outside the wrist limits. Reachable goals where
        no φ satisfies every limit keep the position exact and minimise the orientation
        error within the limits (§3.2.4 "Unsolvable problems"). ``within_limits`` and the
        errors (from forward kinematics of the returned pose) tell the truth.

    Raises:
        InvalidLimbError, InvalidGoalError, ShapeMismatchError: bad input.
        InvalidInputError: unknown strategy.
    """
    gt = type(goal)
    if (
        (gt is PositionGoal or gt is PoseGoal)
        and type(limb) is Limb
        and psi is None
        and wrist_target is None
        and up is None
        and elbow is None
    ):
        fast = _solve_fast(limb, goal, swivel, elbow_target, strategy, wrist, elbow_near)  # type: ignore[arg-type]
        if fast is not None:
            return fast
    if isinstance(goal, PartialOrientationGoal):
        from .limb_partial import solve_partial

        if elbow is not None:
            raise InvalidGoalError("elbow applies to AimGoal only")
        return solve_partial(
            limb,
            goal,
            psi=psi,
            psi_strategy=psi_strategy,
            wrist_target=wrist_target,
            up=up,
            swivel=swivel,
            elbow_target=elbow_target,
            strategy=strategy,
            wrist=wrist,
        )
    if isinstance(goal, AimGoal):
        from .limb_aim import solve_aim

        if (
            psi is not None
            or wrist_target is not None
            or up is not None
            or (psi_strategy is not PsiStrategy.GIVEN)
        ):
            raise InvalidGoalError(
                "psi, psi_strategy, wrist_target and up apply to PartialOrientationGoal, "
                "not AimGoal"
            )

        return solve_aim(
            limb,
            goal,
            elbow=elbow,
            wrist=wrist,
            swivel=swivel,
            elbow_target=elbow_target,
            strategy=strategy,
        )
    if psi is not None or wrist_target is not None or up is not None or elbow is not None:
        raise InvalidGoalError(
            "psi, wrist_target and up apply to PartialOrientationGoal, elbow to AimGoal; "
            f"got a {type(goal).__name__}"
        )
    if not (isinstance(strategy, SwivelStrategy) or callable(strategy)):
        raise InvalidGoalError(
            f"strategy must be a SwivelStrategy ({', '.join(s.name for s in SwivelStrategy)}) "
            f"or a callable, got {strategy!r}"
        )
    n, w, sw, (et, pgoal) = _prepare(limb, goal, wrist, swivel, elbow_target)
    limits = limb.limits
    near = None
    if elbow_near is not None:
        near_arr = _finite_array(elbow_near, "elbow_near", InvalidGoalError)
        if near_arr.ndim > 1 or (near_arr.ndim == 1 and len(near_arr) != (n or 0)):
            raise ShapeMismatchError(
                f"elbow_near must be a scalar or one value per goal, got shape {near_arr.shape}"
            )
        near = float(near_arr) if near_arr.ndim == 0 else near_arr
    # an empty batch has nothing to limit: the free path returns the empty solution
    active = _limits_active(limits) and n != 0
    return _solve(limb, pgoal, w, sw, et, strategy, n, limits if active else None, near)


def _solve(
    limb: Limb,
    goal: LimbGoal,
    w: Any,
    sw: Any,
    et: Any,
    strategy: SwivelStrategy | Objective,
    n: int | None,
    limits: LimbLimits | None,
    near: Any = None,
    reach: bool = True,
) -> LimbSolution:
    """The solve: scalar kernel when ``n`` is None, vectorised over N otherwise.

    ``reach``: with limits, re-solve goals out of reach whose shell pose breaks a limit (or,
    pose goals with an effector offset, all goals out of reach) by :func:`_reach_rows`.
    """
    single = n is None
    ops: V.Ops = V.ScalarOps if single else V.ArrayOps
    c = limb._c
    aref = V.vec_of(np.asarray(limb.swivel_reference))
    pr = _problem(limb, goal, w, n)
    ci = _circle(ops, c, pr.wg, pr.tbe, aref, None if limits is None else limits.elbow, near)
    phi_d = _desired_swivel(ci, sw, None if et is None else V.vec_of(et), ops)
    nb = 1 if n is None else n
    # Rows solved by the unsolvable-goal optimisation: i -> (φ, θ4, R1, R2).
    override: dict[int, tuple[float, float, FloatArray, FloatArray]] = {}
    deferred: list[int] = []  # rows out of reach left to _reach_rows
    if limits is None:
        phi = phi_d if single else np.broadcast_to(np.asarray(phi_d, dtype=np.float64), (nb,))
        intervals = np.tile(np.array([[[-math.pi, math.pi]]]), (nb, 1, 1))
    else:
        theta_b = np.array([ci.theta]) if single else np.asarray(ci.theta, dtype=np.float64)
        phi_db = (
            np.array([phi_d], dtype=np.float64)
            if single
            else np.broadcast_to(np.asarray(phi_d, dtype=np.float64), (nb,))
        )
        sh, wr = _joint_coeffs(ops, c, pr, ci, nb)
        feas = _feasible(limits, sh, wr, theta_b)
        intervals = feas.all
        if strategy is SwivelStrategy.CLOSEST:
            phi_b, has = _closest(intervals, phi_db)
        elif strategy is SwivelStrategy.MIDPOINT:
            phi_b, has = _midpoint(intervals)
        else:
            phi_b, has = _objective_swivel(strategy, limits, sh, wr, theta_b, intervals)
        if not np.all(has):
            phi_b = phi_b.copy()
            shoulder_sets = feas.shoulder
            phi_sh, has_sh = _closest(shoulder_sets, phi_db)
            for i in np.nonzero(~has)[0]:  # rare path: a bounded optimisation per element
                if pr.RW is None:
                    phi_b[i] = (
                        phi_sh[i]
                        if has_sh[i]
                        else _least_violating_swivel(_row(sh, i), limits.shoulder)
                    )
                    continue
                if reach and abs(ci.rw0 - ci.rg if single else ci.rw0[i] - ci.rg[i]) > (
                    REACH_TOLERANCE * c.length
                ):  # out of reach: left to _reach_rows, which solves this row alone
                    deferred.append(int(i))
                    continue
                tg = np.asarray(goal.position, dtype=np.float64)
                rg = np.asarray(goal.rotation, dtype=np.float64)  # type: ignore[union-attr]
                rw = (rg if single else rg[i]) @ np.asarray(limb.effector)[:3, :3].T
                override[i] = _unsolvable_element(limb, limits, tg if single else tg[i], rw)
                phi_b[i] = override[i][0]
        phi = float(phi_b[0]) if single else phi_b
    r1, r2, pe, oe = _pose(ops, c, pr, ci, phi)
    if (
        limits is not None
        and reach
        and (
            abs(ci.rw0 - ci.rg) > REACH_TOLERANCE * c.length
            if single
            else bool(np.any(np.abs(ci.rw0 - ci.rg) > REACH_TOLERANCE * c.length))
        )
    ):  # some goal out of reach
        override.update(
            _reach_rows(
                limb, limits, goal, w, sw, et, strategy, near, ci, r1, r2, override, deferred, n
            )
        )
    tol = REACH_TOLERANCE
    if single:
        shoulder: FloatArray = np.array(r1)
        wrist_m: FloatArray = np.array(r2)
        elbow = ci.theta
        if override:
            phi, elbow, shoulder, wrist_m = override[0]
            pe_a, oe_a = _fk_errors(limb, goal, shoulder[None], np.array([elbow]), wrist_m[None])
            pe, oe = float(pe_a[0]), float(oe_a[0])
        within = limits is None or (
            bool(limits.elbow_contains(elbow))
            and _euler_ok_one(shoulder.tolist(), limits.shoulder)
            and _euler_ok_one(wrist_m.tolist(), limits.wrist)
        )
        fs = tuple((a, b) for a, b in intervals[0].tolist() if not math.isnan(a))
        return _solution(
            shoulder=shoulder,
            elbow=elbow,
            wrist=wrist_m,
            swivel=V.wrap(phi),
            reachable=bool(pe <= tol * c.length and oe <= tol),
            within_limits=within,
            position_error=pe,
            orientation_error=oe,
            feasible_swivel=fs,
            psi=None,
            aim_error=None,
        )
    theta = np.array(ci.theta, dtype=np.float64)
    shoulder = V.mat_array(r1, n)
    wrist_m = (
        V.mat_array(r2, n)
        if np.ndim(r2[0][0])
        else np.broadcast_to(V.mat_array(r2, None), (nb, 3, 3)).copy()
    )
    pe = np.asarray(pe, dtype=np.float64).copy()
    oe = np.broadcast_to(np.asarray(oe, dtype=np.float64), (nb,)).copy()
    if override:
        idx = np.array(sorted(override))
        for i in idx:
            phi[i], theta[i], shoulder[i], wrist_m[i] = override[int(i)]
        pe[idx], oe[idx] = _fk_errors(limb, goal, shoulder[idx], theta[idx], wrist_m[idx], idx)
    return LimbSolution(
        shoulder=shoulder,
        elbow=theta,
        wrist=wrist_m,
        swivel=V.wrap(phi),
        reachable=(pe <= tol * c.length) & (oe <= tol),
        within_limits=_within_limits(limits, shoulder, theta, wrist_m),
        position_error=pe,
        orientation_error=oe,
        feasible_swivel=intervals,
    )


def _fk_errors(
    limb: Limb,
    goal: LimbGoal,
    shoulder: FloatArray,
    elbow: FloatArray,
    wrist: FloatArray,
    rows: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """(position, orientation) errors (K,) of poses (K, …) by forward kinematics against
    the goal (its rows ``rows`` when batched)."""
    fk = limb.forward(shoulder, elbow, wrist)
    pos = np.asarray(goal.position, dtype=np.float64)
    pos = pos[None] if rows is None else pos[rows]
    if isinstance(goal, PoseGoal):
        rot = np.asarray(goal.rotation, dtype=np.float64)
        rot = rot[None] if rows is None else rot[rows]
        return np.linalg.norm(fk[:, :3, 3] - pos, axis=-1), _angle_between(fk[:, :3, :3], rot)
    p = fk[:, :3, 3] + fk[:, :3, :3] @ np.asarray(goal.point, dtype=np.float64)
    return np.linalg.norm(p - pos, axis=-1), np.zeros(len(p))


def _reach_rows(
    limb: Limb,
    limits: LimbLimits,
    goal: LimbGoal,
    w: Any,
    sw: Any,
    et: Any,
    strategy: SwivelStrategy | Objective,
    near: Any,
    ci: _Circle,
    r1: V.Mat,
    r2: V.Mat,
    override: dict[int, tuple[float, float, FloatArray, FloatArray]],
    deferred: list[int],
    n: int | None,
) -> dict[int, tuple[float, float, FloatArray, FloatArray]]:
    """Goals out of reach with limits: the pose within every limit nearest the goal.

    A row is out of reach when no θ4 within the elbow limits puts the chain's terminal
    point — the effector point (position goals) or the wrist centre, goal tG − R_G·R_Eᵀ·tE
    (pose goals) — at its goal distance (Eq. 5 has no admissible root, §3.2.1). The shell
    pose (elbow at the limit extreme nearest the needed bend, terminal point on the shell
    nearest its goal, φ as for reachable goals) is then already the nearest pose when it
    is within the limits, and is kept. Otherwise — or when the unsolvable-goal fallback
    re-aimed the wrist centre off the shell — :func:`core.limb_reach.reach_toward`
    minimises the terminal point's distance, then the orientation error, over the joint
    angles within their limits, and its pose replaces the shell pose unless that is
    within the limits and no worse. ``deferred``: rows out of reach with no feasible φ
    whose unsolvable-goal fallback was skipped (the candidate here computes it). Each
    such row is solved alone through the N = 1
    array kernel, so single and batched solves agree exactly. Returns row → (φ, θ4, R1,
    R2)."""
    c = limb._c
    nb = 1 if n is None else n
    gap = np.abs(np.atleast_1d(np.asarray(ci.rw0, dtype=np.float64) - ci.rg))
    oor = np.nonzero(np.broadcast_to(gap, (nb,)) > REACH_TOLERANCE * c.length)[0]
    if len(oor) == 0:
        return {}
    pose = isinstance(goal, PoseGoal)
    sh_c = V.mat_array(r1, n) if n is not None else np.array(r1)[None]
    wr_c = np.broadcast_to(
        V.mat_array(r2, n) if n is not None and np.ndim(r2[0][0]) else np.array(r2), (nb, 3, 3)
    ).copy()
    th_c = np.broadcast_to(np.asarray(ci.theta, dtype=np.float64), (nb,)).copy()
    for i, (_, th_i, r1_i, r2_i) in override.items():
        sh_c[i], th_c[i], wr_c[i] = r1_i, th_i, r2_i
    redo = ~_within_limits(limits, sh_c[oor], th_c[oor], wr_c[oor])
    redo |= np.isin(oor, list(override) + deferred)  # (no shell pose, or one re-aimed)
    oor = oor[redo]
    from .limb_reach import reach_toward, swivel_of

    def row(v: Any, i: int, core_ndim: int) -> Any:
        if v is None:
            return None
        a = np.asarray(v, dtype=np.float64)
        return (a if a.ndim == core_ndim else a[i])[None]

    out: dict[int, tuple[float, float, FloatArray, FloatArray]] = {}
    pos = np.asarray(goal.position, dtype=np.float64)
    te = np.asarray(limb.effector)[:3, 3]
    for i in oor.tolist():
        if pose:
            rot_i = row(goal.rotation, i, 2)  # type: ignore[union-attr]
            goal_i: LimbGoal = PoseGoal(row(pos, i, 1), rot_i)
        else:
            goal_i = PositionGoal(row(pos, i, 1), point=goal.point)  # type: ignore[union-attr]
        w_i = None if pose else row(w, i, 2)
        cand = _solve(
            limb, goal_i, w_i, row(sw, i, 0), row(et, i, 1), strategy, 1, limits,
            row(near, i, 0), reach=False,
        )  # fmt: skip
        start = (cand.shoulder[0], float(cand.elbow[0]), cand.wrist[0])
        target: FloatArray = pos if pos.ndim == 1 else pos[i]
        rot_g: FloatArray | None = None
        if pose:  # the wrist centre's goal, tG − R_G·R_Eᵀ·tE (as in _problem)
            rot_g = rot_i[0]
            target = target - rot_g @ np.asarray(limb.effector)[:3, :3].T @ te
        point = np.zeros(3) if pose else np.asarray(goal.point, dtype=np.float64)  # type: ignore[union-attr]
        r1_o, th_o, r2_o, d_o, oe_o = reach_toward(
            limb, limits, target, rot_g, None if w_i is None else w_i[0],
            None if pose else point, start,
        )  # fmt: skip
        if pose:
            d_c = float(np.linalg.norm(limb.wrist_position(start[0], start[1]) - target))
        else:
            d_c = float(cand.position_error[0])
        oe_c = float(cand.orientation_error[0])
        slack = 1e-12 * c.length
        if bool(cand.within_limits[0]) and (
            d_c < d_o - slack or (d_c <= d_o + slack and oe_c <= oe_o)
        ):
            out[i] = (float(cand.swivel[0]), start[1], start[0], start[2])
            continue
        fk = limb.forward(r1_o, th_o, r2_o)
        terminal = limb.wrist_position(r1_o, th_o) if pose else fk[:3, 3] + fk[:3, :3] @ point
        phi_o = swivel_of(limb, r1_o, terminal)
        out[i] = (float(cand.swivel[0]) if phi_o is None else phi_o, th_o, r1_o, r2_o)
    return out


# A full-circle feasible set (no limits, or elbow limits only).
_FULL_CIRCLE = ((-math.pi, math.pi),)


def _solution(**fields: Any) -> LimbSolution:
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


def _solve_fast(
    limb: Limb,
    goal: LimbGoal,
    swivel: Any,
    elbow_target: Any,
    strategy: Any,
    wrist: Any,
    elbow_near: Any,
) -> LimbSolution | None:
    """The single-goal solve without Euler limits, written out on Python floats.

    Exactly the arithmetic of :func:`_problem`, :func:`_circle` (its regular branch),
    :func:`_desired_swivel` and :func:`_pose` on ``V.ScalarOps``, in the same order, with
    Eq. (5)'s goal-independent terms taken from the limb (:class:`_Eq5`), so the result
    is bit-for-bit the general path's. Covers a goal that is a single PositionGoal (origin
    point, default wrist) or PoseGoal, a limb without limits or with elbow limits only
    (then the swivel does not change feasibility: the feasible set is the whole circle),
    strategy CLOSEST or MIDPOINT, scalar ``swivel`` / ``elbow_near``, a (3,)
    ``elbow_target``. Returns None — the caller then takes the general path — for
    anything else, including input the general path rejects and the degenerate
    geometry of :func:`_circle`'s fallback branches (straight limb, goal at the
    shoulder, reference along the shoulder–goal axis).
    """
    c = limb._c
    if wrist is not None or goal.joint is not None or goal._n is not None:
        return None
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
    # _problem
    if type(goal) is PoseGoal:
        rgoal = V.mat_of(goal.rotation)
        g0, g1, g2 = goal.position.tolist()  # type: ignore[union-attr]
        rw = rgoal if c.RE_identity else V.mm(rgoal, c.REt)
        te0, te1, te2 = c.tE
        (q00, q01, q02), (q10, q11, q12), (q20, q21, q22) = rw
        w0_ = g0 - (q00 * te0 + q01 * te1 + q02 * te2)
        w1_ = g1 - (q10 * te0 + q11 * te1 + q12 * te2)
        w2_ = g2 - (q20 * te0 + q21 * te1 + q22 * te2)
        eq = c.eq5_pose
    else:
        if goal.point.any():  # type: ignore[union-attr]
            return None
        w0_, w1_, w2_ = g0, g1, g2 = goal.position.tolist()  # type: ignore[union-attr]
        rw = None
        eq = c.eq5_position
    # _circle, regular branch
    sqrt = math.sqrt
    d2 = w0_ * w0_ + w1_ * w1_ + w2_ * w2_
    x = (0.5 * (d2 - c.ta2 - eq.tbe2) - eq.kta_ktb) / eq.r
    beta = math.acos(1.0 if x > 1.0 else (-1.0 if x < -1.0 else x))
    delta = eq.delta
    t_plus = (delta + beta + V.PI) % V.TAU - V.PI
    elbow_lim = None if limits is None else limits.elbow
    if elbow_lim is not None:
        theta, _ = _pick_root(V.ScalarOps, t_plus, V.wrap(delta - beta), elbow_lim, near)
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
    if not erad > c.eps_erad:
        return None
    s_ = 1.0 / erad
    y0, y1, y2 = p0 * s_, p1 * s_, p2 * s_
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
    # _desired_swivel, then the strategy's choice on the whole circle
    if et is not None:
        p0, p1, p2 = -ep * n0 + et[0], -ep * n1 + et[1], -ep * n2 + et[2]
        phi = math.atan2(p0 * v0 + p1 * v1 + p2 * v2, p0 * u0 + p1 * u1 + p2 * u2)
    elif sw is not None:
        phi = V.wrap(sw)
    else:
        phi = 0.0
    if limits is not None:
        phi = V.wrap(phi) if strategy is SwivelStrategy.CLOSEST else V.wrap(0.0)
    # _pose: R1 = [n, yφ, zφ]·[x_r, y_r, z_r]ᵀ (Eq. 7), then forward kinematics
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
        wrist_m = _IDENTITY.copy()
        d0, d1, d2_ = q0 - g0, q1 - g1, q2 - g2
        oe = 0.0
    else:
        n1m = V.mm(r1, _elbow_matrix_cs(c, cth, sth))
        r2 = V.mtm(n1m, rw)
        w_fk = V.mm(n1m, r2)
        (f00, f01, f02), (f10, f11, f12), (f20, f21, f22) = w_fk
        d0 = q0 + (f00 * te0 + f01 * te1 + f02 * te2) - g0
        d1 = q1 + (f10 * te0 + f11 * te1 + f12 * te2) - g1
        d2_ = q2 + (f20 * te0 + f21 * te1 + f22 * te2) - g2
        oe = V.rotation_angle(w_fk, rw, V.ScalarOps)
        wrist_m = np.array(r2)
    pe = sqrt(d0 * d0 + d1 * d1 + d2_ * d2_)
    tol = REACH_TOLERANCE
    return _solution(
        shoulder=np.array(r1),
        elbow=theta,
        wrist=wrist_m,
        swivel=V.wrap(phi),
        reachable=pe <= tol * c.length and oe <= tol,
        within_limits=True,
        position_error=pe,
        orientation_error=oe,
        feasible_swivel=_FULL_CIRCLE,
        psi=None,
        aim_error=None,
    )


def _row(co: _Coeffs, i: int) -> _Coeffs:
    return _Coeffs(co.P[i : i + 1], co.Q[i : i + 1], co.S[i : i + 1])


def _angle_between(a: FloatArray, b: FloatArray) -> FloatArray:
    d = np.swapaxes(a, -1, -2) @ b
    tr = d[..., 0, 0] + d[..., 1, 1] + d[..., 2, 2]
    s = np.stack(
        [d[..., 2, 1] - d[..., 1, 2], d[..., 0, 2] - d[..., 2, 0], d[..., 1, 0] - d[..., 0, 1]],
        axis=-1,
    )
    return np.arctan2(0.5 * np.linalg.norm(s, axis=-1), 0.5 * (tr - 1.0))  # type: ignore[no-any-return]


def _euler_families_one(r: list[list[float]], order: str) -> tuple[list[float], list[float]]:
    """Both Euler families (x, y, z) of one rotation in plain Python: the arithmetic of
    :func:`core.rotations.matrix_to_euler_families` (its ``_family_one``) on floats."""
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
    first = math.atan2(fy, fx) * (cos_mid > _GIMBAL_COS)
    ca, sa = math.cos(first), math.sin(first)
    one = [0.0, 0.0, 0.0]
    one[i] = first
    one[j] = math.atan2(e0, cos_mid)
    one[k] = math.atan2(sa * e3 + ca * e4, ca * e5 + sa * e6)
    one = [a + V.TAU * (a <= -math.pi) for a in one]
    two = [a * (-1.0 if ax == j else 1.0) + math.pi for ax, a in enumerate(one)]
    return one, [a - V.TAU * (a > math.pi) for a in two]


def _euler_ok_one(r: list[list[float]], lim: EulerLimits | None) -> bool:
    """Whether some Euler family of one rotation is within ``lim`` (:meth:`EulerLimits.contains`
    with the default tolerance, on floats)."""
    if lim is None or not any(lim.limited):
        return True
    lo, width = lim._lo.tolist(), lim._width.tolist()
    tol = LIMIT_TOLERANCE
    for fam in _euler_families_one(r, lim.order):
        ok = True
        for a, lo_, w_ in zip(fam, lo, width, strict=True):
            d = (a - lo_) % V.TAU
            if not (d <= w_ + tol or d >= V.TAU - tol):
                ok = False
                break
        if ok:
            return True
    return False


def _within_limits(
    limits: LimbLimits | None, shoulder: FloatArray, theta: FloatArray, wrist: FloatArray
) -> BoolArray:
    n = len(theta)
    ok = np.ones(n, dtype=bool)
    if limits is None:
        return ok
    ok &= limits.elbow_contains(theta)
    ok_sh, ok_wr = _rotations_ok((shoulder, wrist), (limits.shoulder, limits.wrist))
    return ok & ok_sh & ok_wr


def feasible_swivel(
    limb: Limb,
    goal: LimbGoal | PartialOrientationGoal | AimGoal,
    *,
    wrist: ArrayLike | None = None,
    psi: ArrayLike | None = None,
    elbow: ArrayLike | None = None,
) -> tuple[tuple[float, float], ...] | FloatArray:
    """The feasible swivel intervals for a goal (§3.2.4), as in ``LimbSolution.feasible_swivel``.

    ``wrist`` as in :func:`solve_limb` (position and aim goals); ``psi`` (default 0) fixes
    a partial-orientation goal's free rotation (the intervals of the pose goal G(ψ));
    ``elbow`` an aim goal's θ4 (default: as :func:`solve_limb` chooses it). Batched goals
    give an (N, K, 2) NaN-padded array.
    """
    if psi is not None and not isinstance(goal, PartialOrientationGoal):
        raise InvalidGoalError(f"psi applies to PartialOrientationGoal, not {type(goal).__name__}")
    if elbow is not None and not isinstance(goal, AimGoal):
        raise InvalidGoalError(f"elbow applies to AimGoal, not {type(goal).__name__}")
    if isinstance(goal, PartialOrientationGoal):
        from .limb_partial import partial_rotation

        psi_v = 0.0 if psi is None else _finite_array(psi, "psi", InvalidGoalError)
        if np.ndim(psi_v) > 1:
            raise InvalidGoalError(f"psi must be a scalar or (N,), got shape {np.shape(psi_v)}")
        rot = partial_rotation(goal, psi_v, np.asarray(limb.swivel_reference))
        pos = np.broadcast_to(np.asarray(goal.position), rot.shape[:-2] + (3,))
        return feasible_swivel(limb, PoseGoal(pos, rot))
    if isinstance(goal, AimGoal):
        out_sol = solve_limb(limb, goal, wrist=wrist, elbow=elbow)
        return out_sol.feasible_swivel  # type: ignore[no-any-return]
    n, w, _, (_, pgoal) = _prepare(limb, goal, wrist, None, None)
    single = n is None
    if single:
        pgoal = _broadcast_goal(pgoal, 1)
        w = None if w is None else w[None]
    nn = 1 if single else n
    assert nn is not None
    limits = limb.limits
    if limits is None:
        out = np.tile(np.array([[[-math.pi, math.pi]]]), (nn, 1, 1))
    else:
        c = limb._c
        pr = _problem(limb, pgoal, w, nn)
        aref = V.vec_of(np.asarray(limb.swivel_reference))
        ci = _circle(V.ArrayOps, c, pr.wg, pr.tbe, aref, limits.elbow)
        sh, wr = _joint_coeffs(V.ArrayOps, c, pr, ci, nn)
        out = _feasible(limits, sh, wr, np.asarray(ci.theta, dtype=np.float64)).all
    if single:
        return tuple((float(a), float(b)) for a, b in out[0] if not math.isnan(a))
    return out
