"""The remaining step classes of :mod:`core.ik`: CCD (Lee), LBFGSB (Ki & Sheen §3),
TASK_PRIORITY (Ki & Sheen §5–7) and EXTENDED_JACOBIAN (Šoch & Lórencz).

Imported by :mod:`core.ik` (registration happens on import); each class only implements
``step(state) -> Δq`` and runs inside the one loop of :meth:`core.ik.IKSolver.run`
(iteration limits, tolerance, ``max_step`` clamp, joint limits, per-row stopping). CCD and
LBFGSB return a Δq with ``max |Δq_j| ≤ max_step`` and ``q + Δq`` inside the limits (when
``use_limits``), so the loop's clamp and clip are no-ops for them; TASK_PRIORITY applies
``max_step`` level by level and clamps DOFs at their limits inside the step (see there),
EXTENDED_JACOBIAN applies neither and leaves both to the loop.

CCD — cyclic coordinate descent (Lee, *Inverse Kinematics* slides, "CCD"; Wang & Chen
1991). One iteration is one sweep over the unlocked DOFs from the leaves to the root
(reverse q order; parents come before children). For DOF j (world axis ``w`` through its
joint origin ``p``) rotating by φ changes every goal block the DOF moves, and the weighted
least-squares objective of all those blocks is, exactly,

    f(φ) = const − (A cos φ + B sin φ),   so   φ* = atan2(B, A)

with the weighted sums (rows of ``e`` and ``J`` already carry √weight; ``c`` = the DOF's
Jacobian column of the block, ``ẽ`` its residual):

* POSITION (and DIRECTION, the same algebra with ``r`` the axis instead of ``s − p``):
  ‖t − p − R(φ)(s − p)‖² gives A = 2 Σ (‖c‖² + ẽ · (c × w)), B = 2 Σ ẽ · c.
  (With Buss's target-based Jacobian, ``c`` is corrected back to ``w × (s − p)``.)
* ROTATION: the error rotation E = exp(ẽ) = R_t R_cᵀ (angle θ, axis k) becomes
  E R_w(−φ); minimising 3 − tr(E R_w(−φ)) = 2(1 − cos θ') ≈ θ'² gives
  A = w (2 cos θ + (1 − cos θ)(1 − (k·w)²)), B = w · 2 sin θ (k·w).
* AIM: treated as a DIRECTION goal towards the unit vector ``u`` from the current ray
  origin to the target (frozen during the DOF's update). Exact when the ray origin lies on
  the DOF's axis; otherwise a fixed-point approximation that the next sweeps correct.

With limits, f restricted to [lower, upper] is minimised at φ* if it is inside, else at
the bound with the larger cos(φ − φ*); |φ| is also clamped to ``max_step``. With only
POSITION and ROTATION blocks a sweep costs one forward kinematics (the DOF's rotation is
applied to what lies below it by Rodrigues' formula, see :class:`CCDStep`); with
DIRECTION or AIM blocks the skeleton is re-evaluated after each DOF (n evaluations).
CCD never increases the objective ‖e‖² within a sweep (each DOF update is an exact 1-D
minimisation), but converges only linearly, so the sweeps are Anderson-accelerated (a
sweep is a fixed-point map; :meth:`CCDStep._accelerate`), an accelerated point taken
only where it lowers ‖e‖² below the current one — the objective still never increases.
One iteration is a sweep plus one residual evaluation; default budget 1,000 iterations.

LBFGSB — Ki & Sheen §3: minimise F(q) = ‖e(q)‖² + γ²‖q − q_ref‖² (Eq. 3.1; e weighted as
in the loop, γ = ``tikhonov``, q_ref = ``q_rest`` or zeros) subject to the bounds (Eq. 3.2)
with the analytic gradient ∇F = −2Jᵀe + 2γ²(q − q_ref) (J the skeleton's exact Jacobian;
``target_jacobian`` is ignored) via ``scipy.optimize.minimize(method="L-BFGS-B")`` with
``maxcor = lbfgsb_memory`` and ``maxiter = lbfgsb_iterations`` per outer iteration. The
bounds are the joint limits (``use_limits``) intersected with the trust box
[q − max_step, q + max_step], so L-BFGS-B's iterates never leave them. Batched problems
are minimised **one row at a time** (a Python loop over the rows still iterating: scipy
minimises one problem per call, and separate calls make batched results equal the
one-by-one ones exactly). The alternative — one L-BFGS-B over the concatenated variables
of all rows (the objective is a separable sum; gradient and bounds concatenate) — was
measured and rejected: the rows then share one line search and one curvature memory, so
each row's steps depend on the others. With 20 L-BFGS-B iterations per outer iteration
and B = 20 reachable problems it needed up to 20 outer iterations on the Y instead of 5,
reached only 90 % of the arm's and 5 % of the double-Y's problems within 60 (one by one:
all), and at B = 1,000 up to 57 on the Y. Cheaper per problem-iteration, but not the
same solver.
Goal-path subdivision (``subdivisions`` = M > 0, first iteration only): each position
block's target X is approached through Ỹ_1..Ỹ_M (Ki & Sheen's smoothed points: the angle
between Y − O and X − O, O the root of the goal's joint, split uniformly and the
distance interpolated linearly; a straight line if Y − O and X − O are parallel), each
minimised from the previous solution, then X. Other block kinds keep their final target.

TASK_PRIORITY — Ki & Sheen §5–6 (Theorem 6.18/6.19, Definitions 6.14–6.15): with the
goals grouped by ``priority`` (0 first) into levels k = 1..L with rows J_k, e_k,

    Δq_0 = 0, P_0 = I;   Ĵ_k = J_k P_{k−1};   Δq_k = Δq_{k−1} + Ĵ_k⁺ (e_k − J_k Δq_{k−1});
    P_k = P_{k−1} − Ĵ_k⁺ Ĵ_k,

which is their J̃_M (dX_1, …, dX_M) (using F_i (J_{i+1}F_i)⁺ = (J_{i+1}F_i)⁺, Lemma 6.11).
Pseudo-inverses by SVD, singular values ≤ ``svd_cutoff`` · σ_max(J_k) cut (so a level
whose rows are fully blocked by higher ones gets no motion). Lower levels act only in the
null space of all higher ones; a conflicting lower level gets its least-squares best
within that null space. Damped variant (§7, Eq. 7.2), ``priority_damping`` = c > 0: the
step uses Σ σ/(σ² + c²) v uᵀ instead of Ĵ_k⁺ while the projectors P_k stay exact (lower
levels still never disturb higher ones to first order). Priority 0 is damped by c only;
the lower levels (k ≥ 2) always add a residual-scaled Levenberg–Marquardt damping,
c_k² = c² + κ‖r_k‖σ_max(J_k), and with two or more levels every level above the lowest
gets a second-order correction at q + Δq; with ``use_limits`` the step clamps DOFs at
their limits (a clamping loop, see :class:`TaskPriorityStep`). The per-step
clamp is applied level by level: each level's increment is scaled so that
max |Δq| ≤ ``max_step`` with the budget left by the levels above (a lower level never
shrinks a higher level's step; one clamp of the total would let a large, ill-conditioned
low-priority correction stall the high-priority goals). Strict priority (issue 16): after
each step the levels above the lowest are restored (Gauss–Newton projections back onto
them at the new point), lower-level steps that make the levels lexicographically worse
are retried with more damping (Levenberg–Marquardt acceptance), and the loop compares
iterates lexicographically, level 0 first, a met level (every goal within
``tolerance``) counting as 0 — so an iterate meeting level 0 always beats one that does
not, whatever the lower levels' errors, and a row whose level 0 is unmet is not
``converged``.

EXTENDED_JACOBIAN — Šoch & Lórencz §2: the Jacobian of the goals is extended with rows for
every "basic element" (two adjacent segments p → k → c, labelled i : i+2 in the paper):
the vector o_c − o_p expressed in the frame of joint p *before* its own rotation (their
local coordinates [x_{i,i+1}, y_{i,i+1}], Eq. 8, rotated by the sum of the previous
angles). It depends only on the DOFs of p and k; its rows are R_preᵀ (w_d × (o_c − p_d)).
The desired change of every element is zero (their experiment: "setting all dx_i = 0
except those which correspond to a move of the end-effector"), rows are multiplied by
``extended_weight`` (their w), and the over-determined system is solved by ordinary least
squares through the normal equations (J_extᵀJ_ext) Δq = Jᵀe with an LU factorisation
(``numpy.linalg.solve``, LAPACK getrf/getrs, batched). In the plane (hinges about z, as
in the paper) the element rows are exactly their x/y rows plus a zero z row, so the
normal equations are theirs (their Eq. 9 orders rows differently; the product is the
same). Generalisation to 3-D and trees: every joint k with a parent p and each child c
forms an element (3 rows); elements without DOFs are dropped. In 3-D a DOF may move no
element (a twist about a segment) and the normal matrix may be singular; a guard
μ = 1e-12 · max diag adds nothing measurable elsewhere and gives such DOFs zero change
unless a goal row needs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np
import scipy.optimize
from numpy.typing import ArrayLike, NDArray
from scipy.linalg.lapack import dposv

from .errors import InvalidInputError, UnsupportedMethodError
from .goals import AimGoal, Goal
from .ik import (
    STEP_CLASSES,
    FloatArray,
    IKSolver,
    Method,
    SolveSettings,
    StepState,
    _lexicographic_less,
    _mv,
    clamp_max_abs,
    register,
)
from .skeleton import BlockKind, RowBlock, Skeleton, _cross, goal_tuple

__all__ = [
    "CCDStep",
    "LBFGSBStep",
    "TaskPriorityStep",
    "ExtendedJacobianStep",
    "basic_elements",
    "element_jacobian",
    "step_once",
]


def _bounds(state: StepState) -> tuple[FloatArray, FloatArray]:
    """(b, n) lower/upper bounds of this step: limits (if used) ∩ trust box ±max_step."""
    st = state.settings
    q = state.q
    lo = q - st.max_step
    hi = q + st.max_step
    if st.use_limits:
        lo = np.maximum(lo, state.skeleton.lower)
        hi = np.minimum(hi, state.skeleton.upper)
    return lo, hi


def _goal_joints(skeleton: Skeleton, goals: tuple[Goal, ...]) -> list[int]:
    return [skeleton.joint_index(g.joint) for g in goals]  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# CCD
# --------------------------------------------------------------------------------------


def _aim_vectors(
    skeleton: Skeleton,
    goal: AimGoal,
    joint: int,
    rot: FloatArray,
    org: FloatArray,
    rows: NDArray[np.intp],
) -> tuple[FloatArray, FloatArray]:
    """Current world ray axis a and unit direction u from the ray origin to the target."""
    b = rot.shape[0]

    def pick(value: object) -> FloatArray:
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim == 1:
            return np.broadcast_to(arr, (b, 3))
        out: FloatArray = arr[rows]
        return out

    rj = rot[:, joint]
    a = np.einsum("bij,bj->bi", rj, pick(goal.axis))
    o = np.einsum("bij,bj->bi", rj, pick(goal.origin)) + org[:, joint]
    v = pick(goal.target) - o
    d = np.sqrt(np.sum(v * v, axis=-1))
    u = np.where((d < 1e-12)[:, None], a, v / np.where(d < 1e-12, 1.0, d)[:, None])
    return a, u


def _ccd_angle(
    qj: FloatArray, big_a: FloatArray, big_b: FloatArray, lj: FloatArray, hj: FloatArray
) -> FloatArray:
    """New value of one DOF: q_j + φ*, φ* = atan2(B, A) (0 when A = B = 0), or the bound
    of [lj, hj] with the larger cos(bound − q_j − φ*) when q_j + φ* is outside."""
    phi = np.arctan2(big_b, big_a)
    phi = np.where((big_a == 0.0) & (big_b == 0.0), 0.0, phi)
    target: FloatArray = qj + phi
    inside = (target >= lj) & (target <= hj)
    if inside.all():
        return target
    cl = np.cos(np.where(np.isfinite(lj), lj, 0.0) - qj - phi)
    ch = np.cos(np.where(np.isfinite(hj), hj, 0.0) - qj - phi)
    cl = np.where(np.isfinite(lj), cl, -np.inf)
    ch = np.where(np.isfinite(hj), ch, -np.inf)
    out: FloatArray = np.where(inside, target, np.where(ch >= cl, hj, lj))
    return out


def _position_terms(ei: FloatArray, c: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """CCD's (A, B) of one POSITION/DIRECTION block (module docstring)."""
    return 2.0 * (np.sum(c * c, -1) + np.sum(ei * _cross(c, w), -1)), 2.0 * np.sum(ei * c, -1)


