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

Each analytic limb goes the bridge's road: :mod:`~..bridge.read` (the evaluated pose) →
:mod:`~..bridge.requests` → :func:`core.solve_limb` → :mod:`~..bridge.write` →
:mod:`~..bridge.verify`. Items whose model is proven equal to Blender's evaluation get
their status from the model; the others are measured on the depsgraph after all items are
written — one update per round for all of them — and analytic limbs that miss are
re-solved with a corrected goal (:func:`verify_pending`). Statuses are stored in the
items' ``status`` properties (:func:`store_statuses`). A limb that is plain on the frame
(proven, nothing but its target, pole and swivel to read) takes a shorter road through the
same stages (:func:`.plain.solve_plain`), with the same result; the plain limbs of a call
are read one after the other, then solved and written together (:func:`.plain.flush`).

Order: bodies first (:mod:`.body`), then chains, then limbs (a spine chain moves the
shoulders the arms hang from).
Poses are written without depsgraph evaluation; when an item's base bone hangs below bones
written earlier in the same call, the depsgraph is updated once before it is solved.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix
from numpy.typing import NDArray

from ...core import (
    AimGoal,
    DirectionGoal,
    LimberError,
    Method,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    SolveSettings,
    apply_goal_offset,
    extrapolate_offset,
    goal_in_frame,
    goal_offset,
    orthonormalize_yz,
    solve,
    solve_limb,
)
from ..bridge import read, requests, rigify, verify
from ..bridge import rig as mapping
from ..bridge.read import ReadError
from ..bridge.requests import AXES, SUPPORTED_GOALS, LimbRequest
from ..bridge.rig import ChainRig, LimbRig, MappingError
from ..bridge.write import write_chain, write_limb
from . import stretched

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
#: A goal counts as reached within these errors of the evaluated end bone (m, rad).
REACH_POSITION = verify.REACH_POSITION
REACH_ORIENTATION = verify.REACH_ORIENTATION


@dataclass
class LimbStatus:
    """Outcome of solving one limb (or chain) at one frame (runtime only).

    ``position_error`` / ``orientation_error`` are of the end bone as Blender evaluates
    it (world units / radians): measured on the depsgraph (``measured == "depsgraph"``)
    or from the model where it is proven equal to Blender's evaluation (``"model"``).
    ``reached``: within the status tolerance (:func:`.verify.reached`: the preferences,
    by default :data:`REACH_POSITION` / :data:`REACH_ORIENTATION`).
    ``reachable``: the core's own verdict on the goal in its model (kept for reports).
    """

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
    #: {bone name: ("location", values)} as written (a body's root).
    written_locations: dict[str, tuple[str, tuple[float, ...]]] = field(default_factory=dict)
    #: "limb" or "chain".
    kind: str = "limb"
    #: The solver used (the settings' ``solver`` item).
    solver: str = "ANALYTIC"
    #: Numeric solves: iterations taken and why they stopped ('' for analytic limbs).
    iterations: int = 0
    stop_reason: str = ""
    #: Numeric solves: per-effector error (m for position goals, ≈ rad otherwise).
    effector_errors: tuple[float, ...] = ()
    #: The end bone as Blender evaluates it is within the reach tolerances.
    reached: bool = False
    #: The model is proven equal to Blender's evaluation for this rig and frame.
    proven: bool = True
    #: Where the errors come from: "model" or "depsgraph".
    measured: str = "model"
    #: Frame the status describes (None: not recorded).
    frame: int | None = None
    #: After a bake: the range the worst frame was picked from (e.g. "frames 1–250").
    worst_of: str = ""
    #: What binds, what overrides, what was skipped (joined into ``message``).
    notes: list[str] = field(default_factory=list)
    #: Chains: (position, orientation, reached) per effector with a target.
    effectors: list[tuple[float, float, bool]] = field(default_factory=list)
    #: Analytic limbs: what the verification needs to re-solve (request, reads, solution).
    pending: Any = None

    @property
    def feasible_measure(self) -> float:
        """Total width (rad) of the feasible swivel intervals."""
        return float(sum(hi - lo for lo, hi in self.feasible_swivel))


#: Last status per (object name, limb name).
STATUS: dict[tuple[str, str], LimbStatus] = {}
#: Last status per (object name, chain name) (``kind == "chain"``).
CHAIN_STATUS: dict[tuple[str, str], LimbStatus] = {}
_RIGS: dict[tuple[str, str], tuple[tuple[Any, ...], LimbRig]] = {}
#: Per (object name, limb name): ((object pointer, goal type, axis), frames, goal offsets)
#: the last verifications needed to put the evaluated end bone on target (an unproven limb
#: starts the next frame's solve from them: :func:`start_offset`).
_OFFSETS: dict[tuple[str, str], tuple[tuple[Any, ...], tuple[int, ...], tuple[Any, ...]]] = {}
_CHAINS: dict[tuple[Any, ...], tuple[tuple[Any, ...], ChainRig]] = {}


#: The pose-bone settings a :class:`LimbRig` is built from (read in one C call per bone:
#: the signature is checked on every solve). The IK ranges (:data:`_IK_RANGES`) are read
#: only when an axis is limited: the rig reads them only then (:func:`.bridge.rig.ik_bounds`).
_POSE_SETTINGS = attrgetter(
    "rotation_mode", "lock_ik_x", "lock_ik_y", "lock_ik_z", "use_ik_limit_x",
    "use_ik_limit_y", "use_ik_limit_z",
)
_IK_RANGES = attrgetter("ik_min_x", "ik_min_y", "ik_min_z", "ik_max_x", "ik_max_y", "ik_max_z")


#: The bone settings in a :func:`bone_signature`: the inherit modes decide the notes
#: cached with a limb's rig (:func:`overrides`).
_BONE_SETTINGS = attrgetter("use_connect", "use_inherit_rotation", "inherit_scale")


#: ``bone_signature``'s ``parent`` when the caller has not read it.
_UNREAD: Any = object()


def bone_signature(pb: Any, keep: bool = True, *, location: bool = True,
                   parent: Any = _UNREAD) -> tuple[Any, ...]:
    """What of a pose bone a cached rig depends on (rest, hierarchy, inherit modes, rotation
    mode, IK settings, the location of an unconnected bone). ``keep``: to be stored (the
    rest matrix copied: the RNA one is live); else only to be compared with a stored one
    (no copy). ``location``: False for a bone whose location the rig does not use (a
    limb's upper bone: its location is read every frame); ``parent``: ``pb.parent`` if
    the caller has read it."""
    b = pb.bone
    if parent is _UNREAD:
        parent = pb.parent
    flags = _BONE_SETTINGS(b)
    rest = b.matrix_local
    ik = _POSE_SETTINGS(pb)
    return (
        rest.copy() if keep else rest,  # a mathutils Matrix
        flags,
        None if parent is None else parent.name,
        None if flags[0] or not location else pb.location[:],
        ik + _IK_RANGES(pb) if ik[4] or ik[5] or ik[6] else ik,
    )


