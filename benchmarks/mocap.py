"""Suite 4 (issue 7): motion-capture tracking on the bundled CMU clip.

Run from the repository root::

    .venv/bin/python -m benchmarks.mocap [--quick] [--out DIR]

``tools/data/mocap/cmu_131_01.bvh`` (CMU subject 131 trial 01, walk; metres, 120 fps) is
read with the small numpy BVH reader :mod:`benchmarks._bvh` (standard BVH conventions,
see its docstring; chosen over Blender's ``io_anim_bvh`` so that the clip's own joint
angles are available exactly, without Blender's axis conversion and bone-roll choices;
``tests/blender/test_evidence_incumbents.py`` checks that both put the joints at the same
world positions).

**The four limbs** are built from the clip's skeleton: arms = ``*Shoulder`` (upper arm),
``*Elbow`` (forearm), ``*Wrist`` + ``*hand`` (one spherical wrist: the hand joint sits at
the wrist, offset 0), effector at the fingers' joint; legs = ``*Hip`` (thigh), ``*Knee``
(shin), ``*Ankle`` (foot), effector at the toe joint. The limb's shoulder (hip) frame is
the clip's frame at that joint before its own rotation (parent global · offset), which
moves with the body every frame; goals are expressed in it. The clip's elbows and knees
are 3-DOF joints; Limber's limb needs a hinge, so its axis k is estimated from the clip
(the angle-weighted mean rotation axis of the elbow/knee over all frames) and the clip's
hinge angle is the twist of its elbow rotation about k (swing–twist); the rest (how far
the clip's elbow is from a hinge) is reported. The frames are re-expressed (constant
rotations) so that the upper arm runs along the bone's +Y and the hinge is its X — the
chain, its goals and its world poses are unchanged. Elbow/knee hinge limits [0°, 160°] on
the side the clip bends (a user's setting for an elbow) pick the bending side; shoulder
and wrist are unlimited.

**Per frame goals** = the clip's effector frame (pose goal: fingers / toe position with
the hand / foot orientation) and its elbow / knee position. Methods:

* Limber analytic: ``solve_limb(limb, PoseGoal, elbow_target=elbow)`` — the elbow
  position becomes the swivel angle φ nearest to it (Tolani §3.2.2); single calls and one
  batched call over all frames;
* Limber DLS: ``core.solve`` (Method.DLS, default settings) on a Skeleton of the same limb
  (Ball, Hinge, Ball, Fixed) with the pose goal and the elbow position goal, warm-started
  from the previous frame (tracking);
* Blender's IK constraint (LEGACY; ITASC with Blender's defaults and tuned: precision
  0.1 mm, reiteration ALWAYS) on an armature built from the clip's rest
  skeleton exactly as in suite 2 (:func:`benchmarks.incumbents.build_rig`: IK on the
  forearm to the wrist + Copy Rotation on the hand, elbow bent 30° at rest), with a pole
  target Empty at the clip's elbow; the pole angle is calibrated once per limb and solver
  on the first frames from {−90°, 0°, 90°, 180°} (what a user does by eye). Time per frame
  = move target + pole + ``view_layer.update()``; IK-only = that minus the same muted.

Measured: µs per frame; end-effector error (position, orientation); elbow/knee position
error; joint-angle error against the clip's own angles (shoulder and wrist: rotation
angle between the clip's and the solver's joint rotations; elbow: |Δθ|); smoothness:
mean |second difference| per frame of the elbow angle and of the shoulder rotation
(|ω_{f+1} − ω_f|, ω the rotation vector of R1_{f+1} R1_fᵀ), in °/frame², beside the
clip's own.
"""

from __future__ import annotations

import os

