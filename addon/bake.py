"""Baking solved limbs to rotation keys, in bulk.

When every item to bake is an ANALYTIC limb (state-free) and none hangs below another
one's bones, the range is baked as one batch per limb: each frame is only *read* (the
targets, poles, swivels, shoulder frames and held wrists), nothing is written per frame,
and each limb is solved once for all frames by the vectorised :func:`core.solve_limb`.
The reads need no frame change per frame when that is provably the same (see
:func:`_fast_reads`: targets and poles animated only by their own transform F-curves, the
armature side constant apart from swivel F-curves): the F-curves are evaluated and the
world matrices composed in numpy; else each frame is read after ``scene.frame_set``.
Otherwise (chains, numeric limbs: warm-started from the previous frame) every frame is
solved and written with :func:`addon.solve.solve_object`. Either way
the rotations are collected in arrays and written per F-curve with ``keyframe_points.add``
+ ``foreach_set`` (never one ``keyframe_insert`` per key). Keys outside the frame range are
kept; keys inside it on the baked channels are replaced. Blender ≥ 4.4 stores F-curves in
the channelbag of the action slot the armature uses; Blender 4.2/4.3 in ``action.fcurves``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ..core import LimberError, solve_limb
from ..core.rotations import axis_angle_to_matrix, euler_to_matrix, quat_to_matrix
from . import compat, mapping, solve
from .mapping import MappingError
from .solve import LimbStatus, solve_object

SLOTTED_ACTIONS = compat.SLOTTED_ACTIONS
#: Keyframe attributes kept for keys outside the baked range: (name, width, dtype).
_KEY_ATTRS: tuple[tuple[str, int, Any], ...] = (
    ("co", 2, np.float32),
    ("handle_left", 2, np.float32),
    ("handle_right", 2, np.float32),
    ("interpolation", 1, np.int32),
    ("handle_left_type", 1, np.int32),
    ("handle_right_type", 1, np.int32),
    ("easing", 1, np.int32),
    ("type", 1, np.int32),
)


@dataclass
class BakeResult:
    frames: list[int]
    #: {(data path, index): values per frame}
    channels: dict[tuple[str, int], np.ndarray]
    statuses: list[list[LimbStatus]]
    keys_written: int
    #: True when the range was solved as one batch per limb (analytic limbs only).
    batched: bool = False
    #: True when a batched bake read its inputs from F-curves, without a frame change per
    #: frame (see :func:`_fast_reads`).
    fast: bool = False


def _fcurves(obj: Any) -> Any:
    """The F-curve collection the armature's animation lives in (created if needed)."""
    return compat.ensure_fcurves(obj)


def _ensure_fcurve(fcurves: Any, path: str, index: int, group: str) -> Any:
    return compat.ensure_fcurve(fcurves, path, index, group)


def write_keys(fc: Any, frames: np.ndarray, values: np.ndarray, lo: float, hi: float) -> int:
    """Replace the keys of ``fc`` within [lo, hi] by (frames, values); keep the others."""
    points = fc.keyframe_points
    n_old = len(points)
    kept: dict[str, np.ndarray] = {}
    n_keep = 0
    if n_old:
        co = np.empty(2 * n_old, dtype=np.float32)
        points.foreach_get("co", co)
        x = co[0::2]
        keep = (x < lo - 1e-4) | (x > hi + 1e-4)
        n_keep = int(keep.sum())
        for name, width, dtype in _KEY_ATTRS if n_keep else ():
            buf = np.empty(width * n_old, dtype=dtype)
            points.foreach_get(name, buf)
            kept[name] = buf.reshape(n_old, width)[keep].ravel()
        points.clear()
    n_new = len(frames)
    points.add(n_keep + n_new)
    new_co = np.empty((n_new, 2), dtype=np.float32)
    new_co[:, 0] = frames
    new_co[:, 1] = values
    co_all = np.concatenate([kept.get("co", np.empty(0, np.float32)), new_co.ravel()])
    points.foreach_set("co", co_all)
    # Handles: the kept keys' own; the new keys' at the key (recomputed by update() for the
    # default auto handles).
    for name in ("handle_left", "handle_right"):
        points.foreach_set(name, np.concatenate([kept.get(name, np.empty(0, np.float32)),
                                                 new_co.ravel()]))
    if n_keep:
        for name, width, dtype in _KEY_ATTRS[3:]:
            buf = np.empty(width * (n_keep + n_new), dtype=dtype)
            points.foreach_get(name, buf)  # defaults for the new keys
            buf[: width * n_keep] = kept[name]
            points.foreach_set(name, buf)
    fc.update()
    return n_new


