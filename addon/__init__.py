"""Blender-facing layer of Limber (properties, operators, handlers).

Classes listed in :data:`CLASSES` are registered in order and unregistered in reverse
order; ``register()``/``unregister()`` may be called repeatedly. The folders are the road
a solve takes:

* :mod:`.bridge` — Blender ↔ core: :mod:`~.bridge.rig` (bones → core limbs and chains),
  :mod:`~.bridge.body` (bones → a core body), :mod:`~.bridge.read` (the evaluated pose →
  arrays), :mod:`~.bridge.requests` (→ core requests), :mod:`~.bridge.write` (solutions →
  rotation values), :mod:`~.bridge.verify` (the evaluated pose against the goal → the
  status).
* :mod:`.run` — :mod:`~.run.solve` (one frame), :mod:`~.run.body` (a full body's frame),
  :mod:`~.run.bake` (a range to keys), :mod:`~.run.live` (``limber.live``),
  :mod:`~.run.handlers` (live playback).
* :mod:`.ui` — :mod:`~.ui.panels`, :mod:`~.ui.operators`, :mod:`~.ui.body` (the body's
  operators and panel), :mod:`~.ui.overlay`, :mod:`~.ui.cli`, :mod:`~.ui.preferences`,
  :mod:`~.ui.keymap`, :mod:`~.ui.translations`.
* :mod:`.props` (``Object.limber`` / ``Scene.limber`` settings, each limb's, chain's,
  effector's, body's and pin's ``status``), :mod:`.detect` (limbs by bone names),
  :mod:`.detect_body` (root, spine, head), :mod:`.compat` (Blender version differences).
"""

from __future__ import annotations

import bpy

from . import props
from .run import handlers, live, solve
from .ui import body, cli, keymap, operators, overlay, panels, preferences, translations

CLASSES: tuple[type, ...] = (
    props.CLASSES + operators.CLASSES + live.CLASSES + panels.CLASSES + body.CLASSES
    + preferences.CLASSES
)


def register() -> None:
    """Register translations, :data:`CLASSES` in declaration order, then properties,
    handlers and the Pose-mode keys."""
    translations.register()
    for cls in CLASSES:
        if getattr(cls, "is_registered", False):
            bpy.utils.unregister_class(cls)
        bpy.utils.register_class(cls)
    props.attach()
    panels.attach()
    overlay.register()
    handlers.add_handlers()
    cli.register()
    keymap.register()


def unregister() -> None:
    """Remove keys, handlers and properties, unregister :data:`CLASSES` in reverse order,
    then the translations."""
    keymap.unregister()
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
    translations.unregister()