@lru_cache(maxsize=64)
def _inner_dofs(skeleton: Skeleton) -> tuple[NDArray[np.intp], ...]:
    """Per DOF j: the DOFs i < j of the same joint whose world axis turns with DOF j (the
    Ball's Euler components applied after it, nearer the child; their kinematic nodes
    are deeper, hence numbered higher)."""
    node = skeleton._kin.dof_node
    dj = skeleton.dof_joint
    idx = np.arange(skeleton.n_dofs)
    return tuple(
        np.flatnonzero((dj == dj[j]) & (node > node[j]) & (idx < j)) for j in range(skeleton.n_dofs)
    )


def _axis_rotations(w: FloatArray, angle: FloatArray) -> FloatArray:
    """(b, 3, 3) rotations about the unit axes w (b, 3) by ``angle`` (b,) (Rodrigues)."""
    ca, sa = np.cos(angle)[:, None, None], np.sin(angle)[:, None, None]
    skew = np.zeros(w.shape + (3,))
    skew[:, 0, 1], skew[:, 0, 2], skew[:, 1, 2] = -w[:, 2], w[:, 1], -w[:, 0]
    skew[:, 1, 0], skew[:, 2, 0], skew[:, 2, 1] = w[:, 2], -w[:, 1], w[:, 0]
    out: FloatArray = ca * np.eye(3) + sa * skew + (1.0 - ca) * (w[:, :, None] * w[:, None, :])
    return out


