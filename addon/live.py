"""``limber.live``: solve the enabled limbs live while targets, poles or swivels change.

Interactive use (a window with events): ``invoke`` captures the armature's pose, then the
modal loop re-solves whenever :func:`input_signature` changes — checked on every timer
tick and right after each depsgraph update — writes the pose and shows the status in the
area header and the status bar. Esc or right-click ends it and restores the captured pose
exactly (:func:`restore_pose`); Enter keeps the result as one undo step. Other events pass
through, so targets can be moved with the usual tools meanwhile.

Headless (the ``bpy`` module: no events, ``INVOKE_DEFAULT`` runs ``execute()``) the
operator solves once. The capture/restore/signature logic is in plain functions that
tests call directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy
from bpy.props import FloatProperty, StringProperty

from . import solve
from .mapping import MappingError

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


def input_signature(obj: Any) -> tuple[Any, ...]:
    """Everything a limb solve reads besides the pose: when it changes, solve again.

    Per enabled limb: its settings (bones, goal, axis, solver, swivel, mode, limits,
    hinge axis), the target's and pole's world matrices (and the target bone's pose
    matrix), and the armature's world matrix. The solve's own writes to the limb bones
    do not change it (so live solving does not loop on its own output).
    """
    out: list[Any] = [_matrix_key(obj.matrix_world)]
    for lb in obj.limber.limbs:
        if not lb.enabled:
            out.append((lb.name, False))
            continue
        item: list[Any] = [
            lb.name, lb.upper_bone, lb.lower_bone, lb.end_bone, lb.goal_type, lb.axis,
            lb.solver, lb.swivel, lb.swivel_mode, lb.use_limits, lb.hinge_axis, lb.target_bone,
        ]
        for ref in (lb.target, lb.pole):
            item.append(None if ref is None else (ref.name, _matrix_key(ref.matrix_world)))
        tgt = lb.target
        if tgt is not None and lb.target_bone and tgt.type == "ARMATURE":
            tpb = tgt.pose.bones.get(lb.target_bone)
            item.append(None if tpb is None else _matrix_key(tpb.matrix))
        out.append(tuple(item))
    return tuple(out)


def status_text(statuses: list[Any]) -> str:
    """One-line summary of a live solve for the header: per limb ok / out of reach / limits."""
    parts = []
    for st in statuses:
        if not st.solved:
            parts.append(f"{st.limb}: {st.message}")
        elif not st.reachable:
            parts.append(f"{st.limb}: out of reach by {st.position_error * 1000:.1f} mm")
        elif not st.within_limits:
            parts.append(f"{st.limb}: outside limits")
        else:
            parts.append(f"{st.limb}: ok")
    body = " | ".join(parts) if parts else "no enabled limbs"
    return f"Limber live — {body} — Enter: keep, Esc/right-click: restore"


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

    # Set by invoke() on the running instance: _snapshot (PoseSnapshot), _timer, _signature
    # (last input_signature solved), _dirty (a depsgraph update since), _handler.

    def _object(self, context: Any) -> Any:
        name = self.armature
        obj = bpy.data.objects.get(name) if name else context.active_object
        if obj is None or obj.type != "ARMATURE":
            self.report({"ERROR"}, f"Limber: {name or getattr(obj, 'name', '')!r} is not an "
                        "armature object")
            return None
        return obj

    def _solve(self, context: Any, obj: Any) -> list[Any] | None:
        try:
            out = solve.solve_object(obj, context.evaluated_depsgraph_get())
        except MappingError as exc:
            self.report({"ERROR"}, f"Limber: {exc}")
            return None
        obj.update_tag()
        return out

    def execute(self, context: Any) -> set[str]:
        obj = self._object(context)
        if obj is None:
            return {"CANCELLED"}
        statuses = self._solve(context, obj)
        if statuses is None:
            return {"CANCELLED"}
        self.report({"INFO"}, status_text(statuses))
        return {"FINISHED"}

    def invoke(self, context: Any, event: Any) -> set[str]:
        obj = self._object(context)
        if obj is None:
            return {"CANCELLED"}
        if context.window is None or context.area is None:
            return self.execute(context)
        self.armature = obj.name
        self._snapshot = capture_pose(obj)
        self._signature = None
        self._dirty = True
        wm = context.window_manager
        self._timer = wm.event_timer_add(self.interval, window=context.window)

        def on_update(_scene: Any, _depsgraph: Any = None) -> None:
            self._dirty = True

        self._handler = on_update
        bpy.app.handlers.depsgraph_update_post.append(on_update)
        _ACTIVE.append(self)
        wm.modal_handler_add(self)
        self._tick(context)
        return {"RUNNING_MODAL"}

    def _tick(self, context: Any) -> None:
        obj = bpy.data.objects.get(self.armature)
        if obj is None:
            return
        sig = input_signature(obj)
        self._dirty = False
        if sig == self._signature:
            return
        self._signature = sig
        statuses = self._solve(context, obj)
        if statuses is not None:
            text = status_text(statuses)
            if context.area is not None:
                context.area.header_text_set(text)
            if context.workspace is not None:
                context.workspace.status_text_set(text)

    def modal(self, context: Any, event: Any) -> set[str]:
        if event.type in {"ESC", "RIGHTMOUSE"} and event.value == "PRESS":
            obj = bpy.data.objects.get(self.armature)
            if obj is not None:
                restore_pose(obj, self._snapshot)
                obj.update_tag()
            self._finish(context)
            return {"CANCELLED"}
        if event.type in {"RET", "NUMPAD_ENTER"} and event.value == "PRESS":
            self._finish(context)
            return {"FINISHED"}
        if event.type == "TIMER" and event.timer is self._timer:
            self._tick(context)
            return {"RUNNING_MODAL"}
        if self._dirty:
            self._tick(context)
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
        if context.area is not None:
            context.area.header_text_set(None)
        if context.workspace is not None:
            context.workspace.status_text_set(None)


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
