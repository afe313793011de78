"""Aiming goals for the analytic limb (Tolani, Goswami & Badler 2000, §3.4).

An :class:`~core.goals.AimGoal` asks that the ray from the effector-frame point ``origin``
along the effector-frame unit ``axis`` passes through ``target`` (shoulder frame). As in
the paper the wrist is held fixed (``wrist``, default identity), so the hand frame is rigid
relative to the elbow's distal frame: H(θ4) = A·T_k(θ4)·B·T2(R2)·E. With θ4 given the ray
origin h_o and direction a_o are fixed in the shoulder's distal frame; the target, seen
from there, must lie on the ray at the distance |t| from the shoulder, which fixes the
point t' = h_o + λ a_o (λ > 0 the root of |h_o + λ a_o| = |t|). R1 must then carry t' onto
t, which leaves one rotation about the shoulder→target axis: the *hand circle* of Eq. (13),
parameterised by φ (φ = 0 puts the ray origin on the side of the limb's swivel reference).
R1 is built like Eq. (7), from the triangles (0, h_o, t') and (0, h(φ), t) — the same
rotation as the paper's S2·S1 composition (Fig. 11), without its collinearity caveats.

With θ4 free (``elbow=None``) θ4 and φ form the 2-DOF problem of Table 2: without limits
θ4 is the zero pose's (0) when the aim is solvable there, else the solvable θ4 nearest 0
on a grid; with limits (φ, θ4) minimise F = Σ (θᵢ − θᵢ*)² from the best limit-satisfying
grid seed (feasible φ intervals found analytically per θ4, §3.2.4).

Unreachable aims (the target closer to the shoulder than the ray can pass, or behind it)
give the ray passing as close as it can, with the truthful ``aim_error``. Never NaN.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidGoalError, ShapeMismatchError, finite_array, format_value
from ..geometry import vec3 as V
from ..geometry.rotations import check_rotation
from ..goals import AimGoal, batch_size
from .feasible import closest_swivel, feasible_sets, joint_coeffs, midpoint_swivel, within_limits
from .kernel import Circle, Problem, shoulder_at
from .model import REACH_TOLERANCE, Limb, LimbSolution, SwivelStrategy, effector_frame
from .partial import middle_cost
from .rows import padded_intervals
from .unsolvable import central_cost_grad

FloatArray = NDArray[np.float64]


def _perp(v: FloatArray, axis: FloatArray, fallback: FloatArray) -> FloatArray:
    """Unit part of v ⊥ unit axis; ``fallback`` (then any axis) where v ∥ axis."""

    def proj(x: FloatArray) -> tuple[FloatArray, FloatArray]:
        p = x - np.sum(x * axis, axis=-1, keepdims=True) * axis
        return p, np.linalg.norm(p, axis=-1, keepdims=True)

    p, n = proj(v)
    pf, nf = proj(np.broadcast_to(fallback, v.shape))
    alt = np.eye(3)[np.argmin(np.abs(axis), axis=-1)]
    pa, na = proj(alt)
    out = np.where(
        n > 1e-9,
        p / np.where(n > 0, n, 1),
        np.where(nf > 1e-9, pf / np.where(nf > 0, nf, 1), pa / na),
    )
    # Second Gram–Schmidt pass for exact orthogonality.
    out = out - np.sum(out * axis, axis=-1, keepdims=True) * axis
    return V.unit_rows(out)


def aim_error(origin: FloatArray, direction: FloatArray, target: FloatArray) -> FloatArray:
    """Angle (rad) between a ray (origin, unit direction) and the direction from its origin
    to ``target``; 0 when the target is at the origin (the ray passes through it)."""
    to = target - origin
    s = np.linalg.norm(V.cross_rows(direction, to), axis=-1)
    c = np.sum(direction * to, axis=-1)
    out: FloatArray = np.where(np.linalg.norm(to, axis=-1) <= 1e-12, 0.0, np.arctan2(s, c))
    return out


def _hand(
    limb: Limb, theta: FloatArray, wrist: FloatArray, goal: AimGoal
) -> tuple[FloatArray, FloatArray]:
    """Ray origin h_o and direction a_o in the shoulder's distal frame (R1 = I), (N, 3)."""
    eye = np.broadcast_to(np.eye(3), theta.shape + (3, 3))
    fk = effector_frame(limb, eye, theta, wrist)  # (N, 4, 4) effector frame with R1 = I
    origin = np.asarray(goal.origin)
    h_o = (
        fk[:, :3, 3]
        + (fk[:, :3, :3] @ np.broadcast_to(origin, theta.shape + (3,))[..., None])[..., 0]
    )
    a_o = (fk[:, :3, :3] @ np.broadcast_to(np.asarray(goal.axis), theta.shape + (3,))[..., None])[
        ..., 0
    ]
    return h_o, a_o