@register
class CCDStep(IKSolver):
    """Cyclic coordinate descent per DOF with limits (Lee; module docstring).

    Fast path (the same updates without n forward kinematics per sweep) when every
    weighted goal block is a POSITION or ROTATION block: rotating DOF j by δ turns
    everything below it — the goal points and goal-joint rotations of the goals under its
    joint, and the world axes of its own joint's inner Euler components — by the
    rotation about its world axis w_j through its origin p_j, and nothing else the rest
    of the sweep needs (the DOFs still to visit belong to ancestors, other branches or
    the same joint; parents come before children). So the sweep updates those points,
    rotations and axes by Rodrigues' formula. A rotation block's terms come straight
    from E = R_t R_cᵀ: A = w (tr E − wᵀEw), B = w · w·vee(E − Eᵀ) (the module
    docstring's formulas with cos θ = (tr E − 1)/2, sin θ k = vee(E − Eᵀ)/2). The state
    is recomputed from scratch at the next loop iteration, so rounding does not
    accumulate across sweeps. DIRECTION and AIM blocks use the re-evaluating sweep."""

    method = Method.CCD
    default_max_iterations = 1000
    #: A sweep is many short calls per DOF, so a second thread pays only on more work
    #: (1 → 2 threads, µs per problem-iteration: double-Y 1,000 rows (29,000) 9.6 → 14.6,
    #: 2,000 rows 12.0 → 11.4; arm 3,000 rows (24,000) 4.0 → 4.4, 6,000 rows 4.4 → 2.6).
    work_per_thread = 25_000

    #: Anderson acceleration depth (sweeps remembered), :meth:`_accelerate`; 0 turns it
    #: off. Measured on 20 random reachable targets 0.3 rad away, budget 1,000 sweeps
    #: (plain CCD → accelerated, reached and median sweeps): Y 18/20, 238 → 20/20, 18;
    #: double-Y 19/20, 298 → 20/20, 34; arm pose 12/20 (2,000 sweeps), 1,626 → 19/20, 25
    #: (the miss ends at 9e-3, where plain CCD ends too); 12-joint chain 20/20, 54 → 15.
    #: Depth 10 gave the same rates.
    DEPTH = 5
    #: Per batch row: last q and sweep residual f, ring of ΔG and ΔF, count (start()).
    _hist: tuple[FloatArray, FloatArray, FloatArray, FloatArray, NDArray[np.intp]] | None = None

    def start(self, rows: int, n: int) -> None:
        m = self.DEPTH
        self._hist = (
            np.zeros((rows, n)),
            np.zeros((rows, n)),
            np.zeros((rows, m, n)),
            np.zeros((rows, m, n)),
            np.zeros(rows, dtype=np.intp),
        )

    def step(self, state: StepState) -> FloatArray:
        sk = state.skeleton
        gj = _goal_joints(sk, state.goals)
        lo, hi = _bounds(state)
        active = [blk for blk in state.blocks if blk.weight > 0.0]
        if all(b.kind in (BlockKind.POSITION, BlockKind.ROTATION) for b in active):
            f = self._fast_sweep(state, active, gj, lo, hi)
        else:
            f = self._general_sweep(state, gj, lo, hi)
        if self._hist is None or self.DEPTH == 0:  # step_once: one plain sweep
            return f
        return self._accelerate(state, f)

    def _accelerate(self, state: StepState, f: FloatArray) -> FloatArray:
        """Anderson acceleration of the sweeps (Anderson 1965; Walker & Ni 2011, type II):
        a sweep is a fixed-point map q ↦ T(q) = q + f(q); with the last m changes
        ΔG = [T(q_i) − T(q_{i−1})] and ΔF = [f(q_i) − f(q_{i−1})], γ = argmin ‖f − ΔF γ‖
        and q⁺ = T(q) − ΔG γ (γ from the m × m normal equations with a 1e-10 relative
        ridge). Safeguarded: q⁺ is taken only when its objective is below the one at q (one
        evaluation), else the plain sweep T(q); the history is kept either way. Comparing
        with T(q) instead (a second evaluation) rejected almost every accelerated step —
        Anderson steps are not monotone per sweep but much faster over several — and
        restarting the history on a rejection left 1–4 of 20 rows crawling. Checking the
        accelerated point lazily instead (at the next iteration, from the loop's own
        evaluation, falling back to T(q) there) saves the evaluation but measured worse
        (100 problems: Y 98 % against 100 %, arm pose 84 % against 93 %). Cost: one
        sweep plus this evaluation and the m × m solve — 11–19 % more per iteration than
        a plain sweep (Y, double-Y, arm), for 5–60× fewer iterations."""
        q_last, f_last, dg, df, cnt = self._hist  # type: ignore[misc]
        rows = state.rows
        q = state.q
        g = q + f
        m = self.DEPTH
        c = cnt[rows]
        have = c > 0
        slot = c % m
        if have.any():
            r = rows[have]
            dg[r, slot[have]] = g[have] - (q_last[r] + f_last[r])
            df[r, slot[have]] = f[have] - f_last[r]
        q_last[rows] = q
        f_last[rows] = f
        cnt[rows] = c + 1
        k = np.minimum(c, m)
        use = k > 0
        if not use.any():
            return f
        r = rows[use]
        a_f = df[r] * (np.arange(m) < k[use, None])[:, :, None]  # (u, m, n), unused rows 0
        a_g = dg[r] * (np.arange(m) < k[use, None])[:, :, None]
        gram = a_f @ np.swapaxes(a_f, -1, -2)
        scale = np.maximum(np.trace(gram, axis1=-2, axis2=-1), 1e-300)
        gram = gram + (1e-10 * scale)[:, None, None] * np.eye(m)
        gamma = np.linalg.solve(gram, _mv(a_f, f[use])[..., None])[..., 0]  # (u, m)
        q_acc = g[use] - np.einsum("um,umn->un", gamma, a_g)
        st = state.settings
        q_acc = q[use] + clamp_max_abs(q_acc - q[use], st.max_step)  # the loop's clamp, first
        if st.use_limits:
            q_acc = state.skeleton._clip(q_acc)
        trial = q.copy()
        trial[use] = q_acc
        # the residual only (no Jacobian: cheaper than state.evaluate)
        e_t = state.skeleton.evaluate(trial, state.goals, rows=rows, jacobian=False).e
        better = use & (np.sum(e_t * e_t, axis=1) < np.sum(state.e * state.e, axis=1))
        out: FloatArray = np.where(better[:, None], trial - q, f)
        return out

    @staticmethod
    def _fast_sweep(
        state: StepState,
        active: list[RowBlock],
        gj: list[int],
        lo: FloatArray,
        hi: FloatArray,
    ) -> FloatArray:
        sk = state.skeleton
        q = state.q.copy()
        bsz = q.shape[0]
        rot, _, w_all, p_all = sk._kinematics(q)
        w_all = w_all.copy()  # inner Euler axes are turned in place
        pos_b = [blk for blk in active if blk.kind is BlockKind.POSITION]
        rot_b = [blk for blk in active if blk.kind is BlockKind.ROTATION]

        def pick(value: object, nd: int) -> FloatArray:
            arr = np.asarray(value, dtype=np.float64)
            out: FloatArray = arr if arr.ndim == nd else arr[state.rows]
            return out

        # position blocks: goal points (b, Lp, 3), targets, √weight (Lp, 1)
        sw = np.array([math.sqrt(blk.weight) for blk in pos_b]).reshape(-1, 1)
        targets = np.empty((bsz, len(pos_b), 3))
        points = np.empty((bsz, len(pos_b), 3))
        for i, blk in enumerate(pos_b):
            targets[:, i] = pick(state.goals[blk.goal].position, 1)  # type: ignore[union-attr]
            points[:, i] = targets[:, i] - state.e[:, blk.rows] / sw[i]
        # rotation blocks: target and current rotations (b, Lr, 3, 3), weights (Lr,)
        wr = np.array([blk.weight for blk in rot_b])
        r_t = np.empty((bsz, len(rot_b), 3, 3))
        for i, blk in enumerate(rot_b):
            r_t[:, i] = pick(state.goals[blk.goal].rotation, 2)  # type: ignore[union-attr]
        r_c = rot[:, [gj[blk.goal] for blk in rot_b]]
        below = sk.ancestors[sk.dof_joint]
        below_p = below[:, [gj[blk.goal] for blk in pos_b]]  # (n, Lp)
        below_r = below[:, [gj[blk.goal] for blk in rot_b]]  # (n, Lr)
        inner = _inner_dofs(sk)
        for j in range(q.shape[1] - 1, -1, -1):
            mp = np.flatnonzero(below_p[j])
            mr = np.flatnonzero(below_r[j])
            if not (mp.size or mr.size):
                continue  # φ* = 0: the DOF stays (q is inside [lo, hi])
            w, p = w_all[:, j], p_all[:, j]
            big_a = np.zeros(bsz)
            big_b = np.zeros(bsz)
            if mp.size:
                w1, p1 = w[:, None], p[:, None]  # (b, 1, 3)
                rel = points[:, mp] - p1
                wxr = _cross(w1, rel)  # also turns the points below (after the update)
                c = sw[mp] * wxr
                ei = sw[mp] * (targets[:, mp] - points[:, mp])
                big_a += 2.0 * (c * c + ei * _cross(c, w1)).sum(axis=(1, 2))
                big_b += 2.0 * (ei * c).sum(axis=(1, 2))
            if mr.size:
                e_rot = r_t[:, mr] @ np.swapaxes(r_c[:, mr], -1, -2)  # (b, k, 3, 3)
                tr = np.trace(e_rot, axis1=-2, axis2=-1)
                wew = np.einsum("bi,bkij,bj->bk", w, e_rot, w)
                vee = np.stack(
                    [
                        e_rot[..., 2, 1] - e_rot[..., 1, 2],
                        e_rot[..., 0, 2] - e_rot[..., 2, 0],
                        e_rot[..., 1, 0] - e_rot[..., 0, 1],
                    ],
                    axis=-1,
                )
                big_a += (tr - wew) @ wr[mr]
                big_b += np.einsum("bki,bi->bk", vee, w) @ wr[mr]
            new = _ccd_angle(q[:, j], big_a, big_b, lo[:, j], hi[:, j])
            delta = new - q[:, j]
            q[:, j] = new
            if mp.size:
                ca, sa = np.cos(delta)[:, None, None], np.sin(delta)[:, None, None]
                points[:, mp] = (
                    p1
                    + rel * ca
                    + wxr * sa
                    + w1 * (np.sum(w1 * rel, -1)[..., None] * (1.0 - ca))
                )
            ins = inner[j]
            if mr.size or ins.size:
                turn = _axis_rotations(w, delta)
                if mr.size:
                    r_c[:, mr] = turn[:, None] @ r_c[:, mr]
                if ins.size:
                    w_all[:, ins] = np.einsum("bij,bkj->bki", turn, w_all[:, ins])
        return q - state.q

    @staticmethod
    def _general_sweep(
        state: StepState, gj: list[int], lo: FloatArray, hi: FloatArray
    ) -> FloatArray:
        st = state.settings
        sk = state.skeleton
        q0 = state.q
        q = q0.copy()
        e, jac = state.e, state.J
        n = q.shape[1]
        memo: dict[str, object] = {}
        rot, org, w_all, _ = sk._kinematics(q)
        for j in range(n - 1, -1, -1):
            w = w_all[:, j]  # (b, 3) world axis of DOF j
            big_a = np.zeros(q.shape[0])
            big_b = np.zeros(q.shape[0])
            for blk in state.blocks:
                if blk.weight == 0.0 or not sk.ancestors[sk.dof_joint[j], gj[blk.goal]]:
                    continue
                ei = e[:, blk.rows]
                c = jac[:, blk.rows, j]
                if blk.kind is BlockKind.POSITION or blk.kind is BlockKind.DIRECTION:
                    if blk.kind is BlockKind.POSITION and st.target_jacobian:
                        c = c - _cross(w, ei)  # back to √w · w × (s − p)
                    da, db = _position_terms(ei, c, w)
                    big_a += da
                    big_b += db
                elif blk.kind is BlockKind.ROTATION:
                    sw = math.sqrt(blk.weight)
                    vec = ei / sw
                    th = np.sqrt(np.sum(vec * vec, -1))
                    k = vec / np.where(th > 0.0, th, 1.0)[:, None]
                    kw = np.sum(k * w, -1)
                    ct = np.cos(th)
                    big_a += blk.weight * (2.0 * ct + (1.0 - ct) * (1.0 - kw * kw))
                    big_b += blk.weight * 2.0 * np.sin(th) * kw
                else:  # AIM: a direction goal towards the current u
                    goal = state.goals[blk.goal]
                    assert isinstance(goal, AimGoal)
                    a, u = _aim_vectors(sk, goal, gj[blk.goal], rot, org, state.rows)
                    da, db = _position_terms(u - a, _cross(w, a), w)
                    big_a += blk.weight * da
                    big_b += blk.weight * db
            q[:, j] = _ccd_angle(q[:, j], big_a, big_b, lo[:, j], hi[:, j])
            if j > 0:  # re-evaluate (the frames give the next DOF's axis)
                ev = sk.evaluate(
                    q, state.goals, rows=state.rows, target_based=st.target_jacobian, memo=memo
                )
                assert ev.J is not None and ev.frames is not None
                e, jac = ev.e, ev.J
                rot, org, w_all, _ = sk.kinematics_of(ev.frames)
        return q - q0


