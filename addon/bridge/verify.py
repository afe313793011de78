"""verify: the pose Blender shows, against the goal → the status.

A limb's status describes its end bone **as Blender evaluates it**:

* where the rigid model is proven equal to Blender's evaluation for the rig (no
  constraints or drivers on the limb's bones, Inherit Rotation and full Inherit Scale
  below the upper bone, similarity links: see :func:`proven`), the errors come from the
  model's forward kinematics pushed through the evaluated frame (:func:`model_errors`);
* otherwise the solve writes the pose, the depsgraph is evaluated **once per frame for
  all such limbs and chains**, and the errors are measured on the evaluated end bone
  (:func:`measured_errors`); an analytic limb whose pose is off is then re-solved with a
  corrected goal (:func:`core.refine_goal`, at most :data:`REFINE_ROUNDS` times, kept
  only while the measured error shrinks).

``reached`` is true only when the end bone is within the status tolerance of the goal
(the add-on preferences, :func:`..ui.preferences.tolerances`; by default
:data:`REACH_POSITION` and :data:`REACH_ORIENTATION`). Errors: position in world units
(metres at unit scale), orientation in radians (see :func:`core.goal_errors` for each goal type).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...core import goal_errors, goal_in_frame, refine_axis_goal, refine_goal
from ..ui.preferences import DEFAULT_TOLERANCE, Tolerance, tolerances
from .read import bone_world, target_world
from .requests import AXES, LimbRequest

FloatArray = NDArray[np.float64]

#: The default status tolerance (m, rad): 0.01 mm and 0.01°, far above Blender's float32
#: rounding at human scale (the preferences may change it).
REACH_POSITION = DEFAULT_TOLERANCE.position
REACH_ORIENTATION = DEFAULT_TOLERANCE.orientation
#: Corrective re-solves of a limb whose evaluated pose misses (see the module docstring).
REFINE_ROUNDS = 6


#: The range the preferences' tolerances can take (their properties' ``hard_min`` and
#: ``hard_max``, as the float32 values Blender stores): (position, orientation) lowest and
#: highest. An error within the lowest is within every tolerance the preferences allow;
#: one beyond the highest is within none (tests/blender/test_live_cache.py checks these
#: against the registered properties).
TOLERANCE_LOWEST = Tolerance(float(np.float32(1e-6)), float(np.float32(math.radians(0.001))))
TOLERANCE_HIGHEST = Tolerance(float(np.float32(1e-2)), float(np.float32(math.radians(10.0))))

#: The tolerance held for a whole solve or bake (see :func:`held_tolerances`); None: not
#: read yet (:func:`tolerance_when_needed`).
_HELD: list[Tolerance | None] = []


def _preferred() -> Tolerance:
    """The preferences' tolerance within :data:`TOLERANCE_LOWEST` … :data:`TOLERANCE_HIGHEST`
    (Blender clamps what is set through the properties; a value stored outside the range,
    e.g. by a preferences file of another range, acts as the nearest bound)."""
    t = tolerances()
    lo, hi = TOLERANCE_LOWEST, TOLERANCE_HIGHEST
    return Tolerance(min(max(t.position, lo.position), hi.position),
                     min(max(t.orientation, lo.orientation), hi.orientation))


@contextmanager
def held_tolerances() -> Iterator[Tolerance]:
    """Read the preferences' status tolerance once for the statuses made inside (a solve
    of every limb of an armature, a bake): looking the preferences up costs more than a
    limb's whole status."""
    held = _preferred()
    _HELD.append(held)
    try:
        yield held
    finally:
        _HELD.pop()


class _WhenNeeded:
    """:func:`tolerance_when_needed`'s context manager (a class: a live solve enters one
    per frame, and a generator's context manager costs several times more to enter)."""

    __slots__ = ()

    def __enter__(self) -> None:
        _HELD.append(None)

    def __exit__(self, *exc: object) -> None:
        _HELD.pop()


_WHEN_NEEDED = _WhenNeeded()


def tolerance_when_needed() -> AbstractContextManager[None]:
    """:func:`held_tolerances`, the preferences read only when a decision inside needs
    them (:func:`reached` decides errors below every allowed tolerance or above all of
    them without; a live solve of proven limbs usually needs no read)."""
    return _WHEN_NEEDED


def tolerance() -> Tolerance:
    """The status tolerance: the one held (:func:`held_tolerances`), else the preferences'."""
    if not _HELD:
        return _preferred()
    held = _HELD[-1]
    if held is None:
        held = _HELD[-1] = _preferred()
    return held


