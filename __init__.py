"""Limber: analytic and numeric inverse kinematics for Blender.

This is the extension's entry point. It deliberately imports nothing from Blender at
module level: ``bpy`` is only touched inside :func:`register` / :func:`unregister`, via the
lazily imported :mod:`addon` sub-package, so the numpy-only :mod:`core` package stays
importable (and testable) without Blender.
"""

from __future__ import annotations


def register() -> None:
    """Register all Blender classes of the extension."""
    from . import addon

    addon.register()


def unregister() -> None:
    """Unregister all Blender classes of the extension."""
    from . import addon

    addon.unregister()
