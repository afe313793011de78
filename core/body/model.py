"""The full-body model: :class:`BodyLimb` (three joints of a skeleton marked as an
analytic Tolani limb), :class:`Body` (a skeleton and its limbs, validated, each limb's
:class:`~core.limb.Limb` built from the skeleton's geometry and limits), the solver's
settings :class:`BodySettings` and its result :class:`BodySolution`.

Frames and units: everything in the skeleton's world frame, metres and radians. A limb's
:class:`~core.limb.Limb` lives in its *shoulder frame* ``G_parent(upper) · offset_upper``
(the upper joint's frame before its own rotation), so the limb's R1 is the upper Ball's
rotation, θ4 the Hinge angle and R2 the end Ball's rotation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..chain.joints import Ball, Hinge
from ..chain.skeleton import Skeleton
from ..errors import (
    InvalidInputError,
    InvalidLimbError,
    InvalidSkeletonError,
    LimberError,
    format_value,
)
from ..geometry.rotations import euler_to_matrix
from ..geometry.vec3 import TAU
from ..limb import EulerLimits, Limb, LimbLimits

FloatArray = NDArray[np.float64]

@dataclass(frozen=True)
class BodyLimb:
    """Three joints of a :class:`~core.chain.Skeleton` forming one analytic limb.

    Attributes:
        name: unique non-empty name (e.g. ``"arm_l"``); keys the limb in results.
        upper: the shoulder / hip joint (a :class:`~core.chain.Ball`), name or index.
        lower: the elbow / knee joint (a :class:`~core.chain.Hinge`, child of ``upper``).
        end: the wrist / ankle joint (a :class:`~core.chain.Ball`, child of ``lower``).
    """

    name: str
    upper: int | str
    lower: int | str
    end: int | str


def _euler_limits(ball: Ball) -> EulerLimits | None:
    lo = tuple(float(v) for v in np.asarray(ball.lower))
    hi = tuple(float(v) for v in np.asarray(ball.upper))
    if all(math.isinf(v) for v in lo + hi):
        return None
    return EulerLimits(ball.order, lo, hi)


def shell(model: Limb, wrist: FloatArray | None = None) -> tuple[float, float]:
    """(d_min, d_max): the distances from the shoulder at which the limb can put its
    wrist centre (``wrist`` None) or, with R2 = ``wrist``, its effector point, over the
    elbow angles within the elbow limits (Tolani Eq. 5: |tA + RA Rθ t|² = C + 2 r cos(θ − δ))."""
    a = np.asarray(model.a)
    b = np.asarray(model.b)
    e = np.asarray(model.effector)
    k = np.asarray(model.elbow_axis)
    t = b[:3, 3] if wrist is None else b[:3, 3] + b[:3, :3] @ wrist @ e[:3, 3]
    ta = a[:3, 3]
    ta_l = a[:3, :3].T @ ta
    kta, ktb = float(k @ ta_l), float(k @ t)
    ca = float(ta_l @ t) - kta * ktb
    cb = float(ta_l @ np.cross(k, t))
    r = math.hypot(ca, cb)
    delta = math.atan2(cb, ca)
    const = float(ta @ ta + t @ t) + 2.0 * kta * ktb
    limits = model.limits
    hi_c, lo_c = 1.0, -1.0
    if limits is not None and limits.elbow is not None:
        lo, hi = limits.elbow
        ends = [math.cos(lo - delta), math.cos(hi - delta)]

        def inside(angle: float) -> bool:
            return (angle - lo) % TAU <= hi - lo

        hi_c = 1.0 if inside(delta) else max(ends)
        lo_c = -1.0 if inside(delta + math.pi) else min(ends)
    return (
        math.sqrt(max(const + 2.0 * r * lo_c, 0.0)),
        math.sqrt(max(const + 2.0 * r * hi_c, 0.0)),
    )


@dataclass(frozen=True, eq=False)
class Body:
    """A skeleton with analytic limbs (Tolani et al. 2000, §4.2: the limb as a building
    block of a whole-body solver).

    Attributes:
        skeleton: the :class:`~core.chain.Skeleton` (any tree; a :class:`~core.chain.Free`
            root lets the body move).
        limbs: the :class:`BodyLimb` marks.
        models (derived): per limb, its :class:`~core.limb.Limb` in the shoulder frame:
            ``a`` = the Hinge joint's offset, ``b`` = the end joint's offset, the elbow
            axis = the Hinge axis, effector identity (the end joint's frame), limits from
            the joints' limits (Ball Euler limits, Hinge range).
        joints (derived): per limb, the (upper, lower, end) joint indices.
        shells (derived): per limb, :func:`shell` of its model: the (d_min, d_max)
            distances (m) from the shoulder at which it can put its wrist centre.

    Raises:
        InvalidSkeletonError: ``skeleton`` not a Skeleton, unknown joints, a limb whose
            joints are not Ball → Hinge → Ball parent to child, a locked Ball component,
            a joint in two limbs, duplicate or empty limb names.
        InvalidLimbError: the geometry is not a Tolani limb (zero-length segment, a hinge
            axis that cannot bend it).
    """

    skeleton: Skeleton
    limbs: Sequence[BodyLimb]
    models: tuple[Limb, ...] = field(init=False, repr=False)
    joints: tuple[tuple[int, int, int], ...] = field(init=False, repr=False)
    shells: tuple[tuple[float, float], ...] = field(init=False, repr=False)
    #: :func:`~core.body.solve.solve_body`'s plans per goal structure and settings (a
    #: few, most recent last; see ``core.body.solve._cached_plan``)
    _plans: dict[Any, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sk = self.skeleton
        if not isinstance(sk, Skeleton):
            raise InvalidSkeletonError(f"Body.skeleton must be a Skeleton, got {format_value(sk)}")
        if not isinstance(self.limbs, list | tuple):
            raise InvalidSkeletonError(
                f"Body.limbs must be a list or tuple of BodyLimb, got {format_value(self.limbs)}"
            )
        names: list[str] = []
        used: dict[int, str] = {}
        models: list[Limb] = []
        idx: list[tuple[int, int, int]] = []
        for i, bl in enumerate(self.limbs):
            if not isinstance(bl, BodyLimb):
                raise InvalidSkeletonError(f"Body.limbs[{i}] must be a BodyLimb, got {bl!r}")
            if not isinstance(bl.name, str) or not bl.name or bl.name in names:
                raise InvalidSkeletonError(
                    f"Body.limbs[{i}].name must be a unique non-empty str, got "
                    f"{format_value(bl.name)}"
                )
            names.append(bl.name)
            where = f"limb {bl.name!r}"
            u, lo, e = (sk.joint_index(j) for j in (bl.upper, bl.lower, bl.end))
            ju, jl, je = (sk.joints[j] for j in (u, lo, e))
            kinds = (Ball, Hinge, Ball)
            for role, jt, kind in zip(("upper", "lower", "end"), (ju, jl, je), kinds, strict=True):
                if not isinstance(jt.dofs, kind):
                    raise InvalidSkeletonError(
                        f"{where}: {role} joint {jt.name!r} must be a {kind.__name__}, got "
                        f"{type(jt.dofs).__name__}; a limb is Ball (shoulder/hip) -> Hinge "
                        "(elbow/knee) -> Ball (wrist/ankle)"
                    )
                if isinstance(jt.dofs, Ball) and any(jt.dofs.locked):
                    raise InvalidSkeletonError(
                        f"{where}: {role} joint {jt.name!r} has locked components "
                        f"{jt.dofs.locked}; an analytic limb needs free Ball joints"
                    )
            if jl.parent != u or je.parent != lo:
                raise InvalidSkeletonError(
                    f"{where}: joints must be parent to child upper -> lower -> end, got "
                    f"{ju.name!r} -> {jl.name!r} (parent {jl.parent}) -> {je.name!r} "
                    f"(parent {je.parent})"
                )
            for j in (u, lo, e):
                if j in used:
                    raise InvalidSkeletonError(
                        f"{where}: joint {sk.names[j]!r} already belongs to limb {used[j]!r}"
                    )
                used[j] = bl.name
            hinge = jl.dofs
            assert isinstance(hinge, Hinge) and isinstance(ju.dofs, Ball)
            assert isinstance(je.dofs, Ball)
            elbow = None
            if math.isfinite(float(hinge.lower)) and math.isfinite(float(hinge.upper)):  # type: ignore[arg-type]
                elbow = (float(hinge.lower), float(hinge.upper))  # type: ignore[arg-type]
            limits = LimbLimits(_euler_limits(ju.dofs), elbow, _euler_limits(je.dofs))
            try:
                model = Limb(jl.offset, je.offset, hinge.axis, limits=limits)
            except LimberError as exc:
                raise InvalidLimbError(f"{where} is not a Tolani limb: {exc}") from exc
            models.append(model)
            idx.append((u, lo, e))
        object.__setattr__(self, "limbs", tuple(self.limbs))
        object.__setattr__(self, "models", tuple(models))
        object.__setattr__(self, "joints", tuple(idx))
        object.__setattr__(self, "shells", tuple(shell(m) for m in models))
        object.__setattr__(self, "_plans", {})

    @property
    def names(self) -> tuple[str, ...]:
        """The limbs' names, in order."""
        return tuple(bl.name for bl in self.limbs)

    def limb_pose(self, k: int, q: ArrayLike) -> tuple[NDArray[np.float64], Any]:
        """Limb ``k``'s pose in the configuration ``q`` as its model takes it: (R1, the
        upper Ball's rotation in the shoulder frame; θ4, the elbow angle, rad) — the
        arguments of :func:`core.pose_swivel`. ``q`` (n_dofs,): R1 (3, 3) and θ4 a float;
        ``q`` (B, n_dofs): R1 (B, 3, 3) and θ4 (B,) (:func:`core.pose_swivels`)."""
        sk = self.skeleton
        u, lo, _ = self.joints[k]
        q = np.asarray(q, dtype=np.float64)
        order = sk.joints[u].dofs.order  # type: ignore[union-attr]  # a Ball (checked)
        r1 = euler_to_matrix(q[..., sk.dof_slices[u]], order)
        theta = q[..., sk.dof_slices[lo].start]
        return r1, float(theta) if q.ndim == 1 else theta


def plan_store(body: Body) -> dict[Any, Any]:
    """The dict where :func:`~core.body.solve.solve_body` keeps its plans for ``body``
    (``core.body.solve._cached_plan``)."""
    return body._plans


@dataclass(frozen=True)
class BodySettings:
    """Settings of :func:`solve_body`.

    Attributes:
        tolerance: > 0, default 1e-6: a goal is reached when its error is at most this
            (m for positions, ≈ rad for rotations / directions / aims); the numeric level
            stops once every goal level is met and its step is below ``step_tolerance``.
        max_iterations: int ≥ 1, default 100: numeric iterations per row at most.
        max_step: > 0, default 0.5: per-iteration clamp on max |Δx| (rad or m).
        step_tolerance: > 0, default 1e-10: the numeric level has converged when max |Δx|
            is below this (and the goal levels are met, or the iterate stalls).
        rest_weight: ≥ 0, default 1e-3: weight of the rest-pose / preferred-angle term
            (the lowest level, in the null space of every goal); 0 switches it off. It
            acts only in rows that the warm path (minimum-norm steps from q0's trunk,
            :func:`solve_body`) does not settle, unless ``warm_path`` is False.
        warm_path: default True: each row is first solved without the rest term
            (minimum-norm steps from q0's trunk, so on a warm start the body moves as
            little as the goals allow; about twice as fast on interactive motion); rows
            it does not settle get the rest term. False: the rest term is converged in
            every row, so the rest pose / preferred angles shape every solve (slower;
            the result does not depend on q0's trunk as much).
        q_rest: (n_dofs,) preferred configuration (rad / m), default zeros clipped into
            the limits; its limb joints are ignored (the swivel stands for them).
        swivel: per limb name, the preferred swivel angle φ (rad, Tolani's elbow-circle
            angle; 0 = the elbow on the side it has in the limb's zero pose). Default 0.
        use_limits: default True: every joint stays within its limits (the numeric level
            clamps its unknowns; the limbs choose φ from their feasible intervals).
        shell_margin: ≥ 0, default 1e-4: a goaled limb's wrist/ankle goal farther than
            this × the limb's length outside the limb's reachable shell is brought this
            far inside it by the numeric level (the analytic limb then meets it away from
            the fully stretched or folded boundary); a goal inside the shell (a straight
            standing leg's ankle included) stays where it is, and one outside by less is
            brought just inside (1e-7 × the length).
        priority_damping: damping c of the strict task-priority levels (units of J),
            default 1e-2 (see :class:`~core.chain.TaskPriorityStep`).
    """

    tolerance: float = 1e-6
    max_iterations: int = 100
    max_step: float = 0.5
    step_tolerance: float = 1e-10
    rest_weight: float = 1e-3
    q_rest: ArrayLike | None = None
    swivel: Mapping[str, float] | None = None
    use_limits: bool = True
    shell_margin: float = 1e-4
    priority_damping: float = 1e-2
    warm_path: bool = True

    def __post_init__(self) -> None:
        for name in ("tolerance", "max_step", "step_tolerance"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or isinstance(v, bool) or not v > 0 or v == math.inf:
                raise InvalidInputError(
                    f"BodySettings.{name} must be a finite number > 0, got {format_value(v)}"
                )
        for name in ("rest_weight", "shell_margin", "priority_damping"):
            v = getattr(self, name)
            if not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v < math.inf:
                raise InvalidInputError(
                    f"BodySettings.{name} must be a finite number >= 0, got {format_value(v)}"
                )
        mi = self.max_iterations
        if not isinstance(mi, int) or isinstance(mi, bool) or mi < 1:
            raise InvalidInputError(
                f"BodySettings.max_iterations must be an int >= 1, got {format_value(mi)}"
            )
        for name in ("use_limits", "warm_path"):
            v = getattr(self, name)
            if not isinstance(v, bool):
                raise InvalidInputError(
                    f"BodySettings.{name} must be a bool, got {format_value(v)}"
                )
        if self.swivel is not None:
            if not isinstance(self.swivel, Mapping):
                raise InvalidInputError(
                    "BodySettings.swivel must be a mapping limb name -> angle (rad), got "
                    f"{format_value(self.swivel)}"
                )
            for k, v in self.swivel.items():
                if (
                    not isinstance(v, int | float)
                    or isinstance(v, bool)
                    or not math.isfinite(float(v))
                ):
                    raise InvalidInputError(
                        f"BodySettings.swivel[{k!r}] must be a finite angle (rad), got "
                        f"{format_value(v)}"
                    )


@dataclass(frozen=True, eq=False)
class BodySolution:
    """Result of :func:`solve_body`; arrays gain a leading axis N for batched goals / q0.

    Attributes:
        q: (n_dofs,) configuration of the whole skeleton (rad; m for Free translations).
        reached: (G,) bool per goal: its error ≤ ``tolerance``.
        goal_error: (G,) per goal, measured by forward kinematics of ``q`` (m for
            positions; the larger of position and rotation (rad) for pose goals, as
            :meth:`~core.chain.Skeleton.goal_errors`).
        level_error: (L,) the largest goal error of each priority level (distinct
            ``priority`` values in increasing order, 0 first).
        swivel: (K,) per limb of ``Body.limbs``, the swivel φ (rad, [-π, π)) its limb solve
            used; NaN for a limb without a goal on its end (solved as ordinary joints).
        feasible_swivel: per limb, the φ intervals satisfying the limb's limits (as
            :attr:`~core.limb.LimbSolution.feasible_swivel`: a tuple of (lo, hi) for a
            single solve, ``None`` for a limb without a goal); batched: per limb an
            (N, M, 2) array padded with NaN, or None.
        limb_reached: (K,) bool per limb: its analytic solve met its goal exactly (False
            for a limb without a goal).
        within_limits: bool: every DOF within its limits (± 1e-9).
        iterations: numeric iterations taken (every pass counted: the warm path, the
            solve with the rest term, the whole-body pass).
        reason: :class:`~core.chain.StopReason` (batched: an object array of them):
            REACHED when every goal is reached; otherwise STALLED (the solve settled: some
            goal out of reach, or a conflicting level at its constrained optimum) or
            MAX_ITERATIONS (a budget ran out first).
    """

    q: FloatArray
    reached: Any
    goal_error: FloatArray
    level_error: FloatArray
    swivel: FloatArray
    feasible_swivel: tuple[Any, ...]
    limb_reached: Any
    within_limits: Any
    iterations: Any
    reason: Any

    def __len__(self) -> int:
        if np.ndim(self.q) == 1:
            raise TypeError("a single BodySolution has no len()")
        return int(np.shape(self.q)[0])
