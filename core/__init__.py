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
    ROTATION_TOLERANCE,
    EulerLimits,
    Limb,
    LimbLimits,
    LimbSolution,
    SwivelStrategy,
    feasible_swivel,
    solve_limb,
)
from .limb_partial import PsiStrategy

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

from .arcs import SwivelArcs, blocking_limits, limits_at_bound, swivel_arcs  # noqa: E402
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

# Rotation and rigid-transform helpers the Blender bridge uses (outside code imports
# only top-level names of `core`).
from .geometry.rigid import (  # noqa: E402
    affine_inverse,
    apply_goal_offset,
    basis_frame,
    basis_rotation,
    bend_axis,
    compose_trs,
    continuous_eulers,
    continuous_quaternions,
    extrapolate_offset,
    goal_errors,
    goal_in_frame,
    goal_offset,
    limb_links,
    nearest_eulers,
    orthonormalize_yz,
    quaternion_of,
    refine_goal,
    rigid_inverse,
    rotation_about,
    similarity_scale,
    transform_points,
    translation,
)
from .rotations import (  # noqa: E402
    EULER_ORDERS,
    axis_angle_to_matrix,
    euler_to_matrix,
    matrix_to_axis_angle,
    matrix_to_euler_families,
    matrix_to_quat,
    quat_to_matrix,
    rotation_angle_between,
)

__all__ += [
    "affine_inverse", "continuous_eulers", "continuous_quaternions", "goal_errors",
    "goal_in_frame", "orthonormalize_yz", "quaternion_of", "refine_goal", "rigid_inverse",
    "rotation_about", "similarity_scale", "translation", "basis_frame", "basis_rotation",
    "limb_links", "goal_offset", "apply_goal_offset",
    "transform_points", "compose_trs", "bend_axis", "nearest_eulers",
    "extrapolate_offset",
    "EULER_ORDERS", "axis_angle_to_matrix", "euler_to_matrix", "matrix_to_axis_angle",
    "matrix_to_euler_families", "matrix_to_quat", "quat_to_matrix", "rotation_angle_between",
]
