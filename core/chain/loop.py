"""Iterative (Jacobian-based) inverse kinematics for any chain or tree (Buss 2009).

``solve(skeleton, goals, q0, method, settings)`` runs ONE iterative loop, owned by the
base class :class:`IKSolver`; each method is a subclass that only implements
``step(state) -> dq`` (the Robotics-Toolbox pattern). The registry (:mod:`.registry`)
maps every implemented :class:`Method` to its class.

The loop (:meth:`IKSolver.run`), per batch row and iteration:

1. Evaluate the weighted residual ``e = target − current`` (B, m), the Jacobian ``J``
   (B, m, n) with ``J Δq ≈ e`` and the unweighted per-goal errors
   (:meth:`core.chain.skeleton.Skeleton.evaluate`; rows by 3-row
   :class:`~core.chain.residuals.RowBlock`).
2. Stop the row with :class:`StopReason` REACHED when its largest per-goal error (over
   goals of weight > 0) is ≤ ``tolerance`` (m / rad); STALLED when the objective
   ``‖e‖²`` has not dropped below ``(1 − stall_tolerance)`` × its best value for
   ``stall_iterations`` consecutive iterations (e.g. unreachable targets, a local minimum,
   joints pinned at limits; the window defaults to the method's
   :attr:`IKSolver.stall_window`: 20, 100 for the non-monotone EXTENDED_JACOBIAN, 50 for
   JACOBIAN_TRANSPOSE);
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
§2 ClampMag + §8), SDLS (Buss & Kim, selectively damped least squares), CCD (Lee),
LBFGSB (Ki & Sheen §3), TASK_PRIORITY (Ki & Sheen §5–7) and EXTENDED_JACOBIAN (Šoch &
Lórencz): one module per family in :mod:`core.chain.steps`, registered in
:data:`core.chain.registry.STEP_CLASSES`; :func:`core.chain.solve.step_once` applies one
raw update per frame (tracking moving targets). A step class may
override :meth:`IKSolver.objective` (the loop's ‖e‖² for stall detection and the best
iterate).
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidInputError, UnsupportedMethodError
from ..geometry.vec3 import row_max, sum_squares
from ..goals import Goal
from .registry import STEP_CLASSES
from .residuals import Evaluation, RowBlock
from .settings import Method, NullSpace, SolveSettings, StopReason
from .skeleton import Skeleton
from .threads import WORK_PER_THREAD, Gate, worker_count

FloatArray = NDArray[np.float64]

IntArray = NDArray[np.intp]

#: The loop's per-row outputs: (iterations, reasons, q, per-goal errors).
LoopOutput = tuple[NDArray[np.int_], NDArray[np.object_], FloatArray, FloatArray]


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
        frames: ``frames()`` gives the forward kinematics behind ``e`` and ``J`` (node
            frames for :meth:`Skeleton.kinematics_of`), so a step need not recompute them;
            valid until the step's first ``evaluate`` call (which reuses their buffers).
            None: not available (compute ``skeleton.kinematics(q)``).
        frames_last: ``frames_last()`` gives the same forward kinematics as the
            batch-last path's (N, 4, 3, b) axis frames (:attr:`Evaluation.last`) when the
            evaluation took that path, else None; valid as long as ``frames``.
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
    frames: Callable[[], FloatArray | None] | None = field(default=None, repr=False)
    frames_last: Callable[[], FloatArray | None] | None = field(default=None, repr=False)


#: StepState's fields, in order.
STEP_STATE_FIELDS = tuple(f.name for f in fields(StepState))


def step_state(**values: Any) -> StepState:
    """``StepState(**values)`` for the loop, which builds one per iteration, with every
    field given: the values stored without the frozen dataclass's ``object.__setattr__``
    per field (a quarter of the cost; the same instance)."""
    if len(values) != len(STEP_STATE_FIELDS):
        raise TypeError(f"step_state needs the fields {STEP_STATE_FIELDS}, got {tuple(values)}")
    state = object.__new__(StepState)
    state.__dict__.update(values)
    return state


def lexicographic_less(
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


def _frames_of(
    ev: Evaluation, keep: NDArray[np.bool_] | None
) -> tuple[Callable[[], FloatArray | None], Callable[[], FloatArray | None]]:
    """StepState's ``frames`` and ``frames_last`` of ``ev`` (its rows ``keep``, if given)."""
    if keep is None:
        return (lambda: ev.frames), (lambda: ev.last)

    def frames() -> FloatArray | None:
        f = ev.frames
        return None if f is None else f[keep]

    def frames_last() -> FloatArray | None:
        f = ev.last
        return None if f is None else f[..., keep]

    return frames, frames_last