_LIMB_BONES = attrgetter("upper_bone", "lower_bone", "end_bone")
_LIMB_SETTINGS = attrgetter("hinge_axis", "use_limits")


#: Rigs and frame-independent notes looked up inside :func:`held_rigs` (innermost last).
_HELD_RIGS: list[dict[Any, Any]] = []


@contextmanager
def held_rigs() -> Iterator[None]:
    """Inside, each limb's rig (:func:`rig_for`) and frame-independent notes
    (:func:`analytic_notes`) are looked up once: for a bake that solves frame by frame a
    range over which the bones' settings are known not to change."""
    _HELD_RIGS.append({})
    try:
        yield
    finally:
        _HELD_RIGS.pop()


def rigs_held() -> bool:
    """Whether the caller runs inside :func:`held_rigs`."""
    return bool(_HELD_RIGS)


#: Who a limb is: (object name, limb name, object pointer), as :func:`rig_for` reads it.
LimbIdent = tuple[str, str, int]


def rig_for(obj: Any, settings: Any, bones: tuple[Any, Any, Any] | None = None,
            names: tuple[str, str, str] | None = None, ident: LimbIdent | None = None
            ) -> LimbRig:
    """The (cached) :class:`LimbRig` of a limb's settings; rebuilt when anything changed.
    ``bones``: the limb's (upper, lower, end) pose bones when the caller has looked them
    up (:func:`limb_pose_bones`); ``names``: their names (:func:`limb_bone_names`) when
    read; ``ident``: (``obj.name``, ``settings.name``, ``obj.as_pointer()``) when read
    (a live solve reads the object's once for all its limbs)."""
    if _HELD_RIGS:
        held = _HELD_RIGS[-1].get(("rig", obj.name, settings.name))
        if held is not None:
            return held  # type: ignore[no-any-return]
        rig = _rig_for(obj, settings, bones, names, ident)
        _HELD_RIGS[-1][("rig", obj.name, settings.name)] = rig
        return rig
    return _rig_for(obj, settings, bones, names, ident)


def limb_bone_names(settings: Any) -> tuple[str, str, str]:
    """A limb's (upper, lower, end) bone names."""
    return _LIMB_BONES(settings)


def limb_pose_bones(obj: Any, settings: Any, names: tuple[str, str, str] | None = None,
                    pbs: Any = None) -> tuple[Any, Any, Any] | None:
    """A limb's (upper, lower, end) pose bones of ``obj`` (None when one is missing): looked
    up once per solve for the rig check, the notes and the write. ``names``: the limb's
    bone names if read (:func:`limb_bone_names`); ``pbs``: ``obj.pose.bones`` if read."""
    if pbs is None:
        pbs = obj.pose.bones
    up, lo, en = _LIMB_BONES(settings) if names is None else names
    try:
        return pbs[up], pbs[lo], pbs[en]
    except KeyError:
        return None


def _rig_signature(obj: Any, settings: Any, names: tuple[str, str, str], keep: bool,
                   bones: tuple[Any, Any, Any] | None = None, pointer: int | None = None
                   ) -> tuple[Any, ...]:
    """What a limb's cached rig depends on (see :func:`bone_signature`; ``keep``: to be
    stored; ``pointer``: ``obj.as_pointer()`` if read); () when a bone is missing."""
    if bones is None:
        bones = limb_pose_bones(obj, settings)
    try:
        if bones is None:
            raise KeyError(names)
        up = bones[0]
        parent = up.parent
        hinge = _LIMB_SETTINGS(settings)
        sig: tuple[Any, ...] = (
            names,
            hinge,
            # the rig reads the custom axis only for a custom hinge
            settings.hinge_custom[:] if hinge[0] == "CUSTOM" else None,
            bone_signature(up, keep, location=False, parent=parent),
            bone_signature(bones[1], keep),
            bone_signature(bones[2], keep),
        )
        if parent is not None:
            rest = parent.bone.matrix_local
            sig += (rest.copy() if keep else rest,)
        sig += (obj.as_pointer() if pointer is None else pointer,
                *_hinge_found(settings, names[1]))
    except KeyError:
        sig = ()  # let build_rig name the missing bone
    return sig


def _hinge_found(settings: Any, lower: str) -> tuple[str, Any]:
    """The found hinge axis a limb's rig is built from: (the settings'
    ``hinge_found_source``, their ``hinge_found`` when that source is of the ``lower``
    bone, else None: not read, the rig does not use it)."""
    source = settings.hinge_found_source
    kind, _, bone = source.partition(":")
    return source, settings.hinge_found[:] if kind and bone == lower else None


def _rig_for(obj: Any, settings: Any, bones: tuple[Any, Any, Any] | None = None,
             names: tuple[str, str, str] | None = None, ident: LimbIdent | None = None
             ) -> LimbRig:
    if names is None:
        names = _LIMB_BONES(settings)
    key, pointer = ((obj.name, settings.name), None) if ident is None else (ident[:2], ident[2])
    hit = _RIGS.get(key)
    if hit is not None and hit[0] and hit[0] == _rig_signature(obj, settings, names, False,
                                                               bones, pointer):
        return hit[1]
    sig = _rig_signature(obj, settings, names, True, bones, pointer)
    source, axis = _hinge_found(settings, names[1])
    found = None if axis is None else (tuple(axis), source.partition(":")[0])
    rig = mapping.build_rig(
        obj, names, hinge_axis=settings.hinge_axis, use_limits=settings.use_limits,
        hinge_custom=tuple(settings.hinge_custom), hinge_found=found,
    )
    if found is None and rig.hinge_source in ("ACTION", "POSE"):
        # Keep it: baking over the animation it came from must never change the axis.
        try:
            settings.hinge_found = tuple(rig.hinge_axis)
            settings.hinge_found_source = f"{rig.hinge_source}:{names[1]}"
            sig = sig[:-2] + _hinge_found(settings, names[1])
        except (AttributeError, RuntimeError):
            pass  # a panel's draw may not write data: kept at the next solve
    _RIGS[key] = (sig, rig)
    return rig


