"""The per-frame solve of a *plain* analytic limb, in as few steps as the road allows.

:func:`.solve.solve_object` runs a limb through :func:`.solve.solve_limb_settings` (read →
request → core → write → status, each stage general). Most limbs of a live session are
plain: an Analytic POSE or POSITION goal, no Rigify IK controls, no helper bones, and a
model proven equal to Blender's evaluation (no acting constraints or drivers on the limb's
bones, full inheritance below the upper bone, unit pose scale on its bones, the upper bone
following its parent plainly, the armature in its pose position), in a frame that is a
similarity (no shear or non-uniform scale above the limb). The bones' settings (inherit
modes, constraints) are read on the original bones, which the rig check compares every
frame; the pose (scale, the parent's pose, the location) on the evaluated ones. For those,
:func:`solve_plain` runs the same stages with the same functions
(:func:`~.bridge.requests.plain_request`: the goal and options of
:func:`~.bridge.requests.limb_request`, :func:`core.solve_limb`,
:func:`~.bridge.write.write_limb`, :func:`.solve.fill_solution`), so the rotations and the
status are the general road's bit for bit, but reads only the values a plain limb needs,
checks the object-wide conditions (drivers, rest position) and reads the world matrix once
per call (:class:`PlainFrame`), and takes the limb's frame-independent notes from its rig
(:func:`.solve.rig_notes`).

It returns None, before writing anything, for every limb that is not plain on this frame
(and inside :func:`.solve.held_rigs`, where the general road holds its notes for a bake's
range); the caller then takes the general road, which also names what is wrong (a missing
bone, an unsupported setting) in the status.

A plain limb is checked and read by :func:`solve_plain` and queued; :func:`flush` then
solves all queued limbs, and writes them and makes their statuses, in their order. Each
stage's code thus runs for every plain limb of a frame in turn, while it is still in the
processor's caches (about a tenth of the frame: a limb's whole road no longer fits them).
:func:`.solve.solve_object` flushes before anything else runs, so the result is the one
of solving each limb in turn (tests/blender/test_plain_queue.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from operator import attrgetter
from typing import Any

import numpy as np

from ...core import LimberError, solve_limb, solve_pose_floats, trusted_goal
from ..bridge import requests
from ..bridge.read import (
    LimbRead,
    ReadError,
    animated_setting,
    constrained,
    made,
    mat4,
    setting_fcurves,
)
from ..bridge.read import target_world as read_target
from ..bridge.rig import LimbRig, MappingError
from ..bridge.write import write_limb
from ..compat import float32_bytes, matrix_rows
from . import solve

#: The limb settings that decide whether a limb is plain, read in one C call.
_SETTINGS = attrgetter("goal_type", "solver", "switch_bone", "target", "swivel_mode",
                       "target_bone")
_UNIT = (1.0, 1.0, 1.0)
_NO_POLE = "no pole object; using the swivel angle"


class PlainFrame:
    """What a call of :func:`solve_object` reads once for all its plain limbs: the
    evaluated world matrix (its float32 bytes; :meth:`world`), the bones with drivers,
    whether the armature shows its rest position, the object's name and pointer, its
    original (``pbs``: if read) and evaluated pose bones, the F-curves that may animate
    its settings (:func:`~.bridge.read.setting_fcurves`)."""

    __slots__ = ("_world", "driven", "fcurves", "name", "pbs", "pbs_eval", "pointer", "queued",
                 "queued_bones", "rest", "waiting", "world_key", "world_matrix")

    def __init__(self, obj: Any, obj_eval: Any, pbs: Any = None) -> None:
        self.driven = solve.driven_bones(obj)
        self.rest = obj.data.pose_position == "REST"
        self.world_matrix = obj_eval.matrix_world
        self.world_key = float32_bytes(self.world_matrix)
        self._world: Any = None
        self.name = obj.name
        self.pointer = obj.as_pointer()
        self.pbs = obj.pose.bones if pbs is None else pbs
        self.pbs_eval = obj_eval.pose.bones
        self.fcurves = setting_fcurves(obj)
        #: The plain limbs checked and read by :func:`solve_plain`, to be solved and written
        #: by :func:`flush`, and the bones they will write.
        self.queued: list[_Queued] = []
        self.queued_bones: set[str] = set()
        #: The last :func:`solve_plain` left its limb only because it shares a bone with a
        #: queued one (plain again once the queue is written).
        self.waiting = False

    def world(self) -> Any:
        """The evaluated world matrix as a (1, 4, 4) array (made when first needed: a
        limb whose frame parts are kept needs only its bytes)."""
        if self._world is None:
            self._world = mat4(self.world_matrix)[None]
        return self._world


def _notes(obj: Any, rig: LimbRig, pole_missing: bool, name: str) -> list[str] | None:
    """A plain limb's notes (frame-independent: kept with the rig), or None when the rig
    has overrides (not plain). ``name``: the object's."""
    remarks, over = solve.rig_notes(obj, rig, name)
    if over:
        return None
    return [_NO_POLE, *remarks] if pole_missing else remarks


