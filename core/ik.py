"""Iterative (Jacobian-based) inverse kinematics for any chain or tree (Buss 2009).

``solve(skeleton, goals, q0, method, settings)`` runs ONE iterative loop, owned by the
base class :class:`IKSolver`; each method is a subclass that only implements
``step(state) -> dq`` (the Robotics-Toolbox pattern). The registry :data:`STEP_CLASSES`
maps every implemented :class:`Method` to its class; :func:`register` adds one.

The loop (:meth:`IKSolver.run`), per batch row and iteration:

1. Evaluate the weighted residual ``e = target − current`` (B, m), the Jacobian ``J``
   (B, m, n) with ``J Δq ≈ e`` and the unweighted per-goal errors
   (:meth:`core.skeleton.Skeleton.evaluate`; rows by 3-row :class:`~core.skeleton.RowBlock`).
2. Stop the row with :class:`StopReason` REACHED when its largest per-goal error (over
   goals of weight > 0) is ≤ ``tolerance`` (m / rad); STALLED when the objective
   ``‖e‖²`` has not dropped below ``(1 − stall_tolerance)`` × its best value for
   ``stall_iterations`` consecutive iterations (e.g. unreachable targets, a local minimum,
   joints pinned at limits; the window defaults to the method's
   :attr:`IKSolver.stall_window`: 20, or 100 for the non-monotone EXTENDED_JACOBIAN and
   JACOBIAN_TRANSPOSE's Barzilai–Borwein steps);
   MAX_ITERATIONS after ``max_iterations`` steps.
3. Otherwise ``dq = step(state)``; ``dq`` is scaled so that ``max |dq_j| ≤ max_step``
   (Buss §8: "almost always a good idea to clamp the maximum angle change"; the
   direction is kept, like ClampMaxAbs; TASK_PRIORITY clamps inside its step,
   :attr:`IKSolver.clamps_itself`); ``q += dq``; with ``use_limits`` the result is
   clipped to the skeleton's limits (q0 is clipped too, so q never leaves the limits).

Rows finish independently (per-row masks); finished rows are not evaluated again, so a
batched solve gives the same rows as one-by-one solves. The returned q is the last
iterate when REACHED, otherwise the iterate with the smallest objective seen
(TASK_PRIORITY with two or more levels: lexicographically smallest, level 0 first); the errors
reported are those of the returned q (measured, never estimated).

Methods (``Method``): JACOBIAN_TRANSPOSE (Buss §3), PSEUDOINVERSE (§4, via SVD, with
Liégeois null-space objectives), DLS (§5, fixed or adaptive λ), DLS_CLAMPED (Buss's DLS′,
§2 ClampMag + §8), SDLS (Buss & Kim, selectively damped least squares) here; CCD (Lee),
LBFGSB (Ki & Sheen §3), TASK_PRIORITY (Ki & Sheen §5–7) and EXTENDED_JACOBIAN (Šoch &
Lórencz) in :mod:`core.ik_methods` (imported at the end of this module), which also has
``step_once`` (one raw update per frame, for tracking moving targets). A step class may
override :meth:`IKSolver.objective` (the loop's ‖e‖² for stall detection and the best
iterate).
"""

from __future__ import annotations

import itertools
import math
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg.lapack import dposv

from .errors import InvalidInputError, UnsupportedMethodError
from .goals import Goal
from .skeleton import BATCH_LAST_ROWS, BlockKind, RowBlock, Skeleton, goal_tuple

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

__all__ = [
    "Method",
    "NullSpace",
    "ClampRule",
    "StopReason",
    "SolveSettings",
    "SolveResult",
    "StepState",
    "IKSolver",
    "STEP_CLASSES",
    "register",
    "solve",
    "JacobianTransposeStep",
    "PseudoinverseStep",
    "DLSStep",
    "DLSClampedStep",
    "SDLSStep",
]


class Method(Enum):
    """Numeric IK methods (see the module docstring for which are implemented)."""

    JACOBIAN_TRANSPOSE = "jacobian_transpose"
    PSEUDOINVERSE = "pseudoinverse"
    DLS = "dls"
    DLS_CLAMPED = "dls_clamped"
    SDLS = "sdls"
    CCD = "ccd"
    LBFGSB = "lbfgsb"
    TASK_PRIORITY = "task_priority"
    EXTENDED_JACOBIAN = "extended_jacobian"


class NullSpace(Enum):
    """Secondary objective φ projected into the null space of J (Buss §4, Eq. 7,
    Liégeois 1977); used by PSEUDOINVERSE.

    NONE: no secondary motion. REST_POSE: φ = gain · (q_rest − q). JOINT_LIMITS:
    φ = −gain · ∇H with Liégeois' H(q) = (1/n) Σ ((q_i − mid_i) / (upper_i − lower_i))²
    over the DOFs with finite limits (pulls them toward the middle of their range).
    """

    NONE = "none"
    REST_POSE = "rest_pose"
    JOINT_LIMITS = "joint_limits"


class ClampRule(Enum):
    """How DLS_CLAMPED bounds each 3-row block of e (Buss §2, "setting targets closer").

    FIXED: e_i = ClampMag(e_i, D) every iteration. PER_EFFECTOR: Buss's rule for
    targets that jump: D_i = ∞ on the first iteration, afterwards D_i = max(d_i, 0) + D
    with d_i how much the previous step moved block i closer to its target.
    D is ``clamp_distance`` for POSITION blocks, ``clamp_angle`` for the others.
    """

    FIXED = "fixed"
    PER_EFFECTOR = "per_effector"


class StopReason(Enum):
    """Why a row's iteration stopped."""

    REACHED = "reached"
    STALLED = "stalled"
    MAX_ITERATIONS = "max_iterations"


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise InvalidInputError(msg)