def _offset_stamp(obj: Any, settings: Any) -> tuple[Any, ...]:
    return (obj.as_pointer(), settings.goal_type, settings.axis)


def start_offset(obj: Any, settings: Any, frame: int | None = None) -> Any:
    """The goal offset an unproven limb's solve of ``frame`` (default: the scene's current
    frame) starts from (:func:`core.goal_offset`), or None: the offsets the verifications
    of the frames just before it needed, extrapolated (:func:`core.extrapolate_offset`);
    the last one alone when it is of that frame. Offsets of another object (a new one of
    the same name), goal type or axis, or of frames further back, are not used: a solve or
    bake never depends on what was solved elsewhere before it."""
    hit = _OFFSETS.get((obj.name, settings.name))
    if hit is None or hit[0] != _offset_stamp(obj, settings):
        return None
    if frame is None:
        scene = bpy.context.scene
        frame = scene.frame_current if scene is not None else None
    frames, offsets = hit[1], hit[2]
    if frame == frames[-1]:
        return offsets[-1]
    k = 0  # the offsets of consecutive frames ending at the frame before this one
    while k < len(frames) and frame == frames[-1 - k] + 1 + k:
        k += 1
    return extrapolate_offset(*offsets[-k:]) if k else None


def keep_offset(obj: Any, settings: Any, frame: int | None, offset: Any) -> None:
    """Record the goal offset an unproven limb's verification needed at ``frame`` (the
    last three consecutive ones are kept); None forgets the limb's offsets."""
    key = (obj.name, settings.name)
    hit = _OFFSETS.get(key)
    if offset is None or frame is None:
        _OFFSETS.pop(key, None)
        return
    stamp = _offset_stamp(obj, settings)
    if hit is None or hit[0] != stamp or hit[1][-1] not in (frame, frame - 1):
        _OFFSETS[key] = (stamp, (frame,), (offset,))
    elif hit[1][-1] == frame:
        _OFFSETS[key] = (stamp, hit[1], (*hit[2][:-1], offset))
    else:
        _OFFSETS[key] = (stamp, (*hit[1][-2:], frame), (*hit[2][-2:], offset))


def forget_offsets(obj: Any) -> None:
    """Drop an object's recorded goal offsets (a bake starts from none, so its result does
    not depend on what was solved before it)."""
    for key in [k for k in _OFFSETS if k[0] == obj.name]:
        del _OFFSETS[key]


def clear_caches() -> None:
    """Forget cached rigs and statuses (e.g. after loading a file)."""
    body.clear_caches()
    _RIGS.clear()
    _RIG_NOTES.clear()
    _CHAINS.clear()
    _OFFSETS.clear()
    STATUS.clear()
    CHAIN_STATUS.clear()


def overrides(obj: Any, rig: LimbRig, bones: tuple[Any, Any, Any] | None = None
              ) -> list[str]:
    """What may make Blender's evaluation of a limb differ from the rigid model (then the
    pose is verified on the depsgraph): constraints or drivers on its bones or helpers,
    lower/end/helper bones that do not inherit rotation or full scale, an armature shown
    in its rest position. ``bones``: the (upper, lower, end) pose bones if looked up."""
    pbs = obj.pose.bones
    names = (rig.upper, *rig.helpers, rig.lower, rig.end)
    if bones is None:
        bones = (pbs[rig.upper], pbs[rig.lower], pbs[rig.end])
    posed = (bones[0], *(pbs[h] for h in rig.helpers), bones[1], bones[2])
    out = []
    acting = [b for b, pb in zip(names, posed, strict=True) if read.constrained(pb)]
    if acting:
        out.append(f"constraints on {', '.join(acting)} act after the solve")
    out += rig_notes(obj, rig)[1]
    driven = driven_bones(obj) & set(names)
    if driven:
        out.append(f"drivers on {', '.join(sorted(driven))}")
    if obj.data.pose_position == "REST":
        out.append("the armature shows its rest position")
    return out


#: Per (object name, limb bones): (rig, its notes) (see :func:`rig_notes`).
_RIG_NOTES: dict[tuple[str, ...], tuple[LimbRig, tuple[list[str], list[str]]]] = {}


def rig_notes(obj: Any, rig: LimbRig, name: str | None = None
              ) -> tuple[list[str], list[str]]:
    """The notes that depend only on a limb's rig: (remarks on the model: limits not about
    the hinge, a guessed hinge axis; overrides: bones that do not inherit rotation or full
    scale). Kept with the rig: :func:`rig_for` rebuilds the rig when a bone's inherit
    modes change (they are in :func:`bone_signature`); helper bones' are read each time.
    ``name``: ``obj.name`` if read."""
    key = (obj.name if name is None else name, rig.upper, rig.lower, rig.end)
    hit = _RIG_NOTES.get(key)
    if hit is not None and hit[0] is rig:
        return hit[1]
    msgs = [] if rig.limits_exact else [
        "the lower bone's IK limits are not about the hinge axis; ignored"]
    loose = loose_bones(obj, rig)
    over = [f"{', '.join(loose)}: Inherit Rotation off or partial Inherit Scale"] if loose else []
    notes = (msgs + hinge_notes(rig), over)
    if not rig.helpers:
        _RIG_NOTES[key] = (rig, notes)
    return notes


def loose_bones(obj: Any, rig: LimbRig) -> list[str]:
    """The limb's bones below the upper one (helpers, lower, end) that do not inherit
    rotation or full scale."""
    pbs = obj.pose.bones
    return [b for b in (*rig.helpers, rig.lower, rig.end) if not pbs[b].bone.use_inherit_rotation
            or pbs[b].bone.inherit_scale != "FULL"]


def chain_models(obj: Any, rig: LimbRig, settings: Any,
                 bones: tuple[Any, Any, Any] | None = None) -> bool:
    """Whether the limb's affine chain (:mod:`.stretched`) is Blender's evaluation of what
    its goal measures: nothing overrides its bones, or a position goal whose only
    override is the end bone's inherit modes (its head follows the lower bone's pose
    whatever they are)."""
    if analytic_notes(obj, rig, settings, None, bones)[1]:
        return True
    return (settings.goal_type == "POSITION" and rigify.ik_chain(obj, settings) is None
            and loose_bones(obj, rig) == [rig.end]
            and overrides(obj, rig, bones) == rig_notes(obj, rig)[1])