# --------------------------------------------------------------------------------------
# LBFGSB
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _roots(skeleton: Skeleton) -> tuple[int, ...]:
    """Root joint index of every joint."""
    out: list[int] = []
    for j, jt in enumerate(skeleton.joints):
        out.append(j if jt.parent < 0 else out[jt.parent])
    return tuple(out)


def _subdivided_offsets(state: StepState, m: int) -> list[FloatArray]:
    """Residual offsets (b, m_rows) that turn each position target X into Ki & Sheen's
    intermediate Ỹ_i (i = 1..M), then X (offset 0): e_i(q) = e(q) − offset_i. Batched
    over the rows (no Python loop over them)."""
    sk = state.skeleton
    roots = _roots(sk)
    gj = _goal_joints(sk, state.goals)
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
    :class:`_GoalsMet` (at an x that meets every goal): the minimisation stops there."""
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
    #: the GIL (measured on the double-Y, B = 1,000: 1,743 → 2,659 µs per
    #: problem-iteration with two threads).
    auto_threads = False

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        sk = state.skeleton
        goals = state.goals
        lo, hi = _bounds(state)
        b, n = state.q.shape
        ref = np.zeros(n) if st.q_rest is None else np.asarray(st.q_rest, dtype=np.float64)
        g2 = st.tikhonov**2
        shifts: list[FloatArray] = []
        if st.subdivisions > 0 and state.iteration == 0:
            shifts = _subdivided_offsets(state, st.subdivisions)
        shifts.append(np.zeros_like(state.e))
        memo: dict[str, object] = {}
        final = shifts[-1]
        active = np.array([g.weight > 0.0 for g in goals])
        tol = st.tolerance

        def objective(
            x: FloatArray, shift: FloatArray, rows: NDArray[np.intp]
        ) -> tuple[float, FloatArray]:
            """F at x (1, n) and its gradient (1, n); raises _GoalsMet where the final
            targets are met (inside the bounds: scipy evaluates only there)."""
            ev = sk.evaluate(x, goals, rows=rows, memo=memo)
            assert ev.J is not None
            if shift.base is final or shift is final:
                if active.any() and float(ev.goal_error[0, active].max()) <= tol:
                    raise _GoalsMet(x[0].copy())
            e = ev.e - shift
            d = x - ref
            f = float(np.sum(e * e) + g2 * np.sum(d * d))
            grad: FloatArray = -2.0 * _mv(np.swapaxes(ev.J, -1, -2), e) + 2.0 * g2 * d
            return f, grad

        out = np.zeros_like(state.q)
        for r in range(b):
            rows = state.rows[r : r + 1]

            def fun(
                x: FloatArray, shift: FloatArray, rows: NDArray[np.intp] = rows
            ) -> tuple[float, FloatArray]:
                f, grad = objective(x[None], shift, rows)
                return f, grad[0]

            x = _lbfgsb(fun, state.q[r], lo[r], hi[r], [sh[r : r + 1] for sh in shifts], st)
            out[r] = x - state.q[r]
        return out


# --------------------------------------------------------------------------------------
# Task priority
# --------------------------------------------------------------------------------------


def _levels(blocks: tuple[RowBlock, ...]) -> list[NDArray[np.intp]]:
    """Row indices of each priority level, most important first."""
    prios = sorted({blk.priority for blk in blocks})
    out: list[NDArray[np.intp]] = []
    for p in prios:
        rows = [np.arange(blk.rows.start, blk.rows.stop) for blk in blocks if blk.priority == p]
        out.append(np.concatenate(rows).astype(np.intp))
    return out


def _budget(dq: FloatArray, delta: FloatArray, max_step: float) -> FloatArray:
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
    return _mv(np.swapaxes(vt, -1, -2), gain * _mv(np.swapaxes(u, -1, -2), r))


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
    target), oscillates at full ``max_step`` — measured before this damping: Ki & Sheen's
    2-effector chain left tip2 (priority 0) 0.1 off, the arm's hand 7.2e-3 off. The
    damping ∝ ‖r_k‖ (Levenberg–Marquardt with μ ∝ ‖F‖, Fan & Yuan 2005) covers that
    term; it vanishes as r_k → 0, so consistent lower levels keep (near) quadratic
    convergence. It changes the lower levels' step length only, not their fixed point
    (Σ σ/(σ² + c_k²) v uᵀ r_k = 0 ⇔ Ĵ_kᵀ r_k = 0: the least-squares best of e_k in the
    null space of the levels above). A fixed κ = 0.1 still oscillated on arm/elbow
    conflicts; 0.5 converged too, about twice as slowly. So κ adapts (Madsen, Nielsen &
    Tingleff, *Methods for non-linear least squares problems*, 2004, §3.2): a step whose
    result (after the correction and restoration below) is lexicographically worse than
    q is rejected and recomputed with κ × :attr:`KAPPA_UP` (at most
    :attr:`KAPPA_TRIES` tries; the last is taken anyway), and after an accepted first
    try κ ÷ :attr:`KAPPA_DOWN` (≥ :attr:`KAPPA_MIN`) for the next iteration. Measured
    (defaults): Ki & Sheen's conflicts 42 / 36 iterations (fixed κ: 103 / 83), the
    arm/elbow conflict 53 (63); on 60 random Y trees (reachable priority-0 tip, the other
    tip's goal 1–10 m away) level 0 met in 60/60 and level 1 equal to SLSQP's constrained
    optimum from the same start in 60/60 (fixed κ: 57/60, stalled on oscillations).

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
    point until they are within :attr:`RESTORE_FRACTION` × ``tolerance``) — the second-
    order correction alone left priority 0 up to 2.3e-6 off (above the default tolerance)
    in 2 of 20 random Y conflicts, reported STALLED and converged. The restoration may
    exceed ``max_step`` by its own (small) length. Single-level problems (all goals at
    one priority) are unaffected.

    Failure mode: a conflicting lower level converges linearly (rate set by κ and the
    curvature), so it ends STALLED (not REACHED) with its residual at the constrained
    optimum to ~1e-10 in ‖e_k‖²; measured with the defaults: Ki & Sheen's chain 83–103
    iterations, the arm/elbow conflict 68, three levels with an unreachable, stretched
    last level ~750 (Ki & Sheen's 3-effector chain). A reachable lower level still
    converges in 7–9 iterations (previously 6–7).

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
    #: Feasibility restoration (:meth:`_restore`): target fraction of ``tolerance`` for
    #: the levels above the lowest after a step, and the most projections per step.
    RESTORE_FRACTION = 0.1
    RESTORE_PASSES = 6

    lexicographic = True
    clamps_itself = True

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
            r = state.e[:, rows] - _mv(jk, dq)
            ck2 = c2
            if k > 0:  # residual-scaled Levenberg–Marquardt damping of the lower levels
                ck2 = c2 + (kappa * np.linalg.norm(r, axis=1) * smax_k)[:, None]
            safe = np.where(keep, s, 1.0)
            gain = np.where(keep, s / (safe * safe + ck2), 0.0)
            inverses.append((jk, u, gain, vt))
            delta = _damped_apply(u, gain, vt, r)
            dq = dq + _budget(dq, delta, st.max_step)[:, None] * delta
            vk = vt * keep[:, :, None]
            proj = proj - np.swapaxes(vk, -1, -2) @ vk
            if k == 0:
                first = dq
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
                dq, first, inverses = self._cascade(state, j_all, fixed, frozen, kappa)
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
                r = e_t[:, rows] - _mv(jk, corr)
                corr = corr + _damped_apply(u, gain, vt, r)
            # the max_step clamp before the restoration (the loop's clamp after it would
            # scale the restoring part too and move the higher levels off again)
            cand = clamp_max_abs(dq + corr, state.settings.max_step)
            cand, e_f = self._restore(state, cand, levels[:-1])
            # Levenberg–Marquardt acceptance (class docstring): a step that makes the
            # levels lexicographically worse is retried with κ × KAPPA_UP
            reject = todo & _lexicographic_less(now, self.objective(e_f, state.blocks), 1.0)[1]
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
        prev = np.full(b, np.inf)
        for p in range(self.RESTORE_PASSES + 1):
            qn = state.q + dq
            if clip:
                qn = sk._clip(qn)
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
            proj = np.broadcast_to(np.eye(n), (b, n, n)).copy()
            for rows in upper:
                jk = j_use[:, rows, :]
                u, sv, vt = np.linalg.svd(jk @ proj, full_matrices=False)
                smax = sv[:, :1] if sv.shape[1] else np.zeros((b, 1))
                keep = (sv > st.svd_cutoff * smax) & (sv > 0.0)
                gain = np.where(keep, 1.0 / np.where(keep, sv, 1.0), 0.0)
                corr = corr + _damped_apply(u, gain, vt, e_n[:, rows] - _mv(jk, corr))
                vk = vt * keep[:, :, None]
                proj = proj - np.swapaxes(vk, -1, -2) @ vk
            dq = dq + np.where(todo[:, None], corr, 0.0)
        return dq, e_n


# --------------------------------------------------------------------------------------
# Extended Jacobian
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def basic_elements(skeleton: Skeleton) -> tuple[tuple[int, int, int], ...]:
    """Šoch & Lórencz's basic elements (p, k, c) of a tree: joint k with parent p and
    child c (two adjacent segments p→k→c); only those whose vector depends on a DOF."""
    parents = skeleton.parents
    out: list[tuple[int, int, int]] = []
    for c in range(skeleton.n_joints):
        k = int(parents[c])
        if k < 0:
            continue
        p = int(parents[k])
        if p < 0:
            continue
        if skeleton.joints[p].dofs.n_dofs + skeleton.joints[k].dofs.n_dofs == 0:
            continue
        out.append((p, k, c))
    return tuple(out)


def _element_data(
    skeleton: Skeleton,
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp], NDArray[np.bool_]]:
    el = basic_elements(skeleton)
    p = np.array([x[0] for x in el], dtype=np.intp)
    pp = np.array([int(skeleton.parents[x[0]]) for x in el], dtype=np.intp)
    c = np.array([x[2] for x in el], dtype=np.intp)
    dj = skeleton.dof_joint
    mask = np.array([(dj == x[0]) | (dj == x[1]) for x in el], dtype=bool).reshape(
        len(el), skeleton.n_dofs
    )
    return p, pp, c, mask


def element_jacobian(skeleton: Skeleton, q: FloatArray) -> FloatArray:
    """(b, 3E, n) Jacobian of the basic elements' local vectors (module docstring)."""
    el = basic_elements(skeleton)
    b = q.shape[0]
    if not el:
        return np.zeros((b, 0, skeleton.n_dofs))
    rot, org, w, pd = skeleton._kinematics(q)
    p, pp, c, mask = _element_data(skeleton)
    offs = np.stack([np.asarray(skeleton.joints[i].offset)[:3, :3] for i in p])  # (E, 3, 3)
    parent_rot = np.where(
        (pp >= 0)[None, :, None, None], rot[:, np.maximum(pp, 0)], np.eye(3)
    )  # (b, E, 3, 3)
    pre = parent_rot @ offs[None]
    oc = org[:, c]  # (b, E, 3)
    cols = _cross(w[:, None, :, :], oc[:, :, None, :] - pd[:, None, :, :])  # (b, E, n, 3)
    cols = cols * mask[None, :, :, None]
    rows = np.einsum("beji,benj->bein", pre, cols)  # (b, E, 3, n)
    out: FloatArray = rows.reshape(b, 3 * len(el), skeleton.n_dofs)
    return out


