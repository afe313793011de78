"""Full body in the sidebar: ``limber.add_body`` / ``limber.remove_body`` and the "Body"
panel beside the limbs and chains.

``limber.add_body`` finds the body (:func:`..detect_body.detect_body`: root, bending
spine/neck/head bones, the four limbs), and makes one pin per effector with a target
Empty at its current pose (feet and hands: Pose goals, the feet at priority 0, the hands
at 1; the head: an Aim along the head bone's forward axis at priority 2; the hips: a Pose
goal at priority 3), so adding a body does not move the rig. Limbs of the armature that
drive the same bones are disabled (the body drives them now). On a generated Rigify rig
the limbs' IK/FK switches are set to FK while the body drives them (restored on removal).
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
from bpy.props import IntProperty, StringProperty
from mathutils import Vector

from ..detect_body import BodyNotFound, DetectedBody, detect_body
from ..run import body as body_run
from ..run import solve
from .operators import ArmatureOperator, OperatorResult, armature_prop, target_empty
from .panels import draw_effector_goal, draw_status, status_lines
from .poll import Needs
from .translations import iface_, rpt_

#: Default priority per pin kind (0 is met first).
PIN_PRIORITY = {"FOOT": 0, "HAND": 1, "HEAD": 2, "HIPS": 3}
#: Pin kind and name stem per detected limb kind.
LIMB_PINS = {"leg": ("FOOT", "foot"), "arm": ("HAND", "hand")}
#: The head's aim target sits this far ahead of the head (world units: 1 m also on an
#: armature in centimetres under a 0.01 object scale, so float32 positions do not blur
#: the aim's error).
AIM_DISTANCE = 1.0
#: Bone axis items → unit vectors in the bone's frame (the head's forward axis).
_AXIS_ITEMS = (("X", 0, 1.0), ("Y", 1, 1.0), ("Z", 2, 1.0), ("NEG_X", 0, -1.0),
               ("NEG_Y", 1, -1.0), ("NEG_Z", 2, -1.0))


def forward_axis(obj: Any, bone: str) -> tuple[str, Any]:
    """The bone axis item (``'NEG_Z'``, ...) pointing most nearly to the armature's front
    (−Y in armature space) in the rest pose, and that axis in armature space."""
    m = np.array(obj.data.bones[bone].matrix_local, dtype=np.float64)[:3, :3]
    best = max(_AXIS_ITEMS, key=lambda it: -it[2] * m[1, it[1]])
    return best[0], best[2] * m[:, best[1]]


def _aim_target(context: Any, obj: Any, name: str, bone: str, depsgraph: Any) -> tuple[Any, str]:
    """An Empty straight ahead of the bone's head (:data:`AIM_DISTANCE`) along its
    forward axis as posed (the aim holds at the current pose), and the axis."""
    axis, _ = forward_axis(obj, bone)
    empty = target_empty(context, obj, name, bone, depsgraph)
    pb = obj.evaluated_get(depsgraph).pose.bones[bone]
    _, col, sign = next(it for it in _AXIS_ITEMS if it[0] == axis)
    posed = np.array(pb.matrix, dtype=np.float64)[:3, col]
    scale = float(np.mean(obj.matrix_world.to_scale()))
    head = np.array(pb.head, dtype=np.float64) + (
        AIM_DISTANCE / scale * sign * posed / np.linalg.norm(posed))
    m = empty.matrix_world.copy()
    m.translation = obj.matrix_world @ Vector(head.tolist())
    empty.matrix_world = m
    return empty, axis


def fill_body(context: Any, obj: Any, body: Any, found: DetectedBody) -> list[str]:
    """Set a new body's bones and pins from a detection (targets at the current pose);
    returns the names of the limbs it disabled."""
    dg = context.evaluated_depsgraph_get()
    body.root_bone = found.root
    for name in found.bend:
        body.bend_bones.add().name = name
    label = f"{body.name}"
    for d in found.limbs:
        kind, stem = LIMB_PINS[d.name.split(".")[0]]
        pin = body.pins.add()
        pin.name = f"{stem}.{d.name.split('.', 1)[1]}"
        pin.kind, pin.priority, pin.goal_type = kind, PIN_PRIORITY[kind], "POSE"
        pin.upper_bone, pin.lower_bone, pin.tip_bone = d.upper, d.lower, d.end
        pin.target = target_empty(context, obj, f"{label}.{pin.name}", d.end, dg)
        if d.switch and not pin.switch_bone:
            solve.take_switch(obj, pin, d.switch, dg)
    if found.head:
        pin = body.pins.add()
        pin.name, pin.kind, pin.tip_bone = "head", "HEAD", found.head
        pin.priority, pin.goal_type = PIN_PRIORITY["HEAD"], "AIM"
        pin.target, pin.axis = _aim_target(context, obj, f"{label}.head", found.head, dg)
    pin = body.pins.add()
    pin.name, pin.kind, pin.tip_bone = "hips", "HIPS", found.root
    pin.priority, pin.goal_type = PIN_PRIORITY["HIPS"], "POSE"
    pin.target = target_empty(context, obj, f"{label}.hips", found.root, dg)
    driven = {b for p in body.pins for b in (p.upper_bone, p.lower_bone, p.tip_bone) if b}
    off = []
    for lb in obj.limber.limbs:
        if lb.enabled and {lb.upper_bone, lb.lower_bone, lb.end_bone} & driven:
            lb.enabled = False
            off.append(lb.name)
    return off


class LIMBER_OT_add_body(ArmatureOperator):
    """Find the body (root, spine, neck, head, arms and legs) and add it with a pin per
    foot, hand, head and hips, each pin's target at its current pose"""

    bl_idname = "limber.add_body"
    bl_label = "Add Body"

    armature: armature_prop()  # type: ignore[valid-type]
    body_name: StringProperty(  # type: ignore[valid-type]
        name="Name", description="Name of the new body", default="body",
        options={"SKIP_SAVE"},
    )

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        name = self.body_name or "body"
        if name in obj.limber.bodies:
            self.report({"ERROR"}, rpt_("Limber: {!r} already has a body {!r}; remove it "
                                         "first").format(obj.name, name))
            return {"CANCELLED"}
        try:
            found = detect_body(obj)
        except BodyNotFound as exc:
            self.report({"ERROR"}, rpt_("Limber: no body found in {!r}: {}")
                        .format(obj.name, exc))
            return {"CANCELLED"}
        body = obj.limber.bodies.add()
        body.name = name
        off = fill_body(context, obj, body, found)
        self.report({"INFO"}, rpt_("Limber: body {}: {}").format(name, found.report()))
        if off:
            self.report({"WARNING"}, rpt_("Limber: limbs driven by the body were disabled: "
                                           "{}").format(", ".join(off)))
        return {"FINISHED"}