#: (object name, object pointer, driver count, first and last driver's data path) → bones
#: with drivers. Reading every driver's path costs about a microsecond each per frame (a
#: generated Rigify rig has hundreds); the key's paths tell a new object apart even when it
#: reuses a removed one's name, address and driver count (freed memory is reused: seen in
#: the tests). A driver re-pointed in the middle of the list, count and ends unchanged, is
#: seen at the next change of the key.
_DRIVEN: dict[tuple[str, int, int, str, str], set[str]] = {}


def driven_bones(obj: Any) -> set[str]:
    """The bones of ``obj`` with a driver on one of their properties."""
    ad = obj.animation_data
    if ad is None:
        return set()
    drivers = ad.drivers
    n = len(drivers)
    if not n:
        return set()
    key = (obj.name, obj.as_pointer(), n, drivers[0].data_path, drivers[n - 1].data_path)
    hit = _DRIVEN.get(key)
    if hit is None:
        hit = {d.data_path[len('pose.bones["'):].split('"]')[0] for d in drivers
               if d.data_path.startswith('pose.bones["')}
        _DRIVEN.clear()
        _DRIVEN[key] = hit
    return hit


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
    common: dict[str, Any] = {"joint": joint, "weight": weight, "priority": priority}
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
    st.stop_reason = str(getattr(res.reason, "name", res.reason))
    st.within_limits = bool(np.all(q >= sk.lower - 1e-9) and np.all(q <= sk.upper + 1e-9))
    st.reachable = verify.reached(st.position_error, st.orientation_error)
    st.solved = True
    return q


def finish_status(st: LimbStatus, msgs: list[str], reached: bool | None = None) -> None:
    """Notes of a solve → ``st.notes`` and ``st.message`` (see :func:`verify.status_message`).
    ``reached``: :func:`verify.reached` of the status's errors if the caller has it."""
    st.notes = [m for m in msgs if m]
    st.reached = st.solved and (verify.reached(st.position_error, st.orientation_error)
                                if reached is None else reached)
    st.message = verify.status_message(st)


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


def chain_rig_for(obj: Any, settings: Any) -> ChainRig:
    """The (cached) :class:`ChainRig` of a chain's settings; rebuilt when anything changed."""
    tips = tuple(e.tip_bone for e in settings.effectors)
    bones = mapping.chain_bones(obj, settings.root_bone, tips)
    sig: tuple[Any, ...] = (settings.root_bone, tips, settings.use_limits)
    sig += tuple(bone_signature(pb) for pb in bones)
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


def _solve_limb_numeric(
    obj: Any, obj_eval: Any, settings: Any, depsgraph: Any, st: LimbStatus, write: bool
) -> None:
    rig = rig_for(obj, settings)
    kind = settings.goal_type
    hold_end = kind in ("POSITION", "AIM")
    chain = limb_chain_for(obj, settings, rig, hold_end)
    t = read.target_world(settings.target.evaluated_get(depsgraph), settings.target_bone)
    g = goal_in_frame(mapping.shoulder_frame(obj_eval, rig), t)
    axis = np.array(AXES[settings.axis])
    if kind == "AIM":  # the held end bone's axis, in the end joint's (rest) frame
        axis = mapping.read_rotation(obj.pose.bones[rig.end]) @ axis
    goal, pos, rot = effector_goal(kind, g, axis, chain.joint(rig.end))
    q0 = mapping.read_chain_q(obj, chain)
    iterations = LIMB_ITERATIONS.get(settings.solver, DEFAULT_ITERATIONS)
    q = _numeric(st, chain, [goal], (pos, rot), q0, settings.solver, iterations)
    if write:
        st.written = write_chain(obj, chain, q)
    msgs = []
    if settings.swivel_mode != "ANGLE" or settings.swivel != 0.0:
        msgs.append(f"swivel settings are ignored by the {settings.solver} solver")
    if not rig.limits_exact:
        msgs.append("the lower bone's IK limits are not about the hinge axis; ignored")
    msgs += hinge_notes(rig) + overrides(obj, rig)
    st.proven = False  # numeric limbs are always measured on the evaluated pose
    finish_status(st, msgs)


def solve_chain_settings(
    obj: Any, obj_eval: Any, settings: Any, depsgraph: Any, *, write: bool = True
) -> LimbStatus:
    """Solve one chain (settings = a ``LIMBER_PG_chain``) and write its pose.

    The root bone and the bones down to every effector's tip bone form a
    :class:`core.Skeleton` (:func:`mapping.build_chain`); each effector pulls its tip
    bone's frame (head for Position, head and rotation for Pose, head and Axis for
    Partial, the Axis ray for Aim) toward its target with its weight and priority
    (priorities only matter for TASK_PRIORITY). Solved from the current pose with the
    chain's solver and ``max_iterations``, in the root bone's evaluated frame. Effectors
    without a target are skipped. The status is measured on the evaluated pose by
    :func:`solve_object` (chains are never "proven").
    """
    t0 = time.perf_counter()
    st = LimbStatus(object=obj.name, limb=settings.name, kind="chain", solver=settings.solver,
                    proven=False)
    effectors = [e for e in settings.effectors if e.target is not None]
    if settings.solver not in METHODS:
        st.message = f"solver {settings.solver} is not supported for chains"
    elif not len(settings.effectors):
        st.message = "no effectors"
    elif not effectors:
        st.message = "skipped: no effector has a target"
    else:
        try:
            rig = chain_rig_for(obj, settings)
            frame = mapping.root_frame(obj_eval, rig)
            goals, pos, rot = [], [], []
            for e in effectors:
                t = read.target_world(e.target.evaluated_get(depsgraph), e.target_bone)
                g, p, r = effector_goal(
                    e.goal_type, goal_in_frame(frame, t), np.array(AXES[e.axis]),
                    rig.joint(e.tip_bone), float(e.weight), int(e.priority),
                )
                goals.append(g)
                pos += p
                rot += r
            q0 = mapping.read_chain_q(obj, rig)
            q = _numeric(st, rig, goals, (pos, rot), q0, settings.solver,
                         int(settings.max_iterations))
        except (MappingError, ReadError, LimberError) as exc:
            st.message = f"skipped: {exc}"
        else:
            if write:
                st.written = write_chain(obj, rig, q)
            msgs = []
            if len(effectors) < len(settings.effectors):
                msgs.append("effectors without a target were skipped")
            pbs = obj.pose.bones
            names = [b for b in rig.bones if read.constrained(pbs[b])]
            if names:
                msgs.append(f"constraints on {', '.join(names)} act after the solve")
            finish_status(st, msgs)
    st.total_us = (time.perf_counter() - t0) * 1e6
    CHAIN_STATUS[(obj.name, settings.name)] = st
    return st


