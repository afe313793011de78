"""Limber's shortcuts in Pose mode (the add-on key configuration's "Pose" keymap).

:data:`KEYS` lists them; :func:`register` adds each whose operator is registered and
:func:`unregister` removes exactly those, so both can run repeatedly. The preferences page
lists them with :func:`draw_keymap` (editable there, as Blender's own keymap editor
edits them); :func:`keymap_rows` is the same list as text.

Operators called from a key act on the active armature (their ``armature`` property is
left empty), and their ``poll()`` greys them out elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy

from .translations import iface_

#: The keymap Limber's keys live in (Pose mode, any editor).
KEYMAP_NAME = "Pose"


@dataclass(frozen=True)
class KeySpec:
    """One shortcut: operator id, what it does, the key and its modifiers."""

    idname: str
    label: str
    key: str
    shift: bool = True
    ctrl: bool = False
    alt: bool = True


KEYS: tuple[KeySpec, ...] = (
    KeySpec("limber.solve", "Solve", "I"),
    KeySpec("limber.live", "Live IK (Enter keeps, Esc restores)", "L"),
    # IK <-> FK snapping
    KeySpec("limber.snap_swivel", "Snap Swivel to FK", "W"),
    KeySpec("limber.snap_target", "Snap Target to FK", "T"),
    # Registered only where the operator exists.
    KeySpec("limber.snap_pole", "Snap Pole to FK", "P"),
)

#: (keymap, keymap item) pairs this module added.
_ITEMS: list[tuple[Any, Any]] = []


def operator_exists(idname: str) -> bool:
    """Whether ``bpy.ops.<idname>`` is a registered operator."""
    mod, name = idname.split(".")
    try:
        getattr(getattr(bpy.ops, mod), name).get_rna_type()
    except (AttributeError, KeyError):
        return False
    return True


def register() -> None:
    """Add :data:`KEYS` (those whose operator exists) to the add-on key configuration's
    Pose keymap; nothing when there is no add-on key configuration."""
    unregister()
    wm = bpy.context.window_manager
    kc = None if wm is None else wm.keyconfigs.addon
    if kc is None:
        return
    km = kc.keymaps.new(name=KEYMAP_NAME, space_type="EMPTY")
    for spec in KEYS:
        if not operator_exists(spec.idname):
            continue
        kmi = km.keymap_items.new(spec.idname, spec.key, "PRESS",  # type: ignore[arg-type]
                                  shift=spec.shift, ctrl=spec.ctrl, alt=spec.alt)
        _ITEMS.append((km, kmi))


def unregister() -> None:
    """Remove the keymap items :func:`register` added."""
    while _ITEMS:
        km, kmi = _ITEMS.pop()
        try:
            km.keymap_items.remove(kmi)
        except (ReferenceError, RuntimeError):  # the key configuration was reset
            pass


def _user_item(context: Any, idname: str) -> Any | None:
    """The user key configuration's item for ``idname`` (where edits are stored), else the
    add-on configuration's."""
    for kc in (context.window_manager.keyconfigs.user, context.window_manager.keyconfigs.addon):
        km = None if kc is None else kc.keymaps.get(KEYMAP_NAME)
        if km is None:
            continue
        for kmi in km.keymap_items:
            if kmi.idname == idname:
                return kmi
    return None


def keymap_rows(context: Any = None) -> list[tuple[str, str, str]]:
    """(label, operator id, key as text) of every registered shortcut."""
    ctx = context if context is not None else bpy.context
    rows = []
    for spec in KEYS:
        kmi = _user_item(ctx, spec.idname)
        if kmi is not None:
            rows.append((iface_(spec.label), spec.idname, kmi.to_string()))
    return rows


def draw_keymap(layout: Any, context: Any) -> None:
    """One row per shortcut: on/off, what it does, the key (editable)."""
    col = layout.column(align=True)
    for spec in KEYS:
        kmi = _user_item(context, spec.idname)
        if kmi is None:
            continue
        row = col.row(align=True)
        row.prop(kmi, "active", text="")
        row.label(text=spec.label)
        row.prop(kmi, "type", text="", full_event=True)
