"""Baking solved limbs to rotation keys, in bulk.

When every item to bake is an ANALYTIC limb (state-free) and none hangs below another
one's bones, the range is baked as one batch per limb: each frame is only *read* (the
targets, poles, swivels, shoulder frames and held wrists), nothing is written per frame,
and each limb is solved once for all frames by the vectorised :func:`core.solve_limb`
through the same requests as a live solve. Limbs whose model is not proven for the rig
are checked frame by frame on the evaluated pose instead (solved frame by frame, or, when
only their links are stretched, for the whole range against their affine chain first).
The reads need no frame change per frame when that is provably the same (see
:func:`_fast_reads`: targets and poles animated only by their own transform F-curves, the
armature side constant apart from swivel F-curves): the F-curves are evaluated and the
world matrices composed in numpy; else each frame is read after ``scene.frame_set``.
Otherwise (chains, numeric limbs: warm-started from the previous frame) every frame is
solved and written with :func:`.solve.solve_object`. Either way the rotations are
collected in arrays and written per F-curve with ``keyframe_points.add`` + ``foreach_set``
(never one ``keyframe_insert`` per key) where :func:`_destination` says (the action, a
tweaked strip at its own time, or a new NLA track over strips). Keys outside the frame
range are kept in every field; keys inside it on the baked channels are replaced; the
first baked key continues the kept one before it. Every frame up to the last kept key
before the range and from the first kept key after it therefore evaluates as before; the
segments between those keys and the range (and a side where a channel keeps no key: its
extrapolation) follow the baked keys, since keeping their old values would need keys
outside the range on every frame between them. Then the keys are played back at a few
frames and measured (:func:`_playback_check`); each item's status is its worst frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import bpy
import numpy as np
from numpy.typing import NDArray

from ...core import (
    LimberError,
    axis_angle_to_matrix,
    compose_trs,
    continuous_eulers,
    continuous_quaternions,
    euler_to_matrix,
    orthonormalize_yz,
    quat_to_matrix,
    solve_limb,
)
from .. import compat
from ..bridge import read, requests, rigify, verify, write
from ..bridge.read import LimbRead, ReadError
from ..bridge.requests import VaryingLinks
from ..bridge.rig import MappingError
from . import handlers, solve, stretched
from .solve import LimbStatus, solve_object
from .statuses import StatusColumn, StatusRows

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
    ("back", 1, np.float32),
    ("amplitude", 1, np.float32),
    ("period", 1, np.float32),
)


FloatArray = NDArray[np.float64]


@dataclass
class BakeResult:
    frames: list[int]
    #: {(data path, index): values per frame}
    channels: dict[tuple[str, int], FloatArray]
    #: Per frame, the statuses of every item (rows made when first read).
    statuses: Sequence[list[LimbStatus]]
    keys_written: int
    #: True when the range was solved as one batch per limb (analytic limbs only).
    batched: bool = False
    #: True when a batched bake read its inputs from F-curves, without a frame change per
    #: frame (see :func:`_fast_reads`).
    fast: bool = False
    #: {limb or chain name: why} for items no frame was solved for.
    skipped: dict[str, str] = field(default_factory=dict)
    #: Where the keys went: "action", "tweaked strip" or "new NLA track".
    destination: str = "action"
    #: Per item, its worst frame's status (also stored in the items' ``status``).
    worst: list[LimbStatus] = field(default_factory=list)
    #: Limbs of a batched bake that were solved frame by frame instead, their model not
    #: being proven for the rig (each frame checked on the evaluated pose).
    checked: list[str] = field(default_factory=list)


def write_keys(fc: Any, frames: FloatArray, values: FloatArray, lo: float, hi: float) -> int:
    """Replace the keys of ``fc`` within [lo, hi] by (frames, values); keep the others."""
    points = fc.keyframe_points
    n_old = len(points)
    kept: dict[str, FloatArray] = {}
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
    # Handles: the kept keys' own. New keys come with auto-clamped handles
    # (keyframe_points.add ignores the preferences), which update() computes from the keys.
    if n_keep:
        for name in ("handle_left", "handle_right"):
            points.foreach_set(name, np.concatenate([kept[name], new_co.ravel()]))
        for name, width, dtype in _KEY_ATTRS[3:]:
            buf = np.empty(width * (n_keep + n_new), dtype=dtype)
            points.foreach_get(name, buf)  # defaults for the new keys
            buf[: width * n_keep] = kept[name]
            points.foreach_set(name, buf)
    fc.update()
    if n_keep:  # update() recomputed the kept keys' auto handles: give them back theirs
        co = np.empty(2 * len(points), dtype=np.float32)
        points.foreach_get("co", co)
        x = co[0::2]
        out = (x < lo - 1e-4) | (x > hi + 1e-4)
        for name in ("handle_left", "handle_right"):
            buf = np.empty(2 * len(points), dtype=np.float32)
            points.foreach_get(name, buf)
            buf.reshape(-1, 2)[out] = kept[name].reshape(-1, 2)
            points.foreach_set(name, buf)
    return n_new


def _continuous(path: str, values: FloatArray, previous: FloatArray | None = None
                ) -> FloatArray:
    """Per-frame rotation values made continuous (quaternion sign, Euler unwrapping),
    starting from ``previous`` (the kept key before the range) when there is one."""
    if path.endswith("rotation_quaternion"):
        return continuous_quaternions(values, previous)
    if path.endswith("rotation_euler"):
        return continuous_eulers(values, previous)
    return values


def _previous_key(fcurves: Any, path: str, width: int, lo: float) -> FloatArray | None:
    """The values of the last keys before frame ``lo`` on a rotation's F-curves (all
    ``width`` channels keyed there), else None."""
    if fcurves is None:
        return None
    out = np.empty(width)
    for idx in range(width):
        fc = fcurves.find(path, index=idx)
        if fc is None or not len(fc.keyframe_points):
            return None
        pts = fc.keyframe_points
        co = np.empty(2 * len(pts), dtype=np.float32)
        pts.foreach_get("co", co)
        before = co[0::2] < lo - 1e-4
        if not before.any():
            return None
        out[idx] = co[1::2][before][np.argmax(co[0::2][before])]
    return out


def batch_items(obj: Any, limbs: Sequence[str] | None, chains: Sequence[str] | None) -> list[Any]:
    """The limbs to bake as one batch each, or [] when the per-frame path is needed."""
    data = obj.limber
    if solve.pick_items(data.chains, chains) or solve.pick_items(data.bodies, None):
        return []
    items = solve.pick_items(data.limbs, limbs)
    if not items or any(
        lb.solver != "ANALYTIC" or lb.goal_type not in requests.SUPPORTED_GOALS or lb.target is None
        or rigify.ik_chain(obj, lb) is not None  # Rigify IK controls: placed frame by frame
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
    if not compat.SLOTTED_ACTIONS:
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
    slot = ad.action_slot if compat.SLOTTED_ACTIONS else None
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
    if compat.SLOTTED_ACTIONS:
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


def _sample(fc: Any, frames: list[float]) -> FloatArray:
    return np.fromiter(map(fc.evaluate, frames), dtype=np.float64, count=len(frames))


def _view_layer() -> Any:
    vl = bpy.context.view_layer
    if vl is None:
        raise BakeError("no view layer in this context")
    return vl


def _plain_object(ob: Any, armature: Any) -> list[Any] | None:
    """The transform F-curves of a target or pole object whose world matrix is its own
    animated transform and nothing else, else None."""
    if (ob is armature or ob.parent is not None or len(ob.constraints)
            or ob.rigid_body is not None or ob.hide_viewport
            or _view_layer().objects.get(ob.name) != ob):
        return None
    fcs = _plain_fcurves(ob)
    if fcs is None or any(fc.data_path not in _TRANSFORM_PATHS for fc in fcs):
        return None
    return fcs


def _object_worlds(ob: Any, fcs: list[Any], frames: list[float]) -> FloatArray:
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
    return compose_trs(vals["location"] + np.array(ob.delta_location, dtype=np.float64),
                       d @ r, vals["scale"] * np.array(ob.delta_scale, dtype=np.float64))


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
    armature's world matrix, a limb's parent-bone (shoulder) chain or helper bones, a
    limb bone's location or scale or a held end bone's rotation may change, or when a
    frame change may run other code (frame-change or depsgraph handlers other than
    Limber's, time remapping)."""
    own = {(fn.__module__, fn.__name__) for _, fn in handlers.HANDLERS}
    app = bpy.app.handlers
    if any((getattr(h, "__module__", ""), getattr(h, "__name__", "")) not in own
           for h in (*app.frame_change_pre, *app.frame_change_post,
                     *app.depsgraph_update_pre, *app.depsgraph_update_post)):
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
    fixed = set().union(*(_ancestors(obj, rig.upper) | set(rig.helpers) for rig in rigs))
    if any(len(pbs[b].constraints) for b in fixed):
        return None
    loose = {b for rig in rigs for b in rig.bones}  # their location and scale must hold
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
        if (bone in fixed or (bone in loose and prop in ("location", "scale"))
                or (bone in held and prop.startswith("rotation_"))):
            return None
    return out


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return bool(np.abs(x - y).max() <= _CHECK_TOLERANCE * max(1.0, float(np.abs(y).max())))


