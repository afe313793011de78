"""Suite 2 (issue 7): the incumbents, same arm, same goals.

Run from the repository root::

    .venv/bin/python -m benchmarks.incumbents [--quick] [--out DIR]

Limber's analytic limb solver (``core.solve_limb``) against what a user would otherwise
pick, measured side by side in one process on the human-proportioned 7-DOF arm and the
seeded goals of suite 1 (``tests/fixtures/sample_arm.py``):

* **Blender's IK constraint** through the real ``bpy`` module, solvers LEGACY and ITASC
  (``Object.pose.ik_solver``; iTaSC with Blender's default ``ik_param``). The arm is built
  as bones whose rest frames are exactly the limb's frames (armature object at the
  identity, so the shoulder frame is armature space):

  - ``upper`` — the shoulder ball (IK limits x/y/z from the arm's shoulder limits);
  - ``hinge`` — the elbow: rest frame A·R_k(θ_rest), ``lock_ik_y``/``lock_ik_z`` so the
    IK turns it about its local X = the limb's elbow axis, IK limit x = the elbow limits
    shifted by θ_rest;
  - ``fore`` — the forearm, child of ``hinge`` (not connected, head at the elbow, tail at
    the wrist, every IK axis locked). It is needed because the arm's 10° carrying angle
    makes the elbow axis non-perpendicular to the forearm, which no single Blender bone
    can express (a bone turns about axes of its own frame, whose Y is the bone);
  - ``hand`` — head at the wrist, tail at the effector (0.08 m), rest frame = the wrist's.

  The IK constraint sits on ``fore`` (``chain_count`` 3: fore, hinge, upper — two moving
  joints, Blender's "2-bone arm") with an Empty target at the wrist. Pose goals add a
  Copy Rotation (world → world) of the same Empty on ``hand``, the usual Blender arm rig
  (the target Empty sits at the wrist centre p − R·t_E with the goal's rotation; t_E is a
  pure translation, so the hand tip lands on p when the wrist does). A second pose rig
  ("7-DOF") puts the IK on ``hand`` (``chain_count`` 4, ``use_rotation``) with the Empty at
  the goal frame itself. Rest poses: elbow bent 30° (default) and straight (θ_rest = 0).
  Time per solve = set the Empty's ``matrix_world`` + ``view_layer.update()``; *IK-only*
  = that minus the same with the IK constraint muted (passes alternate; each figure is the
  median over passes of the per-goal median, with the min–max over passes).
  Blender's start pose is the bones' own (FK) rotation channels: IK is re-solved from
  them on every update. iTaSC runs with Blender's defaults (``ik_param``: precision 5 mm,
  reiteration INITIAL) and, in the main and limits tables, also tuned (precision 0.1 mm,
  reiteration ALWAYS).

* **ikpy** (``Chain`` of URDF-style links built in code: the shoulder ball as revolute
  z, y, x links — R = Rz·Ry·Rx, Blender's 'XYZ' — the elbow revolute about the limb's
  axis, the wrist likewise, fixed links for the segments), ``inverse_kinematics`` with
  ``orientation_mode="all"`` for pose goals, bounds = the arm's limits.

Measured for each: time per solve, position / orientation error (median, p95, max),
failures (> 1 mm or > 1°), straight rest pose, start-pose dependence (same goal from two
start poses: elbow-position difference), cyclic drift (a goal walked around a circle
three times: joint-angle change between laps 1 and 3 at the same goal), behaviour past
reach, and joint limits on goals that have a limit-satisfying solution (they are FK of
angles drawn within the limits): how often and by how much each result violates a limit,
with the full limits and with a single-axis swing limit on the shoulder (x only, the
arm's −40…130°). Violations are read in the arm's own parametrisation — the shoulder's
Euler 'XYZ' angles (the better of the two Euler families), the elbow's hinge angle — and,
for the shoulder, also in swing–twist terms (:func:`swing_twist_angles`, our reading of
how Blender's IK limits measure a ball joint), because Blender applies the same numbers
in that convention: a Blender result can satisfy its own limits and still break the
Euler ones a user typed in. A third block draws goals feasible in swing–twist terms, so
Blender's solvers are also judged on goals their own convention can reach.
"""

from __future__ import annotations

import os

# Standalone runs use the runner's BLAS setting (benchmarks/__main__.py): the solvers work
# on tiny matrices, and BLAS worker threads only add noise on a shared machine.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import atexit  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from benchmarks._report import Suite, Target, md_table, targets_table  # noqa: E402
from core import (  # noqa: E402
    EulerLimits,
    Limb,
    LimbLimits,
    PoseGoal,
    PositionGoal,
    matrix_to_euler,
    matrix_to_euler_families,
    rotation_angle_between,
    solve_limb,
    wrap_angle,
)
from tests.fixtures.sample_arm import arm_limits, human_arm, random_reachable_goals  # noqa: E402

FloatArray = NDArray[np.float64]

SEED = 20261122
#: Failure thresholds of the issue: > 1 mm or > 1°.
FAIL_POS = 1e-3
FAIL_ROT = math.radians(1.0)
#: A limit counts as violated beyond this (deg) — well above float32 round-off in Blender.
VIOLATION_TOL_DEG = 0.1
REST_BEND = math.radians(30.0)
#: iTaSC with its defaults (precision 5 mm, reiterate on the first frame only) and tuned.
ITASC_TUNED = "ITASC_TUNED"
ITASC_TUNED_PARAMS: dict[str, object] = {"precision": 1e-4, "reiteration_method": "ALWAYS"}


def solver_label(solver: str) -> str:
    """Row name of a Blender solver ('LEGACY', 'ITASC' or :data:`ITASC_TUNED`)."""
    if solver == ITASC_TUNED:
        return "Blender ITASC, precision 0.1 mm"
    return f"Blender {solver}"


#: Row names of the main table (the test checks them).
METHODS = ("Limber analytic", "Limber analytic, batched", "Blender LEGACY", "Blender ITASC", "ikpy")
TABLES = (
    "### Time and accuracy",
    "### Straight rest pose",
    "### Start-pose dependence",
    "### Cyclic drift",
    "### Past reach",
    "### Joint limits on feasible goals",
)


# --------------------------------------------------------------------------------------
# bpy
# --------------------------------------------------------------------------------------


def load_bpy() -> Any:
    """``import bpy`` with ``BLENDER_USER_RESOURCES`` pointed at a temporary folder first
    (unless bpy is already imported, e.g. by the Blender tests' conftest)."""
    if "bpy" not in sys.modules:
        folder = tempfile.mkdtemp(prefix="limber-bench-blender-")
        os.environ["BLENDER_USER_RESOURCES"] = folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    import bpy

    return bpy


def _to_mat(bpy_matrix: Any) -> FloatArray:
    return np.array([list(r) for r in bpy_matrix], dtype=np.float64)


