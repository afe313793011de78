"""Task-priority steps (Ki & Sheen §7)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import scipy.optimize
from numpy.typing import NDArray

from ...goals import Goal
from ..loop import (
    FloatArray,
    IKSolver,
    IntArray,
    LoopOutput,
    StepState,
    clamp_max_abs,
    lexicographic_less,
    matvec,
)
from ..registry import register
from ..residuals import BlockKind, Evaluation, RowBlock
from ..settings import Method, SolveSettings, StopReason
from ..skeleton import Skeleton


def _levels(blocks: tuple[RowBlock, ...]) -> list[NDArray[np.intp]]:
    """Row indices of each priority level, most important first."""
    prios = sorted({blk.priority for blk in blocks})
    out: list[NDArray[np.intp]] = []
    for p in prios:
        rows = [np.arange(blk.rows.start, blk.rows.stop) for blk in blocks if blk.priority == p]
        out.append(np.concatenate(rows).astype(np.intp))
    return out


def _level_slices(
    blocks: tuple[RowBlock, ...],
) -> tuple[tuple[slice | NDArray[np.intp], bool], ...]:
    """:func:`_level_slices_of` as a tuple, its index arrays read-only (it may be kept:
    :meth:`TaskPriorityStep._levels`)."""
    out = tuple(_level_slices_of(blocks))
    for rows, _ in out:
        if isinstance(rows, np.ndarray):
            rows.setflags(write=False)
    return out


def _level_slices_of(
    blocks: tuple[RowBlock, ...],
) -> list[tuple[slice | NDArray[np.intp], bool]]:
    """:func:`_levels` with each level whose rows are one ascending run as a slice (its
    rows of e and J are then views, not copies), and whether the level is factorised by
    LAPACK's SVD rather than :func:`thin_svd`: levels with an aim block, whose Jacobian
    has a singular value ∝ the aim's error (:func:`~core.chain.residuals.aim_residual`
    along the ray) that crosses thin_svd's SVD band as the aim converges, so that the
    Gram path would be paid on top of the SVD in most rows (measured on the humanoid's
    whole-body solves: docs/decisions.md)."""
    prios = sorted({blk.priority for blk in blocks})
    out: list[tuple[slice | NDArray[np.intp], bool]] = []
    for p in prios:
        level = [blk for blk in blocks if blk.priority == p]
        spans = [blk.rows for blk in level]
        aim = any(blk.kind is BlockKind.AIM for blk in level)
        if all(a.stop == b.start for a, b in zip(spans, spans[1:], strict=False)):
            out.append((slice(spans[0].start, spans[-1].stop), aim))
        else:
            out.append((np.concatenate([np.arange(r.start, r.stop) for r in spans]), aim))
    return out


def _factor(a: FloatArray, cutoff: float, exact: bool) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(u, s, vᵀ) of stacked a: LAPACK's thin SVD if ``exact``, else :func:`thin_svd`."""
    if exact:
        out: tuple[FloatArray, FloatArray, FloatArray] = np.linalg.svd(a, full_matrices=False)
        return out
    return thin_svd(a, cutoff)


def budget(dq: FloatArray, delta: FloatArray, max_step: float) -> FloatArray:
    """(b,) largest α ∈ [0, 1] with max |dq + α·delta| ≤ max_step (given
    max |dq| ≤ max_step): the step budget left to a lower priority level. Components of
    ``delta`` below 1e-12 × its largest are rounding noise (e.g. a DOF the level cannot
    move) and do not limit α: their sign is arbitrary, and a DOF already at the bound
    would otherwise stop the whole level."""
    if not math.isfinite(max_step):
        return np.ones(dq.shape[0])
    # the whole step fits (with a margin far above rounding): α = 1 in every row, as the
    # general formula below gives (every component's room ≥ its |delta|)
    full = dq + delta
    if not full.size or np.fmax.reduce(np.abs(full, out=full), axis=None) <= max_step * (
        1.0 - 1e-9
    ):
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

#: :func:`thin_svd`: a row's Gram eigenvalues must lie below CLEAN_ZERO · cutoff² · λ_max
#: (zero to working precision, dropped by the cutoff) or above both CLEAN_CONDITION⁻² ·
#: λ_max (the kept part's condition ≤ 1e3) and cutoff² · λ_max / CLEAN_ZERO (clear of
#: the cutoff) for the Gram factorisation; other rows get LAPACK's SVD.
CLEAN_ZERO = 0.1
CLEAN_CONDITION = 1e3


