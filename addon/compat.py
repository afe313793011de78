"""Version differences of the Blender API in one place (this copy: Blender 4.2 – 5.0).

* :data:`SLOTTED_ACTIONS` — actions have slots and layered channelbags (Blender ≥ 4.4).
* :func:`ensure_fcurves` / :func:`ensure_fcurve` / :func:`assigned_fcurves` — the F-curves
  of an object's assigned action (its slot's channelbag on ≥ 4.4).
* :func:`bone_selected` / :func:`set_bone_selected` — a pose bone's selection.
"""

from __future__ import annotations

from typing import Any

import bpy

SLOTTED_ACTIONS: bool = bpy.app.version >= (4, 4, 0)


def ensure_fcurves(obj: Any) -> Any:
    """The F-curve collection of ``obj``'s action (and slot), created if needed."""
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


def ensure_fcurve(fcurves: Any, data_path: str, index: int, group: str) -> Any:
    """The F-curve ``data_path[index]`` of ``fcurves``, created in ``group`` if absent."""
    fc = fcurves.find(data_path, index=index)
    if fc is not None:
        return fc
    if SLOTTED_ACTIONS:
        return fcurves.new(data_path, index=index, group_name=group)
    return fcurves.new(data_path, index=index, action_group=group)


def assigned_fcurves(anim_data: Any) -> Any:
    """The F-curves of the action (and slot) assigned to ``anim_data``, or None."""
    if anim_data is None or anim_data.action is None:
        return None
    action = anim_data.action
    if not SLOTTED_ACTIONS:
        return action.fcurves
    slot = anim_data.action_slot
    if slot is None:
        return None
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot)
            if bag is not None:
                return bag.fcurves
    return None


def bone_selected(pose_bone: Any) -> bool:
    """Whether a pose bone is selected."""
    sel = getattr(pose_bone, "select", None)
    return bool(pose_bone.bone.select if sel is None else sel)


def set_bone_selected(pose_bone: Any, value: bool) -> None:
    """Select or deselect a pose bone."""
    if hasattr(pose_bone, "select"):
        pose_bone.select = value
    else:
        pose_bone.bone.select = value
