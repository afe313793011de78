"""Handlers: live playback after each frame change, cache reset after loading a file.

:func:`on_frame_change_post` runs the same pipeline as ``limber.solve``
(:func:`.solve.solve_object`) for every armature with limbs or chains, so scrubbing and
playback show the IK result and each item's ``status`` describes the current frame.
"""

from __future__ import annotations

from typing import Any

import bpy
from bpy.app.handlers import persistent

from ..bridge.rig import MappingError
from .solve import clear_caches, solve_object


@persistent  # type: ignore[untyped-decorator]
def on_frame_change_post(scene: Any, depsgraph: Any = None) -> None:
    """Live playback: solve the enabled bodies, chains and limbs of every armature in the scene
    after a frame change."""
    settings = getattr(scene, "limber", None)
    if settings is None or not settings.live_playback:
        return
    for obj in scene.objects:
        if obj.type != "ARMATURE":
            continue
        data = getattr(obj, "limber", None)
        if data is None or not (len(data.limbs) or len(data.chains) or len(data.bodies)):
            continue
        try:
            solve_object(obj, depsgraph)
        except MappingError as exc:  # a bad armature must not break playback
            print(f"Limber: {exc}")


@persistent  # type: ignore[untyped-decorator]
def on_load_post(*_args: Any) -> None:
    clear_caches()


HANDLERS: tuple[tuple[str, Any], ...] = (
    ("frame_change_post", on_frame_change_post),
    ("load_post", on_load_post),
)


def add_handlers() -> None:
    """Append :data:`HANDLERS` (once: older copies are dropped first)."""
    for attr, fn in HANDLERS:
        _drop(attr, fn)
        getattr(bpy.app.handlers, attr).append(fn)


def remove_handlers() -> None:
    """Remove :data:`HANDLERS` (and copies from a reloaded module)."""
    for attr, fn in HANDLERS:
        _drop(attr, fn)


def _drop(attr: str, fn: Any) -> None:
    """Remove ``fn`` from a handler list, matched by name and module: a reloaded module
    defines a new function object, so older copies are found by name."""
    lst = getattr(bpy.app.handlers, attr)
    for h in [h for h in lst if getattr(h, "__name__", "") == fn.__name__
              and getattr(h, "__module__", "") == fn.__module__]:
        lst.remove(h)