def _aim_point(
    h_o: FloatArray, a_o: FloatArray, t_len: FloatArray, near: bool = False
) -> tuple[FloatArray, FloatArray]:
    """t' = h_o + λ a_o with |t'| = |t|: λ the far root (or the near one, ``near``) of
    λ² + 2λ h_o·a_o + |h_o|² − |t|² = 0, which must be ≥ 0 (the target ahead of the ray's
    origin); where there is none, the point of closest approach (λ = max(−h_o·a_o, 0)).
    Returns (t', solvable)."""
    b = np.sum(h_o * a_o, axis=-1)
    disc = b * b - (np.sum(h_o * h_o, axis=-1) - t_len**2)
    root = np.sqrt(np.maximum(disc, 0.0))
    lam = -b - root if near else -b + root
    ok = (disc >= 0.0) & (lam >= 0.0)
    lam = np.where(ok, lam, 0.0)
    pts = h_o + lam[:, None] * a_o
    if not np.all(ok):  # the search of each row is independent: search only these rows
        bad = ~ok
        pts[bad] = _best_unreachable(h_o[bad], a_o[bad], t_len[bad])
    return pts, ok


#: Angles scored at once by :func:`_best_unreachable`'s grid (bounds its temporaries).
_SCORE_BLOCK = 16_384


