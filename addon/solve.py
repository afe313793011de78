"""Per-frame work: solve an armature's enabled limbs and chains and write the poses.

:func:`solve_object` is the one function the operators, the bake, the live-playback
handler and the tests call. Each limb's last status is cached in :data:`STATUS` and each
chain's in :data:`CHAIN_STATUS` (runtime only, never saved) for panels and reports.

Limbs with ``solver = 'ANALYTIC'`` use the closed-form :func:`core.solve_limb`. Limbs with
a numeric solver (DLS, SDLS, JACOBIAN_TRANSPOSE, PSEUDOINVERSE, CCD, LBFGSB) become a
three-joint :class:`core.Skeleton` (ball, hinge about the limb's hinge axis, ball; the
same limits) solved by :func:`core.solve` from the bones' current pose: there is no swivel
parameter in that formulation, so ``swivel``, ``swivel_mode`` and ``pole`` are ignored
(the elbow stays on the side where the current pose has it) and the status says so.
Chains (``Object.limber.chains``) are always numeric: see :func:`solve_chain_settings`.

Order: chains first, then limbs (a spine chain moves the shoulders the arms hang from).
Poses are written without depsgraph evaluation; when an item's base bone hangs below bones
written earlier in the same call, the depsgraph is updated once before it is solved.
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
    DirectionGoal,
    LimberError,
    Method,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    SolveSettings,
    SwivelStrategy,
    solve,
    solve_limb,
)
from . import mapping
from .mapping import ChainRig, LimbRig, MappingError

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
#: Solver enum items → numeric :class:`core.Method` (limbs and chains).
METHODS: dict[str, Method] = {
    "DLS": Method.DLS,
    "SDLS": Method.SDLS,
    "JACOBIAN_TRANSPOSE": Method.JACOBIAN_TRANSPOSE,
    "PSEUDOINVERSE": Method.PSEUDOINVERSE,
    "CCD": Method.CCD,
    "LBFGSB": Method.LBFGSB,
    "TASK_PRIORITY": Method.TASK_PRIORITY,
}
SUPPORTED_SOLVERS = ("ANALYTIC", "DLS", "SDLS", "JACOBIAN_TRANSPOSE", "PSEUDOINVERSE", "CCD",
                     "LBFGSB")
#: Numeric solves stop when every goal is within this (m / rad): well below Blender's
#: float32 resolution at human scale, so a reached goal is exact after evaluation.
NUMERIC_TOLERANCE = 1e-8
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
    #: "limb" or "chain".
    kind: str = "limb"
    #: The solver used (the settings' ``solver`` item).
    solver: str = "ANALYTIC"
    #: Numeric solves: iterations taken and why they stopped ('' for analytic limbs).
    iterations: int = 0
    stop_reason: str = ""
    #: Numeric solves: per-effector error (m for position goals, ≈ rad otherwise).
    effector_errors: tuple[float, ...] = ()

    @property
    def feasible_measure(self) -> float:
        """Total width (rad) of the feasible swivel intervals."""
        return float(sum(hi - lo for lo, hi in self.feasible_swivel))


#: Last status per (object name, limb name).
STATUS: dict[tuple[str, str], LimbStatus] = {}
#: Last status per (object name, chain name) (``kind == "chain"``).
CHAIN_STATUS: dict[tuple[str, str], LimbStatus] = {}
_RIGS: dict[tuple[str, str], tuple[tuple[Any, ...], LimbRig]] = {}
_CHAINS: dict[tuple[Any, ...], tuple[tuple[Any, ...], ChainRig]] = {}


def _bone_signature(pb: Any) -> tuple[Any, ...]:
    b = pb.bone
    return (
        b.matrix_local.copy(),  # a mathutils Matrix (a copy: the RNA one is live)
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
            sig += (parent.bone.matrix_local.copy(),)
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
    _CHAINS.clear()
    STATUS.clear()
    CHAIN_STATUS.clear()


@dataclass
class GoalInputs:
    """One frame's raw inputs of a limb solve, in its shoulder frame (see :func:`_goal`)."""

    g: Any  # target frame, 4×4
    wrist: Any  # held end-bone rotation (POSITION / AIM goals) or None
    elbow_target: Any  # pole point or None
    swivel: float
    note: str