def _fast_eligible(
    obj: Any, scene: Any, items: list[Any], rigs: list[Any],
) -> tuple[dict[int, Any], dict[int, tuple[Any, list[Any]]]] | None:
    """The swivel F-curves ({limb index: F-curve}) and the target and pole objects with
    their transform F-curves ({pointer: (object, F-curves)}) when the fast reads are
    equivalent to frame changes (see :func:`_fast_reads`), else None."""
    if any(lb.target_bone for lb in items):
        return None
    _view_layer().update()  # objects linked since the last update are listed
    swivels = _armature_swivels(obj, scene, items, rigs)
    if swivels is None:
        return None
    objects: dict[int, tuple[Any, list[Any]]] = {}
    for lb in items:
        pole = lb.pole if lb.swivel_mode == "POLE" else None
        for ob in (lb.target, pole):
            if ob is not None and ob.as_pointer() not in objects:
                fcs = _plain_object(ob, obj)
                if fcs is None:
                    return None
                objects[ob.as_pointer()] = (ob, fcs)
    return swivels, objects


def _same_read(rig: Any, a: LimbRead, b: LimbRead, i: int) -> bool:
    """Whether frame ``i`` of the fast read ``b`` matches the frame-change read ``a``
    (N = 1) in everything the request uses (the limb's frame and links, not the solved
    bones' own rotations)."""
    la = requests.frame_and_links(rig, a)[:3]
    lb = requests.frame_and_links(rig, _row(b, i))[:3]
    return (all(_close(None if x is None else x[0], None if y is None else y[0])
                for x, y in zip(la, lb, strict=True))
            and _close(a.target[0], b.target[i]) and _close(a.swivel[0], b.swivel[i])
            and _close(None if a.pole is None else a.pole[0],
                       None if b.pole is None else b.pole[i]))


