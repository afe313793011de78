"""The limb solver's entry points: :func:`solve_limb` dispatches a position / pose goal to
:mod:`.pose`, a partial-orientation goal to :mod:`.partial` and an aim goal to
:mod:`.aim`; :func:`feasible_swivel` likewise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..errors import InvalidGoalError, finite_array
from ..goals import AimGoal, PartialOrientationGoal, PoseGoal, PositionGoal
from .aim import solve_aim
from .fast_path import solve_fast
from .model import FloatArray, Limb, LimbGoal, LimbSolution, Objective, SwivelStrategy
from .partial import PsiStrategy, partial_rotation, solve_partial
from .pose import pose_feasible_swivel, solve_checked


def solve_limb(
    limb: Limb,
    goal: LimbGoal | PartialOrientationGoal | AimGoal,
    *,
    swivel: ArrayLike | None = None,
    elbow_target: ArrayLike | None = None,
    strategy: SwivelStrategy | Objective = SwivelStrategy.CLOSEST,
    wrist: ArrayLike | None = None,
    psi: ArrayLike | None = None,
    psi_strategy: PsiStrategy = PsiStrategy.GIVEN,
    wrist_target: ArrayLike | None = None,
    up: ArrayLike | None = None,
    elbow: ArrayLike | None = None,
    elbow_near: ArrayLike | None = None,
) -> LimbSolution:
    """Solve the limb for a goal in closed form (Tolani et al. §3.2–3.4).

    Args:
        limb: the :class:`Limb`.
        goal: :class:`PositionGoal` or :class:`PoseGoal` in the shoulder frame; batched
            goals (leading axis N) give a batched solution.
        swivel: desired φ (rad, any real; scalar or (N,)). Default 0.
        elbow_target: a point (m, shoulder frame; (3,) or (N, 3)); φ_d then minimises the
            elbow's distance to it (§3.2.2; for an aim goal, over the hand circle the
            solve settles on). Mutually exclusive with ``swivel``.
        strategy: with limits, how φ is chosen from the feasible set:
            ``SwivelStrategy.CLOSEST`` (nearest φ_d), ``SwivelStrategy.MIDPOINT`` (middle
            of the largest interval) or a callable objective (see :data:`Objective`)
            minimised over the feasible set. Ignored without limits.
        wrist: for position and aim goals, R2 held fixed ((3, 3) or (N, 3, 3)); default
            identity.
        psi, psi_strategy, wrist_target, up: for :class:`PartialOrientationGoal` (§3.3): ψ
            (rad), the rotation about the aligned axis. ``psi`` given (GIVEN): honoured like
            ``swivel`` — the pose goal G(ψ), with limits φ from its feasible intervals (the
            pose solver's compromise if none), ``reachable=False`` if its wrist is out of
            reach. ψ free: ``psi=None`` (GIVEN, 0 preferred), or the ψ putting the wrist
            nearest ``wrist_target`` (CLOSEST_WRIST, Eq. 12) or lowest / highest along ``up``
            (LOWEST_WRIST / HIGHEST_WRIST, Eq. 11) — taken among the ψ whose wrist is in
            reach (closed form); with limits, where that ψ admits no φ within them, the
            (φ, ψ) minimisation of §3.3; see :mod:`core.limb.partial`.
        elbow: for :class:`AimGoal` (§3.4): θ4 held at this value (rad); default free.
        elbow_near: θ4 (rad, scalar or (N,)) whose nearer root of Eq. (5) is taken when the
            root rule has a choice (no elbow limits, or both roots inside them) — e.g. the
            current FK elbow, so switching FK → IK never flips the elbow. Default: the
            + root without limits, the limits' middle with them.

    Returns:
        :class:`LimbSolution`. Never NaN. Goals out of reach (no elbow angle within the
        elbow limits brings the effector point — for pose goals the wrist centre, goal
        tG − R_G·R_Eᵀ·tE — to the goal's distance; §3.2.1) give ``reachable=False`` and
        the stretched / folded limb (the elbow limit nearest the needed bend) aimed at the
        goal, φ chosen as for reachable goals (so ``swivel`` is honoured where feasible).
        With limits, where that pose breaks one, the pose *within every limit* nearest the
        goal instead: the terminal point's distance minimised first, then the orientation
        error (pose goals), by bounded SLSQP over the joint angles (see
        :mod:`core.limb.reach`); ``within_limits`` is then True unless a given ``wrist``
        (position goals, never moved) is outside the wrist limits. Reachable goals where
        no φ satisfies every limit keep the position exact and minimise the orientation
        error within the limits (§3.2.4 "Unsolvable problems"). ``within_limits`` and the
        errors (from forward kinematics of the returned pose) tell the truth.

    Raises:
        InvalidLimbError, InvalidGoalError, ShapeMismatchError: bad input.
        InvalidInputError: unknown strategy.
    """
    gt = type(goal)
    if (
        (gt is PositionGoal or gt is PoseGoal)
        and type(limb) is Limb
        and psi is None
        and wrist_target is None
        and up is None
        and elbow is None
    ):
        fast = solve_fast(limb, goal, swivel, elbow_target, strategy, wrist, elbow_near)  # type: ignore[arg-type]
        if fast is not None:
            return fast
    if isinstance(goal, PartialOrientationGoal):
        if elbow is not None:
            raise InvalidGoalError("elbow applies to AimGoal only")
        return solve_partial(
            limb,
            goal,
            psi=psi,
            psi_strategy=psi_strategy,
            wrist_target=wrist_target,
            up=up,
            swivel=swivel,
            elbow_target=elbow_target,
            strategy=strategy,
            wrist=wrist,
        )
    if isinstance(goal, AimGoal):
        if (
            psi is not None
            or wrist_target is not None
            or up is not None
            or (psi_strategy is not PsiStrategy.GIVEN)
        ):
            raise InvalidGoalError(
                "psi, psi_strategy, wrist_target and up apply to PartialOrientationGoal, "
                "not AimGoal"
            )

        return solve_aim(
            limb,
            goal,
            elbow=elbow,
            wrist=wrist,
            swivel=swivel,
            elbow_target=elbow_target,
            strategy=strategy,
        )
    if psi is not None or wrist_target is not None or up is not None or elbow is not None:
        raise InvalidGoalError(
            "psi, wrist_target and up apply to PartialOrientationGoal, elbow to AimGoal; "
            f"got a {type(goal).__name__}"
        )
    return solve_checked(limb, goal, swivel, elbow_target, strategy, wrist, elbow_near)


def feasible_swivel(
    limb: Limb,
    goal: LimbGoal | PartialOrientationGoal | AimGoal,
    *,
    wrist: ArrayLike | None = None,
    psi: ArrayLike | None = None,
    elbow: ArrayLike | None = None,
) -> tuple[tuple[float, float], ...] | FloatArray:
    """The feasible swivel intervals for a goal (§3.2.4), as in ``LimbSolution.feasible_swivel``.

    ``wrist`` as in :func:`solve_limb` (position and aim goals); ``psi`` (default 0) fixes
    a partial-orientation goal's free rotation (the intervals of the pose goal G(ψ));
    ``elbow`` an aim goal's θ4 (default: as :func:`solve_limb` chooses it). Batched goals
    give an (N, K, 2) NaN-padded array.
    """
    if psi is not None and not isinstance(goal, PartialOrientationGoal):
        raise InvalidGoalError(f"psi applies to PartialOrientationGoal, not {type(goal).__name__}")
    if elbow is not None and not isinstance(goal, AimGoal):
        raise InvalidGoalError(f"elbow applies to AimGoal, not {type(goal).__name__}")
    if isinstance(goal, PartialOrientationGoal):
        psi_v = 0.0 if psi is None else finite_array(psi, "psi", InvalidGoalError)
        if np.ndim(psi_v) > 1:
            raise InvalidGoalError(f"psi must be a scalar or (N,), got shape {np.shape(psi_v)}")
        rot = partial_rotation(goal, psi_v, np.asarray(limb.swivel_reference))
        pos = np.broadcast_to(np.asarray(goal.position), rot.shape[:-2] + (3,))
        return feasible_swivel(limb, PoseGoal(pos, rot))
    if isinstance(goal, AimGoal):
        out_sol = solve_limb(limb, goal, wrist=wrist, elbow=elbow)
        return out_sol.feasible_swivel  # type: ignore[no-any-return]
    return pose_feasible_swivel(limb, goal, wrist=wrist)