def fill_analytic(st: LimbStatus, sol: Any, req: LimbRequest, notes: list[str],
                  proven: bool) -> None:
    """Fill ``st`` from a single :class:`core.LimbSolution` and its request: errors of
    the end bone from the model pushed through the evaluated frame
    (:func:`verify.model_errors`), to be measured on the depsgraph when not ``proven``."""
    scale = req.frame_scale
    if req.single and scale is not None and req.kind in ("POSE", "POSITION"):
        pos, ori = similarity_errors(req.kind, float(scale[0]), sol)
    else:
        p, o = verify.model_errors(req, sol)
        pos, ori = float(p[0]), float(o[0])
    fill_solution(st, sol, pos, ori, notes, proven)


def similarity_errors(kind: str, scale: float, sol: Any) -> tuple[float, float]:
    """:func:`verify.model_errors` of a one-frame POSE or POSITION solve whose frame is a
    similarity of uniform ``scale``, on floats: the core's own errors scaled (neither goal
    has an aim error)."""
    return (float(sol.position_error) * scale,
            0.0 if kind == "POSITION" else float(sol.orientation_error))


def fill_solution(st: LimbStatus, sol: Any, pos: float, ori: float, notes: list[str],
                  proven: bool) -> None:
    """:func:`fill_analytic` with the end bone's errors (world units, rad) given."""
    st.position_error = pos
    st.orientation_error = ori
    st.solved = True
    st.within_limits = bool(sol.within_limits)
    ok = verify.reached(pos, ori)
    st.reachable = ok or bool(sol.reachable)
    st.swivel = float(sol.swivel)
    st.feasible_swivel = tuple((float(lo), float(hi)) for lo, hi in sol.feasible_swivel)
    st.proven = proven
    finish_status(st, notes, ok)


def hinge_notes(rig: LimbRig) -> list[str]:
    """A note when the hinge axis is a guess (straight rest chain, nothing bent)."""
    if rig.hinge_source == "DEFAULT":
        return ["hinge axis guessed as +X (straight rest, no bent pose or animation): set "
                "Hinge Axis"]
    return []


def analytic_notes(obj: Any, rig: LimbRig, settings: Any, req: LimbRequest | None = None,
                   bones: tuple[Any, Any, Any] | None = None) -> tuple[list[str], bool]:
    """Frame-independent remarks on an analytic limb solve, and whether the model is
    proven equal to Blender's evaluation (no overrides, similarity links). ``bones``: the
    limb's pose bones if looked up (:func:`limb_pose_bones`)."""
    key = ("notes", obj.name, settings.name)
    held = _HELD_RIGS[-1].get(key) if _HELD_RIGS else None
    if held is None:
        msgs = []
        if settings.swivel_mode == "POLE" and settings.pole is None:
            msgs.append("no pole object; using the swivel angle")
        msgs += rig_notes(obj, rig)[0]
        # Rigify's IK (IK mode) places the limb: always measured, on the DEF- end bone
        ik = rigify.ik_chain(obj, settings)
        held = (msgs, overrides(obj, rig, bones) if ik is None else [], ik is None)
        if _HELD_RIGS:
            _HELD_RIGS[-1][key] = held
    msgs, over, plain = list(held[0]), list(held[1]), held[2]
    if req is not None and not (bool(req.linked[0]) if req.single else bool(req.linked.all())):
        over.append("a stretched (non-uniformly scaled) segment")
    return msgs + over, not over and plain


def _write_analytic(obj: Any, settings: Any, rig: LimbRig, req: LimbRequest, sol: Any,
                    depsgraph: Any, bones: tuple[Any, Any, Any] | None = None
                    ) -> dict[str, tuple[str, tuple[float, ...]]]:
    """Write an analytic solution: the limb's bones, or on a generated Rigify limb in IK
    mode its IK controls (:mod:`.bridge.rigify`); a Rigify limb's switch set to its mode."""
    ik = rigify.ik_chain(obj, settings)
    if ik is None:
        rigify.set_switch(obj, settings)
        return write_limb(obj, rig, sol.shoulder, float(sol.elbow),
                          requests.end_rotation(req, sol), bones,
                          requests.lower_rotation(req, sol))
    poses, pole, reach = rigify.solved_poses(req, sol)
    dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    return rigify.write_ik(obj, settings, ik, poses, pole, dg, reach)


def solve_limb_settings(
    obj: Any, obj_eval: Any, settings: Any, depsgraph: Any, *, write: bool = True,
    goal_frame: Any = None, frame: int | None = None, reads: Any = None,
) -> LimbStatus:
    """Solve one limb (settings = a ``LIMBER_PG_limb``) and write its pose: read →
    request → core → write → status (model errors; :func:`solve_object` measures
    unproven limbs on the depsgraph). ``goal_frame``: a corrected goal; ``reads``: the
    reads (:class:`~.bridge.read.LimbRead`) or the request (:class:`LimbRequest`) of the
    first solve, so a verification re-solves with the same frame and links (a request
    without ``goal_frame`` is solved as it is)."""
    t0 = time.perf_counter()
    st = LimbStatus(object=obj.name, limb=settings.name, solver=settings.solver, frame=frame)
    if settings.goal_type not in SUPPORTED_GOALS:
        st.message = f"skipped: goal type {settings.goal_type} is not supported yet"
    elif settings.solver not in SUPPORTED_SOLVERS:
        st.message = f"skipped: solver {settings.solver} is not supported for limbs yet"
    elif settings.target is None:
        st.message = "skipped: no target"
    elif settings.solver != "ANALYTIC" and rigify.ik_chain(obj, settings) is not None:
        st.message = (f"skipped: Rigify's IK controls are placed from the Analytic solution "
                      f"only (solver {settings.solver}): set Solver to Analytic or Rigify "
                      f"Controls to FK")
    elif settings.solver != "ANALYTIC":
        try:
            _solve_limb_numeric(obj, obj_eval, settings, depsgraph, st, write)
        except (MappingError, ReadError, LimberError) as exc:
            st.message = f"skipped: {exc}"
    else:
        try:
            bones = limb_pose_bones(obj, settings)
            rig = rig_for(obj, settings, bones)
            if isinstance(reads, LimbRequest):  # a verification's corrected goal, or a
                # bake's request for this frame
                req = reads if goal_frame is None else requests.with_goal(reads, settings,
                                                                          goal_frame)
                rd = None
            else:
                rd = reads if reads is not None else read.read_limb(
                    obj_eval, settings, rig.bones, depsgraph, bool(rig.helpers))
                req = requests.limb_request(settings, rig, rd, goal_frame)
                if rigify.ik_chain(obj, settings) is not None:
                    req = rigify.ik_request(req, rig)
            notes, proven = analytic_notes(obj, rig, settings, req, bones)
            # stretched links alone: solved against the affine chain (see .stretched)
            links = (stretched.chain_links(rd) if not proven and goal_frame is None
                     and chain_models(obj, rig, settings, bones) else None)
            guess = (start_offset(obj, settings, frame) if goal_frame is None and not proven
                     and links is None else None)
            if guess is not None:  # the corrections the last verifications needed
                req = requests.with_goal(req, settings, apply_goal_offset(guess,
                                                                          req.target_goal))
            t1 = time.perf_counter()
            sol = solve_limb(req.limb, req.goal, **req.kwargs)
            if links is not None:
                tol = verify.tolerance()
                sol = stretched.on_chain(rig, req, sol, links, tol.position, tol.orientation)
            st.solve_us = (time.perf_counter() - t1) * 1e6
        except (MappingError, ReadError, LimberError, ValueError) as exc:
            st.message = f"skipped: {exc}"
        else:
            if write:
                st.written = _write_analytic(obj, settings, rig, req, sol, depsgraph, bones)
            fill_analytic(st, sol, req, notes, proven)
            st.pending = (req, rd, sol)
    st.total_us = (time.perf_counter() - t0) * 1e6
    STATUS[(obj.name, settings.name)] = st
    return st