# Standalone runs use the runner's BLAS setting (benchmarks/__main__.py): the solvers work
# on tiny matrices, and BLAS worker threads only add noise on a shared machine.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from benchmarks import _bvh  # noqa: E402
from benchmarks._report import Suite, Target, md_table, targets_table  # noqa: E402
from benchmarks.incumbents import (  # noqa: E402
    ITASC_TUNED,
    BlenderRig,
    Pose,
    build_rig,
    fmt_err,
    fmt_us,
    limber_pose,
    load_bpy,
    pose_of,
    ratio,
    rot_axis,
    run_blender,
    save_figure,
    solver_label,
    standalone,
    time_batched,
    transform,
)
from core import (  # noqa: E402  # noqa: E402
    Ball,
    Fixed,
    Hinge,
    Joint,
    Limb,
    LimbLimits,
    Method,
    PoseGoal,
    PositionGoal,
    Skeleton,
    euler_to_matrix,
    matrix_to_axis_angle,
    matrix_to_quat,
    rotation_angle_between,
    solve,
    solve_limb,
    unit_rows,
    wrap_angle,
)

FloatArray = NDArray[np.float64]

CLIP = Path(__file__).resolve().parents[1] / "tools" / "data" / "mocap" / "cmu_131_01.bvh"
#: Frames of the quick run (mid-walk, consecutive so smoothness means something).
QUICK_FRAMES = slice(400, 430)
#: (upper joint, elbow joint, wrist joints, effector joint) per limb.
LIMBS: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "left arm": ("LeftShoulder", "LeftElbow", ("LeftWrist", "lhand"), "LFingers"),
    "right arm": ("RightShoulder", "RightElbow", ("RightWrist", "rhand"), "RFingers"),
    "left leg": ("LeftHip", "LeftKnee", ("LeftAnkle",), "LeftToe"),
    "right leg": ("RightHip", "RightKnee", ("RightAnkle",), "RightToe"),
}
METHODS = (
    "Limber analytic",
    "Limber analytic, batched",
    "Limber DLS",
    "Blender LEGACY",
    "Blender ITASC",
)
#: The analytic variant without limits: ``elbow_near`` picks the bending side.
NEAR = "Limber analytic, elbow_near"
TABLES = ("### Time per frame", "### Accuracy against the clip", "### Smoothness")
HINGE_RANGE = math.radians(160.0)
POLE_ANGLES = (-90.0, 0.0, 90.0, 180.0)


def _frame_yx(y: FloatArray, x: FloatArray) -> FloatArray:
    """Rotation whose columns are (x', y, x' × y) with x' = x made orthogonal to y."""
    y = unit_rows(y)
    x = unit_rows(x - np.dot(x, y) * y)
    return np.stack([x, y, np.cross(x, y)], axis=1)


def _frame_xy(x: FloatArray, y: FloatArray) -> FloatArray:
    """Rotation whose X column is x and Y column is y made orthogonal to x."""
    x = unit_rows(x)
    y = unit_rows(y - np.dot(y, x) * x)
    return np.stack([x, y, np.cross(x, y)], axis=1)


@dataclass(frozen=True, eq=False)
class ClipLimb:
    """One limb of the clip as a Limber limb, with per-frame goals and the clip's angles
    (all in the limb's re-expressed shoulder frame; see the module docstring)."""

    name: str
    limb: Limb
    goals: FloatArray  # (F, 4, 4) effector frames
    elbow: FloatArray  # (F, 3) elbow / knee positions
    shoulder: FloatArray  # (F, 3, 3) clip R1
    theta: FloatArray  # (F,) clip hinge angle (twist about k)
    wrist: FloatArray  # (F, 3, 3) clip R2
    off_hinge_deg: FloatArray  # (F,) angle between the clip's elbow rotation and the hinge