def goal_inputs(
    obj: Any, obj_eval: Any, settings: Any, rig: LimbRig, depsgraph: Any
) -> GoalInputs:
    """Read a limb's target, pole, swivel and held wrist at the current frame."""
    s_inv = mapping.inv_rigid(mapping.shoulder_frame(obj, rig, obj_eval))
    t = mapping.target_in_armature(
        obj_eval, settings.target.evaluated_get(depsgraph), settings.target_bone
    )
    wrist = None
    if settings.goal_type in ("POSITION", "AIM"):
        wrist = mapping.read_rotation(obj.pose.bones[rig.end])
    note = ""
    elbow_target = None
    if settings.swivel_mode == "POLE" and settings.pole is not None:
        p = mapping.object_in_armature(obj_eval, settings.pole.evaluated_get(depsgraph))
        elbow_target = (s_inv @ np.append(p, 1.0))[:3]
    elif settings.swivel_mode == "POLE":
        note = "no pole object; using the swivel angle"
    return GoalInputs(s_inv @ t, wrist, elbow_target, float(settings.swivel), note)


@dataclass
class RawFrame:
    """One frame's raw reads for :func:`goal_inputs_batch` (no conversions)."""

    parent: Any  # parent bone's pose matrix (armature space) or None
    location: Any  # upper bone location (unconnected) or None
    target: Any  # target world matrix (× target bone pose)
    wrist: Any  # held end-bone rotation or None
    pole: Any  # pole world position or None
    swivel: float
    signature: tuple[Any, ...]  # animatable bone settings; must not change within a batch


@dataclass(frozen=True)
class RawPlan:
    """What :func:`read_raw` looks up once per bake instead of once per frame."""

    target: Any
    target_bone: str
    parent: str | None
    upper: Any  # pose bone, when unconnected (its location is read), else None
    end: Any  # pose bone whose rotation is held (POSITION / AIM goals), else None
    pole: Any  # pole object (POLE mode with a pole), else None


def raw_plan(obj: Any, settings: Any, rig: LimbRig) -> RawPlan:
    pbs = obj.pose.bones
    hold = settings.goal_type in ("POSITION", "AIM")
    pole = settings.pole if settings.swivel_mode == "POLE" else None
    return RawPlan(settings.target, settings.target_bone, rig.parent,
                   None if rig.upper_connected else pbs[rig.upper],
                   pbs[rig.end] if hold else None, pole)


def read_raw(
    obj: Any, obj_eval: Any, settings: Any, rig: LimbRig, depsgraph: Any,
    check_settings: bool = True, plan: RawPlan | None = None,
) -> RawFrame:
    """Read what a limb solve needs at the current frame (batched bake); with
    ``check_settings`` also the animatable bone settings the rig was built from."""
    pl = plan if plan is not None else raw_plan(obj, settings, rig)
    parent = None if pl.parent is None else mapping.mat4(obj_eval.pose.bones[pl.parent].matrix)
    loc = None if pl.upper is None else np.array(pl.upper.location, dtype=np.float64)
    target = pl.target.evaluated_get(depsgraph)
    tw = mapping.mat4(target.matrix_world)
    if pl.target_bone:
        tpb = target.pose.bones.get(pl.target_bone) if target.type == "ARMATURE" else None
        if tpb is None:
            raise MappingError(
                f"target bone {pl.target_bone!r} not found in target {target.name!r}"
            )
        tw = tw @ mapping.mat4(tpb.matrix)
    wrist = None if pl.end is None else mapping.read_rotation(pl.end)
    pole = None
    if pl.pole is not None:
        pole = np.array(pl.pole.evaluated_get(depsgraph).matrix_world.translation)
    sig: tuple[Any, ...] = ()
    if check_settings:
        pbs = obj.pose.bones
        sig = tuple(
            (None if pbs[b].bone.use_connect else tuple(pbs[b].location), pbs[b].rotation_mode,
             *(getattr(pbs[b], f"{k}_{ax}") for k in ("lock_ik", "use_ik_limit", "ik_min",
                                                       "ik_max") for ax in "xyz"))
            for b in (rig.upper, rig.lower, rig.end)
        )
    return RawFrame(parent, loc, tw, wrist, pole, float(settings.swivel), sig)


