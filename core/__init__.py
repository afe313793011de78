"""Limber's numeric core: numpy/scipy only, never bpy or mathutils.

Usable without Blender: ``from core import Limb, PoseGoal, solve_limb``.
"""

from .errors import (
    InvalidGoalError,
    InvalidInputError,
    InvalidLimbError,
    InvalidLimitsError,
    InvalidOrderError,
    InvalidRotationError,
    LimberError,
    ShapeMismatchError,
)
from .goals import (
    ROTATION_TOLERANCE,
    AimGoal,
    DirectionGoal,
    Goal,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
)
from .limb import (
    LIMIT_TOLERANCE,
    REACH_TOLERANCE,
    EulerLimits,
    Limb,
    LimbLimits,
    LimbSolution,
    PsiStrategy,
    SwivelStrategy,
    feasible_swivel,
    solve_limb,
)

__all__ = [
    "LimberError",
    "InvalidInputError",
    "InvalidLimbError",
    "InvalidGoalError",
    "InvalidLimitsError",
    "InvalidRotationError",
    "InvalidOrderError",
    "ShapeMismatchError",
    "EulerLimits",
    "Limb",
    "LimbLimits",
    "LimbSolution",
    "PoseGoal",
    "PositionGoal",
    "OrientationGoal",
    "PartialOrientationGoal",
    "DirectionGoal",
    "AimGoal",
    "Goal",
    "SwivelStrategy",
    "PsiStrategy",
    "feasible_swivel",
    "solve_limb",
    "LIMIT_TOLERANCE",
    "REACH_TOLERANCE",
    "ROTATION_TOLERANCE",
]

from .errors import InvalidSkeletonError, UnsupportedMethodError  # noqa: E402
from .ik import (  # noqa: E402
    STEP_CLASSES,
    ClampRule,
    IKSolver,
    Method,
    NullSpace,
    SolveResult,
    SolveSettings,
    StepState,
    StopReason,
    register,
    solve,
)
from .limb import SwivelArcs, blocking_limits, limits_at_bound, swivel_arcs  # noqa: E402
from .skeleton import Ball, BlockKind, Fixed, Hinge, Joint, RowBlock, Skeleton  # noqa: E402

__all__ += [
    "InvalidSkeletonError",
    "UnsupportedMethodError",
    "Ball",
    "Hinge",
    "Fixed",
    "Joint",
    "Skeleton",
    "BlockKind",
    "RowBlock",
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
]
__all__ += ["SwivelArcs", "swivel_arcs", "blocking_limits", "limits_at_bound"]
from .geometry import *  # noqa: E402,F403
from .geometry import __all__ as _geometry_all  # noqa: E402

__all__ += _geometry_all