def clip_limb(clip: _bvh.Bvh, name: str, frames: slice) -> ClipLimb:
    """Build ``name`` (a key of :data:`LIMBS`) from the clip (module docstring)."""
    up_n, el_n, wr_ns, eff_n = LIMBS[name]
    g = clip.global_transforms()[frames]
    j_up, j_el, j_eff = clip.index(up_n), clip.index(el_n), clip.index(eff_n)
    j_wr = [clip.index(n) for n in wr_ns]
    for j in j_wr[1:]:
        if np.linalg.norm(clip.offsets[j]) > 1e-12:
            raise ValueError(f"{clip.names[j]} must sit at the wrist (offset 0)")
    t_a = clip.offsets[j_el]
    t_b = clip.offsets[j_wr[0]]
    t_e = clip.offsets[j_eff]
    r1 = clip.local_rotation(j_up)[frames]
    re = clip.local_rotation(j_el)
    r2 = np.tile(np.eye(3), (clip.n_frames, 1, 1))
    for j in j_wr:
        r2 = r2 @ clip.local_rotation(j)
    r2 = r2[frames]
    # Hinge axis: angle-weighted mean rotation axis of the elbow over the whole clip.
    axis, angle = matrix_to_axis_angle(re)
    ref = axis[int(np.argmax(angle))]
    sign = np.where(axis @ ref < 0, -1.0, 1.0)
    k = unit_rows(np.sum(axis * (angle * sign)[:, None], axis=0))
    re = re[frames]
    q = matrix_to_quat(re)
    theta = 2.0 * np.arctan2(q[:, 1:] @ k, q[:, 0])
    theta = wrap_angle(theta)
    off = np.degrees(rotation_angle_between(re, rot_axis(k, theta)))
    # Re-expressed frames: Q (upper arm along +Y), P (hinge = X), W (effector along +Y).
    qm = _frame_yx(t_a, k)
    pm = _frame_xy(k, t_a)
    wm = _frame_yx(
        t_e,
        np.cross(t_e, [0.0, 0.0, 1.0])
        if abs(t_e[2]) < 0.9 * np.linalg.norm(t_e)
        else np.array([1.0, 0.0, 0.0]),
    )
    bend = float(np.median(theta))
    elbow_lim = (0.0, HINGE_RANGE) if bend >= 0 else (-HINGE_RANGE, 0.0)
    limb = Limb(
        a=transform(qm.T @ pm, qm.T @ t_a),
        b=transform(pm.T @ wm, pm.T @ t_b),
        elbow_axis=(1.0, 0.0, 0.0),
        effector=transform(wm.T, wm.T @ t_e),
        limits=LimbLimits(elbow=elbow_lim),
    )
    parent = clip.parents[j_up]
    s = g[:, parent] @ transform(np.eye(3), clip.offsets[j_up]) @ transform(qm, np.zeros(3))
    s_inv = np.linalg.inv(s)
    eff = g[:, j_wr[-1]] @ transform(np.eye(3), t_e)
    goals = s_inv @ eff
    elbow = (s_inv @ g[:, j_el])[:, :3, 3]
    return ClipLimb(
        name=name,
        limb=limb,
        goals=goals,
        elbow=elbow,
        shoulder=qm.T @ r1 @ qm,
        theta=theta,
        wrist=wm.T @ r2 @ wm,
        off_hinge_deg=off,
    )


# --------------------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------------------


@dataclass
class Track:
    """One method on one limb: per-frame poses and per-pass µs per frame."""

    method: str
    poses: list[Pose]
    pass_us: list[float]
    ik_only_us: list[float] | None = None

    @property
    def us(self) -> float:
        return statistics.median(self.ik_only_us or self.pass_us)


