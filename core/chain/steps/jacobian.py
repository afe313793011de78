"""Jacobian transpose and pseudo-inverse steps (Buss 2009), with the null-space objectives."""

from __future__ import annotations

import threading

import numpy as np
from numpy.typing import NDArray

from ..loop import FloatArray, IKSolver, IntArray, StepState, matvec
from ..registry import register
from ..settings import Method, NullSpace


@register
class JacobianTransposeStep(IKSolver):
    """Buss §3: Δq = α Jᵀe, with a Barzilai–Borwein step length.

    Buss's α = ⟨e, JJᵀe⟩ / ⟨JJᵀe, JJᵀe⟩ (0 when JJᵀe = 0; the step that minimises
    ‖e − αJJᵀe‖ for the linearised error) is the exact line search of steepest descent
    on ½‖e‖², which zig-zags: on Buss's Y it reached none of 20 random reachable targets
    (from 0.3 rad away) in 200 iterations. From the second iteration on, the step is
    Barzilai & Borwein's (1988) α_BB = ⟨s, s⟩ / ⟨s, y⟩ with s = q_k − q_{k−1} and
    y = g_{k−1} − g_k the change of the descent direction g = Jᵀe (the gradient of ½‖e‖²
    is −g): the secant estimate of the inverse curvature along the last step. It is not
    monotone (the loop keeps the best iterate; :attr:`stall_window` 100); where
    ⟨s, y⟩ ≤ 0 (negative curvature) or the step is zero, Buss's α is used. The previous q
    and g are kept per batch row for the iterations of one solve. Measured on 20 random
    reachable targets 0.3 rad (σ) away, budget 1,000: Y 20/20 (median 115 iterations),
    double-Y 20/20 (310), 7-DOF arm position 20/20 (26), pose 19/20 (160; the miss is
    near a singularity, σ_min/σ_max ≈ 2e-3, where first-order steps crawl), 12-joint
    chain 20/20 (23). BB's shorter step ⟨s, y⟩/⟨y, y⟩ and alternating the two were
    measured too: faster on the double-Y (265 iterations) but 16–17/20 on the arm's
    poses. Default budget 3,000 iterations (≈ 0.2 s on one problem): on 100 arm pose
    targets 92 % are reached within 1,000, 98 % within 3,000 (5,000: no more)."""

    method = Method.JACOBIAN_TRANSPOSE
    #: Per thread of the solve: the rows, q and g of the previous iteration (created by
    #: start(); None in step_once, which then takes Buss's α).
    _history: dict[int, tuple[IntArray, FloatArray, FloatArray]] | None = None

    def start(self, rows: int, n: int) -> None:
        self._history = {}

    #: BB steps are not monotone: the error may stay above its best for tens of
    #: iterations while converging (a 20-iteration window stalled 5 of 20 reachable
    #: double-Y targets).
    stall_window = 100
    default_max_iterations = 3000

    def step(self, state: StepState) -> FloatArray:
        g = matvec(np.swapaxes(state.J, -1, -2), state.e)
        history = self._history
        bb: FloatArray | None = None
        ok: NDArray[np.bool_] | None = None
        if history is not None:
            # per thread (a threaded solve's chunks share this instance): the rows, q and
            # g of the previous iteration; rows only ever drop out (compaction keeps order)
            key = threading.get_ident()
            prev = history.get(key)
            rows = state.rows
            if prev is not None and state.iteration > 0:
                r0, q_p, g_p = prev
                if len(r0) != len(rows):
                    pick = np.searchsorted(r0, rows)
                    q_p, g_p = q_p[pick], g_p[pick]
                s = state.q - q_p
                sy = np.add.reduce(s * (g_p - g), axis=-1)
                ok = sy > 0.0
                bb = np.add.reduce(s * s, axis=-1) / np.where(ok, sy, 1.0)
            history[key] = (rows, state.q, g)
        if bb is not None and ok is not None and ok.all():
            out: FloatArray = bb[:, None] * g
            return out
        # Buss's α (first iteration, step_once, or negative curvature)
        jg = matvec(state.J, g)
        num = np.sum(state.e * jg, axis=-1)
        den = np.sum(jg * jg, axis=-1)
        alpha = np.where(den > 0.0, num / np.where(den > 0.0, den, 1.0), 0.0)
        if bb is not None and ok is not None:
            alpha = np.where(ok, bb, alpha)
        out = alpha[:, None] * g
        return out


def svd(
    j: FloatArray, cutoff: float
) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_]]:
    """Thin SVD of stacked J and the mask of singular values kept (σ > cutoff · σ_max)."""
    u, s, vt = np.linalg.svd(j, full_matrices=False)
    smax = s[:, :1] if s.shape[1] else np.zeros((s.shape[0], 1))
    keep: NDArray[np.bool_] = (s > cutoff * smax) & (s > 0.0)
    return u, s, vt, keep


@register
class PseudoinverseStep(IKSolver):
    """Buss §4 / Eq. 13: Δq = J⁺e + (I − J⁺J)φ with J⁺ = Σ σᵢ⁻¹ vᵢuᵢᵀ over σᵢ > cutoff·σ_max;
    φ from ``settings.null_space`` (Eq. 7, Liégeois). The projector uses the same
    singular vectors as J⁺, so the secondary motion leaves J·Δq unchanged."""

    method = Method.PSEUDOINVERSE
    supports_null_space = True

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        u, s, vt, keep = svd(state.J, st.svd_cutoff)
        inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
        ute = matvec(np.swapaxes(u, -1, -2), state.e)
        v = np.swapaxes(vt, -1, -2)
        dq = matvec(v, inv * ute)
        phi = _null_space_objective(state)
        if phi is not None:
            dq = dq + phi - matvec(v, keep * matvec(vt, phi))
        return dq


def _null_space_objective(state: StepState) -> FloatArray | None:
    st = state.settings
    if st.null_space is NullSpace.NONE:
        return None
    q = state.q
    if st.null_space is NullSpace.REST_POSE:
        rest = np.zeros(q.shape[1]) if st.q_rest is None else np.asarray(st.q_rest)
        out: FloatArray = st.null_space_gain * (rest - q)
        return out
    lo, hi = state.skeleton.lower, state.skeleton.upper
    finite = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    mid = np.where(finite, 0.5 * (lo + hi), 0.0)
    rng = np.where(finite, hi - lo, 1.0)
    grad = np.where(finite, 2.0 * (q - mid) / (rng * rng), 0.0) / max(q.shape[1], 1)
    out = -st.null_space_gain * grad
    return out
