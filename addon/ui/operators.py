"""Limber's operators. Ids are a contract; the armature is named by a hidden property.

Scripts and tests call them directly, e.g. ``bpy.ops.limber.solve(armature="Armature")``;
with ``armature`` empty the active object is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import bpy
from bpy.props import BoolProperty, IntProperty, StringProperty

from ...core import LimberError
from .. import detect
from ..bridge import rig as mapping
from ..bridge.rig import MappingError
from ..run import solve
from ..run.bake import bake_object
from . import preferences
from .poll import Needs, check
from .translations import rpt_

#: What an operator's execute / invoke / modal returns.
OperatorResult = set[Literal["RUNNING_MODAL", "CANCELLED", "FINISHED", "PASS_THROUGH",
                             "INTERFACE"]]

_ARMATURE_DOC = "Name of the armature object to act on (empty: the active object)"


def _armature_prop() -> Any:
    return StringProperty(
        name="Armature", description=_ARMATURE_DOC, default="", options={"HIDDEN", "SKIP_SAVE"}
    )


def _limb_prop(what: str) -> Any:
    return StringProperty(
        name="Limb",
        description=f"Name of the limb to {what} (empty: every enabled limb)",
        default="",
        options={"SKIP_SAVE"},
    )


class _ArmatureOperator(bpy.types.Operator):
    """Shared: resolve the armature named by ``self.armature``."""

    bl_options = {"REGISTER", "UNDO"}
    #: What of the active armature the operator needs in a 3D View (see :mod:`.poll`).
    needs = Needs.ARMATURE

    @classmethod
    def poll(cls, context: Any) -> bool:
        return check(cls, context, cls.needs)

    def armature_object(self, context: Any) -> Any:
        name = getattr(self, "armature", "")
        obj = bpy.data.objects.get(name) if name else context.active_object
        if obj is None or obj.type != "ARMATURE":
            shown = name or getattr(obj, "name", "")
            self.report({"ERROR"}, rpt_("Limber: {!r} is not an armature object").format(shown))
            return None
        return obj

    def selected_limbs(self, obj: Any, name: str) -> list[Any]:
        if name:
            limb = obj.limber.limbs.get(name)
            if limb is None:
                self.report({"ERROR"}, rpt_("Limber: no limb {!r} on {!r}").format(name, obj.name))
                return []
            return [limb]
        return [lb for lb in obj.limber.limbs if lb.enabled]


def _target_empty(context: Any, obj: Any, label: str, bone: str, depsgraph: Any) -> Any:
    """An Empty ``<armature>.<label>.target`` at the bone's current (evaluated) world pose."""
    end = obj.evaluated_get(depsgraph).pose.bones[bone]
    name = f"{obj.name}.{label}.target"
    empty = bpy.data.objects.get(name)
    if empty is None or empty.type != "EMPTY":
        empty = bpy.data.objects.new(name, None)
        empty.empty_display_type = "ARROWS"
        empty.empty_display_size = 0.1
        coll = obj.users_collection[0] if obj.users_collection else context.scene.collection
        coll.objects.link(empty)
    empty.matrix_world = obj.matrix_world @ end.matrix
    return empty


class LIMBER_OT_detect_limbs(_ArmatureOperator):
    """Find arms and legs by bone names (Rigify, Mixamo, HumanIK, Biped, DAZ, Unreal,
    CMU/BVH; .L/.R, _l/_r, Left/Right, L_); the report names any limb not found and why"""

    bl_idname = "limber.detect_limbs"
    bl_label = "Detect Limbs"

    armature: _armature_prop()  # type: ignore[valid-type]
    create_targets: BoolProperty(  # type: ignore[valid-type]
        name="Create Targets",
        description="Create an Empty at each end bone's current pose as the limb's target and "
        "match the swivel, so enabling IK does not move the rig",
        default=False,
    )

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        detection = detect.detect(obj)
        found = detection.limbs
        if not found:
            self.report({"WARNING"}, rpt_("Limber: no arms or legs recognised in {!r}: {}")
                        .format(obj.name, detection.report()))
            return {"CANCELLED"}
        limbs = obj.limber.limbs
        dg = context.evaluated_depsgraph_get()
        for d in found:
            limb = limbs.get(d.name)
            if limb is None:
                limb = limbs.add()
                limb.name = d.name
                preferences.apply_limb_defaults(limb, context)
            limb.upper_bone, limb.lower_bone, limb.end_bone = d.upper, d.lower, d.end
            if d.switch and not limb.switch_bone:
                solve.take_switch(obj, limb, d.switch, dg)
            if self.create_targets:
                limb.target = _target_empty(context, obj, limb.name, limb.end_bone, dg)
                try:
                    solve.snap_swivel(obj, limb)
                except MappingError as exc:
                    self.report({"WARNING"}, rpt_("Limber: {}: {}").format(limb.name, exc))
        if detection.missing:
            self.report({"WARNING"}, rpt_("Limber: {}").format(detection.report()))
        else:
            self.report({"INFO"}, rpt_("Limber: {}").format(detection.report()))
        return {"FINISHED"}