def _min_rotation(frm: FloatArray, to: FloatArray) -> FloatArray:
    """The smallest rotation taking unit vector ``frm`` to unit vector ``to``."""
    v = np.cross(frm, to)
    c = float(np.dot(frm, to))
    s = float(np.linalg.norm(v))
    if s < 1e-12:
        if c > 0:
            return np.eye(3)
        axis = np.cross(frm, [1.0, 0.0, 0.0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(frm, [0.0, 0.0, 1.0])
        axis /= np.linalg.norm(axis)
        return 2.0 * np.outer(axis, axis) - np.eye(3)
    k = v / s
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + s * kx + (1 - c) * (kx @ kx)


def rot_axis(axis: FloatArray, angle: Any) -> FloatArray:
    """Rotation(s) (…, 3, 3) by ``angle`` (rad, scalar or (N,)) about ``axis`` (Rodrigues)."""
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    a = np.asarray(angle, dtype=np.float64)[..., None, None]
    out: FloatArray = np.eye(3) + np.sin(a) * kx + (1 - np.cos(a)) * (kx @ kx)
    return out


def transform(rot: FloatArray, trans: FloatArray) -> FloatArray:
    """The 4×4 transform of a rotation and a translation."""
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = trans
    return m


@dataclass
class Pose:
    """A limb pose read back from a solver (shoulder frame; metres, radians)."""

    shoulder: FloatArray  # R1 (3, 3)
    elbow: float  # θ4
    wrist: FloatArray  # R2 (3, 3)
    elbow_pos: FloatArray
    wrist_pos: FloatArray
    effector: FloatArray  # 4×4


@dataclass
class BlenderRig:
    """A limb built as bones with an IK constraint driven by an Empty (see module doc)."""

    bpy: Any
    limb: Limb
    shoulder: FloatArray  # world ← shoulder frame (4×4)
    ob: Any
    target: Any
    ik: Any
    rest_bend: float
    mode: str
    pole: Any = None

    @property
    def bones(self) -> Any:
        return self.ob.pose.bones

    def matrices(self, goals: FloatArray) -> list[Any]:
        """mathutils Matrix world transforms of the Empty for goal frames (N, 4, 4) in the
        shoulder frame (built before timing): wrist goals for 'position', effector frames
        for 'pose' and 'pose7'."""
        from mathutils import Matrix

        out = []
        e = np.asarray(self.limb.effector)
        for g in goals:
            m = self.shoulder @ g
            if self.mode == "pose":  # the Empty sits at the wrist centre
                m = m @ np.linalg.inv(e)
            out.append(Matrix(m.tolist()))
        return out

    def set_start(self, shoulder_euler: Sequence[float], elbow: float) -> None:
        """The FK pose the IK starts from: shoulder Euler 'XYZ' and elbow angle (rad)."""
        self.bones["upper"].rotation_euler = tuple(shoulder_euler)
        self.bones["hinge"].rotation_euler = (elbow - self.rest_bend, 0.0, 0.0)
        for name in ("fore", "hand"):
            self.bones[name].rotation_euler = (0.0, 0.0, 0.0)

    def solve(self, m: Any, pole: Any = None) -> None:
        """Move the target Empty (and the pole Empty, a mathutils Vector) and update."""
        self.target.matrix_world = m
        if pole is not None:
            self.pole.location = pole
        self.bpy.context.view_layer.update()

    def read(self) -> Pose:
        s_inv = np.linalg.inv(self.shoulder)
        up = s_inv @ _to_mat(self.bones["upper"].matrix)
        hi = s_inv @ _to_mat(self.bones["hinge"].matrix)
        hand = s_inv @ _to_mat(self.bones["hand"].matrix)
        a = np.asarray(self.limb.a)
        b = np.asarray(self.limb.b)
        e = np.asarray(self.limb.effector)
        r1 = up[:3, :3]
        rk = a[:3, :3].T @ r1.T @ hi[:3, :3]
        theta = math.atan2(rk[2, 1], rk[1, 1])
        w = hi @ b  # the posed hinge frame is the elbow's distal frame A·R_k(θ4)
        r2 = w[:3, :3].T @ hand[:3, :3]
        eff = hand @ e
        return Pose(r1, theta, r2, up[:3, 3] + r1 @ a[:3, 3], w[:3, 3], eff)

    def remove(self) -> None:
        arm = self.ob.data
        self.bpy.data.objects.remove(self.ob)
        self.bpy.data.armatures.remove(arm)
        self.bpy.data.objects.remove(self.target)
        if self.pole is not None:
            self.bpy.data.objects.remove(self.pole)


def _set_ik_limits(pb: Any, lim: EulerLimits | None, shift: float = 0.0) -> None:
    if lim is None:
        return
    lo, hi = lim.bounds()
    for i, ax in enumerate("xyz"):
        if lim.limited[i]:
            setattr(pb, f"use_ik_limit_{ax}", True)
            setattr(pb, f"ik_min_{ax}", max(-math.pi, lo[i] - shift))
            setattr(pb, f"ik_max_{ax}", min(math.pi, hi[i] - shift))


def build_rig(
    bpy: Any,
    limb: Limb,
    *,
    solver: str = "LEGACY",
    rest_bend: float = REST_BEND,
    mode: str = "position",
    shoulder: FloatArray | None = None,
    name: str = "arm",
    pole: FloatArray | None = None,
) -> BlenderRig:
    """Build ``limb`` as bones (module docstring) with an IK constraint and a target Empty.

    ``mode``: 'position' (IK on the forearm to the wrist), 'pose' (+ hand Copy Rotation),
    'pose7' (IK on the hand, chain 4, use_rotation). The limb's elbow axis must be its
    elbow frame's X and A's / E's translations must lie along Y (true for the sample
    arm and for the mocap limbs). ``shoulder``: world ← shoulder frame (default identity).
    ``pole``: optional pole-target position (world) for the IK constraint.
    """
    a = np.asarray(limb.a)
    b = np.asarray(limb.b)
    e = np.asarray(limb.effector)
    k = np.asarray(limb.elbow_axis)
    if not np.allclose(k, (1.0, 0.0, 0.0)):
        raise ValueError(f"build_rig needs the elbow axis along X, got {k}")
    s = np.eye(4) if shoulder is None else np.asarray(shoulder, dtype=np.float64)
    arm = bpy.data.armatures.new(name)
    ob = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(ob)
    bpy.context.view_layer.objects.active = ob
    from mathutils import Matrix

    x = np.array([1.0, 0.0, 0.0])
    y = np.array([0.0, 1.0, 0.0])
    hinge_rest = s @ a @ transform(rot_axis(x, rest_bend), np.zeros(3))
    tb = b[:3, 3]
    fore = hinge_rest @ transform(_min_rotation(y, tb / np.linalg.norm(tb)), np.zeros(3))
    wrist = hinge_rest @ b
    frames = {
        "upper": (s, float(np.linalg.norm(a[:3, 3])), None),
        "hinge": (hinge_rest, float(np.linalg.norm(tb)) * 0.5, "upper"),
        "fore": (fore, float(np.linalg.norm(tb)), "hinge"),
        "hand": (wrist, float(np.linalg.norm(e[:3, 3])), "fore"),
    }
    bpy.ops.object.mode_set(mode="EDIT")
    for bone, (m, length, parent) in frames.items():
        eb = arm.edit_bones.new(bone)
        eb.head = (0.0, 0.0, 0.0)
        eb.tail = (0.0, length, 0.0)
        eb.matrix = Matrix(m.tolist())
        if parent is not None:
            eb.parent = arm.edit_bones[parent]
    arm.edit_bones["hand"].use_connect = True
    bpy.ops.object.mode_set(mode="OBJECT")
    for bone, (m, _, _) in frames.items():
        got = _to_mat(arm.bones[bone].matrix_local)
        if not np.allclose(got, m, atol=1e-5):
            raise RuntimeError(f"bone {bone} rest frame {got} != {m}")
    ob.pose.ik_solver = "ITASC" if solver == ITASC_TUNED else solver
    if solver == ITASC_TUNED:
        for key, value in ITASC_TUNED_PARAMS.items():
            setattr(ob.pose.ik_param, key, value)
    pbs = ob.pose.bones
    for pb in pbs:
        pb.rotation_mode = "XYZ"
    lim = limb.limits
    pbs["hinge"].lock_ik_y = pbs["hinge"].lock_ik_z = True
    pbs["fore"].lock_ik_x = pbs["fore"].lock_ik_y = pbs["fore"].lock_ik_z = True
    if lim is not None:
        _set_ik_limits(pbs["upper"], lim.shoulder)
        if lim.elbow is not None:
            pbs["hinge"].use_ik_limit_x = True
            pbs["hinge"].ik_min_x = lim.elbow[0] - rest_bend
            pbs["hinge"].ik_max_x = lim.elbow[1] - rest_bend
        _set_ik_limits(pbs["hand"], lim.wrist)
    target = bpy.data.objects.new(f"{name}_target", None)
    bpy.context.scene.collection.objects.link(target)
    if mode == "pose7":
        ik = pbs["hand"].constraints.new("IK")
        ik.chain_count = 4
        ik.use_rotation = True
    else:
        ik = pbs["fore"].constraints.new("IK")
        ik.chain_count = 3
        if mode == "pose":
            cr = pbs["hand"].constraints.new("COPY_ROTATION")
            cr.target = target
    ik.target = target
    pole_ob = None
    if pole is not None:
        pole_ob = bpy.data.objects.new(f"{name}_pole", None)
        bpy.context.scene.collection.objects.link(pole_ob)
        pole_ob.location = tuple(float(v) for v in pole)
        ik.pole_target = pole_ob
    bpy.context.view_layer.update()
    return BlenderRig(bpy, limb, s, ob, target, ik, rest_bend, mode, pole_ob)


# --------------------------------------------------------------------------------------
# ikpy
# --------------------------------------------------------------------------------------


def ikpy_version() -> str | None:
    try:
        import ikpy

        return str(ikpy.__version__)
    except ImportError:
        return None


@dataclass
class IkpyArm:
    """An ikpy Chain of the limb (module docstring) and how to read poses back."""

    chain: Any
    limb: Limb
    wrist_only: bool

    def solve(self, goal: FloatArray, start: FloatArray | None = None) -> FloatArray:
        kw: dict[str, Any] = {}
        if start is not None:
            kw["initial_position"] = start
        if self.wrist_only:
            return np.asarray(self.chain.inverse_kinematics(goal[:3, 3], **kw))
        return np.asarray(
            self.chain.inverse_kinematics(goal[:3, 3], goal[:3, :3], orientation_mode="all", **kw)
        )

    def start(self, shoulder_euler: Sequence[float], elbow: float) -> FloatArray:
        q = np.zeros(len(self.chain.links))
        q[1:4] = shoulder_euler[2], shoulder_euler[1], shoulder_euler[0]
        q[4] = elbow
        return q

    def read(self, q: FloatArray) -> Pose:
        from core import euler_to_matrix

        frames = self.chain.forward_kinematics(q, full_kinematics=True)
        r1 = euler_to_matrix(np.array([q[3], q[2], q[1]]), "XYZ")
        r2 = np.eye(3) if self.wrist_only else euler_to_matrix(np.array([q[7], q[6], q[5]]))
        a = np.asarray(self.limb.a)
        return Pose(r1, float(q[4]), r2, r1 @ a[:3, 3], frames[5][:3, 3], np.asarray(frames[-1]))


def build_ikpy(limb: Limb, *, wrist_only: bool) -> IkpyArm | None:
    """The limb as an ikpy Chain (None when ikpy is not installed)."""
    try:
        from ikpy.chain import Chain
        from ikpy.link import OriginLink, URDFLink
    except ImportError:
        return None
    a = np.asarray(limb.a)
    b = np.asarray(limb.b)
    e = np.asarray(limb.effector)
    lim = limb.limits

    def rpy(m: FloatArray) -> FloatArray:
        return matrix_to_euler(m[:3, :3], "XYZ")

    def ball(prefix: str, el: EulerLimits | None, origin: FloatArray) -> list[Any]:
        out = []
        bounds: list[tuple[float, float] | None] = [None, None, None]
        if el is not None:
            lo, hi = el.bounds()
            bounds = [(lo[i], hi[i]) if el.limited[i] else None for i in range(3)]
        for j, i in enumerate((2, 1, 0)):  # R = Rz·Ry·Rx: z outermost
            axis = np.zeros(3)
            axis[i] = 1.0
            tr = origin[:3, 3] if j == 0 else np.zeros(3)
            ori = rpy(origin) if j == 0 else np.zeros(3)
            out.append(URDFLink(f"{prefix}_{'xyz'[i]}", tr, ori, rotation=axis, bounds=bounds[i]))
        return out

    links: list[Any] = [OriginLink()]
    links += ball("shoulder", lim.shoulder if lim else None, np.eye(4))
    elbow_b = lim.elbow if lim is not None else None
    links.append(
        URDFLink("elbow", a[:3, 3], rpy(a), rotation=np.asarray(limb.elbow_axis), bounds=elbow_b)
    )
    if wrist_only:
        links.append(URDFLink("wrist", b[:3, 3], rpy(b), joint_type="fixed"))
    else:
        links += ball("wrist", lim.wrist if lim else None, b)
        links.append(URDFLink("effector", e[:3, 3], rpy(e), joint_type="fixed"))
    mask = [False] + [lk.joint_type != "fixed" for lk in links[1:]]
    chain = Chain(links, active_links_mask=mask, name="arm")
    return IkpyArm(chain, limb, wrist_only)


# --------------------------------------------------------------------------------------
# Limber
# --------------------------------------------------------------------------------------


def wrist_limb(limb: Limb) -> Limb:
    """The same arm with the effector at the wrist centre (the "2-bone" position problem)."""
    return Limb(a=limb.a, b=limb.b, elbow_axis=limb.elbow_axis, limits=limb.limits)


def pose_of(limb: Limb, r1: FloatArray, theta: float, r2: FloatArray) -> Pose:
    """The :class:`Pose` of joint values on ``limb`` (forward kinematics)."""
    a = np.asarray(limb.a)
    eff = limb.forward(r1, theta, r2)
    return Pose(r1, theta, r2, r1 @ a[:3, 3], limb.wrist_position(r1, theta), eff)


def limber_pose(limb: Limb, sol: Any) -> Pose:
    """The :class:`Pose` of a single :class:`LimbSolution`."""
    return pose_of(limb, np.asarray(sol.shoulder), float(sol.elbow), np.asarray(sol.wrist))


def as_goal(frame: FloatArray, pose: bool) -> PoseGoal | PositionGoal:
    """A goal from one frame (4, 4) or a batch of frames (N, 4, 4)."""
    if pose:
        return PoseGoal(frame[..., :3, 3], frame[..., :3, :3])
    return PositionGoal(frame[..., :3, 3])


def goal_frames(goal: PoseGoal | PositionGoal) -> FloatArray:
    p = np.asarray(goal.position)
    out = np.tile(np.eye(4), (len(p), 1, 1))
    out[:, :3, 3] = p
    if isinstance(goal, PoseGoal):
        out[:, :3, :3] = np.asarray(goal.rotation)
    return out


# --------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------


@dataclass
class Run:
    """One method on one goal set: per-goal results and per-pass median times (µs)."""

    method: str
    poses: list[Pose]
    pos_err: FloatArray
    rot_err: FloatArray | None
    pass_us: list[float]
    ik_only_us: list[float] | None = None
    note: str = ""

    @property
    def us(self) -> float:
        return statistics.median(self.pass_us)

    def failures(self) -> float:
        bad = self.pos_err > FAIL_POS
        if self.rot_err is not None:
            bad |= self.rot_err > FAIL_ROT
        return 100.0 * float(np.mean(bad))


def errors(
    poses: Sequence[Pose], goals: FloatArray, pose: bool, wrist: bool
) -> tuple[FloatArray, FloatArray | None]:
    got = np.array([p.wrist_pos if wrist else p.effector[:3, 3] for p in poses])
    pe = np.linalg.norm(got - goals[:, :3, 3], axis=1)
    if not pose:
        return pe, None
    rots = np.array([p.effector[:3, :3] for p in poses])
    return pe, rotation_angle_between(rots, goals[:, :3, :3])


#: Batched calls per pass (their median is the pass's figure): one call takes ~1 ms, so a
#: single garbage-collection pause or scheduler hiccup would otherwise set the figure.
BATCH_REPEATS = 5


def time_batched(call: Callable[[], Any]) -> tuple[float, Any]:
    """Median µs of :data:`BATCH_REPEATS` calls of ``call`` and its (last) result."""
    clock = time.perf_counter_ns
    t = []
    out = None
    for _ in range(BATCH_REPEATS):
        t0 = clock()
        out = call()
        t.append(clock() - t0)
    return float(np.median(t)) / 1e3, out


def run_limber(
    limb: Limb, frames: FloatArray, pose: bool, passes: int, wrist: bool
) -> tuple[Run, Run]:
    """Single calls (each timed) and one batched call, ``passes`` times each."""
    goals = [as_goal(f, pose) for f in frames]
    batch = as_goal(frames, pose)
    for g in goals[:10]:
        solve_limb(limb, g)
    clock = time.perf_counter_ns
    single: list[float] = []
    batched: list[float] = []
    sols: list[Any] = []
    for _ in range(passes):
        t = np.empty(len(goals))
        sols = []
        for i, g in enumerate(goals):
            t0 = clock()
            sol = solve_limb(limb, g)
            t[i] = clock() - t0
            sols.append(sol)
        single.append(float(np.median(t)) / 1e3)
        bt, bsol = time_batched(lambda: solve_limb(limb, batch))
        batched.append(bt / len(goals))
    poses = [limber_pose(limb, s) for s in sols]
    bposes = [limber_pose(limb, bsol[i]) for i in range(len(goals))]
    pe, re = errors(poses, frames, pose, wrist)
    bpe, bre = errors(bposes, frames, pose, wrist)
    return (
        Run(METHODS[0], poses, pe, re, single),
        Run(METHODS[1], bposes, bpe, bre, batched),
    )


def run_blender(
    rig: BlenderRig,
    frames: FloatArray,
    pose: bool,
    passes: int,
    wrist: bool,
    label: str,
    poles: FloatArray | None = None,
) -> Run:
    """Per-goal update times with the IK active and muted (alternating passes).
    ``poles``: (N, 3) pole-target positions (shoulder frame) moved with each goal."""
    from mathutils import Vector

    mats = rig.matrices(frames)
    pvec: list[Any] = [None] * len(mats)
    if poles is not None:
        pw = poles @ rig.shoulder[:3, :3].T + rig.shoulder[:3, 3]
        pvec = [Vector(p.tolist()) for p in pw]
    clock = time.perf_counter_ns
    active: list[float] = []
    muted: list[float] = []
    poses: list[Pose] = []
    for m, pv in zip(mats[:5], pvec[:5], strict=True):
        rig.solve(m, pv)
    for _ in range(passes):
        for mute in (False, True):
            rig.ik.mute = mute
            rig.bpy.context.view_layer.update()
            t = np.empty(len(mats))
            out: list[Pose] = []
            for i, m in enumerate(mats):
                t0 = clock()
                rig.solve(m, pvec[i])
                t[i] = clock() - t0
                if not mute:
                    out.append(rig.read())
            (muted if mute else active).append(float(np.median(t)) / 1e3)
            if not mute:
                poses = out
    rig.ik.mute = False
    rig.bpy.context.view_layer.update()
    pe, re = errors(poses, frames, pose, wrist)
    ik_only = [x - y for x, y in zip(active, muted, strict=True)]
    return Run(label, poses, pe, re, active, ik_only)


def run_ikpy(arm: IkpyArm, frames: FloatArray, pose: bool, passes: int, wrist: bool) -> Run:
    clock = time.perf_counter_ns
    res: list[float] = []
    poses: list[Pose] = []
    for _ in range(passes):
        t = np.empty(len(frames))
        out: list[Pose] = []
        for i, f in enumerate(frames):
            t0 = clock()
            q = arm.solve(f)
            t[i] = clock() - t0
            out.append(arm.read(q))
        res.append(float(np.median(t)) / 1e3)
        poses = out
    pe, re = errors(poses, frames, pose, wrist)
    return Run("ikpy", poses, pe, re, res)


# --------------------------------------------------------------------------------------
# Limits
# --------------------------------------------------------------------------------------


def _interval_violation(a: FloatArray, lo: float, hi: float) -> FloatArray:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi - lo >= 2 * math.pi:
        return np.zeros_like(a)
    mid = 0.5 * (lo + hi)
    half = 0.5 * (hi - lo)
    d = np.abs(wrap_angle(a - mid))
    out: FloatArray = np.maximum(0.0, d - half)
    return out


def euler_violation(rots: FloatArray, lim: EulerLimits | None) -> FloatArray:
    """Per rotation, the smaller over the two Euler families of the largest excess (rad)
    of an angle beyond its limits."""
    if lim is None:
        return np.zeros(len(rots))
    fam = matrix_to_euler_families(rots, lim.order)  # (N, 2, 3)
    lo, hi = lim.bounds()
    v = np.zeros(fam.shape[:2])
    for i in range(3):
        if lim.limited[i]:
            v = np.maximum(v, _interval_violation(fam[..., i], lo[i], hi[i]))
    out: FloatArray = v.min(axis=1)
    return out


def violations(limits: LimbLimits, poses: Sequence[Pose], wrist: bool) -> FloatArray:
    """Largest limit excess (deg) per pose: shoulder Euler, elbow hinge, wrist Euler."""
    v = euler_violation(np.array([p.shoulder for p in poses]), limits.shoulder)
    if limits.elbow is not None:
        th = np.array([p.elbow for p in poses])
        v = np.maximum(v, _interval_violation(th, limits.elbow[0], limits.elbow[1]))
    if not wrist:
        v = np.maximum(v, euler_violation(np.array([p.wrist for p in poses]), limits.wrist))
    return np.degrees(v)


def swing_twist_angles(rots: FloatArray) -> FloatArray:
    """(N, 3) (x, y, z) angles (rad) of a bone rotation in swing–twist terms — our reading
    of how Blender's IK limits measure a ball joint: R = S·T, T a twist about the bone's Y,
    S the swing taking Y to the posed bone direction d; x / z = 2·asin of the swing
    quaternion's x / z components, y = the twist angle."""
    d = rots[:, :, 1]
    a = np.arccos(np.clip(d[:, 1], -1.0, 1.0))
    n = np.hypot(d[:, 0], d[:, 2])
    safe = np.where(n > 1e-12, n, 1.0)
    half = np.sin(0.5 * a)
    qx = np.where(n > 1e-12, half * d[:, 2] / safe, 0.0)
    qz = np.where(n > 1e-12, -half * d[:, 0] / safe, 0.0)
    axis = np.stack([d[:, 2], np.zeros_like(a), -d[:, 0]], axis=1) / safe[:, None]
    kx = np.zeros((len(a), 3, 3))
    kx[:, 0, 1], kx[:, 0, 2] = -axis[:, 2], axis[:, 1]
    kx[:, 1, 0], kx[:, 1, 2] = axis[:, 2], -axis[:, 0]
    kx[:, 2, 0], kx[:, 2, 1] = -axis[:, 1], axis[:, 0]
    sw = np.eye(3) + np.sin(a)[:, None, None] * kx + (1 - np.cos(a))[:, None, None] * (kx @ kx)
    tw = np.swapaxes(sw, 1, 2) @ rots
    tau = np.arctan2(tw[:, 0, 2], tw[:, 0, 0])
    return np.stack(
        [2 * np.arcsin(np.clip(qx, -1, 1)), tau, 2 * np.arcsin(np.clip(qz, -1, 1))], axis=1
    )


def swing_twist_violation(rots: FloatArray, lim: EulerLimits | None) -> FloatArray:
    """Largest excess (rad) of the swing–twist angles beyond the same limit numbers."""
    if lim is None:
        return np.zeros(len(rots))
    ang = swing_twist_angles(rots)
    lo, hi = lim.bounds()
    v = np.zeros(len(rots))
    for i in range(3):
        if lim.limited[i]:
            v = np.maximum(v, _interval_violation(ang[:, i], lo[i], hi[i]))
    return v


def swing_limits() -> LimbLimits:
    """Single-axis swing limit on the shoulder (x only, the arm's range) + the elbow's."""
    full = arm_limits()
    sh = full.shoulder
    assert sh is not None
    lo, hi = sh.bounds()
    return LimbLimits(
        shoulder=EulerLimits("XYZ", (lo[0], None, None), (hi[0], None, None)),
        elbow=full.elbow,
    )


# --------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------


def fmt_us(values: Sequence[float]) -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:,.1f}"
    return f"{med:,.1f} ({min(values):,.1f}–{max(values):,.1f})"


def fmt_err(err: FloatArray | None, scale: float, unit: str) -> str:
    if err is None:
        return "—"
    e = err * scale
    return f"{np.median(e):.2g} / {np.percentile(e, 95):.2g} / {np.max(e):.2g} {unit}"


def ratio(a: float, b: float) -> str:
    """``b / a`` as a factor, three significant digits (whole numbers from 1,000)."""
    if a <= 0:
        return "n/a"
    r = b / a
    return f"{r:,.0f}×" if r >= 1000 else f"{r:.3g}×"


# --------------------------------------------------------------------------------------
# The suite
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    goals: int
    ikpy_goals: int
    passes: int
    circle_steps: int
    limit_goals: int


QUICK = Sizes(goals=20, ikpy_goals=10, passes=2, circle_steps=12, limit_goals=20)
FULL = Sizes(goals=1000, ikpy_goals=200, passes=5, circle_steps=48, limit_goals=1000)


def _start_poses() -> tuple[tuple[tuple[float, float, float], float], ...]:
    """Two FK start poses: the rest pose (elbow bent 30°) and an arbitrary other one."""
    r = math.radians
    return (((0.0, 0.0, 0.0), r(30.0)), ((r(60.0), r(-40.0), r(50.0)), r(100.0)))


def _main_table(
    bpy: Any, sizes: Sizes, say: Callable[[str], None]
) -> tuple[list[list[object]], dict[str, Run], list[Path]]:
    """Limits off, bent rest: position (wrist, 2-bone) and pose goals."""
    arm = human_arm(limits=False)
    two = wrist_limb(arm)
    rows: list[list[object]] = []
    keep: dict[str, Run] = {}
    for kind, limb, pose, wrist in (
        ("position (wrist, 2-bone)", two, False, True),
        ("pose (hand frame)", arm, True, False),
    ):
        src = two if not pose else arm
        g = random_reachable_goals(src, sizes.goals, SEED, position_only=not pose)
        frames = goal_frames(g)
        say(f"incumbents: {kind}: Limber")
        single, batched = run_limber(limb, frames, pose, sizes.passes, wrist)
        runs = [single, batched]
        for solver in ("LEGACY", "ITASC", ITASC_TUNED):
            modes = ["position"] if not pose else ["pose", "pose7"]
            if solver == ITASC_TUNED:
                modes = modes[:1]
            for mode in modes:
                say(f"incumbents: {kind}: Blender {solver} {mode}")
                rig = build_rig(bpy, arm, solver=solver, mode=mode)
                rig.set_start(*_start_poses()[0])
                label = solver_label(solver) + (" 7-DOF (hand IK)" if mode == "pose7" else "")
                runs.append(run_blender(rig, frames, pose, sizes.passes, wrist, label))
                rig.remove()
        ik = build_ikpy(arm if pose else two, wrist_only=not pose)
        if ik is not None:
            say(f"incumbents: {kind}: ikpy")
            n = sizes.ikpy_goals
            runs.append(run_ikpy(ik, frames[:n], pose, max(1, sizes.passes // 2), wrist))
        for r in runs:
            ik_only = fmt_us(r.ik_only_us) if r.ik_only_us else "—"
            ref = r.ik_only_us if r.ik_only_us else r.pass_us
            rows.append(
                [
                    kind,
                    r.method,
                    fmt_us(r.pass_us),
                    ik_only,
                    ratio(single.us, statistics.median(ref)),
                    ratio(batched.us, statistics.median(ref)),
                    fmt_err(r.pos_err, 1e3, "mm"),
                    fmt_err(r.rot_err, 180 / math.pi, "°"),
                    f"{r.failures():.1f}",
                ]
            )
            keep[f"{kind}|{r.method}"] = r
    return rows, keep, []


def _straight_table(bpy: Any, sizes: Sizes) -> list[list[object]]:
    """Rest pose straight (θ_rest = 0, start pose = rest): position goals, limits off."""
    arm = human_arm(limits=False)
    two = wrist_limb(arm)
    frames = goal_frames(random_reachable_goals(two, sizes.goals, SEED + 1, position_only=True))
    rows: list[list[object]] = []
    single, _ = run_limber(two, frames, False, 1, True)
    rows.append(
        ["Limber analytic", "—", fmt_err(single.pos_err, 1e3, "mm"), f"{single.failures():.1f}"]
    )
    for solver in ("LEGACY", "ITASC"):
        for bend in (REST_BEND, 0.0):
            rig = build_rig(bpy, arm, solver=solver, rest_bend=bend)
            rig.set_start((0.0, 0.0, 0.0), bend)
            r = run_blender(rig, frames, False, 1, True, f"Blender {solver}")
            rig.remove()
            rows.append(
                [
                    f"Blender {solver}",
                    f"{math.degrees(bend):.0f}°",
                    fmt_err(r.pos_err, 1e3, "mm"),
                    f"{r.failures():.1f}",
                ]
            )
    return rows


def _elbow_diff(a: Sequence[Pose], b: Sequence[Pose]) -> FloatArray:
    return np.array([np.linalg.norm(x.elbow_pos - y.elbow_pos) for x, y in zip(a, b, strict=True)])


def _start_pose_table(bpy: Any, sizes: Sizes) -> tuple[list[list[object]], dict[str, float]]:
    """Same goals solved from two start poses: elbow-position difference (mm)."""
    arm = human_arm(limits=False)
    two = wrist_limb(arm)
    frames = goal_frames(random_reachable_goals(two, sizes.goals, SEED + 2, position_only=True))
    starts = _start_poses()
    rows: list[list[object]] = []
    worst: dict[str, float] = {}

    def add(name: str, d: FloatArray) -> None:
        mm = d * 1e3
        rows.append(
            [
                name,
                f"{np.median(mm):.3g}",
                f"{np.percentile(mm, 95):.3g}",
                f"{np.max(mm):.3g}",
                f"{100 * np.mean(mm > 1.0):.1f}",
            ]
        )
        worst[name] = float(np.max(mm))

    goals = [PositionGoal(f[:3, 3]) for f in frames]
    res = []
    for near in (starts[0][1], starts[1][1]):  # the analytic solver has no start pose
        res.append([limber_pose(two, solve_limb(two, g)) for g in goals])
        del near
    add("Limber analytic", _elbow_diff(res[0], res[1]))
    for solver in ("LEGACY", "ITASC"):
        rig = build_rig(bpy, arm, solver=solver)
        mats = rig.matrices(frames)
        poses = []
        for sh, el in starts:
            out = []
            for m in mats:
                rig.set_start(sh, el)
                rig.solve(m)
                out.append(rig.read())
            poses.append(out)
        rig.remove()
        add(f"Blender {solver}", _elbow_diff(poses[0], poses[1]))
    ik = build_ikpy(two, wrist_only=True)
    if ik is not None:
        n = sizes.ikpy_goals
        poses = [[ik.read(ik.solve(f, ik.start(sh, el))) for f in frames[:n]] for sh, el in starts]
        add("ikpy", _elbow_diff(poses[0], poses[1]))
    return rows, worst


def _circle_frames(steps: int, laps: int) -> FloatArray:
    """A wrist goal walked ``laps`` times around a 10 cm circle in front of the shoulder."""
    centre = np.array([-0.15, 0.30, 0.25])
    t = np.arange(steps) / steps * 2 * math.pi
    lap = centre + 0.10 * np.stack([np.cos(t), np.zeros_like(t), np.sin(t)], axis=1)
    p = np.tile(lap, (laps, 1))  # every lap visits exactly the same goals
    out = np.tile(np.eye(4), (len(p), 1, 1))
    out[:, :3, 3] = p
    return out


def _drift(poses: Sequence[Pose], steps: int) -> tuple[float, float]:
    """Max over the circle's goals of the joint change between laps 1 and 3: the shoulder
    rotation angle (deg) and the elbow angle (deg)."""
    first, last = poses[:steps], poses[2 * steps :]
    sh = [
        float(rotation_angle_between(a.shoulder, b.shoulder))
        for a, b in zip(first, last, strict=True)
    ]
    el = [abs(a.elbow - b.elbow) for a, b in zip(first, last, strict=True)]
    return math.degrees(max(sh)), math.degrees(max(el))


def _drift_table(bpy: Any, sizes: Sizes) -> tuple[list[list[object]], dict[str, float]]:
    arm = human_arm(limits=False)
    two = wrist_limb(arm)
    steps = sizes.circle_steps
    frames = _circle_frames(steps, 3)
    rows: list[list[object]] = []
    worst: dict[str, float] = {}

    def add(name: str, how: str, poses: Sequence[Pose]) -> None:
        sh, el = _drift(poses, steps)
        pe, _ = errors(poses, frames, False, True)
        rows.append([name, how, f"{sh:.3g}", f"{el:.3g}", f"{np.max(pe) * 1e3:.3g}"])
        worst[name] = max(sh, el)

    add(
        "Limber analytic",
        "each step solved alone",
        [limber_pose(two, solve_limb(two, PositionGoal(f[:3, 3]))) for f in frames],
    )
    for solver in ("LEGACY", "ITASC"):
        rig = build_rig(bpy, arm, solver=solver)
        rig.set_start(*_start_poses()[0])
        poses = []
        for m in rig.matrices(frames):
            rig.solve(m)
            poses.append(rig.read())
        rig.remove()
        add(f"Blender {solver}", "target moved, FK pose untouched", poses)
    ik = build_ikpy(two, wrist_only=True)
    if ik is not None:
        q = ik.start(*_start_poses()[0])
        poses = []
        for f in frames:
            q = ik.solve(f, q)
            poses.append(ik.read(q))
        add("ikpy", "warm start from the previous step", poses)
    return rows, worst


def _max_reach(limb: Limb) -> float:
    th = np.linspace(-math.pi, math.pi, 20001)
    return float(np.max(np.linalg.norm(limb.wrist_position(np.eye(3), th), axis=-1)))


def _past_reach_table(bpy: Any, sizes: Sizes) -> list[list[object]]:
    """Wrist goals at 1.05–1.5 × the reach in random directions, limits off."""
    arm = human_arm(limits=False)
    two = wrist_limb(arm)
    reach = _max_reach(two)
    rng = np.random.default_rng(SEED + 3)
    d = rng.normal(size=(sizes.goals, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    p = d * reach * rng.uniform(1.05, 1.5, size=(sizes.goals, 1))
    frames = np.tile(np.eye(4), (sizes.goals, 1, 1))
    frames[:, :3, 3] = p
    best = np.linalg.norm(p, axis=1) - reach
    rows: list[list[object]] = []

    def add(name: str, poses: Sequence[Pose], us: float, flag: str) -> None:
        w = np.array([q.wrist_pos for q in poses])
        excess = (np.linalg.norm(w - p, axis=1) - best) * 1e3
        aim = np.degrees(
            np.arccos(np.clip(np.sum(w * d, axis=1) / np.linalg.norm(w, axis=1), -1, 1))
        )
        rows.append(
            [
                name,
                f"{us:,.1f}",
                f"{np.median(excess):.3g} / {np.max(excess):.3g}",
                f"{np.median(aim):.3g} / {np.max(aim):.3g}",
                flag,
            ]
        )

    single, _ = run_limber(two, frames, False, 1, True)
    sols = solve_limb(two, PositionGoal(p))
    flag = f"reachable=False on {100 * np.mean(~np.asarray(sols.reachable)):.0f} %"
    add("Limber analytic", single.poses, single.us, flag)
    for solver in ("LEGACY", "ITASC"):
        rig = build_rig(bpy, arm, solver=solver)
        rig.set_start(*_start_poses()[0])
        r = run_blender(rig, frames, False, 1, True, solver)
        rig.remove()
        add(f"Blender {solver}", r.poses, r.us, "no flag")
    ik = build_ikpy(two, wrist_only=True)
    if ik is not None:
        n = sizes.ikpy_goals
        r = run_ikpy(ik, frames[:n], False, 1, True)
        p_keep, best_keep, d_keep = p, best, d
        p, best, d = p[:n], best[:n], d[:n]
        add("ikpy", r.poses, r.us, "no flag")
        p, best, d = p_keep, best_keep, d_keep
    return rows


SWING_TWIST_GOALS = "shoulder x only, goals feasible in swing–twist terms"


def swing_twist_goals(limb: Limb, n: int, seed: int) -> FloatArray:
    """(N, 4, 4) wrist goals from shoulder rotations drawn within the limb's shoulder limits
    *read in swing–twist terms* (:func:`swing_twist_angles`; x only), elbow within its
    limits: goals Blender's own limit convention can reach."""
    from core import quat_to_matrix

    lim = limb.limits
    assert lim is not None and lim.shoulder is not None and lim.elbow is not None
    lo, hi = lim.shoulder.bounds()
    rng = np.random.default_rng(seed)
    qx = np.sin(0.5 * rng.uniform(lo[0], hi[0], size=4 * n))
    qz = np.sin(0.5 * rng.uniform(-math.pi, math.pi, size=4 * n))
    keep = qx * qx + qz * qz < 1.0
    qx, qz = qx[keep][:n], qz[keep][:n]
    w = np.sqrt(1.0 - qx * qx - qz * qz)
    swing = quat_to_matrix(np.stack([w, qx, np.zeros_like(w), qz], axis=1))
    twist = rot_axis(np.array([0.0, 1.0, 0.0]), rng.uniform(-math.pi, math.pi, size=len(w)))
    theta = rng.uniform(lim.elbow[0], lim.elbow[1], size=len(w))
    out = np.tile(np.eye(4), (len(w), 1, 1))
    out[:, :3, 3] = limb.wrist_position(swing @ twist, theta)
    return out


def _limits_table(
    bpy: Any, sizes: Sizes, say: Callable[[str], None]
) -> tuple[list[list[object]], dict[str, tuple[float, float]], dict[str, FloatArray]]:
    """Feasible goals (FK of angles within the limits), full limits and shoulder-x only."""
    rows: list[list[object]] = []
    worst: dict[str, tuple[float, float]] = {}
    viol: dict[str, FloatArray] = {}
    configs = (
        ("full arm limits", arm_limits(), False),
        ("shoulder x only", swing_limits(), False),
        (SWING_TWIST_GOALS, swing_limits(), True),
    )
    for label, limits, st in configs:
        arm = human_arm(limits=False)
        arm_l = Limb(
            a=arm.a, b=arm.b, elbow_axis=arm.elbow_axis, effector=arm.effector, limits=limits
        )
        two = wrist_limb(arm_l)
        if st:
            frames = swing_twist_goals(two, sizes.limit_goals, SEED + 5)
        else:
            frames = goal_frames(
                random_reachable_goals(two, sizes.limit_goals, SEED + 4, position_only=True)
            )
        runs: list[Run] = []
        single, _ = run_limber(two, frames, False, 1, True)
        runs.append(single)
        for solver in ("LEGACY", "ITASC", ITASC_TUNED):
            say(f"incumbents: limits ({label}): Blender {solver}")
            rig = build_rig(bpy, arm_l, solver=solver)
            rig.set_start(*_start_poses()[0])
            runs.append(run_blender(rig, frames, False, 1, True, solver_label(solver)))
            rig.remove()
        ik = build_ikpy(two, wrist_only=True)
        if ik is not None:
            runs.append(run_ikpy(ik, frames[: sizes.ikpy_goals], False, 1, True))
        for r in runs:
            v = violations(limits, r.poses, True)
            bad = v > VIOLATION_TOL_DEG
            shoulders = np.array([p.shoulder for p in r.poses])
            sh_e = np.degrees(euler_violation(shoulders, limits.shoulder))
            sh_st = np.degrees(swing_twist_violation(shoulders, limits.shoulder))
            el = np.zeros(1)
            if limits.elbow is not None:
                th = np.array([p.elbow for p in r.poses])
                el = np.degrees(_interval_violation(th, *limits.elbow))
            rows.append(
                [
                    label,
                    r.method,
                    fmt_us(r.ik_only_us or r.pass_us),
                    f"{r.failures():.1f}",
                    f"{100 * np.mean(bad):.1f}",
                    f"{np.percentile(v, 95):.3g}",
                    f"{np.max(sh_e):.3g}",
                    f"{np.max(sh_st):.3g} ({100 * np.mean(sh_st > VIOLATION_TOL_DEG):.0f} %)",
                    f"{np.max(el):.3g}",
                ]
            )
            worst[f"{label}|{r.method}"] = (float(np.mean(bad)), float(np.max(v)))
            viol[f"{label}|{r.method}"] = v
    return rows, worst, viol


def _chart(keep: dict[str, Run], viol: dict[str, FloatArray], out_dir: Path) -> Path:
    """Times (with the min–max over passes), error CDFs and limit violations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    names = [k for k in keep if k.startswith("position")]
    labels = [k.split("|")[1] for k in names]
    series = [keep[k].ik_only_us or keep[k].pass_us for k in names]
    times = np.array([statistics.median(v) for v in series])
    spread = np.array([[t - min(v), max(v) - t] for t, v in zip(times, series, strict=True)]).T
    axes[0].barh(labels, times, xerr=spread, color="tab:blue", capsize=3)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("µs per solve (Blender: IK-only), log scale")
    axes[0].set_title("2-bone arm, position goals")
    axes[0].invert_yaxis()
    for k in names:
        e = np.sort(np.maximum(keep[k].pos_err * 1e3, 1e-16))
        axes[1].plot(e, np.linspace(0, 100, len(e)), label=k.split("|")[1])
    axes[1].set_xscale("log")
    axes[1].set_xlabel("wrist position error (mm), log scale")
    axes[1].set_ylabel("% of goals ≤ error")
    axes[1].axvline(1.0, color="grey", ls=":")
    axes[1].legend(fontsize=7)
    configs = list(dict.fromkeys(k.split("|")[0] for k in viol))
    methods = list(dict.fromkeys(k.split("|")[1] for k in viol))
    width = 0.8 / max(1, len(configs))
    for c, cfg in enumerate(configs):
        pct = [100 * float(np.mean(viol[f"{cfg}|{m}"] > VIOLATION_TOL_DEG)) for m in methods]
        xs = np.arange(len(methods)) + c * width
        axes[2].bar(xs, pct, width, label=cfg)
        for x, m, h in zip(xs, methods, pct, strict=True):
            axes[2].text(
                x, h, f"{np.max(viol[f'{cfg}|{m}']):.2g}°", ha="center", va="bottom", fontsize=7
            )
    axes[2].set_xticks(np.arange(len(methods)) + 0.4 - width / 2, methods, fontsize=7)
    axes[2].set_ylabel(f"% of feasible goals violating a limit (> {VIOLATION_TOL_DEG}°)")
    axes[2].set_title("limits (labels: largest violation)")
    axes[2].legend(fontsize=7)
    return save_figure(fig, out_dir / "incumbents.png")


def save_figure(fig: Any, path: Path) -> Path:
    """Lay out, write (PNG, 110 dpi) and close a matplotlib figure."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run(quick: bool, out_dir: Path, log: Callable[[str], None] | None = None) -> Suite:
    """Measure suite 2 and return its section (module docstring)."""
    say = log or (lambda _m: None)
    sizes = QUICK if quick else FULL
    out_dir.mkdir(parents=True, exist_ok=True)
    bpy = load_bpy()
    main_rows, keep, _ = _main_table(bpy, sizes, say)
    say("incumbents: straight rest pose")
    straight_rows = _straight_table(bpy, sizes)
    say("incumbents: start poses")
    sp_rows, sp_worst = _start_pose_table(bpy, sizes)
    say("incumbents: cyclic drift")
    drift_rows, drift_worst = _drift_table(bpy, sizes)
    say("incumbents: past reach")
    reach_rows = _past_reach_table(bpy, sizes)
    lim_rows, lim_worst, lim_viol = _limits_table(bpy, sizes, say)
    chart = _chart(keep, lim_viol, out_dir)

    pos = "position (wrist, 2-bone)"
    single = keep[f"{pos}|{METHODS[0]}"]
    batched = keep[f"{pos}|{METHODS[1]}"]
    legacy = keep[f"{pos}|Blender LEGACY"]
    leg_ik = statistics.median(legacy.ik_only_us or legacy.pass_us)
    analytic_ok = all(keep[k].failures() == 0.0 for k in keep if k.endswith(METHODS[0]))
    max_pos = max(float(np.max(keep[k].pos_err)) for k in keep if k.endswith(METHODS[0]))
    max_rot = max(
        float(np.max(keep[k].rot_err))  # type: ignore[arg-type]
        for k in keep
        if k.endswith(METHODS[0]) and keep[k].rot_err is not None
    )
    lim_ok = [
        k for k in lim_worst if k.endswith(METHODS[0]) and not k.startswith(SWING_TWIST_GOALS)
    ]
    targets = (
        Target(
            "analytic: 0 failures on reachable goals, errors ≤ 1e-10 m / rad",
            analytic_ok and max_pos <= 1e-10 and max_rot <= 1e-10,
            f"failures 0 = {analytic_ok}; max position {max_pos:.1e} m, "
            f"max orientation {max_rot:.1e} rad",
        ),
        Target(
            "analytic ≥ 3× faster per solve than Blender LEGACY IK-only (2-bone arm)",
            leg_ik / single.us >= 3.0,
            f"{leg_ik / single.us:.1f}× ({single.us:.1f} µs vs {leg_ik:.1f} µs)",
        ),
        Target(
            "analytic batched ≥ 100× faster per solve than Blender LEGACY IK-only",
            leg_ik / batched.us >= 100.0,
            f"{leg_ik / batched.us:,.0f}× ({batched.us:.2f} µs vs {leg_ik:.1f} µs)",
        ),
        Target(
            "analytic: start-pose independent",
            sp_worst["Limber analytic"] == 0.0,
            f"max elbow difference {sp_worst['Limber analytic']:.3g} mm "
            f"(Blender LEGACY {sp_worst['Blender LEGACY']:.3g} mm, "
            f"ITASC {sp_worst['Blender ITASC']:.3g} mm)",
        ),
        Target(
            "analytic: zero cyclic drift",
            drift_worst["Limber analytic"] == 0.0,
            f"max joint change after 3 laps {drift_worst['Limber analytic']:.3g}°",
        ),
        Target(
            "analytic: never a violated limit when a feasible solution exists",
            all(lim_worst[k][1] <= VIOLATION_TOL_DEG for k in lim_ok),
            "; ".join(f"{k.split('|')[0]}: max {lim_worst[k][1]:.2g}°" for k in lim_ok),
        ),
    )
    md = [
        "## Incumbents: Blender's IK constraint and ikpy on the same arm and goals",
        "",
        f"Human-proportioned 7-DOF arm of `tests/fixtures/sample_arm.py`, seeded goals "
        f"(seed {SEED}); "
        f"{sizes.goals} goals per row (ikpy: {sizes.ikpy_goals}), {sizes.passes} passes. "
        "Times are µs per solve: median over passes of the per-goal median, (min–max over "
        "passes). Blender: time = move the target Empty + `view_layer.update()`; IK-only = "
        "that minus the same with the IK constraint muted. Ratios = incumbent time / Limber "
        "time (Blender's IK-only). Errors: median / p95 / max. Failure: > 1 mm or > 1°. "
        "How the arm is built as bones, and what each column means: "
        "`benchmarks/incumbents.py` docstring. Shared 2-core machine: absolute times are "
        "noisy, ratios less so.",
        "",
        TABLES[0],
        "",
        md_table(
            [
                "goals",
                "method",
                "µs/solve",
                "IK-only µs",
                "÷ analytic",
                "÷ batched",
                "position error",
                "orientation error",
                "fail %",
            ],
            main_rows,
        ),
        "",
        TABLES[1],
        "",
        "Position goals (wrist), limits off; each Blender rig starts from its rest pose.",
        "",
        md_table(["method", "rest elbow bend", "position error", "fail %"], straight_rows),
        "",
        TABLES[2],
        "",
        "The same wrist goals solved from two start poses (rest; shoulder (60, −40, 50)°, "
        "elbow 100°): distance between the two elbow positions (mm).",
        "",
        md_table(["method", "median", "p95", "max", "% > 1 mm"], sp_rows),
        "",
        TABLES[3],
        "",
        f"A wrist goal walked 3 times around a 10 cm circle ({sizes.circle_steps} steps per "
        "lap): largest joint change between lap 1 and lap 3 at the same goal.",
        "",
        md_table(
            ["method", "how", "shoulder Δ (°)", "elbow Δ (°)", "max position error (mm)"],
            drift_rows,
        ),
        "",
        TABLES[4],
        "",
        "Wrist goals at 1.05–1.5× the arm's reach: excess distance beyond the unavoidable "
        "(|goal| − reach) and the angle between the arm's wrist and the goal direction, "
        "median / max.",
        "",
        md_table(["method", "µs/solve", "excess (mm)", "aim error (°)", "says so"], reach_rows),
        "",
        TABLES[5],
        "",
        f"Goals = FK of angles drawn within the limits, so a limit-satisfying solution exists "
        f"({sizes.limit_goals} goals; ikpy {sizes.ikpy_goals}). Violation = largest excess of "
        "a joint angle beyond its limit (°), in the arm's own parametrisation (shoulder Euler "
        "'XYZ', elbow hinge); counted when > "
        f"{VIOLATION_TOL_DEG}°. Blender gets the same numbers as IK limits, which it applies "
        "in swing–twist terms; the swing–twist column reads every result that way (our "
        "reading of Blender's convention: `swing_twist_angles`), so a Blender violation in "
        "its own terms shows there, a convention gap only in the Euler column. The elbow "
        "hinge has no such ambiguity. The last block draws the goals within the same numbers "
        "read in swing–twist terms (feasible for Blender's convention, not necessarily for "
        "Euler limits — so there a Limber or ikpy 'violation' in the swing–twist column is "
        "expected, and their failures may be infeasible goals).",
        "",
        md_table(
            [
                "limits",
                "method",
                "µs/solve (Blender: IK-only)",
                "fail %",
                "violating %",
                "p95 violation (°)",
                "max shoulder violation, Euler (°)",
                "max shoulder violation, swing–twist (°) (% violating)",
                "max elbow violation (°)",
            ],
            lim_rows,
        ),
        "",
        "### Targets",
        "",
        targets_table(targets),
        "",
    ]
    headline = md_table(
        [
            "2-bone arm, position goals",
            "µs/solve (Blender: IK-only)",
            "time ÷ Limber analytic",
            "time ÷ Limber batched",
        ],
        [[r[1], r[3] if r[3] != "—" else r[2], r[4], r[5]] for r in main_rows if r[0] == pos],
    )
    return Suite(
        key="incumbents",
        title="Incumbents, same arm, same goals",
        markdown="\n".join(md),
        charts=(chart,),
        targets=targets,
        seeds=tuple(SEED + i for i in range(6)),
        headline=headline,
    )


def standalone(run_suite: Callable[..., Suite], doc: str, argv: Sequence[str] | None) -> int:
    """``python -m benchmarks.<suite> [--quick] [--out DIR]``: run and print the section."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small N (smoke test)")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "limber-bench")
    args = ap.parse_args(argv)
    suite = run_suite(args.quick, args.out, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(suite.markdown)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return standalone(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
