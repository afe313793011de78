"""Full body in Blender: Limber's body beside Blender's own IK constraints, same rig.

``python -m benchmarks.body_blender [--quick] [--out FILE]`` writes
``benchmarks/BODY_BLENDER_RESULTS.md`` (``--quick``: 8 frames, to
``out/benchmarks-quick/``); ``run(quick, out_dir)`` returns a
:class:`benchmarks._report.Suite`.

Set-up (one process, the same targets for both): the Rigify human meta-rig; the feet held
where they stand (Pose goals), the left hand's target keyed on a path from the hand's rest
position forward and down to 1.4 arm lengths from the shoulder (beyond the arm's reach:
the spine has to bend).

* **Limber** — ``limber.add_body`` (feet priority 0, hands 1, head 2, hips 3; the head's
  and the right hand's targets where they are). *Per frame*:
  ``addon.run.solve.solve_object`` after ``scene.frame_set`` (read, ``core.solve_body``,
  write, the limbs finished from their evaluated frames, every pin measured on the
  evaluated pose; two depsgraph updates), and the core's ``solve_body`` alone
  (``LimbStatus.solve_us``). *Bake*: ``limber.bake`` over the range, frames per second.
* **Blender's own** — a fresh meta-rig with an IK constraint on each shin (chain 2, the
  foot's target) plus Copy Rotation on each foot, and on the left forearm an IK
  constraint whose chain covers the arm, the clavicle and the whole spine down to the
  pelvis (chain 7: forearm, upper arm, shoulder, spine.003–spine), position only. *Per
  frame*: a frame change with the constraints minus one without. *Bake*: ``nla.bake``
  with visual keying of the same bones.

Both are measured where the user sees it: the feet's and the hand's evaluated world
positions against their targets (the worst frame). Ratios come from one run on a shared
machine; absolute timings are noisy.
"""

from __future__ import annotations

import importlib
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import Spread, Suite, Target, md_table, suite_main, targets_table
from benchmarks.bake import clear_scene, enable_limber, metarig
from benchmarks.incumbents import load_bpy

ROOT = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT / "BODY_BLENDER_RESULTS.md"
QUICK_OUT = ROOT.parent / "out" / "benchmarks-quick" / "BODY_BLENDER_RESULTS.md"
FULL_FRAMES = 40
QUICK_FRAMES = 8
#: The hand target's last position: this many arm lengths from the shoulder.
REACH = 1.4
DIRECTION = (0.3, -1.0, -0.8)
#: Blender's IK chain on the left forearm: forearm, upper arm, shoulder, spine.003 ... spine.
SPINE_CHAIN = 7
FEET = ("foot.L", "foot.R")
#: The feet held to 0.01 mm (the status tolerance) on the evaluated pose.
FEET_TOLERANCE = 1e-5


@dataclass(frozen=True)
class Result:
    frames: int
    per_frame_us: Spread  # Limber: solve_object per frame
    solve_us: Spread  # Limber: core.solve_body per frame
    limber_bake_s: float
    limber_feet: float  # worst evaluated foot position error (m), baked keys
    limber_hand: float  # worst evaluated hand error (m) on the in-reach frames
    limber_hand_last: float  # hand error (m) at the last (farthest) frame
    blender_ik_us: float  # Blender's constraints per frame (constrained − plain)
    blender_bake_s: float
    blender_feet: float
    blender_hand: float
    blender_hand_last: float
    gap_last: float  # how far the last target is beyond the arm from the rest shoulder (m)


