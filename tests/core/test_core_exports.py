"""``core`` exports every solver, request, result and error in one hop, and keeps every
name it exported before its split into packages."""

from __future__ import annotations

import inspect

import core

#: The names ``core`` exported before ``core`` became packages (a contract other code calls).
EARLIER = [
    "AimGoal",
    "Ball",
    "BlockKind",
    "ClampRule",
    "DirectionGoal",
    "EulerLimits",
    "Fixed",
    "Goal",
    "Hinge",
    "IKSolver",
    "InvalidGoalError",
    "InvalidInputError",
    "InvalidLimbError",
    "InvalidLimitsError",
    "InvalidOrderError",
    "InvalidRotationError",
    "InvalidSkeletonError",
    "Joint",
    "LIMIT_TOLERANCE",
    "Limb",
    "LimbLimits",
    "LimbSolution",
    "LimberError",
    "Method",
    "NullSpace",
    "OrientationGoal",
    "PartialOrientationGoal",
    "PoseGoal",
    "PositionGoal",
    "PsiStrategy",
    "REACH_TOLERANCE",
    "ROTATION_TOLERANCE",
    "RowBlock",
    "STEP_CLASSES",
    "ShapeMismatchError",
    "Skeleton",
    "SolveResult",
    "SolveSettings",
    "StepState",
    "StopReason",
    "SwivelArcs",
    "SwivelStrategy",
    "UnsupportedMethodError",
    "blocking_limits",
    "feasible_swivel",
    "limits_at_bound",
    "register",
    "solve",
    "solve_limb",
    "swivel_arcs",
]

#: The rotation functions (previously only in the rotations module).
ROTATIONS = [
    "EULER_ORDERS",
    "EulerSpec",
    "angle_in_range",
    "axis_angle_to_matrix",
    "check_order",
    "check_rotation",
    "euler_spec",
    "euler_to_matrix",
    "matrix_to_axis_angle",
    "matrix_to_euler",
    "matrix_to_euler_families",
    "matrix_to_quat",
    "orthonormalize",
    "quat_to_matrix",
    "rotation_angle_between",
    "wrap_angle",
]

#: Solvers that were only reachable through their modules.
ONE_HOP = [
    "solve_partial",
    "solve_aim",
    "step_once",
    "JacobianTransposeStep",
    "PseudoinverseStep",
    "DLSStep",
    "DLSClampedStep",
    "SDLSStep",
    "CCDStep",
    "LBFGSBStep",
    "TaskPrioritySettings",
    "TaskPriorityStep",
    "ExtendedJacobianStep",
]


def test_every_earlier_name_still_imports_from_core() -> None:
    for name in EARLIER + ROTATIONS + ONE_HOP:
        assert name in core.__all__, name
        assert getattr(core, name) is not None, name


def test_all_lists_only_importable_names_once() -> None:
    assert len(core.__all__) == len(set(core.__all__))
    for name in core.__all__:
        assert hasattr(core, name), name


def test_step_classes_are_registered_on_import() -> None:
    for cls in (core.DLSStep, core.CCDStep, core.LBFGSBStep, core.ExtendedJacobianStep):
        assert inspect.isclass(cls)
        assert core.STEP_CLASSES[cls.method] is cls
    assert set(core.STEP_CLASSES) == set(core.Method)
