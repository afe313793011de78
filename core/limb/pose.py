"""Position and pose goals: validation, the general solve (scalar or batched) and the
rows out of reach, each re-solved alone and merged back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..errors import (
    InvalidGoalError,
    InvalidLimbError,
    ShapeMismatchError,
    finite_array,
    format_value,
)
from ..geometry import vec3 as V
from ..geometry.rotations import check_rotation, relative_angle
from ..goals import ROTATION_TOLERANCE, PoseGoal, PositionGoal, batch_size
from .fast_path import euler_ok_one, fast_solution, solve_fast
from .feasible import (
    closest_swivel,
    coeffs_row,
    feasible_sets,
    joint_coeffs,
    midpoint_swivel,
    objective_swivel,
    within_limits,
)
from .kernel import Circle, desired_swivel, pose_at, reduce_goal, solve_circle
from .model import (
    IDENTITY,
    REACH_TOLERANCE,
    FloatArray,
    Limb,
    LimbGoal,
    LimbLimits,
    LimbSolution,
    Objective,
    SwivelStrategy,
    batch_of,
    effector_frame,
    limits_active,
    wrist_centre,
)
from .reach import reach_toward, swivel_of
from .unsolvable import least_violating_swivel, unsolvable_element


def prepare_goal(
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
            f"limb goals act on the limb's end effector: joint must be None, got "
            f"{format_value(goal.joint)}"
        )
    n = batch_size(goal)
    sizes = {"goal": n}
    w = None
    if isinstance(goal, PositionGoal):
        if wrist is None:
            w = IDENTITY
        else:
            w = finite_array(wrist, "wrist", InvalidGoalError)
            sizes["wrist"] = batch_of(w, 2, "wrist")
            if w.shape[-2:] != (3, 3):
                raise InvalidGoalError(f"wrist must be a rotation (…, 3, 3), got shape {w.shape}")
            check_rotation(w, tol=ROTATION_TOLERANCE, name="wrist", error=InvalidGoalError)
    elif wrist is not None:
        raise InvalidGoalError("wrist applies to PositionGoal only; a PoseGoal fixes the wrist")
    sw = None
    if swivel is not None:
        sw = finite_array(swivel, "swivel", InvalidGoalError)
        if sw.ndim > 1:
            raise InvalidGoalError(f"swivel must be a scalar or shape (N,), got {sw.shape}")
        sizes["swivel"] = None if sw.ndim == 0 else int(sw.shape[0])
        sw = float(sw) if sw.ndim == 0 else sw  # type: ignore[assignment]
    et = None
    if elbow_target is not None:
        if swivel is not None:
            raise InvalidGoalError("give swivel or elbow_target, not both")
        et = finite_array(elbow_target, "elbow_target", InvalidGoalError)
        sizes["elbow_target"] = batch_of(et, 1, "elbow_target")
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
            goal = broadcast_goal(goal, n_all)
    return n_all, w, sw, (et, goal)


def broadcast_goal(goal: LimbGoal, n: int) -> LimbGoal:
    if isinstance(goal, PoseGoal):
        return PoseGoal(
            np.broadcast_to(np.asarray(goal.position), (n, 3)),
            np.broadcast_to(np.asarray(goal.rotation), (n, 3, 3)),
        )
    return PositionGoal(np.broadcast_to(np.asarray(goal.position), (n, 3)), point=goal.point)


def solve_pose(
    limb: Limb,
    goal: LimbGoal,
    *,
    swivel: ArrayLike | None = None,
    elbow_target: ArrayLike | None = None,
    strategy: SwivelStrategy | Objective = SwivelStrategy.CLOSEST,
    wrist: ArrayLike | None = None,
    elbow_near: ArrayLike | None = None,
) -> LimbSolution:
    """:func:`solve_limb` for a :class:`PositionGoal` or :class:`PoseGoal` (same arguments,
    same result): the scalar fast path where it applies, else the general solve."""
    if type(limb) is Limb:
        fast = solve_fast(limb, goal, swivel, elbow_target, strategy, wrist, elbow_near)
        if fast is not None:
            return fast
    return solve_checked(limb, goal, swivel, elbow_target, strategy, wrist, elbow_near)


def solve_checked(
    limb: Limb,
    goal: LimbGoal,
    swivel: Any,
    elbow_target: Any,
    strategy: SwivelStrategy | Objective,
    wrist: Any,
    elbow_near: Any,
) -> LimbSolution:
    """Validate the arguments of a position/pose solve, then :func:`solve_general`."""
    if not (isinstance(strategy, SwivelStrategy) or callable(strategy)):
        raise InvalidGoalError(
            f"strategy must be a SwivelStrategy ({', '.join(s.name for s in SwivelStrategy)}) "
            f"or a callable, got {format_value(strategy)}"
        )
    n, w, sw, (et, pgoal) = prepare_goal(limb, goal, wrist, swivel, elbow_target)
    limits = limb.limits
    near = None
    if elbow_near is not None:
        near_arr = finite_array(elbow_near, "elbow_near", InvalidGoalError)
        if near_arr.ndim > 1 or (near_arr.ndim == 1 and (n is None or len(near_arr) != n)):
            raise ShapeMismatchError(
                f"elbow_near must be a scalar or one value per goal, got shape {near_arr.shape}"
            )
        near = float(near_arr) if near_arr.ndim == 0 else near_arr
    # an empty batch has nothing to limit: the free path returns the empty solution
    active = limits_active(limits) and n != 0
    return solve_general(limb, pgoal, w, sw, et, strategy, n, limits if active else None, near)


def solve_general(
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
    c = limb.constants
    aref = V.vec_of(np.asarray(limb.swivel_reference))
    pr = reduce_goal(limb, goal, w, n)
    ci = solve_circle(ops, c, pr.wg, pr.tbe, aref, None if limits is None else limits.elbow, near)
    phi_d = desired_swivel(ci, sw, None if et is None else V.vec_of(et), ops)
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
        sh, wr = joint_coeffs(ops, c, pr, ci, nb)
        feas = feasible_sets(limits, sh, wr, theta_b)
        intervals = feas.all
        if strategy is SwivelStrategy.CLOSEST:
            phi_b, has = closest_swivel(intervals, phi_db)
        elif strategy is SwivelStrategy.MIDPOINT:
            phi_b, has = midpoint_swivel(intervals)
        else:
            phi_b, has = objective_swivel(strategy, limits, sh, wr, theta_b, intervals)
        if not np.all(has):
            phi_b = phi_b.copy()
            shoulder_sets = feas.shoulder
            phi_sh, has_sh = closest_swivel(shoulder_sets, phi_db)
            for i in np.nonzero(~has)[0]:  # rare path: a bounded optimisation per element
                if pr.RW is None:
                    phi_b[i] = (
                        phi_sh[i]
                        if has_sh[i]
                        else least_violating_swivel(coeffs_row(sh, i), limits.shoulder)
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
                override[i] = unsolvable_element(limb, limits, tg if single else tg[i], rw)
                phi_b[i] = override[i][0]
        phi = float(phi_b[0]) if single else phi_b
    r1, r2, pe, oe = pose_at(ops, c, pr, ci, phi)
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
        shoulder: FloatArray = V.mat_array(r1, None)
        wrist_m: FloatArray = V.mat_array(r2, None)
        elbow = ci.theta
        if override:
            phi, elbow, shoulder, wrist_m = override[0]
            pe_a, oe_a = _fk_errors(limb, goal, shoulder[None], np.array([elbow]), wrist_m[None])
            pe, oe = float(pe_a[0]), float(oe_a[0])
        within = limits is None or (
            bool(limits.elbow_contains_unchecked(elbow))
            and euler_ok_one(shoulder.tolist(), limits.shoulder)
            and euler_ok_one(wrist_m.tolist(), limits.wrist)
        )
        fs = tuple((a, b) for a, b in intervals[0].tolist() if not math.isnan(a))
        return fast_solution(
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
        within_limits=within_limits(limits, shoulder, theta, wrist_m),
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
    fk = effector_frame(limb, shoulder, elbow, wrist)
    pos = np.asarray(goal.position, dtype=np.float64)
    pos = pos[None] if rows is None else pos[rows]
    if isinstance(goal, PoseGoal):
        rot = np.asarray(goal.rotation, dtype=np.float64)
        rot = rot[None] if rows is None else rot[rows]
        return np.linalg.norm(fk[:, :3, 3] - pos, axis=-1), relative_angle(fk[:, :3, :3], rot)
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
    ci: Circle,
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
    re-aimed the wrist centre off the shell — :func:`core.limb.reach.reach_toward`
    minimises the terminal point's distance, then the orientation error, over the joint
    angles within their limits, and its pose replaces the shell pose unless that is
    within the limits and no worse. ``deferred``: rows out of reach with no feasible φ
    whose unsolvable-goal fallback was skipped (the candidate here computes it). Each
    such row is solved alone through the N = 1
    array kernel, so single and batched solves agree exactly. Returns row → (φ, θ4, R1,
    R2)."""
    c = limb.constants
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
    redo = ~within_limits(limits, sh_c[oor], th_c[oor], wr_c[oor])
    redo |= np.isin(oor, list(override) + deferred)  # (no shell pose, or one re-aimed)
    oor = oor[redo]

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
        cand = solve_general(
            limb, goal_i, w_i, row(sw, i, 0), row(et, i, 1), strategy, 1, limits,
            row(near, i, 0), reach=False,
        )  # fmt: skip
        start = (cand.shoulder[0], float(cand.elbow[0]), cand.wrist[0])
        target: FloatArray = pos if pos.ndim == 1 else pos[i]
        rot_g: FloatArray | None = None
        if pose:  # the wrist centre's goal, tG − R_G·R_Eᵀ·tE (as in reduce_goal)
            rot_g = rot_i[0]
            target = target - rot_g @ np.asarray(limb.effector)[:3, :3].T @ te
        point = np.zeros(3) if pose else np.asarray(goal.point, dtype=np.float64)  # type: ignore[union-attr]
        r1_o, th_o, r2_o, d_o, oe_o = reach_toward(
            limb, limits, target, rot_g, None if w_i is None else w_i[0],
            None if pose else point, start,
        )  # fmt: skip
        if pose:
            d_c = float(np.linalg.norm(wrist_centre(limb, start[0], start[1]) - target))
        else:
            d_c = float(cand.position_error[0])
        oe_c = float(cand.orientation_error[0])
        slack = 1e-12 * c.length
        if bool(cand.within_limits[0]) and (
            d_c < d_o - slack or (d_c <= d_o + slack and oe_c <= oe_o)
        ):
            out[i] = (float(cand.swivel[0]), start[1], start[0], start[2])
            continue
        fk = effector_frame(limb, r1_o, th_o, r2_o)
        terminal = wrist_centre(limb, r1_o, th_o) if pose else fk[:3, 3] + fk[:3, :3] @ point
        phi_o = swivel_of(limb, r1_o, terminal)
        out[i] = (float(cand.swivel[0]) if phi_o is None else phi_o, th_o, r1_o, r2_o)
    return out


