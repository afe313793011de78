"""Settings of the iterative solvers: the methods, their options and the stop reasons."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidInputError, format_value

_P = TypeVar("_P")


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
            method's budget :attr:`IKSolver.default_max_iterations`: 200; 2,000 for
            JACOBIAN_TRANSPOSE (first-order steps: measured up to ~350 iterations on
            reachable targets 0.3 rad away, median 14–80) and 1,000 for CCD (up to ~60,
            median 8–17; the budget bounds its cost on unreachable targets that keep
            improving slowly).
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
            and a 20-iteration window reported a reachable target as STALLED; 50 for
            JACOBIAN_TRANSPOSE, whose clamped conjugate-gradient steps are not quite
            monotone).
            stall_tolerance: ≥ 0, default 1e-12 (see the module docstring).
        tikhonov: γ ≥ 0 of LBFGSB (Ki & Sheen §3, Eq. 3.1; units of e per rad), default
            1e-4: the objective is ‖e‖² + γ²‖q − q_rest‖² (q_rest default zeros, their
            ‖θ‖²). Failure mode: the minimiser is biased by ≈ γ²‖q − q_rest‖/σ_min, so a
            large γ (e.g. 0.1) leaves targets not ``reached`` at a tight ``tolerance``.
        lbfgsb_iterations: int ≥ 1, default 100: L-BFGS-B iterations per outer iteration
            of LBFGSB (scipy ``maxiter``).
        lbfgsb_memory: int in [1, 50], default 20: L-BFGS-B's ``maxcor`` (stored
            corrections); with fewer the redundant trees need several times the
            evaluations (docs/decisions.md). Failure mode: scipy's L-BFGS-B calls OpenBLAS
            every iteration, whose threads stall on a busy machine: set
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
            :class:`~core.chain.steps.task_priority.TaskPriorityStep`). Failure mode: c > 0 leaves a
            residual ≈ c²/(σ² + c²) per step, so convergence becomes linear (slower).
        extended_weight: w > 0 of EXTENDED_JACOBIAN (Šoch & Lórencz §3), default 0.01:
            multiplies the added "basic element" rows (dimensionless: both the goal rows
            and the element rows scale with segment length). Failure mode: w → 0 gives
            back the singular plain Jacobian (their observation), large w makes steps
            tiny (slow convergence; docs/decisions.md compares w = 1 and 0.01).
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

    @classmethod
    def compose(cls, *parts: Any) -> SolveSettings:
        """The flat settings from parts (:class:`LoopSettings`, :class:`DLSSettings`, …;
        any subset, later parts winning for a shared field, defaults elsewhere)."""
        kwargs: dict[str, Any] = {}
        for part in parts:
            if type(part) not in SETTINGS_PARTS:
                raise InvalidInputError(
                    "SolveSettings.compose takes settings parts "
                    f"({', '.join(t.__name__ for t in SETTINGS_PARTS)}), got {format_value(part)}"
                )
            kwargs.update((f.name, getattr(part, f.name)) for f in fields(part))
        return cls(**kwargs)

    def part(self, kind: type[_P]) -> _P:
        """One part of these settings, e.g. ``settings.part(DLSSettings)``."""
        if kind not in SETTINGS_PARTS:
            raise InvalidInputError(
                f"SolveSettings.part takes one of {', '.join(t.__name__ for t in SETTINGS_PARTS)}"
                f", got {format_value(kind)}"
            )
        return kind(**{f.name: getattr(self, f.name) for f in fields(kind)})  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        def num(name: str) -> float:
            v = getattr(self, name)
            _check(
                isinstance(v, int | float | np.floating | np.integer) and not isinstance(v, bool),
                f"SolveSettings.{name} must be a number, got {format_value(v)}",
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
                f"SolveSettings.{name} must be an int, got {format_value(v)}",
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
                f"SolveSettings.{name} must be finite and >= 0, got {format_value(v)}",
            )
        for name in ("max_step", "clamp_distance", "clamp_angle"):
            v = num(name)
            _check(
                v > 0.0 and not np.isnan(v),
                f"SolveSettings.{name} must be > 0 (inf allowed), got {format_value(v)}",
            )
        for name in ("damping_threshold", "gamma_max", "extended_weight"):
            v = num(name)
            _check(
                np.isfinite(v) and v > 0.0,
                f"SolveSettings.{name} must be finite and > 0, got {format_value(v)}",
            )
        for name in ("use_limits", "adaptive_damping", "target_jacobian"):
            v = getattr(self, name)
            _check(
                isinstance(v, bool | np.bool_),
                f"SolveSettings.{name} must be True or False, got {format_value(v)}",
            )
        c = num("svd_cutoff")
        _check(0.0 <= c < 1.0, f"SolveSettings.svd_cutoff must be in [0, 1), got {format_value(c)}")
        _check(
            isinstance(self.null_space, NullSpace),
            f"SolveSettings.null_space must be a NullSpace member, got "
            f"{format_value(self.null_space)}",
        )
        _check(
            isinstance(self.clamp_rule, ClampRule),
            f"SolveSettings.clamp_rule must be a ClampRule member, got "
            f"{format_value(self.clamp_rule)}",
        )
        if self.q_rest is not None:
            try:
                r = np.asarray(self.q_rest, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(
                    f"q_rest must be numeric, got {format_value(self.q_rest)}"
                ) from exc
            _check(
                r.ndim == 1 and bool(np.all(np.isfinite(r))),
                f"SolveSettings.q_rest must be a finite 1-D array, got {format_value(self.q_rest)}",
            )
            r = r.copy()
            r.setflags(write=False)
            object.__setattr__(self, "q_rest", r)


@dataclass(frozen=True)
class LoopSettings:
    """The loop's own settings (every method): see :class:`SolveSettings` for each field."""

    max_iterations: int | None = None
    tolerance: float = 1e-6
    max_step: float = 0.5
    use_limits: bool = True
    target_jacobian: bool = False
    stall_iterations: int | None = None
    stall_tolerance: float = 1e-12
    threads: int | None = None


