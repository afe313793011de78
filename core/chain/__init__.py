"""Iterative inverse kinematics for any chain or tree (Buss 2009 and the methods of
:mod:`.steps`).

Read in this order: :mod:`.joints` and :mod:`.skeleton` (the model), :mod:`.kinematics`
(forward-kinematics plans), :mod:`.residuals` (one residual/Jacobian per goal kind),
:mod:`.settings` (the loop's settings and each method's), :mod:`.loop` (the one iteration
loop, :class:`IKSolver`), :mod:`.threads`, :mod:`.registry`, :mod:`.steps` (one module per
method family) and :mod:`.solve` (the entry points).
"""

from .joints import Ball, Dofs, Fixed, Free, Hinge, Joint
from .loop import IKSolver, SolveResult, StepState
from .registry import STEP_CLASSES, register
from .residuals import BlockKind, Evaluation, RowBlock
from .settings import (
    METHOD_SETTINGS,
    ClampRule,
    ClampSettings,
    DLSSettings,
    ExtendedJacobianSettings,
    LBFGSBSettings,
    LoopSettings,
    Method,
    NullSpace,
    PseudoinverseSettings,
    SDLSSettings,
    SolveSettings,
    StopReason,
    TaskPrioritySettings,
)
from .skeleton import Skeleton
from .solve import solve, step_once
from .steps import (
    CCDStep,
    DLSClampedStep,
    DLSStep,
    ExtendedJacobianStep,
    JacobianTransposeStep,
    LBFGSBStep,
    PseudoinverseStep,
    SDLSStep,
    TaskPriorityStep,
    basic_elements,
    element_jacobian,
)

__all__ = [
    "Ball",
    "Hinge",
    "Fixed",
    "Free",
    "Dofs",
    "Joint",
    "Skeleton",
    "BlockKind",
    "RowBlock",
    "Evaluation",
    "Method",
    "NullSpace",
    "ClampRule",
    "StopReason",
    "SolveSettings",
    "LoopSettings",
    "DLSSettings",
    "ClampSettings",
    "PseudoinverseSettings",
    "SDLSSettings",
    "LBFGSBSettings",
    "TaskPrioritySettings",
    "ExtendedJacobianSettings",
    "METHOD_SETTINGS",
    "SolveResult",
    "StepState",
    "IKSolver",
    "STEP_CLASSES",
    "register",
    "solve",
    "step_once",
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
