"""The step classes, one module per method family: Jacobian transpose and
pseudo-inverse (:mod:`.jacobian`), DLS, DLS_CLAMPED and SDLS (:mod:`.dls`), CCD (Lee,
:mod:`.ccd`), LBFGSB (Ki & Sheen §3, :mod:`.lbfgsb`), TASK_PRIORITY (Ki & Sheen §5–7,
:mod:`.task_priority`) and EXTENDED_JACOBIAN (Šoch & Lórencz, :mod:`.extended_jacobian`).
The notes below describe the last four; the loop's module (:mod:`core.chain.loop`)
describes the first five.

Imported by :mod:`core.chain` (registration happens on import); each class only implements
``step(state) -> Δq`` and runs inside the one loop of :meth:`core.chain.loop.IKSolver.run`
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
minimisation), but converges only linearly, and crawls near singular configurations, so
the sweeps are Anderson-accelerated (a sweep is a fixed-point map) and a damped
least-squares step from q is proposed beside the accelerated point as a rescue (Wang &
Chen's combination of CCD with a Newton-type method; :meth:`CCDStep._accelerate`); a
candidate is taken only where it lowers ‖e‖² below the current one — the objective still
never increases. One iteration is a sweep (independent branches updated together) plus
one residual evaluation, and a damped least-squares solve and evaluation where the
rescue is needed; default budget 1,000 iterations.

LBFGSB — Ki & Sheen §3: minimise F(q) = ‖e(q)‖² + γ²‖q − q_ref‖² (Eq. 3.1; e weighted as
in the loop, γ = ``tikhonov``, q_ref = ``q_rest`` or zeros) subject to the bounds (Eq. 3.2)
with the analytic gradient ∇F = −2Jᵀe + 2γ²(q − q_ref) (J the skeleton's exact Jacobian;
``target_jacobian`` is ignored) via ``scipy.optimize.minimize(method="L-BFGS-B")`` with
``maxcor = lbfgsb_memory`` and ``maxiter = lbfgsb_iterations`` per outer iteration. The
bounds are the joint limits (``use_limits``) intersected with the trust box
[q − max_step, q + max_step], so L-BFGS-B's iterates never leave them. Batched problems
are minimised **one row at a time** (a Python loop over the rows still iterating: scipy
minimises one problem per call, and separate calls make batched results equal the
one-by-one ones exactly; one L-BFGS-B over the concatenated variables of all rows would
share one line search and one curvature memory between the rows: docs/decisions.md).
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
low-priority correction stall the high-priority goals). Strict priority: after
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

from .ccd import CCDStep
from .dls import DLSClampedStep, DLSStep, SDLSStep
from .extended_jacobian import ExtendedJacobianStep, basic_elements, element_jacobian
from .jacobian import JacobianTransposeStep, PseudoinverseStep
from .lbfgsb import LBFGSBStep
from .task_priority import TaskPriorityStep

__all__ = [
    "JacobianTransposeStep",
    "PseudoinverseStep",
    "DLSStep",
    "DLSClampedStep",
    "SDLSStep",
    "CCDStep",
    "LBFGSBStep",
    "TaskPriorityStep",
    "ExtendedJacobianStep",
    "basic_elements",
    "element_jacobian",
]