def reached(position_error: float, orientation_error: float) -> bool:
    """Whether errors (m, rad) are within the preferences' status tolerance (read only
    when the errors lie between the lowest and the highest tolerance allowed)."""
    lo = TOLERANCE_LOWEST
    if position_error <= lo.position and orientation_error <= lo.orientation:
        return True
    hi = TOLERANCE_HIGHEST
    if position_error > hi.position or orientation_error > hi.orientation:
        return False
    tol = tolerance()
    return position_error <= tol.position and orientation_error <= tol.orientation


def model_errors(req: LimbRequest, sol: Any) -> tuple[FloatArray, FloatArray]:
    """(position, orientation) errors (N,) of a solution pushed through the request's
    evaluated frame. A similarity frame scales the core's own errors (cheap); a sheared
    one (non-uniform scale above the limb) goes through forward kinematics."""
    scale = req.frame_scale
    aim = getattr(sol, "aim_error", None)
    if scale is not None:
        pos = np.atleast_1d(np.asarray(sol.position_error, dtype=np.float64)) * scale
        ori = np.atleast_1d(np.asarray(sol.orientation_error if aim is None else aim,
                                       dtype=np.float64))
        if req.kind == "POSITION":
            ori = np.zeros_like(pos)
        elif req.kind == "AIM":
            pos = np.zeros_like(ori)
        return pos, ori
    wrist = sol.wrist if req.wrist is None else (req.wrist[0] if np.ndim(sol.elbow) == 0
                                                  else req.wrist)
    end = req.frame @ req.limb.forward(sol.shoulder, sol.elbow, wrist)
    return goal_errors(req.kind, AXES[req.axis], end, req.target)


def measured_errors(obj_eval: Any, end_bone: str, kind: str, axis: str, target: FloatArray
                    ) -> tuple[float, float, FloatArray]:
    """(position, orientation) error of the evaluated end bone against a world target
    frame (4×4), and the end bone's world matrix."""
    end = bone_world(obj_eval, end_bone)
    pos, ori = goal_errors(kind, AXES[axis], end, target)
    return float(pos), float(ori), end


def effector_errors(obj_eval: Any, effector: Any, depsgraph: Any) -> tuple[float, float]:
    """Measured errors of a chain effector's evaluated tip bone against its target."""
    t = target_world(effector.target.evaluated_get(depsgraph), effector.target_bone)
    pos, ori, _ = measured_errors(obj_eval, effector.tip_bone, effector.goal_type,
                                  effector.axis, t)
    return pos, ori


def corrected_goal(req: LimbRequest, end_world: FloatArray, sol: Any = None) -> FloatArray:
    """The next goal (frame coordinates, (1, 4, 4)) after the end bone was evaluated at
    ``end_world``: the asked goal corrected by what was reached (see the module
    docstring); position-only goals move only their position. Partial and aim goals,
    given the solution ``sol`` the pose came from, are corrected through the end frame
    its model gave (:func:`core.refine_axis_goal`); without it only their position."""
    got = goal_in_frame(req.frame, end_world[None], inverse=req.frame_inverse)
    if sol is not None and req.kind in ("PARTIAL", "AIM"):
        wrist = sol.wrist if req.wrist is None else req.wrist[0]
        model = req.limb.forward(sol.shoulder, sol.elbow, wrist)
        return refine_axis_goal(req.goal_frame, got, req.target_goal, model,
                                aim=req.kind == "AIM")
    return refine_goal(req.goal_frame, got, req.target_goal, rotation=req.kind == "POSE")


def status_message(st: Any) -> str:
    """The status message: what binds (reach, limits, measured misses), what overrides
    (constraints, drivers, inherit modes, stretched links), what was skipped."""
    msgs = list(st.notes)
    if st.solved and not st.reached:
        how = "measured on the evaluated pose" if st.measured == "depsgraph" else "model"
        msgs.append(
            f"target not reached (position error {st.position_error:.4g} m, "
            f"orientation error {st.orientation_error:.4g} rad, {how})")
    if st.solved and not st.within_limits:
        msgs.append("no pose within the joint limits reaches the target")
    body = "; ".join(msgs) if msgs else "ok"
    if st.worst_of:
        return f"worst frame {st.frame} of {st.worst_of}: {body}"
    return body


def store(pg: Any, st: Any) -> None:
    """Copy a status into its ``LIMBER_PG_status`` property group."""
    pg.reached = bool(st.reached)
    pg.within_limits = bool(st.within_limits)
    pg.position_error = st.position_error if math.isfinite(st.position_error) else -1.0
    pg.orientation_error = (st.orientation_error if math.isfinite(st.orientation_error)
                            else -1.0)
    pg.message = st.message
    pg.measured = st.measured == "depsgraph"
    pg.frame = int(st.frame) if st.frame is not None else 0