@dataclass(frozen=True)
class SolveSettings:
    """Settings of :func:`solve` (all validated; InvalidInputError names a bad value).

    Attributes:
        max_iterations: int ≥ 0 or None (default): steps per row at most; None takes the
            method's budget :attr:`IKSolver.default_max_iterations` (200; 3,000 for
            JACOBIAN_TRANSPOSE and 1,000 for CCD, which converge linearly).
        tolerance: ≥ 0, default 1e-6: a row is REACHED when every goal's error (m for
            positions, ≈ rad for rotations/directions; unweighted) is ≤ this.
        max_step: > 0 (rad), default 0.5: per-step clamp on max |Δq_j| (direction kept);
            ``math.inf`` disables it.
        use_limits: default True: clip q0 and every iterate to the skeleton's limits
            (TASK_PRIORITY also holds DOFs at their limits inside its step, level by
            level, so the clipping cannot undo priority 0).
        damping: λ ≥ 0 of DLS / DLS_CLAMPED (units of J: length per rad for position
            rows), default 0.01. With ``adaptive_damping`` it is λ_max.
        adaptive_damping: default False. Rule (Nakamura & Hanafusa 1986, Chiaverini
            1994): with σ_min the smallest singular value of J,
            λ² = λ_max² (1 − (σ_min/ε)²) if σ_min < ε, else 0 — no damping away from
            singularities (fast Gauss–Newton convergence), full damping at them.
        damping_threshold: ε > 0 of the adaptive rule, default 0.1 (units of J).
        svd_cutoff: in [0, 1), default 1e-6: PSEUDOINVERSE and SDLS treat singular
            values σ_i ≤ svd_cutoff · σ_max as zero.
        null_space: :class:`NullSpace` objective for PSEUDOINVERSE, default NONE.
        null_space_gain: ≥ 0, default 0.1: gain of φ.
        q_rest: (n_dofs,) rest pose for NullSpace.REST_POSE (default zeros), rad.
        clamp_distance: D_max > 0 of DLS_CLAMPED for POSITION blocks (length), default
            0.5 (Buss: "approximately half the length of a typical link").
        clamp_angle: D_max > 0 of DLS_CLAMPED for the other blocks (≈ rad), default π/4.
        clamp_rule: :class:`ClampRule`, default FIXED.
        gamma_max: γ_max > 0 of SDLS (rad), default π/4 (Buss & Kim).
        target_jacobian: default False: Buss's alternate Jacobian (§2) for position rows.
        stall_iterations: int ≥ 1 or None (default): the stall window (module
            docstring); None takes the method's :attr:`IKSolver.stall_window` (20; 100 for
            EXTENDED_JACOBIAN, whose error is not monotone: on Buss's double-Y it stays
            above its best value for more than 50 iterations at a time while converging,
            and a 20-iteration window reported a reachable target as STALLED; and for
            JACOBIAN_TRANSPOSE, whose Barzilai–Borwein steps are not monotone either).
            stall_tolerance: ≥ 0, default 1e-12 (see the module docstring).
        tikhonov: γ ≥ 0 of LBFGSB (Ki & Sheen §3, Eq. 3.1; units of e per rad), default
            1e-4: the objective is ‖e‖² + γ²‖q − q_rest‖² (q_rest default zeros, their
            ‖θ‖²). Failure mode: the minimiser is biased by ≈ γ²‖q − q_rest‖/σ_min, so a
            large γ (e.g. 0.1) leaves targets not ``reached`` at a tight ``tolerance``.
        lbfgsb_iterations: int ≥ 1, default 100: L-BFGS-B iterations per outer iteration
            of LBFGSB (scipy ``maxiter``).
        lbfgsb_memory: int in [1, 50], default 20: L-BFGS-B's ``maxcor`` (stored
            corrections). With 5 (the earlier default) the redundant trees needed 2–4× the
            evaluations (median over 10 random targets 0.3 rad away: Y 59 → 29, double-Y
            204 → 48, arm pose 52 → 34 with 20). Failure mode: scipy's L-BFGS-B calls
            OpenBLAS every iteration; on a busy machine its threads stall (2–5 ms per
            evaluation instead of 0.1–0.3 ms, measured at load 5 on 2 CPUs): set
            ``OPENBLAS_NUM_THREADS=1`` in such processes.
        subdivisions: int ≥ 0, default 0: LBFGSB goal-path subdivision (Ki & Sheen §3):
            on the first iteration, position targets are approached through this many
            intermediate targets (angle about the chain's root interpolated uniformly,
            distance linearly — their smoothed Ỹ_i), each minimised in turn.
        priority_damping: c ≥ 0 of TASK_PRIORITY (Ki & Sheen §7, Eq. 7.2; units of J),
            default 0: priority 0's (J_0)⁺ becomes the damped Σ σ/(σ² + c²) v uᵀ (c = 0:
            the exact pseudo-inverse). Lower levels always use c_k² = c² + κ‖r_k‖σ_max
            (their residual-scaled Levenberg–Marquardt damping, κ =
            ``TaskPriorityStep.RESIDUAL_DAMPING``), so c = 0 still damps a conflicting
            lower goal and vanishes for a consistent one (see
            :class:`~core.ik_methods.TaskPriorityStep`). Failure mode: c > 0 leaves a
            residual ≈ c²/(σ² + c²) per step, so convergence becomes linear (slower).
        extended_weight: w > 0 of EXTENDED_JACOBIAN (Šoch & Lórencz §3), default 0.01:
            multiplies the added "basic element" rows (dimensionless: both the goal rows
            and the element rows scale with segment length). Failure mode: w → 0 gives
            back the singular plain Jacobian (their observation), large w makes steps
            tiny (slow convergence): with w = 1 (the earlier default) 11/20 random
            reachable Y targets 0.3 rad away were reached in 200 iterations, with 0.01
            20/20 on the Y, double-Y, 7-DOF arm and 12-joint chain (at most 64 iterations,
            median ≤ 13).
        threads: int ≥ 1 or None (default, automatic): worker threads for a batched
            solve. The rows are split into contiguous chunks solved side by side (numpy
            releases the GIL inside its loops); rows agree with ``threads=1`` to
            rounding (≈ 1e-15 relative per step: chunks of other sizes round differently,
            as a batched solve does against one-by-one solves) and results are
            repeatable for a given setting. None uses one thread per the method's
            ``work_per_thread`` rows × skeleton nodes (:data:`WORK_PER_THREAD` = 10,000;
            DLS and DLS_CLAMPED 6,000; CCD 25,000; LBFGSB never; e.g. 1,000 rows of
            Buss's double-Y: 2), at most the CPUs this process may run on; 1 never starts
            a thread (single problems never do).
    """

    max_iterations: int | None = None
    tolerance: float = 1e-6
    max_step: float = 0.5
    use_limits: bool = True
    damping: float = 0.01
    adaptive_damping: bool = False
    damping_threshold: float = 0.1
    svd_cutoff: float = 1e-6
    null_space: NullSpace = NullSpace.NONE
    null_space_gain: float = 0.1
    q_rest: ArrayLike | None = None
    clamp_distance: float = 0.5
    clamp_angle: float = math.pi / 4
    clamp_rule: ClampRule = ClampRule.FIXED
    gamma_max: float = math.pi / 4
    target_jacobian: bool = False
    stall_iterations: int | None = None
    stall_tolerance: float = 1e-12
    tikhonov: float = 1e-4
    lbfgsb_iterations: int = 100
    lbfgsb_memory: int = 20
    subdivisions: int = 0
    priority_damping: float = 0.0
    extended_weight: float = 0.01
    threads: int | None = None

    def __post_init__(self) -> None:
        def num(name: str) -> float:
            v = getattr(self, name)
            _check(
                isinstance(v, int | float | np.floating | np.integer) and not isinstance(v, bool),
                f"SolveSettings.{name} must be a number, got {v!r}",
            )
            return float(v)

        for name in (
            *(() if self.max_iterations is None else ("max_iterations",)),
            *(() if self.stall_iterations is None else ("stall_iterations",)),
            "lbfgsb_iterations",
            "lbfgsb_memory",
            "subdivisions",
            *(() if self.threads is None else ("threads",)),
        ):
            v = getattr(self, name)
            _check(
                isinstance(v, int | np.integer) and not isinstance(v, bool),
                f"SolveSettings.{name} must be an int, got {v!r}",
            )
        _check(
            self.max_iterations is None or self.max_iterations >= 0,
            f"max_iterations must be >= 0 or None (the method's budget), got {self.max_iterations}",
        )
        _check(
            self.stall_iterations is None or self.stall_iterations >= 1,
            f"stall_iterations must be >= 1 or None, got {self.stall_iterations}",
        )
        _check(
            self.lbfgsb_iterations >= 1,
            f"lbfgsb_iterations must be >= 1, got {self.lbfgsb_iterations}",
        )
        _check(
            1 <= self.lbfgsb_memory <= 50,
            f"lbfgsb_memory must be in [1, 50], got {self.lbfgsb_memory}",
        )
        _check(self.subdivisions >= 0, f"subdivisions must be >= 0, got {self.subdivisions}")
        _check(
            self.threads is None or self.threads >= 1,
            f"threads must be >= 1 or None (automatic), got {self.threads}",
        )
        for name in (
            "tolerance",
            "damping",
            "null_space_gain",
            "stall_tolerance",
            "tikhonov",
            "priority_damping",
        ):
            v = num(name)
            _check(
                np.isfinite(v) and v >= 0.0,
                f"SolveSettings.{name} must be finite and >= 0, got {v!r}",
            )
        for name in ("max_step", "clamp_distance", "clamp_angle"):
            v = num(name)
            _check(
                v > 0.0 and not np.isnan(v),
                f"SolveSettings.{name} must be > 0 (inf allowed), got {v!r}",
            )
        for name in ("damping_threshold", "gamma_max", "extended_weight"):
            v = num(name)
            _check(
                np.isfinite(v) and v > 0.0,
                f"SolveSettings.{name} must be finite and > 0, got {v!r}",
            )
        for name in ("use_limits", "adaptive_damping", "target_jacobian"):
            v = getattr(self, name)
            _check(
                isinstance(v, bool | np.bool_),
                f"SolveSettings.{name} must be True or False, got {v!r}",
            )
        c = num("svd_cutoff")
        _check(0.0 <= c < 1.0, f"SolveSettings.svd_cutoff must be in [0, 1), got {c!r}")
        _check(
            isinstance(self.null_space, NullSpace),
            f"SolveSettings.null_space must be a NullSpace member, got {self.null_space!r}",
        )
        _check(
            isinstance(self.clamp_rule, ClampRule),
            f"SolveSettings.clamp_rule must be a ClampRule member, got {self.clamp_rule!r}",
        )
        if self.q_rest is not None:
            try:
                r = np.asarray(self.q_rest, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"q_rest must be numeric, got {self.q_rest!r}") from exc
            _check(
                r.ndim == 1 and bool(np.all(np.isfinite(r))),
                f"SolveSettings.q_rest must be a finite 1-D array, got {self.q_rest!r}",
            )
            r = r.copy()
            r.setflags(write=False)
            object.__setattr__(self, "q_rest", r)