def _any_done(err: FloatArray, tol: float, stall: IntArray, stall_max: int) -> bool:
    """Whether some row reached ``tol`` (a NaN error never does) or stalled: the loop's
    ``(err <= tol).any() or (stall >= stall_max).any()`` by two reductions."""
    return bool(np.fmin.reduce(err) <= tol or np.maximum.reduce(stall) >= stall_max)


def clamp_max_abs(w: FloatArray, d: float | FloatArray) -> FloatArray:
    """Buss & Kim's ClampMaxAbs over the last axis: w scaled so that max |w_j| ≤ d."""
    a = np.abs(w)
    if isinstance(d, float | int) and (not a.size or not np.fmax.reduce(a, axis=None) > d):
        return w.copy()  # no entry exceeds d (NaN ignored: such a row is never scaled)
    m = row_max(a) if w.shape[-1] else np.zeros(w.shape[:-1])
    over = m > d
    if over.shape == np.shape(m) and not np.logical_or.reduce(over, axis=None):
        return w.copy()  # every scale 1 (w · 1 = w)
    scale = np.where(over, d / np.where(m > 0.0, m, 1.0), 1.0)
    out: FloatArray = w * scale[..., None]
    return out


def matvec(a: FloatArray, x: FloatArray) -> FloatArray:
    """Stacked matrix–vector product (b, r, c) · (b, c) → (b, r)."""
    out: FloatArray = (a @ x[..., None])[..., 0]
    return out


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
    #: Whether threaded chunks pass a :class:`Gate` (True for steps whose cost is one
    #: heavy LAPACK/BLAS section, which they wrap in ``opened(self.gate)``).
    gated: ClassVar[bool] = False
    #: Set by :meth:`run`: the chunks' gate while they run side by side on threads
    #: (gated methods; a step may then prefer fewer, larger numpy calls).
    gate: Gate | None = None
    #: Whether :meth:`objective` returns one value per priority level, (b, L), compared
    #: lexicographically (level 0 first) for stall detection and the best iterate when
    #: the goals have two or more levels (one level: ‖e‖² as usual), and whether
    #: ``converged`` also requires level 0 to be met (TASK_PRIORITY).
    lexicographic: ClassVar[bool] = False
    #: Whether :meth:`step` applies ``max_step`` itself, so the loop must not scale its
    #: Δq again (TASK_PRIORITY: its restoration of the higher levels comes after the
    #: clamp and may exceed it slightly; scaling it would undo the restoration).
    clamps_itself: ClassVar[bool] = False
    #: Whether :meth:`step` reads ``StepState.frames`` / ``frames_last`` (the loop builds
    #: them only then; otherwise they are None).
    uses_frames: ClassVar[bool] = False
    #: Set by :meth:`run`: ``settings.tolerance`` (for objectives that tell met levels).
    tolerance: float = 0.0

    def start(self, rows: int, n: int) -> None:
        """Called by :meth:`run` before the loop (and before any thread starts) with the
        batch size and the DOF count: steps that keep per-row state across iterations
        allocate it here (indexed by ``StepState.rows``). Default: nothing."""
        return None

    def finish(
        self,
        skeleton: Skeleton,
        goals: tuple[Goal, ...],
        settings: SolveSettings,
        q_start: FloatArray,
        out: LoopOutput,
    ) -> None:
        """Called by :meth:`run` after the loop, with the (clipped) starts (B, n) and the
        loop's (iterations, reasons, q, per-goal errors) of every row: a method may
        improve the returned rows in place (q and the errors measured there, and the
        reason). Default: nothing."""
        return None

    @abstractmethod
    def step(self, state: StepState) -> FloatArray:
        """The joint change Δq (b, n) for the rows of ``state`` (before clamping)."""

    def objective(self, e: FloatArray, blocks: tuple[RowBlock, ...]) -> FloatArray:
        """(b,) objective the loop uses for stall detection and for the best iterate
        returned when a row does not reach its goals: ‖e‖² by default. Methods that
        minimise something else (TASK_PRIORITY: priorities) override it."""
        return sum_squares(e)

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
        qb, batched = skeleton.check_batch(q0, goals)  # validates the goals first
        goals = tuple(goals)
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
        blocks = skeleton.goal_plan(goals)[0]  # validated row layout (cached)
        n_goals = len(goals)
        weighted = [g.weight > 0.0 for g in goals]
        active_goals = np.array(weighted)
        clip = settings.use_limits and skeleton.has_limits
        q = skeleton.clip_unchecked(qb) if clip else qb.copy()

        iterations = np.zeros(big, dtype=np.int_)
        reasons = np.empty(big, dtype=object)
        out_q = q.copy()
        out_gerr = np.zeros((big, n_goals))
        out = (iterations, reasons, out_q, out_gerr)
        threads = settings.threads
        if threads is None and not self.auto_threads:
            threads = 1
        workers = worker_count(threads, big, skeleton.kinematic_plan.n_nodes, self.work_per_thread)
        self.gate = Gate() if workers > 1 and self.gated else None
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
        self.finish(skeleton, goals, settings, q, out)

        if all(weighted):
            error = out_gerr.max(axis=1)
        else:
            error = out_gerr[:, active_goals].max(axis=1) if active_goals.any() else np.zeros(big)
        reached_out = error <= settings.tolerance
        # by identity (numpy's element-wise != on an object array asks the enum member
        # for its array interface first: slower than the loop)
        converged = np.fromiter(
            (r is not StopReason.MAX_ITERATIONS for r in reasons.tolist()), bool, big
        )
        prios = sorted({g.priority for g in goals if g.weight > 0.0})
        level_error = (
            error[:, None].copy()  # one level: its largest error is the largest error
            if len(prios) == 1
            else np.stack(
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
        out: LoopOutput,
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
                err = row_max(gerr)
            elif any_active:
                err = gerr[:, active_goals].max(axis=1)
            else:
                err = np.zeros(idx.size)
            obj = self.objective(ev.e, blocks)
            # stall counters and best iterate so far (best_* arrays are replaced, never
            # written in place); one row: the same rules on Python floats (cheaper)
            if lex:
                improved, better = lexicographic_less(obj, best_obj, keep_frac)
                stall = np.where(improved, 0, stall + 1)
                b2 = better[:, None]
                best_q = np.where(b2, qa, best_q)
                best_gerr = np.where(b2, gerr, best_gerr)
                best_obj = np.where(b2, obj, best_obj)
                done = it == last or _any_done(err, tol, stall, stall_max)
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
                if np.logical_and.reduce(better):
                    best_q, best_gerr, best_obj = qa, gerr, obj
                elif np.logical_or.reduce(better):
                    b2 = better[:, None]
                    best_q = np.where(b2, qa, best_q)
                    best_gerr = np.where(b2, gerr, best_gerr)
                    best_obj = np.where(better, obj, best_obj)
                done = it == last or _any_done(err, tol, stall, stall_max)
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
                frames = _frames_of(ev, keep) if self.uses_frames else (None, None)
            else:
                e_k, j_k, g_k = ev.e, ev.J, gerr
                frames = _frames_of(ev, None) if self.uses_frames else (None, None)
            sel = None if full else idx

            def evaluate(
                qx: FloatArray, sel: IntArray | None = sel
            ) -> tuple[FloatArray, FloatArray, FloatArray]:
                e2 = skeleton.evaluate(qx, goals, rows=sel, target_based=tb, memo=memo)
                assert e2.J is not None
                return e2.e, e2.J, e2.goal_error

            state = step_state(
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
                frames=frames[0],
                frames_last=frames[1],
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
                qn = skeleton.clip_unchecked(qn)
            prev_e = e_k
            qa = qn