def hand_path(obj: Any, upper: str, lower: str, end: str, n: int) -> np.ndarray:
    """(n, 3) world positions from the hand's rest position to :data:`REACH` arm lengths
    from the shoulder along :data:`DIRECTION` (eased)."""
    pbs = obj.pose.bones
    mw = np.array(obj.matrix_world)
    shoulder = mw[:3, :3] @ np.array(pbs[upper].head) + mw[:3, 3]
    start = mw[:3, :3] @ np.array(pbs[end].head) + mw[:3, 3]
    length = (pbs[lower].head - pbs[upper].head).length + (pbs[end].head - pbs[lower].head).length
    d = np.array(DIRECTION) / np.linalg.norm(DIRECTION)
    stop = shoulder + d * length * REACH
    s = np.linspace(0.0, 1.0, n)[:, None]
    out: np.ndarray = start + (stop - start) * (3 * s**2 - 2 * s**3)
    return out


def key_path(obj: Any, path: np.ndarray) -> None:
    for f, p in enumerate(path, start=1):
        obj.location = p.tolist()
        obj.keyframe_insert("location", frame=f)


def errors(bpy: Any, obj: Any, targets: dict[str, Any], frames: int) -> dict[str, np.ndarray]:
    """Per bone, (frames,) evaluated world distance from its target's position."""
    scene = bpy.context.scene
    out: dict[str, list[float]] = {b: [] for b in targets}
    for f in range(1, frames + 1):
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        ev = obj.evaluated_get(dg)
        for bone, t in targets.items():
            p = ev.matrix_world @ ev.pose.bones[bone].head
            out[bone].append((p - t.evaluated_get(dg).matrix_world.translation).length)
    return {b: np.array(v) for b, v in out.items()}


def measure_limber(bpy: Any, module: str, frames: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Limber's body: per-frame cost, bake, errors of the baked keys; returns the numbers
    and the targets (bone → target object) Blender's rig reuses."""
    solve = importlib.import_module(f"{module}.addon.run.solve")
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    obj = metarig(bpy)
    assert bpy.ops.limber.add_body(armature=obj.name) == {"FINISHED"}
    body = obj.limber.bodies[0]
    hand = body.pins["hand.L"]
    hand.goal_type = "POSITION"
    path = hand_path(obj, hand.upper_bone, hand.lower_bone, hand.tip_bone, frames)
    key_path(hand.target, path)
    scene.limber.live_playback = False
    per_frame, solve_us = [], []
    for f in range(1, frames + 1):
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        t0 = time.perf_counter()
        st = solve.solve_object(obj, dg)[0]
        per_frame.append((time.perf_counter() - t0) * 1e6)
        solve_us.append(st.solve_us)
    for pb in obj.pose.bones:  # the bake starts from the rest pose, like Blender's
        pb.matrix_basis.identity()
    t0 = time.perf_counter()
    assert bpy.ops.limber.bake(armature=obj.name, frame_start=1, frame_end=frames) == {
        "FINISHED"}
    bake_s = time.perf_counter() - t0
    body.enabled = False
    targets = {body.pins[n].tip_bone: body.pins[n].target for n in FEET}
    targets[hand.tip_bone] = hand.target
    errs = errors(bpy, obj, targets, frames)
    mw = np.array(obj.matrix_world)
    pbs = obj.pose.bones
    shoulder = mw[:3, :3] @ np.array(pbs[hand.upper_bone].bone.head_local) + mw[:3, 3]
    length = sum((pbs[b].bone.head_local - pbs[a].bone.head_local).length
                 for a, b in ((hand.upper_bone, hand.lower_bone), (hand.lower_bone, hand.tip_bone)))
    gaps = np.linalg.norm(path - shoulder, axis=1) - length
    spec = {"feet": {n: (body.pins[n].upper_bone, body.pins[n].lower_bone, body.pins[n].tip_bone,
                         body.pins[n].target) for n in FEET},
            "hand": (hand.lower_bone, hand.tip_bone, hand.target), "gaps": gaps}
    end = hand.tip_bone
    out = {
        "per_frame": per_frame, "solve_us": solve_us, "bake_s": bake_s,
        "feet": max(float(errs[b].max()) for b in targets if b != end),
        "hand": float(errs[end][gaps <= 0.0].max(initial=0.0)),
        "hand_last": float(errs[end][-1]), "gap_last": float(gaps[-1]),
    }
    bpy.data.objects.remove(obj)  # (its settings, pins included, are gone with it)
    return out, spec


def measure_blender(bpy: Any, spec: dict[str, Any], frames: int) -> dict[str, Any]:
    """Blender's IK constraints on a fresh meta-rig with the same targets."""
    scene = bpy.context.scene
    obj = metarig(bpy)
    plain = []
    for f in range(1, frames + 1):
        t0 = time.perf_counter()
        scene.frame_set(f)
        plain.append(time.perf_counter() - t0)
    pbs = obj.pose.bones
    bones: set[str] = set()
    for upper, lower, end, target in spec["feet"].values():
        ik = pbs[lower].constraints.new("IK")
        ik.target, ik.chain_count = target, 2
        rot = pbs[end].constraints.new("COPY_ROTATION")
        rot.target = target
        bones |= {upper, lower, end}
    lower, end, target = spec["hand"]
    ik = pbs[lower].constraints.new("IK")
    ik.target, ik.chain_count = target, SPINE_CHAIN
    pb = pbs[lower]
    for _ in range(SPINE_CHAIN):
        bones.add(pb.name)
        pb = pb.parent
    constrained = []
    for f in range(1, frames + 1):
        t0 = time.perf_counter()
        scene.frame_set(f)
        constrained.append(time.perf_counter() - t0)
    ik_us = (statistics.median(constrained) - statistics.median(plain)) * 1e6
    compat = importlib.import_module(f"{enable_limber(bpy)}.addon.compat")
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode="POSE")
    for pb in obj.pose.bones:
        compat.set_bone_selected(pb, pb.name in bones)
    try:
        t0 = time.perf_counter()
        res = bpy.ops.nla.bake(frame_start=1, frame_end=frames, only_selected=True,
                               visual_keying=True, clear_constraints=True,
                               bake_types={"POSE"})
        bake_s = time.perf_counter() - t0
        assert res == {"FINISHED"}, res
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")
    targets = {v[2]: v[3] for v in spec["feet"].values()}
    targets[end] = target
    errs = errors(bpy, obj, targets, frames)
    gaps = spec["gaps"]
    return {
        "ik_us": ik_us, "bake_s": bake_s,
        "feet": max(float(errs[b].max()) for b in targets if b != end),
        "hand": float(errs[end][gaps <= 0.0].max(initial=0.0)),
        "hand_last": float(errs[end][-1]),
    }