@dataclass(frozen=True)
class SolveResult:
    """Outcome of :func:`solve`; arrays gain a leading B axis for batched q0.

    Attributes:
        q: (n_dofs,) / (B, n_dofs) the returned configuration (rad), within limits when
            ``use_limits``.
        converged: bool / (B,): the iteration stopped by itself (REACHED or STALLED), not
            by the iteration limit; for TASK_PRIORITY also only when priority level 0 is
            met (a STALLED row whose level-0 error exceeds ``tolerance`` is not converged).
        reached: bool / (B,): every goal (weight > 0) within ``tolerance`` at ``q``.
        iterations: int / (B,): steps taken.
        error: float / (B,): the largest per-goal error at ``q`` (goals of weight > 0).
        per_goal_error: (G,) / (B, G): unweighted per-goal errors at ``q`` (m / ≈ rad).
        reason: :class:`StopReason` / (B,) object array of them.
        level_error: (L,) / (B, L): the largest per-goal error of each priority level
            (goals of weight > 0, distinct ``priority`` values in increasing order, 0
            first; m / ≈ rad). Every method reports it; only TASK_PRIORITY solves the
            levels in order (the others minimise all goals together).
        level_reached: bool (L,) / (B, L): ``level_error <= tolerance`` per level — which
            priority levels were met (``reached`` is all of them).
    """

    q: FloatArray
    converged: bool | NDArray[np.bool_]
    reached: bool | NDArray[np.bool_]
    iterations: int | NDArray[np.int_]
    error: float | FloatArray
    per_goal_error: FloatArray
    reason: StopReason | NDArray[np.object_]
    level_error: FloatArray = field(default_factory=lambda: np.zeros(0))
    level_reached: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))