def pose_feasible_swivel(
    limb: Limb, goal: LimbGoal, *, wrist: ArrayLike | None = None
) -> tuple[tuple[float, float], ...] | FloatArray:
    """:func:`feasible_swivel` for a :class:`PositionGoal` or :class:`PoseGoal`."""
    n, w, _, (_, pgoal) = prepare_goal(limb, goal, wrist, None, None)
    single = n is None
    if single:
        pgoal = broadcast_goal(pgoal, 1)
        w = None if w is None else w[None]
    nn = 1 if single else n
    assert nn is not None
    limits = limb.limits
    if limits is None:
        out = np.tile(np.array([[[-math.pi, math.pi]]]), (nn, 1, 1))
    else:
        c = limb.constants
        pr = reduce_goal(limb, pgoal, w, nn)
        aref = V.vec_of(np.asarray(limb.swivel_reference))
        ci = solve_circle(V.ArrayOps, c, pr.wg, pr.tbe, aref, limits.elbow)
        sh, wr = joint_coeffs(V.ArrayOps, c, pr, ci, nn)
        out = feasible_sets(limits, sh, wr, np.asarray(ci.theta, dtype=np.float64)).all
    if single:
        return tuple((float(a), float(b)) for a, b in out[0] if not math.isnan(a))
    return out
