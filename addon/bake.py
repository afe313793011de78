"""Baking solved limbs to rotation keys, in bulk.

Every frame of the range is solved with :func:`addon.solve.solve_object`; the written
rotations are collected in arrays and written per F-curve with ``keyframe_points.add`` +
``foreach_set`` (never one ``keyframe_insert`` per key). Keys outside the frame range are
kept; keys inside it on the baked channels are replaced. Blender ≥ 4.4 stores F-curves in
the channelbag of the action slot the armature uses; Blender 4.2/4.3 in ``action.fcurves``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from .solve import LimbStatus, solve_object

SLOTTED_ACTIONS = bpy.app.version >= (4, 4, 0)
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


def _fcurves(obj: Any) -> Any:
    """The F-curve collection the armature's animation lives in (created if needed)."""
    ad = obj.animation_data or obj.animation_data_create()
    action = ad.action
    if action is None:
        action = bpy.data.actions.new(f"{obj.name}Action")
        ad.action = action
    if not SLOTTED_ACTIONS:
        return action.fcurves
    slot = ad.action_slot
    if slot is None:
        slot = action.slots.new(id_type="OBJECT", name=obj.name)
        ad.action_slot = slot
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True).fcurves


def _ensure_fcurve(fcurves: Any, path: str, index: int, group: str) -> Any:
    fc = fcurves.find(path, index=index)
    if fc is not None:
        return fc
    if SLOTTED_ACTIONS:
        return fcurves.new(path, index=index, group_name=group)
    return fcurves.new(path, index=index, action_group=group)


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
        for name, width, dtype in _KEY_ATTRS:
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
    if n_keep:
        for name, width, dtype in _KEY_ATTRS[1:]:
            buf = np.empty(width * (n_keep + n_new), dtype=dtype)
            points.foreach_get(name, buf)  # defaults for the new keys
            buf[: width * n_keep] = kept[name]
            points.foreach_set(name, buf)
    # New keys: handles at the key (recomputed by update() for the default auto handles).
    hl = np.empty(2 * (n_keep + n_new), dtype=np.float32)
    points.foreach_get("handle_left", hl)
    hl[2 * n_keep :] = new_co.ravel()
    points.foreach_set("handle_left", hl)
    points.foreach_get("handle_right", hl)
    hl[2 * n_keep :] = new_co.ravel()
    points.foreach_set("handle_right", hl)
    fc.update()
    return n_new


def _continuous(path: str, values: np.ndarray) -> np.ndarray:
    """Make per-frame rotation values continuous (quaternion sign, Euler 2π unwrapping)."""
    if path.endswith("rotation_quaternion"):
        q = values.copy()
        for i in range(1, len(q)):
            if float(np.dot(q[i], q[i - 1])) < 0.0:
                q[i] = -q[i]
        return q
    if path.endswith("rotation_euler"):
        out: np.ndarray = np.unwrap(values, axis=0, period=2.0 * math.pi)
        return out
    return values


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
) -> BakeResult:
    """Solve every ``step``-th frame of [start, end] and key the solved bones' rotations.

    ``limbs`` / ``chains``: names to solve (None: every enabled one). Chains are solved
    from the previous frame's pose (numeric solvers are warm-started), limbs state-free.
    """
    if frame_end < frame_start:
        raise ValueError(f"frame_end {frame_end} < frame_start {frame_start}")
    if step < 1:
        raise ValueError(f"step must be >= 1, got {step}")
    frames = list(range(frame_start, frame_end + 1, step))
    live = scene.limber.live_playback
    scene.limber.live_playback = False  # the bake solves each frame itself
    samples: dict[tuple[str, str], list[tuple[float, ...]]] = {}
    groups: dict[str, str] = {}
    statuses: list[list[LimbStatus]] = []
    current = scene.frame_current
    try:
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
                    groups[path] = bone
            if progress is not None:
                progress(i)
    finally:
        scene.limber.live_playback = live
    fr = np.array(frames, dtype=np.float64)
    channels: dict[tuple[str, int], np.ndarray] = {}
    keys = 0
    fcurves = _fcurves(obj) if samples else None
    for (path, bone), seq in samples.items():
        if len(seq) < len(frames):
            seq.extend([seq[-1]] * (len(frames) - len(seq)))
        vals = _continuous(path, np.array(seq, dtype=np.float64))
        for idx in range(vals.shape[1]):
            fc = _ensure_fcurve(fcurves, path, idx, bone)
            keys += write_keys(fc, fr, vals[:, idx], frame_start, frame_end)
            channels[(path, idx)] = vals[:, idx]
    scene.frame_set(current)
    return BakeResult(frames=frames, channels=channels, statuses=statuses, keys_written=keys)