def thin_svd(a: FloatArray, cutoff: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``np.linalg.svd(a, full_matrices=False)`` of stacked a (b, m, n) for the cascade's
    use: (u, s, vᵀ), s descending, where only the components with σ > ``cutoff`` · σ_max
    are read (the others may have zero vectors).

    A row is factorised through the eigen-decomposition of its Gram matrix (A Aᵀ for
    m ≤ n, AᵀA otherwise; A Aᵀ = U Σ² Uᵀ, V = Aᵀ U Σ⁻¹), about 2.5× cheaper than LAPACK's
    SVD of a small wide matrix, when that is accurate: eigh's eigenvalues carry an
    absolute error of a few ε·λ_max, so a row whose eigenvalues are each either ≤
    :data:`CLEAN_ZERO` · cutoff² · λ_max (σ below the cutoff by a wide margin: a zero
    singular value to working precision) or ≥ λ_max / :data:`CLEAN_CONDITION`² (the kept
    part's condition κ ≤ 1e3) and ≥ cutoff² · λ_max / CLEAN_ZERO (clear of the cutoff)
    keeps the same components, its singular values and pseudo-inverse equal to the
    SVD's within ~ε·κ² relative (≤ 1e-10; measured ≤ 1e-14 for κ ≈ 5, 1e-9 for κ ≈
    5e3). Every other row (a singular value near the cutoff or a worse-conditioned kept
    part) is factorised by ``np.linalg.svd`` itself. Results of the methods that use it
    differ from an SVD's by that much per step, not in what they converge to."""
    b, m, n = a.shape
    k = min(m, n)
    if not k:
        return np.linalg.svd(a, full_matrices=False)
    at = np.swapaxes(a, -1, -2)
    wide = m <= n
    lam_up, w_up = np.linalg.eigh(a @ at if wide else at @ a)  # (ascending)
    lam = lam_up[:, ::-1]  # descending, like the SVD
    w = w_up[:, :, ::-1]
    top = lam[:, :1]
    zero = lam <= (CLEAN_ZERO * cutoff * cutoff) * top
    # kept: well conditioned, and clear of the cutoff (a large user cutoff)
    kept = lam >= top * max(1.0 / CLEAN_CONDITION**2, cutoff * cutoff / CLEAN_ZERO)
    clean = np.all(zero | kept, axis=1)
    s = np.sqrt(np.maximum(lam, 0.0))
    inv = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, s))
    # (the products with eigh's own columns, reversed after: a product with the reversed
    # view would leave BLAS for numpy's element loop, several times slower)
    if wide:  # w = U (m, m); V = Aᵀ U Σ⁻¹
        u = w
        vt = (np.swapaxes(w_up, -1, -2) @ a)[:, ::-1] * inv[:, :, None]
    else:  # w = V (n, n); U = A V Σ⁻¹
        vt = np.swapaxes(w, -1, -2)
        u = (a @ w_up)[:, :, ::-1] * inv[:, None, :]
    if not clean.all():
        dirty = np.flatnonzero(~clean)
        u[dirty], s[dirty], vt[dirty] = np.linalg.svd(a[dirty], full_matrices=False)
    return u, s, vt


def _norm2(a: FloatArray) -> FloatArray:
    """(b,) spectral norms σ_max of stacked a (b, m, n), from the largest eigenvalue of
    the smaller Gram matrix."""
    b, m, n = a.shape
    if not a.size:
        return np.zeros(b)
    at = np.swapaxes(a, -1, -2)
    lam = np.linalg.eigvalsh(a @ at if m <= n else at @ a)
    out: FloatArray = np.sqrt(np.maximum(lam[:, -1], 0.0))
    return out


def _damped_apply(u: FloatArray, gain: FloatArray, vt: FloatArray, r: FloatArray) -> FloatArray:
    """Σ gᵢ vᵢ (uᵢᵀ r) per row: a level's damped pseudo-inverse (u, g, vᵀ) applied to r."""
    return matvec(np.swapaxes(vt, -1, -2), gain * matvec(np.swapaxes(u, -1, -2), r))


