"""Entry points of the iterative solvers: :func:`solve` (the loop until a stop reason) and
:func:`step_once` (one raw update, for tracking).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidInputError, UnsupportedMethodError, format_value
from ..goals import Goal
from .loop import FloatArray, SolveResult, StepState, clamp_max_abs
from .registry import STEP_CLASSES
from .settings import Method, SolveSettings
from .skeleton import Skeleton


def solve(
    skeleton: Skeleton,
    goals: Sequence[Goal],
    q0: ArrayLike,
    method: Method = Method.DLS,
    settings: SolveSettings | None = None,
) -> SolveResult:
    """Solve IK for ``goals`` on ``skeleton`` from ``q0`` with ``method``.

    Args:
        skeleton: the tree (:class:`~core.chain.skeleton.Skeleton`).
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
            f"method must be a Method member ({', '.join(m.name for m in Method)}), got "
            f"{format_value(method)}"
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
        raise InvalidInputError(f"settings must be a SolveSettings, got {format_value(settings)}")
    result: SolveResult = cls().run(skeleton, goals, q0, settings)
    return result


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

    Raises the same errors as :func:`core.chain.solve.solve` for malformed input.
    """
    if settings is None:
        settings = SolveSettings()
    cls = STEP_CLASSES.get(method) if isinstance(method, Method) else None
    if cls is None:
        raise UnsupportedMethodError(
            f"method must be an implemented Method, got {format_value(method)}"
        )
    if not isinstance(skeleton, Skeleton):
        raise InvalidInputError(f"skeleton must be a Skeleton, got {format_value(skeleton)}")
    qb, batched = skeleton.check_batch(q, goals)  # validates the goals first
    goals = tuple(goals)
    if settings.use_limits:
        qb = skeleton.clip_unchecked(qb)
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
        qn = skeleton.clip_unchecked(qn)
    return qn if batched else qn[0]
