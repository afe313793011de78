"""Translation hook: Limber's interface text goes through ``bpy.app.translations``.

Fixed labels (``layout.label(text=...)``, property names and descriptions, operator
labels) are translated by Blender itself; text built at run time goes through
:func:`iface_` (``pgettext_iface``) *before* its numbers are filled in, so the
translatable message is the template, e.g. ``iface_("out of reach by {:.1f} mm")``.

:data:`TRANSLATIONS` maps a locale to {(context, message): translation}; :func:`register`
hands it to Blender under the extension's package name and :func:`unregister` takes it
back (both may run repeatedly). Add a language by adding a locale here.
"""

from __future__ import annotations

from typing import Any

import bpy

#: The extension's package name (``bl_ext.<repository>.limber``), the translations' owner.
PACKAGE = (__package__ or "").removesuffix(".addon.ui")

_CTX = "*"  # Blender's default message context
# (typed as Any: the bpy stubs type the dict's keys and pgettext's result wrongly)
_translations: Any = bpy.app.translations

#: {locale: {(context, message): translation}}.
TRANSLATIONS: dict[str, dict[tuple[str, str], str]] = {
    "de_DE": {
        (_CTX, "reached"): "erreicht",
        (_CTX, "not reached"): "nicht erreicht",
        (_CTX, "within limits"): "innerhalb der Grenzen",
        (_CTX, "outside limits"): "außerhalb der Grenzen",
        (_CTX, "at limit: {}"): "an der Grenze: {}",
        (_CTX, "{:.0f} µs per solve"): "{:.0f} µs pro Lösung",
        (_CTX, "out of reach by {:.1f} mm"): "um {:.1f} mm nicht erreichbar",
        (_CTX, "orientation out of reach by {:.2f}°"): "Ausrichtung um {:.2f}° nicht erreichbar",
        (_CTX, "not solved yet (Solve or Live)"): "noch nicht gelöst (Lösen oder Live)",
        (_CTX, "no status yet (Solve, Live or Bake)"): "noch kein Status (Lösen, Live oder Backen)",
        (_CTX, "reached within {:.3f} mm and {:.3f}°"): "erreicht innerhalb {:.3f} mm und {:.3f}°",
        (_CTX, "Solve"): "Lösen",
        (_CTX, "Snap Swivel to FK"): "Schwenkwinkel an FK ausrichten",
        (_CTX, "Snap Target to FK"): "Ziel an FK ausrichten",
    },
}


def iface_(message: str) -> str:
    """``message`` translated for the interface (itself when no translation applies)."""
    return str(_translations.pgettext_iface(message))


def register() -> None:
    """Register :data:`TRANSLATIONS` under :data:`PACKAGE` (replacing an earlier one)."""
    unregister()
    _translations.register(PACKAGE, TRANSLATIONS)


def unregister() -> None:
    """Unregister :data:`TRANSLATIONS` (nothing when not registered)."""
    try:
        _translations.unregister(PACKAGE)
    except (ValueError, RuntimeError):
        pass