def limb_request_at(obj: Any, settings: Any, depsgraph: Any) -> LimbRequest:
    """The pipeline's request for one limb at the depsgraph's current evaluation (read →
    request): what the overlay, the demo's measuring code and tests use to get a limb's
    goal, shoulder frame and core limb exactly as a solve sees them."""
    rig = rig_for(obj, settings)
    obj_eval = obj.evaluated_get(depsgraph)
    return requests.limb_request(settings, rig, read.read_limb(
        obj_eval, settings, rig.bones, depsgraph, bool(rig.helpers)))


def measure_statuses(obj: Any, dg: Any, sts: list[tuple[LimbStatus, Any]]
                     ) -> dict[int, Any]:
    """Measure statuses (with their settings) on the evaluated pose, one depsgraph update
    for all of them: errors, ``reached``, ``measured``; returns {id(status): end bone world
    matrix} for limbs."""
    dg.update()
    obj_eval = obj.evaluated_get(dg)
    ends: dict[int, Any] = {}
    for st, settings in sts:
        st.measured = "depsgraph"
        if st.kind == "body":
            body.measure_pins(obj, dg, settings, st)
            continue
        if st.kind == "chain":
            st.effectors = []
            for e in settings.effectors:
                if e.target is None or e.tip_bone not in obj_eval.pose.bones:
                    continue
                p, o = verify.effector_errors(obj_eval, e, dg)
                st.effectors.append((p, o, verify.reached(p, o)))
            if st.effectors:
                st.position_error = max(x[0] for x in st.effectors)
                st.orientation_error = max(x[1] for x in st.effectors)
        else:
            target = read.target_world(settings.target.evaluated_get(dg), settings.target_bone)
            p, o, end = verify.measured_errors(obj_eval, rigify.measured_end(obj, settings),
                                               settings.goal_type, settings.axis,
                                               orthonormalize_yz(target))
            st.position_error, st.orientation_error = p, o
            ends[id(st)] = end
        st.reached = verify.reached(st.position_error, st.orientation_error)
    return ends


def verify_pending(obj: Any, dg: Any, todo: list[tuple[LimbStatus, Any]]) -> None:
    """Measure unproven statuses on the evaluated pose and re-solve analytic limbs whose
    end bone misses with a corrected goal (see :mod:`.bridge.verify`), keeping each
    limb's best pose. One depsgraph update per round for all of them."""
    ends = measure_statuses(obj, dg, todo)
    best = {id(st): (st.position_error + st.orientation_error, dict(st.written), st.pending)
            for st, _ in todo}
    live = [(st, s) for st, s in todo if st.kind == "limb" and st.pending is not None
            and not st.reached]
    for _ in range(verify.REFINE_ROUNDS):
        if not live:
            break
        obj_eval = obj.evaluated_get(dg)
        again = []
        for st, settings in live:
            req, _, sol = st.pending
            g = verify.corrected_goal(req, ends[id(st)], sol)
            new = solve_limb_settings(obj, obj_eval, settings, dg, goal_frame=g,
                                      frame=st.frame, reads=req)
            if not new.solved:
                continue
            st.written, st.pending = new.written, new.pending
            again.append((st, settings))
        ends.update(measure_statuses(obj, dg, again))
        live = []
        for st, settings in again:
            err = st.position_error + st.orientation_error
            prev = best[id(st)][0]
            if err < prev:
                best[id(st)] = (err, dict(st.written), st.pending)
            if not st.reached and err < 0.5 * prev:
                live.append((st, settings))
    pbs = obj.pose.bones
    for st, settings in todo:  # keep (and report) each limb's best pose
        err, written, pending = best[id(st)]
        if not st.reached and st.position_error + st.orientation_error > err:
            for bone, (path, vals) in written.items():
                setattr(pbs[rigify.bone_of(bone)], path, vals)
            st.written = written
            ends.update(measure_statuses(obj, dg, [(st, settings)]))
        if st.kind != "limb":
            continue
        if st.reached and pending is not None:
            if st.written is not written:
                pending = st.pending
            req, _, sol = pending
            # the goal one more correction would ask for: the best estimate of what this
            # frame needed, for the next frame to start from
            keep_offset(obj, settings, st.frame, goal_offset(
                verify.corrected_goal(req, ends[id(st)], sol), req.target_goal))
        else:
            keep_offset(obj, settings, st.frame, None)
    for st, _ in todo:
        st.message = verify.status_message(st) if st.solved else st.message
        if st.kind == "limb":
            STATUS[(st.object, st.limb)] = st