@dataclass(frozen=True)
class DLSSettings:
    """DLS and DLS_CLAMPED: damping λ and the adaptive rule (see :class:`SolveSettings`)."""

    damping: float = 0.01
    adaptive_damping: bool = False
    damping_threshold: float = 0.1


@dataclass(frozen=True)
class ClampSettings:
    """DLS_CLAMPED's target clamping (see :class:`SolveSettings`)."""

    clamp_distance: float = 0.5
    clamp_angle: float = math.pi / 4
    clamp_rule: ClampRule = ClampRule.FIXED


@dataclass(frozen=True)
class PseudoinverseSettings:
    """PSEUDOINVERSE (and SDLS's cutoff): singular-value cutoff and null-space objective."""

    svd_cutoff: float = 1e-6
    null_space: NullSpace = NullSpace.NONE
    null_space_gain: float = 0.1
    q_rest: ArrayLike | None = None


@dataclass(frozen=True)
class SDLSSettings:
    """SDLS: the per-singular-vector angle bound γ_max (rad)."""

    gamma_max: float = math.pi / 4
    svd_cutoff: float = 1e-6


@dataclass(frozen=True)
class LBFGSBSettings:
    """LBFGSB: Tikhonov γ, L-BFGS-B iterations and memory, goal-path subdivisions."""

    tikhonov: float = 1e-4
    lbfgsb_iterations: int = 100
    lbfgsb_memory: int = 20
    subdivisions: int = 0
    q_rest: ArrayLike | None = None


@dataclass(frozen=True)
class TaskPrioritySettings:
    """TASK_PRIORITY: priority 0's damping c."""

    priority_damping: float = 0.0


@dataclass(frozen=True)
class ExtendedJacobianSettings:
    """EXTENDED_JACOBIAN: the weight w of the basic-element rows."""

    extended_weight: float = 0.01


#: The settings parts each method reads besides :class:`LoopSettings`.
METHOD_SETTINGS: dict[Method, tuple[type, ...]] = {
    Method.JACOBIAN_TRANSPOSE: (),
    Method.PSEUDOINVERSE: (PseudoinverseSettings,),
    Method.DLS: (DLSSettings,),
    Method.DLS_CLAMPED: (DLSSettings, ClampSettings),
    Method.SDLS: (SDLSSettings,),
    Method.CCD: (),
    Method.LBFGSB: (LBFGSBSettings,),
    Method.TASK_PRIORITY: (TaskPrioritySettings,),
    Method.EXTENDED_JACOBIAN: (ExtendedJacobianSettings,),
}

SETTINGS_PARTS: tuple[type, ...] = (
    LoopSettings,
    DLSSettings,
    ClampSettings,
    PseudoinverseSettings,
    SDLSSettings,
    LBFGSBSettings,
    TaskPrioritySettings,
    ExtendedJacobianSettings,
)
