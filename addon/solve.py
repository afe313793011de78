"""Per-frame work: solve an armature's enabled limbs and write the poses.

:func:`solve_object` is the one function the operators, the bake, the live-playback
handler and the tests call. Each limb's last status is cached in :data:`STATUS` (runtime
only, never saved) for panels and reports.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np
from bpy.app.handlers import persistent
from mathutils import Matrix

from ..core import (
    AimGoal,
    LimberError,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    SwivelStrategy,
    solve_limb,
)
from . import mapping
from .mapping import LimbRig, MappingError

#: Goal types and solvers the limb path handles today.
SUPPORTED_GOALS = ("POSITION", "POSE", "PARTIAL", "AIM")
#: Goal types whose solution sets the end bone's rotation (the others hold it).
WRIST_GOALS = ("POSE", "PARTIAL")
#: ``LimbSettings.axis`` → unit axis in the end bone's frame.
AXES = {
    "X": (1.0, 0.0, 0.0),
    "Y": (0.0, 1.0, 0.0),
    "Z": (0.0, 0.0, 1.0),
    "NEG_X": (-1.0, 0.0, 0.0),
    "NEG_Y": (0.0, -1.0, 0.0),
    "NEG_Z": (0.0, 0.0, -1.0),
}
SUPPORTED_SOLVERS = ("ANALYTIC",)
#: A goal counts as reached within these errors (m, rad): Blender's float32 targets are
#: only that exact, so the core's float64 tolerance would call exact float32 hits misses.
REACH_POSITION = 1e-6
REACH_ORIENTATION = 1e-6


@dataclass
class LimbStatus:
    """Outcome of solving one limb at one frame (runtime only)."""

    object: str
    limb: str
    solved: bool = False
    message: str = ""
    reachable: bool = False
    within_limits: bool = False
    position_error: float = float("nan")
    orientation_error: float = float("nan")
    swivel: float = float("nan")
    feasible_swivel: tuple[tuple[float, float], ...] = ()
    solve_us: float = float("nan")
    total_us: float = float("nan")
    #: {bone name: (rotation property, values)} as written.
    written: dict[str, tuple[str, tuple[float, ...]]] = field(default_factory=dict)

    @property
    def feasible_measure(self) -> float:
        """Total width (rad) of the feasible swivel intervals."""
        return float(sum(hi - lo for lo, hi in self.feasible_swivel))


#: Last status per (object name, limb name).
STATUS: dict[tuple[str, str], LimbStatus] = {}
_RIGS: dict[tuple[str, str], tuple[tuple[Any, ...], LimbRig]] = {}


def _bone_signature(pb: Any) -> tuple[Any, ...]:
    b = pb.bone
    return (
        tuple(map(tuple, b.matrix_local)),
        b.use_connect,
        None if pb.parent is None else pb.parent.name,
        None if b.use_connect else tuple(pb.location),
        pb.rotation_mode,
        pb.lock_ik_x,
        pb.lock_ik_y,
        pb.lock_ik_z,
        pb.use_ik_limit_x,
        pb.use_ik_limit_y,
        pb.use_ik_limit_z,
        pb.ik_min_x,
        pb.ik_min_y,
        pb.ik_min_z,
        pb.ik_max_x,
        pb.ik_max_y,
        pb.ik_max_z,
    )


def rig_for(obj: Any, settings: Any) -> LimbRig:
    """The (cached) :class:`LimbRig` of a limb's settings; rebuilt when anything changed."""
    names = (settings.upper_bone, settings.lower_bone, settings.end_bone)
    pbs = obj.pose.bones
    try:
        sig: tuple[Any, ...] = (
            names,
            settings.hinge_axis,
            settings.use_limits,
            *(_bone_signature(pbs[n]) for n in names),
        )
        parent = pbs[names[0]].parent
        if parent is not None:
            sig += (tuple(map(tuple, parent.bone.matrix_local)),)
    except KeyError:
        sig = ()  # let build_rig name the missing bone
    key = (obj.name, settings.name)
    hit = _RIGS.get(key)
    if hit is not None and sig and hit[0] == sig:
        return hit[1]
    rig = mapping.build_rig(
        obj, names, hinge_axis=settings.hinge_axis, use_limits=settings.use_limits
    )
    _RIGS[key] = (sig, rig)
    return rig


def clear_caches() -> None:
    """Forget cached rigs and statuses (e.g. after loading a file)."""
    _RIGS.clear()
    STATUS.clear()