def store_statuses(obj: Any, statuses: Iterable[LimbStatus],
                   settings: list[Any] | None = None) -> None:
    """Copy statuses into the limbs' / chains' (and effectors') ``status`` properties.
    ``settings``: the item of each status, in the same order (else looked up by name)."""
    data = obj.limber
    for i, st in enumerate(statuses):
        if st.kind == "body":
            body.store(obj, st)
            continue
        if settings is not None:
            item = settings[i]
        else:
            item = (data.chains if st.kind == "chain" else data.limbs).get(st.limb)
        if item is None:
            continue
        verify.store(item.status, st)
        if st.kind == "chain":
            k = 0
            for e in item.effectors:
                if e.target is None or k >= len(st.effectors):
                    e.status.reached = False
                    e.status.message = "skipped: no target" if e.target is None else st.message
                    continue
                p, o, ok = st.effectors[k]
                k += 1
                e.status.position_error, e.status.orientation_error = p, o
                e.status.reached, e.status.within_limits = ok, st.within_limits
                e.status.measured = True
                e.status.frame = st.frame or 0
                e.status.message = "ok" if ok else (
                    f"target not reached (position error {p:.4g} m, orientation error "
                    f"{o:.4g} rad, measured on the evaluated pose)")


def solve_object(
    obj: Any,
    depsgraph: Any | None = None,
    *,
    limbs: Iterable[str] | None = None,
    write: bool = True,
    chains: Iterable[str] | None = None,
    verify_pose: bool = True,
    bodies: Iterable[str] | None = None,
) -> list[LimbStatus]:
    """Solve the enabled bodies, chains and limbs of an armature object at the current
    frame.

    Args:
        obj: the armature object (original, not evaluated).
        depsgraph: evaluated depsgraph to read the pose and targets from (default: the
            context's, evaluated if needed).
        limbs: only these limb names (default: all enabled limbs).
        write: write the solved local rotations to the pose bones.
        chains: only these chain names (default: all enabled chains).
        verify_pose: with ``write``, measure items whose model is not proven on the
            evaluated pose (one depsgraph update per round for all of them) and refine
            analytic limbs that miss (:func:`verify_pending`).
        bodies: only these body names (default: all enabled bodies); a body is solved
            first and measures its own pins (:func:`.body.solve_body_settings`).

    Returns the statuses, bodies first (``kind == "body"``), chains (``"chain"``), then
    limbs; also cached in :data:`.body.BODY_STATUS` / :data:`CHAIN_STATUS` / :data:`STATUS`
    and stored in the items' ``status`` properties.
    """
    if obj is None or obj.type != "ARMATURE":
        raise MappingError(f"{getattr(obj, 'name', obj)!r} is not an armature object")
    dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    with verify.tolerance_when_needed():
        return _solve_items(obj, dg, limbs, write, chains, verify_pose, bodies)


def _solve_items(obj: Any, dg: Any, limbs: Iterable[str] | None, write: bool,
                 chains: Iterable[str] | None, verify_pose: bool,
                 bodies: Iterable[str] | None = None) -> list[LimbStatus]:
    """:func:`solve_object`'s work (the status tolerance held)."""
    obj_eval = obj.evaluated_get(dg)
    data = obj.limber
    scene = bpy.context.scene
    frame = scene.frame_current if scene is not None else None
    todo: list[tuple[Any, Any, str]] = [
        (body.solve_body_settings, b, b.root_bone) for b in pick_items(data.bodies, bodies)
    ]
    todo += [(solve_chain_settings, c, c.root_bone) for c in pick_items(data.chains, chains)]
    todo += [(solve_limb_settings, lb, lb.upper_bone) for lb in pick_items(data.limbs, limbs)]
    out: list[LimbStatus] = []
    written: set[str] = set()  # bones written in this call since the last update
    check: list[tuple[LimbStatus, Any]] = []
    pf: plain.PlainFrame | None = None
    pbs = obj.pose.bones

    def done(st: LimbStatus, settings: Any) -> None:
        st.frame = frame
        written.update(st.written)
        out.append(st)
        if st.solved and not st.proven:
            check.append((st, settings))

    # Plain limbs are queued (plain.solve_plain), then solved and written together
    # (plain.flush) before anything else runs: before another road, an update, or a limb
    # that shares bones with the queue (``retry``: tried again once the queue is written).
    # ``first``: the index in ``todo`` of the first limb queued. A limb left to the general
    # road, or a queued limb whose solve fails, takes it once the queue is written
    # (``general``; after a failed solve the limbs after it are solved again): as if each
    # had been solved and written in turn.
    i = first = 0
    general = retry = -1
    try:
        while i < len(todo) or (pf is not None and pf.queued):
            queued = pf.queued_bones if pf is not None and pf.queued else None
            fn, settings, base = todo[i] if i < len(todo) else (None, None, "")
            take = fn is solve_limb_settings and write and i != general
            below = bool(write and fn is not None and (written or queued) and hangs_below(
                obj, base, written if queued is None else written | queued, pbs))
            if pf is not None and queued is not None and (below or not take or i == retry):
                sts, cut = plain.flush(obj, pf)
                for k, st in enumerate(sts):
                    done(st, todo[first + k][1])
                if cut:
                    i = general = first + len(sts)
                    continue
                if fn is None:
                    break
            if below:
                dg.update()  # the base frame depends on bones written in this call
                obj_eval = obj.evaluated_get(dg)
                written.clear()
                pf = None
            if take:
                if pf is None:
                    pf = plain.PlainFrame(obj, obj_eval, pbs)
                if not pf.queued:
                    first = i
                if plain.solve_plain(obj, obj_eval, settings, dg, pf, frame) is not None:
                    i += 1
                    continue
                if pf.queued:  # written first; then this one, or the general road
                    if pf.waiting:
                        retry = i
                    else:
                        general = i
                    continue
            assert fn is not None
            done(fn(obj, obj_eval, settings, dg, write=write), settings)
            i += 1
    except BaseException:
        if pf is not None and pf.queued:
            plain.flush(obj, pf)  # what one by one would have written before the error
        raise
    if write and verify_pose and check:
        verify_pending(obj, dg, check)
    elif check:
        for st, _ in check:
            st.notes.append("not verified on the evaluated pose")
            st.reached = False
            st.message = verify.status_message(st)
    for st in out:
        st.pending = None
    store_statuses(obj, out, [settings for _, settings, _ in todo])
    return out


def pick_items(items: Any, names: Iterable[str] | None) -> list[Any]:
    if names is None:
        return [it for it in items if it.enabled]
    wanted = set(names)
    return [it for it in items if it.name in wanted]


