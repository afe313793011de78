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
"""

from __future__ import annotations

import math
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InvalidGoalError, ShapeMismatchError
from .goals import PartialOrientationGoal, PoseGoal

if TYPE_CHECKING:
    from .limb import Limb, LimbSolution

FloatArray = NDArray[np.float64]

__all__ = ["PsiStrategy", "effector_basis", "partial_rotation", "wrist_circle", "choose_psi"]


class PsiStrategy(Enum):
    """How ψ, the free rotation about the aligned axis, is chosen (§3.3)."""

    #: The given ``psi`` (default 0).
    GIVEN = "given"
    #: The wrist nearest ``wrist_target`` (Eq. 12, in closed form).
    CLOSEST_WRIST = "closest_wrist"
    #: The wrist lowest along ``up`` (Eq. 11).
    LOWEST_WRIST = "lowest_wrist"
    #: The wrist highest along ``up`` (Eq. 11).
    HIGHEST_WRIST = "highest_wrist"


def _cross(a: ArrayLike, b: ArrayLike) -> FloatArray:
    """a × b over the last axis (np.cross is slow on small arrays)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _unit(v: FloatArray) -> FloatArray:
    """v / |v| over the last axis (zero vectors stay zero)."""
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    out: FloatArray = v / np.where(n > 0.0, n, 1.0)
    return out


def _perp_unit(v: FloatArray, axis: FloatArray) -> FloatArray:
    """Unit part of ``v`` ⊥ unit ``axis``; where v ∥ axis, the coordinate axis least
    aligned with ``axis`` is projected instead (defined, never NaN)."""
    p = v - np.sum(v * axis, axis=-1, keepdims=True) * axis
    n = np.linalg.norm(p, axis=-1, keepdims=True)
    alt = np.eye(3)[np.argmin(np.abs(axis), axis=-1)]
    pa = alt - np.sum(alt * axis, axis=-1, keepdims=True) * axis
    use = n > 1e-9
    p = np.where(use, p, pa)
    return _unit(p)


