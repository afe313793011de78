"""Limber's add-on preferences (Edit > Preferences > Add-ons > Limber).

What they set, and where it is used:

* **New limbs and chains**: the solver and goal type of new limbs and of new chains (their
  first effector's goal type) (:func:`apply_limb_defaults`,
  :func:`apply_chain_defaults`, called by ``limber.add_limb``, ``limber.detect_limbs``
  and ``limber.add_chain``). Existing limbs keep their settings.
* **Overlay**: the swivel overlay's four colours, line width and elbow point size
  (:func:`overlay_style`, drawn by :mod:`.overlay`).
* **Status tolerance**: a goal counts as *reached* when the evaluated end bone is within
  this position (stored in metres, shown in mm) and orientation (stored in radians, shown
  in degrees) error (:func:`tolerances`, used by :func:`..bridge.verify.reached`).
* **Keymap**: the Pose-mode shortcuts of :mod:`.keymap`, editable here.

Every reader returns the built-in defaults when the preferences are not registered (the
add-on's modules imported without enabling the extension), so code paths never depend on
the preferences existing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import bpy
from bpy.props import EnumProperty, FloatProperty, FloatVectorProperty

from .. import props
from . import keymap
from .translations import iface_

#: The extension's package name (``bl_ext.<repository>.limber``): the preferences' id.
PACKAGE = (__package__ or "").removesuffix(".addon.ui")


@dataclass(frozen=True)
class OverlayStyle:
    """Colours (RGBA, 0–1) and sizes (pixels) of the swivel overlay."""

    feasible: tuple[float, ...] = (0.25, 0.85, 0.35, 1.0)
    infeasible: tuple[float, ...] = (0.95, 0.25, 0.2, 1.0)
    elbow: tuple[float, ...] = (1.0, 0.85, 0.1, 1.0)
    axis: tuple[float, ...] = (0.55, 0.7, 1.0, 0.8)
    line_width: float = 2.5
    point_size: float = 9.0


@dataclass(frozen=True)
class Tolerance:
    """When a goal counts as reached: position error in metres (world units at unit
    scale), orientation error in radians. Defaults: 0.01 mm and 0.01°, far above
    Blender's float32 rounding at human scale."""

    position: float = 1e-5
    orientation: float = math.radians(0.01)


DEFAULT_STYLE = OverlayStyle()
DEFAULT_TOLERANCE = Tolerance()


def _color(name: str, description: str) -> Any:
    return FloatVectorProperty(
        name=name, description=description, subtype="COLOR", size=4, min=0.0, max=1.0,
        default=getattr(DEFAULT_STYLE, name.lower().replace(" ", "_")),
    )


class LIMBER_AP_preferences(bpy.types.AddonPreferences):
    """Limber's preferences: defaults for new limbs and chains, overlay, tolerance, keys"""

    bl_idname = PACKAGE

    if TYPE_CHECKING:
        limb_solver: str
        chain_solver: str
        limb_goal_type: str
        effector_goal_type: str
        feasible: tuple[float, ...]
        infeasible: tuple[float, ...]
        elbow: tuple[float, ...]
        axis: tuple[float, ...]
        line_width: float
        point_size: float
        position_tolerance: float
        orientation_tolerance: float

    limb_solver: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Limb Solver",
        description="Solver of limbs added from now on (Add Limb, Detect Limbs)",
        items=props.SOLVERS,
        default="ANALYTIC",
    )
    chain_solver: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Chain Solver",
        description="Solver of chains added from now on (Add Chain)",
        items=props.CHAIN_SOLVERS,
        default="DLS",
    )
    limb_goal_type: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Limb Goal",
        description="Goal type of limbs added from now on (Add Limb, Detect Limbs)",
        items=props.GOAL_TYPES,
        default="POSE",
    )
    effector_goal_type: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Chain Goal",
        description="Goal type of the effector of chains added from now on (Add Chain)",
        items=props.GOAL_TYPES,
        default="POSITION",
    )
    feasible: _color("Feasible", "Overlay colour of swivel arcs within the joint limits")  # type: ignore[valid-type,no-redef]
    infeasible: _color("Infeasible", "Overlay colour of swivel arcs outside the joint limits")  # type: ignore[valid-type,no-redef]
    elbow: _color("Elbow", "Overlay colour of the current elbow point")  # type: ignore[valid-type,no-redef]
    axis: _color("Axis", "Overlay colour of the shoulder-to-wrist axis")  # type: ignore[valid-type,no-redef]
    line_width: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Line Width", description="Width of the overlay's lines (1 to 10 pixels)",
        default=DEFAULT_STYLE.line_width, min=1.0, max=10.0,
    )
    point_size: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Point Size", description="Diameter of the overlay's elbow point (2 to 40 pixels)",
        default=DEFAULT_STYLE.point_size, min=2.0, max=40.0,
    )
    position_tolerance: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Position Tolerance",
        description="A goal counts as reached when the evaluated end bone is this close to "
        "it (world units; shown in mm at unit scale; 0.001 mm to 10 mm)",
        default=DEFAULT_TOLERANCE.position, min=1e-6, max=1e-2, precision=3,
        subtype="DISTANCE", unit="LENGTH",
    )
    orientation_tolerance: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Orientation Tolerance",
        description="A goal counts as reached when the evaluated end bone's orientation is "
        "within this angle of it (stored in radians, shown in degrees; 0.001° to 10°)",
        default=DEFAULT_TOLERANCE.orientation, min=math.radians(0.001),
        max=math.radians(10.0), precision=3, subtype="ANGLE", unit="ROTATION",
    )

    def draw(self, context: Any) -> None:
        draw_preferences(self.layout, self, context)


