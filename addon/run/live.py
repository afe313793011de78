"""``limber.live``: solve the enabled limbs live while targets, poles or swivels change.

Interactive use (a window with events): ``invoke`` captures the armature's pose, then the
modal loop re-solves whenever :func:`input_signature` changes — checked after each
depsgraph update (so also while another tool, e.g. grab, moves a target) and on every
timer tick — writes the pose and shows the status in the area header and the status
bar. Esc or right-click ends it and restores the captured pose exactly
(:func:`restore_pose`); Enter keeps the result as one undo step. Other events pass
through, so targets can be moved with the usual tools meanwhile.

Headless (the ``bpy`` module: no events, ``INVOKE_DEFAULT`` runs ``execute()``) the
operator solves once. Everything but the event plumbing is plain and tested directly:
:class:`LiveSession` (capture, solve-on-change, restore, status text),
:func:`event_action` (the key map), :func:`input_signature`, :func:`capture_pose` /
:func:`restore_pose`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import bpy
from bpy.props import FloatProperty, StringProperty

from ..bridge.rig import MappingError
from ..ui.operators import OperatorResult
from ..ui.poll import Needs, check
from . import solve

_ROT_PROPS = ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")


@dataclass(frozen=True)
class PoseSnapshot:
    """Every pose bone's local transform channels, as stored (Blender's float32 values).

    ``bones``: {bone name: (rotation_mode, location, quaternion, euler, axis-angle,
    scale)}.
    """

    object: str
    bones: dict[str, tuple[Any, ...]]


def capture_pose(obj: Any) -> PoseSnapshot:
    """Snapshot of an armature's pose bones (everything :func:`restore_pose` writes back)."""
    bones = {}
    for pb in obj.pose.bones:
        bones[pb.name] = (
            pb.rotation_mode,
            tuple(pb.location),
            tuple(pb.rotation_quaternion),
            tuple(pb.rotation_euler),
            tuple(pb.rotation_axis_angle),
            tuple(pb.scale),
        )
    return PoseSnapshot(object=obj.name, bones=bones)


def restore_pose(obj: Any, snap: PoseSnapshot) -> None:
    """Write a :class:`PoseSnapshot` back: the same stored values, bit for bit."""
    pbs = obj.pose.bones
    for name, (mode, loc, quat, eul, aa, scale) in snap.bones.items():
        pb = pbs.get(name)
        if pb is None:
            continue
        pb.rotation_mode = mode
        pb.location = loc
        pb.rotation_quaternion = quat
        pb.rotation_euler = eul  # (its order follows rotation_mode; setting it zeroes it)
        pb.rotation_axis_angle = aa
        pb.scale = scale


def _matrix_key(m: Any) -> tuple[float, ...]:
    return tuple(x for row in m for x in row)


def settings_key(group: Any) -> tuple[Any, ...]:
    """Every stored value of a settings PropertyGroup (recursing into collections), with
    object pointers as (name, world matrix) and a target bone as its pose matrix."""
    out: list[Any] = []
    for prop in group.bl_rna.properties:
        ident = prop.identifier
        if ident in ("rna_type", "status"):  # the status is the solve's output
            continue
        val = getattr(group, ident)
        if prop.type == "COLLECTION":
            out.append(tuple(settings_key(x) for x in val))
        elif prop.type == "POINTER":
            out.append(None if val is None else (val.name, _matrix_key(val.matrix_world)))
        elif getattr(prop, "is_array", False):
            out.append(tuple(val))
        else:
            out.append(val)
    target, bone = getattr(group, "target", None), getattr(group, "target_bone", "")
    if target is not None and bone and target.type == "ARMATURE":
        tpb = target.pose.bones.get(bone)
        out.append(None if tpb is None else _matrix_key(tpb.matrix))
    return tuple(out)


