"""Translation hook: Limber's interface text goes through ``bpy.app.translations``.

Fixed labels (``layout.label(text=...)``, property names and descriptions, operator
labels) are translated by Blender itself; text built at run time goes through
:func:`iface_` (``pgettext_iface``) *before* its numbers are filled in, so the
translatable message is the template, e.g. ``iface_("out of reach by {:.1f} mm")``;
operator reports likewise go through :func:`rpt_` (``pgettext_rpt``). Every template
passed to either has an entry in each locale of :data:`TRANSLATIONS` (a test checks).

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
        # panel text built at run time (panels.py)
        (_CTX, "{} limit"): "Grenze {}",
        (_CTX, "{} limits"): "Grenzen {}",
        (_CTX, "no feasible swivel"): "kein möglicher Schwenkwinkel",
        (_CTX, "no feasible swivel: {}"): "kein möglicher Schwenkwinkel: {}",
        (_CTX, "feasible: any swivel"): "möglich: jeder Schwenkwinkel",
        (_CTX, "feasible {}"): "möglich {}",
        (_CTX, "not solved"): "nicht gelöst",
        (_CTX, "outside limits: {}"): "außerhalb der Grenzen: {}",
        (_CTX, "error {:.3f} mm, {:.3f}°"): "Fehler {:.3f} mm, {:.3f}°",
        (_CTX, "error {:.3f} mm, {:.3f}°, measured"): "Fehler {:.3f} mm, {:.3f}°, gemessen",
        (_CTX, "{}: {} iterations"): "{}: {} Iterationen",
        (_CTX, "IK/FK switch of {}: {} while Limber drives the limb (restored on removal)"):
            "IK/FK-Schalter von {}: {}, solange Limber die Gliedmaße steuert "
            "(beim Entfernen wiederhergestellt)",
        (_CTX, "measured on the evaluated pose"): "an der ausgewerteten Pose gemessen",
        (_CTX, "proven model"): "bewiesenes Modell",
        (_CTX, "frame {}: {:.3f} mm, {:.3f}° ({})"): "Bild {}: {:.3f} mm, {:.3f}° ({})",
        (_CTX, "Hinge axis cannot be found: {}"): "Gelenkachse nicht bestimmbar: {}",
        (_CTX, "Hinge ({}): {}"): "Gelenk ({}): {}",
        # hinge sources (bridge.rig.HINGE_SOURCES), shown in "Hinge (...): <source>"
        (_CTX, "chosen axis"): "gewählte Achse",
        (_CTX, "custom axis"): "eigene Achse",
        (_CTX, "IK locks"): "IK-Sperren",
        (_CTX, "rest bend"): "Beugung in Ruhelage",
        (_CTX, "bent pose"): "gebeugte Pose",
        (_CTX, "bent pose in the animation"): "gebeugte Pose in der Animation",
        (_CTX, "default +X (straight rest, no bent pose: set Hinge Axis)"):
            "Standard +X (gestreckte Ruhelage, keine gebeugte Pose: Gelenkachse setzen)",
        # operator reports (operators.py)
        (_CTX, "Limber: {}"): "Limber: {}",
        (_CTX, "Limber: {}: {}"): "Limber: {}: {}",
        (_CTX, "Limber: {!r} is not an armature object"): "Limber: {!r} ist kein Armature-Objekt",
        (_CTX, "Limber: no limb {!r} on {!r}"): "Limber: keine Gliedmaße {!r} an {!r}",
        (_CTX, "Limber: no arms or legs recognised in {!r}: {}"):
            "Limber: keine Arme oder Beine in {!r} erkannt: {}",
        (_CTX, "Limber: bone {!r} needs a parent and a grandparent to be a limb"):
            "Limber: Knochen {!r} braucht ein Eltern- und ein Großelternteil, um eine "
            "Gliedmaße zu sein",
        (_CTX, "Limber: {}; map the unsegmented (ORG- or FK) bones instead"):
            "Limber: {}; stattdessen die nicht segmentierten (ORG- oder FK-) Knochen zuordnen",
        (_CTX, "Limber: no limb at index {}"): "Limber: keine Gliedmaße an Index {}",
        (_CTX, "Limber: no chain at index {}"): "Limber: keine Kette an Index {}",
        (_CTX, "Limber: {!r} has no enabled limbs or chains"):
            "Limber: {!r} hat keine aktivierten Gliedmaßen oder Ketten",
        (_CTX, "Limber: the end frame is before the start frame"):
            "Limber: das Endbild liegt vor dem Startbild",
        (_CTX, "Limber: {} skipped: {}"): "Limber: {} übersprungen: {}",
        (_CTX, "Limber: nothing baked on {!r} (0 keys)"):
            "Limber: nichts auf {!r} gebacken (0 Schlüssel)",
        (_CTX, "Limber: baked {} frames, {} keys into the {}"):
            "Limber: {} Bilder, {} Schlüssel gebacken in {}",
        (_CTX, "Limber: the FK elbow is off the hinge circle (the lower bone turns about more "
               "than its hinge axis); IK will move it by: {}"):
            "Limber: der FK-Ellbogen liegt neben dem Gelenkkreis (der untere Knochen dreht "
            "sich um mehr als seine Gelenkachse); IK verschiebt ihn um: {}",
    },
}


def iface_(message: str) -> str:
    """``message`` translated for the interface (itself when no translation applies)."""
    return str(_translations.pgettext_iface(message))


def rpt_(message: str) -> str:
    """``message`` translated for an operator report (``pgettext_rpt``)."""
    return str(_translations.pgettext_rpt(message))


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