def track_analytic(cl: ClipLimb, passes: int, near: bool = False) -> tuple[Track, Track]:
    """Single calls (each timed) and one batched call per pass. ``near``: no limits; the
    bending side comes from ``elbow_near`` = the middle of the hinge limits instead."""
    limb = cl.limb
    kw: dict[str, Any] = {}
    names = METHODS[:2]
    if near:
        lim = limb.limits
        assert lim is not None and lim.elbow is not None
        kw["elbow_near"] = 0.5 * (lim.elbow[0] + lim.elbow[1])
        limb = Limb(a=limb.a, b=limb.b, elbow_axis=limb.elbow_axis, effector=limb.effector)
        names = (NEAR, NEAR + ", batched")
    goals = [PoseGoal(f[:3, 3], f[:3, :3]) for f in cl.goals]
    batch = PoseGoal(cl.goals[:, :3, 3], cl.goals[:, :3, :3])
    clock = time.perf_counter_ns
    single: list[float] = []
    batched: list[float] = []
    sols: list[Any] = []
    for g, e in zip(goals[:5], cl.elbow[:5], strict=True):
        solve_limb(limb, g, elbow_target=e, **kw)
    for _ in range(passes):
        t = np.empty(len(goals))
        sols = []
        for i, g in enumerate(goals):
            t0 = clock()
            sols.append(solve_limb(limb, g, elbow_target=cl.elbow[i], **kw))
            t[i] = clock() - t0
        single.append(float(np.median(t)) / 1e3)
        bt, bsol = time_batched(lambda: solve_limb(limb, batch, elbow_target=cl.elbow, **kw))
        batched.append(bt / len(goals))
    return (
        Track(names[0], [limber_pose(limb, s) for s in sols], single),
        Track(names[1], [limber_pose(limb, bsol[i]) for i in range(len(goals))], batched),
    )


def limb_skeleton(limb: Limb) -> Skeleton:
    """The limb as a Skeleton: Ball('XYZ') shoulder at the origin, Hinge elbow about the
    limb's axis (with its limits), Ball wrist, Fixed effector."""
    lim = limb.limits
    lo, hi = lim.elbow if lim is not None and lim.elbow is not None else (None, None)
    return Skeleton(
        [
            Joint("shoulder", -1, np.eye(4), Ball("XYZ")),
            Joint("elbow", 0, np.asarray(limb.a), Hinge(np.asarray(limb.elbow_axis), lo, hi)),
            Joint("wrist", 1, np.asarray(limb.b), Ball("XYZ")),
            Joint("effector", 2, np.asarray(limb.effector), Fixed()),
        ]
    )


def _skeleton_pose(limb: Limb, q: FloatArray) -> Pose:
    r1 = euler_to_matrix(q[0:3], "XYZ")
    r2 = euler_to_matrix(q[4:7], "XYZ")
    return pose_of(limb, r1, float(q[3]), r2)


def track_dls(cl: ClipLimb, passes: int) -> Track:
    """DLS warm-started from the previous frame (the first from the limits' middle)."""
    sk = limb_skeleton(cl.limb)
    lim = cl.limb.limits
    assert lim is not None and lim.elbow is not None
    clock = time.perf_counter_ns
    res: list[float] = []
    poses: list[Pose] = []
    for _ in range(passes):
        q = np.zeros(7)
        q[3] = 0.5 * (lim.elbow[0] + lim.elbow[1])
        t = np.empty(len(cl.goals))
        out = []
        for i, f in enumerate(cl.goals):
            goals = [
                PoseGoal(f[:3, 3], f[:3, :3], joint="effector"),
                PositionGoal(cl.elbow[i], joint="elbow"),
            ]
            t0 = clock()
            r = solve(sk, goals, q, Method.DLS)
            t[i] = clock() - t0
            q = np.asarray(r.q)
            out.append(_skeleton_pose(cl.limb, q))
        res.append(float(np.median(t)) / 1e3)
        poses = out
    return Track(METHODS[2], poses, res)


def _pole_error(rig: BlenderRig, cl: ClipLimb, n: int) -> float:
    from mathutils import Vector

    mats = rig.matrices(cl.goals[:n])
    err = 0.0
    for m, e in zip(mats, cl.elbow[:n], strict=True):
        rig.solve(m, Vector(e.tolist()))
        err += float(np.linalg.norm(rig.read().elbow_pos - e))
    return err