def input_signature(obj: Any) -> tuple[Any, ...]:
    """Everything the solve reads besides the solved bones: when it changes, solve again.

    The armature's world matrix; per enabled limb, chain and body all its settings
    (:func:`settings_key`: bones, goal, swivel, mode, targets' and poles' world matrices,
    target bones' pose matrices, limits, …) and, for limbs, the local pose of every bone
    above the upper bone (a moved shoulder or spine). The solve's own writes to the limb bones
    do not change it, so live solving does not loop on its own output (a chain that
    moves a limb's parent costs one extra solve, which finds nothing left to do).
    """
    out: list[Any] = [_matrix_key(obj.matrix_world)]
    pbs = obj.pose.bones
    for kind in (obj.limber.limbs, obj.limber.chains, obj.limber.bodies):
        for item in kind:
            if not item.enabled:
                out.append((item.name, False))
                continue
            key: tuple[Any, ...] = settings_key(item)
            upper = pbs.get(getattr(item, "upper_bone", ""))
            parent = None if upper is None else upper.parent
            while parent is not None:  # the local pose of every bone the limb hangs from
                key += (_matrix_key(parent.matrix_basis),)
                parent = parent.parent
            out.append(key)
    return tuple(out)


def status_text(statuses: list[Any]) -> str:
    """One-line summary of a live solve for the header: per limb ok / out of reach / limits."""
    parts = []
    for st in statuses:
        if not st.solved:
            parts.append(f"{st.limb}: {st.message}")
        elif not st.reached:
            parts.append(f"{st.limb}: out of reach by {st.position_error * 1000:.1f} mm")
        elif not st.within_limits:
            parts.append(f"{st.limb}: outside limits")
        else:
            parts.append(f"{st.limb}: ok")
    body = " | ".join(parts) if parts else "no enabled limbs"
    return f"Limber live — {body} — Enter: keep, Esc/right-click: restore"


#: What the modal loop does with an event: (event type, value) → action.
CANCEL, KEEP, TICK, PASS = "CANCEL", "KEEP", "TICK", "PASS"


def event_action(event_type: str, value: str) -> str:
    """The live operator's key map: Esc / right-click press → CANCEL (restore the start
    pose), Enter press → KEEP, a timer → TICK (solve if the inputs changed), else PASS
    (the event goes on to other tools)."""
    if event_type in {"ESC", "RIGHTMOUSE"} and value == "PRESS":
        return CANCEL
    if event_type in {"RET", "NUMPAD_ENTER"} and value == "PRESS":
        return KEEP
    if event_type == "TIMER":
        return TICK
    return PASS


class LiveSession:
    """One live-solving session on an armature (plain object: the operator only wraps it).

    Captures the pose when made; :meth:`tick` solves when :func:`input_signature` changed
    and puts the status text in ``area``'s header and ``workspace``'s status bar (either
    may be None); :meth:`cancel` restores the captured pose; :meth:`end` clears the text.
    """

    def __init__(self, obj: Any, area: Any = None, workspace: Any = None) -> None:
        self.armature = obj.name
        self.snapshot = capture_pose(obj)
        self.signature: tuple[Any, ...] | None = None
        self.area = area
        self.workspace = workspace
        self.statuses: list[Any] = []
        self.solves = 0

    def tick(self, depsgraph: Any = None) -> bool:
        """Solve if the inputs changed since the last solve; returns whether it solved.

        Raises :class:`~.mapping.MappingError` for a bad armature."""
        obj = bpy.data.objects.get(self.armature)
        if obj is None:
            return False
        sig = input_signature(obj)
        if sig == self.signature:
            return False
        self.signature = sig
        dg = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
        self.statuses = solve.solve_object(obj, dg)
        self.solves += 1
        obj.update_tag()
        self._text(status_text(self.statuses))
        return True

    def cancel(self) -> None:
        """Restore the pose captured when the session started, and end."""
        obj = bpy.data.objects.get(self.armature)
        if obj is not None:
            restore_pose(obj, self.snapshot)
            obj.update_tag()
        self.end()

    def end(self) -> None:
        self._text(None)

    def _text(self, text: str | None) -> None:
        if self.area is not None:
            self.area.header_text_set(text)
        if self.workspace is not None:
            self.workspace.status_text_set(text)