def _continuous(path: str, values: np.ndarray) -> np.ndarray:
    """Make per-frame rotation values continuous (quaternion sign, Euler 2π unwrapping)."""
    if path.endswith("rotation_quaternion"):
        # q_i keeps its sign relative to q_{i-1}: flip_i = flip_{i-1} · sign(q_i · q_{i-1}).
        dots = np.einsum("ij,ij->i", values[1:], values[:-1])
        flips = np.cumprod(np.where(dots < 0.0, -1.0, 1.0))
        q: np.ndarray = values.copy()
        q[1:] *= flips[:, None]
        return q
    if path.endswith("rotation_euler"):
        out: np.ndarray = np.unwrap(values, axis=0, period=2.0 * math.pi)
        return out
    return values


def batch_items(obj: Any, limbs: Sequence[str] | None, chains: Sequence[str] | None) -> list[Any]:
    """The limbs to bake as one batch each, or [] when the per-frame path is needed."""
    data = obj.limber
    if solve.pick_items(data.chains, chains):
        return []
    items = solve.pick_items(data.limbs, limbs)
    if not items or any(
        lb.solver != "ANALYTIC" or lb.goal_type not in solve.SUPPORTED_GOALS or lb.target is None
        for lb in items
    ):
        return []
    bones = {b for lb in items for b in (lb.upper_bone, lb.lower_bone, lb.end_bone)}
    if any(solve.hangs_below(obj, lb.upper_bone, bones) for lb in items):
        return []
    return items


def _action_paths(ad: Any) -> list[str]:
    """Data paths of the F-curves the armature's action drives (its slot's on ≥ 4.4)."""
    action = ad.action
    if action is None:
        return []
    if not SLOTTED_ACTIONS:
        return [fc.data_path for fc in action.fcurves]
    paths: list[str] = []
    if ad.action_slot is not None:
        for layer in action.layers:
            for strip in layer.strips:
                bag = strip.channelbag(ad.action_slot)
                if bag is not None:
                    paths += [fc.data_path for fc in bag.fcurves]
    return paths


def _detach_replaced_animation(obj: Any, bones: Sequence[str]) -> Callable[[], None] | None:
    """While reading the frames of a batched bake: when the armature's action animates
    nothing but the rotations about to be replaced (e.g. a previous bake), unassign it so
    that frame changes do not re-evaluate the rig. Returns the function that restores it
    (None: nothing detached)."""
    ad = obj.animation_data
    if ad is None or ad.action is None or len(ad.drivers) or any(
        len(t.strips) for t in ad.nla_tracks
    ):
        return None
    heads = tuple(f'pose.bones["{b}"].rotation_' for b in bones)
    paths = _action_paths(ad)
    if not paths or not all(p.startswith(heads) for p in paths):
        return None
    action = ad.action
    slot = ad.action_slot if SLOTTED_ACTIONS else None
    ad.action = None

    def restore() -> None:
        ad.action = action
        if slot is not None:
            ad.action_slot = slot

    return restore


#: Pose-bone properties a :class:`~.mapping.LimbRig` is built from that can be animated.
_RIG_PROPS = ("location", "rotation_mode", "lock_ik", "use_ik_limit", "ik_min", "ik_max")


