"""L-BFGS-B minimisation with goal-path subdivision (Ki & Sheen §3)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np
import scipy.optimize
from numpy.typing import NDArray

from ..loop import FloatArray, IKSolver, StepState
from ..registry import register
from ..residuals import BlockKind
from ..settings import Method, SolveSettings
from ..skeleton import Skeleton
from .common import dof_bounds, goal_joints


@lru_cache(maxsize=64)
def _roots(skeleton: Skeleton) -> tuple[int, ...]:
    """Root joint index of every joint."""
    out: list[int] = []
    for j, jt in enumerate(skeleton.joints):
        out.append(j if jt.parent < 0 else out[jt.parent])
    return tuple(out)


def subdivided_offsets(state: StepState, m: int) -> list[FloatArray]:
    """Residual offsets (b, m_rows) that turn each position target X into Ki & Sheen's
    intermediate Ỹ_i (i = 1..M), then X (offset 0): e_i(q) = e(q) − offset_i. Batched
    over the rows (no Python loop over them)."""
    sk = state.skeleton
    roots = _roots(sk)
    gj = goal_joints(sk, state.goals)
    e = state.e
    offs = [np.zeros_like(e) for _ in range(m)]
    for blk in state.blocks:
        if blk.kind is not BlockKind.POSITION or blk.weight == 0.0:
            continue
        sw = math.sqrt(blk.weight)
        root = roots[gj[blk.goal]]
        o = np.asarray(sk.joints[root].offset)[:3, 3]
        goal = state.goals[blk.goal]
        pos = np.asarray(goal.position)  # type: ignore[union-attr]
        x_t = pos if pos.ndim == 1 else pos[state.rows]
        s = x_t - e[:, blk.rows] / sw  # current point: X − ẽ, (b, 3)
        y_rel, x_rel = s - o, x_t - o + np.zeros_like(s)
        ry = np.sqrt(np.sum(y_rel * y_rel, axis=-1))
        rx = np.sqrt(np.sum(x_rel * x_rel, axis=-1))
        uy = y_rel / np.where(ry < 1e-12, 1.0, ry)[:, None]
        ux = x_rel / np.where(rx < 1e-12, 1.0, rx)[:, None]
        theta = np.arccos(np.clip(np.sum(uy * ux, axis=-1), -1.0, 1.0))
        # a straight line when a radius vanishes or Y − O and X − O are (anti)parallel
        line = (ry < 1e-12) | (rx < 1e-12) | (theta < 1e-9) | (math.pi - theta < 1e-9)
        sin_t = np.where(line, 1.0, np.sin(theta))
        for i in range(1, m + 1):
            t = i / (m + 1)
            d = (np.sin((1 - t) * theta)[:, None] * uy + np.sin(t * theta)[:, None] * ux) / sin_t[
                :, None
            ]
            yi = np.where(
                line[:, None], y_rel + t * (x_rel - y_rel), (t * rx + (1 - t) * ry)[:, None] * d
            )
            offs[i - 1][:, blk.rows] = sw * (x_rel - yi)
    return offs


def _lbfgsb(
    fun: Callable[[FloatArray, FloatArray], tuple[float, FloatArray]],
    x0: FloatArray,
    lo: FloatArray,
    hi: FloatArray,
    shifts: list[FloatArray],
    st: SolveSettings,
) -> FloatArray:
    """Minimise ``fun(x, shift)`` from ``x0`` within [lo, hi] for each shift in turn
    (scipy L-BFGS-B, ``maxcor``/``maxiter`` from the settings). ``fun`` may raise
    :class:`_GoalsMet` (at an x that meets every goal): the minimisation stops there.
    With no DOF there is nothing to minimise (scipy rejects empty bounds): ``x0``."""
    if x0.size == 0:
        return x0
    bounds = scipy.optimize.Bounds(
        np.where(np.isfinite(lo), lo, -np.inf), np.where(np.isfinite(hi), hi, np.inf)
    )
    x = x0
    for shift in shifts:
        try:
            res = scipy.optimize.minimize(
                fun,
                x,
                args=(shift,),
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
                options={
                    "maxcor": st.lbfgsb_memory,
                    "maxiter": st.lbfgsb_iterations,
                    "ftol": 0.0,
                    "gtol": 0.0,
                },
            )
            x = np.clip(np.asarray(res.x, dtype=np.float64), lo, hi)
        except _GoalsMet as met:
            x = met.x
    return x


class _GoalsMet(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by the LBFGSB objective at an x (within the bounds) where every goal is met
    to ``tolerance``: the loop's next test reports REACHED there, so the remaining
    L-BFGS-B iterations would only cost time (with ``ftol = gtol = 0`` scipy otherwise
    runs all ``lbfgsb_iterations`` of them)."""

    def __init__(self, x: FloatArray) -> None:
        super().__init__()
        self.x = x


@register
class LBFGSBStep(IKSolver):
    """Ki & Sheen §3: bounded Tikhonov-regularised least squares by L-BFGS-B (module
    docstring). One outer iteration = up to ``lbfgsb_iterations`` L-BFGS-B iterations
    per row."""

    method = Method.LBFGSB
    #: scipy's L-BFGS-B runs row by row, driven from Python: threads only contend for
    #: the GIL (docs/decisions.md).
    auto_threads = False

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        sk = state.skeleton
        goals = state.goals
        lo, hi = dof_bounds(state)
        b, n = state.q.shape
        ref = np.zeros(n) if st.q_rest is None else np.asarray(st.q_rest, dtype=np.float64)
        g2 = st.tikhonov**2
        shifts: list[FloatArray] = []
        if st.subdivisions > 0 and state.iteration == 0:
            shifts = subdivided_offsets(state, st.subdivisions)
        shifts.append(np.zeros_like(state.e))
        memo: dict[str, object] = {}
        final = shifts[-1]
        active = np.flatnonzero([g.weight > 0.0 for g in goals])
        tol = st.tolerance

        def objective(
            x: FloatArray, shift: FloatArray, rows: NDArray[np.intp]
        ) -> tuple[float, FloatArray]:
            """F at x (n,) and its gradient (n,), on vectors (one row: dot products
            instead of batched reductions); ``shift`` (1, m). Raises _GoalsMet where the
            final targets are met (inside the bounds: scipy evaluates only there)."""
            ev = sk.evaluate(x[None], goals, rows=rows, memo=memo)
            assert ev.J is not None
            if shift.base is final or shift is final:
                if active.size and float(ev.goal_error[0, active].max()) <= tol:
                    raise _GoalsMet(x.copy())
            e = ev.e[0] - shift[0]
            d = x - ref
            f = float(e @ e + g2 * (d @ d))
            grad: FloatArray = -2.0 * (e @ ev.J[0]) + (2.0 * g2) * d
            return f, grad

        out = np.zeros_like(state.q)
        for r in range(b):
            rows = state.rows[r : r + 1]

            def fun(
                x: FloatArray, shift: FloatArray, rows: NDArray[np.intp] = rows
            ) -> tuple[float, FloatArray]:
                return objective(x, shift, rows)

            x = _lbfgsb(fun, state.q[r], lo[r], hi[r], [sh[r : r + 1] for sh in shifts], st)
            out[r] = x - state.q[r]
        return out