def goal_inputs_batch(obj: Any, world: Any, frames: list[RawFrame], rig: LimbRig) -> dict[str, Any]:
    """Batched :func:`goal_inputs` from (N,) raw frames and the armature world matrices
    (N, 4, 4): ``g`` (N, 4, 4), ``wrist``, ``elbow_target`` (or None) and ``swivel``."""
    first = frames[0]
    return goal_inputs_arrays(
        obj, world, rig,
        parent=None if first.parent is None else np.stack([f.parent for f in frames]),
        location=None if first.location is None else np.stack([f.location for f in frames]),
        target=np.stack([f.target for f in frames]),
        wrist=None if first.wrist is None else np.stack([f.wrist for f in frames]),
        pole=None if first.pole is None else np.stack([f.pole for f in frames]),
        swivel=np.array([f.swivel for f in frames]),
    )


def goal_inputs_arrays(
    obj: Any, world: Any, rig: LimbRig, *, parent: Any, location: Any, target: Any,
    wrist: Any, pole: Any, swivel: Any,
) -> dict[str, Any]:
    """:func:`goal_inputs_batch` from stacked reads: ``world`` (N, 4, 4) armature world
    matrices; ``parent`` (N, 4, 4) parent-bone pose matrices or None (no parent);
    ``location`` (N, 3) upper-bone locations or None (connected); ``target`` (N, 4, 4)
    target world matrices; ``wrist`` (N, 3, 3) or None; ``pole`` (N, 3) world positions or
    None; ``swivel`` (N,) radians. Rows may be broadcast views of one constant read."""
    w_inv = mapping.world_to_armature_batch(obj, world)
    n = len(swivel)
    s = np.broadcast_to(rig.rest_offset, (n, 4, 4)).copy()
    if rig.parent is not None:
        s = parent @ rig.rest_offset
    if not rig.upper_connected:
        s[:, :3, 3] += np.einsum("nij,nj->ni", s[:, :3, :3], location)
    s_inv = mapping.inv_rigid_batch(mapping.rigid_batch(s))
    t = mapping.rigid_batch(w_inv @ target)
    out: dict[str, Any] = {"g": s_inv @ t, "swivel": np.asarray(swivel, dtype=np.float64)}
    out["wrist"] = wrist
    out["elbow_target"] = None
    if pole is not None:
        p = np.concatenate([pole, np.ones((n, 1))], axis=1)
        out["elbow_target"] = np.einsum("nij,nj->ni", s_inv @ w_inv, p)[:, :3]
    return out


def limb_goal(kind: str, axis_name: str, g: Any) -> Any:
    """The core goal of a limb for target frame(s) ``g`` ((4, 4) or batched (N, 4, 4))."""
    axis = np.array(AXES[axis_name])
    p, r = g[..., :3, 3], g[..., :3, :3]
    if kind == "POSE":
        return PoseGoal(position=p, rotation=r)
    if kind == "PARTIAL":  # the end bone's axis along the target's same axis
        return PartialOrientationGoal(position=p, axis=axis, direction=r @ axis)
    if kind == "AIM":  # the end bone's axis ray through the target's origin
        return AimGoal(target=p, axis=axis)
    return PositionGoal(position=p)


def limb_kwargs(settings: Any, wrist: Any, elbow_target: Any, swivel: Any) -> dict[str, Any]:
    """solve_limb keyword arguments (single or batched values)."""
    kwargs: dict[str, Any] = {}
    if wrist is not None:
        kwargs["wrist"] = wrist
    if elbow_target is not None:
        kwargs["elbow_target"] = elbow_target
    else:
        kwargs["swivel"] = swivel
        if settings.swivel_mode == "LIMITS_MIDPOINT":
            kwargs["strategy"] = SwivelStrategy.MIDPOINT
    return kwargs