def track_blender(bpy: Any, cl: ClipLimb, solver: str, passes: int) -> tuple[Track, float]:
    """Blender's IK constraint with a pole Empty at the clip's elbow (module docstring)."""
    rig = build_rig(
        bpy, cl.limb, solver=solver, mode="pose", name=f"mocap_{solver}", pole=cl.elbow[0]
    )
    best = min(POLE_ANGLES, key=lambda a: _calibrate(rig, cl, a))
    rig.ik.pole_angle = math.radians(best)
    label = solver_label(solver)
    run = run_blender(rig, cl.goals, True, passes, False, label, poles=cl.elbow)
    rig.remove()
    return Track(label, run.poses, run.pass_us, run.ik_only_us), best


def _calibrate(rig: BlenderRig, cl: ClipLimb, angle: float) -> float:
    rig.ik.pole_angle = math.radians(angle)
    return _pole_error(rig, cl, min(10, len(cl.goals)))


# --------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------


def _second_diff_rot(rots: FloatArray) -> float:
    """Mean |ω_{f+1} − ω_f| (°/frame²), ω the rotation vector of R_{f+1} R_fᵀ."""
    if len(rots) < 3:
        return float("nan")
    rel = rots[1:] @ np.swapaxes(rots[:-1], -1, -2)
    axis, angle = matrix_to_axis_angle(rel)
    w = axis * angle[:, None]
    return float(np.degrees(np.mean(np.linalg.norm(np.diff(w, axis=0), axis=1))))


def _second_diff(a: FloatArray) -> float:
    if len(a) < 3:
        return float("nan")
    return float(np.degrees(np.mean(np.abs(np.diff(a, 2)))))


@dataclass(frozen=True)
class Accuracy:
    eff_pos: FloatArray
    eff_rot: FloatArray
    elbow: FloatArray
    shoulder: FloatArray
    theta: FloatArray
    wrist: FloatArray


def accuracy(cl: ClipLimb, poses: Sequence[Pose]) -> Accuracy:
    eff = np.array([p.effector for p in poses])
    return Accuracy(
        eff_pos=np.linalg.norm(eff[:, :3, 3] - cl.goals[:, :3, 3], axis=1),
        eff_rot=rotation_angle_between(eff[:, :3, :3], cl.goals[:, :3, :3]),
        elbow=np.linalg.norm(np.array([p.elbow_pos for p in poses]) - cl.elbow, axis=1),
        shoulder=rotation_angle_between(np.array([p.shoulder for p in poses]), cl.shoulder),
        theta=np.abs(np.array([p.elbow for p in poses]) - cl.theta),
        wrist=rotation_angle_between(np.array([p.wrist for p in poses]), cl.wrist),
    )


def _med_max(x: FloatArray, scale: float) -> str:
    """Median / p95 / max."""
    e = x * scale
    return f"{np.median(e):.2g} / {np.percentile(e, 95):.2g} / {np.max(e):.2g}"


# --------------------------------------------------------------------------------------
# The suite
# --------------------------------------------------------------------------------------