def effector_basis(axis: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Orthonormal effector-frame basis (a, b, c = a × b) with a = ``axis``.

    b is the coordinate axis cyclically after a's dominant component (x → y → z → x),
    made ⊥ a — for a = ±x, ±y, ±z this is the paper's column layout of G(ψ) (§3.3).
    """
    a = np.asarray(axis, dtype=np.float64)
    nxt = np.eye(3)[(np.argmax(np.abs(a), axis=-1) + 1) % 3]
    b = _perp_unit(nxt, a)
    return a, b, _cross(a, b)


def goal_basis(
    direction: FloatArray, reference: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(d, û_g, v̂_g): û_g the projection of ``reference`` ⊥ d (§3.3), v̂_g = d × û_g."""
    u = _perp_unit(np.broadcast_to(reference, direction.shape), direction)
    return direction, u, _cross(direction, u)


def partial_rotation(
    goal: PartialOrientationGoal, psi: ArrayLike, reference: ArrayLike
) -> FloatArray:
    """G(ψ)'s rotation: R a = d, R b = cosψ û_g + sinψ v̂_g, R c = d × (R b)."""
    a, b, c = effector_basis(np.asarray(goal.axis))
    d, u, v = goal_basis(np.asarray(goal.direction), np.asarray(reference, dtype=np.float64))
    p = np.asarray(psi, dtype=np.float64)[..., None]
    u_psi = np.cos(p) * u + np.sin(p) * v
    v_psi = _cross(d, u_psi)
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
        upv = np.asarray(up, dtype=np.float64)
        if (
            upv.shape[-1:] != (3,)
            or not np.all(np.isfinite(upv))
            or np.any(np.linalg.norm(upv, axis=-1) < 1e-12)
        ):
            raise InvalidGoalError(f"up must be a finite non-zero 3-vector, got {up!r}")
        upv = _unit(upv)
        # height = up·centre − (cosψ up·K1 + sinψ up·K2)
        y, x = np.sum(upv * k2, axis=-1), np.sum(upv * k1, axis=-1)
        if strategy is PsiStrategy.HIGHEST_WRIST:
            y, x = -y, -x
    else:
        raise InvalidGoalError(
            f"psi_strategy must be a PsiStrategy ({', '.join(s.name for s in PsiStrategy)}), "
            f"got {strategy!r}"
        )
    flat = np.hypot(x, y) <= 1e-12 * (1.0 + np.linalg.norm(k1, axis=-1))
    out: FloatArray = np.where(flat, default, np.arctan2(y, x))
    return out


def _has_limits(limb: Limb) -> bool:
    from .limb import _limits_active

    return _limits_active(limb.limits)


def _middle_cost(
    limits: Any, shoulder: FloatArray, elbow: FloatArray, wrist: FloatArray
) -> FloatArray:
    """§3.3's F = Σ (θᵢ − θᵢ*)² over the limited joint angles, θᵢ* the middle of each range
    (the Euler family nearest the middles; angle differences wrapped)."""
    from .rotations import matrix_to_euler_families

    f = np.zeros(np.shape(elbow))
    for lim, r in ((limits.shoulder, shoulder), (limits.wrist, wrist)):
        if lim is None or not any(lim.limited):
            continue
        lo, hi = lim.bounds()
        mask = np.array(lim.limited)
        mid = 0.5 * (np.where(mask, lo, 0.0) + np.where(mask, hi, 0.0))
        d = (matrix_to_euler_families(r, lim.order) - mid + math.pi) % (2 * math.pi) - math.pi
        f += np.min(np.sum((d * mask) ** 2, axis=-1), axis=-1)
    if limits.elbow is not None:
        mid_e = 0.5 * (limits.elbow[0] + limits.elbow[1])
        f += ((np.asarray(elbow) - mid_e + math.pi) % (2 * math.pi) - math.pi) ** 2
    return f


def _central_cost_grad(cost: Any, h: float = 1e-6) -> Any:
    """(f, ∇f) of a 2-variable batched ``cost`` by central differences, in one batch."""
    steps = np.array([[0, 0], [h, 0], [-h, 0], [0, h], [0, -h]])

    def fg(x: FloatArray) -> tuple[float, FloatArray]:
        f = cost(x + steps)
        return float(f[0]), np.array([(f[1] - f[2]) / (2 * h), (f[3] - f[4]) / (2 * h)])

    return fg


def _free(limb: Limb) -> Limb:
    """The same limb without limits (exact closed-form poses for any φ, ψ)."""
    from .limb import Limb as LimbCls

    return LimbCls(limb.a, limb.b, limb.elbow_axis, limb.effector, None, limb.swivel_reference)


def _validate_point(value: Any, name: str, n: int | None) -> FloatArray | None:
    if value is None:
        return None
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidGoalError(f"{name} must be a 3-vector (m), got {value!r}") from exc
    if v.ndim not in (1, 2) or v.shape[-1] != 3:
        raise InvalidGoalError(f"{name} must have shape (3,) or (N, 3), got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise InvalidGoalError(f"{name} must be finite, got {v!r}")
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
    """Solve a partial-orientation goal (see :func:`core.limb.solve_limb`)."""
    from . import limb as L

    if pose_kwargs.get("wrist") is not None:
        raise InvalidGoalError("wrist does not apply to a PartialOrientationGoal (ψ sets it)")
    pose_kwargs = {k: v for k, v in pose_kwargs.items() if k != "wrist"}
    n = goal._n
    ref = np.asarray(limb.swivel_reference)
    psi_arr = None if psi is None else np.asarray(psi, dtype=np.float64)
    if psi_arr is not None and (psi_arr.ndim > 1 or not np.all(np.isfinite(psi_arr))):
        raise InvalidGoalError(f"psi must be a finite scalar or (N,) array, got {psi!r}")
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
    psi_c = choose_psi(psi_strategy, wrist_circle(limb, goal, ref), psi_arr, wt, up)
    if not _has_limits(limb):
        return _pose_solution(limb, goal, psi_c, ref, pose_kwargs)
    # Limits: where G(ψ) has feasible φ, the analytic limb solve keeps every limit; the
    # other elements run the (φ, ψ) optimisation of §3.3.
    rot = partial_rotation(goal, psi_c, ref)
    pos = np.broadcast_to(np.asarray(goal.position), rot.shape[:-2] + (3,))
    fs = L.feasible_swivel(limb, PoseGoal(pos, rot))
    if n is None:
        if fs:
            return _pose_solution(limb, goal, psi_c, ref, pose_kwargs)
        return _limited_element(limb, goal, float(psi_c), ref, pose_kwargs)
    has = ~np.isnan(np.asarray(fs)[:, 0, 0])
    sol = _pose_solution(_free(limb), goal, psi_c, ref, pose_kwargs)
    rows: dict[int, LimbSolution] = {}
    idx = np.nonzero(has)[0]
    if len(idx):
        sub_kw = {
            k: (v[idx] if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == n else v)
            for k, v in pose_kwargs.items()
        }
        sub = _pose_solution(limb, _take(goal, idx), psi_c[idx], ref, sub_kw)
        rows.update({int(i): sub[j] for j, i in enumerate(idx)})
    for i in np.nonzero(~has)[0]:
        kw_i = {
            k: (v[i] if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == n else v)
            for k, v in pose_kwargs.items()
        }
        rows[int(i)] = _limited_element(limb, _take(goal, i), float(psi_c[i]), ref, kw_i)
    return _merge_rows(sol, rows)


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


_FIELDS = (
    "shoulder",
    "elbow",
    "wrist",
    "swivel",
    "reachable",
    "within_limits",
    "position_error",
    "orientation_error",
    "psi",
)


def _merge_rows(sol: LimbSolution, rows: dict[int, LimbSolution]) -> LimbSolution:
    """Batched ``sol`` with rows i replaced by the single solutions ``rows[i]``."""
    from dataclasses import replace

    fields: dict[str, Any] = {}
    for name in _FIELDS:
        arr = np.array(getattr(sol, name), copy=True)
        for i, r in rows.items():
            arr[i] = getattr(r, name)
        fields[name] = arr
    fs = np.asarray(sol.feasible_swivel)
    width = max([fs.shape[1]] + [len(r.feasible_swivel) for r in rows.values()])
    out = np.full((fs.shape[0], width, 2), np.nan)
    out[:, : fs.shape[1]] = fs
    for i, r in rows.items():
        out[i] = np.nan
        if r.feasible_swivel:
            out[i, : len(r.feasible_swivel)] = np.array(r.feasible_swivel)
    fields["feasible_swivel"] = out
    return replace(sol, **fields)


def _pose_solution(
    limb: Limb,
    goal: PartialOrientationGoal,
    psi: FloatArray,
    ref: FloatArray,
    pose_kwargs: dict[str, Any],
) -> LimbSolution:
    """Solve G(ψ) as a pose goal; report ψ and the axis-alignment error."""
    from . import limb as L

    rot = partial_rotation(goal, psi, ref)
    pos = np.broadcast_to(np.asarray(goal.position), rot.shape[:-2] + (3,))
    sol = L.solve_limb(limb, PoseGoal(pos, rot), **pose_kwargs)
    return _with_axis_error(limb, goal, psi, sol)


def _with_axis_error(
    limb: Limb, goal: PartialOrientationGoal, psi: FloatArray, sol: LimbSolution
) -> LimbSolution:
    """ψ, and the errors measured against the partial goal itself by forward kinematics:
    position, and the angle between the effector axis and ``direction``."""
    from dataclasses import replace

    from .limb import REACH_TOLERANCE

    fk = limb.forward(sol.shoulder, sol.elbow, sol.wrist)
    axis_now = (fk[..., :3, :3] @ np.asarray(goal.axis)[..., None])[..., 0]
    d = np.asarray(goal.direction)
    err = np.arctan2(np.linalg.norm(_cross(axis_now, d), axis=-1), np.sum(axis_now * d, axis=-1))
    pe = np.linalg.norm(fk[..., :3, 3] - np.asarray(goal.position), axis=-1)
    reach = (pe <= REACH_TOLERANCE * limb.length) & (err <= REACH_TOLERANCE)
    single = np.ndim(sol.elbow) == 0
    wrapped = (np.asarray(psi, dtype=np.float64) + math.pi) % (2 * math.pi) - math.pi
    return replace(
        sol,
        orientation_error=float(err) if single else err,
        position_error=float(pe) if single else pe,
        reachable=bool(reach) if single else reach,
        psi=float(wrapped) if single else wrapped,
    )


def _limited_element(
    limb: Limb,
    goal: PartialOrientationGoal,
    psi_d: float,
    ref: FloatArray,
    pose_kwargs: dict[str, Any],
    n_psi: int = 72,
) -> LimbSolution:
    """One goal whose G(ψ_d) has no φ within the limits (§3.3 "Joint limits").

    Minimises F(φ, ψ) = Σ (θᵢ − θᵢ*)² (θᵢ* the middle of each limited range, the Euler
    family nearest it) over (φ, ψ) with L-BFGS-B; position and axis stay exact since every
    (φ, ψ) is a closed-form pose. Seed: on a grid of ψ, the feasible φ intervals at each ψ
    are found analytically (§3.2.4); the seed is the feasible ψ nearest ψ_d at the middle
    of its largest interval (or the grid's best F when no ψ is feasible). The optimum is
    kept only if it keeps every limit the seed kept. The gradient is by central
    differences of the closed-form θ(φ, ψ).
    """
    from dataclasses import replace

    from scipy.optimize import minimize

    from . import limb as L

    limits = limb.limits
    assert limits is not None
    free = _free(limb)
    psis = psi_d + (np.arange(n_psi) * (2 * math.pi / n_psi))
    # Nearest ψ_d first: 0, +δ, −δ, +2δ, ...
    order = np.argsort(np.minimum(np.arange(n_psi), n_psi - np.arange(n_psi)), kind="stable")
    psis = psis[order]
    gb = _broadcast(goal, n_psi)
    rot = partial_rotation(gb, psis, ref)
    fs = np.asarray(L.feasible_swivel(limb, PoseGoal(np.asarray(gb.position), rot)))
    lengths = np.where(np.isnan(fs[..., 0]), -1.0, fs[..., 1] - fs[..., 0])
    has = lengths.max(axis=1) > 0

    def poses(x: FloatArray) -> LimbSolution:
        return L.solve_limb(
            free,
            PoseGoal(
                np.broadcast_to(np.asarray(goal.position), (len(x), 3)),
                partial_rotation(_broadcast(goal, len(x)), x[:, 1], ref),
            ),
            swivel=x[:, 0],
        )

    def cost(x: FloatArray) -> FloatArray:
        s = poses(x)
        return _middle_cost(limits, s.shoulder, np.asarray(s.elbow), s.wrist)

    if np.any(has):
        i0 = int(np.argmax(has))
        j0 = int(np.argmax(lengths[i0]))
        seed = np.array([0.5 * (fs[i0, j0, 0] + fs[i0, j0, 1]), psis[i0]])
    else:
        phis = np.linspace(-math.pi, math.pi, 24, endpoint=False)
        grid = np.stack(np.meshgrid(phis, psis[::3], indexing="ij"), -1).reshape(-1, 2)
        seed = grid[int(np.argmin(cost(grid)))]
    fg = _central_cost_grad(cost)

    res = minimize(fg, seed, jac=True, method="L-BFGS-B", options={"maxcor": 4})
    cand = [np.asarray(res.x), seed]
    sols = [poses(x[None]) for x in cand]
    within = [
        bool(L._within_limits(limits, s.shoulder, np.asarray(s.elbow), s.wrist)[0]) for s in sols
    ]
    k = 0 if (within[0] or not within[1]) else 1
    x, s1 = cand[k], sols[k][0]
    g1 = PoseGoal(np.asarray(goal.position), partial_rotation(goal, x[1], ref))
    out = replace(
        s1,
        within_limits=within[k],
        feasible_swivel=L.feasible_swivel(limb, g1),
    )
    return _with_axis_error(limb, goal, np.array(x[1]), out)