def _goal(
    obj: Any, obj_eval: Any, settings: Any, rig: LimbRig, depsgraph: Any
) -> tuple[Any, dict[str, Any], str]:
    """The core goal and solve options of a limb, in its shoulder frame."""
    target = settings.target
    s = mapping.shoulder_frame(obj, rig, obj_eval)
    s_inv = mapping.inv_rigid(s)
    t = mapping.target_in_armature(obj_eval, target.evaluated_get(depsgraph), settings.target_bone)
    g = s_inv @ t
    kwargs: dict[str, Any] = {}
    note = ""
    kind = settings.goal_type
    axis = np.array(AXES[settings.axis])
    if kind == "POSE":
        goal: Any = PoseGoal(position=g[:3, 3], rotation=g[:3, :3])
    elif kind == "PARTIAL":  # the end bone's axis along the target's same axis
        goal = PartialOrientationGoal(position=g[:3, 3], axis=axis, direction=g[:3, :3] @ axis)
    elif kind == "AIM":  # the end bone's axis ray through the target's origin
        goal = AimGoal(target=g[:3, 3], axis=axis)
    else:
        goal = PositionGoal(position=g[:3, 3])
    if kind in ("POSITION", "AIM"):
        kwargs["wrist"] = mapping.read_rotation(obj.pose.bones[rig.end])
    mode = settings.swivel_mode
    if mode == "POLE" and settings.pole is not None:
        p = mapping.object_in_armature(obj_eval, settings.pole.evaluated_get(depsgraph))
        kwargs["elbow_target"] = (s_inv @ np.append(p, 1.0))[:3]
    else:
        if mode == "POLE":
            note = "no pole object; using the swivel angle"
        kwargs["swivel"] = float(settings.swivel)
        if mode == "LIMITS_MIDPOINT":
            kwargs["strategy"] = SwivelStrategy.MIDPOINT
    return goal, kwargs, note


def solve_limb_settings(
    obj: Any, obj_eval: Any, settings: Any, depsgraph: Any, *, write: bool = True
) -> LimbStatus:
    """Solve one limb (settings = a ``LIMBER_PG_limb``) and write its pose."""
    t0 = time.perf_counter()
    st = LimbStatus(object=obj.name, limb=settings.name)
    if settings.goal_type not in SUPPORTED_GOALS:
        st.message = f"goal type {settings.goal_type} is not supported yet"
    elif settings.solver not in SUPPORTED_SOLVERS:
        st.message = f"solver {settings.solver} is not supported for limbs yet"
    elif settings.target is None:
        st.message = "no target"
    else:
        try:
            rig = rig_for(obj, settings)
            goal, kwargs, note = _goal(obj, obj_eval, settings, rig, depsgraph)
            t1 = time.perf_counter()
            sol = solve_limb(rig.limb, goal, **kwargs)
            st.solve_us = (time.perf_counter() - t1) * 1e6
        except (MappingError, LimberError) as exc:
            st.message = str(exc)
        else:
            if write:
                st.written = mapping.write_limb(
                    obj,
                    rig,
                    sol.shoulder,
                    float(sol.elbow),
                    sol.wrist if settings.goal_type in WRIST_GOALS else None,
                )
            st.solved = True
            st.within_limits = bool(sol.within_limits)
            st.position_error = float(sol.position_error)
            st.orientation_error = float(sol.orientation_error)
            aim = getattr(sol, "aim_error", None)
            if aim is not None:  # aim goals: the ray's miss angle is the error
                st.orientation_error = float(aim)
            st.reachable = bool(sol.reachable) or (
                st.position_error <= REACH_POSITION and st.orientation_error <= REACH_ORIENTATION
            )
            st.swivel = float(sol.swivel)
            st.feasible_swivel = tuple(sol.feasible_swivel)
            msgs = [note] if note else []
            if not rig.limits_exact:
                msgs.append("the lower bone's IK limits are not about the hinge axis; ignored")
            if not st.reachable:
                msgs.append(
                    f"target not reached (position error {st.position_error:.4g} m, "
                    f"orientation error {st.orientation_error:.4g} rad)"
                )
            if not st.within_limits:
                msgs.append("no pose within the joint limits reaches the target")
            st.message = "; ".join(msgs) if msgs else "ok"
    st.total_us = (time.perf_counter() - t0) * 1e6
    STATUS[(obj.name, settings.name)] = st
    return st


