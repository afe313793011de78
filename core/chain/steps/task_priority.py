"""Task-priority steps (Ki & Sheen §7)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..loop import FloatArray, IKSolver, StepState, matvec
from ..registry import register
from ..residuals import RowBlock
from ..settings import Method


def _levels(blocks: tuple[RowBlock, ...]) -> list[NDArray[np.intp]]:
    """Row indices of each priority level, most important first."""
    prios = sorted({blk.priority for blk in blocks})
    out: list[NDArray[np.intp]] = []
    for p in prios:
        rows = [np.arange(blk.rows.start, blk.rows.stop) for blk in blocks if blk.priority == p]
        out.append(np.concatenate(rows).astype(np.intp))
    return out


def budget(dq: FloatArray, delta: FloatArray, max_step: float) -> FloatArray:
    """(b,) largest α ∈ [0, 1] with max |dq + α·delta| ≤ max_step (given
    max |dq| ≤ max_step): the step budget left to a lower priority level. Components of
    ``delta`` below 1e-12 × its largest are rounding noise (e.g. a DOF the level cannot
    move) and do not limit α: their sign is arbitrary, and a DOF already at the bound
    would otherwise stop the whole level."""
    if not math.isfinite(max_step):
        return np.ones(dq.shape[0])
    ad = np.abs(delta)
    if ad.shape[1]:
        ad = np.where(ad > 1e-12 * np.max(ad, axis=1, keepdims=True), ad, 0.0)
    room = max_step - dq * np.sign(delta)
    alpha = np.where(ad > 0.0, room / np.where(ad > 0.0, ad, 1.0), np.inf)
    out: FloatArray = np.clip(np.min(alpha, axis=1, initial=np.inf), 0.0, 1.0)
    return out


#: One level's rows of J and its damped pseudo-inverse Σ g v uᵀ as (J_k, u, g, vᵀ).
_Inverse = tuple[FloatArray, FloatArray, FloatArray, FloatArray]


def _damped_apply(u: FloatArray, gain: FloatArray, vt: FloatArray, r: FloatArray) -> FloatArray:
    """Σ gᵢ vᵢ (uᵢᵀ r) per row: a level's damped pseudo-inverse (u, g, vᵀ) applied to r."""
    return matvec(np.swapaxes(vt, -1, -2), gain * matvec(np.swapaxes(u, -1, -2), r))