def _chart(cl: ClipLimb, tracks: Sequence[Track], out_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    f = np.arange(len(cl.goals))
    axes[0].plot(f, np.degrees(cl.theta), "k-", lw=2.5, alpha=0.4, label="clip")
    for tr in tracks:
        if tr.method.endswith("batched"):
            continue
        th = np.degrees([p.elbow for p in tr.poses])
        axes[0].plot(f, th, lw=1, label=tr.method)
        acc = accuracy(cl, tr.poses)
        axes[1].plot(f, np.maximum(acc.elbow * 1e3, 1e-15), lw=1, label=tr.method)
    axes[0].set_xlabel("frame")
    axes[0].set_ylabel(f"{cl.name}: hinge angle (°)")
    axes[0].legend(fontsize=7)
    axes[1].set_yscale("log")
    axes[1].set_xlabel("frame")
    axes[1].set_ylabel("elbow / knee position error (mm), log")
    return save_figure(fig, out_dir / "mocap.png")


def run(quick: bool, out_dir: Path, log: Callable[[str], None] | None = None) -> Suite:
    """Measure suite 4 and return its section (module docstring)."""
    say = log or (lambda _m: None)
    out_dir.mkdir(parents=True, exist_ok=True)
    clip = _bvh.load(CLIP)
    frames = QUICK_FRAMES if quick else slice(0, clip.n_frames)
    passes = 2 if quick else 3
    bpy = load_bpy()
    time_rows: list[list[object]] = []
    acc_rows: list[list[object]] = []
    smooth_rows: list[list[object]] = []
    worst_pos = 0.0
    worst_rot = 0.0
    speed: list[tuple[float, float]] = []
    chart = None
    straight: dict[str, int] = {}
    for name in LIMBS:
        cl = clip_limb(clip, name, frames)
        straight[name] = int(np.sum(np.abs(cl.theta) < math.radians(1.0)))
        say(f"mocap: {name}: analytic, DLS")
        single, batched = track_analytic(cl, passes)
        tracks = [single, batched, *track_analytic(cl, passes, near=True), track_dls(cl, 1)]
        poles: dict[str, float] = {}
        for solver in ("LEGACY", "ITASC", ITASC_TUNED):
            say(f"mocap: {name}: Blender {solver}")
            tr, angle = track_blender(bpy, cl, solver, passes)
            tracks.append(tr)
            poles[tr.method] = angle
        legacy = next(t for t in tracks if t.method == "Blender LEGACY")
        near = next(t for t in tracks if t.method == NEAR)
        near_batched = next(t for t in tracks if t.method == NEAR + ", batched")
        speed.append((legacy.us / single.us, legacy.us / near.us))
        for tr in tracks:
            time_rows.append(
                [
                    name,
                    tr.method,
                    fmt_us(tr.pass_us),
                    fmt_us(tr.ik_only_us) if tr.ik_only_us else "—",
                    ratio(single.us, tr.us),
                    ratio(near.us, tr.us),
                    ratio(near_batched.us, tr.us),
                ]
            )
            if tr.method.endswith("batched"):
                continue
            acc = accuracy(cl, tr.poses)
            if tr.method == METHODS[0]:
                worst_pos = max(worst_pos, float(np.max(acc.eff_pos)))
                worst_rot = max(worst_rot, float(np.max(acc.eff_rot)))
            label = tr.method
            if tr.method.startswith("Blender"):
                label += f" (pole angle {poles[tr.method]:.0f}°)"
            acc_rows.append(
                [
                    name,
                    label,
                    fmt_err(acc.eff_pos, 1e3, "mm"),
                    fmt_err(acc.eff_rot, 180 / math.pi, "°"),
                    fmt_err(acc.elbow, 1e3, "mm"),
                    _med_max(acc.shoulder, 180 / math.pi),
                    _med_max(acc.theta, 180 / math.pi),
                    _med_max(acc.wrist, 180 / math.pi),
                ]
            )
            smooth_rows.append(
                [
                    name,
                    tr.method,
                    f"{_second_diff(np.array([p.elbow for p in tr.poses])):.3g}",
                    f"{_second_diff_rot(np.array([p.shoulder for p in tr.poses])):.3g}",
                ]
            )
        smooth_rows.append(
            [
                name,
                "the clip itself",
                f"{_second_diff(cl.theta):.3g}",
                f"{_second_diff_rot(cl.shoulder):.3g}",
            ]
        )
        acc_rows.append(
            [
                name,
                "clip's elbow off its hinge (°)",
                "",
                "",
                "",
                "",
                _med_max(np.radians(cl.off_hinge_deg), 180 / math.pi),
                "",
            ]
        )
        if chart is None:
            chart = _chart(cl, tracks, out_dir)
    assert chart is not None
    n = len(range(*frames.indices(clip.n_frames)))
    targets = (
        Target(
            "analytic: every frame's effector pose reached (errors ≤ 1e-10 m / rad)",
            worst_pos <= 1e-10 and worst_rot <= 1e-10,
            f"max position {worst_pos:.1e} m, max orientation {worst_rot:.1e} rad",
        ),
        Target(
            "analytic ≥ 3× faster per frame than Blender LEGACY IK-only",
            min(s[0] for s in speed) >= 3.0,
            "per limb, with the elbow limits: "
            + ", ".join(f"{s[0]:.1f}×" for s in speed)
            + "; with elbow_near instead: "
            + ", ".join(f"{s[1]:.1f}×" for s in speed),
        ),
    )
    md = [
        "## Motion-capture tracking (CMU 131_01, four limbs)",
        "",
        f"`tools/data/mocap/cmu_131_01.bvh`, {n} frames per limb "
        f"({'frames 400–429' if quick else 'the whole clip'}); goals per frame = the clip's "
        "hand/foot frame at the fingers/toe and its elbow/knee position. Times: µs per "
        "frame (Blender: IK-only where given); ratios = method time / Limber time; median "
        f"over {passes} passes (DLS: 1) of the per-frame median, (min–max). "
        "How limbs, hinge axes and the Blender rigs are built: `benchmarks/mocap.py` "
        "docstring. Shared 2-core machine: absolute times are noisy.",
        "",
        TABLES[0],
        "",
        md_table(
            [
                "limb",
                "method",
                "µs/frame",
                "IK-only µs",
                "÷ analytic (limits)",
                "÷ analytic (elbow_near)",
                "÷ elbow_near batched",
            ],
            time_rows,
        ),
        "",
        TABLES[1],
        "",
        "Median / p95 / max. Joint angles against the clip's own: shoulder and wrist "
        "rotation angle, elbow |Δθ| about the estimated hinge. The last row per limb: how "
        "far the clip's own elbow/knee rotation is from a hinge (°), the floor for the "
        "joint-angle errors. Straight knees (|θ| < 1°: "
        + ", ".join(f"{k} {v} frames" for k, v in straight.items())
        + ") leave the swivel undetermined by the knee position — the hip's twist about the "
        "leg is then traded against the ankle's — which is where the large maximum hip and "
        "ankle angle errors of every method come from.",
        "",
        md_table(
            [
                "limb",
                "method",
                "effector position",
                "effector orientation",
                "elbow/knee position",
                "shoulder (°)",
                "elbow θ (°)",
                "wrist (°)",
            ],
            acc_rows,
        ),
        "",
        TABLES[2],
        "",
        "Mean |second difference| per frame (°/frame²) of the elbow/knee angle and of the "
        "shoulder/hip rotation; lower is smoother. Where a solver's hip is rougher than the "
        "clip's, it is the straight-knee frames again: with the swivel undetermined, each "
        "frame's hip twist is picked afresh (the analytic solver from its swivel reference, "
        "Blender from its FK start pose), not continued from the previous frame.",
        "",
        md_table(["limb", "method", "elbow θ", "shoulder"], smooth_rows),
        "",
        "### Targets",
        "",
        targets_table(targets),
        "",
    ]
    headline = md_table(
        [
            "limb",
            "method",
            "µs/frame (Blender: IK-only)",
            "time ÷ analytic (elbow limits)",
            "time ÷ analytic (elbow_near)",
        ],
        [
            [r[0], r[1], r[3] if r[3] != "—" else r[2], r[4], r[5]]
            for r in time_rows
            if r[0] == "left arm"
        ],
    )
    return Suite(
        key="mocap",
        title="Motion-capture tracking",
        markdown="\n".join(md),
        charts=(chart,),
        targets=targets,
        seeds=(),
        headline=headline,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return standalone(run, __doc__ or "", argv)


if __name__ == "__main__":
    sys.exit(main())
