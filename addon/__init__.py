"""Blender-facing layer of Limber (properties, operators, handlers).

Classes listed in :data:`CLASSES` are registered in order and unregistered in reverse
order; ``register()``/``unregister()`` may be called repeatedly. The folders are the road
a solve takes:

* :mod:`.bridge` — Blender ↔ core: :mod:`~.bridge.rig` (bones → core limbs and chains),
  :mod:`~.bridge.read` (the evaluated pose → arrays), :mod:`~.bridge.requests` (→ core
  requests), :mod:`~.bridge.write` (solutions → rotation values), :mod:`~.bridge.verify`
  (the evaluated pose against the goal → the status).
* :mod:`.run` — :mod:`~.run.solve` (one frame), :mod:`~.run.bake` (a range to keys),
  :mod:`~.run.live` (``limber.live``), :mod:`~.run.handlers` (live playback).
* :mod:`.ui` — :mod:`~.ui.panels`, :mod:`~.ui.operators`, :mod:`~.ui.overlay`,
  :mod:`~.ui.cli`.
* :mod:`.props` (``Object.limber`` / ``Scene.limber`` settings, each limb's, chain's and
  effector's ``status``), :mod:`.detect` (limbs by bone names), :mod:`.compat` (Blender
  version differences).
"""

from __future__ import annotations

import bpy

from . import props
from .run import handlers, live, solve
from .ui import cli, operators, overlay, panels

CLASSES: tuple[type, ...] = props.CLASSES + operators.CLASSES + live.CLASSES + panels.CLASSES


def register() -> None:
    """Register :data:`CLASSES` in declaration order, then properties and handlers."""
    for cls in CLASSES:
        if getattr(cls, "is_registered", False):
            bpy.utils.unregister_class(cls)
        bpy.utils.register_class(cls)
    props.attach()
    panels.attach()
    overlay.register()
    handlers.add_handlers()
    cli.register()


def unregister() -> None:
    """Remove handlers and properties, then unregister :data:`CLASSES` in reverse order."""
    cli.unregister()
    handlers.remove_handlers()
    live.unregister()
    overlay.unregister()
    panels.detach()
    props.detach()
    for cls in reversed(CLASSES):
        if getattr(cls, "is_registered", False):
            bpy.utils.unregister_class(cls)
    solve.clear_caches()
