"""The View3D sidebar tab "Limber": limb and chain lists, the active limb's settings, the
swivel slider with its feasible ranges, the status line and the action buttons.

Drawing never solves: it reads the cached per-limb :class:`~.solve.LimbStatus` and the
display data :func:`.overlay.limb_view` derives from it. The text is made by plain
functions (:func:`format_feasible`, :func:`status_lines`, :func:`status_icon`) that tests
call directly; the draw functions take a ``UILayout`` and can run against any real one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import bpy
from bpy.props import IntProperty

from ..bridge.rig import HINGE_SOURCES, MappingError
from ..run import solve
from . import overlay
from .translations import iface_

#: Notes in ``LimbStatus.message`` that the status line already says in its own words.
_COVERED = ("target not reached", "no pose within the joint limits")


# --------------------------------------------------------------------------------------
# Text (plain functions)
# --------------------------------------------------------------------------------------


def deg(angle: float) -> str:
    """An angle (rad) as whole degrees with a true minus sign, e.g. ``"35°"``, ``"−160°"``."""
    text = f"{math.degrees(angle):.0f}°"
    return "0°" if text == "-0°" else text.replace("-", "\u2212")


def _limit_names(names: Sequence[str]) -> str:
    many = len(names) > 1 or any("+" in n for n in names)
    return (iface_("{} limits") if many else iface_("{} limit")).format(", ".join(names))


def format_feasible(
    intervals: Sequence[tuple[float, float]], blocking: Sequence[str] = ()
) -> str:
    """The feasible swivel ranges in degrees.

    ``intervals``: (lo, hi) radians as ``LimbStatus.feasible_swivel`` (lo in [−π, π),
    hi ≤ lo + 2π; a range through ±180° ends above 180°). ``blocking``: names from
    :func:`core.blocking_limits`, shown when there is no feasible swivel.

    Examples: ``"feasible 35°–140°, −160°–−100°"``, ``"feasible 170°–200°"``,
    ``"feasible: any swivel"``, ``"no feasible swivel: shoulder X limit"``.
    """
    if not intervals:
        if blocking:
            return iface_("no feasible swivel: {}").format(_limit_names(blocking))
        return iface_("no feasible swivel")
    if len(intervals) == 1 and intervals[0][1] - intervals[0][0] >= 2.0 * math.pi - 1e-9:
        return iface_("feasible: any swivel")
    return iface_("feasible {}").format(", ".join(f"{deg(lo)}–{deg(hi)}" for lo, hi in intervals))


def status_icon(status: Any) -> str:
    """List icon of a limb or chain status: not solved yet, error, goal missed, ok."""
    if status is None:
        return "RADIOBUT_OFF"
    if not status.solved:
        return "ERROR"
    if not status.reached or not status.within_limits:
        return "CANCEL"
    return "CHECKMARK"


def status_lines(
    status: Any, at_bound: Sequence[str] = (), blocking: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """The status line of a limb as (text, icon) rows.

    Reach of the end bone as Blender evaluates it ("reached" / "out of reach by N mm"),
    limits ("within limits", "at limit:
    elbow, shoulder Z", "outside limits: <which>"), residual position (mm) and orientation
    (°) error, the solve time (µs), and any other note of the solve. Lengths are the
    armature's units shown as mm (metres × 1000 at unit scale). ``at_bound`` and
    ``blocking``: from :func:`core.limits_at_bound` / :func:`core.blocking_limits`.
    """
    if status is None:
        return [(iface_("not solved yet (Solve or Live)"), "INFO")]
    if not status.solved:
        return [(status.message or iface_("not solved"), "ERROR")]
    rows: list[tuple[str, str]] = []
    pe_mm = status.position_error * 1000.0
    oe_deg = math.degrees(status.orientation_error)
    if status.reached:
        rows.append((iface_("reached"), "CHECKMARK"))
    elif pe_mm >= 0.05:
        rows.append((iface_("out of reach by {:.1f} mm").format(pe_mm), "ERROR"))
    else:
        rows.append((iface_("orientation out of reach by {:.2f}°").format(oe_deg), "ERROR"))
    if not status.within_limits:
        text = (iface_("outside limits: {}").format(_limit_names(blocking)) if blocking
                else iface_("outside limits"))
        rows.append((text, "ERROR"))
    elif at_bound:
        rows.append((iface_("at limit: {}").format(", ".join(at_bound)), "INFO"))
    else:
        rows.append((iface_("within limits"), "CHECKMARK"))
    error = (iface_("error {:.3f} mm, {:.3f}°, measured")
             if getattr(status, "measured", "model") == "depsgraph"
             else iface_("error {:.3f} mm, {:.3f}°"))
    rows.append((error.format(pe_mm, oe_deg), "DRIVER_DISTANCE"))
    rows.append((iface_("{:.0f} µs per solve").format(status.solve_us), "TIME"))
    if getattr(status, "solver", "ANALYTIC") != "ANALYTIC":
        text = iface_("{}: {} iterations").format(status.solver, status.iterations)
        if getattr(status, "stop_reason", ""):
            text += f" ({status.stop_reason})"
        rows.append((text, "INFO"))
    notes = [n for n in (status.message or "").split("; ") if not n.startswith(_COVERED)]
    other = "; ".join(n for n in notes if n and n != "ok")
    if other:
        rows.append((other, "INFO"))
    return rows


# --------------------------------------------------------------------------------------
# Lists
# --------------------------------------------------------------------------------------


def _item_row(layout: Any, item: Any, status: Any) -> None:
    """A list row: enable toggle, editable name, status icon (eye closed when disabled)."""
    row = layout.row(align=True)
    row.prop(item, "enabled", text="")
    row.prop(item, "name", text="", emboss=False)
    row.label(text="", icon=status_icon(status) if item.enabled else "HIDE_ON")


class LIMBER_UL_limbs(bpy.types.UIList):
    """Limbs of the armature: enable toggle, name, last solve's status"""

    def draw_item(
        self, context: Any, layout: Any, data: Any, item: Any, icon: Any,
        active_data: Any, active_property: str | None, index: int | None = 0,
        flt_flag: int | None = 0,
    ) -> None:
        _item_row(layout, item, solve.STATUS.get((data.id_data.name, item.name)))


class LIMBER_UL_chains(bpy.types.UIList):
    """Numeric chains of the armature: enable toggle, name, last solve's status"""

    def draw_item(
        self, context: Any, layout: Any, data: Any, item: Any, icon: Any,
        active_data: Any, active_property: str | None, index: int | None = 0,
        flt_flag: int | None = 0,
    ) -> None:
        chains = getattr(solve, "CHAIN_STATUS", {})
        _item_row(layout, item, chains.get((data.id_data.name, item.name)))


# --------------------------------------------------------------------------------------
# Draw functions (take a real UILayout)
# --------------------------------------------------------------------------------------


def _op(layout: Any, idname: str, obj: Any, **kw: Any) -> Any:
    op = layout.operator(idname, **kw)
    op.armature = obj.name
    return op


def draw_lists(layout: Any, context: Any, obj: Any) -> None:
    """The limb list with add/remove/detect buttons; the chain list and the selected chain."""
    data = obj.limber
    row = layout.row()
    row.template_list("LIMBER_UL_limbs", "", data, "limbs", data, "active_limb_index", rows=4)
    col = row.column(align=True)
    _op(col, "limber.add_limb", obj, text="", icon="ADD")
    _op(col, "limber.remove_limb", obj, text="", icon="REMOVE")
    col.separator()
    _op(col, "limber.detect_limbs", obj, text="", icon="VIEWZOOM")
    if len(data.chains):
        layout.label(text="Chains")
        layout.template_list(
            "LIMBER_UL_chains", "", data, "chains", context.window_manager, "limber_chain_index",
            rows=2,
        )
        i = context.window_manager.limber_chain_index
        if 0 <= i < len(data.chains):
            draw_chain(layout.box(), obj, data.chains[i])


def draw_effector_goal(col: Any, eff: Any) -> None:
    """An effector's goal (chain effectors and body pins alike): its target (and target
    bone when the target is an armature), the goal type and, for PARTIAL / AIM, the axis."""
    col.prop(eff, "target")
    tgt = eff.target
    if tgt is not None and tgt.type == "ARMATURE":
        col.prop_search(eff, "target_bone", tgt.data, "bones")
    row = col.row(align=True)
    row.prop(eff, "goal_type", text="")
    if eff.goal_type in ("PARTIAL", "AIM"):
        row.prop(eff, "axis", text="")


def draw_chain(layout: Any, obj: Any, chain: Any) -> None:
    """The selected chain's settings and its effectors."""
    col = layout.column()
    col.prop_search(chain, "root_bone", obj.data, "bones", icon="BONE_DATA")
    col.prop(chain, "solver")
    row = col.row(align=True)
    row.prop(chain, "use_limits")
    row.prop(chain, "max_iterations")
    for eff in chain.effectors:
        sub = layout.box().column(align=True)
        sub.prop_search(eff, "tip_bone", obj.data, "bones", icon="BONE_DATA")
        draw_effector_goal(sub, eff)
        row = sub.row(align=True)
        row.prop(eff, "weight")
        row.prop(eff, "priority")


def draw_actions(layout: Any, context: Any, obj: Any) -> None:
    """Solve / Live / Bake (with its frame range) / Snap buttons and the display toggles."""
    scene = context.scene
    col = layout.column(align=True)
    row = col.row(align=True)
    _op(row, "limber.solve", obj, icon="CON_KINEMATIC")
    _op(row, "limber.live", obj, icon="PLAY")
    row = col.row(align=True)
    row.prop(scene, "frame_start", text="Start")
    row.prop(scene, "frame_end", text="End")
    op = _op(col, "limber.bake", obj, icon="KEYINGSET")
    op.frame_start = scene.frame_start
    op.frame_end = scene.frame_end
    row = col.row(align=True)
    _op(row, "limber.snap_swivel", obj, text="Snap Swivel", icon="SNAP_ON")
    _op(row, "limber.snap_target", obj, text="Snap Target", icon="EMPTY_ARROWS")
    _op(row, "limber.snap_pole", obj, text="Snap Pole", icon="PIVOT_CURSOR")
    row = layout.row(align=True)
    row.prop(scene.limber, "live_playback", toggle=True, icon="PLAY")
    row.prop(context.window_manager, "limber_overlay", toggle=True, icon="OVERLAY")


def hinge_label(obj: Any, limb: Any) -> str:
    """The hinge axis a limb uses and where it came from, e.g. ``"Hinge (0.87, 0, 0.5):
    bent pose in the animation"``."""
    return hinge_row(obj, limb)[0]


def hinge_row(obj: Any, limb: Any) -> tuple[str, bool]:
    """:func:`hinge_label` and whether it is an alert (no axis, or the default one)."""
    try:
        rig = solve.rig_for(obj, limb)
    except MappingError as exc:
        return iface_("Hinge axis cannot be found: {}").format(exc), True
    k = ", ".join(f"{v:.3g}" for v in rig.hinge_axis + 0.0)
    source = iface_(HINGE_SOURCES.get(rig.hinge_source, rig.hinge_source))
    return iface_("Hinge ({}): {}").format(k, source), rig.hinge_source == "DEFAULT"


def draw_limb(layout: Any, context: Any, obj: Any, limb: Any) -> None:
    """The active limb's settings, swivel with feasible ranges, and status line."""
    col = layout.column()
    col.prop_search(limb, "upper_bone", obj.data, "bones", icon="BONE_DATA")
    col.prop_search(limb, "lower_bone", obj.data, "bones", icon="BONE_DATA")
    col.prop_search(limb, "end_bone", obj.data, "bones", icon="BONE_DATA")
    col.separator()
    col.prop(limb, "target")
    tgt = limb.target
    if tgt is not None and tgt.type == "ARMATURE":
        col.prop_search(limb, "target_bone", tgt.data, "bones")
    col.prop(limb, "goal_type")
    if limb.goal_type in ("PARTIAL", "AIM"):
        col.prop(limb, "axis")
    col.prop(limb, "solver")
    row = col.row(align=True)
    row.prop(limb, "use_limits")
    row.prop(limb, "hinge_axis", text="")
    if limb.hinge_axis == "CUSTOM":
        col.prop(limb, "hinge_custom", text="")
    r = col.row()
    text, r.alert = hinge_row(obj, limb)
    r.label(text=text, icon="CON_ROTLIMIT")
    if limb.switch_bone:
        col.prop(limb, "rigify_mode")
        col.label(text=iface_("IK/FK switch of {}: {} while Limber drives the limb "
                              "(restored on removal)").format(limb.switch_bone,
                                                             limb.rigify_mode),
                  icon="ARMATURE_DATA")

    box = layout.box()
    ctl = box.column()
    ctl.active = limb.solver == "ANALYTIC"  # numeric solvers ignore the swivel settings
    ctl.prop(limb, "swivel_mode")
    if limb.swivel_mode == "POLE":
        ctl.prop(limb, "pole")
    row = ctl.row()
    row.active = limb.swivel_mode == "ANGLE" or (limb.swivel_mode == "POLE" and limb.pole is None)
    row.prop(limb, "swivel", slider=True)
    status = solve.STATUS.get((obj.name, limb.name))
    view = overlay.limb_view(obj, limb, context.view_layer.depsgraph)
    at_bound = view.at_bound if view is not None else ()
    blocking = view.blocking if view is not None else ()
    sub = box.column(align=True)  # directly under the slider
    if status is not None and status.solved and status.solver == "ANALYTIC":
        empty = not status.feasible_swivel
        r = sub.row()
        r.alert = empty
        text = format_feasible(status.feasible_swivel, blocking)
        r.label(text=text, icon="DRIVER_ROTATIONAL_DIFFERENCE")
    for text, icon in status_lines(status, at_bound, blocking):
        r = sub.row()
        r.alert = icon == "ERROR"
        r.label(text=text, icon=icon)
    draw_status(layout, limb.status)


def saved_status_lines(pg: Any) -> list[tuple[str, str]]:
    """The saved ``status`` of a limb or effector (what the last solve or bake found on
    the evaluated pose) as read-only (text, icon) rows."""
    if pg.position_error < 0.0 and not pg.message:
        return [(iface_("no status yet (Solve, Live or Bake)"), "INFO")]
    how = iface_("measured on the evaluated pose") if pg.measured else iface_("proven model")
    rows = [
        (iface_("reached" if pg.reached else "not reached"),
         "CHECKMARK" if pg.reached else "ERROR"),
        (iface_("frame {}: {:.3f} mm, {:.3f}° ({})").format(
            pg.frame, pg.position_error * 1000.0, math.degrees(pg.orientation_error), how),
         "DRIVER_DISTANCE"),
    ]
    if pg.message and pg.message != "ok":
        rows.append((pg.message, "INFO"))
    return rows


def draw_status(layout: Any, pg: Any) -> None:
    """Draw a saved status read-only (labels, never editable fields)."""
    box = layout.box()
    box.label(text="Status", icon="VIEWZOOM")
    for text, icon in saved_status_lines(pg):
        r = box.row()
        r.alert = icon == "ERROR"
        r.label(text=text, icon=icon)


# --------------------------------------------------------------------------------------
# Panels
# --------------------------------------------------------------------------------------


def _armature(context: Any) -> Any:
    obj = getattr(context, "object", None)
    if obj is None or obj.type != "ARMATURE" or not hasattr(obj, "limber"):
        return None
    if context.mode not in ("POSE", "OBJECT"):
        return None
    return obj


class LIMBER_PT_main(bpy.types.Panel):
    """Limber IK: limbs and chains of the active armature, solving, baking and display"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Limber"
    bl_label = "Limber IK"

    @classmethod
    def poll(cls, context: Any) -> bool:
        return _armature(context) is not None

    def draw(self, context: Any) -> None:
        obj = _armature(context)
        draw_lists(self.layout, context, obj)
        draw_actions(self.layout, context, obj)


class LIMBER_PT_limb(bpy.types.Panel):
    """Settings and status of the limb selected in the list"""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Limber"
    bl_label = "Active Limb"
    bl_parent_id = "LIMBER_PT_main"

    @classmethod
    def poll(cls, context: Any) -> bool:
        return overlay.active_limb(context)[1] is not None and _armature(context) is not None

    def draw(self, context: Any) -> None:
        obj, limb = overlay.active_limb(context)
        draw_limb(self.layout, context, obj, limb)


CLASSES: tuple[type, ...] = (LIMBER_UL_limbs, LIMBER_UL_chains, LIMBER_PT_main, LIMBER_PT_limb)


def attach() -> None:
    """``WindowManager.limber_chain_index``: the chain list's selection (UI only)."""
    bpy.types.WindowManager.limber_chain_index = IntProperty(  # type: ignore[attr-defined,func-returns-value]
        name="Active Chain",
        description="Index of the chain selected in the Limber chain list (0-based; display "
        "only, not saved)",
        default=0,
        min=0,
    )


def detach() -> None:
    if hasattr(bpy.types.WindowManager, "limber_chain_index"):
        del bpy.types.WindowManager.limber_chain_index