def _goal(
    obj: Any, obj_eval: Any, settings: Any, rig: LimbRig, depsgraph: Any
) -> tuple[Any, dict[str, Any], str]:
    """The core goal and solve options of a limb, in its shoulder frame."""
    gi = goal_inputs(obj, obj_eval, settings, rig, depsgraph)
    goal = limb_goal(settings.goal_type, settings.axis, gi.g)
    return goal, limb_kwargs(settings, gi.wrist, gi.elbow_target, gi.swivel), gi.note


# --------------------------------------------------------------------------------------
# Numeric solves (chains, and limbs with a numeric solver)
# --------------------------------------------------------------------------------------

#: Iteration budget per numeric limb solve, by solver (the slow-converging first-order
#: methods get more; chains use their own ``max_iterations``).
LIMB_ITERATIONS: dict[str, int] = {"JACOBIAN_TRANSPOSE": 2000, "CCD": 1000}
DEFAULT_ITERATIONS = 200


def numeric_settings(solver: str, max_iterations: int) -> SolveSettings:
    """Solve settings for a solver item: tolerance :data:`NUMERIC_TOLERANCE`; DLS with
    adaptive damping (λ_max = 0.01: undamped Gauss–Newton away from singularities, damped
    near them; fixed λ = 0.1 needed 5–10× the iterations on the test rigs)."""
    return SolveSettings(
        max_iterations=max_iterations,
        tolerance=NUMERIC_TOLERANCE,
        adaptive_damping=solver == "DLS",
    )


def effector_goal(
    kind: str, g: Any, axis: Any, joint: int, weight: float = 1.0, priority: int = 0
) -> tuple[Any, list[Any], list[Any]]:
    """The core goal for target frame ``g`` (4×4, root frame) on ``joint``, plus its
    position part and its rotational part (unweighted, to measure the two errors)."""
    p, r = g[:3, 3], g[:3, :3]
    common = {"joint": joint, "weight": weight, "priority": priority}
    pos = [PositionGoal(position=p, joint=joint)]
    if kind == "POSE":
        return PoseGoal(position=p, rotation=r, **common), pos, [
            OrientationGoal(rotation=r, joint=joint)
        ]
    if kind == "PARTIAL":
        d = r @ axis
        return PartialOrientationGoal(position=p, axis=axis, direction=d, **common), pos, [
            DirectionGoal(axis=axis, direction=d, joint=joint)
        ]
    if kind == "AIM":
        return AimGoal(target=p, axis=axis, **common), [], [
            AimGoal(target=p, axis=axis, joint=joint)
        ]
    return PositionGoal(position=p, **common), pos, []


def _numeric(
    st: LimbStatus,
    rig: ChainRig,
    goals: list[Any],
    parts: tuple[list[Any], list[Any]],
    q0: Any,
    solver: str,
    iterations: int,
) -> Any:
    """Run :func:`core.solve` and fill ``st`` with measured errors; returns the q."""
    t1 = time.perf_counter()
    res = solve(rig.skeleton, goals, q0, method=METHODS[solver],
                settings=numeric_settings(solver, iterations))
    st.solve_us = (time.perf_counter() - t1) * 1e6
    sk = rig.skeleton
    q = res.q
    pos, rot = parts
    st.position_error = float(np.max(sk.goal_errors(q, pos))) if pos else 0.0
    st.orientation_error = float(np.max(sk.goal_errors(q, rot))) if rot else 0.0
    st.effector_errors = tuple(float(x) for x in np.atleast_1d(res.per_goal_error))
    st.iterations = int(res.iterations)
    st.stop_reason = res.reason.name
    st.within_limits = bool(np.all(q >= sk.lower - 1e-9) and np.all(q <= sk.upper + 1e-9))
    st.reachable = st.position_error <= REACH_POSITION and (
        st.orientation_error <= REACH_ORIENTATION
    )
    st.solved = True
    return q