def draw_preferences(layout: Any, prefs: Any, context: Any) -> None:
    """The preferences page: defaults, overlay, tolerance (mm / °), keymap."""
    col = layout.column()
    col.label(text="New Limbs and Chains", icon="BONE_DATA")
    row = col.row(align=True)
    row.prop(prefs, "limb_solver")
    row.prop(prefs, "limb_goal_type")
    row = col.row(align=True)
    row.prop(prefs, "chain_solver")
    row.prop(prefs, "effector_goal_type")
    col.separator()
    col.label(text="Swivel Overlay", icon="OVERLAY")
    row = col.row(align=True)
    for name in ("feasible", "infeasible", "elbow", "axis"):
        row.prop(prefs, name)
    row = col.row(align=True)
    row.prop(prefs, "line_width")
    row.prop(prefs, "point_size")
    col.separator()
    col.label(text="Status Tolerance", icon="DRIVER_DISTANCE")
    row = col.row(align=True)
    row.prop(prefs, "position_tolerance")
    row.prop(prefs, "orientation_tolerance")
    tol = tolerances()
    col.label(text=iface_("reached within {:.3f} mm and {:.3f}°").format(
        tol.position * 1000.0, math.degrees(tol.orientation)))
    col.separator()
    col.label(text="Keymap (Pose mode)", icon="KEYINGSET")
    keymap.draw_keymap(col, context)


def addon_preferences(context: Any = None) -> Any | None:
    """The registered :class:`LIMBER_AP_preferences`, or None when the extension is not
    enabled under :data:`PACKAGE`."""
    ctx: Any = context if context is not None else bpy.context
    addon = ctx.preferences.addons.get(PACKAGE)
    return None if addon is None else addon.preferences


def tolerances(context: Any = None) -> Tolerance:
    """The status tolerance from the preferences (defaults when not registered)."""
    p = addon_preferences(context)
    if p is None:
        return DEFAULT_TOLERANCE
    return Tolerance(float(p.position_tolerance), float(p.orientation_tolerance))


def overlay_style(context: Any = None) -> OverlayStyle:
    """The overlay's colours and sizes from the preferences (defaults when not
    registered)."""
    p = addon_preferences(context)
    if p is None:
        return DEFAULT_STYLE
    values: dict[str, Any] = {}
    for f in fields(OverlayStyle):
        v = getattr(p, f.name)
        values[f.name] = float(v) if isinstance(v, float) else tuple(float(x) for x in v)
    return OverlayStyle(**values)


def apply_limb_defaults(limb: Any, context: Any = None) -> None:
    """Give a new limb the preferred solver and goal type."""
    p = addon_preferences(context)
    if p is not None:
        limb.solver, limb.goal_type = p.limb_solver, p.limb_goal_type


def apply_chain_defaults(chain: Any, effector: Any, context: Any = None) -> None:
    """Give a new chain the preferred chain solver, its first effector the preferred
    effector goal type."""
    p = addon_preferences(context)
    if p is not None:
        chain.solver, effector.goal_type = p.chain_solver, p.effector_goal_type


CLASSES: tuple[type, ...] = (LIMBER_AP_preferences,)