def _row(r: LimbRead, i: int) -> LimbRead:
    """Frame ``i`` of a read as a one-frame read."""
    def one(x: Any) -> Any:
        return None if x is None else x[i:i + 1]

    return LimbRead(**{k: one(getattr(r, k)) for k in (
        "world", "pose", "basis", "location", "end_basis", "target", "pole", "swivel",
        "parent", "end_pose", "lower_rest")})


def _fast_reads(
    obj: Any, scene: Any, frames: list[int], items: list[Any], rigs: list[Any],
) -> list[LimbRead] | None:
    """The batched bake's reads without a frame change per frame, or None (read frame by
    frame). Eligible when the armature side is constant apart from F-curve swivels
    (:func:`_armature_swivels`) and each target and pole is an unparented, unconstrained
    object animated only by transform F-curves (:func:`_plain_object`); those F-curves are
    evaluated at every frame and the world matrices composed in numpy. The frame-change
    reads are still taken at the first, middle and last frame: any difference beyond
    float32 rounding falls back too."""
    eligible = _fast_eligible(obj, scene, items, rigs)
    if eligible is None:
        return None
    swivels, objects = eligible
    at = [float(f) for f in frames]
    try:
        worlds = {key: _object_worlds(ob, fcs, at) for key, (ob, fcs) in objects.items()}
    except LimberError:
        return None
    n = len(frames)
    reads: list[LimbRead] = []
    for i in sorted({0, n // 2, n - 1}):
        scene.frame_set(frames[i])
        dg = bpy.context.evaluated_depsgraph_get()
        obj_eval = obj.evaluated_get(dg)
        for k, (lb, rig) in enumerate(zip(items, rigs, strict=True)):
            r = read.read_limb(obj_eval, lb, rig.bones, dg, bool(rig.helpers))
            if i == 0:
                pole = lb.pole if lb.swivel_mode == "POLE" else None
                reads.append(read.broadcast(
                    r, n,
                    target=worlds[lb.target.as_pointer()],
                    pole=None if r.pole is None or pole is None
                    else worlds[pole.as_pointer()][:, :3, 3],
                    swivel=_sample(swivels[k], at) if k in swivels else np.full(n, r.swivel[0]),
                ))
            if not _same_read(rig, r, reads[k], i):
                return None
    return reads


def _read_frames(
    obj: Any, scene: Any, frames: list[int], items: list[Any], rigs: list[Any],
    progress: Callable[[int], None] | None,
) -> list[LimbRead] | None:
    """The batched bake's reads with one frame change per frame (None: a pole that
    appears or disappears within the range)."""
    raw: list[list[LimbRead]] = [[] for _ in items]
    for i, f in enumerate(frames):
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        obj_eval = obj.evaluated_get(dg)
        for k, lb in enumerate(items):
            r = read.read_limb(obj_eval, lb, rigs[k].bones, dg, True)
            if raw[k] and (r.pole is None) != (raw[k][0].pole is None):
                return None
            raw[k].append(r)
        if progress is not None:
            progress(i)
    return [read.stack(rs) for rs in raw]


def _bake_batched(
    obj: Any,
    scene: Any,
    frames: list[int],
    items: list[Any],
    progress: Callable[[int], None] | None,
    fast: bool = True,
) -> tuple[dict[tuple[str, str], FloatArray], StatusRows, bool,
           dict[str, Unproven]] | None:
    """Read every frame, solve each limb once for all frames; None → use the per-frame path
    (a bone or target problem on some frame, bone settings, links or a pole that change
    within the range). Limbs whose model is not proven (they need the evaluated pose of
    every frame) are left out: the last element maps their names to their requests for
    the range (:class:`Unproven`), for :func:`_bake_checked` or the per-frame path."""
    bones = [b for lb in items for b in (lb.upper_bone, lb.lower_bone, lb.end_bone)]
    if _settings_animated(obj, bones):
        return None
    written = [b for lb in items for b in (
        (lb.upper_bone, lb.lower_bone, lb.end_bone) if lb.goal_type in requests.WRIST_GOALS
        else (lb.upper_bone, lb.lower_bone))]
    restore = _detach_replaced_animation(obj, written)
    try:
        rigs = [solve.rig_for(obj, lb) for lb in items]
        quick = _fast_reads(obj, scene, frames, items, rigs) if fast else None
        if quick is not None:
            reads = quick
            if progress is not None:
                progress(len(frames) - 1)
        else:
            got = _read_frames(obj, scene, frames, items, rigs, progress)
            if got is None:
                return None
            reads = got
        reqs = [requests.limb_request(lb, rig, rd)
                for lb, rig, rd in zip(items, rigs, reads, strict=True)]
    except (MappingError, ReadError, VaryingLinks, LimberError, ValueError):
        return None
    finally:
        if restore is not None:
            restore()
    n = len(frames)
    samples: dict[tuple[str, str], FloatArray] = {}
    statuses = StatusRows(n)
    pbs = obj.pose.bones
    rest: dict[str, Unproven] = {}
    for lb, rig, req, rd in zip(items, rigs, reqs, reads, strict=True):
        notes, proven = solve.analytic_notes(obj, rig, lb, req)
        if not proven:
            # stretched links alone (nothing overrides what the goal measures:
            # solve.chain_models): Blender's evaluation of the chain is its affine
            # composition, a prediction for the checked bake
            links = (stretched.chain_links(rd) if solve.chain_models(obj, rig, lb)
                     else None)
            rest[lb.name] = Unproven(req, links)
            continue
        t0 = time.perf_counter()
        try:
            sol = solve_limb(req.limb, req.goal, **req.kwargs)
        except LimberError:
            return None
        each_us = (time.perf_counter() - t0) * 1e6 / n
        for bone, path, values in _solution_values(pbs, rig, lb, sol):
            samples[(f'pose.bones["{bone}"].{path}', bone)] = values
        col = StatusColumn(obj.name, lb, sol, req, notes, each_us, frames)
        statuses.add(col)
        solve.STATUS[(obj.name, lb.name)] = col[-1]
    if len(rest) == len(items) and all(u.links is None for u in rest.values()):
        return None  # nothing batched, nothing predicted: the per-frame path
    return samples, statuses, quick is not None, rest


@dataclass(frozen=True)
class Unproven:
    """A limb of a batched bake whose model is not proven for the rig: its request for
    the range and, when only its links are stretched, the chain's affine links
    (:func:`core.affine_links`: upper, lower, end) that predict Blender's evaluation."""

    request: requests.LimbRequest
    links: tuple[FloatArray, ...] | None = None


def _solution_values(pbs: Any, rig: Any, settings: Any, sol: Any
                     ) -> list[tuple[str, str, FloatArray]]:
    """(bone, rotation property, values (N, k)) of a batched limb solution: the upper and
    lower bones, and the end bone where the goal sets its rotation."""
    rots = [(rig.upper, sol.shoulder, rig.family_limits[0]),
            (rig.lower, axis_angle_to_matrix(rig.hinge_axis, sol.elbow),
             rig.family_limits[1])]
    if settings.goal_type in requests.WRIST_GOALS:
        rots.append((rig.end, sol.wrist, rig.family_limits[2]))
    out = []
    for bone, r, lim in rots:
        pb = pbs[bone]
        out.append((bone, write.rotation_path(pb), write.rotation_values_batch(pb, r, lim)))
    return out


def analytic_statuses(
    obj_name: str, settings: Any, sol: Any, req: Any, notes: list[str], solve_us: float
) -> list[LimbStatus]:
    """One status per row of a batched :class:`core.LimbSolution` (the batched bake,
    proven model): the same fields and messages as :func:`solve.fill_analytic` (see
    :class:`.statuses.StatusColumn`, which makes them only when read)."""
    return list(StatusColumn(obj_name, settings, sol, req, notes, solve_us))


def _own_rotations_animated(obj: Any, names: Sequence[str]) -> bool:
    """Whether the armature's action, drivers or NLA may set the rotations of these
    limbs' bones on a frame change (then a pose written before the change would not
    survive it)."""
    ad = obj.animation_data
    if ad is None:
        return False
    if any(len(t.strips) for t in ad.nla_tracks):
        return True
    data = obj.limber
    bones = {b for n in names for b in (data.limbs[n].upper_bone, data.limbs[n].lower_bone,
                                         data.limbs[n].end_bone)}
    heads = tuple(f'pose.bones["{b}"].rotation' for b in bones)
    return any(p.startswith(heads) for p in
               [d.data_path for d in ad.drivers] + _action_paths(ad))


def _bake_checked(
    obj: Any, scene: Any, frames: list[int], reqs: dict[str, Unproven],
    progress: Callable[[int], None] | None,
) -> tuple[dict[tuple[str, str], FloatArray], list[list[LimbStatus]]]:
    """Limbs whose model is not proven, with their requests for the range already built
    from the reads of every frame: each frame is solved (its row of the request) and
    written *before* the frame change, so the change's own evaluation is the one that
    verifies it (:func:`.solve.verify_pending` then measures without another evaluation
    and re-solves only a limb that misses). A limb with affine links (stretched, nothing
    overriding its bones) is solved for the whole range first, refined against its
    affine chain (:func:`_predict`); each frame then writes that row, and the frame
    change's evaluation checks it. Needs the limbs' rotations not animated (see
    :func:`_own_rotations_animated`)."""
    with solve.held_rigs(), verify.held_tolerances():  # settings not animated: see
        return _checked_frames(obj, scene, frames, reqs, progress)  # _bake_batched


@dataclass
class _Predicted:
    """A checked limb's range solved and refined against its affine chain."""

    settings: Any
    #: The bone the status measures.
    end: str
    #: The request asking for the refined goals.
    request: requests.LimbRequest
    #: (bone, rotation property, values (N, k)) written per frame.
    values: list[tuple[str, str, FloatArray]]
    #: Per frame, the status of the row (model side; measured fields set per frame).
    statuses: list[LimbStatus]


def _predict(obj: Any, settings: Any, unproven: Unproven, n: int) -> _Predicted | None:
    """The limb's range solved in one batch and refined against its affine chain
    (:func:`.stretched.on_chain`: Blender's composition of the stretched links); None
    without affine links or on a solve error."""
    links = unproven.links
    if links is None:
        return None
    req = unproven.request
    rig = solve.rig_for(obj, settings)
    notes, _ = solve.analytic_notes(obj, rig, settings, req)
    t0 = time.perf_counter()
    try:
        sol = solve_limb(req.limb, req.goal, **req.kwargs)
        with verify.held_tolerances() as t:
            sol = stretched.on_chain(rig, req, sol, links, t.position, t.orientation)
    except LimberError:
        return None
    each_us = (time.perf_counter() - t0) * 1e6 / n
    sts = analytic_statuses(obj.name, settings, sol, req, notes, each_us)
    for st in sts:
        st.proven, st.measured = False, "depsgraph"
    rigify.set_switch(obj, settings)
    return _Predicted(settings, rigify.measured_end(obj, settings), req,
                      _solution_values(obj.pose.bones, rig, settings, sol), sts)


def _predicted_row(obj: Any, obj_eval: Any, dg: Any, p: _Predicted, i: int, f: int
                   ) -> LimbStatus:
    """Frame ``i`` of a predicted limb, its row written and evaluated: its status when
    the end bone Blender evaluated is on target; else the status of the row re-solved
    from the measured miss (:func:`.verify.corrected_goal`) and written, for
    :func:`.solve.verify_pending` to go on from (``pending`` set)."""
    lb = p.settings
    target = orthonormalize_yz(read.target_world(lb.target.evaluated_get(dg), lb.target_bone))
    pos, ori, end = verify.measured_errors(obj_eval, p.end, lb.goal_type, lb.axis, target)
    if not verify.reached(pos, ori):
        one = requests.row(p.request, i)
        return solve.solve_limb_settings(obj, None, lb, None, frame=f,
                                         goal_frame=verify.corrected_goal(one, end),
                                         reads=one)
    st = p.statuses[i]
    st.position_error, st.orientation_error, st.frame = pos, ori, f
    st.written = {bone: (path, tuple(v[i].tolist())) for bone, path, v in p.values}
    if not st.reached:
        st.reached = True
        st.message = verify.status_message(st)
    return st


def _checked_frames(
    obj: Any, scene: Any, frames: list[int], reqs: dict[str, Unproven],
    progress: Callable[[int], None] | None,
) -> tuple[dict[tuple[str, str], FloatArray], list[list[LimbStatus]]]:
    data = obj.limber
    pbs = obj.pose.bones
    n = len(frames)
    predicted = {}
    for name, u in reqs.items():
        p = _predict(obj, data.limbs[name], u, n)
        if p is not None:
            predicted[name] = p
    samples: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    statuses: list[list[LimbStatus]] = []
    for i, f in enumerate(frames):
        row: dict[str, LimbStatus] = {}
        for p in predicted.values():
            for bone, path, values in p.values:
                setattr(pbs[bone], path, tuple(values[i].tolist()))
        for name, u in reqs.items():
            if name not in predicted:
                row[name] = solve.solve_limb_settings(obj, None, data.limbs[name], None,
                                                      frame=f, reads=requests.row(u.request, i))
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        if predicted:
            obj_eval = obj.evaluated_get(dg)
            for name, p in predicted.items():
                row[name] = _predicted_row(obj, obj_eval, dg, p, i, f)
        todo = [(st, data.limbs[name]) for name, st in row.items()
                if st.pending is not None and st.solved]
        if todo:
            solve.verify_pending(obj, dg, todo)
        out = [row[name] for name in reqs]
        for st in out:
            st.pending = None
            _collect(samples, st, i)
        statuses.append(out)
        if progress is not None:
            progress(i)
    for name in predicted:
        solve.STATUS[(obj.name, name)] = statuses[-1][list(reqs).index(name)]
    return _padded(samples, len(frames)), statuses


def _collect(samples: dict[tuple[str, str], list[tuple[float, ...]]], st: LimbStatus,
             i: int) -> None:
    """Add a status's written values as frame ``i`` of ``samples`` (a channel unsolved on
    earlier frames holds its first value)."""
    for key, (prop, vals) in [*st.written.items(), *st.written_locations.items()]:
        bone = rigify.bone_of(key)
        seq = samples.setdefault((f'pose.bones["{bone}"].{prop}', bone), [])
        if len(seq) < i:
            seq.extend([vals] * (i - len(seq)))
        seq.append(vals)


def _padded(samples: dict[tuple[str, str], list[tuple[float, ...]]], n: int
            ) -> dict[tuple[str, str], FloatArray]:
    """Samples as (n, k) arrays, a channel unsolved on the last frames holding its last."""
    out = {}
    for key, seq in samples.items():
        if len(seq) < n:
            seq.extend([seq[-1]] * (n - len(seq)))
        out[key] = np.array(seq, dtype=np.float64)
    return out


def _bake_per_frame(
    obj: Any,
    scene: Any,
    frames: list[int],
    limbs: Sequence[str] | None,
    chains: Sequence[str] | None,
    progress: Callable[[int], None] | None,
) -> tuple[dict[tuple[str, str], FloatArray], list[list[LimbStatus]]]:
    """Solve and write every frame (chains and numeric limbs start from the last frame)."""
    samples: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    statuses: list[list[LimbStatus]] = []
    for i, f in enumerate(frames):
        scene.frame_set(f)
        sts = solve_object(obj, None, limbs=limbs, chains=chains)
        statuses.append(sts)
        for st in sts:
            _collect(samples, st, i)
        if progress is not None:
            progress(i)
    return _padded(samples, len(frames)), statuses


class BakeError(MappingError):
    """A bake Blender cannot express as asked (the message says why and what to do)."""


def _live_strips(ad: Any) -> bool:
    return ad is not None and any(not t.mute and len(t.strips) for t in ad.nla_tracks)


@dataclass
class _Destination:
    """Where a bake writes its keys: F-curves and the map from scene to key frames."""

    kind: str
    fcurves: Any = None
    time: Callable[[FloatArray], FloatArray] | None = None
    finish: Callable[[float, float], None] | None = None


def _destination(obj: Any, paths: list[str]) -> _Destination:
    """Choose where the keys go so that the evaluated pose is the baked one in the range
    and nothing changes outside it:

    * tweak mode: the tweaked strip's action, at the strip's own time
      (``AnimData.nla_tweak_strip_time_to_scene``: offset, scale, repeat, reverse);
    * NLA strips playing and the active action not already overriding the baked channels
      with REPLACE at full influence: a new action in a new NLA track on top, one strip
      over the range, REPLACE, no extrapolation (outside the range the strips below play
      unchanged). An active action that blends (ADD, influence < 1, ...) the same
      channels on top of it cannot be expressed: :class:`BakeError`;
    * otherwise the active action (created if needed).
    """
    ad = obj.animation_data
    if ad is not None and ad.use_tweak_mode:
        def to_strip(f: FloatArray) -> FloatArray:
            return np.array([ad.nla_tweak_strip_time_to_scene(float(x), invert=True)
                             for x in f])
        return _Destination("tweaked strip", compat.assigned_fcurves(ad)
                            or compat.ensure_fcurves(obj), to_strip)
    if not _live_strips(ad):
        return _Destination("action", compat.ensure_fcurves(obj))
    active = compat.assigned_fcurves(ad)
    own = {fc.data_path for fc in active} if active is not None else set()
    overlap = own & set(paths)
    full = ad.action_blend_type == "REPLACE" and ad.action_influence == 1.0
    if overlap and full:
        return _Destination("action", active)
    if overlap:
        raise BakeError(
            f"the active action of {obj.name!r} blends ({ad.action_blend_type}, influence "
            f"{ad.action_influence:g}) the baked channels over NLA strips; push it down to "
            "a strip or set it to Replace at full influence, then bake again")
    previous = (ad.action, ad.action_slot if compat.SLOTTED_ACTIONS else None)
    action = bpy.data.actions.new(f"{obj.name}LimberBake")
    ad.action = action
    fcurves = compat.ensure_fcurves(obj)
    slot = ad.action_slot if compat.SLOTTED_ACTIONS else None

    def finish(lo: float, hi: float) -> None:
        ad.action = previous[0]
        if previous[1] is not None:
            ad.action_slot = previous[1]
        track = ad.nla_tracks.new()
        track.name = "Limber bake"
        strip = track.strips.new(action.name, int(lo), action)
        if slot is not None and strip.action_slot != slot:
            strip.action_slot = slot
        strip.blend_type = "REPLACE"
        strip.extrapolation = "NOTHING"
        strip.influence = 1.0

    return _Destination("new NLA track", fcurves, None, finish)


def _playback_check(obj: Any, scene: Any, frames: list[int], worst: list[LimbStatus]) -> None:
    """Play the baked keys back (the first, middle and last frame, and each item's worst
    frame) and measure every item on the evaluated pose, one evaluation per frame for all
    of them. Where the keys do not give what was solved (something in the animation
    stack above them, a strip's influence, …) the item's status takes the measured miss."""
    data = obj.limber
    kinds = {"chain": data.chains, "body": data.bodies}
    items = [(st, kinds.get(st.kind, data.limbs).get(st.limb)) for st in worst if st.solved]
    items = [(st, it) for st, it in items if it is not None]
    if not items:
        return
    check = sorted({frames[0], frames[len(frames) // 2], frames[-1],
                    *(st.frame for st, _ in items if st.frame is not None)})
    for f in check:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        probes = [(LimbStatus(object=obj.name, limb=st.limb, kind=st.kind, solved=True,
                              frame=f), it) for st, it in items]
        solve.measure_statuses(obj, dg, probes)
        for (st, _), (probe, _) in zip(items, probes, strict=True):
            off = probe.position_error + probe.orientation_error
            if probe.reached or (not st.reached and
                                 off <= st.position_error + st.orientation_error):
                continue
            st.position_error, st.orientation_error = probe.position_error, probe.orientation_error
            st.reached, st.measured, st.frame = False, "depsgraph", f
            st.effectors = probe.effectors
            st.notes = [*st.notes, f"the baked keys play back off target at frame {f}"]
            st.message = verify.status_message(st)


def _worst(statuses: Sequence[list[LimbStatus]], frames: list[int]) -> list[LimbStatus]:
    """Per item (by kind and name), the status of its worst frame: unsolved or missed
    frames first, then the largest error (the first of equals); its message names the
    frame. A batched bake's rows are not made for it (:meth:`StatusRows.worst`)."""
    if isinstance(statuses, StatusRows):
        picked = statuses.worst()
    else:
        by: dict[tuple[str, str], LimbStatus] = {}
        for row in statuses:
            for st in row:
                key = (st.kind, st.limb)
                cur = by.get(key)
                rank = (st.solved, st.reached, -(st.position_error + st.orientation_error))
                if cur is None or rank < (cur.solved, cur.reached,
                                          -(cur.position_error + cur.orientation_error)):
                    by[key] = st
        picked = list(by.values())
    span = f"frames {frames[0]}–{frames[-1]}" if frames else ""
    out = []
    for worst in picked:
        st = replace(worst, notes=list(worst.notes), worst_of=span)
        out.append(st)
        if st.solved:
            st.message = verify.status_message(st)
        else:
            st.message = f"worst frame {st.frame} of {span}: {st.message}"
    return out


def _switch_samples(obj: Any, limbs: Sequence[str] | None, n: int
                    ) -> dict[tuple[str, str], FloatArray]:
    """The IK/FK switches Limber drives (generated Rigify rigs), at the limb's mode on
    every baked frame: the baked pose plays back whatever the switch was keyed to before."""
    from ..detect import RIGIFY_FK_VALUE, RIGIFY_SWITCH

    out: dict[tuple[str, str], FloatArray] = {}
    ad = obj.animation_data
    fcurves = compat.assigned_fcurves(ad) if ad is not None else None
    items = [(lb, rigify.switch_value(lb)) for lb in solve.pick_items(obj.limber.limbs, limbs)]
    items += [(p, RIGIFY_FK_VALUE) for b in solve.pick_items(obj.limber.bodies, None)
              for p in b.pins]  # a body drives the FK controls
    for lb, value in items:
        if lb.switch_bone and lb.switch_bone in obj.pose.bones:
            path = obj.pose.bones[lb.switch_bone].path_from_id(f'["{RIGIFY_SWITCH}"]')
            out[(path, lb.switch_bone)] = np.full((n, 1), value)
            if fcurves is None or fcurves.find(path) is None:
                lb.switch_keyed = True  # Limber's own F-curve: removed with the limb
    return out


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
    solve.forget_offsets(obj)
    try:
        items = batch_items(obj, limbs, chains) if batch else []
        batched = _bake_batched(obj, scene, frames, items, progress, fast) if items else None
        was_batched = batched is not None
        rest: list[str] = []
        statuses: Sequence[list[LimbStatus]]
        if batched is None:
            samples, statuses = _bake_per_frame(obj, scene, frames, limbs, chains, progress)
            was_fast = False
        else:
            samples, rows, was_fast, unproven = batched
            statuses = rows
            rest = list(unproven)
            if rest:  # limbs whose model is not proven: every frame checked on the pose
                # keys of an earlier bake on the baked bones are about to be replaced: set
                # them aside so that a frame change does not undo the pose written for it
                bones = [b for lb in items for b in (lb.upper_bone, lb.lower_bone,
                                                     lb.end_bone)]
                restore = _detach_replaced_animation(obj, bones)
                try:
                    if restore is None and _own_rotations_animated(obj, rest):
                        more, checked = _bake_per_frame(obj, scene, frames, rest, [],
                                                        progress)
                    else:
                        more, checked = _bake_checked(obj, scene, frames, unproven, progress)
                finally:
                    if restore is not None:
                        restore()
                samples.update(more)
                rows.add_rows(checked)
    finally:
        scene.limber.live_playback = live

    worst = _worst(statuses, frames)
    skipped = {st.limb: st.message for st in worst if not st.solved}
    fr = np.array(frames, dtype=np.float64)
    channels: dict[tuple[str, int], FloatArray] = {}
    keys = 0
    dest = _Destination("none")
    if samples:
        samples.update(_switch_samples(obj, limbs, len(frames)))
        dest = _destination(obj, [path for path, _ in samples])
        kf = fr if dest.time is None else dest.time(fr)
        if len(np.unique(np.round(kf, 4))) < len(kf):
            raise BakeError("the baked frames map onto the same frames of the tweaked "
                            "strip's action (the strip repeats within the range); bake "
                            "one repetition at a time")
        lo, hi = float(kf.min()), float(kf.max())
        for (path, bone), seq in samples.items():
            prev = _previous_key(dest.fcurves, path, seq.shape[1], lo)
            vals = _continuous(path, seq, prev)
            for idx in range(vals.shape[1]):
                fc = compat.ensure_fcurve(dest.fcurves, path, idx, bone)
                keys += write_keys(fc, kf, vals[:, idx], lo, hi)
                channels[(path, idx)] = vals[:, idx]
        if dest.finish is not None:
            dest.finish(lo, hi)
        scene.limber.live_playback = False
        try:
            _playback_check(obj, scene, frames, worst)
        finally:
            scene.limber.live_playback = live
    scene.frame_set(current)
    solve.store_statuses(obj, worst)
    return BakeResult(frames=frames, channels=channels, statuses=statuses, keys_written=keys,
                      batched=was_batched, fast=was_fast, skipped=skipped,
                      destination=dest.kind, worst=worst, checked=rest)
