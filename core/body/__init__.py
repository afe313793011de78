"""Full-body IK: exact analytic limbs (:mod:`core.limb`) inside a numeric body solved by
strict task priority (:mod:`core.chain`). Read :mod:`.model` (the body, settings,
result), then :mod:`.solve` (the hybrid solver)."""

from .model import Body, BodyLimb, BodySettings, BodySolution, shell
from .solve import solve_body

__all__ = ["Body", "BodyLimb", "BodySettings", "BodySolution", "solve_body", "shell"]