@dataclass(frozen=True)
class StepState:
    """What a step sees: the b rows of the batch that are still iterating.

    Attributes:
        q: (b, n) current configuration (rad).
        e: (b, m) weighted residual target − current (rows scaled by sqrt(weight)).
        J: (b, m, n) weighted Jacobian, J Δq ≈ e (Buss's or the target-based one).
        goal_error: (b, G) unweighted per-goal errors.
        previous_e: (b, m) the weighted residual of the previous iteration (NaN on the
            first iteration).
        blocks: 3-row blocks (goal index, priority, rows, kind, weight) of e and J.
        rows: (b,) indices of these rows in the full batch (to index batched targets).
        iteration: 0-based iteration number.
        skeleton, goals, settings: the problem.
        evaluate: ``evaluate(q)`` re-evaluates (e, J, goal_error) at another (b, n)
            configuration for these rows (for line searches or per-DOF sweeps).
    """

    q: FloatArray
    e: FloatArray
    J: FloatArray
    goal_error: FloatArray
    previous_e: FloatArray
    blocks: tuple[RowBlock, ...]
    rows: IntArray
    iteration: int
    skeleton: Skeleton
    goals: tuple[Goal, ...]
    settings: SolveSettings
    evaluate: Callable[[FloatArray], tuple[FloatArray, FloatArray, FloatArray]] = field(repr=False)


#: Automatic threading (``SolveSettings.threads=None``) starts one thread per this much
#: work, counted as batch rows × forward-kinematics nodes of the skeleton (one per
#: unlocked DOF or Fixed joint): below it the numpy calls are short, the loop's Python
#: between them (which holds the GIL) dominates and a second thread gains nothing or
#: loses. The default of the methods (:attr:`IKSolver.work_per_thread`); gated DLS needs
#: less, CCD (a sweep of short calls per DOF) more. Measured on two CPUs, µs per
#: problem-iteration, 1 → 2 threads: JACOBIAN_TRANSPOSE double-Y (29 nodes) 1,000 rows
#: 1.52 → 1.23, 3,000 rows 1.78 → 1.22.
WORK_PER_THREAD = 10_000


