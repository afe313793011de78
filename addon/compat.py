"""Differences between the Blender versions Limber supports (4.2 LTS to the newest 5.x).

Every version test of the add-on lives here, so that the rest of ``addon/`` and the tests
read and write animation and selection one way. What differs:

* **Slotted actions** (4.4+): an action's F-curves live in the *channelbag* of an action
  slot (``action.layers[i].strips[j].channelbag(slot)``); the object plays the slot
  ``AnimData.action_slot``. Before 4.4 they are ``Action.fcurves`` (kept as a legacy
  alias for the first slot in 4.4/4.5, removed in 5.0).
* **F-curve groups**: ``Action.fcurves.new(..., action_group=)`` before 4.4; the
  channelbag's ``fcurves.new`` takes ``group_name=`` only from 5.0 — in 4.4/4.5 the group
  is created in ``channelbag.groups`` and assigned to ``FCurve.group``.
* ``bpy_extras.anim_utils.animdata_get_channelbag_for_assigned_slot`` exists only from
  5.0: :func:`assigned_fcurves` is the version-independent read.
* **Bone selection**: ``PoseBone.select`` from 5.0; ``PoseBone.bone.select`` before.
* **Buffer protocol of mathutils** (``memoryview(matrix)``): not in 4.2; there the same
  float32 values are read item by item (:func:`float32_bytes`, :func:`matrix_rows`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

import bpy
import mathutils

#: Blender ≥ 4.4: actions hold F-curves per slot in channelbags.
SLOTTED_ACTIONS: bool = bpy.app.version >= (4, 4, 0)
#: Blender ≥ 5.0: ``ActionChannelbagFCurves.new`` takes ``group_name``.
FCURVES_NEW_GROUP_NAME: bool = bpy.app.version >= (5, 0, 0)
#: Blender ≥ 5.0: the selection state lives on the pose bone (``PoseBone.select``).
POSE_BONE_SELECT: bool = "select" in bpy.types.PoseBone.bl_rna.properties


def _mathutils_buffer() -> bool:
    try:
        memoryview(mathutils.Vector((0.0, 0.0, 0.0)))  # type: ignore[arg-type]
    except TypeError:
        return False
    return True


#: mathutils matrices and vectors expose their float32 values as a buffer (not in 4.2).
MATHUTILS_BUFFER: bool = _mathutils_buffer()


def float32_bytes(m: Any) -> bytes:
    """The float32 values of a mathutils matrix (row by row) or vector, as Blender stores
    them: the same bytes with or without the buffer protocol."""
    if MATHUTILS_BUFFER:
        return memoryview(m).tobytes()
    rows: Any = m
    flat = [x for row in rows for x in row] if isinstance(m, mathutils.Matrix) else list(m)
    return array("f", flat).tobytes()


def matrix_rows(m: Any) -> list[list[float]]:
    """A mathutils matrix's rows as lists of Python floats."""
    if MATHUTILS_BUFFER:
        rows: list[list[float]] = memoryview(m).tolist()  # type: ignore[assignment]
        return rows
    return [list(row) for row in m]


def channelbags(action: Any, slot: Any) -> Iterator[Any]:
    """The channelbags of ``slot`` in every layer and strip of ``action`` (≥ 4.4 only)."""
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot)
            if bag is not None:
                yield bag


def assigned_fcurves(anim_data: Any) -> Any | None:
    """The F-curve collection of the action (and, from 4.4, the slot) ``anim_data`` plays,
    or None when no action, no slot or no channelbag is assigned. From 4.4 this is the
    first channelbag of the slot (Limber's bakes and Blender's own keying write one layer,
    one strip)."""
    if anim_data is None or anim_data.action is None:
        return None
    if not SLOTTED_ACTIONS:
        return anim_data.action.fcurves
    if anim_data.action_slot is None:
        return None
    bag = next(channelbags(anim_data.action, anim_data.action_slot), None)
    return None if bag is None else bag.fcurves


def action_fcurves(anim_data: Any) -> list[Any]:
    """Every F-curve of the action (from 4.4: of the assigned slot, in all its layers and
    strips) that ``anim_data`` plays; [] when none."""
    if anim_data is None or anim_data.action is None:
        return []
    if not SLOTTED_ACTIONS:
        return list(anim_data.action.fcurves)
    if anim_data.action_slot is None:
        return []
    return [fc for bag in channelbags(anim_data.action, anim_data.action_slot)
            for fc in bag.fcurves]


def ensure_fcurves(obj: Any) -> Any:
    """The F-curve collection ``obj``'s animation lives in: its action's (before 4.4) or its
    action slot's channelbag's, each created if needed (action ``<name>Action``, a slot
    named after the object, layer ``Layer``, one keyframe strip)."""
    ad = obj.animation_data or obj.animation_data_create()
    action = ad.action
    if action is None:
        action = bpy.data.actions.new(f"{obj.name}Action")
        ad.action = action
    if not SLOTTED_ACTIONS:
        return action.fcurves
    slot = ad.action_slot
    if slot is None:
        slot = action.slots.new(id_type=obj.id_type, name=obj.name)
        ad.action_slot = slot
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type="KEYFRAME")
    return strip.channelbag(slot, ensure=True).fcurves


def ensure_fcurve(fcurves: Any, data_path: str, index: int, group: str) -> Any:
    """The F-curve (``data_path``, ``index``) of ``fcurves`` (from :func:`ensure_fcurves` or
    :func:`assigned_fcurves`), created in the group named ``group`` if missing."""
    fc = fcurves.find(data_path, index=index)
    if fc is not None:
        return fc
    if not SLOTTED_ACTIONS:
        return fcurves.new(data_path, index=index, action_group=group)
    if FCURVES_NEW_GROUP_NAME:
        return fcurves.new(data_path, index=index, group_name=group)
    fc = fcurves.new(data_path, index=index)
    bag = fcurves.data  # the channelbag owning the collection
    fc.group = bag.groups.get(group) or bag.groups.new(group)
    return fc


def bone_selected(pose_bone: Any) -> bool:
    """Whether the pose bone is selected."""
    if POSE_BONE_SELECT:
        return bool(pose_bone.select)
    return bool(pose_bone.bone.select)


def set_bone_selected(pose_bone: Any, value: bool) -> None:
    """Select (True) or deselect (False) the pose bone."""
    if POSE_BONE_SELECT:
        pose_bone.select = value
    else:
        pose_bone.bone.select = value


def poll_message_set(cls: Any, message: str) -> None:
    """Show ``message`` as the reason an operator is greyed out
    (``Operator.poll_message_set``, Blender ≥ 3.0; a no-op where absent)."""
    fn = getattr(cls, "poll_message_set", None)
    if fn is not None:
        fn(message)