def solve_object(
    obj: Any,
    depsgraph: Any | None = None,
    *,
    limbs: Iterable[str] | None = None,
    write: bool = True,
) -> list[LimbStatus]:
    """Solve the enabled limbs of an armature object at the current frame.

    Args:
        obj: the armature object (original, not evaluated).
        depsgraph: evaluated depsgraph to read parents and targets from (default: the
            context's, evaluated if needed).
        limbs: only these limb names (default: all enabled limbs).
        write: write the solved local rotations to the pose bones.

    Returns the per-limb statuses (also cached in :data:`STATUS`). Chains are not solved
    yet. The pose is written without evaluation; call ``depsgraph.update()`` (or change
    frame) to see it evaluated.
    """
    if obj is None or obj.type != "ARMATURE":
        raise MappingError(f"{getattr(obj, 'name', obj)!r} is not an armature object")
    dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(dg)
    wanted = None if limbs is None else set(limbs)
    out = []
    for settings in obj.limber.limbs:
        if wanted is None:
            if not settings.enabled:
                continue
        elif settings.name not in wanted:
            continue
        out.append(solve_limb_settings(obj, obj_eval, settings, dg, write=write))
    return out


def snap_swivel(obj: Any, settings: Any) -> float:
    """Set ``settings.swivel`` to the current FK elbow's swivel angle and return it.

    Uses the elbow-position → φ rule (Tolani §3.2.2) on the current FK pose, so solving to
    the current end pose afterwards reproduces the FK pose.
    """
    rig = rig_for(obj, settings)
    r1, theta, r2 = mapping.read_limb_pose(obj, rig)
    limb = rig.limb
    fk = limb.forward(r1, theta, r2)
    elbow = limb.elbow_position(r1)
    sol = solve_limb(limb, PoseGoal(position=fk[:3, 3], rotation=fk[:3, :3]), elbow_target=elbow)
    settings.swivel = float(sol.swivel)
    return float(sol.swivel)


def snap_target(obj: Any, settings: Any, depsgraph: Any | None = None) -> None:
    """Move the limb's target (object, or its target bone) to the end bone's current pose."""
    target = settings.target
    if target is None:
        raise MappingError(f"limb {settings.name!r} has no target")
    dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(dg)
    end = obj_eval.pose.bones.get(settings.end_bone)
    if end is None:
        raise MappingError(f"end bone {settings.end_bone!r} not found in {obj.name!r}")
    world = obj_eval.matrix_world @ end.matrix
    loc, rot, _ = world.decompose()
    if settings.target_bone:
        tpb = target.pose.bones.get(settings.target_bone)
        if tpb is None:
            raise MappingError(f"target bone {settings.target_bone!r} not found")
        t_eval = target.evaluated_get(dg)
        m = t_eval.matrix_world.inverted() @ world.normalized()
        tpb.matrix = m
    else:
        scale = target.matrix_world.to_scale()
        target.matrix_world = Matrix.LocRotScale(loc, rot, scale)


@persistent
def on_frame_change_post(scene: Any, depsgraph: Any = None) -> None:
    """Live playback: solve enabled limbs of every armature in the scene after a frame change."""
    settings = getattr(scene, "limber", None)
    if settings is None or not settings.live_playback:
        return
    for obj in scene.objects:
        if obj.type != "ARMATURE":
            continue
        data = getattr(obj, "limber", None)
        if data is None or not len(data.limbs):
            continue
        try:
            solve_object(obj, depsgraph)
        except MappingError as exc:  # a bad armature must not break playback
            print(f"Limber: {exc}")


@persistent
def on_load_post(*_args: Any) -> None:
    clear_caches()


HANDLERS: tuple[tuple[str, Any], ...] = (
    ("frame_change_post", on_frame_change_post),
    ("load_post", on_load_post),
)


def add_handlers() -> None:
    for attr, fn in HANDLERS:
        lst = getattr(bpy.app.handlers, attr)
        # A reloaded module defines a new function object; drop older copies by name.
        for h in [h for h in lst if getattr(h, "__name__", "") == fn.__name__
                  and getattr(h, "__module__", "") == fn.__module__]:
            lst.remove(h)
        lst.append(fn)


def remove_handlers() -> None:
    for attr, fn in HANDLERS:
        lst = getattr(bpy.app.handlers, attr)
        for h in [h for h in lst if getattr(h, "__name__", "") == fn.__name__
                  and getattr(h, "__module__", "") == fn.__module__]:
            lst.remove(h)