class LIMBER_OT_add_limb(_ArmatureOperator):
    """Add a limb ending at the active bone (its parent and grandparent are the other two)"""

    bl_idname = "limber.add_limb"
    bl_label = "Add Limb"

    armature: _armature_prop()  # type: ignore[valid-type]
    end_bone: StringProperty(  # type: ignore[valid-type]
        name="End Bone",
        description="Name of the end bone (empty: the armature's active bone)",
        default="",
        options={"SKIP_SAVE"},
    )
    limb_name: StringProperty(  # type: ignore[valid-type]
        name="Name",
        description="Name of the new limb (empty: the end bone's name)",
        default="",
        options={"SKIP_SAVE"},
    )

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        name = self.end_bone or (obj.data.bones.active.name if obj.data.bones.active else "")
        bone = obj.data.bones.get(name)
        if bone is None or bone.parent is None or bone.parent.parent is None:
            self.report(
                {"ERROR"},
                rpt_("Limber: bone {!r} needs a parent and a grandparent to be a limb")
                .format(name),
            )
            return {"CANCELLED"}
        segments = detect.segmented(bone.name, bone.parent.name, bone.parent.parent.name)
        if segments:
            self.report({"ERROR"}, rpt_("Limber: {}; map the unsegmented (ORG- or FK) "
                                         "bones instead").format(segments))
            return {"CANCELLED"}
        limb = obj.limber.limbs.add()
        limb.name = self.limb_name or bone.name
        preferences.apply_limb_defaults(limb, context)
        limb.upper_bone, limb.lower_bone, limb.end_bone = (
            bone.parent.parent.name,
            bone.parent.name,
            bone.name,
        )
        obj.limber.active_limb_index = len(obj.limber.limbs) - 1
        return {"FINISHED"}


class LIMBER_OT_remove_limb(_ArmatureOperator):
    """Remove a limb (default: the active one)"""

    bl_idname = "limber.remove_limb"
    bl_label = "Remove Limb"
    needs = Needs.LIMBS

    armature: _armature_prop()  # type: ignore[valid-type]
    index: IntProperty(  # type: ignore[valid-type]
        name="Index",
        description="Index of the limb to remove (-1: the active limb)",
        default=-1,
        min=-1,
        options={"SKIP_SAVE"},
    )

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        data = obj.limber
        i = data.active_limb_index if self.index < 0 else self.index
        if not 0 <= i < len(data.limbs):
            self.report({"ERROR"}, rpt_("Limber: no limb at index {}").format(i))
            return {"CANCELLED"}
        solve.STATUS.pop((obj.name, data.limbs[i].name), None)
        solve.release_switch(obj, data.limbs[i])
        data.limbs.remove(i)
        data.active_limb_index = max(0, min(data.active_limb_index, len(data.limbs) - 1))
        return {"FINISHED"}


class LIMBER_OT_add_chain(_ArmatureOperator):
    """Add a numeric chain from a root bone to a tip bone (one effector; the tip's target
    is created at its current pose, so adding the chain does not move the rig)"""

    bl_idname = "limber.add_chain"
    bl_label = "Add Chain"

    armature: _armature_prop()  # type: ignore[valid-type]
    root_bone: StringProperty(  # type: ignore[valid-type]
        name="Root Bone", description="First bone of the chain", default="",
        options={"SKIP_SAVE"},
    )
    tip_bone: StringProperty(  # type: ignore[valid-type]
        name="Tip Bone",
        description="Bone pulled toward the target (empty: the armature's active bone)",
        default="", options={"SKIP_SAVE"},
    )
    chain_name: StringProperty(  # type: ignore[valid-type]
        name="Name", description="Name of the new chain (empty: the tip bone's name)",
        default="", options={"SKIP_SAVE"},
    )

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        active = obj.data.bones.active
        tip = self.tip_bone or (active.name if active else "")
        try:
            mapping.chain_bones(obj, self.root_bone, [tip])
        except MappingError as exc:
            self.report({"ERROR"}, rpt_("Limber: {}").format(exc))
            return {"CANCELLED"}
        chain = obj.limber.chains.add()
        chain.name = self.chain_name or tip
        chain.root_bone = self.root_bone
        eff = chain.effectors.add()
        eff.tip_bone = tip
        preferences.apply_chain_defaults(chain, eff, context)
        dg = context.evaluated_depsgraph_get()
        eff.target = _target_empty(context, obj, chain.name, tip, dg)
        return {"FINISHED"}