def _constrained(obj: Any, bones: Iterable[str], msgs: list[str]) -> None:
    """Note bones whose enabled constraints act after (and may override) the solved
    rotation, e.g. the ORG- bones of a generated Rigify rig."""
    pbs = obj.pose.bones
    names = [b for b in bones if any(c.enabled and c.influence > 0.0 for c in pbs[b].constraints)]
    if names:
        msgs.append(f"constraints on {', '.join(names)} may override the solved rotations")


def _finish(st: LimbStatus, msgs: list[str]) -> None:
    if not st.reachable:
        msgs.append(
            f"target not reached (position error {st.position_error:.4g} m, "
            f"orientation error {st.orientation_error:.4g} rad)"
        )
    if not st.within_limits:
        msgs.append("no pose within the joint limits reaches the target")
    st.message = "; ".join(msgs) if msgs else "ok"


def limb_chain_for(obj: Any, settings: Any, rig: LimbRig, hold_end: bool) -> ChainRig:
    """The (cached) three-joint :class:`ChainRig` of a limb solved numerically."""
    key = (obj.name, "limb", settings.name, hold_end)
    hit = _CHAINS.get(key)
    if hit is not None and hit[0][0] is rig:
        return hit[1]
    chain = mapping.build_chain(
        obj, rig.upper, [rig.end], dofs=mapping.limb_dofs(rig, hold_end)
    )
    _CHAINS[key] = ((rig,), chain)
    return chain


def _solve_limb_numeric(
    obj: Any, obj_eval: Any, settings: Any, depsgraph: Any, st: LimbStatus, write: bool
) -> None:
    rig = rig_for(obj, settings)
    kind = settings.goal_type
    hold_end = kind in ("POSITION", "AIM")
    chain = limb_chain_for(obj, settings, rig, hold_end)
    s_inv = mapping.inv_rigid(mapping.shoulder_frame(obj, rig, obj_eval))
    t = mapping.target_in_armature(
        obj_eval, settings.target.evaluated_get(depsgraph), settings.target_bone
    )
    axis = np.array(AXES[settings.axis])
    if kind == "AIM":  # the held end bone's axis, in the end joint's (rest) frame
        axis = mapping.read_rotation(obj.pose.bones[rig.end]) @ axis
    goal, pos, rot = effector_goal(kind, s_inv @ t, axis, chain.joint(rig.end))
    q0 = mapping.read_chain_q(obj, chain)
    iterations = LIMB_ITERATIONS.get(settings.solver, DEFAULT_ITERATIONS)
    q = _numeric(st, chain, [goal], (pos, rot), q0, settings.solver, iterations)
    if write:
        st.written = mapping.write_chain(obj, chain, q)
    msgs = []
    if settings.swivel_mode != "ANGLE" or settings.swivel != 0.0:
        msgs.append(f"swivel settings are ignored by the {settings.solver} solver")
    if not rig.limits_exact:
        msgs.append("the lower bone's IK limits are not about the hinge axis; ignored")
    _constrained(obj, chain.bones, msgs)
    _finish(st, msgs)


def chain_rig_for(obj: Any, settings: Any) -> ChainRig:
    """The (cached) :class:`ChainRig` of a chain's settings; rebuilt when anything changed."""
    tips = tuple(e.tip_bone for e in settings.effectors)
    bones = mapping.chain_bones(obj, settings.root_bone, tips)
    sig: tuple[Any, ...] = (settings.root_bone, tips, settings.use_limits)
    sig += tuple(_bone_signature(pb) for pb in bones)
    parent = bones[0].parent
    if parent is not None:
        sig += (parent.bone.matrix_local.copy(),)
    key = (obj.name, "chain", settings.name)
    hit = _CHAINS.get(key)
    if hit is not None and hit[0] == sig:
        return hit[1]
    rig = mapping.build_chain(obj, settings.root_bone, tips, use_limits=settings.use_limits)
    _CHAINS[key] = (sig, rig)
    return rig


