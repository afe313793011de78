"""The analytic 7-DOF limb (Tolani, Goswami & Badler 2000).

Read in this order: :mod:`.model` (the limb, its limits, the solution), :mod:`.kernel`
(Eq. 5–7: elbow angle, swivel circle, pose at φ), :mod:`.feasible` (§3.2.4 feasible swivel
intervals and strategies), :mod:`.pose` (position/pose goals), :mod:`.fast_path` (the
scalar mirror of the pose solve for one goal), :mod:`.unsolvable` and :mod:`.reach` (no
feasible φ, goals out of reach), :mod:`.partial` (§3.3) and :mod:`.aim` (§3.4),
:mod:`.rows` (rows solved alone and merged back), :mod:`.solve` (the entry points) and
:mod:`.arcs` (the labelled elbow circle).
"""

from .affine import CHAIN_ROUNDS, ChainFit, chain_residual, refine_on_chain
from .aim import aim_error, solve_aim
from .arcs import SwivelArcs, blocking_limits, in_intervals, limits_at_bound, swivel_arcs
from .fast_path import FastPose, solve_pose_floats
from .model import (
    LIMIT_TOLERANCE,
    REACH_TOLERANCE,
    EulerLimits,
    Limb,
    LimbLimits,
    LimbSolution,
    Objective,
    SwivelStrategy,
)
from .partial import (
    PsiStrategy,
    choose_psi,
    effector_basis,
    partial_rotation,
    solve_partial,
    wrist_circle,
)
from .reach import pose_swivel, pose_swivels
from .solve import feasible_swivel, solve_limb

__all__ = [
    "LIMIT_TOLERANCE",
    "REACH_TOLERANCE",
    "EulerLimits",
    "Limb",
    "LimbLimits",
    "LimbSolution",
    "Objective",
    "SwivelStrategy",
    "PsiStrategy",
    "solve_limb",
    "solve_pose_floats",
    "FastPose",
    "feasible_swivel",
    "pose_swivel",
    "pose_swivels",
    "solve_partial",
    "solve_aim",
    "aim_error",
    "choose_psi",
    "effector_basis",
    "partial_rotation",
    "wrist_circle",
    "SwivelArcs",
    "swivel_arcs",
    "in_intervals",
    "blocking_limits",
    "limits_at_bound",
    "ChainFit",
    "refine_on_chain",
    "chain_residual",
    "CHAIN_ROUNDS",
]
