"""Goals with no feasible swivel angle (Tolani et al. §3.2.4, "Unsolvable problems"): keep
the position exact and minimise the limit violation / orientation error by bounded
optimisation; the small numeric helpers those optimisations share.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..geometry import vec3 as V
from ..geometry.rotations import euler_to_matrix, matrix_to_euler_families
from .feasible import JointCoeffs, feasible_sets, joint_coeffs
from .kernel import Problem, elbow_matrix, solve_circle
from .model import EulerLimits, FloatArray, Limb, LimbLimits, family_violations

_SLSQP_OPTIONS = {"ftol": 1e-15, "maxiter": 200}


def least_violating_swivel(sh: JointCoeffs, lim: EulerLimits | None) -> float:
    """φ minimising the shoulder's limit violation: dense sampling of the circle, then
    dense sampling of ever smaller brackets around the best sample (one vectorised
    evaluation per stage; 720 samples, then 6 stages of 65 shrinking the step 32×, to
    ~3e-12 rad)."""
    if lim is None:
        return 0.0
    phi = np.linspace(-math.pi, math.pi, 721)[:-1]
    step = math.pi / 360
    for stage in range(7):
        viol = family_violations(matrix_to_euler_families(sh.at(phi[None]), lim.order), lim).min(
            axis=-1
        )[0]
        best = float(phi[int(np.argmin(viol))])
        if stage < 6:
            phi = np.linspace(best - step, best + step, 65)
            step /= 32.0
    return float(V.wrap(best))


def euler_box(lim: EulerLimits | None) -> tuple[str, list[tuple[float | None, float | None]]]:
    """A joint's Euler order and per-angle (lower, upper) bounds for :func:`bounded_min`
    ((None, None) for an unlimited angle; no limits: XYZ, all free)."""
    if lim is None:
        return "XYZ", [(None, None)] * 3
    lo, hi = lim.bounds()
    return lim.order, [(lo[i], hi[i]) if lim.limited[i] else (None, None) for i in range(3)]


def bounded_min(
    fg: Callable[[FloatArray], tuple[float, FloatArray]],
    x0: FloatArray,
    bounds: Sequence[tuple[float | None, float | None]],
) -> tuple[FloatArray, float]:
    """Minimise a smooth f with its gradient over a box: scipy's SLSQP. Returns (x, f).

    SLSQP does not call BLAS (why not L-BFGS-B: docs/decisions.md). Its line search may
    step outside the box, where scipy evaluates f at the clipped point and warns; that
    warning is silenced here.
    """

    from scipy.optimize import minimize

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Values in x were outside bounds")
        res = minimize(fg, x0, jac=True, method="SLSQP", bounds=bounds, options=_SLSQP_OPTIONS)
    return np.asarray(res.x, dtype=np.float64), float(res.fun)


def _unsolvable_pose(
    limits: LimbLimits,
    sh: JointCoeffs,
    m: FloatArray,
    rw: FloatArray,
    shoulder_intervals: FloatArray,
    warm: FloatArray | None = None,
) -> tuple[float, FloatArray, FloatArray]:
    """One element: φ and R2 minimising the orientation error within the limits.

    Position stays exact: φ ranges over the shoulder-feasible set A1 ∪ A2 (one bounded
    search per interval) and the wrist's Euler angles over their limits (box bounds), the
    objective being ‖R1(φ)·M·R2(θ5, θ6, θ7) − R_W‖²_F (:func:`bounded_min`). If no φ satisfies
    the shoulder limits, φ minimises the shoulder's violation instead and only the wrist
    is optimised. ``warm`` (φ, θ5, θ6, θ7) from a previous, nearby solve replaces the
    multi-start when its φ lies in one of the intervals. Returns (φ, R2, x).
    """
    wlim = limits.wrist
    order, bounds_w = euler_box(wlim)

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
        total = np.add.reduce  # np.sum over all entries, without its wrapper
        g = np.empty(4)
        g[0] = -2.0 * float(total((cp * ls - sp * lq).T * r2, axis=None))
        g[1 + axes[0]] = -2.0 * float(total(lt * (r2 @ gens[axes[0]]), axis=None))
        g[1 + axes[1]] = -2.0 * float(total(lt * (e21 @ gens[axes[1]] @ e0), axis=None))
        g[1 + axes[2]] = -2.0 * float(total(lt * (e2 @ gens[axes[2]] @ e10), axis=None))
        return 6.0 - 2.0 * float(total(lt * r2, axis=None)), g

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
        phi0 = least_violating_swivel(sh, limits.shoulder)
        x0 = warm[1:] if warm is not None else start_wrist(phi0)
        xw, _ = bounded_min(wrist_only(phi0), x0, bounds_w)
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
        xb, fb = bounded_min(cost_grad, x0, [(a, b), *bounds_w])
        if fb < best_f:
            best_f, best_x = fb, xb
    assert best_x is not None
    return float(V.wrap(best_x[0])), euler_to_matrix(best_x[1:], order), best_x


def unsolvable_element(
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
    c = limb.constants
    te = np.asarray(c.tE)
    aref = V.vec_of(np.asarray(limb.swivel_reference))
    warm: FloatArray | None = None

    def evaluate(
        wc: FloatArray,
    ) -> tuple[tuple[float, float, FloatArray, FloatArray], FloatArray, bool]:
        """Solve for wrist-centre target ``wc``: the pose, tG − W·tE, shoulder set non-empty."""
        nonlocal warm
        pr = Problem()
        pr.n, pr.tbe, pr.RW, pr.R2 = 1, c.tb, V.mat_of(rw), None
        pr.wg = V.vec_of(wc[None])
        pr.goal_p = pr.wg
        ci = solve_circle(V.ArrayOps, c, pr.wg, pr.tbe, aref, limits.elbow)
        sh, wr = joint_coeffs(V.ArrayOps, c, pr, ci, 1)
        theta = float(ci.theta[0])
        sets = feasible_sets(limits, sh, wr, np.array([theta])).shoulder[0]
        m = V.mat_array(elbow_matrix(V.ArrayOps, c, np.array([theta])), 1)[0]
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


def central_cost_grad(cost: Any, h: float = 1e-6, m: int = 2) -> Any:
    """(f, ∇f) of an ``m``-variable batched ``cost`` (rows → values) by central
    differences with step ``h``, in one batch of 2m + 1 rows: x, x + h·eᵢ, x − h·eᵢ."""
    eye = h * np.eye(m)
    steps = np.vstack([np.zeros(m), eye, -eye])

    def fg(x: FloatArray) -> tuple[float, FloatArray]:
        f = cost(x + steps)
        grad: FloatArray = (f[1 : 1 + m] - f[1 + m :]) / (2 * h)
        return float(f[0]), grad

    return fg