class LIMBER_OT_live(bpy.types.Operator):
    """Solve the enabled limbs live whenever a target, pole or swivel changes; Enter keeps the pose, Esc or right-click restores the pose from before (headless: solves once)"""  # noqa: E501

    bl_idname = "limber.live"
    bl_label = "Live IK"
    bl_options = {"REGISTER", "UNDO"}

    armature: StringProperty(  # type: ignore[valid-type]
        name="Armature",
        description="Name of the armature object to act on (empty: the active object)",
        default="",
        options={"HIDDEN", "SKIP_SAVE"},
    )
    interval: FloatProperty(  # type: ignore[valid-type]
        name="Interval",
        description="Seconds between checks for changed targets, poles and swivels (0.01 to "
        "1 s)",
        default=0.03,
        min=0.01,
        max=1.0,
        unit="TIME_ABSOLUTE",
    )

    # Set by invoke() on the running instance: _session (LiveSession), _timer and
    # _handler (its depsgraph_update_post function).
    _session: LiveSession
    _timer: Any = None
    _handler: Callable[[Any, Any], None] | None = None

    @classmethod
    def poll(cls, context: Any) -> bool:
        return check(cls, context, Needs.ENABLED)

    def _object(self, context: Any) -> Any:
        name = self.armature
        obj = bpy.data.objects.get(name) if name else context.active_object
        if obj is None or obj.type != "ARMATURE":
            self.report({"ERROR"}, f"Limber: {name or getattr(obj, 'name', '')!r} is not an "
                        "armature object")
            return None
        return obj

    def execute(self, context: Any) -> OperatorResult:
        obj = self._object(context)
        if obj is None:
            return {"CANCELLED"}
        session = LiveSession(obj)
        try:
            session.tick(context.evaluated_depsgraph_get())
        except MappingError as exc:
            self.report({"ERROR"}, f"Limber: {exc}")
            return {"CANCELLED"}
        self.report({"INFO"}, status_text(session.statuses))
        return {"FINISHED"}

    def invoke(self, context: Any, event: Any) -> OperatorResult:
        obj = self._object(context)
        if obj is None:
            return {"CANCELLED"}
        if context.window is None or context.area is None:
            return self.execute(context)
        session = self._session = LiveSession(obj, context.area, context.workspace)
        wm = context.window_manager
        self._timer = wm.event_timer_add(self.interval, window=context.window)

        def on_update(_scene: Any, depsgraph: Any = None) -> None:
            # Also runs while another modal tool (e.g. grab on a target) has the events.
            try:
                session.tick(depsgraph)
            except MappingError as exc:
                print(f"Limber live: {exc}")

        self._handler = on_update
        bpy.app.handlers.depsgraph_update_post.append(on_update)
        _ACTIVE.append(self)
        wm.modal_handler_add(self)
        try:
            session.tick()
        except MappingError as exc:
            self.report({"ERROR"}, f"Limber: {exc}")
            self._finish(context)
            return {"CANCELLED"}
        return {"RUNNING_MODAL"}

    def modal(self, context: Any, event: Any) -> OperatorResult:
        action = event_action(event.type, event.value)
        if action == CANCEL:
            self._session.cancel()
            self._finish(context)
            return {"CANCELLED"}
        if action == KEEP:
            self._finish(context)
            return {"FINISHED"}
        if action == TICK:
            try:
                self._session.tick()
            except MappingError as exc:
                self.report({"ERROR"}, f"Limber: {exc}")
        return {"PASS_THROUGH"}

    def cancel(self, context: Any) -> None:
        """Blender ends the operator (e.g. file load): clean up, keep the pose."""
        self._finish(context)

    def _finish(self, context: Any) -> None:
        if getattr(self, "_timer", None) is not None:
            context.window_manager.event_timer_remove(self._timer)
            self._timer = None
        _remove_handler(getattr(self, "_handler", None))
        self._handler = None
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        session = getattr(self, "_session", None)
        if session is not None:
            session.end()


#: Running live operators (so unregister can drop their depsgraph handlers).
_ACTIVE: list[Any] = []


def _remove_handler(fn: Any) -> None:
    lst = bpy.app.handlers.depsgraph_update_post
    if fn is not None and fn in lst:
        lst.remove(fn)


def unregister() -> None:
    """Drop the depsgraph handlers of live operators still running."""
    while _ACTIVE:
        _remove_handler(getattr(_ACTIVE.pop(), "_handler", None))


CLASSES: tuple[type, ...] = (LIMBER_OT_live,)