@register
class TaskPriorityStep(IKSolver):
    """Ki & Sheen §5–7: strict priorities by null-space projection (module docstring).

    Levels k = 1..L (priority 0 first). Level 1 is Ki & Sheen's exact J_1⁺ (Theorem
    6.19; damped by ``priority_damping`` = c only, §7 Eq. 7.2), so priority 0 converges
    like the pseudoinverse method (quadratically) and is met exactly when reachable.

    Lower levels (k ≥ 2), damping c_k² = c² + κ ‖r_k‖ σ_max(J_k) (κ per batch row,
    starting at :attr:`RESIDUAL_DAMPING` = 0.25 and adapted like Levenberg–Marquardt's
    μ, see below; r_k = e_k − J_k Δq_{k−1} the level's residual after
    the levels above, in the goals' weighted units, m for positions; σ_max(J_k) the
    largest singular value of the level's unprojected rows, m/rad): Theorem 6.18 solves
    *consistent* equations dX_k = J_k dθ; an unreachable (conflicting) lower goal is a
    nonlinear least-squares problem with a nonzero residual, where the Gauss–Newton
    iteration Δq = Ĵ_k⁺ r_k ignores the curvature term Σ r_i ∇²e_i (~‖r_k‖ × lever arm)
    and, when that exceeds Ĵ_kᵀĴ_k (e.g. the elbow on its swivel circle pulled to a far
    target), oscillates at full ``max_step``. The damping ∝ ‖r_k‖ (Levenberg–Marquardt
    with μ ∝ ‖F‖, Fan & Yuan 2005) covers that term; it vanishes as r_k → 0, so
    consistent lower levels keep (near) quadratic convergence. It changes the lower
    levels' step length only, not their fixed point (Σ σ/(σ² + c_k²) v uᵀ r_k = 0 ⇔
    Ĵ_kᵀ r_k = 0: the least-squares best of e_k in the null space of the levels above).
    κ adapts (Madsen, Nielsen & Tingleff, *Methods for non-linear least squares
    problems*, 2004, §3.2): a step whose
    result (after the correction and restoration below) is lexicographically worse than
    q is rejected and recomputed with κ × :attr:`KAPPA_UP` (at most
    :attr:`KAPPA_TRIES` tries; the last is taken anyway), and after an accepted first
    try κ ÷ :attr:`KAPPA_DOWN` (≥ :attr:`KAPPA_MIN`) for the next iteration (fixed and
    adaptive κ measured: docs/decisions.md).

    Second-order correction (with L ≥ 2 levels; one extra ``state.evaluate`` per
    iteration): a lower level's step lies in the null space of the levels above only to
    first order, so it moves them by O(|Δq|²) — enough to keep priority 0 ~1e-4 off
    while the lower level is still moving, and to make the loop's lexicographic
    objective rise and report STALLED. The levels 1..L−1 are therefore re-solved, in
    priority order with their pseudo-inverses at q (no new SVD), for the residual left at
    q + Δq, and that correction is added to Δq (as in SQP's second-order correction).
    The step is then clamped to ``max_step`` (the loop does not clamp it again,
    :attr:`~core.ik.IKSolver.clamps_itself`) and the levels above the lowest are restored
    (:meth:`_restore`: up to :attr:`RESTORE_PASSES` Gauss–Newton projections at the new
    point until they are within :attr:`RESTORE_FRACTION` × ``tolerance``): the second-
    order correction alone can leave priority 0 above the tolerance. The restoration may
    exceed ``max_step`` by its own (small) length. Single-level problems (all goals at
    one priority) are unaffected.

    Failure mode: a conflicting lower level converges linearly (rate set by κ and the
    curvature), so it ends STALLED (not REACHED) with its residual at the constrained
    optimum to ~1e-10 in ‖e_k‖² (iteration counts: docs/decisions.md).

    Lower-level finish (:meth:`finish`, after the loop, for the rows whose priority 0 is
    met and a lower level is not): the cascade is a local method whose path fixes which
    constrained local optimum a conflicting level ends in, and it stalls slightly above
    that optimum (linear convergence). So each level below priority 0 is minimised in
    turn by SLSQP (Kraft 1988, scipy) with the levels above as equality constraints and
    the limits as bounds, from the loop's result and from the solve's start, and the
    lexicographically best of the three points (:meth:`objective`) is returned
    (:func:`_finish_row`). Cost: two SLSQP runs per such row, in Python row by row;
    single-level solves and rows that meet every level pay nothing (measured:
    docs/decisions.md).

    Joint limits (``use_limits`` and a skeleton with limits; a clamping loop in the
    spirit of Baerlocher & Boulic, and of Ki & Sheen's bounded §7 problem, Eq. 7.3–7.5):
    when Δq would take a DOF past a limit, the DOF is *clamped* (Δq_j = limit − q_j, its
    column removed from every level, the levels re-solved for the rest) if priority 0's
    own increment takes it there, else *frozen* for the levels below priority 0 only
    (its direction removed from their projector: a lower level never takes a DOF from
    priority 0); repeated until no DOF is past a limit (≤ 2n passes, each one cascade of
    SVDs). The loop alone does not always bring a feasible lower goal to its bounded
    optimum (compared with SLSQP with the bounds: docs/decisions.md), since a frozen DOF
    is not released when moving it back inside would help the lower level; such rows get
    the lower-level finish above (SLSQP with the bounds).
    """

    method = Method.TASK_PRIORITY

    #: Per-level factor of the loop objective (priority k weighs LEVEL_SCALE^(L−1−k)).
    LEVEL_SCALE = 1e6
    #: κ of the lower levels' damping c_k² = c² + κ ‖r_k‖ σ_max(J_k) (class docstring).
    RESIDUAL_DAMPING = 0.25
    #: Factor on κ after an iteration that increased the lowest level's error.
    KAPPA_UP = 4.0
    #: Divisor of κ after an iteration that decreased it (down to RESIDUAL_DAMPING).
    KAPPA_DOWN = 2.0
    #: Smallest κ reached by successive decreases.
    KAPPA_MIN = 0.0
    #: Tries per step of the lower levels' Levenberg–Marquardt acceptance test.
    KAPPA_TRIES = 4
    #: Per batch row κ of this solve (:meth:`_kappa`); created on first use.
    _kappas: FloatArray | None = None
    #: The level layout of the block tuple this step last factorised (:meth:`_levels`).
    _kept_levels: tuple[Any, Any] | None = None
    #: Feasibility restoration (:meth:`_restore`): target fraction of ``tolerance`` for
    #: the levels above the lowest after a step, and the most projections per step.
    RESTORE_FRACTION = 0.1
    RESTORE_PASSES = 6

    lexicographic = True
    clamps_itself = True

    def _levels(
        self, blocks: tuple[RowBlock, ...]
    ) -> tuple[tuple[slice | NDArray[np.intp], bool], ...]:
        """:func:`_level_slices` of ``blocks``, kept on the step for the tuple it last saw
        (a solve's iterations share one block tuple: one derivation per solve)."""
        kept = self._kept_levels
        if kept is not None and kept[0] is blocks:
            out: tuple[tuple[slice | NDArray[np.intp], bool], ...] = kept[1]
            return out
        out = _level_slices(blocks)
        if isinstance(blocks, tuple):  # (a list may change: not kept)
            self._kept_levels = (blocks, out)
        return out

    def objective(self, e: FloatArray, blocks: tuple[RowBlock, ...]) -> FloatArray:
        """(b, L) per priority level: 0 where every goal of the level is met (unweighted
        error ≤ ``tolerance``), else the level's ‖e_k‖²; compared lexicographically by
        the loop (:attr:`IKSolver.lexicographic`), so an iterate that meets level 0 is
        always preferred to one that does not, whatever the lower levels' errors, and
        among those the lower levels decide."""
        prios = sorted({blk.priority for blk in blocks})
        if len(prios) == 1:  # one level: the loop compares ‖e‖² as for the other methods
            return super().objective(e, blocks)
        out = np.zeros((e.shape[0], len(prios)))
        tol = self.tolerance
        for k, p in enumerate(prios):
            met = np.ones(e.shape[0], dtype=bool)
            total = np.zeros(e.shape[0])
            for blk in blocks:
                if blk.priority != p or blk.weight == 0.0:
                    continue
                sq = np.sum(e[:, blk.rows] ** 2, axis=1)
                total += sq
                met &= sq <= (tol * tol) * blk.weight
            out[:, k] = np.where(met, 0.0, total)
        return out

    def _cascade(
        self,
        state: StepState,
        j_all: FloatArray,
        dq: FloatArray,
        frozen: NDArray[np.bool_] | None,
        kappa: FloatArray,
        exact: bool = False,
        subset: IntArray | None = None,
    ) -> tuple[FloatArray, FloatArray, list[_Inverse]]:
        """Δq of the levels in priority order, starting from ``dq`` (the clamped DOFs'
        fixed part; their columns of ``j_all`` are zero), Δq after priority 0 alone, and
        per level the rows' Jacobian and the damped pseudo-inverse Σ g v uᵀ of Ĵ_k as
        (J_k, u, g, vᵀ).
        ``frozen`` (b, n): DOFs the levels below priority 0 may not move (their
        directions are removed from the projector after the first level). ``exact``:
        every level by LAPACK's SVD (else :func:`thin_svd` where :func:`_level_slices`
        allows it, equal within 1e-10 relative). ``subset``: the batch rows of ``state``
        that ``j_all``, ``dq``, ``frozen`` and ``kappa`` hold (default all)."""
        st = state.settings
        e_all = state.e if subset is None else state.e[subset]
        b, _, n = j_all.shape
        levels = self._levels(state.blocks)
        last = len(levels) - 1
        # the projector onto the levels' common null space, needed by the levels below
        # the first only (None: the identity)
        proj: FloatArray | None = None
        c2 = st.priority_damping**2
        first = dq
        inverses: list[_Inverse] = []
        for k, (rows, aim) in enumerate(levels):
            jk = j_all[:, rows, :]
            jh = jk if proj is None else jk @ proj
            u, s, vt = _factor(jh, st.svd_cutoff, exact or aim)
            if proj is None:  # Ĵ_k = J_k: its SVD gives σ_max(J_k) too
                smax_k = s[:, 0] if s.shape[1] else np.zeros(b)
            elif exact:
                smax_k = np.linalg.norm(jk, ord=2, axis=(1, 2)) if jk.size else np.zeros(b)
            else:
                smax_k = _norm2(jk)
            keep = (s > st.svd_cutoff * smax_k[:, None]) & (s > 0.0)
            r = e_all[:, rows] - matvec(jk, dq)
            ck2 = c2
            if k > 0:  # residual-scaled Levenberg–Marquardt damping of the lower levels
                ck2 = c2 + (kappa * np.linalg.norm(r, axis=1) * smax_k)[:, None]
            safe = np.where(keep, s, 1.0)
            gain = np.where(keep, s / (safe * safe + ck2), 0.0)
            inverses.append((jk, u, gain, vt))
            delta = _damped_apply(u, gain, vt, r)
            dq = dq + budget(dq, delta, st.max_step)[:, None] * delta
            if k == 0:
                first = dq
            if k == last:
                break
            vk = vt * keep[:, :, None]
            vv = np.swapaxes(vk, -1, -2) @ vk
            proj = np.eye(n) - vv if proj is None else proj - vv
            if k == 0 and frozen is not None and frozen.any():
                _, sf, vf = np.linalg.svd(proj * frozen[:, :, None], full_matrices=False)
                vf = vf * (sf > 1e-9)[:, :, None]
                proj = proj - np.swapaxes(vf, -1, -2) @ vf
        return dq, first, inverses

    def _stored_kappa(self, state: StepState) -> FloatArray:
        """(b,) κ of these rows from the previous iterations of this solve (indexed by
        ``state.rows``; :attr:`RESIDUAL_DAMPING` at first)."""
        if self._kappas is None:  # step_once: one update, no history
            self.start(int(state.rows.max(initial=-1)) + 1, state.q.shape[1])
        assert self._kappas is not None
        out: FloatArray = self._kappas[state.rows]
        return out

    def start(self, rows: int, n: int) -> None:
        self._kappas = np.full(rows, self.RESIDUAL_DAMPING)

    def _limited_cascade(
        self, state: StepState, kappa: FloatArray
    ) -> tuple[FloatArray, list[_Inverse]]:
        """The cascade and, with limits, the clamping loop (class docstring)."""
        st = state.settings
        sk = state.skeleton
        j_all = state.J
        b, _, n = j_all.shape
        dq, first, inverses = self._cascade(state, j_all, np.zeros((b, n)), None, kappa)
        if st.use_limits and sk.has_limits:
            # clamping loop (module docstring): a DOF past a limit is clamped to it for
            # every level when priority 0's own increment takes it there, else frozen
            # for the lower levels only (strict priority: they never restrict level 0).
            # Each pass re-solves only the rows that clamp or freeze a new DOF (the
            # others keep their step: a row's step does not depend on the other rows)
            lo, hi = sk.lower - state.q, sk.upper - state.q
            locked = np.zeros((b, n), dtype=bool)
            frozen = np.zeros((b, n), dtype=bool)
            copied = False
            todo: IntArray | None = None  # the rows still clamping (None: all)
            for _ in range(2 * n):
                sel = slice(None) if todo is None else todo
                lo_t, hi_t, dq_t = lo[sel], hi[sel], dq[sel]
                out = ~locked[sel] & ((dq_t < lo_t - 1e-12) | (dq_t > hi_t + 1e-12))
                new = out.any(axis=1)
                if not new.any():
                    break
                if not new.all():
                    todo = np.flatnonzero(new) if todo is None else todo[new]
                    sel, out = todo, out[new]
                    lo_t, hi_t, dq_t = lo_t[new], hi_t[new], dq_t[new]
                first_t = first[sel]
                own = (first_t < lo_t - 1e-12) | (first_t > hi_t + 1e-12)
                lk = locked[sel] | (out & (own | frozen[sel]))
                fz = (frozen[sel] | out) & ~lk
                locked[sel], frozen[sel] = lk, fz
                fixed = np.where(lk, np.clip(dq_t, lo_t, hi_t), 0.0)
                j_t = state.J[sel] * ~lk[:, None, :]
                dq_t, first_t, inv_t = self._cascade(state, j_t, fixed, fz, kappa[sel], subset=todo)
                if todo is None:  # every row re-solved: its results as they are
                    dq, first, inverses = dq_t, first_t, inv_t
                    continue
                if not copied:  # the arrays may be views of state.J or of one another
                    dq, first = dq.copy(), first.copy()
                    inverses = [tuple(np.array(x) for x in lvl) for lvl in inverses]  # type: ignore[misc]
                    copied = True
                dq[todo], first[todo] = dq_t, first_t
                for lvl, lvl_t in zip(inverses, inv_t, strict=True):
                    for x, x_t in zip(lvl, lvl_t, strict=True):
                        x[todo] = x_t
        return dq, inverses

    def step(self, state: StepState) -> FloatArray:
        levels = _levels(state.blocks)
        kappa = self._stored_kappa(state)
        if len(levels) == 1:
            return self._limited_cascade(state, kappa)[0]
        b, n = state.q.shape
        now = self.objective(state.e, state.blocks)
        result = np.zeros((b, n))
        todo = np.ones(b, dtype=bool)
        tries = np.zeros(b, dtype=np.intp)
        for attempt in range(self.KAPPA_TRIES):
            dq, inverses = self._limited_cascade(state, kappa)
            # second-order correction: the levels above the lowest, re-solved with their
            # pseudo-inverses at q for the residual left at q + Δq
            e_t = state.evaluate(state.q + dq)[0]
            corr = np.zeros((b, n))
            for rows, (jk, u, gain, vt) in zip(levels[:-1], inverses, strict=False):
                r = e_t[:, rows] - matvec(jk, corr)
                corr = corr + _damped_apply(u, gain, vt, r)
            # the max_step clamp before the restoration (the loop's clamp after it would
            # scale the restoring part too and move the higher levels off again)
            cand = clamp_max_abs(dq + corr, state.settings.max_step)
            cand, e_f = self._restore(state, cand, levels[:-1])
            # Levenberg–Marquardt acceptance (class docstring): a step that makes the
            # levels lexicographically worse is retried with κ × KAPPA_UP
            reject = todo & lexicographic_less(now, self.objective(e_f, state.blocks), 1.0)[1]
            if attempt == self.KAPPA_TRIES - 1:
                reject[:] = False
            accept = todo & ~reject
            result[accept] = cand[accept]
            todo &= ~accept
            tries += reject
            if not todo.any():
                break
            kappa = np.where(reject, np.minimum(kappa * self.KAPPA_UP, 1e6), kappa)
        assert self._kappas is not None
        self._kappas[state.rows] = np.where(
            tries == 0, np.maximum(kappa / self.KAPPA_DOWN, self.KAPPA_MIN), kappa
        )
        return result

    cascade = _cascade

    def finish(
        self,
        skeleton: Skeleton,
        goals: tuple[Goal, ...],
        settings: SolveSettings,
        q_start: FloatArray,
        out: LoopOutput,
    ) -> None:
        """Lower-level finish (class docstring): the rows whose priority 0 is met and a
        lower level is not get :func:`_finish_row`'s constrained optimum where it is
        lexicographically better (q, errors and, if every goal is then met, the reason)."""
        _, reasons, out_q, out_gerr = out
        blocks = skeleton.goal_plan(goals)[0]
        prios = sorted({blk.priority for blk in blocks if blk.weight > 0.0})
        if len(prios) < 2 or not skeleton.n_dofs:
            return
        tol = settings.tolerance
        members = [
            [i for i, g in enumerate(goals) if g.weight > 0.0 and g.priority == p] for p in prios
        ]
        lerr = np.stack([out_gerr[:, m].max(axis=1) for m in members], axis=1)
        todo = np.flatnonzero((lerr[:, 0] <= tol) & (lerr[:, 1:] > tol).any(axis=1))
        for i in todo.tolist():
            found = _finish_row(self, skeleton, goals, settings, i, (out_q[i], q_start[i]))
            if found is not None:
                out_q[i], out_gerr[i] = found
                if np.all(found[1][[g for m in members for g in m]] <= tol):
                    reasons[i] = StopReason.REACHED

    def _restore(
        self, state: StepState, dq: FloatArray, upper: list[NDArray[np.intp]]
    ) -> tuple[FloatArray, FloatArray]:
        """Feasibility restoration of the levels above the lowest (strict priority): while
        their residual at q + Δq is above ``RESTORE_FRACTION`` × ``tolerance`` (a lower
        level's large step moves them at second order, more than one correction
        removes), Gauss–Newton projections back onto them with the Jacobian at the new
        point (minimum-norm, exact pseudo-inverses of the levels in priority order, DOFs
        at a limit they would leave held), at most :attr:`RESTORE_PASSES` times and
        only while the residual drops. Each pass costs one evaluation; rows whose upper
        levels are met pay nothing. Returns Δq and the weighted residual at q + Δq."""
        st = state.settings
        sk = state.skeleton
        b, n = dq.shape
        clip = st.use_limits and sk.has_limits
        rows_up = np.concatenate(upper)
        w_up = np.ones(len(rows_up))
        pos = {r: i for i, r in enumerate(rows_up.tolist())}
        for blk in state.blocks:
            if blk.rows.start in pos:
                i = pos[blk.rows.start]
                w_up[i : i + 3] = blk.weight
        bound = (self.RESTORE_FRACTION * st.tolerance) ** 2 * w_up
        aims = [aim for _, aim in self._levels(state.blocks)]
        prev = np.full(b, np.inf)
        for p in range(self.RESTORE_PASSES + 1):
            qn = state.q + dq
            if clip:
                qn = sk.clip_unchecked(qn)
            e_n, j_n, _ = state.evaluate(qn)
            r_up = e_n[:, rows_up]
            size = np.sum(r_up * r_up, axis=1)
            todo = np.any(r_up * r_up > bound, axis=1) & (size < prev)
            if p == self.RESTORE_PASSES or not todo.any():
                break
            prev = np.where(todo, size, 0.0)
            j_use = j_n
            if clip:
                # a DOF at a limit takes no correction that would push it outside
                j_use = j_n * ~((qn <= sk.lower + 1e-12) | (qn >= sk.upper - 1e-12))[:, None, :]
            corr = np.zeros((b, n))
            proj: FloatArray | None = None  # None: the identity
            for i, rows in enumerate(upper):
                jk = j_use[:, rows, :]
                u, sv, vt = _factor(jk if proj is None else jk @ proj, st.svd_cutoff, aims[i])
                smax = sv[:, :1] if sv.shape[1] else np.zeros((b, 1))
                keep = (sv > st.svd_cutoff * smax) & (sv > 0.0)
                gain = np.where(keep, 1.0 / np.where(keep, sv, 1.0), 0.0)
                corr = corr + _damped_apply(u, gain, vt, e_n[:, rows] - matvec(jk, corr))
                if i < len(upper) - 1:
                    vk = vt * keep[:, :, None]
                    vv = np.swapaxes(vk, -1, -2) @ vk
                    proj = np.eye(n) - vv if proj is None else proj - vv
            dq = dq + np.where(todo[:, None], corr, 0.0)
        return dq, e_n