def _workers(threads: int | None, rows: int, nodes: int, work: int = WORK_PER_THREAD) -> int:
    """Threads for a solve of ``rows`` rows on a skeleton of ``nodes`` forward-kinematics
    nodes (``SolveSettings.threads``; automatic: one per ``work`` rows × nodes)."""
    if threads is None:
        if rows * nodes < 2 * work:  # one thread whatever the CPUs (no syscall)
            return 1
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cpus = os.cpu_count() or 1
        threads = min(cpus, rows * nodes // work)
    return max(1, min(threads, rows))


def _lexicographic_less(
    a: FloatArray, b: FloatArray, keep_frac: float
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Row-wise lexicographic comparison of (rows, L) objectives, level 0 first: whether
    ``a`` improves on ``b`` by the stall test's relative margin at its first differing
    level (``improved``), and whether ``a < b`` lexicographically (``better``)."""
    rows = a.shape[0]
    improved = np.zeros(rows, dtype=bool)
    better = np.zeros(rows, dtype=bool)
    undecided = np.ones(rows, dtype=bool)
    for k in range(a.shape[1]):
        ak, bk = a[:, k], b[:, k]
        improved |= undecided & (ak < bk * keep_frac)
        better |= undecided & (ak < bk)
        undecided &= ak == bk
    return improved, better


def clamp_max_abs(w: FloatArray, d: float | FloatArray) -> FloatArray:
    """Buss & Kim's ClampMaxAbs over the last axis: w scaled so that max |w_j| ≤ d."""
    m = np.max(np.abs(w), axis=-1) if w.shape[-1] else np.zeros(w.shape[:-1])
    scale = np.where(m > d, d / np.where(m > 0.0, m, 1.0), 1.0)
    out: FloatArray = w * scale[..., None]
    return out


def _mv(a: FloatArray, x: FloatArray) -> FloatArray:
    """Stacked matrix–vector product (b, r, c) · (b, c) → (b, r)."""
    out: FloatArray = (a @ x[..., None])[..., 0]
    return out


class _Gate:
    """The turnstile of a threaded solve's chunks (:meth:`IKSolver.run`) for methods whose
    step has one dominant LAPACK/BLAS section (:attr:`IKSolver.gated`).

    Each chunk holds the gate while it runs its loop — the many short numpy calls of
    forward kinematics, residual, Jacobian and bookkeeping — and opens it (:meth:`open`)
    only around that heavy section, a few long calls that release the GIL. So one chunk's
    short calls overlap the other's long ones instead of both chunks contending for the
    GIL at every short call (each contended hand-over puts a thread to sleep; on the
    double-Y, B = 1,000, two threads: 1.87 → 1.64 µs per problem-iteration, median of 8,
    and a much narrower spread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Held by a chunk for its whole loop."""
        with self._lock:
            self._local.depth = 0
            yield

    @contextmanager
    def open(self) -> Iterator[None]:
        """Let the other chunks through for the enclosed heavy calls (nested: once)."""
        depth = self._local.depth
        self._local.depth = depth + 1
        if depth == 0:
            self._lock.release()
        try:
            yield
        finally:
            if depth == 0:
                self._lock.acquire()
            self._local.depth = depth


def _opened(gate: _Gate | None) -> Any:
    """``gate.open()``, or a no-op without a gate (one thread, or an ungated method)."""
    return nullcontext() if gate is None else gate.open()


class IKSolver(ABC):
    """Base class of the iterative methods: owns the loop; subclasses implement
    :meth:`step` and set ``method`` (and ``supports_null_space`` if they use
    ``settings.null_space``). Register them with :func:`register`."""

    method: ClassVar[Method]
    supports_null_space: ClassVar[bool] = False
    #: Default stall window (``SolveSettings.stall_iterations=None``): iterations without
    #: a new best objective before a row is STALLED. Methods whose objective is not
    #: monotone along the iteration need a longer one.
    stall_window: ClassVar[int] = 20
    #: Default iteration budget (``SolveSettings.max_iterations=None``).
    default_max_iterations: ClassVar[int] = 200
    #: Whether automatic threading (``SolveSettings.threads=None``) may split this
    #: method's batches: False for steps that loop over rows in Python (they hold the
    #: GIL; a second thread only adds contention). An explicit ``threads`` is honoured.
    auto_threads: ClassVar[bool] = True
    #: Work (rows × nodes) per automatic thread (:data:`WORK_PER_THREAD`).
    work_per_thread: ClassVar[int] = WORK_PER_THREAD
    #: Whether threaded chunks pass a :class:`_Gate` (True for steps whose cost is one
    #: heavy LAPACK/BLAS section, which they wrap in ``_opened(self.gate)``).
    gated: ClassVar[bool] = False
    #: Set by :meth:`run`: the chunks' gate while they run side by side on threads
    #: (gated methods; a step may then prefer fewer, larger numpy calls).
    gate: _Gate | None = None
    #: Whether :meth:`objective` returns one value per priority level, (b, L), compared
    #: lexicographically (level 0 first) for stall detection and the best iterate when
    #: the goals have two or more levels (one level: ‖e‖² as usual), and whether
    #: ``converged`` also requires level 0 to be met (TASK_PRIORITY).
    lexicographic: ClassVar[bool] = False
    #: Whether :meth:`step` applies ``max_step`` itself, so the loop must not scale its
    #: Δq again (TASK_PRIORITY: its restoration of the higher levels comes after the
    #: clamp and may exceed it slightly; scaling it would undo the restoration).
    clamps_itself: ClassVar[bool] = False
    #: Set by :meth:`run`: ``settings.tolerance`` (for objectives that tell met levels).
    tolerance: float = 0.0

    def start(self, rows: int, n: int) -> None:
        """Called by :meth:`run` before the loop (and before any thread starts) with the
        batch size and the DOF count: steps that keep per-row state across iterations
        allocate it here (indexed by ``StepState.rows``). Default: nothing."""
        return None

    @abstractmethod
    def step(self, state: StepState) -> FloatArray:
        """The joint change Δq (b, n) for the rows of ``state`` (before clamping)."""

    def objective(self, e: FloatArray, blocks: tuple[RowBlock, ...]) -> FloatArray:
        """(b,) objective the loop uses for stall detection and for the best iterate
        returned when a row does not reach its goals: ‖e‖² by default. Methods that
        minimise something else (TASK_PRIORITY: priorities) override it."""
        out: FloatArray = np.add.reduce(e * e, axis=1)
        return out

    def run(
        self,
        skeleton: Skeleton,
        goals: Sequence[Goal],
        q0: ArrayLike,
        settings: SolveSettings,
    ) -> SolveResult:
        """The one iterative loop (module docstring). Raises InvalidInputError subclasses
        for malformed inputs."""
        if not isinstance(skeleton, Skeleton):
            raise InvalidInputError(f"skeleton must be a Skeleton, got {skeleton!r}")
        goals = goal_tuple(goals)
        qb, batched = skeleton._batch(q0, goals)
        if settings.null_space is not NullSpace.NONE and not self.supports_null_space:
            raise UnsupportedMethodError(
                f"null_space={settings.null_space} is not supported by {self.method}; "
                f"methods with null-space objectives: "
                f"{[m.name for m, c in STEP_CLASSES.items() if c.supports_null_space]}"
            )
        if settings.q_rest is not None and np.shape(settings.q_rest) != (skeleton.n_dofs,):
            raise InvalidInputError(
                f"SolveSettings.q_rest must have shape ({skeleton.n_dofs},), got "
                f"{np.shape(settings.q_rest)}"
            )
        big = qb.shape[0]
        self.tolerance = float(settings.tolerance)
        blocks = skeleton._goal_plan(goals)[0]  # validated row layout (cached)
        n_goals = len(goals)
        active_goals = np.array([g.weight > 0.0 for g in goals])
        q = skeleton._clip(qb) if settings.use_limits and skeleton.has_limits else qb.copy()

        iterations = np.zeros(big, dtype=np.int_)
        reasons = np.empty(big, dtype=object)
        out_q = q.copy()
        out_gerr = np.zeros((big, n_goals))
        out = (iterations, reasons, out_q, out_gerr)
        threads = settings.threads
        if threads is None and not self.auto_threads:
            threads = 1
        workers = _workers(threads, big, skeleton._kin.n_nodes, self.work_per_thread)
        self.gate = _Gate() if workers > 1 and self.gated else None
        self.start(big, skeleton.n_dofs)
        args = (skeleton, goals, settings, q, blocks, active_goals)
        if workers == 1:
            self._iterate(*args, 0, big, out)
        else:
            # Rows are independent, so contiguous chunks solved side by side give the rows
            # of one call (to rounding); numpy releases the GIL inside its loops, so the
            # chunks run in parallel.
            cuts = np.linspace(0, big, workers + 1).astype(int).tolist()
            with ThreadPoolExecutor(workers) as pool:
                jobs = [
                    pool.submit(self._iterate, *args, a, b, out)
                    for a, b in itertools.pairwise(cuts)
                ]
                for job in jobs:
                    job.result()

        error = out_gerr[:, active_goals].max(axis=1) if active_goals.any() else np.zeros(big)
        reached_out = error <= settings.tolerance
        converged = reasons != StopReason.MAX_ITERATIONS
        prios = sorted({g.priority for g in goals if g.weight > 0.0})
        level_error = (
            np.stack(
                [
                    out_gerr[
                        :, [i for i, g in enumerate(goals) if g.weight > 0.0 and g.priority == p]
                    ].max(axis=1)
                    for p in prios
                ],
                axis=1,
            )
            if prios
            else np.zeros((big, 0))
        )
        level_reached = level_error <= settings.tolerance
        if self.lexicographic and prios:
            converged &= level_reached[:, 0]
        if batched:
            return SolveResult(
                out_q,
                converged,
                reached_out,
                iterations,
                error,
                out_gerr,
                reasons,
                level_error,
                level_reached,
            )
        return SolveResult(
            out_q[0],
            bool(converged[0]),
            bool(reached_out[0]),
            int(iterations[0]),
            float(error[0]),
            out_gerr[0],
            reasons[0],
            level_error[0],
            level_reached[0],
        )

    def _iterate(self, *args: Any) -> None:
        """:meth:`_loop` holding the gate, if any (a threaded chunk of a gated method)."""
        if self.gate is None:
            self._loop(*args)
        else:
            with self.gate.hold():
                self._loop(*args)

    def _loop(
        self,
        skeleton: Skeleton,
        goals: tuple[Goal, ...],
        settings: SolveSettings,
        q: FloatArray,
        blocks: tuple[RowBlock, ...],
        active_goals: NDArray[np.bool_],
        lo: int,
        hi: int,
        out: tuple[NDArray[np.int_], NDArray[np.object_], FloatArray, FloatArray],
    ) -> None:
        """The loop over rows ``lo:hi`` of the batch (all of it, or one thread's chunk):
        writes those rows of ``out`` = (iterations, reasons, q, per-goal errors)."""
        iterations, reasons, out_q, out_gerr = out
        big, n = q.shape
        n_goals = len(goals)
        any_active = bool(active_goals.any())
        all_active = bool(active_goals.all())
        tb = settings.target_jacobian
        max_step = settings.max_step
        finite_step = math.isfinite(max_step) and not self.clamps_itself
        clip = settings.use_limits and skeleton.has_limits
        # State of the rows still iterating (compacted whenever rows finish): their
        # indices in the batch, q, best iterate/objective/errors, stall counters and
        # previous residual.
        idx = np.arange(lo, hi)
        full = hi - lo == big  # idx is arange(big): batched targets need no row selection
        qa = q[lo:hi]
        best_q = qa
        lex = self.lexicographic and len({b.priority for b in blocks}) > 1
        best_obj = np.full((hi - lo, len({b.priority for b in blocks})) if lex else hi - lo, np.inf)
        best_gerr = np.zeros((hi - lo, n_goals))
        stall = np.zeros(hi - lo, dtype=np.int_)
        prev_e = np.full((hi - lo, 3 * len(blocks)), np.nan)

        keep_frac = 1.0 - settings.stall_tolerance
        tol = settings.tolerance
        stall_max = (
            self.stall_window if settings.stall_iterations is None else settings.stall_iterations
        )
        last = (
            self.default_max_iterations
            if settings.max_iterations is None
            else settings.max_iterations
        )
        memo: dict[str, Any] = {}  # gathered targets, reused while the rows are the same
        for it in range(last + 1):
            ev = skeleton.evaluate(
                qa, goals, rows=None if full else idx, target_based=tb, memo=memo
            )
            assert ev.J is not None
            gerr = ev.goal_error
            if all_active:
                err = np.maximum.reduce(gerr, axis=1)
            elif any_active:
                err = gerr[:, active_goals].max(axis=1)
            else:
                err = np.zeros(idx.size)
            obj = self.objective(ev.e, blocks)
            # stall counters and best iterate so far (best_* arrays are replaced, never
            # written in place); one row: the same rules on Python floats (cheaper)
            if lex:
                improved, better = _lexicographic_less(obj, best_obj, keep_frac)
                stall = np.where(improved, 0, stall + 1)
                b2 = better[:, None]
                best_q = np.where(b2, qa, best_q)
                best_gerr = np.where(b2, gerr, best_gerr)
                best_obj = np.where(b2, obj, best_obj)
                done = it == last or bool((err <= tol).any() or (stall >= stall_max).any())
            elif idx.size == 1:
                o, bo = float(obj[0]), float(best_obj[0])
                stall[0] = 0 if o < bo * keep_frac else stall[0] + 1
                if o < bo:
                    best_q, best_gerr, best_obj = qa, gerr, obj
                done = it == last or float(err[0]) <= tol or stall[0] >= stall_max
            else:
                improved = obj < best_obj * keep_frac
                stall = np.where(improved, 0, stall + 1)
                better = obj < best_obj
                if better.all():
                    best_q, best_gerr, best_obj = qa, gerr, obj
                elif better.any():
                    b2 = better[:, None]
                    best_q = np.where(b2, qa, best_q)
                    best_gerr = np.where(b2, gerr, best_gerr)
                    best_obj = np.where(better, obj, best_obj)
                done = it == last or bool((err <= tol).any() or (stall >= stall_max).any())
            if done and idx.size == 1:  # the last row: the same rules, by scalars
                i0 = int(idx[0])
                iterations[i0] = it
                if float(err[0]) <= tol:
                    out_q[i0], out_gerr[i0], reasons[i0] = qa[0], gerr[0], StopReason.REACHED
                else:
                    out_q[i0], out_gerr[i0] = best_q[0], best_gerr[0]
                    reasons[i0] = (
                        StopReason.STALLED if stall[0] >= stall_max else StopReason.MAX_ITERATIONS
                    )
                break
            if done:
                reached = err <= tol
                finish = reached | (stall >= stall_max) if it < last else np.ones(idx.size, bool)
                stalled = ~reached & (stall >= stall_max)
                limit = ~reached & ~stalled
                fin = idx[finish]
                iterations[fin] = it
                fin_r = idx[reached]
                out_q[fin_r] = qa[reached]
                out_gerr[fin_r] = gerr[reached]
                reasons[fin_r] = StopReason.REACHED
                for mask, why in (
                    (stalled, StopReason.STALLED),
                    (limit & finish, StopReason.MAX_ITERATIONS),
                ):
                    rows = idx[mask]
                    out_q[rows] = best_q[mask]
                    out_gerr[rows] = best_gerr[mask]
                    reasons[rows] = why
                keep = ~finish
                if not keep.any():
                    break
                idx = idx[keep]
                full = False
                qa, best_q, best_gerr = qa[keep], best_q[keep], best_gerr[keep]
                best_obj, stall, prev_e = best_obj[keep], stall[keep], prev_e[keep]
                e_k, j_k, g_k = ev.e[keep], ev.J[keep], gerr[keep]
            else:
                e_k, j_k, g_k = ev.e, ev.J, gerr
            sel = None if full else idx

            def evaluate(
                qx: FloatArray, sel: IntArray | None = sel
            ) -> tuple[FloatArray, FloatArray, FloatArray]:
                e2 = skeleton.evaluate(qx, goals, rows=sel, target_based=tb, memo=memo)
                assert e2.J is not None
                return e2.e, e2.J, e2.goal_error

            state = StepState(
                q=qa,
                e=e_k,
                J=j_k,
                goal_error=g_k,
                previous_e=prev_e,
                blocks=blocks,
                rows=idx,
                iteration=it,
                skeleton=skeleton,
                goals=goals,
                settings=settings,
                evaluate=evaluate,
            )
            dq = np.asarray(self.step(state), dtype=np.float64)
            if dq.shape != qa.shape:
                raise AssertionError(f"{type(self).__name__}.step returned shape {dq.shape}")
            if n:
                amax = float(np.maximum.reduce(np.abs(dq), axis=None))
                if not math.isfinite(amax):
                    dq = np.nan_to_num(dq, nan=0.0, posinf=0.0, neginf=0.0)
                    amax = float(np.abs(dq).max())
                if finite_step and amax > max_step:
                    dq = clamp_max_abs(dq, max_step)
            qn = qa + dq
            if clip:
                qn = skeleton._clip(qn)
            prev_e = e_k
            qa = qn


#: Implemented methods → their step classes. Extend with :func:`register`.
STEP_CLASSES: dict[Method, type[IKSolver]] = {}

_S = TypeVar("_S", bound=type[IKSolver])


def register(cls: _S) -> _S:
    """Class decorator: register ``cls`` as the implementation of ``cls.method``."""
    if not isinstance(getattr(cls, "method", None), Method):
        raise TypeError(f"{cls.__name__}.method must be a Method member")
    STEP_CLASSES[cls.method] = cls
    return cls


# --------------------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------------------


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
        g = _mv(np.swapaxes(state.J, -1, -2), state.e)
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
        jg = _mv(state.J, g)
        num = np.sum(state.e * jg, axis=-1)
        den = np.sum(jg * jg, axis=-1)
        alpha = np.where(den > 0.0, num / np.where(den > 0.0, den, 1.0), 0.0)
        if bb is not None and ok is not None:
            alpha = np.where(ok, bb, alpha)
        out = alpha[:, None] * g
        return out


def _svd(
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
        u, s, vt, keep = _svd(state.J, st.svd_cutoff)
        inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
        ute = _mv(np.swapaxes(u, -1, -2), state.e)
        v = np.swapaxes(vt, -1, -2)
        dq = _mv(v, inv * ute)
        phi = _null_space_objective(state)
        if phi is not None:
            dq = dq + phi - _mv(v, keep * _mv(vt, phi))
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


def _spd_solve(a: FloatArray, r: FloatArray, parallel: bool = False) -> FloatArray:
    """x with a x = r for symmetric positive definite a (b, k, k), r (b, k).

    Below :data:`~core.skeleton.BATCH_LAST_ROWS` rows, and in a solve whose chunks run
    side by side on threads (``parallel``): LAPACK LU (``numpy.linalg.solve``, one call
    that releases the GIL). Otherwise LAPACK Cholesky (``numpy.linalg.cholesky``,
    batched) and the two triangular substitutions batch-last (k steps each over rows of b
    values; numpy has no batched triangular solve): about 1.3× faster than LU on one
    thread for the 12×12 systems of a 4-effector tree, but its 4k small calls hold the
    GIL, so with two threads LU is faster (measured on the double-Y, B = 1,000: 1.9 vs
    2.2 µs per problem-iteration). A factor that is not positive definite to working
    precision (LinAlgError: a zero-damped, rank-deficient JJᵀ) falls back to LU for the
    whole batch."""
    b, k = r.shape
    if b >= BATCH_LAST_ROWS and not parallel:
        try:
            low = np.linalg.cholesky(a).transpose(1, 2, 0).copy()  # (k, k, b)
        except np.linalg.LinAlgError:
            pass
        else:
            y = r.T.copy()  # (k, b)
            for i in range(k):  # L y = r
                if i:
                    y[i] -= np.add.reduce(low[i, :i] * y[:i], axis=0)
                y[i] /= low[i, i]
            for i in range(k - 1, -1, -1):  # Lᵀ x = y
                if i + 1 < k:
                    y[i] -= np.add.reduce(low[i + 1 :, i] * y[i + 1 :], axis=0)
                y[i] /= low[i, i]
            return y.T
    out: FloatArray = np.linalg.solve(a, r[..., None])[..., 0]
    return out


def _dls(
    j: FloatArray, e: FloatArray, lam2: float | FloatArray, gate: _Gate | None = None
) -> FloatArray:
    """Δq = Jᵀ(JJᵀ + λ²I)⁻¹e (Buss Eq. 11) when m ≤ n, else the equal (JᵀJ + λ²I)⁻¹Jᵀe
    (Eq. 10): always the smaller system, solved (not inverted; :func:`_spd_solve`).
    ``lam2``: λ², a float or one per row (b,); ``gate``: the threaded chunks' gate, opened
    around the products and the solve (:class:`_Gate`; its presence also picks the
    solve that suits threads)."""
    if gate is None:
        return _dls_solve(j, e, lam2, False)
    with gate.open():
        return _dls_solve(j, e, lam2, True)


def _dls_solve(
    j: FloatArray, e: FloatArray, lam2: float | FloatArray, parallel: bool
) -> FloatArray:
    b, m, n = j.shape
    if b == 1 and m <= n:  # one problem: LAPACK's Cholesky solve in one call (≈ 2× faster)
        j0 = j[0]
        a0 = j0 @ j0.T
        a0.flat[:: m + 1] += lam2 if isinstance(lam2, float) else float(lam2[0])
        _, x, info = dposv(a0, e[0], lower=True)
        if info == 0:
            one: FloatArray = (j0.T @ x)[None]
            return one
    jt = j.swapaxes(-1, -2)
    lam = lam2 if isinstance(lam2, float) else lam2[:, None]
    if m <= n:
        a = j @ jt
        a.reshape(b, m * m)[:, :: m + 1] += lam  # + λ²I
        out: FloatArray = _mv(jt, _spd_solve(a, e, parallel))
        return out
    a = jt @ j
    a.reshape(b, n * n)[:, :: n + 1] += lam
    out = _spd_solve(a, _mv(jt, e), parallel)
    return out


def _damping(state: StepState, gate: _Gate | None = None) -> float | FloatArray:
    """λ² of DLS: the fixed ``damping``² (a float) or the adaptive rule's (b,) values
    (``gate`` opened around its SVD)."""
    st = state.settings
    if not st.adaptive_damping:
        return float(st.damping) ** 2
    with _opened(gate):
        s = np.linalg.svd(state.J, compute_uv=False)
    smin = s[:, -1] if s.shape[1] else np.zeros(state.q.shape[0])
    eps = st.damping_threshold
    lam2: FloatArray = np.where(smin < eps, st.damping**2 * (1.0 - (smin / eps) ** 2), 0.0)
    return lam2


def _solve_dls(state: StepState, e: FloatArray, gate: _Gate | None = None) -> FloatArray:
    # λ = 0 (fixed damping 0, or the adaptive rule away from singularities, where the
    # smaller system is regular): still guard exact zeros of a degenerate J with the
    # tiniest damping.
    lam2 = _damping(state, gate)
    lam2 = max(lam2, 1e-300) if isinstance(lam2, float) else np.maximum(lam2, 1e-300)
    return _dls(state.J, e, lam2, gate)


@register
class DLSStep(IKSolver):
    """Buss §5: solve (JJᵀ + λ²I) f = e, Δq = Jᵀf (λ fixed or adaptive, see settings)."""

    method = Method.DLS
    gated = True
    #: Gated chunks gain from less work (1 → 2 threads, µs per problem-iteration: Y
    #: 1,500 rows (13,500) 0.98 → 0.87, double-Y 500 rows (14,500) 2.51 → 1.96, 1,000
    #: rows 2.60 → 1.83; arm 1,000 rows (8,000) 1.33 → 1.38, 2,500 rows 1.39 → 1.08).
    work_per_thread = 6_000

    def step(self, state: StepState) -> FloatArray:
        return _solve_dls(state, state.e, self.gate)


@register
class DLSClampedStep(IKSolver):
    """Buss's DLS′ (§2 "Setting target positions closer", §8): DLS on e with every 3-row
    block clamped, e_i = ClampMag(e_i, D_i) (:class:`ClampRule`)."""

    method = Method.DLS_CLAMPED
    gated = True
    work_per_thread = DLSStep.work_per_thread

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        e = state.e.copy()
        for blk in state.blocks:
            ei = e[:, blk.rows]
            sw = math.sqrt(blk.weight)
            norm = np.sqrt(np.sum(ei * ei, axis=-1))
            d = st.clamp_distance if blk.kind is BlockKind.POSITION else st.clamp_angle
            limit = np.full(norm.shape, d * sw)
            if st.clamp_rule is ClampRule.PER_EFFECTOR:
                pe = state.previous_e[:, blk.rows]
                pnorm = np.sqrt(np.sum(pe * pe, axis=-1))
                closer = np.maximum(pnorm - norm, 0.0)
                limit = np.where(np.isnan(pnorm), np.inf, limit + closer)
            over = norm > limit
            scale = np.where(over, limit / np.where(over, norm, 1.0), 1.0)
            e[:, blk.rows] = ei * scale[:, None]
        return _solve_dls(state, e, self.gate)


@register
class SDLSStep(IKSolver):
    """Buss & Kim's selectively damped least squares. With J = Σ σᵢuᵢvᵢᵀ, for each kept
    σᵢ (> svd_cutoff · σ_max): αᵢ = uᵢᵀe; Nᵢ = Σ_l ‖(uᵢ)_l‖ over the 3-row blocks l;
    Mᵢ = σᵢ⁻¹ Σⱼ |vⱼᵢ| ρⱼ with ρⱼ = Σ_l ‖(column j)_l‖; γᵢ = min(1, Nᵢ/Mᵢ) γ_max;
    φᵢ = ClampMaxAbs(σᵢ⁻¹αᵢvᵢ, γᵢ); Δq = ClampMaxAbs(Σᵢ φᵢ, γ_max)."""

    method = Method.SDLS

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        j = state.J
        b, m, n = j.shape
        u, s, vt, keep = _svd(j, st.svd_cutoff)
        k = s.shape[1]
        alpha = _mv(np.swapaxes(u, -1, -2), state.e)  # (b, k)
        nl = m // 3
        n_i = np.sqrt(np.sum(u.reshape(b, nl, 3, k) ** 2, axis=2)).sum(axis=1)  # (b, k)
        rho = np.sqrt(np.sum(j.reshape(b, nl, 3, n) ** 2, axis=2)).sum(axis=1)  # (b, n)
        sinv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
        m_i = sinv * _mv(np.abs(vt), rho)  # (b, k)
        ratio = np.where(m_i > 0.0, n_i / np.where(m_i > 0.0, m_i, 1.0), 1.0)
        gamma = np.minimum(1.0, ratio) * st.gamma_max
        phi = (sinv * alpha)[:, :, None] * vt  # (b, k, n): row i is σᵢ⁻¹αᵢvᵢ
        phi = clamp_max_abs(phi, gamma)
        return clamp_max_abs(phi.sum(axis=1), st.gamma_max)


# --------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------


def solve(
    skeleton: Skeleton,
    goals: Sequence[Goal],
    q0: ArrayLike,
    method: Method = Method.DLS,
    settings: SolveSettings | None = None,
) -> SolveResult:
    """Solve IK for ``goals`` on ``skeleton`` from ``q0`` with ``method``.

    Args:
        skeleton: the tree (:class:`~core.skeleton.Skeleton`).
        goals: one or more goals (:mod:`core.goals`) with ``joint=`` set; targets in the
            world (root) frame, shared or batched (N, …) with N = B.
        q0: (n_dofs,) or (B, n_dofs) start configuration(s), rad. Batched q0 solves B
            independent problems at once (vectorised, per-row stopping).
        method: a :class:`Method`; default DLS.
        settings: :class:`SolveSettings` (default ``SolveSettings()``).

    Returns:
        :class:`SolveResult`. Unreachable targets are not an error: the result has
        ``reached=False`` and the measured residual.

    Raises:
        UnsupportedMethodError: a declared but unimplemented method (message lists the
            implemented ones), or null-space objectives with a method without them.
        InvalidInputError (subclasses): malformed q0, goals, settings.
    """
    if not isinstance(method, Method):
        raise InvalidInputError(
            f"method must be a Method member ({', '.join(m.name for m in Method)}), got {method!r}"
        )
    cls = STEP_CLASSES.get(method)
    if cls is None:
        raise UnsupportedMethodError(
            f"method {method.name} is not implemented yet; implemented methods: "
            f"{', '.join(m.name for m in STEP_CLASSES)}"
        )
    if settings is None:
        settings = SolveSettings()
    if not isinstance(settings, SolveSettings):
        raise InvalidInputError(f"settings must be a SolveSettings, got {settings!r}")
    return cls().run(skeleton, goals, q0, settings)


from . import ik_methods as _ik_methods  # noqa: E402,F401  (registers the remaining steps)
