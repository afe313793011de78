"""Partial-orientation goals for the analytic limb (Tolani, Goswami & Badler 2000, §3.3).

A :class:`~core.goals.PartialOrientationGoal` fixes the end-effector point and one
effector axis; the rotation ψ about that axis is free. For a given ψ the goal is a full
pose, G(ψ) (the paper's G matrices of §3.3, generalised to any effector axis), solved in
closed form by :func:`core.limb.solve_limb`; the wrist then lies on the *wrist circle*
w(ψ) = c − cosψ·K1 − sinψ·K2 (Eq. 10), which makes the ψ choices of Eqs. (11)–(12)
closed-form sinusoids.

Conventions: shoulder frame, metres, radians. ψ = 0 puts the effector's second axis
(``b``, see :func:`effector_basis`) along the projection of the limb's swivel reference â
onto the plane ⊥ ``direction`` (the paper's projection axis p̂); positive ψ turns
right-handedly about ``direction``.

ψ given or free (see :func:`solve_partial`):

* ``psi=`` with ``PsiStrategy.GIVEN`` fixes ψ like ``swivel=`` fixes φ: the goal becomes
  the pose G(ψ), solved by the closed-form pose solver (vectorised; with limits φ from
  the feasible intervals at that ψ, or the pose solver's compromise when there are none).
  Nothing moves ψ; an out-of-reach wrist gives ``reachable=False``.
* ``psi=None`` (preferred ψ 0) and the ψ strategies leave ψ free: the preferred ψ is
  moved to the nearest ψ whose wrist is within reach of θ4 inside the elbow limits (closed
  form); with limits, when G(ψ) there has no φ satisfying every limit, F(φ, ψ) of §3.3 is
  minimised over (φ, ψ) with position and axis exact; when no ψ reaches (Table 3), the
  wrist goes nearest the reachable shell.
"""

from __future__ import annotations

import math
from dataclasses import replace
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidGoalError, ShapeMismatchError, finite_array, format_value
from ..geometry import vec3 as V
from ..geometry.rotations import matrix_to_euler_families
from ..goals import PartialOrientationGoal, PoseGoal, batch_size
from .feasible import midpoint_swivel, within_limits
from .model import (
    REACH_TOLERANCE,
    Limb,
    LimbLimits,
    LimbSolution,
    effector_frame,
    family_violations,
    limits_active,
)
from .pose import pose_feasible_swivel, solve_pose
from .rows import kwargs_rows, merge_rows
from .unsolvable import central_cost_grad

FloatArray = NDArray[np.float64]


class PsiStrategy(Enum):
    """How ψ, the free rotation about the aligned axis, is chosen (§3.3)."""

    #: The given ``psi``, honoured as given (like ``swivel``); with ``psi=None`` ψ is free
    #: and 0 preferred (moved only to reach the goal or, with limits, to satisfy them).
    GIVEN = "given"
    #: The wrist nearest ``wrist_target`` (Eq. 12, in closed form).
    CLOSEST_WRIST = "closest_wrist"
    #: The wrist lowest along ``up`` (Eq. 11).
    LOWEST_WRIST = "lowest_wrist"
    #: The wrist highest along ``up`` (Eq. 11).
    HIGHEST_WRIST = "highest_wrist"


def _perp_unit(v: FloatArray, axis: FloatArray) -> FloatArray:
    """Unit part of ``v`` ⊥ unit ``axis``; where v ∥ axis, the coordinate axis least
    aligned with ``axis`` is projected instead (defined, never NaN)."""
    p = v - np.sum(v * axis, axis=-1, keepdims=True) * axis
    n = np.linalg.norm(p, axis=-1, keepdims=True)
    alt = np.eye(3)[np.argmin(np.abs(axis), axis=-1)]
    pa = alt - np.sum(alt * axis, axis=-1, keepdims=True) * axis
    use = n > 1e-9
    p = np.where(use, p, pa)
    return V.unit_rows(p)