class LIMBER_OT_remove_body(ArmatureOperator):
    """Remove a body (default: the last one); the IK/FK switches it set are restored, its
    target objects are kept"""

    bl_idname = "limber.remove_body"
    bl_label = "Remove Body"
    needs = Needs.BODIES

    armature: armature_prop()  # type: ignore[valid-type]
    index: IntProperty(  # type: ignore[valid-type]
        name="Index", description="Index of the body to remove (-1: the last body)",
        default=-1, min=-1, options={"SKIP_SAVE"},
    )

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        bodies = obj.limber.bodies
        i = len(bodies) - 1 if self.index < 0 else self.index
        if not 0 <= i < len(bodies):
            self.report({"ERROR"}, rpt_("Limber: no body at index {}").format(i))
            return {"CANCELLED"}
        for pin in bodies[i].pins:
            solve.release_switch(obj, pin)
        body_run.BODY_STATUS.pop((obj.name, bodies[i].name), None)
        bodies.remove(i)
        return {"FINISHED"}


def draw_pin(layout: Any, obj: Any, pin: Any) -> None:
    """One pin: enable, target, goal, priority and weight, and its saved status."""
    box = layout.box()
    row = box.row(align=True)
    row.prop(pin, "enabled", text="")
    row.label(text=f"{pin.name} ({pin.tip_bone})", icon="PINNED" if pin.enabled else "UNPINNED")
    col = box.column(align=True)
    col.active = pin.enabled
    draw_effector_goal(col, pin)
    row = col.row(align=True)
    row.prop(pin, "priority")
    row.prop(pin, "weight")
    st = pin.status
    if st.message:
        r = col.row()
        r.alert = not st.reached
        r.label(text=st.message if st.message != "ok" else iface_("reached"),
                icon="CHECKMARK" if st.reached else "ERROR")


def draw_body(layout: Any, obj: Any, body: Any) -> None:
    """A body's settings, its pins and its status."""
    col = layout.column()
    row = col.row(align=True)
    row.prop(body, "enabled", text="")
    row.prop(body, "name", text="")
    op = row.operator("limber.remove_body", text="", icon="REMOVE")
    op.armature = obj.name
    op.index = list(obj.limber.bodies).index(body)
    col.prop_search(body, "root_bone", obj.data, "bones", icon="BONE_DATA")
    col.label(text=iface_("Bending: {}").format(", ".join(b.name for b in body.bend_bones)
                                                or "-"), icon="BONE_DATA")
    row = col.row(align=True)
    row.prop(body, "use_limits")
    row.prop(body, "bend_range")
    col.prop(body, "max_iterations")
    for pin in body.pins:
        draw_pin(layout, obj, pin)
    sub = layout.column(align=True)
    for text, icon in status_lines(body_run.BODY_STATUS.get((obj.name, body.name))):
        r = sub.row()
        r.alert = icon == "ERROR"
        r.label(text=text, icon=icon)
    draw_status(layout, body.status)


class LIMBER_PT_body(bpy.types.Panel):
    """Full body: root, spine and limbs with pins (feet, hands, head, hips)"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Limber"
    bl_label = "Body"
    bl_parent_id = "LIMBER_PT_main"

    @classmethod
    def poll(cls, context: Any) -> bool:
        obj = getattr(context, "object", None)
        return (obj is not None and obj.type == "ARMATURE" and hasattr(obj, "limber")
                and context.mode in ("POSE", "OBJECT"))

    def draw(self, context: Any) -> None:
        draw_bodies(self.layout, context.object)


def draw_bodies(layout: Any, obj: Any) -> None:
    """The Add Body button and every body of the armature."""
    op = layout.operator("limber.add_body", icon="ADD")
    op.armature = obj.name
    for body in obj.limber.bodies:
        draw_body(layout.box(), obj, body)


CLASSES: tuple[type, ...] = (LIMBER_OT_add_body, LIMBER_OT_remove_body, LIMBER_PT_body)