def _settings_animated(obj: Any, bones: Sequence[str]) -> bool:
    """Whether drivers, NLA strips or the action may change the bones' rig settings
    (then the batched bake checks them on every frame)."""
    ad = obj.animation_data
    if ad is None:
        return False
    if any(len(t.strips) for t in ad.nla_tracks):
        return True
    paths = [d.data_path for d in ad.drivers] + _action_paths(ad)
    heads = tuple(f'pose.bones["{b}"].' for b in bones)
    return any(
        p.startswith(heads) and p.rsplit(".", 1)[-1].startswith(_RIG_PROPS) for p in paths
    )


# --------------------------------------------------------------------------------------
# Fast reads: inputs sampled from F-curves instead of one frame change per frame
# --------------------------------------------------------------------------------------

#: Object transform properties whose F-curves the fast path evaluates itself.
_TRANSFORM_PATHS = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle",
                    "scale")
#: Largest difference (relative to the value's magnitude, at least 1) between a fast read
#: and a frame change's read on a checked frame: float32 rounding is ~1e-7.
_CHECK_TOLERANCE = 1e-5


def _plain_fcurves(idb: Any) -> list[Any] | None:
    """The F-curves of an ID's active action (its slot's on ≥ 4.4) when its animation is
    nothing but that action played as is: [] when not animated; None when anything else
    could change it on a frame change (drivers, NLA strips, tweak mode, partial influence,
    blending or extrapolation, muted or modified F-curves, several layers or strips)."""
    ad = getattr(idb, "animation_data", None)
    if ad is None:
        return []
    if len(ad.drivers) or ad.use_tweak_mode or any(len(t.strips) for t in ad.nla_tracks):
        return None
    action = ad.action
    if action is None:
        return []
    if (ad.action_influence != 1.0 or ad.action_blend_type != "REPLACE"
            or ad.action_extrapolation != "HOLD"):
        return None
    if SLOTTED_ACTIONS:
        slot = ad.action_slot
        if slot is None:
            return []
        if len(action.layers) > 1 or any(len(layer.strips) > 1 for layer in action.layers):
            return None
        fcs: list[Any] = []
        for layer in action.layers:
            for strip in layer.strips:
                bag = strip.channelbag(slot)
                if bag is not None:
                    fcs += list(bag.fcurves)
    else:
        fcs = list(action.fcurves)
    if any(fc.mute or len(fc.modifiers) or (fc.group is not None and fc.group.mute)
           for fc in fcs):
        return None
    return fcs


def _sample(fc: Any, frames: list[float]) -> np.ndarray:
    return np.fromiter(map(fc.evaluate, frames), dtype=np.float64, count=len(frames))


def _plain_object(ob: Any, armature: Any) -> list[Any] | None:
    """The transform F-curves of a target or pole object whose world matrix is its own
    animated transform and nothing else, else None."""
    if (ob is armature or ob.parent is not None or len(ob.constraints)
            or ob.rigid_body is not None or ob.hide_viewport
            or bpy.context.view_layer.objects.get(ob.name) != ob):
        return None
    fcs = _plain_fcurves(ob)
    if fcs is None or any(fc.data_path not in _TRANSFORM_PATHS for fc in fcs):
        return None
    return fcs