@register
class ExtendedJacobianStep(IKSolver):
    """Šoch & Lórencz: goal rows + basic-element rows (desired change 0), normal
    equations + LU (module docstring)."""

    method = Method.EXTENDED_JACOBIAN
    #: Not a descent method for ‖e‖² (the element rows damp some directions, leave
    #: others nearly undamped; steps along those overshoot): on the double-Y the error
    #: stays above its best for > 50 iterations at a time while converging.
    stall_window = 100
    #: Batches up to this many rows solve their normal equations row by row (Cholesky).
    CHOLESKY_ROWS = 8

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        out: FloatArray
        if state.q.shape[1] == 0:  # no DOF: nothing to move (the loop reports STALLED)
            return np.zeros_like(state.q)
        jx = st.extended_weight * element_jacobian(state.skeleton, state.q)
        j = state.J
        jt = np.swapaxes(j, -1, -2)
        a = jt @ j + np.swapaxes(jx, -1, -2) @ jx
        n = a.shape[-1]
        diag = np.max(np.abs(np.diagonal(a, axis1=-2, axis2=-1)), axis=-1)
        mu = 1e-12 * np.where(diag > 0.0, diag, 1.0)
        a = a + mu[:, None, None] * np.eye(n)
        rhs = _mv(jt, state.e)
        if a.shape[0] <= self.CHOLESKY_ROWS:
            # few problems: LAPACK's Cholesky solve row by row (the normal matrix is
            # positive definite with the guard; a row's result does not depend on the
            # batch); numpy's LU (getrf) runs multithreaded in OpenBLAS and stalls on a
            # busy machine (double-Y: 7.6 → 62 ms per solve at load 8)
            out = np.empty_like(rhs)
            for i in range(a.shape[0]):
                _, x, info = dposv(a[i], rhs[i], lower=True)
                out[i] = x if info == 0 else np.linalg.solve(a[i], rhs[i])
            return out
        out = np.linalg.solve(a, rhs[..., None])[..., 0]
        return out