def effector_basis(axis: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Orthonormal effector-frame basis (a, b, c = a × b) with a = ``axis``.

    b is the coordinate axis cyclically after a's dominant component (x → y → z → x),
    made ⊥ a — for a = ±x, ±y, ±z this is the paper's column layout of G(ψ) (§3.3).
    """
    a = np.asarray(axis, dtype=np.float64)
    nxt = np.eye(3)[(np.argmax(np.abs(a), axis=-1) + 1) % 3]
    b = _perp_unit(nxt, a)
    return a, b, V.cross_rows(a, b)


def goal_basis(
    direction: FloatArray, reference: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(d, û_g, v̂_g): û_g the projection of ``reference`` ⊥ d (§3.3), v̂_g = d × û_g."""
    u = _perp_unit(np.broadcast_to(reference, direction.shape), direction)
    return direction, u, V.cross_rows(direction, u)


def partial_rotation(
    goal: PartialOrientationGoal, psi: ArrayLike, reference: ArrayLike
) -> FloatArray:
    """G(ψ)'s rotation: R a = d, R b = cosψ û_g + sinψ v̂_g, R c = d × (R b)."""
    a, b, c = effector_basis(np.asarray(goal.axis))
    d, u, v = goal_basis(np.asarray(goal.direction), np.asarray(reference, dtype=np.float64))
    p = np.asarray(psi, dtype=np.float64)[..., None]
    u_psi = np.cos(p) * u + np.sin(p) * v
    v_psi = V.cross_rows(d, u_psi)
    g = np.stack(np.broadcast_arrays(d, u_psi, v_psi), axis=-1)  # columns
    e = np.stack(np.broadcast_arrays(a, b, c), axis=-1)
    out: FloatArray = g @ np.swapaxes(e, -1, -2)
    return out


def wrist_circle(
    limb: Limb, goal: PartialOrientationGoal, reference: ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Eq. (10): the wrist centre w(ψ) = centre − cosψ·K1 − sinψ·K2 (shoulder frame, m)."""
    eff = np.asarray(limb.effector)
    k = eff[:3, :3].T @ eff[:3, 3]  # R_Eᵀ t_E: wrist centre → effector, effector frame
    a, b, c = effector_basis(np.asarray(goal.axis))
    d, u, v = goal_basis(np.asarray(goal.direction), np.asarray(reference, dtype=np.float64))
    ka = np.sum(a * k, axis=-1, keepdims=True)
    kb = np.sum(b * k, axis=-1, keepdims=True)
    kc = np.sum(c * k, axis=-1, keepdims=True)
    centre = np.asarray(goal.position) - ka * d
    return centre, kb * u + kc * v, kb * v - kc * u


def choose_psi(
    strategy: PsiStrategy,
    circle: tuple[FloatArray, FloatArray, FloatArray],
    psi: Any = None,
    wrist_target: Any = None,
    up: Any = None,
) -> FloatArray:
    """ψ by strategy, in closed form (Eqs. 11–12); where the criterion does not depend on
    ψ (wrist target on the circle's axis, ``up`` along it, no effector offset) the given
    ``psi`` (default 0) is kept."""
    centre, k1, k2 = circle
    default = np.broadcast_to(
        np.asarray(0.0 if psi is None else psi, dtype=np.float64), centre.shape[:-1]
    )
    if strategy is PsiStrategy.GIVEN:
        return np.array(default)
    if strategy is PsiStrategy.CLOSEST_WRIST:
        if wrist_target is None:
            raise InvalidGoalError("PsiStrategy.CLOSEST_WRIST needs wrist_target=(x, y, z)")
        q = centre - np.asarray(wrist_target, dtype=np.float64)
        # |w − w_d|² = const − 2(cosψ q·K1 + sinψ q·K2): maximise the bracket.
        y, x = np.sum(q * k2, axis=-1), np.sum(q * k1, axis=-1)
    elif strategy in (PsiStrategy.LOWEST_WRIST, PsiStrategy.HIGHEST_WRIST):
        if up is None:
            raise InvalidGoalError(f"PsiStrategy.{strategy.name} needs up=(x, y, z)")
        try:
            upv = np.asarray(up, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidGoalError(f"up must be a finite non-zero 3-vector, got {up!r}") from exc
        if (
            upv.ndim not in (1, 2)
            or upv.shape[-1:] != (3,)
            or not np.all(np.isfinite(upv))
            or np.any(np.linalg.norm(upv, axis=-1) < 1e-12)
        ):
            raise InvalidGoalError(
                f"up must be a finite non-zero 3-vector (3,) or (N, 3), got {format_value(up)}"
            )
        if upv.ndim == 2 and (centre.ndim != 2 or len(upv) != len(centre)):
            raise ShapeMismatchError(
                f"up has {len(upv)} rows but the goals have batch shape {centre.shape[:-1]}"
            )
        upv = V.unit_rows(upv)
        # height = up·centre − (cosψ up·K1 + sinψ up·K2)
        y, x = np.sum(upv * k2, axis=-1), np.sum(upv * k1, axis=-1)
        if strategy is PsiStrategy.HIGHEST_WRIST:
            y, x = -y, -x
    else:
        raise InvalidGoalError(
            f"psi_strategy must be a PsiStrategy ({', '.join(s.name for s in PsiStrategy)}), "
            f"got {format_value(strategy)}"
        )
    flat = np.hypot(x, y) <= 1e-12 * (1.0 + np.linalg.norm(k1, axis=-1))
    out: FloatArray = np.where(flat, default, np.arctan2(y, x))
    return out


def _has_limits(limb: Limb) -> bool:

    return limits_active(limb.limits)


def middle_cost(
    limits: Any, shoulder: FloatArray, elbow: FloatArray, wrist: FloatArray
) -> FloatArray:
    """§3.3's F = Σ (θᵢ − θᵢ*)² over the limited joint angles, θᵢ* the middle of each range
    (the Euler family nearest the middles; angle differences wrapped)."""

    f = np.zeros(np.shape(elbow))
    for lim, r in ((limits.shoulder, shoulder), (limits.wrist, wrist)):
        if lim is None or not any(lim.limited):
            continue
        lo, hi = lim.bounds()
        mask = np.array(lim.limited)
        mid = 0.5 * (np.where(mask, lo, 0.0) + np.where(mask, hi, 0.0))
        d = V.wrap(matrix_to_euler_families(r, lim.order) - mid)
        f += np.min(np.sum((d * mask) ** 2, axis=-1), axis=-1)
    if limits.elbow is not None:
        mid_e = 0.5 * (limits.elbow[0] + limits.elbow[1])
        f += V.wrap(np.asarray(elbow) - mid_e) ** 2
    return f


def _validate_point(value: Any, name: str, n: int | None) -> FloatArray | None:
    if value is None:
        return None
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidGoalError(f"{name} must be a 3-vector (m), got {format_value(value)}") from exc
    if v.ndim not in (1, 2) or v.shape[-1] != 3:
        raise InvalidGoalError(f"{name} must have shape (3,) or (N, 3), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise InvalidGoalError(f"{name} must be finite, got {format_value(v)}")
    if v.ndim == 2 and n is not None and len(v) != n:
        raise ShapeMismatchError(f"{name} has {len(v)} rows for a batch of {n} goals")
    return v


def solve_partial(
    limb: Limb,
    goal: PartialOrientationGoal,
    *,
    psi: ArrayLike | None,
    psi_strategy: PsiStrategy,
    wrist_target: ArrayLike | None,
    up: ArrayLike | None,
    **pose_kwargs: Any,
) -> LimbSolution:
    """Solve a partial-orientation goal (see :func:`core.limb.solve_limb`).

    Semantics of ψ (§3.3):

    * **Given ψ** (``PsiStrategy.GIVEN`` with ``psi`` set) is honoured like a given swivel
      φ: the goal is the full pose G(ψ), solved in closed form (vectorised). With limits φ
      comes from the feasible intervals at that ψ (``strategy``); when there are none the
      pose solver's best compromise is returned, and when the wrist w(ψ) is out of reach
      (or needs θ4 outside the elbow limits) the stretched / clamped pose — ``reachable``
      and ``within_limits`` tell the truth. No optimisation over ψ runs.
    * **Free ψ** (``psi=None``, or a ψ strategy): the preferred ψ is 0 (GIVEN), or the
      strategy's (Eqs. 11–12). Each criterion is a sinusoid in ψ, so restricted to the ψ
      whose wrist is in reach — |w(ψ)|² = A − B·cos(ψ − ψ₀) against the closed-form range
      of shoulder–wrist distances that θ4 within the elbow limits allows — its minimum is
      the reachable ψ nearest the preferred one (closed form, vectorised). With limits,
      if G(ψ) has no feasible φ there, the (φ, ψ) optimisation of §3.3 runs for that goal
      (:func:`_limited_element`). If no ψ reaches (Table 3's unreachable goal), ψ puts
      the wrist nearest the reachable shell (closed form; with limits the best
      limit-satisfying ψ of a grid, :func:`_unreachable_element`).
    """

    if pose_kwargs.get("wrist") is not None:
        raise InvalidGoalError("wrist does not apply to a PartialOrientationGoal (ψ sets it)")
    pose_kwargs = {k: v for k, v in pose_kwargs.items() if k != "wrist"}
    if not isinstance(psi_strategy, PsiStrategy):
        raise InvalidGoalError(
            f"psi_strategy must be a PsiStrategy ({', '.join(s.name for s in PsiStrategy)}), "
            f"got {psi_strategy!r}"
        )
    for key in ("swivel", "elbow_target"):  # validated here: some rows never reach _prepare
        if pose_kwargs.get(key) is not None:
            finite_array(pose_kwargs[key], key, InvalidGoalError)
    n = batch_size(goal)
    ref = np.asarray(limb.swivel_reference)
    psi_arr = None if psi is None else finite_array(psi, "psi", InvalidGoalError)
    if psi_arr is not None and (psi_arr.ndim > 1 or not np.all(np.isfinite(psi_arr))):
        raise InvalidGoalError(
            f"psi must be a finite scalar or (N,) array, got {format_value(psi)}"
        )
    if psi_arr is not None and psi_arr.ndim == 1:
        if n is not None and len(psi_arr) != n:
            raise ShapeMismatchError(f"psi has {len(psi_arr)} values for a batch of {n} goals")
        if n is None:
            goal = _broadcast(goal, len(psi_arr))
            n = len(psi_arr)
    wt = _validate_point(wrist_target, "wrist_target", n)
    if wt is not None and wt.ndim == 2 and n is None:
        goal = _broadcast(goal, len(wt))
        n = len(wt)
    circle = wrist_circle(limb, goal, ref)
    psi_c = choose_psi(psi_strategy, circle, psi_arr, wt, up)
    if psi_strategy is PsiStrategy.GIVEN and psi_arr is not None:
        return _pose_solution(limb, goal, psi_c, ref, pose_kwargs)
    reach = _reach(limb, circle)
    psi_r = reach.nearest(psi_c)
    if not _has_limits(limb):
        return _pose_solution(limb, goal, psi_r, ref, pose_kwargs)
    rot = partial_rotation(goal, psi_r, ref)
    pos = np.broadcast_to(np.asarray(goal.position), rot.shape[:-2] + (3,))
    fs = pose_feasible_swivel(limb, PoseGoal(pos, rot))
    if n is None:
        if not reach.any:
            return _unreachable_element(limb, goal, reach, ref, pose_kwargs)
        if fs:
            return _pose_solution(limb, goal, psi_r, ref, pose_kwargs)
        return _limited_element(limb, goal, float(psi_r), reach, ref)
    has = ~np.isnan(np.asarray(fs)[:, 0, 0]) & reach.any
    sol = _pose_solution(limb.with_limits(None), goal, psi_r, ref, pose_kwargs)
    rows: dict[int, LimbSolution] = {}
    idx = np.nonzero(has)[0]
    block = None
    if len(idx):
        sub = _pose_solution(
            limb, _take(goal, idx), psi_r[idx], ref, kwargs_rows(pose_kwargs, idx, n)
        )
        block = (idx, sub)
    for i in np.nonzero(~has)[0]:
        ri = reach.row(int(i))
        gi = _take(goal, i)
        if not ri.any:
            rows[int(i)] = _unreachable_element(limb, gi, ri, ref, kwargs_rows(pose_kwargs, i, n))
        else:
            rows[int(i)] = _limited_element(limb, gi, float(psi_r[i]), ri, ref)
    return merge_rows(sol, rows, block)


def _take(goal: PartialOrientationGoal, i: Any) -> PartialOrientationGoal:
    return PartialOrientationGoal(
        np.asarray(goal.position)[i], np.asarray(goal.axis)[i], np.asarray(goal.direction)[i]
    )


def _broadcast(goal: PartialOrientationGoal, n: int) -> PartialOrientationGoal:
    return PartialOrientationGoal(
        np.broadcast_to(np.asarray(goal.position), (n, 3)),
        np.broadcast_to(np.asarray(goal.axis), (n, 3)),
        np.broadcast_to(np.asarray(goal.direction), (n, 3)),
    )


def _pose_solution(
    limb: Limb,
    goal: PartialOrientationGoal,
    psi: FloatArray,
    ref: FloatArray,
    pose_kwargs: dict[str, Any],
) -> LimbSolution:
    """Solve G(ψ) as a pose goal; report ψ and the axis-alignment error."""

    rot = partial_rotation(goal, psi, ref)
    pos = np.broadcast_to(np.asarray(goal.position), rot.shape[:-2] + (3,))
    sol = solve_pose(limb, PoseGoal(pos, rot), **pose_kwargs)
    return _with_axis_error(limb, goal, psi, sol)


def _with_axis_error(
    limb: Limb, goal: PartialOrientationGoal, psi: FloatArray, sol: LimbSolution
) -> LimbSolution:
    """ψ, and the errors measured against the partial goal itself by forward kinematics:
    position, and the angle between the effector axis and ``direction``."""

    fk = effector_frame(limb, sol.shoulder, sol.elbow, sol.wrist)
    axis_now = (fk[..., :3, :3] @ np.asarray(goal.axis)[..., None])[..., 0]
    d = np.asarray(goal.direction)
    err = np.arctan2(
        np.linalg.norm(V.cross_rows(axis_now, d), axis=-1), np.sum(axis_now * d, axis=-1)
    )
    pe = np.linalg.norm(fk[..., :3, 3] - np.asarray(goal.position), axis=-1)
    reach = (pe <= REACH_TOLERANCE * limb.length) & (err <= REACH_TOLERANCE)
    single = np.ndim(sol.elbow) == 0
    wrapped = V.wrap(np.asarray(psi, dtype=np.float64))
    return replace(
        sol,
        orientation_error=float(err) if single else err,
        position_error=float(pe) if single else pe,
        reachable=bool(reach) if single else reach,
        psi=float(wrapped) if single else wrapped,
    )


class _Reach:
    """The ψ whose wrist centre is in reach, in closed form (vectorised over goals).

    |w(ψ)|² = A − B·cos(ψ − ψ₀) (Eq. 10: the wrist circle seen from the shoulder), and the
    wrist is reachable iff m² ≤ |w|² ≤ M², [m, M] the shoulder–wrist distances that θ4
    within the elbow limits allows (:func:`_wrist_range`). With x = wrap(ψ − ψ₀) that is
    α ≤ |x| ≤ β. ``any``: some ψ reaches; ``flat``: the distance does not depend on ψ
    (no radial wrist offset); when none reaches, x = 0 (``far``: the nearest point of the
    circle to the shoulder) or x = π (the farthest) is the closest to the reachable shell.
    """

    #: Boundary margin (rad): chosen ψ stay this far inside the reachable set.
    MARGIN = 1e-6

    def __init__(
        self,
        psi0: FloatArray,
        alpha: FloatArray,
        beta: FloatArray,
        any_: FloatArray,
        far: FloatArray,
        flat: FloatArray,
    ) -> None:
        self.psi0, self.alpha, self.beta = psi0, alpha, beta
        self.any, self.far, self.flat = any_, far, flat

    def row(self, i: int) -> _Reach:
        return _Reach(
            self.psi0[i], self.alpha[i], self.beta[i], self.any[i], self.far[i], self.flat[i]
        )

    def nearest(self, psi: ArrayLike) -> FloatArray:
        """The reachable ψ nearest ``psi`` (circularly); where none reaches, the ψ closest
        to reaching (``psi`` itself where the distance does not depend on ψ)."""
        x = V.wrap(np.asarray(psi, dtype=np.float64) - self.psi0)
        lo = np.where(self.alpha > 0.0, self.alpha + self.MARGIN, 0.0)
        hi = np.where(self.beta < math.pi, self.beta - self.MARGIN, math.pi)
        narrow = hi < lo
        mid = 0.5 * (self.alpha + self.beta)
        lo, hi = np.where(narrow, mid, lo), np.where(narrow, mid, hi)
        x_in = np.where(x < 0.0, -1.0, 1.0) * np.clip(np.abs(x), lo, hi)
        x_out = np.where(self.any, x_in, np.where(self.far, 0.0, math.pi))
        out: FloatArray = V.wrap(self.psi0 + np.where(self.flat, x, x_out))
        return out

    def intervals(self) -> list[tuple[float, float]]:
        """One goal's reachable x = ψ − ψ₀ as intervals (lo, hi), hi − lo ≤ 2π."""
        a, b = float(self.alpha), float(self.beta)
        if not bool(self.any):
            return []
        if a <= 0.0 and b >= math.pi:
            return [(-math.pi, math.pi)]
        if a <= 0.0:
            return [(-b, b)]
        if b >= math.pi:
            return [(a, 2.0 * math.pi - a)]
        return [(a, b), (-b, -a)]

    def samples(self, count: int) -> FloatArray:
        """``count`` ψ spread by arc length over one goal's reachable set."""
        iv = self.intervals()
        lengths = np.array([hi - lo for lo, hi in iv])
        t = (np.arange(count) + 0.5) / count * lengths.sum()
        cum = np.concatenate([[0.0], np.cumsum(lengths)])
        j = np.minimum(np.searchsorted(cum, t, side="right") - 1, len(iv) - 1)
        lo = np.array([lo for lo, _ in iv])
        out: FloatArray = V.wrap(float(self.psi0) + lo[j] + (t - cum[j]))
        return out

    def bounds_around(self, psi: float) -> tuple[float | None, float | None]:
        """Bounds on ψ (unwrapped around ``psi``) of the reachable interval holding it."""
        x = float(V.wrap(psi - float(self.psi0)))
        for lo, hi in self.intervals():
            if hi - lo >= 2.0 * math.pi:
                return None, None
            xu = lo + (x - lo) % (2.0 * math.pi)
            if xu <= hi + 1e-12:
                shift = psi - xu
                m = min(self.MARGIN, 0.25 * (hi - lo))
                return lo + shift + m, hi + shift - m
        return psi, psi


def _wrist_range(limb: Limb) -> tuple[float, float]:
    """(m², M²): the squared shoulder–wrist-centre distances θ4 within the elbow limits
    allows. |w|²(θ4) = |t_A|² + |t_B|² + 2(k·t_A')(k·t_B) + 2(a cosθ4 + b sinθ4) (Eq. 5)."""
    c = limb.constants
    ta_l, tb, k = np.array(c.ta_l), np.array(c.tb), np.array(c.k)
    ktb = float(k @ tb)
    a = float(ta_l @ tb) - c.kta * ktb
    b = float(ta_l @ V.cross_rows(k, tb))
    base = c.ta2 + float(tb @ tb) + 2.0 * c.kta * ktb
    r, delta = math.hypot(a, b), math.atan2(b, a)
    gmin, gmax = -r, r
    elbow = None if limb.limits is None else limb.limits.elbow
    if elbow is not None and elbow[1] - elbow[0] < 2.0 * math.pi:
        lo, hi = elbow
        ends = [a * math.cos(lo) + b * math.sin(lo), a * math.cos(hi) + b * math.sin(hi)]

        def inside(t: float) -> bool:
            return (t - lo) % (2.0 * math.pi) <= hi - lo

        gmax = r if inside(delta) else max(ends)
        gmin = -r if inside(delta + math.pi) else min(ends)
    return max(base + 2.0 * gmin, 0.0), base + 2.0 * gmax


def _reach(limb: Limb, circle: tuple[FloatArray, FloatArray, FloatArray]) -> _Reach:
    """:class:`_Reach` of the wrist circle ``circle`` (Eq. 10)."""
    centre, k1, k2 = circle
    m2, big_m2 = _wrist_range(limb)
    p = np.sum(centre * k1, axis=-1)
    q = np.sum(centre * k2, axis=-1)
    a = np.sum(centre * centre, axis=-1) + np.sum(k1 * k1, axis=-1)
    b = 2.0 * np.hypot(p, q)
    scale = limb.length**2
    flat = b <= 1e-12 * scale
    bs = np.where(flat, 1.0, b)
    c_lo = (a - big_m2) / bs
    c_hi = (a - m2) / bs
    tol = 1e-12 * scale / bs
    any_flat = (a >= m2 - 1e-12 * scale) & (a <= big_m2 + 1e-12 * scale)
    any_ = np.where(flat, any_flat, (c_lo <= 1.0 + tol) & (c_hi >= -1.0 - tol))
    alpha = np.where(flat, 0.0, np.arccos(np.clip(c_hi, -1.0, 1.0)))
    beta = np.where(flat, math.pi, np.arccos(np.clip(c_lo, -1.0, 1.0)))
    far = np.where(flat, a > big_m2, c_lo > 1.0)
    return _Reach(np.arctan2(q, p), alpha, beta, any_, far, flat)


def limits_cost(
    limits: Any, shoulder: FloatArray, elbow: FloatArray, wrist: FloatArray, weight: float = 100.0
) -> FloatArray:
    """F (:func:`middle_cost`) + weight·v², v the total angular distance (rad) of the joint
    angles outside their limits (0 inside): F alone where every limit holds."""

    v = np.zeros(np.shape(elbow))
    for lim, r in ((limits.shoulder, shoulder), (limits.wrist, wrist)):
        if lim is not None and any(lim.limited):
            v = v + family_violations(matrix_to_euler_families(r, lim.order), lim).min(axis=-1)
    if limits.elbow is not None:
        lo, hi = limits.elbow
        d = (np.asarray(elbow) - lo) % (2.0 * math.pi)
        v = v + np.where(d <= hi - lo, 0.0, np.minimum(d - (hi - lo), 2.0 * math.pi - d))
    out: FloatArray = middle_cost(limits, shoulder, elbow, wrist) + weight * v * v
    return out


def _limited_element(
    limb: Limb,
    goal: PartialOrientationGoal,
    psi_r: float,
    reach: _Reach,
    ref: FloatArray,
) -> LimbSolution:
    """One goal, ψ free, whose preferred reachable ψ has no φ within the limits (§3.3
    "Joint limits").

    Minimises F(φ, ψ) = Σ (θᵢ − θᵢ*)² (θᵢ* the middle of each limited range, the Euler
    family nearest it; plus a penalty on any limit violation, :func:`limits_cost`) over
    (φ, ψ) with scipy's bounded truncated Newton (TNC). Every (φ, ψ) is a closed-form
    pose of the limb without limits whose θ4 is the Eq. (5) root nearest the elbow
    range's middle (inside the range whenever a root is, ``elbow_near``); ψ is bounded
    to the reachable interval of the seed (:class:`_Reach`), so position and axis stay
    exact. F chooses φ here: ``swivel``, ``elbow_target`` and ``strategy`` do not apply.
    Seed: on ψ spread over the reachable set (120, then 720 if none qualifies) the
    feasible φ intervals are found analytically (§3.2.4); the seed is the (middle of the
    largest interval, ψ) with the least F. Without any such ψ the seed is the best of a
    coarse (φ, ψ) grid and the result the least-violating exact pose (``within_limits``
    False). The optimum replaces the seed only if it keeps the limits and the exactness
    the seed had. The gradient is §3.3's, analytic: ∇F = Σ 2(θᵢ − θᵢ*)·∂θᵢ/∂(φ, ψ), the
    joint-angle derivatives by the chain rule through Eqs. (5), (7) and (10)
    (:func:`pose_and_derivatives`, :func:`limits_cost_grad`) for the Euler family each
    joint's term uses (the best of the four combinations); central differences only
    where that chain is singular (wrist at the edge of reach).
    """

    from scipy.optimize import minimize

    limits = limb.limits
    assert limits is not None
    free = limb.with_limits(None)
    # The root of Eq. (5) nearest the elbow range's middle: the one inside the range when
    # only one is (every angle outside is farther from the middle than the half-width).
    near = None if limits.elbow is None else 0.5 * (limits.elbow[0] + limits.elbow[1])
    pos = np.asarray(goal.position)

    def rotations(psis: FloatArray) -> PoseGoal:
        m = len(psis)
        return PoseGoal(
            np.broadcast_to(pos, (m, 3)), partial_rotation(_broadcast(goal, m), psis, ref)
        )

    def poses(x: FloatArray) -> LimbSolution:
        return solve_pose(free, rotations(x[:, 1]), swivel=x[:, 0], elbow_near=near)

    def cost(x: FloatArray) -> FloatArray:
        s = poses(x)
        return limits_cost(limits, s.shoulder, np.asarray(s.elbow), s.wrist)

    seed: FloatArray | None = None
    for count in (120, 720):
        psis = np.concatenate([[psi_r], reach.samples(count)])
        fs = np.asarray(pose_feasible_swivel(limb, rotations(psis)))
        phi_mid, has = midpoint_swivel(fs)
        if np.any(has):
            cand = np.stack([phi_mid[has], psis[has]], axis=-1)
            seed = cand[int(np.argmin(cost(cand)))]
            break
    if seed is None:
        phis = np.linspace(-math.pi, math.pi, 24, endpoint=False)
        grid = np.stack(np.meshgrid(phis, reach.samples(36), indexing="ij"), -1).reshape(-1, 2)
        seed = grid[int(np.argmin(cost(grid)))]
    numeric = central_cost_grad(cost)

    def fg(x: FloatArray) -> tuple[float, FloatArray]:
        """F and §3.3's analytic gradient; central differences where the chain rule of
        :func:`pose_and_derivatives` does not apply."""
        sol, dr1, dth, dr2, ok = pose_and_derivatives(limb, goal, ref, x[None], near, free)
        if not ok[0]:
            out: tuple[float, FloatArray] = numeric(x)
            return out
        f, g = limits_cost_grad(limits, sol, dr1, dth, dr2)
        return float(f[0]), g[0]

    res = minimize(
        fg,
        seed,
        jac=True,
        method="TNC",  # bounded; no BLAS calls (L-BFGS-B's stall on busy multi-core machines)
        bounds=[(None, None), reach.bounds_around(float(seed[1]))],
        options={"maxfun": 100},
    )
    cand = np.stack([np.asarray(res.x), seed])
    sols = poses(cand)
    within = within_limits(limits, sols.shoulder, np.asarray(sols.elbow), sols.wrist)
    f = limits_cost(limits, sols.shoulder, np.asarray(sols.elbow), sols.wrist)
    good = within & np.asarray(sols.reachable)
    k = 0 if (good[0] or not good[1]) and (good[0] or f[0] <= f[1]) else 1
    x = cand[k]
    out = replace(
        sols[k],
        within_limits=bool(within[k]),
        feasible_swivel=pose_feasible_swivel(limb, _pose_at(goal, float(x[1]), ref)),
    )
    return _with_axis_error(limb, goal, np.array(x[1]), out)


def _pose_at(goal: PartialOrientationGoal, psi: float, ref: FloatArray) -> PoseGoal:
    return PoseGoal(np.asarray(goal.position), partial_rotation(goal, psi, ref))


def _unreachable_element(
    limb: Limb,
    goal: PartialOrientationGoal,
    reach: _Reach,
    ref: FloatArray,
    pose_kwargs: dict[str, Any],
    count: int = 360,
) -> LimbSolution:
    """One goal, ψ free, whose wrist is out of reach for every ψ, with limits (Table 3).

    Table 3's optimisation over (φ, ψ) with the limits as constraints; the axis stays
    exact. ψ* = the wrist nearest the reachable shell (closed form) when G(ψ*) has a φ
    within the limits. Otherwise the limit-satisfying pose of least error (|Δp|/length)
    over ``count`` ψ around the circle, its ψ then moved by bisection toward ψ* up to
    where the limits stop admitting a φ, when that lowers the error; if no ψ admits one,
    the pose at ψ* with the φ least violating the limits (:func:`_least_violating`).
    ``reachable`` is False; the errors are measured by FK.
    """

    step = 2.0 * math.pi / count
    x = np.arange(count, dtype=np.float64) * step
    x = np.where(x > math.pi, x - 2.0 * math.pi, x)  # ψ − ψ*, in (−π, π]
    psi_star = float(reach.nearest(0.0))

    def feasible(psis: FloatArray) -> NDArray[np.bool_]:
        gb = _broadcast(goal, len(psis))
        pg = PoseGoal(np.asarray(gb.position), partial_rotation(gb, psis, ref))
        out: NDArray[np.bool_] = ~np.isnan(np.asarray(pose_feasible_swivel(limb, pg))[:, 0, 0])
        return out

    def solve(psis: FloatArray) -> tuple[LimbSolution, FloatArray]:
        sols = _pose_solution(limb, _broadcast(goal, len(psis)), psis, ref, pose_kwargs)
        score = np.asarray(sols.position_error) / limb.length + np.asarray(sols.orientation_error)
        return sols, np.where(np.asarray(sols.within_limits), score, np.inf)

    has = feasible(psi_star + x)
    if has[0]:
        return _pose_solution(limb, goal, np.array(psi_star), ref, pose_kwargs)
    if not np.any(has):
        return _least_violating(limb, goal, psi_star, ref)
    idx = np.nonzero(has)[0]
    sols, score = solve(psi_star + x[idx])
    j = int(np.argmin(score))
    best, best_score = sols[j], float(score[j])
    a = float(x[idx[j]])  # feasible; toward ψ* lies an infeasible sample
    b = a - math.copysign(step, a)
    if abs(a) > 0.5 * step and not feasible(np.array([psi_star + b]))[0]:
        for _ in range(40):
            m = 0.5 * (a + b)
            if feasible(np.array([psi_star + m]))[0]:
                a = m
            else:
                b = m
        s1, sc1 = solve(np.array([psi_star + a]))
        if float(sc1[0]) < best_score:
            best = s1[0]
    return best


def _least_violating(
    limb: Limb, goal: PartialOrientationGoal, psi: float, ref: FloatArray, count: int = 144
) -> LimbSolution:
    """The pose G(ψ) (axis exact; θ4 the elbow-limited root, clamped if out of reach) at
    the φ minimising :func:`limits_cost` — F plus the squared limit violation — on
    ``count`` φ, refined twice on finer grids around the best; ``within_limits`` as found."""

    limits = limb.limits
    assert limits is not None
    if limits.elbow is not None:
        el = Limb(
            limb.a,
            limb.b,
            limb.elbow_axis,
            limb.effector,
            LimbLimits(elbow=limits.elbow),
            limb.swivel_reference,
        )
    else:
        el = limb.with_limits(None)
    pg = _pose_at(goal, psi, ref)

    def cost(phis: FloatArray) -> tuple[FloatArray, LimbSolution]:
        m = len(phis)
        g = PoseGoal(
            np.broadcast_to(np.asarray(pg.position), (m, 3)),
            np.broadcast_to(np.asarray(pg.rotation), (m, 3, 3)),
        )
        s = solve_pose(el, g, swivel=phis)
        return limits_cost(limits, s.shoulder, np.asarray(s.elbow), s.wrist), s

    phis = np.arange(count) * (2.0 * math.pi / count) - math.pi
    half = 2.0 * math.pi / count  # ± one step, then ± two of the finer steps
    for _ in range(3):  # the grid, then two finer grids around its best φ
        f, sols = cost(phis)
        j = int(np.argmin(f))
        phis = phis[j] + np.linspace(-half, half, 49)
        half /= 12.0
    within = within_limits(limits, sols.shoulder, np.asarray(sols.elbow), sols.wrist)
    out = replace(
        sols[j], within_limits=bool(within[j]), feasible_swivel=pose_feasible_swivel(limb, pg)
    )
    return _with_axis_error(limb, goal, np.array(psi), out)


# §3.3's analytic gradient of F(φ, ψ)
def _euler_rates(r: FloatArray, dr: FloatArray, order: str) -> tuple[FloatArray, FloatArray]:
    """Both Euler families of R (M, 3, 3) and their rates for the variations ``dr``
    (V, M, 3, 3): (angles (M, 2, 3), rates (V, M, 2, 3)), components (ax, ay, az).

    For an order "ABC" (R = R_C·R_B·R_A, Blender's convention) the spatial angular
    velocity ω = vee(dR·Rᵀ) = θ̇_C e_C + θ̇_B R_C e_B + θ̇_A R_C R_B e_A — the chain rule
    that §3.3 writes with its f-functions — solved for the rates (singular only at gimbal
    lock, where the rates are set to 0)."""

    fam = matrix_to_euler_families(r, order, check=False)  # (M, 2, 3)
    ia, ib, ic = ("XYZ".index(ch) for ch in order)
    eye = np.eye(3)
    e_a, e_b, e_c = eye[ia], eye[ib], eye[ic]
    cb_, sb_ = np.cos(fam[..., ib])[..., None], np.sin(fam[..., ib])[..., None]
    cc_, sc_ = np.cos(fam[..., ic])[..., None], np.sin(fam[..., ic])[..., None]
    q = e_a * cb_ + np.cross(e_b, e_a) * sb_  # R_B e_A (e_A ⊥ e_B)
    col_a = q * cc_ + V.cross_rows(e_c, q) * sc_ + e_c * (q @ e_c)[..., None] * (1.0 - cc_)
    col_b = e_b * cc_ + np.cross(e_c, e_b) * sc_  # R_C e_B
    col_c = np.broadcast_to(e_c, col_a.shape)
    w = dr @ np.swapaxes(r, -1, -2)  # (V, M, 3, 3)
    omega = V.skew_vee(w)[:, :, None, :]  # (V, M, 1, 3)
    # Cramer's rule for [col_a col_b col_c]·(θ̇_A, θ̇_B, θ̇_C) = ω.
    bc, ca, ab = V.cross_rows(col_b, col_c), V.cross_rows(col_c, col_a), V.cross_rows(col_a, col_b)
    det = np.sum(col_a * bc, axis=-1)  # (M, 2)
    ok = np.abs(det) > 1e-9
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    abc = (
        np.stack([np.sum(omega * bc, -1), np.sum(omega * ca, -1), np.sum(omega * ab, -1)], axis=-1)
        * inv[..., None]
    )  # (V, M, 2, 3) in A, B, C order; 0 at gimbal lock
    rates = np.empty_like(abc)
    rates[..., ia], rates[..., ib], rates[..., ic] = abc[..., 0], abc[..., 1], abc[..., 2]
    return fam, rates


def _joint_cost_grad(
    lim: Any, r: FloatArray, dr: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """One spherical joint: (F term (M,), its gradient (V, M), violation v (M,), ∇v (V, M)).

    F term: the family nearest the range middles (as :func:`middle_cost`); v: the total
    angular distance outside the limits of the least-violating family (as
    :func:`core.limb.model.family_violations`)."""
    m = r.shape[0]
    nv = dr.shape[0]
    if lim is None or not any(lim.limited):
        z = np.zeros(m)
        return z, np.zeros((nv, m)), z, np.zeros((nv, m))
    fam, rates = _euler_rates(r, dr, lim.order)
    lo, hi = lim.bounds()
    mask = np.array(lim.limited)
    lo_a = np.where(mask, lo, 0.0)
    hi_a = np.where(mask, hi, 0.0)
    mid = 0.5 * (lo_a + hi_a)
    d = V.wrap(fam - mid) * mask  # (M, 2, 3)
    f_fam = np.sum(d * d, axis=-1)  # (M, 2)
    j = np.argmin(f_fam, axis=-1)
    rows = np.arange(m)
    f = f_fam[rows, j]
    g = 2.0 * np.sum(d[rows, j][None] * rates[:, rows, j], axis=-1)  # (V, M)
    width = hi_a - lo_a
    dd = (fam - lo_a) % (2 * math.pi)
    above = dd - width
    below = 2 * math.pi - dd
    out = np.where(dd <= width, 0.0, np.minimum(above, below)) * mask
    sign = np.where(dd <= width, 0.0, np.where(above <= below, 1.0, -1.0)) * mask
    v_fam = np.sum(out, axis=-1)
    k = np.argmin(v_fam, axis=-1)
    v = v_fam[rows, k]
    gv = np.sum(sign[rows, k][None] * rates[:, rows, k], axis=-1)
    return f, g, v, gv


def pose_and_derivatives(
    limb: Limb,
    goal: PartialOrientationGoal,
    ref: FloatArray,
    x: FloatArray,
    near: Any,
    free: Limb | None = None,
) -> tuple[LimbSolution, FloatArray, FloatArray, FloatArray, NDArray[np.bool_]]:
    """The closed-form pose at each (φ, ψ) of ``x`` (M, 2) — the limb without limits, θ4
    the root nearest ``near`` — and its exact derivatives: (solution, dR1 (2, M, 3, 3),
    dθ4 (2, M), dR2 (2, M, 3, 3), ok). Index 0 is ∂/∂φ, 1 is ∂/∂ψ. The ψ derivatives follow
    the wrist on its circle (Eq. 10) through θ4 (Eq. 5), the triangle frame and the goal
    frame of Eq. (7). ``ok`` (M,) is False where the chain does not apply (wrist out of
    reach, limb stretched or folded, degenerate frames): differentiate numerically there."""

    m = len(x)
    phi, psi = x[:, 0], x[:, 1]
    gb = _broadcast(goal, m)
    both = partial_rotation(
        _broadcast(goal, 2 * m), np.concatenate([psi, psi + 0.5 * math.pi]), ref
    )
    gr = both[:m]
    d = np.asarray(gb.direction)
    a_eff = np.asarray(gb.axis)
    dg = both[m:] - d[:, :, None] * a_eff[:, None, :]  # dG/dψ = G(ψ + π/2) − d·aᵀ
    pos = np.asarray(gb.position)
    free = limb.with_limits(None) if free is None else free  # ``limb`` without limits, if given
    sol = solve_pose(free, PoseGoal(pos, gr), swivel=phi, elbow_near=near)
    c = limb.constants
    f64 = np.float64
    re: FloatArray = np.array(c.RE, dtype=f64)
    te: FloatArray = np.array(c.tE, dtype=f64)
    rw = gr @ re.T
    drw = dg @ re.T
    w = pos - rw @ te
    dw = -(drw @ te)
    ra: FloatArray = np.array(c.Ra, dtype=f64)
    ta: FloatArray = np.array(c.ta, dtype=f64)
    tb: FloatArray = np.array(c.tb, dtype=f64)
    k: FloatArray = np.array(c.k, dtype=f64)
    ta_l: FloatArray = np.array(c.ta_l, dtype=f64)
    ktb = float(k @ tb)
    kxtb = V.cross_rows(k, tb)
    aa = float(ta_l @ tb) - c.kta * ktb
    bb = float(ta_l @ kxtb)
    th = np.asarray(sol.elbow, dtype=np.float64)
    ct, st = np.cos(th)[:, None], np.sin(th)[:, None]
    den = -aa * np.sin(th) + bb * np.cos(th)
    r_ab = math.hypot(aa, bb)
    ok = np.abs(den) > 1e-6 * max(r_ab, 1e-300)
    dth = np.sum(w * dw, axis=-1) / np.where(ok, den, 1.0)
    rtb = tb * ct + kxtb * st + k * ktb * (1.0 - ct)
    drtb = (-tb * st + kxtb * ct + k * ktb * st) * dth[:, None]
    w0 = ta + rtb @ ra.T
    dw0 = drtb @ ra.T

    def unit_d(p: FloatArray, dp: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        nrm = np.linalg.norm(p, axis=-1, keepdims=True)
        u = p / np.where(nrm > 0, nrm, 1.0)
        du = (dp - u * np.sum(u * dp, axis=-1, keepdims=True)) / np.where(nrm > 0, nrm, 1.0)
        return u, du, nrm[:, 0]

    xr, dxr, n0 = unit_d(w0, dw0)
    ep = xr @ ta
    eperp = ta - ep[:, None] * xr
    deperp = -(dxr @ ta)[:, None] * xr - ep[:, None] * dxr
    yr, dyr, ne = unit_d(eperp, deperp)
    zr = V.cross_rows(xr, yr)
    dzr = V.cross_rows(dxr, yr) + V.cross_rows(xr, dyr)
    n, dn, nw = unit_d(w, dw)
    rn = n @ ref
    p_ref = ref - rn[:, None] * n
    dp_ref = -(dn @ ref)[:, None] * n - rn[:, None] * dn
    u, du, npr = unit_d(p_ref, dp_ref)
    v = V.cross_rows(n, u)
    dv = V.cross_rows(dn, u) + V.cross_rows(n, du)
    cp, sp = np.cos(phi)[:, None], np.sin(phi)[:, None]
    yp, zp = cp * u + sp * v, cp * v - sp * u
    dyp, dzp = cp * du + sp * dv, cp * dv - sp * du
    xm = np.stack([xr, yr, zr], axis=-1)
    dxm = np.stack([dxr, dyr, dzr], axis=-1)
    lm = np.stack([n, yp, zp], axis=-1)
    r1 = lm @ np.swapaxes(xm, -1, -2)
    scale = c.length
    ok &= (n0 > 1e-6 * scale) & (ne > 1e-6 * scale) & (nw > 1e-6 * scale) & (npr > 1e-6)
    ok &= np.max(np.abs(r1 - sol.shoulder), axis=(-1, -2)) <= 1e-9
    dr1_phi = np.stack([np.zeros_like(n), zp, -yp], axis=-1) @ np.swapaxes(xm, -1, -2)
    dr1_psi = np.stack([dn, dyp, dzp], axis=-1) @ np.swapaxes(xm, -1, -2) + lm @ np.swapaxes(
        dxm, -1, -2
    )
    c0: FloatArray = np.array(c.C0, dtype=f64)
    c1: FloatArray = np.array(c.C1, dtype=f64)
    c2: FloatArray = np.array(c.C2, dtype=f64)
    mm = c0 + ct[..., None] * c1 + st[..., None] * c2
    dmm = (-st[..., None] * c1 + ct[..., None] * c2) * dth[:, None, None]
    r1t = np.swapaxes(sol.shoulder, -1, -2)
    mt = np.swapaxes(mm, -1, -2)
    dr2_phi = mt @ np.swapaxes(dr1_phi, -1, -2) @ rw
    dr2_psi = (
        np.swapaxes(dmm, -1, -2) @ r1t @ rw
        + mt @ np.swapaxes(dr1_psi, -1, -2) @ rw
        + mt @ r1t @ drw
    )
    dth2 = np.stack([np.zeros(m), dth])
    return (
        sol,
        np.stack([dr1_phi, dr1_psi]),
        dth2,
        np.stack([dr2_phi, dr2_psi]),
        ok,
    )


def limits_cost_grad(
    limits: Any,
    sol: LimbSolution,
    dr1: FloatArray,
    dth: FloatArray,
    dr2: FloatArray,
    weight: float = 100.0,
) -> tuple[FloatArray, FloatArray]:
    """:func:`limits_cost` and its gradient (M, 2) from the pose derivatives (§3.3's
    ∇F = Σ 2(θᵢ − θᵢ*)·∂θᵢ/∂(φ, ψ), plus the violation penalty's)."""
    f_s, g_s, v_s, gv_s = _joint_cost_grad(limits.shoulder, sol.shoulder, dr1)
    f_w, g_w, v_w, gv_w = _joint_cost_grad(limits.wrist, sol.wrist, dr2)
    f = f_s + f_w
    g = g_s + g_w
    v = v_s + v_w
    gv = gv_s + gv_w
    if limits.elbow is not None:
        lo, hi = limits.elbow
        th = np.asarray(sol.elbow, dtype=np.float64)
        mid = 0.5 * (lo + hi)
        de = V.wrap(th - mid)
        f = f + de * de
        g = g + 2.0 * de * dth
        dd = (th - lo) % (2 * math.pi)
        above, below = dd - (hi - lo), 2 * math.pi - dd
        inside = dd <= hi - lo
        v = v + np.where(inside, 0.0, np.minimum(above, below))
        gv = gv + np.where(inside, 0.0, np.where(above <= below, 1.0, -1.0)) * dth
    return f + weight * v * v, (g + 2.0 * weight * v * gv).T