#: A plain POSE limb's frame parts: (inverse, uniform scale, inverse as rows of floats).
_Parts = tuple[Any, float, list[list[float]]]


def _pose_parts(rig: LimbRig, key: tuple[Any, ...], read: Any) -> _Parts | None:
    """A plain POSE limb's frame parts (:func:`~.bridge.requests.plain_frame_parts`), None
    for a frame that is not a similarity: looked up on the rig under ``key`` (the float32
    bytes of the world matrix, the parent's pose and the upper bone's location: the
    armature side of the frame), else made from ``read()``."""
    parts = requests.kept_frame_parts(rig, key)
    if parts is None:
        parts = requests.plain_frame_parts(rig, read(), key)
    return parts


def _solve_pose(settings: Any, rig: LimbRig, parts: _Parts, target: list[list[float]],
                pole: Any, swivel: float, swivel_mode: str) -> tuple[Any, float, float]:
    """The plain POSE limb's solve: (solution, the frame's uniform scale, µs in the core)
    from its frame parts (:func:`_pose_parts`). The goal stays on Python floats from the
    target's rows (:func:`~.bridge.requests.pose_goal_floats`:
    :func:`~.bridge.requests.plain_request`'s values) to the written rows
    (:func:`core.solve_pose_floats`: the values of :func:`core.solve_limb` bit for bit);
    where the float solve does not apply, :func:`core.solve_limb`."""
    position, rotation, kwargs, scale = requests.pose_goal_floats(
        settings, *parts, target, pole, swivel, swivel_mode)
    t1 = time.perf_counter()
    sol: Any = solve_pose_floats(rig.limb, position, rotation, **kwargs)
    if sol is None:  # the goal as plain_request gives it: views of one 4×4 frame
        (a, b, c), (d, e, f), (g, h, i) = rotation
        x, y, z = position
        m = np.array(((a, b, c, x), (d, e, f, y), (g, h, i, z), (0.0, 0.0, 0.0, 1.0)))
        sol = solve_limb(rig.limb, trusted_goal(m[:3, 3], m[:3, :3]), **kwargs)
    return sol, scale, (time.perf_counter() - t1) * 1e6


def _solve_position(rig: LimbRig, goal: Any, kwargs: dict[str, Any], scale: float
                    ) -> tuple[Any, float, float]:
    """The plain POSITION limb's solve (as :func:`_solve_pose` returns it): its request
    (:func:`~.bridge.requests.plain_request`) through :func:`core.solve_limb`."""
    t1 = time.perf_counter()
    sol = solve_limb(rig.limb, goal, **kwargs)
    return sol, scale, (time.perf_counter() - t1) * 1e6


#: A plain limb checked and read by :func:`solve_plain`, solved and written by
#: :func:`flush`: (its status, goal type, rig, pose bones, notes, its solve: () →
#: (solution, the frame's uniform scale, µs in the core), µs spent on it so far).
_Queued = tuple[solve.LimbStatus, str, LimbRig, tuple[Any, Any, Any], list[str],
                Callable[[], tuple[Any, float, float]], float]


def flush(obj: Any, pf: PlainFrame) -> tuple[list[solve.LimbStatus], bool]:
    """Solve, write and give their status to the plain limbs :func:`solve_plain` queued on
    ``pf``, in the order they were queued: first every limb's solve, then every limb's
    writes and status. Returns their statuses and whether the queue was cut short: when
    a limb's solve fails (``LimberError`` or ``ValueError``, e.g. a degenerate target
    frame), only the limbs before it are written; it and the ones after it are dropped
    (nothing of them written) and the caller solves them again, that one on the general
    road (where a single :func:`solve_plain` would have returned None)."""
    queued = pf.queued
    solved = []
    for q in queued:
        t0 = time.perf_counter()
        try:
            got = q[5]()
        except (LimberError, ValueError):
            break
        solved.append((q, got, (time.perf_counter() - t0) * 1e6))
    out = []
    for (st, kind, rig, bones, notes, _, elapsed), (sol, scale, solve_us), us in solved:
        t0 = time.perf_counter()
        st.solve_us = solve_us
        st.written = write_limb(obj, rig, sol.shoulder, float(sol.elbow),
                                sol.wrist if kind == "POSE" else None, bones, modes=rig.modes)
        pos, ori = solve.similarity_errors(kind, scale, sol)
        solve.fill_solution(st, sol, pos, ori, notes, True)
        st.total_us = elapsed + us + (time.perf_counter() - t0) * 1e6
        solve.STATUS[(st.object, st.limb)] = st
        out.append(st)
    cut = len(solved) < len(queued)
    queued.clear()
    pf.queued_bones.clear()
    return out, cut


