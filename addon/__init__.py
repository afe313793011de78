"""Blender-facing layer of Limber (operators, panels, properties).

Thin for now: classes listed in :data:`CLASSES` are registered in order and unregistered
in reverse order. ``register()``/``unregister()`` may be called repeatedly.
"""

from __future__ import annotations

import bpy

CLASSES: tuple[type, ...] = ()


def register() -> None:
    """Register :data:`CLASSES` in declaration order."""
    for cls in CLASSES:
        bpy.utils.register_class(cls)


def unregister() -> None:
    """Unregister :data:`CLASSES` in reverse order, tolerating ones not registered."""
    for cls in reversed(CLASSES):
        if getattr(cls, "is_registered", False):
            bpy.utils.unregister_class(cls)