def measure(quick: bool, log: Any = print) -> Result:
    bpy = load_bpy()
    module = enable_limber(bpy)
    frames = QUICK_FRAMES if quick else FULL_FRAMES
    clear_scene(bpy)
    t0 = time.perf_counter()
    lim, spec = measure_limber(bpy, module, frames)
    log(f"  body: Limber {frames} frames: {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    ble = measure_blender(bpy, spec, frames)
    log(f"  body: Blender's own: {time.perf_counter() - t0:.1f} s")
    clear_scene(bpy)
    return Result(
        frames=frames, per_frame_us=Spread.of(lim["per_frame"]),
        solve_us=Spread.of(lim["solve_us"]), limber_bake_s=lim["bake_s"],
        limber_feet=lim["feet"], limber_hand=lim["hand"], limber_hand_last=lim["hand_last"],
        blender_ik_us=ble["ik_us"], blender_bake_s=ble["bake_s"], blender_feet=ble["feet"],
        blender_hand=ble["hand"], blender_hand_last=ble["hand_last"],
        gap_last=lim["gap_last"],
    )


def targets(r: Result) -> list[Target]:
    return [
        Target("Limber: pinned feet on their targets (evaluated pose of the baked keys) "
               f"≤ {FEET_TOLERANCE * 1000:g} mm",
               r.limber_feet <= FEET_TOLERANCE,
               f"{r.limber_feet * 1000:.2g} mm (Blender's IK: {r.blender_feet * 1000:.2g} mm)"),
        Target("Limber's hand at least as close to a target beyond the arm's reach as "
               "Blender's IK with the spine in its chain",
               r.limber_hand_last <= r.blender_hand_last + 1e-6,
               f"{r.limber_hand_last * 1000:.1f} mm vs {r.blender_hand_last * 1000:.1f} mm"),
    ]


def rows(r: Result) -> list[list[object]]:
    lfps = r.frames / r.limber_bake_s
    bfps = r.frames / r.blender_bake_s
    return [
        ["Limber per frame: solve_object (body: read, solve_body, write, limbs finished, "
         "pins measured)", r.per_frame_us.scaled(1e-3).fmt(), "ms"],
        ["Limber core solve_body per frame (solve_us)", r.solve_us.scaled(1e-3).fmt(), "ms"],
        ["Blender's IK constraints per frame (feet chain 2, hand chain 7 through the spine; "
         "constrained − plain frame change)", f"{r.blender_ik_us / 1000:.3f}", "ms"],
        [f"Limber bake, {r.frames} frames (limber.bake)", f"{lfps:.1f}",
         f"frames/s ({r.limber_bake_s:.2f} s)"],
        [f"Blender bake, {r.frames} frames (nla.bake, visual keying)", f"{bfps:.1f}",
         f"frames/s ({r.blender_bake_s:.2f} s)"],
        ["bake speed ratio (Limber / Blender frames per second)", f"{lfps / bfps:.3g}", "×"],
        ["worst foot position error, evaluated (Limber / Blender)",
         f"{r.limber_feet * 1000:.3g} / {r.blender_feet * 1000:.3g}", "mm"],
        ["worst hand error on the in-reach frames (Limber / Blender)",
         f"{r.limber_hand * 1000:.3g} / {r.blender_hand * 1000:.3g}", "mm"],
        [f"hand error at the last frame, target {r.gap_last * 1000:.0f} mm beyond the arm "
         "(Limber / Blender)", f"{r.limber_hand_last * 1000:.3g} / "
         f"{r.blender_hand_last * 1000:.3g}", "mm"],
    ]


def render(r: Result, quick: bool) -> str:
    return "\n".join([
        "## Full body in Blender (Rigify human meta-rig)",
        "",
        "Measured by `python -m benchmarks.body_blender`"
        + (" (--quick: a smoke run, not evidence)" if quick else "")
        + f". {platform.processor() or platform.machine()}, Python "
        f"{platform.python_version()}, bpy {_bpy_version()}; one run, side by side, on a "
        f"shared machine. Per frame: median [IQR] over {r.frames} frames.",
        "",
        md_table(["measurement", "value", "unit"], rows(r)),
        "",
        "Errors are measured on the evaluated pose of the baked keys (each rig's bake "
        "played back). Blender's IK constraints have no priorities: the feet's chains and "
        "the hand's chain through the spine share the pelvis and are solved together, so "
        "the hand reaching beyond the arm pulls the feet off their targets unless the "
        "legs can compensate; Blender's root (the pelvis) cannot translate.",
        "",
        targets_table(targets(r)),
        "",
    ])


def _bpy_version() -> str:
    bpy = sys.modules.get("bpy")
    return ".".join(map(str, bpy.app.version)) if bpy is not None else "?"


def run(quick: bool, out_dir: Path, log: Any = print) -> Suite:
    r = measure(quick, log)
    return Suite(key="body_blender", title="Full body in Blender", markdown=render(r, quick),
                 targets=tuple(targets(r)),
                 headline=md_table(["measurement", "value", "unit"], rows(r)))


def main(argv: Sequence[str] | None = None) -> int:
    return suite_main(
        argv,
        prog="python -m benchmarks.body_blender",
        description=__doc__,
        title="Full body in Blender",
        quick_help=f"{QUICK_FRAMES} frames (smoke test)",
        default_out=DEFAULT_OUT,
        quick_out=QUICK_OUT,
        run=run,
    )


if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    sys.exit(main())