# --------------------------------------------------------------------------------------
# One raw update (tracking)
# --------------------------------------------------------------------------------------


def step_once(
    skeleton: Skeleton,
    goals: Sequence[Goal],
    q: ArrayLike,
    method: Method,
    settings: SolveSettings | None = None,
    iteration: int = 0,
    previous_e: ArrayLike | None = None,
) -> FloatArray:
    """One update ``q + clamp(step(q))`` of ``method`` (clipped to the limits with
    ``use_limits``), without the loop's stopping tests or best-iterate selection: what a
    tracking application (Buss's moving targets, Šoch & Lórencz's ellipse) applies once
    per frame. ``q`` (n,) or (B, n); returns the same shape. ``iteration`` is passed to
    the step (LBFGSB subdivides on iteration 0; DLS_CLAMPED's per-effector rule needs
    ``previous_e``, the weighted residual of the previous frame, else NaN).

    Raises the same errors as :func:`core.ik.solve` for malformed input.
    """
    if settings is None:
        settings = SolveSettings()
    cls = STEP_CLASSES.get(method) if isinstance(method, Method) else None
    if cls is None:
        raise UnsupportedMethodError(f"method must be an implemented Method, got {method!r}")
    if not isinstance(skeleton, Skeleton):
        raise InvalidInputError(f"skeleton must be a Skeleton, got {skeleton!r}")
    goals = goal_tuple(goals)
    qb, batched = skeleton._batch(q, goals)
    if settings.use_limits:
        qb = skeleton._clip(qb)
    rows = np.arange(qb.shape[0], dtype=np.intp)
    tb = settings.target_jacobian
    ev = skeleton.evaluate(qb, goals, rows=rows, target_based=tb)
    assert ev.J is not None
    prev = (
        np.full_like(ev.e, np.nan)
        if previous_e is None
        else np.broadcast_to(np.asarray(previous_e, dtype=np.float64), ev.e.shape)
    )

    def evaluate(qx: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        e2 = skeleton.evaluate(qx, goals, rows=rows, target_based=tb)
        assert e2.J is not None
        return e2.e, e2.J, e2.goal_error

    state = StepState(
        q=qb,
        e=ev.e,
        J=ev.J,
        goal_error=ev.goal_error,
        previous_e=prev,
        blocks=ev.blocks,
        rows=rows,
        iteration=iteration,
        skeleton=skeleton,
        goals=goals,
        settings=settings,
        evaluate=evaluate,
    )
    dq = np.nan_to_num(
        np.asarray(cls().step(state), dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0
    )
    qn = qb + clamp_max_abs(dq, settings.max_step)
    if settings.use_limits:
        qn = skeleton._clip(qn)
    return qn if batched else qn[0]