def solve_chain_settings(
    obj: Any, obj_eval: Any, settings: Any, depsgraph: Any, *, write: bool = True
) -> LimbStatus:
    """Solve one chain (settings = a ``LIMBER_PG_chain``) and write its pose.

    The root bone and the bones down to every effector's tip bone form a
    :class:`core.Skeleton` (:func:`mapping.build_chain`); each effector pulls its tip
    bone's frame (head for Position, head and rotation for Pose, head and Axis for
    Partial, the Axis ray for Aim) toward its target with its weight and priority
    (priorities only matter for TASK_PRIORITY). Solved from the current pose with the
    chain's solver and ``max_iterations``. Effectors without a target are skipped.
    """
    t0 = time.perf_counter()
    st = LimbStatus(object=obj.name, limb=settings.name, kind="chain", solver=settings.solver)
    effectors = [e for e in settings.effectors if e.target is not None]
    if settings.solver not in METHODS:
        st.message = f"solver {settings.solver} is not supported for chains"
    elif not len(settings.effectors):
        st.message = "no effectors"
    elif not effectors:
        st.message = "no effector has a target"
    else:
        try:
            rig = chain_rig_for(obj, settings)
            s_inv = mapping.inv_rigid(mapping.root_frame(obj, rig, obj_eval))
            goals, pos, rot = [], [], []
            for e in effectors:
                t = mapping.target_in_armature(
                    obj_eval, e.target.evaluated_get(depsgraph), e.target_bone
                )
                g, p, r = effector_goal(
                    e.goal_type, s_inv @ t, np.array(AXES[e.axis]), rig.joint(e.tip_bone),
                    float(e.weight), int(e.priority),
                )
                goals.append(g)
                pos += p
                rot += r
            q0 = mapping.read_chain_q(obj, rig)
            q = _numeric(st, rig, goals, (pos, rot), q0, settings.solver,
                         int(settings.max_iterations))
        except (MappingError, LimberError) as exc:
            st.message = str(exc)
        else:
            if write:
                st.written = mapping.write_chain(obj, rig, q)
            msgs = []
            if len(effectors) < len(settings.effectors):
                msgs.append("effectors without a target were skipped")
            _constrained(obj, rig.bones, msgs)
            _finish(st, msgs)
    st.total_us = (time.perf_counter() - t0) * 1e6
    CHAIN_STATUS[(obj.name, settings.name)] = st
    return st



def analytic_notes(obj: Any, rig: LimbRig, note: str) -> list[str]:
    """Frame-independent remarks on an analytic limb solve."""
    msgs = [note] if note else []
    if not rig.limits_exact:
        msgs.append("the lower bone's IK limits are not about the hinge axis; ignored")
    _constrained(obj, (rig.upper, rig.lower, rig.end), msgs)
    return msgs


def fill_analytic(st: LimbStatus, sol: Any, notes: list[str]) -> None:
    """Fill ``st`` from a single :class:`core.LimbSolution`."""
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
    st.feasible_swivel = tuple((float(lo), float(hi)) for lo, hi in sol.feasible_swivel)
    _finish(st, list(notes))


def analytic_statuses(
    obj_name: str, settings: Any, sol: Any, notes: list[str], solve_us: float
) -> list[LimbStatus]:
    """One status per row of a batched :class:`core.LimbSolution` (the batched bake):
    the same fields and messages as :func:`fill_analytic`, converted once per array."""
    pos = np.asarray(sol.position_error, dtype=np.float64)
    aim = getattr(sol, "aim_error", None)
    ori = np.asarray(sol.orientation_error if aim is None else aim, dtype=np.float64)
    reach = np.asarray(sol.reachable, dtype=bool) | (
        (pos <= REACH_POSITION) & (ori <= REACH_ORIENTATION)
    )
    rows = zip(
        pos.tolist(), ori.tolist(), reach.tolist(),
        np.asarray(sol.within_limits, dtype=bool).tolist(),
        np.asarray(sol.swivel, dtype=np.float64).tolist(),
        np.asarray(sol.feasible_swivel, dtype=np.float64).tolist(),
        strict=True,
    )
    out = []
    for p, o, r, w, sw, fs in rows:
        st = LimbStatus(
            object=obj_name, limb=settings.name, solver=settings.solver, solved=True,
            reachable=r, within_limits=w, position_error=p, orientation_error=o, swivel=sw,
            feasible_swivel=tuple((lo, hi) for lo, hi in fs if lo == lo and hi == hi),
            solve_us=solve_us,
        )
        _finish(st, list(notes))
        out.append(st)
    return out