@register
class TaskPriorityStep(IKSolver):
    """Ki & Sheen §5–7: strict priorities by null-space projection (module docstring).

    Levels k = 1..L (priority 0 first). Level 1 is Ki & Sheen's exact J_1⁺ (Theorem
    6.19; damped by ``priority_damping`` = c only, §7 Eq. 7.2), so priority 0 converges
    like the pseudoinverse method (quadratically) and is met exactly when reachable.

    Lower levels (k ≥ 2), damping c_k² = c² + κ ‖r_k‖ σ_max(J_k) (κ =
    :attr:`RESIDUAL_DAMPING` = 0.25; r_k = e_k − J_k Δq_{k−1} the level's residual after
    the levels above, in the goals' weighted units, m for positions; σ_max(J_k) the
    largest singular value of the level's unprojected rows, m/rad): Theorem 6.18 solves
    *consistent* equations dX_k = J_k dθ; an unreachable (conflicting) lower goal is a
    nonlinear least-squares problem with a nonzero residual, where the Gauss–Newton
    iteration Δq = Ĵ_k⁺ r_k ignores the curvature term Σ r_i ∇²e_i (~‖r_k‖ × lever arm)
    and, when that exceeds Ĵ_kᵀĴ_k (e.g. the elbow on its swivel circle pulled to a far
    target), oscillates at full ``max_step`` — measured before this damping: Ki & Sheen's
    2-effector chain left tip2 (priority 0) 0.1 off, the arm's hand 7.2e-3 off. The
    damping ∝ ‖r_k‖ (Levenberg–Marquardt with μ ∝ ‖F‖, Fan & Yuan 2005) covers that
    term; it vanishes as r_k → 0, so consistent lower levels keep (near) quadratic
    convergence. It changes the lower levels' step length only, not their fixed point
    (Σ σ/(σ² + c_k²) v uᵀ r_k = 0 ⇔ Ĵ_kᵀ r_k = 0: the least-squares best of e_k in the
    null space of the levels above). κ = 0.1 still oscillated on arm/elbow conflicts;
    0.5 converged too, about twice as slowly.

    Second-order correction (with L ≥ 2 levels; one extra ``state.evaluate`` per
    iteration): a lower level's step lies in the null space of the levels above only to
    first order, so it moves them by O(|Δq|²) — enough to keep priority 0 ~1e-4 off
    while the lower level is still moving, and to make the loop's lexicographic
    objective rise and report STALLED. The levels 1..L−1 are therefore re-solved, in
    priority order with their pseudo-inverses at q (no new SVD), for the residual left at
    q + Δq, and that correction is added to Δq (as in SQP's second-order correction).
    It is not clamped level by level; the loop's ``max_step`` clamp still bounds the
    total. Single-level problems (all goals at one priority) are unaffected.

    Failure mode: a conflicting lower level converges linearly (rate set by κ and the
    curvature), so it ends STALLED (not REACHED) with its residual at the constrained
    optimum to ~1e-10 in ‖e_k‖²; measured with the defaults: Ki & Sheen's chain 83–103
    iterations, the arm/elbow conflict 68, three levels with an unreachable, stretched
    last level ~750 (Ki & Sheen's 3-effector chain). A reachable lower level still
    converges in 7–9 iterations.

    Joint limits (``use_limits`` and a skeleton with limits; a clamping loop in the
    spirit of Baerlocher & Boulic, and of Ki & Sheen's bounded §7 problem, Eq. 7.3–7.5):
    when Δq would take a DOF past a limit, the DOF is *clamped* (Δq_j = limit − q_j, its
    column removed from every level, the levels re-solved for the rest) if priority 0's
    own increment takes it there, else *frozen* for the levels below priority 0 only
    (its direction removed from their projector: a lower level never takes a DOF from
    priority 0); repeated until no DOF is past a limit (≤ 2n passes, each one cascade of
    SVDs). Before, the loop's clip alone cut the lower levels' pushes and left the arm's
    hand 7e-3–7e-2 off in every one of 8 random elbow conflicts on the limited arm;
    with the loop 8/8 and 16/16 (another draw) meet it to 1e-16. Failure mode: the
    lower goal is feasible but not always at its bounded optimum (SLSQP with the bounds:
    equal to 1e-4 in 9 of 16 draws, up to 0.03 m above in the others), since a frozen DOF is
    not released when moving it back inside would help the lower level.
    """

    method = Method.TASK_PRIORITY

    #: Per-level factor of the loop objective (priority k weighs LEVEL_SCALE^(L−1−k)).
    LEVEL_SCALE = 1e6
    #: κ of the lower levels' damping c_k² = c² + κ ‖r_k‖ σ_max(J_k) (class docstring).
    RESIDUAL_DAMPING = 0.25

    def objective(self, e: FloatArray, blocks: tuple[RowBlock, ...]) -> FloatArray:
        levels = _levels(blocks)
        nl = len(levels)
        out = np.zeros(e.shape[0])
        for k, rows in enumerate(levels):
            ek = e[:, rows]
            out += self.LEVEL_SCALE ** (nl - 1 - k) * np.sum(ek * ek, axis=1)
        return out

    def _cascade(
        self,
        state: StepState,
        j_all: FloatArray,
        dq: FloatArray,
        frozen: NDArray[np.bool_] | None = None,
    ) -> tuple[FloatArray, FloatArray, list[_Inverse]]:
        """Δq of the levels in priority order, starting from ``dq`` (the clamped DOFs'
        fixed part; their columns of ``j_all`` are zero), Δq after priority 0 alone, and
        per level the rows' Jacobian and the damped pseudo-inverse Σ g v uᵀ of Ĵ_k as
        (J_k, u, g, vᵀ).
        ``frozen`` (b, n): DOFs the levels below priority 0 may not move (their
        directions are removed from the projector after the first level)."""
        st = state.settings
        b, _, n = j_all.shape
        proj = np.broadcast_to(np.eye(n), (b, n, n)).copy()
        c2 = st.priority_damping**2
        first = dq
        inverses: list[_Inverse] = []
        for k, rows in enumerate(_levels(state.blocks)):
            jk = j_all[:, rows, :]
            smax_k = np.linalg.norm(jk, ord=2, axis=(1, 2)) if jk.size else np.zeros(b)
            jh = jk @ proj
            u, s, vt = np.linalg.svd(jh, full_matrices=False)
            keep = (s > st.svd_cutoff * smax_k[:, None]) & (s > 0.0)
            r = state.e[:, rows] - matvec(jk, dq)
            ck2 = c2
            if k > 0:  # residual-scaled Levenberg–Marquardt damping of the lower levels
                ck2 = c2 + (self.RESIDUAL_DAMPING * np.linalg.norm(r, axis=1) * smax_k)[:, None]
            safe = np.where(keep, s, 1.0)
            gain = np.where(keep, s / (safe * safe + ck2), 0.0)
            inverses.append((jk, u, gain, vt))
            delta = _damped_apply(u, gain, vt, r)
            dq = dq + budget(dq, delta, st.max_step)[:, None] * delta
            vk = vt * keep[:, :, None]
            proj = proj - np.swapaxes(vk, -1, -2) @ vk
            if k == 0:
                first = dq
            if k == 0 and frozen is not None and frozen.any():
                _, sf, vf = np.linalg.svd(proj * frozen[:, :, None], full_matrices=False)
                vf = vf * (sf > 1e-9)[:, :, None]
                proj = proj - np.swapaxes(vf, -1, -2) @ vf
        return dq, first, inverses

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        sk = state.skeleton
        j_all = state.J
        b, _, n = j_all.shape
        dq, first, inverses = self._cascade(state, j_all, np.zeros((b, n)))
        if st.use_limits and sk.has_limits:
            # clamping loop (module docstring): a DOF past a limit is clamped to it for
            # every level when priority 0's own increment takes it there, else frozen
            # for the lower levels only (strict priority: they never restrict level 0)
            lo, hi = sk.lower - state.q, sk.upper - state.q
            locked = np.zeros((b, n), dtype=bool)
            frozen = np.zeros((b, n), dtype=bool)
            for _ in range(2 * n):
                out = ~locked & ((dq < lo - 1e-12) | (dq > hi + 1e-12))
                if not out.any():
                    break
                own = (first < lo - 1e-12) | (first > hi + 1e-12)
                locked |= out & (own | frozen)
                frozen = (frozen | out) & ~locked
                fixed = np.where(locked, np.clip(dq, lo, hi), 0.0)
                j_all = state.J * ~locked[:, None, :]
                dq, first, inverses = self._cascade(state, j_all, fixed, frozen)
        if len(inverses) > 1:
            # second-order correction: the levels above the lowest, re-solved with their
            # pseudo-inverses at q for the residual left at q + Δq
            e_t = state.evaluate(state.q + dq)[0]
            corr = np.zeros((b, n))
            for rows, (jk, u, gain, vt) in zip(_levels(state.blocks)[:-1], inverses, strict=False):
                r = e_t[:, rows] - matvec(jk, corr)
                corr = corr + _damped_apply(u, gain, vt, r)
            dq = dq + corr
        return dq