def solve_plain(obj: Any, obj_eval: Any, settings: Any, depsgraph: Any, pf: PlainFrame,
                frame: int | None) -> solve.LimbStatus | None:
    """Check and read one limb if it is plain on this frame (see the module docstring) and
    queue it on ``pf``, returning its status, which :func:`flush` fills (model errors,
    proven) when it solves and writes the limb; None (nothing queued) otherwise.

    The caller flushes the queue before anything reads or evaluates the pose (another
    road, a depsgraph update) and before it returns: so each stage (checks and reads, the
    solve, the writes and status) runs for all plain limbs of a solve in turn, while its
    code is still in the processor's caches. Nothing a limb's checks and reads look at
    changes with the rotations of another limb, unless they share a bone: such a limb
    waits (None, ``pf.waiting``) to be checked again once the queue is written."""
    pf.waiting = False
    if solve.rigs_held():
        return None  # a bake's range: the general road holds its notes for the range
    t0 = time.perf_counter()
    kind, solver, switch, target, swivel_mode, target_bone = _SETTINGS(settings)
    if (solver != "ANALYTIC" or switch or target is None or pf.rest
            or (kind != "POSE" and kind != "POSITION")):
        return None
    names = solve.limb_bone_names(settings)
    bones = solve.limb_pose_bones(obj, settings, names, pf.pbs)
    if bones is None:
        return None
    if pf.queued_bones and not pf.queued_bones.isdisjoint(names):
        pf.waiting = True
        return None
    limb = settings.name
    try:
        rig = solve.rig_for(obj, settings, bones, names, (pf.name, limb, pf.pointer))
    except (MappingError, ReadError, LimberError, ValueError):
        return None  # the general road reports it
    if rig.helpers or not rig.upper_inherits:
        return None  # (the rig check compared the upper bone's inherit modes just now)
    upper, lower, end = rig.upper, rig.lower, rig.end
    if pf.driven and (upper in pf.driven or lower in pf.driven or end in pf.driven):
        return None
    if constrained(bones[0]) or constrained(bones[1]) or constrained(bones[2]):
        return None
    pole = settings.pole if swivel_mode == "POLE" else None
    notes = _notes(obj, rig, swivel_mode == "POLE" and pole is None, pf.name)
    if notes is None:
        return None
    pbs = pf.pbs_eval
    up, lo, en = pbs[upper], pbs[lower], pbs[end]
    if not up.scale[:] == lo.scale[:] == en.scale[:] == _UNIT:
        return None
    try:
        # the target's world frame: rows of floats, and an array when a read needs one
        t_eval = target.evaluated_get(depsgraph)
        tw = read_target(t_eval, target_bone) if target_bone else None
    except ReadError:
        return None
    tm: Any = None
    if tw is None:
        tm = t_eval.matrix_world
        target_rows: list[list[float]] = matrix_rows(tm)
    else:
        target_rows = tw.tolist()
    parent = up.parent
    pmat = None if parent is None else parent.matrix
    loc = up.location
    pole_at = (None if pole is None else np.array(
        [pole.evaluated_get(depsgraph).matrix_world.translation], dtype=np.float64))
    swivel = animated_setting(settings, "swivel", depsgraph, pf.fcurves)

    def read() -> LimbRead:
        rd: LimbRead = made(
            LimbRead,
            world=pf.world(),
            pose=None,
            basis=None,
            location=np.array(loc, dtype=np.float64)[None],
            end_basis=mat4(en.matrix_basis)[None] if kind == "POSITION" else None,
            target=(mat4(tm) if tw is None else tw)[None],
            pole=pole_at,
            swivel=np.array([swivel]),
            parent=np.eye(4)[None] if pmat is None else mat4(pmat)[None],
        )
        return rd

    run: Callable[[], tuple[Any, float, float]]
    try:
        if kind == "POSE":
            key = (pf.world_key, None if pmat is None else float32_bytes(pmat), float32_bytes(loc))
            parts = _pose_parts(rig, key, read)
            if parts is None:
                return None  # a sheared frame: the general road's forward kinematics
            run = partial(_solve_pose, settings, rig, parts, target_rows, pole_at, swivel,
                          swivel_mode)
        else:
            got = requests.plain_request(settings, rig, read())
            if got is None:
                return None
            run = partial(_solve_position, rig, *got)
    except (LimberError, ValueError):
        return None
    st = solve.LimbStatus(object=pf.name, limb=limb, solver=solver, frame=frame)
    pf.queued.append((st, kind, rig, bones, notes, run, (time.perf_counter() - t0) * 1e6))
    pf.queued_bones.update(names if kind == "POSE" else names[:2])
    return st