def _object_worlds(ob: Any, fcs: list[Any], frames: list[float]) -> np.ndarray:
    """World matrices (N, 4, 4) of an unparented, unconstrained object from its transform
    F-curves, composed as Blender does: T(loc + Δloc) · (R_Δ · R) · S(scale · Δscale), R in
    the object's rotation mode (quaternions normalised). Raises LimberError on a zero
    quaternion or axis (the caller then falls back to frame changes)."""
    n = len(frames)
    mode = ob.rotation_mode
    rot_path = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}.get(
        mode, "rotation_euler")
    vals = {p: np.tile(np.array(getattr(ob, p), dtype=np.float64), (n, 1))
            for p in ("location", "scale", rot_path)}
    for fc in fcs:
        arr = vals.get(fc.data_path)
        if arr is not None and fc.array_index < arr.shape[1]:
            arr[:, fc.array_index] = _sample(fc, frames)
    if mode == "QUATERNION":
        r = quat_to_matrix(vals[rot_path])
        d = quat_to_matrix(np.array(ob.delta_rotation_quaternion, dtype=np.float64))
    elif mode == "AXIS_ANGLE":
        aa = vals[rot_path]
        r = axis_angle_to_matrix(aa[:, 1:], aa[:, 0])
        d = np.eye(3)
    else:
        r = euler_to_matrix(vals[rot_path], mode)
        d = euler_to_matrix(np.array(ob.delta_rotation_euler, dtype=np.float64), mode)
    scale = vals["scale"] * np.array(ob.delta_scale, dtype=np.float64)
    out = np.zeros((n, 4, 4))
    out[:, :3, :3] = (d @ r) * scale[:, None, :]
    out[:, :3, 3] = vals["location"] + np.array(ob.delta_location, dtype=np.float64)
    out[:, 3, 3] = 1.0
    return out


def _ancestors(obj: Any, bone: str) -> set[str]:
    out = set()
    pb = obj.pose.bones[bone].parent
    while pb is not None:
        out.add(pb.name)
        pb = pb.parent
    return out


def _armature_swivels(
    obj: Any, scene: Any, items: list[Any], rigs: list[Any]
) -> dict[int, Any] | None:
    """When everything a batched bake reads from the armature stays constant over the
    range except the swivel angles: {limb index: its swivel F-curve}. None when the
    armature's world matrix, a limb's parent-bone (shoulder) chain, an unconnected upper
    bone's location or a held end bone's rotation may change, or when a frame change may
    run other code (frame-change or depsgraph handlers other than Limber's, time remapping)."""
    own = {(fn.__module__, fn.__name__) for _, fn in solve.HANDLERS}
    handlers = bpy.app.handlers
    if any((getattr(h, "__module__", ""), getattr(h, "__name__", "")) not in own
           for h in (*handlers.frame_change_pre, *handlers.frame_change_post,
                     *handlers.depsgraph_update_pre, *handlers.depsgraph_update_post)):
        return None
    if scene.render.frame_map_old != scene.render.frame_map_new:
        return None
    if obj.parent is not None or len(obj.constraints) or obj.rigid_body is not None:
        return None
    data_ad = obj.data.animation_data
    if data_ad is not None and (data_ad.action is not None or len(data_ad.drivers)
                                or any(len(t.strips) for t in data_ad.nla_tracks)):
        return None
    fcs = _plain_fcurves(obj)
    if fcs is None:
        return None
    pbs = obj.pose.bones
    if any(c.type in ("IK", "SPLINE_IK") for pb in pbs for c in pb.constraints):
        return None  # an IK constraint may move bones above its owner
    fixed = set().union(*(_ancestors(obj, rig.upper) for rig in rigs))
    if any(len(pbs[b].constraints) for b in fixed):
        return None
    loose = {rig.upper for rig in rigs if not rig.upper_connected}
    held = {rig.end for lb, rig in zip(items, rigs, strict=True)
            if lb.goal_type in ("POSITION", "AIM")}
    swivels = {lb.path_from_id("swivel"): k for k, lb in enumerate(items)}
    out: dict[int, Any] = {}
    for fc in fcs:
        path = fc.data_path
        if path in swivels:
            out[swivels[path]] = fc
            continue
        if not path.startswith('pose.bones["') or "\\" in path:
            return None
        bone, _, rest = path[len('pose.bones["'):].partition('"]')
        prop = rest.rsplit(".", 1)[-1]
        if (bone in fixed or (bone in loose and prop == "location")
                or (bone in held and prop.startswith("rotation_"))):
            return None
    return out


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return bool(np.abs(x - y).max() <= _CHECK_TOLERANCE * max(1.0, float(np.abs(y).max())))


