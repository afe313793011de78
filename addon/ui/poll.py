"""When Limber's operators can run: the ``poll()`` every operator calls.

Where the user clicks or presses a key — a 3D View (the sidebar's buttons, the Pose-mode
keys, F3 search there) — an operator needs the active object to be an armature in Pose or
Object mode, with the Limber data it acts on (:class:`Needs`); otherwise it is greyed out
and the tooltip says why (:func:`.compat.poll_message_set`).

Everywhere else (scripts, the ``bpy`` module, ``blender --background``, the CLI, the
Python console) there is no 3D View in the context and the operator acts on the armature
named by its ``armature`` property, which ``poll()`` cannot see: there it always passes and
``execute()`` checks the named armature and reports (an error in scripts) why it cannot
run. So ``bpy.ops.limber.bake(armature="metarig", ...)`` works headless whatever is active.
"""

from __future__ import annotations

import enum
from typing import Any

from .. import compat
from .translations import iface_

#: Modes an operator runs in (the Limber panel shows in these too).
MODES = ("POSE", "OBJECT")


class Needs(enum.Enum):
    """What of the active armature an operator acts on."""

    ARMATURE = "armature"  # any armature (detect, add)
    LIMBS = "limbs"  # at least one limb (snap, remove limb)
    CHAINS = "chains"  # at least one chain (remove chain)
    ENABLED = "enabled"  # an enabled limb, chain or body (solve, bake, live)
    BODIES = "bodies"  # at least one body (remove body)


def poll_reason(context: Any, needs: Needs) -> str | None:
    """None when an operator needing ``needs`` can run in ``context``, else why not."""
    area = getattr(context, "area", None)
    if area is None or area.type != "VIEW_3D":
        return None  # scripts, CLI, console: execute() checks the named armature
    obj = getattr(context, "active_object", None)
    if obj is None or obj.type != "ARMATURE" or not hasattr(obj, "limber"):
        return iface_("The active object is not an armature")
    if context.mode not in MODES:
        return iface_("Switch to Pose or Object mode")
    data = obj.limber
    if needs is Needs.LIMBS and not len(data.limbs):
        return iface_("The armature has no Limber limbs: add or detect one first")
    if needs is Needs.CHAINS and not len(data.chains):
        return iface_("The armature has no Limber chains: add one first")
    if needs is Needs.BODIES and not len(data.bodies):
        return iface_("The armature has no Limber body: add one first")
    if needs is Needs.ENABLED and not any(
        it.enabled for items in (data.limbs, data.chains, data.bodies) for it in items
    ):
        return iface_("The armature has no enabled Limber limb or chain")
    return None


def check(cls: Any, context: Any, needs: Needs) -> bool:
    """``poll()`` body: whether ``cls`` can run; if not, set the reason shown greyed out."""
    why = poll_reason(context, needs)
    if why is not None:
        compat.poll_message_set(cls, why)
    return why is None