class LIMBER_OT_remove_chain(_ArmatureOperator):
    """Remove a numeric chain (default: the last one)"""

    bl_idname = "limber.remove_chain"
    bl_label = "Remove Chain"
    needs = Needs.CHAINS

    armature: _armature_prop()  # type: ignore[valid-type]
    index: IntProperty(  # type: ignore[valid-type]
        name="Index", description="Index of the chain to remove (-1: the last chain)",
        default=-1, min=-1, options={"SKIP_SAVE"},
    )

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        chains = obj.limber.chains
        i = len(chains) - 1 if self.index < 0 else self.index
        if not 0 <= i < len(chains):
            self.report({"ERROR"}, rpt_("Limber: no chain at index {}").format(i))
            return {"CANCELLED"}
        solve.CHAIN_STATUS.pop((obj.name, chains[i].name), None)
        chains.remove(i)
        return {"FINISHED"}


class LIMBER_OT_solve(_ArmatureOperator):
    """Solve every enabled chain and limb at the current frame"""

    bl_idname = "limber.solve"
    bl_label = "Solve"
    needs = Needs.ENABLED

    armature: _armature_prop()  # type: ignore[valid-type]

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        try:
            statuses = solve.solve_object(obj, context.evaluated_depsgraph_get())
        except MappingError as exc:
            self.report({"ERROR"}, rpt_("Limber: {}").format(exc))
            return {"CANCELLED"}
        bad = [s for s in statuses if s.message != "ok"]
        for s in bad:
            self.report({"WARNING"}, rpt_("Limber: {}: {}").format(s.limb, s.message))
        if not statuses:
            self.report({"WARNING"},
                        rpt_("Limber: {!r} has no enabled limbs or chains").format(obj.name))
        return {"FINISHED"}


class LIMBER_OT_bake(_ArmatureOperator):
    """Solve every frame of a range and key the solved bones' rotations (enabled limbs
    and chains)"""

    bl_idname = "limber.bake"
    bl_label = "Bake Limbs"
    needs = Needs.ENABLED

    armature: _armature_prop()  # type: ignore[valid-type]
    frame_start: IntProperty(  # type: ignore[valid-type]
        name="Start", description="First frame to bake (not given: the scene's start frame)",
        default=1, min=0,
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        name="End", description="Last frame to bake, inclusive (not given: the scene's end "
        "frame)", default=250, min=0,
    )
    step: IntProperty(  # type: ignore[valid-type]
        name="Step", description="Bake every n-th frame (1 to 100 frames)", default=1, min=1,
        max=100,
    )
    disable_limbs: BoolProperty(  # type: ignore[valid-type]
        name="Disable Limbs",
        description="Disable the baked limbs and chains afterwards, so the keys play back "
        "unchanged",
        default=False,
    )

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        for name in ("frame_start", "frame_end"):  # not given: the scene's range
            if not self.properties.is_property_set(name):
                setattr(self, name, getattr(context.scene, name))
        if self.frame_end < self.frame_start:
            self.report({"ERROR"}, rpt_("Limber: the end frame is before the start frame"))
            return {"CANCELLED"}
        names = [lb.name for lb in obj.limber.limbs if lb.enabled]
        chains = [c.name for c in obj.limber.chains if c.enabled]
        wm = context.window_manager
        n = len(range(self.frame_start, self.frame_end + 1, self.step))
        wm.progress_begin(0, n)
        try:
            result = bake_object(
                obj,
                context.scene,
                self.frame_start,
                self.frame_end,
                self.step,
                limbs=names,
                progress=wm.progress_update,
                chains=chains,
            )
        except MappingError as exc:
            self.report({"ERROR"}, rpt_("Limber: {}").format(exc))
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        for name, why in result.skipped.items():
            self.report({"WARNING"}, rpt_("Limber: {} skipped: {}").format(name, why))
        for st in result.worst:
            if st.solved and not st.reached:
                self.report({"WARNING"}, rpt_("Limber: {}: {}").format(st.limb, st.message))
        if not result.keys_written:
            self.report({"WARNING"},
                        rpt_("Limber: nothing baked on {!r} (0 keys)").format(obj.name))
            return {"CANCELLED"}
        if self.disable_limbs:
            for items, done in ((obj.limber.limbs, names), (obj.limber.chains, chains)):
                for it in items:
                    if it.name in done:
                        it.enabled = False
        self.report(
            {"INFO"}, rpt_("Limber: baked {} frames, {} keys into the {}").format(
                len(result.frames), result.keys_written, result.destination)
        )
        return {"FINISHED"}