def _best_unreachable(h_o: FloatArray, a_o: FloatArray, t_len: FloatArray) -> FloatArray:
    """Where no exact aim exists: the point t' on the sphere |t'| = |t| seen from h_o most
    nearly along a_o (max a_o·(t' − h_o)/|t' − h_o|, the least aim error). By symmetry it
    lies in the plane of h_o and a_o: a 1-D search over the angle in that plane (dense
    sampling, then golden section; vectorised over rows)."""
    e1 = V.unit_rows(np.where(np.linalg.norm(h_o, axis=-1, keepdims=True) > 1e-12, h_o, a_o))
    e2 = _perp(a_o, e1, np.eye(3)[np.argmin(np.abs(e1), axis=-1)])
    r = t_len[:, None]

    def score(alpha: FloatArray) -> FloatArray:  # alpha (N, K) → cos(aim error)
        s = np.cos(alpha)[..., None] * e1[:, None] + np.sin(alpha)[..., None] * e2[:, None]
        d = r[:, None] * s - h_o[:, None]
        n = V.norm_rows(d)
        out: FloatArray = np.where(n > 1e-15, np.add.reduce(d * a_o[:, None], axis=-1) / n, -1.0)
        return out

    grid = np.linspace(-math.pi, math.pi, 721)[None, :-1] + np.zeros((len(h_o), 1))
    # the grid's scores in blocks of columns (each score depends on its own angle only):
    # the same values with temporaries of at most _SCORE_BLOCK angles instead of N × 720
    cols = max(1, _SCORE_BLOCK // len(h_o))
    k = np.argmax(
        np.concatenate(
            [score(np.ascontiguousarray(grid[:, i : i + cols])) for i in range(0, 720, cols)],
            axis=1,
        ),
        axis=1,
    )
    step = 2 * math.pi / 720
    a = grid[np.arange(len(h_o)), k] - step
    b = a + 2 * step
    g = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(60):
        x1, x2 = b - g * (b - a), a + g * (b - a)
        f = score(np.stack([x1, x2], axis=1))
        left = f[:, 0] > f[:, 1]
        b = np.where(left, x2, b)
        a = np.where(left, a, x1)
    al = 0.5 * (a + b)[:, None]
    out: FloatArray = r * (np.cos(al) * e1 + np.sin(al) * e2)
    return out


def _frames(limb: Limb, h_o: FloatArray, t_loc: FloatArray, target: FloatArray) -> Any:
    """The hand-circle frames as a core.limb._Circle (arrays (N,)), so that R1(φ), the
    limits coefficients and feasible intervals reuse the limb machinery."""

    ref = np.asarray(limb.swivel_reference)
    x_r = V.unit_rows(np.where(np.linalg.norm(t_loc, axis=-1, keepdims=True) > 1e-12, t_loc, h_o))
    y_r = _perp(h_o, x_r, np.asarray(limb.a)[:3, 3])
    z_r = V.cross_rows(x_r, y_r)
    t_len = np.linalg.norm(target, axis=-1, keepdims=True)
    n = np.where(t_len > 1e-12, target / np.where(t_len > 0, t_len, 1), x_r)
    u = _perp(np.broadcast_to(ref, n.shape), n, y_r)
    v = V.cross_rows(n, u)
    ci = Circle()
    cols = lambda a: (a[:, 0], a[:, 1], a[:, 2])  # noqa: E731
    ci.x_r, ci.y_r, ci.z_r, ci.n, ci.u, ci.v = map(cols, (x_r, y_r, z_r, n, u, v))
    return ci


def solve_aim(
    limb: Limb,
    goal: AimGoal,
    *,
    elbow: ArrayLike | None,
    wrist: ArrayLike | None,
    swivel: ArrayLike | None,
    elbow_target: ArrayLike | None,
    strategy: Any,
) -> LimbSolution:
    """Solve an aim goal (see the module docstring and :func:`core.limb.solve_limb`)."""

    if elbow_target is not None:
        return _toward_elbow(limb, goal, elbow, wrist, elbow_target, strategy)
    n = batch_size(goal)
    single = n is None
    sizes: dict[str, int | None] = {"goal": n}
    w = np.eye(3) if wrist is None else finite_array(wrist, "wrist", InvalidGoalError)
    if wrist is not None:
        if w.ndim not in (2, 3) or w.shape[-2:] != (3, 3):
            raise InvalidGoalError(f"wrist must be a rotation (3, 3) or (N, 3, 3), got {w.shape}")
        check_rotation(w, name="wrist", error=InvalidGoalError)
        sizes["wrist"] = None if w.ndim == 2 else int(w.shape[0])
    th = None if elbow is None else finite_array(elbow, "elbow", InvalidGoalError)
    if th is not None:
        if th.ndim > 1 or not np.all(np.isfinite(th)):
            raise InvalidGoalError(
                f"elbow must be a finite scalar or (N,) array, got {format_value(elbow)}"
            )
        sizes["elbow"] = None if th.ndim == 0 else len(th)
    sw = None if swivel is None else finite_array(swivel, "swivel", InvalidGoalError)
    if sw is not None:
        if sw.ndim > 1 or not np.all(np.isfinite(sw)):
            raise InvalidGoalError(
                f"swivel must be a finite scalar or (N,), got {format_value(swivel)}"
            )
        sizes["swivel"] = None if sw.ndim == 0 else len(sw)
    batched = {k: v for k, v in sizes.items() if v is not None}
    if len(set(batched.values())) > 1:
        raise ShapeMismatchError(f"batch sizes must agree, got {batched}")
    nb = next(iter(batched.values())) if batched else 1
    if nb == 0:
        raise InvalidGoalError(
            f"an aim solve needs at least one goal; got an empty batch ({batched})"
        )
    target = np.broadcast_to(np.asarray(goal.target), (nb, 3))
    goal_b = AimGoal(
        target,
        np.broadcast_to(np.asarray(goal.axis), (nb, 3)),
        np.broadcast_to(np.asarray(goal.origin), (nb, 3)),
    )
    wb = np.broadcast_to(w, (nb, 3, 3))
    phi_d = np.broadcast_to(0.0 if sw is None else sw, (nb,)).astype(np.float64)
    if th is not None:
        theta = np.broadcast_to(th, (nb,)).astype(np.float64)
        out = _solve_fixed_elbow(limb, goal_b, theta, wb, phi_d, strategy)
    else:
        out = _solve_free_elbow(limb, goal_b, wb, phi_d, strategy)
    if single and not batched:
        return out[0]
    return out


def _toward_elbow(limb: Limb, goal: AimGoal, elbow: ArrayLike | None, wrist: ArrayLike | None,
                  elbow_target: ArrayLike, strategy: Any) -> LimbSolution:
    """An aim goal whose swivel comes from an elbow target (as §3.2.2 gives a position
    goal's): solved once at φ = 0, which fixes θ4 and the hand circle; every pose of that
    circle is the φ = 0 one turned about the shoulder → target axis (R1 carries t' onto
    t and the circle turns about t), so the elbow nearest the target is the one turned by
    the angle between the two, about that axis, in the plane normal to it. Solved again
    with θ4 fixed at that φ (with limits: the feasible φ nearest it)."""
    p = finite_array(elbow_target, "elbow_target", InvalidGoalError)
    if p.shape[-1:] != (3,) or p.ndim > 2:
        raise InvalidGoalError(f"elbow_target must be (3,) or (N, 3), got {p.shape}")
    first = solve_aim(limb, goal, elbow=elbow, wrist=wrist, swivel=None, elbow_target=None,
                      strategy=strategy)
    n = V.unit_rows(np.asarray(goal.target, dtype=np.float64))
    e0 = limb.elbow_position(first.shoulder)

    def across(v: FloatArray) -> FloatArray:
        out: FloatArray = v - np.sum(v * n, axis=-1, keepdims=True) * n
        return out

    a, b = across(e0), across(np.broadcast_to(p, e0.shape))
    turn = np.arctan2(np.sum(n * np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))
    return solve_aim(limb, goal, elbow=first.elbow, wrist=wrist,
                     swivel=np.asarray(first.swivel) + turn, elbow_target=None,
                     strategy=strategy)


def _solve_fixed_elbow(
    limb: Limb,
    goal: AimGoal,
    theta: FloatArray,
    wrist: FloatArray,
    phi_d: FloatArray,
    strategy: Any,
) -> LimbSolution:
    """θ4 given: the analytic hand circle (Eq. 13); with limits, the feasible φ intervals
    of the shoulder (the elbow and wrist are fixed, so they only pass or fail)."""

    target = np.asarray(goal.target)
    t_len = np.linalg.norm(target, axis=-1)
    h_o, a_o = _hand(limb, theta, wrist, goal)
    t_loc, _ = _aim_point(h_o, a_o, t_len)
    ci = _frames(limb, h_o, t_loc, target)
    ci.theta = theta
    nb = len(theta)
    limits = limb.limits
    intervals = np.tile(np.array([[[-math.pi, math.pi]]]), (nb, 1, 1))
    phi = V.wrap(phi_d)
    if limits is not None:
        pr = Problem()
        pr.RW, pr.R2 = None, V.mat_of(wrist)
        sh, wr = joint_coeffs(V.ArrayOps, limb.constants, pr, ci, nb)
        feas = feasible_sets(limits, sh, wr, theta)
        # Both roots ahead of the ray's origin: a second circle of exact aims. Use it
        # where the far root's circle has no φ within the limits but the near one has.
        t_near, ok_near = _aim_point(h_o, a_o, t_len, near=True)
        lacking = np.isnan(feas.all[:, 0, 0]) & ok_near
        if np.any(lacking):
            ci2 = _frames(limb, h_o, t_near, target)
            ci2.theta = theta
            sh2, wr2 = joint_coeffs(V.ArrayOps, limb.constants, pr, ci2, nb)
            feas2 = feasible_sets(limits, sh2, wr2, theta)
            use2 = lacking & ~np.isnan(feas2.all[:, 0, 0])
            if np.any(use2):
                for name in ("x_r", "y_r", "z_r", "n", "u", "v"):
                    a1, a2 = getattr(ci, name), getattr(ci2, name)
                    setattr(
                        ci, name, tuple(np.where(use2, y, x) for x, y in zip(a1, a2, strict=True))
                    )
                sh, wr = joint_coeffs(V.ArrayOps, limb.constants, pr, ci, nb)
                feas = feasible_sets(limits, sh, wr, theta)
        intervals = feas.all
        if strategy is SwivelStrategy.MIDPOINT:
            chosen, has = midpoint_swivel(intervals)
        else:
            chosen, has = closest_swivel(intervals, phi_d)
        if not np.all(has):  # keep the shoulder limits if only the wrist/elbow fail
            sh_phi, sh_has = closest_swivel(feas.shoulder, phi_d)
            chosen = np.where(has, chosen, np.where(sh_has, sh_phi, phi))
        phi = np.where(np.isnan(chosen), phi, chosen)
    r1 = V.mat_array(shoulder_at(V.ArrayOps, ci, phi), nb)
    return _solution(limb, goal, r1, theta, wrist, phi, intervals)


def _solution(
    limb: Limb,
    goal: AimGoal,
    r1: FloatArray,
    theta: FloatArray,
    wrist: FloatArray,
    phi: FloatArray,
    intervals: FloatArray,
) -> LimbSolution:
    """A batched LimbSolution with the aim error measured by forward kinematics."""

    fk = effector_frame(limb, r1, theta, wrist)
    o = fk[:, :3, 3] + (fk[:, :3, :3] @ np.asarray(goal.origin)[..., None])[..., 0]
    d = (fk[:, :3, :3] @ np.asarray(goal.axis)[..., None])[..., 0]
    err = aim_error(o, d, np.asarray(goal.target))
    within = within_limits(limb.limits, r1, theta, wrist)
    return LimbSolution(
        shoulder=r1,
        elbow=theta,
        wrist=np.array(wrist),
        swivel=V.wrap(phi),
        reachable=err <= REACH_TOLERANCE,
        within_limits=within,
        position_error=np.zeros(len(theta)),
        orientation_error=err,
        feasible_swivel=intervals,
        aim_error=err,
    )


def _solve_free_elbow(
    limb: Limb, goal: AimGoal, wrist: FloatArray, phi_d: FloatArray, strategy: Any
) -> LimbSolution:
    """θ4 free (Table 2): see the module docstring. Per-element search on a θ4 grid,
    vectorised over the grid; then, with limits, F(θ4, φ) minimised by TNC."""

    from scipy.optimize import minimize

    limits = limb.limits
    nb = len(phi_d)
    elo, ehi = (-math.pi, math.pi) if limits is None or limits.elbow is None else limits.elbow
    mid = 0.5 * (elo + ehi) if limits is not None and limits.elbow is not None else 0.0
    grid = np.linspace(elo, ehi, 49)
    grid = grid[np.argsort(np.abs(V.wrap(grid - mid)), kind="stable")]  # nearest mid first
    if limits is None or limits.elbow is None:
        grid = np.concatenate([[0.0], grid])
    rows: list[LimbSolution] = []
    for i in range(nb):  # per element: a vectorised grid over θ4, then a small optimisation
        g = AimGoal(
            np.broadcast_to(np.asarray(goal.target)[i], (len(grid), 3)),
            np.broadcast_to(np.asarray(goal.axis)[i], (len(grid), 3)),
            np.broadcast_to(np.asarray(goal.origin)[i], (len(grid), 3)),
        )
        wg = np.broadcast_to(wrist[i], (len(grid), 3, 3))
        cand = _solve_fixed_elbow(limb, g, grid, wg, np.full(len(grid), phi_d[i]), strategy)
        ok = np.asarray(cand.reachable) & np.asarray(cand.within_limits)
        k = int(np.argmax(ok)) if np.any(ok) else int(np.argmin(cand.aim_error))
        best = cand[k]
        if limits is not None and np.any(ok):
            best = _minimise_f(limb, goal, i, wrist[i], best, limits, minimize)
        rows.append(best)
    out: LimbSolution = _stack(rows, replace)
    return out


def _minimise_f(
    limb: Limb,
    goal: AimGoal,
    i: int,
    wrist: FloatArray,
    seed: Any,
    limits: Any,
    minimize: Any,
) -> Any:
    """Minimise F(θ4, φ) = Σ (θᵢ − θᵢ*)² over (θ4, φ) from a limit-satisfying seed; keep
    the optimum only if it still aims exactly and keeps every limit."""

    g1 = AimGoal(np.asarray(goal.target)[i], np.asarray(goal.axis)[i], np.asarray(goal.origin)[i])
    free_limb = limb.with_limits(None)

    def pose(x: FloatArray) -> Any:
        gb = AimGoal(
            np.broadcast_to(g1.target, (len(x), 3)),
            np.broadcast_to(g1.axis, (len(x), 3)),
            np.broadcast_to(g1.origin, (len(x), 3)),
        )
        return _solve_fixed_elbow(
            free_limb,
            gb,
            x[:, 0].copy(),
            np.broadcast_to(wrist, (len(x), 3, 3)),
            x[:, 1].copy(),
            None,
        )

    def cost(x: FloatArray) -> FloatArray:
        s = pose(x)
        f = middle_cost(limits, s.shoulder, np.asarray(s.elbow), s.wrist)
        return f + 1e3 * np.asarray(s.aim_error) ** 2  # stay on exact aims

    fg = central_cost_grad(cost)

    x0 = np.array([float(seed.elbow), float(seed.swivel)])
    # TNC: no BLAS calls (L-BFGS-B's iterations stall on busy multi-core machines).
    res = minimize(fg, x0, jac=True, method="TNC", options={"maxfun": 100})
    gb = AimGoal(
        np.asarray(g1.target)[None], np.asarray(g1.axis)[None], np.asarray(g1.origin)[None]
    )
    cand = _solve_fixed_elbow(
        limb, gb, np.array([res.x[0]]), wrist[None], np.array([res.x[1]]), None
    )[0]
    if cand.within_limits and cand.aim_error <= 1e-12:
        return cand
    return seed


def _stack(rows: list[Any], replace: Any) -> Any:

    fs = padded_intervals([r.feasible_swivel for r in rows])
    return LimbSolution(
        shoulder=np.array([r.shoulder for r in rows]),
        elbow=np.array([r.elbow for r in rows]),
        wrist=np.array([r.wrist for r in rows]),
        swivel=np.array([r.swivel for r in rows]),
        reachable=np.array([r.reachable for r in rows]),
        within_limits=np.array([r.within_limits for r in rows]),
        position_error=np.zeros(len(rows)),
        orientation_error=np.array([r.aim_error for r in rows]),
        feasible_swivel=fs,
        aim_error=np.array([r.aim_error for r in rows]),
    )
