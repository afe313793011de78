"""Blender-facing layer of Limber (properties, operators, handlers).

Classes listed in :data:`CLASSES` are registered in order and unregistered in reverse
order; ``register()``/``unregister()`` may be called repeatedly. Modules:

* :mod:`.mapping` — pose bones ↔ :class:`core.Limb`, targets, writing rotations.
* :mod:`.props` — ``Object.limber`` / ``Scene.limber`` settings.
* :mod:`.solve` — :func:`~.solve.solve_object`, the per-frame work; live-playback handler.
* :mod:`.bake` — baking to keys in bulk. :mod:`.detect` — limb detection by bone names.
* :mod:`.operators` — the ``limber.*`` operators. :mod:`.cli` — ``blender -c limber``.
* :mod:`.live` — ``limber.live``. :mod:`.ui` — the sidebar panels. :mod:`.overlay` — the
  viewport overlay of the active limb's swivel circle.
"""

from __future__ import annotations

import bpy

from . import cli, live, operators, overlay, props, solve, ui

CLASSES: tuple[type, ...] = props.CLASSES + operators.CLASSES + live.CLASSES + ui.CLASSES


def register() -> None:
    """Register :data:`CLASSES` in declaration order, then properties and handlers."""
    for cls in CLASSES:
        if getattr(cls, "is_registered", False):
            bpy.utils.unregister_class(cls)
        bpy.utils.register_class(cls)
    props.attach()
    ui.attach()
    overlay.register()
    solve.add_handlers()
    cli.register()


def unregister() -> None:
    """Remove handlers and properties, then unregister :data:`CLASSES` in reverse order."""
    cli.unregister()
    solve.remove_handlers()
    live.unregister()
    overlay.unregister()
    ui.detach()
    props.detach()
    for cls in reversed(CLASSES):
        if getattr(cls, "is_registered", False):
            bpy.utils.unregister_class(cls)
    solve.clear_caches()