class _SnapOperator(_ArmatureOperator):
    """Shared by the snap operators: apply :meth:`snap` to the named limb (default: every
    enabled limb), all with the depsgraph as evaluated before the first snap; a
    :class:`MappingError` cancels with its message."""

    needs = Needs.LIMBS

    if TYPE_CHECKING:
        limb: str

    def snap(self, obj: Any, limb: Any, depsgraph: Any) -> solve.FkSnap | None:
        raise NotImplementedError

    def execute(self, context: Any) -> OperatorResult:
        obj = self.armature_object(context)
        if obj is None:
            return {"CANCELLED"}
        limbs = self.selected_limbs(obj, self.limb)
        if not limbs:
            return {"CANCELLED"}
        dg = context.evaluated_depsgraph_get()
        off = []
        try:
            for lb in limbs:
                snap = self.snap(obj, lb, dg)
                if snap is not None and snap.residual > solve.SNAP_RESIDUAL_REPORTED:
                    off.append(f"{lb.name} {snap.residual * 1000.0:.3g} mm")
        except (MappingError, LimberError) as exc:
            self.report({"ERROR"}, rpt_("Limber: {}").format(exc))
            return {"CANCELLED"}
        if off:
            self.report({"WARNING"}, rpt_("Limber: the FK elbow is off the hinge circle (the "
                                           "lower bone turns about more than its hinge axis); "
                                           "IK will move it by: {}").format(", ".join(off)))
        return {"FINISHED"}


class LIMBER_OT_snap_swivel(_SnapOperator):
    """Set the swivel angle from the current FK elbow, so switching to IK changes nothing"""

    bl_idname = "limber.snap_swivel"
    bl_label = "Snap Swivel to FK"

    armature: _armature_prop()  # type: ignore[valid-type]
    limb: _limb_prop("snap")  # type: ignore[valid-type]

    def snap(self, obj: Any, limb: Any, depsgraph: Any) -> solve.FkSnap | None:
        snap = solve.snap_fk(obj, limb, depsgraph)
        limb.swivel = snap.swivel
        return snap


class LIMBER_OT_snap_pole(_SnapOperator):
    """Move the pole object so that Pole swivel mode reproduces the current FK elbow"""

    bl_idname = "limber.snap_pole"
    bl_label = "Snap Pole to FK"

    armature: _armature_prop()  # type: ignore[valid-type]
    limb: _limb_prop("snap")  # type: ignore[valid-type]

    def snap(self, obj: Any, limb: Any, depsgraph: Any) -> solve.FkSnap | None:
        if limb.pole is None and not self.limb:
            return None  # every limb: those with a pole
        return solve.snap_pole(obj, limb, depsgraph)


class LIMBER_OT_snap_target(_SnapOperator):
    """Move the target to the end bone's current FK pose"""

    bl_idname = "limber.snap_target"
    bl_label = "Snap Target to FK"

    armature: _armature_prop()  # type: ignore[valid-type]
    limb: _limb_prop("snap")  # type: ignore[valid-type]

    def snap(self, obj: Any, limb: Any, depsgraph: Any) -> solve.FkSnap | None:
        solve.snap_target(obj, limb, depsgraph)
        return None


CLASSES: tuple[type, ...] = (
    LIMBER_OT_detect_limbs,
    LIMBER_OT_add_limb,
    LIMBER_OT_remove_limb,
    LIMBER_OT_add_chain,
    LIMBER_OT_remove_chain,
    LIMBER_OT_solve,
    LIMBER_OT_bake,
    LIMBER_OT_snap_swivel,
    LIMBER_OT_snap_target,
    LIMBER_OT_snap_pole,
)