def solve_limb_settings(
    obj: Any, obj_eval: Any, settings: Any, depsgraph: Any, *, write: bool = True
) -> LimbStatus:
    """Solve one limb (settings = a ``LIMBER_PG_limb``) and write its pose."""
    t0 = time.perf_counter()
    st = LimbStatus(object=obj.name, limb=settings.name, solver=settings.solver)
    if settings.goal_type not in SUPPORTED_GOALS:
        st.message = f"goal type {settings.goal_type} is not supported yet"
    elif settings.solver not in SUPPORTED_SOLVERS:
        st.message = f"solver {settings.solver} is not supported for limbs yet"
    elif settings.target is None:
        st.message = "no target"
    elif settings.solver != "ANALYTIC":
        try:
            _solve_limb_numeric(obj, obj_eval, settings, depsgraph, st, write)
        except (MappingError, LimberError) as exc:
            st.message = str(exc)
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
            fill_analytic(st, sol, analytic_notes(obj, rig, note))
    st.total_us = (time.perf_counter() - t0) * 1e6
    STATUS[(obj.name, settings.name)] = st
    return st


def solve_object(
    obj: Any,
    depsgraph: Any | None = None,
    *,
    limbs: Iterable[str] | None = None,
    write: bool = True,
    chains: Iterable[str] | None = None,
) -> list[LimbStatus]:
    """Solve the enabled chains and limbs of an armature object at the current frame.

    Args:
        obj: the armature object (original, not evaluated).
        depsgraph: evaluated depsgraph to read parents and targets from (default: the
            context's, evaluated if needed).
        limbs: only these limb names (default: all enabled limbs).
        write: write the solved local rotations to the pose bones.
        chains: only these chain names (default: all enabled chains).

    Returns the statuses, chains first (``kind == "chain"``), then limbs; also cached in
    :data:`CHAIN_STATUS` / :data:`STATUS`. The pose is written without evaluation; call
    ``depsgraph.update()`` (or change frame) to see it evaluated.
    """
    if obj is None or obj.type != "ARMATURE":
        raise MappingError(f"{getattr(obj, 'name', obj)!r} is not an armature object")
    dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(dg)
    data = obj.limber
    todo: list[tuple[Any, Any, str]] = [
        (solve_chain_settings, c, c.root_bone) for c in pick_items(data.chains, chains)
    ]
    todo += [(solve_limb_settings, lb, lb.upper_bone) for lb in pick_items(data.limbs, limbs)]
    out = []
    written: set[str] = set()
    for fn, settings, base in todo:
        if written and write and hangs_below(obj, base, written):
            dg.update()  # the base frame depends on bones written in this call
            obj_eval = obj.evaluated_get(dg)
            written.clear()
        st = fn(obj, obj_eval, settings, dg, write=write)
        written.update(st.written)
        out.append(st)
    return out


def pick_items(items: Any, names: Iterable[str] | None) -> list[Any]:
    if names is None:
        return [it for it in items if it.enabled]
    wanted = set(names)
    return [it for it in items if it.name in wanted]


def hangs_below(obj: Any, bone: str, written: set[str]) -> bool:
    """Whether a proper ancestor of ``bone`` is in ``written``."""
    pb = obj.pose.bones.get(bone)
    pb = None if pb is None else pb.parent
    while pb is not None:
        if pb.name in written:
            return True
        pb = pb.parent
    return False


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
    """Live playback: solve the enabled chains and limbs of every armature in the scene
    after a frame change."""
    settings = getattr(scene, "limber", None)
    if settings is None or not settings.live_playback:
        return
    for obj in scene.objects:
        if obj.type != "ARMATURE":
            continue
        data = getattr(obj, "limber", None)
        if data is None or not (len(data.limbs) or len(data.chains)):
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