def _finish_row(
    step: TaskPriorityStep,
    sk: Skeleton,
    goals: tuple[Goal, ...],
    st: SolveSettings,
    row: int,
    starts: tuple[FloatArray, FloatArray],
) -> tuple[FloatArray, FloatArray] | None:
    """The lower-level finish of batch row ``row``: from each start (the loop's result,
    then the solve's start), the levels below priority 0 in turn, each by SLSQP (Kraft
    1988, scipy): min ‖e_k‖² subject to e = 0 for every goal of the levels above (the
    joint limits as bounds with ``use_limits``), kept when the levels above stay within
    ``tolerance`` and ‖e_k‖² drops; a level left unmet ends the pass (the levels below it
    have no equality to keep). Returns (q, per-goal errors) of the lexicographically best
    finished point (:meth:`TaskPriorityStep.objective`) if it beats the loop's result,
    else None."""
    blocks = sk.goal_plan(goals)[0]
    prios = sorted({blk.priority for blk in blocks if blk.weight > 0.0})
    level_rows = [
        np.concatenate(
            [
                np.arange(b.rows.start, b.rows.stop)
                for b in blocks
                if b.priority == p and b.weight > 0.0
            ]
        )
        for p in prios
    ]
    members = [
        [i for i, g in enumerate(goals) if g.weight > 0.0 and g.priority == p] for p in prios
    ]
    sel = np.array([row])
    bounds = list(zip(sk.lower, sk.upper, strict=True)) if st.use_limits and sk.has_limits else None
    cache: dict[bytes, Evaluation] = {}

    def at(x: FloatArray) -> Evaluation:
        x = np.nan_to_num(np.asarray(x, dtype=np.float64))
        key = x.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = sk.evaluate(x[None], goals, rows=sel)
        return cache[key]

    def objective(x: FloatArray) -> FloatArray:
        return step.objective(at(x).e, blocks)

    best = np.asarray(starts[0], dtype=np.float64)
    best_obj = objective(best)
    found = False
    for start in starts:
        x = np.asarray(start, dtype=np.float64).copy()
        for k in range(1, len(prios)):
            rk = level_rows[k]
            above = np.concatenate(level_rows[:k])
            above_goals = [g for m in members[:k] for g in m]

            def fun(v: FloatArray, rk: NDArray[np.intp] = rk) -> tuple[float, FloatArray]:
                ev = at(v)
                assert ev.J is not None
                ek = ev.e[0, rk]
                return float(ek @ ek), -2.0 * ev.J[0, rk].T @ ek

            def cons(v: FloatArray, above: NDArray[np.intp] = above) -> FloatArray:
                out: FloatArray = at(v).e[0, above]
                return out

            def cons_jac(v: FloatArray, above: NDArray[np.intp] = above) -> FloatArray:
                ev = at(v)
                assert ev.J is not None
                out: FloatArray = -ev.J[0, above]
                return out

            with warnings.catch_warnings():  # SLSQP's own clip into the bounds, overflow
                warnings.simplefilter("ignore")
                res = scipy.optimize.minimize(
                    fun,
                    x,
                    jac=True,
                    bounds=bounds,
                    constraints=[{"type": "eq", "fun": cons, "jac": cons_jac}],
                    method="SLSQP",
                    options={"maxiter": 500, "ftol": 1e-14},
                )
            cand = np.asarray(res.x, dtype=np.float64)
            if bounds is not None:
                cand = sk.clip_unchecked(cand)
            cand_err = at(cand).goal_error[0]
            if not (
                np.all(np.isfinite(cand))
                and np.all(cand_err[above_goals] <= st.tolerance)
                and fun(cand)[0] < fun(x)[0]
            ):
                break
            x = cand
            if np.any(cand_err[members[k]] > st.tolerance):
                break
        obj = objective(x)
        if lexicographic_less(obj, best_obj, 1.0)[1][0]:
            best, best_obj, found = x, obj, True
    if not found:
        return None
    return best, at(best).goal_error[0].copy()