def hangs_below(obj: Any, bone: str, written: set[str], pbs: Any = None) -> bool:
    """Whether a proper ancestor of ``bone`` is in ``written`` (``pbs``: ``obj.pose.bones``
    if read)."""
    pb = (obj.pose.bones if pbs is None else pbs).get(bone)
    pb = None if pb is None else pb.parent
    while pb is not None:
        if pb.name in written:
            return True
        pb = pb.parent
    return False


FloatArray = NDArray[np.float64]
#: A snap's residual (world units) above this is reported (0.01 mm at metre scale).
SNAP_RESIDUAL_REPORTED = 1e-5


@dataclass(frozen=True)
class FkSnap:
    """The current FK pose of a limb as Limber's IK parameters (see :func:`snap_fk`).

    Attributes:
        swivel: the swivel angle (rad) whose elbow is nearest the FK elbow (Tolani §3.2.2).
        elbow: (3,) world position of the elbow Limber's solve puts there (on the hinge
            circle of the FK end pose).
        fk_elbow: (3,) world position of the FK elbow (the lower bone's evaluated head).
        pole: (3,) world position for a pole object that gives the same swivel in POLE
            mode: out from the hinge circle's centre through ``elbow`` by the upper bone's
            length (the elbow itself when the limb is straight).
        residual: distance (world units) from ``elbow`` to ``fk_elbow``: 0 to float32
            rounding when the FK lower bone turns about the hinge axis only; otherwise
            the part of the FK pose the limb model cannot express.
    """

    swivel: float
    elbow: FloatArray
    fk_elbow: FloatArray
    pole: FloatArray
    residual: float


def snap_fk(obj: Any, settings: Any, depsgraph: Any | None = None) -> FkSnap:
    """The limb's FK pose (as Blender evaluates it) in Limber's terms: the end bone's world
    pose as the goal and the actual FK elbow as the elbow target (the swivel nearest it,
    Tolani §3.2.2, via :func:`core.solve_limb`'s ``elbow_target``), through the pipeline's
    request (evaluated frame and links, helper bones)."""
    dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(dg)
    rig = rig_for(obj, settings)
    world = read.mat4(obj_eval.matrix_world)
    pbs = obj_eval.pose.bones
    _, lower, end_bone = rigify.shown_bones(obj, settings) or rig.bones
    end = world @ read.mat4(pbs[end_bone].matrix)
    fk_elbow = (world @ np.append(np.array(pbs[lower].head, dtype=np.float64), 1.0))[:3]
    base = read.read_limb(obj_eval, settings, rig.bones, dg, True)
    req = requests.limb_request(settings, rig, replace(base, target=end[None],
                                                       pole=fk_elbow[None]))
    if rigify.ik_chain(obj, settings) is not None:
        req = rigify.ik_request(req, rig)
    tg = req.target_goal[0]
    elbow_target = req.kwargs["elbow_target"]
    limb = req.limb
    sol = solve_limb(limb, PoseGoal(position=tg[:3, 3], rotation=tg[:3, :3]),
                     elbow_target=elbow_target)
    frame = req.frame[0]
    elbow_local = limb.elbow_position(sol.shoulder)
    pole_local = limb.pole_position(sol.shoulder, sol.elbow)

    def to_world(p: FloatArray) -> FloatArray:
        return (frame @ np.append(p, 1.0))[:3]  # type: ignore[no-any-return]

    elbow = to_world(elbow_local)
    return FkSnap(swivel=float(sol.swivel), elbow=elbow, fk_elbow=fk_elbow,
                  pole=to_world(pole_local), residual=float(np.linalg.norm(elbow - fk_elbow)))


def snap_swivel(obj: Any, settings: Any, depsgraph: Any | None = None) -> float:
    """Set ``settings.swivel`` to the swivel of the current FK elbow (:func:`snap_fk`) and
    return it: solving to the FK end pose in ANGLE mode then reproduces the FK pose (up to
    the residual :func:`snap_fk` reports)."""
    snap = snap_fk(obj, settings, depsgraph)
    settings.swivel = snap.swivel
    return snap.swivel


def snap_pole(obj: Any, settings: Any, depsgraph: Any | None = None) -> FkSnap:
    """Move the limb's pole object (its world location; rotation and scale kept) so that
    POLE mode reproduces the current FK pose (:func:`snap_fk`); returns the snap."""
    pole = settings.pole
    if pole is None:
        raise MappingError(f"limb {settings.name!r} has no pole object")
    snap = snap_fk(obj, settings, depsgraph)
    m = pole.matrix_world.copy()
    m.translation = snap.pole.tolist()
    pole.matrix_world = m
    return snap


def take_switch(obj: Any, settings: Any, bone: str, depsgraph: Any | None = None) -> None:
    """Take the limb's IK/FK switch (``bone``'s ``IK_FK`` property, generated Rigify rigs)
    for its mode (:func:`.bridge.rigify.switch_value`), remembering its value for
    :func:`release_switch`. Switching an IK limb to FK first gives the FK controls the
    pose the rig shows (its ORG- bones), so taking the switch moves nothing."""
    from ..detect import RIGIFY_SWITCH

    pb = obj.pose.bones[bone]
    settings.switch_restore = float(pb[RIGIFY_SWITCH])
    settings.switch_bone = bone
    if settings.switch_restore != rigify.switch_value(settings) and settings.rigify_mode == "FK":
        dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
        rigify.snap_fk_to_shown(obj, [(settings, (settings.upper_bone, settings.lower_bone,
                                                  settings.end_bone))], dg)
    rigify.set_switch(obj, settings)


def release_switch(obj: Any, settings: Any) -> None:
    """Give the limb's IK/FK switch back: its value from before :func:`take_switch`, and
    the F-curve Limber's bake created for it removed (a switch animated before keeps its
    F-curve)."""
    from ..compat import assigned_fcurves
    from ..detect import RIGIFY_SWITCH

    pb = obj.pose.bones.get(settings.switch_bone) if settings.switch_bone else None
    if pb is None:
        return
    ad = obj.animation_data
    fcurves = assigned_fcurves(ad) if ad is not None else None
    if fcurves is not None and settings.switch_keyed:
        fc = fcurves.find(pb.path_from_id(f'["{RIGIFY_SWITCH}"]'))
        if fc is not None:
            fcurves.remove(fc)
    pb[RIGIFY_SWITCH] = settings.switch_restore
    settings.switch_bone = ""
    settings.switch_keyed = False
    obj.update_tag()


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


# The run modules that build on this one (they import its names), bound here once loaded:
# an import statement inside a per-frame function costs several microseconds each call.
from . import body, plain  # noqa: E402