def _fast_eligible(
    obj: Any, scene: Any, items: list[Any], rigs: list[Any], plans: list[Any],
) -> tuple[dict[int, Any], dict[int, tuple[Any, list[Any]]]] | None:
    """The swivel F-curves ({limb index: F-curve}) and the target and pole objects with
    their transform F-curves ({pointer: (object, F-curves)}) when the fast reads are
    equivalent to frame changes (see :func:`_fast_reads`), else None."""
    if any(lb.target_bone for lb in items):
        return None
    bpy.context.view_layer.update()  # objects linked since the last update are listed
    swivels = _armature_swivels(obj, scene, items, rigs)
    if swivels is None:
        return None
    objects: dict[int, tuple[Any, list[Any]]] = {}
    for plan in plans:
        for ob in (plan.target, plan.pole):
            if ob is not None and ob.as_pointer() not in objects:
                fcs = _plain_object(ob, obj)
                if fcs is None:
                    return None
                objects[ob.as_pointer()] = (ob, fcs)
    return swivels, objects


def _fast_reads(
    obj: Any, scene: Any, frames: list[int], items: list[Any], rigs: list[Any],
    plans: list[Any],
) -> tuple[np.ndarray, list[dict[str, Any]]] | None:
    """The batched bake's reads without a frame change per frame, or None (read frame by
    frame). Eligible when the armature side is constant apart from F-curve swivels
    (:func:`_armature_swivels`) and each target and pole is an unparented, unconstrained
    object animated only by transform F-curves (:func:`_plain_object`); those F-curves are
    evaluated at every frame and the world matrices composed in numpy. The frame-change
    reads are still taken at the first, middle and last frame: any difference beyond
    float32 rounding falls back too."""
    eligible = _fast_eligible(obj, scene, items, rigs, plans)
    if eligible is None:
        return None
    swivels, objects = eligible
    at = [float(f) for f in frames]
    try:
        worlds = {key: _object_worlds(ob, fcs, at) for key, (ob, fcs) in objects.items()}
    except LimberError:
        return None
    n = len(frames)
    checks = sorted({0, n // 2, n - 1})
    reads: list[dict[str, Any]] = []
    world = np.empty(0)
    for i in checks:
        scene.frame_set(frames[i])
        dg = bpy.context.evaluated_depsgraph_get()
        obj_eval = obj.evaluated_get(dg)
        w = mapping.mat4(obj_eval.matrix_world)
        if i == 0:
            world = np.broadcast_to(w, (n, 4, 4))
        elif not _close(w, world[i]):
            return None
        for k, (lb, rig, plan) in enumerate(zip(items, rigs, plans, strict=True)):
            r = solve.read_raw(obj, obj_eval, lb, rig, dg, False, plan)
            if i == 0:
                swivel = (_sample(swivels[k], at) if k in swivels
                          else np.full(n, r.swivel))
                pole = None if plan.pole is None else worlds[plan.pole.as_pointer()][:, :3, 3]
                reads.append({
                    "parent": None if r.parent is None else np.broadcast_to(r.parent, (n, 4, 4)),
                    "location": None if r.location is None else np.broadcast_to(
                        r.location, (n, 3)),
                    "target": worlds[plan.target.as_pointer()],
                    "wrist": None if r.wrist is None else np.broadcast_to(r.wrist, (n, 3, 3)),
                    "pole": pole,
                    "swivel": swivel,
                })
            got = reads[k]
            if not (_close(r.target, got["target"][i]) and _close(r.swivel, got["swivel"][i])
                    and all(_close(v, None if got[key] is None else got[key][i])
                            for key, v in (("parent", r.parent), ("location", r.location),
                                           ("wrist", r.wrist), ("pole", r.pole)))):
                return None
    return np.ascontiguousarray(world), reads


def _read_frames(
    obj: Any, scene: Any, frames: list[int], items: list[Any], rigs: list[Any],
    plans: list[Any], check: bool, progress: Callable[[int], None] | None,
) -> list[dict[str, Any]] | None:
    """The batched bake's reads with one frame change per frame (None: a limb's settings
    or pole presence change within the range)."""
    world: list[np.ndarray] = []
    raw: list[list[solve.RawFrame]] = [[] for _ in items]
    for i, f in enumerate(frames):
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        obj_eval = obj.evaluated_get(dg)
        world.append(mapping.mat4(obj_eval.matrix_world))
        for k, lb in enumerate(items):
            r = solve.read_raw(obj, obj_eval, lb, rigs[k], dg, check, plans[k])
            first = raw[k][0] if raw[k] else r
            if r.signature != first.signature or (r.pole is None) != (first.pole is None):
                return None
            raw[k].append(r)
        if progress is not None:
            progress(i)
    w = np.stack(world)
    return [solve.goal_inputs_batch(obj, w, rf, rig) for rf, rig in zip(raw, rigs, strict=True)]


def _bake_batched(
    obj: Any,
    scene: Any,
    frames: list[int],
    items: list[Any],
    progress: Callable[[int], None] | None,
    fast: bool = True,
) -> tuple[dict[tuple[str, str], np.ndarray], list[list[LimbStatus]], bool] | None:
    """Read every frame, solve each limb once for all frames; None → use the per-frame path
    (a bone or target problem on some frame, bone settings or a pole that change within
    the range)."""
    bones = [b for lb in items for b in (lb.upper_bone, lb.lower_bone, lb.end_bone)]
    check = _settings_animated(obj, bones)
    written = [b for lb in items for b in (
        (lb.upper_bone, lb.lower_bone, lb.end_bone) if lb.goal_type in solve.WRIST_GOALS
        else (lb.upper_bone, lb.lower_bone))]
    restore = _detach_replaced_animation(obj, written)
    try:
        rigs = [solve.rig_for(obj, lb) for lb in items]
        plans = [solve.raw_plan(obj, lb, rig) for lb, rig in zip(items, rigs, strict=True)]
        quick = None if check or not fast else _fast_reads(obj, scene, frames, items, rigs,
                                                           plans)
        if quick is not None:
            w, reads = quick
            inputs = [solve.goal_inputs_arrays(obj, w, rig, **rd)
                      for rd, rig in zip(reads, rigs, strict=True)]
            if progress is not None:
                progress(len(frames) - 1)
        else:
            inputs = _read_frames(obj, scene, frames, items, rigs, plans, check, progress)
            if inputs is None:
                return None
    except MappingError:
        return None
    finally:
        if restore is not None:
            restore()
    n = len(frames)
    samples: dict[tuple[str, str], np.ndarray] = {}
    statuses: list[list[LimbStatus]] = [[] for _ in frames]
    pbs = obj.pose.bones
    for lb, rig, gi in zip(items, rigs, inputs, strict=True):
        kwargs = solve.limb_kwargs(lb, gi["wrist"], gi["elbow_target"], gi["swivel"])
        t0 = time.perf_counter()
        try:
            sol = solve_limb(rig.limb, solve.limb_goal(lb.goal_type, lb.axis, gi["g"]), **kwargs)
        except LimberError:
            return None
        each_us = (time.perf_counter() - t0) * 1e6 / n
        rots = [(rig.upper, sol.shoulder, rig.family_limits[0]),
                (rig.lower, axis_angle_to_matrix(rig.hinge_axis, sol.elbow),
                 rig.family_limits[1])]
        if lb.goal_type in solve.WRIST_GOALS:
            rots.append((rig.end, sol.wrist, rig.family_limits[2]))
        for bone, r, lim in rots:
            pb = pbs[bone]
            path = f'pose.bones["{bone}"].{mapping.rotation_path(pb)}'
            samples[(path, bone)] = mapping.rotation_values_batch(pb, r, lim)
        note = "no pole object; using the swivel angle" if (
            lb.swivel_mode == "POLE" and lb.pole is None) else ""
        notes = solve.analytic_notes(obj, rig, note)
        for row, st in zip(statuses, solve.analytic_statuses(obj.name, lb, sol, notes, each_us),
                           strict=True):
            row.append(st)
        solve.STATUS[(obj.name, lb.name)] = statuses[-1][-1]
    return samples, statuses, quick is not None


def _bake_per_frame(
    obj: Any,
    scene: Any,
    frames: list[int],
    limbs: Sequence[str] | None,
    chains: Sequence[str] | None,
    progress: Callable[[int], None] | None,
) -> tuple[dict[tuple[str, str], np.ndarray], list[list[LimbStatus]]]:
    """Solve and write every frame (chains and numeric limbs start from the last frame)."""
    samples: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    statuses: list[list[LimbStatus]] = []
    for i, f in enumerate(frames):
        scene.frame_set(f)
        sts = solve_object(obj, None, limbs=limbs, chains=chains)
        statuses.append(sts)
        for st in sts:
            for bone, (prop, vals) in st.written.items():
                path = f'pose.bones["{bone}"].{prop}'
                seq = samples.setdefault((path, bone), [])
                if len(seq) < i:  # a limb unsolved on earlier frames: hold first value
                    seq.extend([vals] * (i - len(seq)))
                seq.append(vals)
        if progress is not None:
            progress(i)
    out = {}
    for key, seq in samples.items():
        if len(seq) < len(frames):
            seq.extend([seq[-1]] * (len(frames) - len(seq)))
        out[key] = np.array(seq, dtype=np.float64)
    return out, statuses


def bake_object(
    obj: Any,
    scene: Any,
    frame_start: int,
    frame_end: int,
    step: int = 1,
    *,
    limbs: Sequence[str] | None = None,
    progress: Callable[[int], None] | None = None,
    chains: Sequence[str] | None = None,
    batch: bool = True,
    fast: bool = True,
) -> BakeResult:
    """Solve every ``step``-th frame of [start, end] and key the solved bones' rotations.

    ``limbs`` / ``chains``: names to solve (None: every enabled one). Analytic limbs alone
    are baked as one batch (see the module docstring; ``batch=False`` forces the per-frame
    path, same result; ``fast=False`` reads the batch with a frame change per frame even
    when its inputs could be sampled from F-curves, same result); chains and numeric limbs
    frame by frame, each frame starting from the previous frame's pose.
    """
    if frame_end < frame_start:
        raise ValueError(f"frame_end {frame_end} < frame_start {frame_start}")
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")
    frames = list(range(frame_start, frame_end + 1, step))
    live = scene.limber.live_playback
    scene.limber.live_playback = False  # the bake solves each frame itself
    current = scene.frame_current
    try:
        items = batch_items(obj, limbs, chains) if batch else []
        batched = _bake_batched(obj, scene, frames, items, progress, fast) if items else None
        was_batched = batched is not None
        if batched is None:
            samples, statuses = _bake_per_frame(obj, scene, frames, limbs, chains, progress)
            was_fast = False
        else:
            samples, statuses, was_fast = batched
    finally:
        scene.limber.live_playback = live

    fr = np.array(frames, dtype=np.float64)
    channels: dict[tuple[str, int], np.ndarray] = {}
    keys = 0
    fcurves = _fcurves(obj) if samples else None
    for (path, bone), seq in samples.items():
        vals = _continuous(path, seq)
        for idx in range(vals.shape[1]):
            fc = _ensure_fcurve(fcurves, path, idx, bone)
            keys += write_keys(fc, fr, vals[:, idx], frame_start, frame_end)
            channels[(path, idx)] = vals[:, idx]
    scene.frame_set(current)
    return BakeResult(frames=frames, channels=channels, statuses=statuses, keys_written=keys,
                      batched=was_batched, fast=was_fast)
