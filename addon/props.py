"""Limber's saved settings: ``Object.limber`` (limbs, chains and bodies) and ``Scene.limber``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

GOAL_TYPES = [
    ("POSITION", "Position", "The end bone's head goes to the target's location; the end "
     "bone keeps its own local rotation"),
    ("POSE", "Pose", "The end bone's whole frame (location and rotation) goes to the "
     "target's frame"),
    ("PARTIAL", "Partial", "The end bone's head goes to the target's location and its Axis "
     "lines up with the target's same axis; the rotation about that axis is free"),
    ("AIM", "Aim", "The ray from the end bone's head along its Axis passes through the "
     "target's location; the end bone keeps its local rotation"),
]
AXES = [
    ("X", "X", "The end bone's local +X axis"),
    ("Y", "Y", "The end bone's local +Y axis (along the bone)"),
    ("Z", "Z", "The end bone's local +Z axis"),
    ("NEG_X", "-X", "The end bone's local -X axis"),
    ("NEG_Y", "-Y", "The end bone's local -Y axis"),
    ("NEG_Z", "-Z", "The end bone's local -Z axis"),
]
SOLVERS = [
    ("ANALYTIC", "Analytic", "Closed-form two-bone solver (exact, state-free; limbs only)"),
    ("DLS", "Damped least squares", "Numeric: damped least squares with adaptive damping, "
     "from the current pose (limbs: swivel settings are ignored)"),
    ("SDLS", "Selectively damped LS", "Numeric: selectively damped least squares, from the "
     "current pose (limbs: swivel settings are ignored)"),
    ("JACOBIAN_TRANSPOSE", "Jacobian transpose", "Numeric: Jacobian transpose, from the "
     "current pose; slow to converge (limbs: swivel settings are ignored)"),
    ("PSEUDOINVERSE", "Pseudoinverse", "Numeric: Jacobian pseudoinverse, from the current "
     "pose (limbs: swivel settings are ignored)"),
    ("CCD", "CCD", "Numeric: cyclic coordinate descent, from the current pose (limbs: swivel "
     "settings are ignored)"),
    ("LBFGSB", "L-BFGS-B", "Numeric: bounded quasi-Newton optimisation, from the current "
     "pose (limbs: swivel settings are ignored)"),
]
#: Chains: the numeric solvers plus task priority (effector priorities).
CHAIN_SOLVERS = SOLVERS[1:] + [
    ("TASK_PRIORITY", "Task priority", "Numeric: higher-priority effectors first, lower ones "
     "only in their null space (Ki & Sheen)"),
]
SWIVEL_MODES = [
    ("ANGLE", "Angle", "Use the Swivel angle (the elbow's rotation about the shoulder-to-"
     "wrist axis)"),
    ("POLE", "Pole", "Turn the elbow as close as possible to the Pole object"),
    ("LIMITS_MIDPOINT", "Limits midpoint", "The middle of the largest swivel range that "
     "keeps every joint within its limits"),
]
HINGE_AXES = [
    ("AUTO", "Auto", "The lower bone's only IK-unlocked axis, else the rest bend axis, else "
     "the axis the lower bone bends about in the animation (or the current pose), else "
     "local X for a straight rest chain (reported)"),
    ("X", "X", "The lower bone's local +X axis"),
    ("Z", "Z", "The lower bone's local +Z axis"),
    ("NEG_X", "-X", "The lower bone's local -X axis"),
    ("NEG_Z", "-Z", "The lower bone's local -Z axis"),
    ("CUSTOM", "Custom", "The Custom Hinge Axis vector, in the lower bone's local frame"),
]


#: Controls a generated Rigify limb is driven through (``LIMBER_PG_limb.rigify_mode``).
RIGIFY_MODES = [
    ("FK", "FK Controls", "Rotate the FK controls (upper_arm_fk, forearm_fk, hand_fk); the "
     "switch at FK"),
    ("IK", "IK Controls", "Place Rigify's IK controls (hand_ik / foot_ik, the pole when the "
     "rig uses one, the IK base's rotation) from Limber's solution; the switch at IK"),
]


def _forget_found_hinge(self: Any, context: Any) -> None:
    """A new Hinge Axis choice: AUTO looks at the rig, the animation and the pose again."""
    self.hinge_found_source = ""


class LIMBER_PG_status(bpy.types.PropertyGroup):
    """The last solve's outcome for a limb or a chain effector, of its end (tip) bone as
    Blender evaluates it. Written by Limber (limber.solve, live solving, limber.bake, the
    CLI); shown read-only in the panel. After a bake: the worst frame of the range."""

    if TYPE_CHECKING:
        reached: bool
        within_limits: bool
        position_error: float
        orientation_error: float
        message: str
        measured: bool
        frame: int

    reached: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Reached",
        description="The end bone, as Blender evaluates it, is within 0.01 mm and 0.01° of "
        "the goal",
        default=False,
    )
    within_limits: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Within Limits",
        description="The solved joint angles respect the bones' IK limits",
        default=False,
    )
    position_error: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Position Error",
        description="Distance (world units, metres at unit scale) from the evaluated end "
        "bone to the goal; -1 when not solved",
        default=-1.0,
        subtype="DISTANCE",
        unit="LENGTH",
    )
    orientation_error: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Orientation Error",
        description="Angle (radians) between the evaluated end bone's orientation (or "
        "axis) and the goal's; -1 when not solved",
        default=-1.0,
        subtype="ANGLE",
        unit="ROTATION",
    )
    message: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Message",
        description="What binds (reach, limits), what overrides (constraints, drivers, "
        "inherit modes, stretch) and what was skipped; 'ok' when nothing",
        default="",
    )
    measured: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Measured",
        description="The errors were measured on the evaluated pose (depsgraph); else they "
        "come from Limber's model, proven equal to Blender's evaluation for this rig",
        default=False,
    )
    frame: IntProperty(  # type: ignore[valid-type,no-redef]
        name="Frame",
        description="Scene frame the status describes (after a bake: the worst frame)",
        default=0,
    )


class IkFkSwitch:
    """The IK/FK switch of a generated Rigify limb that Limber drives, for a limb and a
    body's pin (a mixin of their property groups): the bone that holds it, its value
    before Limber set it and whether Limber's bake created its F-curve."""

    if TYPE_CHECKING:
        switch_bone: str
        switch_restore: float
        switch_keyed: bool

    switch_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="IK/FK Switch Bone",
        description="Pose bone whose IK_FK custom property Limber sets while it drives "
        "this limb (generated Rigify rigs; empty: none): to a limb's Rigify Controls (FK "
        "1, IK 0), to FK for a body's pin. Keyed by the bake, restored when the limb or "
        "body is removed",
        default="",
    )
    switch_restore: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="IK/FK Switch Before",
        description="The switch's value before Limber set it (restored on removal)",
        default=0.0,
        options={"HIDDEN"},
    )
    switch_keyed: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="IK/FK Switch Keyed by Limber",
        description="The switch's F-curve was created by Limber's bake (removed with the "
        "limb or body)",
        default=False,
        options={"HIDDEN"},
    )


class LIMBER_PG_limb(IkFkSwitch, bpy.types.PropertyGroup):
    """One analytic two-bone limb (arm or leg): upper, lower and end bone."""

    if TYPE_CHECKING:
        name: str
        enabled: bool
        upper_bone: str
        lower_bone: str
        end_bone: str
        target: bpy.types.Object | None
        target_bone: str
        goal_type: str
        axis: str
        solver: str
        swivel: float
        swivel_mode: str
        pole: bpy.types.Object | None
        use_limits: bool
        hinge_axis: str
        hinge_custom: tuple[float, float, float]
        hinge_found: tuple[float, float, float]
        hinge_found_source: str
        rigify_mode: str
        status: LIMBER_PG_status


    # `name` is provided by PropertyGroup (StringProperty).
    enabled: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Enabled",
        description="Solve this limb (Solve, Bake and live playback skip disabled limbs)",
        default=True,
    )
    upper_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Upper Bone",
        description="Name of the upper bone (upper arm / thigh); its parent defines the "
        "shoulder (hip) frame",
        default="",
    )
    lower_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Lower Bone",
        description="Name of the lower bone (forearm / shin), a direct child of the upper "
        "bone; it bends about the hinge axis",
        default="",
    )
    end_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="End Bone",
        description="Name of the end bone (hand / foot), a direct child of the lower bone; "
        "its pose frame is the effector",
        default="",
    )
    target: PointerProperty(  # type: ignore[valid-type,no-redef]
        name="Target",
        description="Object whose world frame the end bone should reach (no target: the "
        "limb is not solved)",
        type=bpy.types.Object,
    )
    target_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Target Bone",
        description="Optional pose bone of the target armature whose frame is the goal "
        "(empty: the target object's own frame)",
        default="",
    )
    goal_type: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Goal",
        description="What of the target the end bone must match",
        items=GOAL_TYPES,
        default="POSE",
    )
    axis: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Axis",
        description="End-bone axis used by Partial and Aim goals (ignored by Position and "
        "Pose goals)",
        items=AXES,
        default="Y",
    )
    solver: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Solver",
        description="Solver for this limb: Analytic is exact and state-free (swivel, pole "
        "and feasible ranges apply); the numeric ones iterate from the current pose",
        items=SOLVERS,
        default="ANALYTIC",
    )
    swivel: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Swivel",
        description="Elbow (knee) rotation about the shoulder-to-wrist axis in radians, any "
        "value (wraps every 360 degrees); 0 puts the elbow on the side it has in the rest "
        "pose; animatable",
        subtype="ANGLE",
        unit="ROTATION",
        default=0.0,
        soft_min=-math.pi,
        soft_max=math.pi,
    )
    swivel_mode: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Swivel Mode",
        description="How the elbow's swivel angle is chosen",
        items=SWIVEL_MODES,
        default="ANGLE",
    )
    pole: PointerProperty(  # type: ignore[valid-type,no-redef]
        name="Pole",
        description="Object the elbow (knee) turns toward in Pole swivel mode (while empty, "
        "the Swivel angle is used)",
        type=bpy.types.Object,
    )
    use_limits: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Use Limits",
        description="Honour the bones' IK limits and locks (Bone > Inverse Kinematics "
        "panel), as Euler angles in each bone's rotation order",
        default=True,
    )
    hinge_axis: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Hinge Axis",
        description="Axis of the lower bone (in its local frame) the elbow/knee bends about",
        items=HINGE_AXES,
        default="AUTO",
        update=_forget_found_hinge,
    )
    hinge_custom: FloatVectorProperty(  # type: ignore[valid-type,no-redef]
        name="Custom Hinge Axis",
        description="Hinge axis used when Hinge Axis is Custom: a non-zero vector in the "
        "lower bone's local frame (normalised; positive angles bend about it by the "
        "right-hand rule)",
        size=3,
        default=(1.0, 0.0, 0.0),
        subtype="XYZ",
    )
    hinge_found: FloatVectorProperty(  # type: ignore[valid-type,no-redef]
        name="Found Hinge Axis",
        description="The AUTO hinge axis Limber found in the animation or pose (lower bone's "
        "frame), kept so that baking over that animation never changes it (written by "
        "Limber)",
        size=3,
        default=(0.0, 0.0, 0.0),
        options={"HIDDEN"},
    )
    rigify_mode: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Rigify Controls",
        description="Which controls of a generated Rigify limb Limber drives (the limb's "
        "IK/FK switch is set to match; keyed by the bake)",
        items=RIGIFY_MODES,
        default="FK",
    )
    hinge_found_source: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Found Hinge Source",
        description="Where Found Hinge Axis came from and for which lower bone, "
        "'<source>:<bone>' (empty: not found yet; written by Limber)",
        default="",
        options={"HIDDEN"},
    )
    status: PointerProperty(  # type: ignore[valid-type,no-redef]
        name="Status",
        description="Outcome of the last solve or bake (read-only; written by Limber)",
        type=LIMBER_PG_status,
    )


class LIMBER_PG_effector(bpy.types.PropertyGroup):
    """One effector of a numeric chain: a tip bone pulled toward a target."""

    if TYPE_CHECKING:
        name: str
        tip_bone: str
        target: bpy.types.Object | None
        target_bone: str
        weight: float
        goal_type: str
        axis: str
        priority: int
        status: LIMBER_PG_status


    tip_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Tip Bone",
        description="Name of the bone whose frame is pulled toward the target",
        default="",
    )
    target: PointerProperty(  # type: ignore[valid-type,no-redef]
        name="Target",
        description="Object whose world frame the tip bone should reach",
        type=bpy.types.Object,
    )
    target_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Target Bone",
        description="Optional pose bone of the target armature used as the goal frame",
        default="",
    )
    weight: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Weight",
        description="Relative weight of this effector's error, 0 to 1000 (unitless)",
        default=1.0,
        min=0.0,
        max=1000.0,
    )
    goal_type: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Goal",
        description="What of the target the tip bone must match (its head for Position)",
        items=GOAL_TYPES,
        default="POSITION",
    )
    axis: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Axis",
        description="Tip-bone axis used by Partial and Aim goals",
        items=AXES,
        default="Y",
    )
    priority: IntProperty(  # type: ignore[valid-type,no-redef]
        name="Priority",
        description="0 is most important; higher numbers are met only without disturbing "
        "lower ones (0 to 16)",
        default=0,
        min=0,
        max=16,
    )
    status: PointerProperty(  # type: ignore[valid-type,no-redef]
        name="Status",
        description="Outcome of the last solve or bake for this effector (read-only)",
        type=LIMBER_PG_status,
    )


class LIMBER_PG_chain(bpy.types.PropertyGroup):
    """A numeric IK chain: a root bone and the effectors below it."""

    if TYPE_CHECKING:
        name: str
        enabled: bool
        root_bone: str
        effectors: bpy.types.bpy_prop_collection[LIMBER_PG_effector]
        solver: str
        use_limits: bool
        max_iterations: int
        status: LIMBER_PG_status


    enabled: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Enabled",
        description="Solve this chain (Solve, Bake and live playback skip disabled chains)",
        default=True,
    )
    root_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Root Bone",
        description="Name of the chain's first bone: its head stays put, it and every bone "
        "down to the tip bones rotate",
        default="",
    )
    effectors: CollectionProperty(  # type: ignore[valid-type,no-redef]
        name="Effectors",
        description="Tip bones and their targets",
        type=LIMBER_PG_effector,
    )
    solver: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Solver",
        description="Numeric solver used for this chain",
        items=CHAIN_SOLVERS,
        default="DLS",
    )
    use_limits: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Use Limits",
        description="Honour the bones' IK limits (the IK locks always decide which axes "
        "rotate: all locked = fixed, one free = hinge, else ball)",
        default=True,
    )
    max_iterations: IntProperty(  # type: ignore[valid-type,no-redef]
        name="Max Iterations",
        description="Iterations per solve at most (1 to 10000)",
        default=200,
        min=1,
        max=10000,
    )
    status: PointerProperty(  # type: ignore[valid-type,no-redef]
        name="Status",
        description="Outcome of the last solve or bake, worst effector (read-only)",
        type=LIMBER_PG_status,
    )


PIN_KINDS = [
    ("FOOT", "Foot", "A leg's end bone (an analytic limb of the body)"),
    ("HAND", "Hand", "An arm's end bone (an analytic limb of the body)"),
    ("HEAD", "Head", "The head bone (a ball of the body)"),
    ("HIPS", "Hips", "The body's root bone (it moves and turns)"),
]


class LIMBER_PG_pin(IkFkSwitch, LIMBER_PG_effector):
    """One pin of a body: an effector (its tip bone a foot, hand, head or the hips) with
    its target, goal, priority and weight (as a chain's effector), and for feet and hands
    the limb's other two bones."""

    if TYPE_CHECKING:
        enabled: bool
        kind: str
        upper_bone: str
        lower_bone: str

    enabled: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Enabled",
        description="Pull this effector toward its target (disabled pins and pins without "
        "a target are not goals)",
        default=True,
    )
    kind: EnumProperty(  # type: ignore[valid-type,no-redef]
        name="Kind",
        description="What the pin holds",
        items=PIN_KINDS,
        default="HAND",
    )
    upper_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Upper Bone",
        description="Feet and hands: the limb's upper bone (thigh / upper arm)",
        default="",
    )
    lower_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Lower Bone",
        description="Feet and hands: the limb's lower bone (shin / forearm), which bends "
        "about the hinge axis Limber finds as for limbs",
        default="",
    )

    # Read as a limb's settings by the IK/FK switch handling (``run.solve.take_switch``):
    @property
    def end_bone(self) -> str:
        """The limb's end bone (the pin's tip bone)."""
        return str(self.tip_bone)

    @property
    def rigify_mode(self) -> str:
        """A body drives a generated Rigify limb's FK controls."""
        return "FK"


class LIMBER_PG_body_bone(bpy.types.PropertyGroup):
    """A bone that bends as part of a body (its ``name`` is the bone's name)."""


class LIMBER_PG_body(bpy.types.PropertyGroup):
    """A full body: a root that moves, bending spine/neck/head bones, analytic limbs and
    pins with priorities."""

    if TYPE_CHECKING:
        name: str
        enabled: bool
        root_bone: str
        bend_bones: bpy.types.bpy_prop_collection[LIMBER_PG_body_bone]
        pins: bpy.types.bpy_prop_collection[LIMBER_PG_pin]
        use_limits: bool
        bend_range: float
        max_iterations: int
        status: LIMBER_PG_status

    enabled: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Enabled",
        description="Solve this body (Solve, Bake and live playback skip a disabled body)",
        default=True,
    )
    root_bone: StringProperty(  # type: ignore[valid-type,no-redef]
        name="Root Bone",
        description="The pelvis / hips bone: its location and rotation are solved",
        default="",
    )
    bend_bones: CollectionProperty(  # type: ignore[valid-type,no-redef]
        name="Bending Bones",
        description="Spine, neck and head bones that rotate (the limbs' bones come from "
        "the pins)",
        type=LIMBER_PG_body_bone,
    )
    pins: CollectionProperty(  # type: ignore[valid-type,no-redef]
        name="Pins",
        description="Effectors (feet, hands, head, hips) and their targets",
        type=LIMBER_PG_pin,
    )
    use_limits: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Use Limits",
        description="Honour the bones' IK limits and locks",
        default=True,
    )
    bend_range: FloatProperty(  # type: ignore[valid-type,no-redef]
        name="Bend Range",
        description="How far each bending bone without IK limits of its own may turn "
        "about each of its axes, either way (0 to 180 degrees)",
        default=math.radians(30.0),
        min=0.0,
        max=math.pi,
        subtype="ANGLE",
        unit="ROTATION",
    )
    max_iterations: IntProperty(  # type: ignore[valid-type,no-redef]
        name="Max Iterations",
        description="Iterations of the body's numeric level per solve at most (1 to 10000)",
        default=100,
        min=1,
        max=10000,
    )
    status: PointerProperty(  # type: ignore[valid-type,no-redef]
        name="Status",
        description="Outcome of the last solve or bake, worst pin (read-only)",
        type=LIMBER_PG_status,
    )


class LIMBER_PG_object(bpy.types.PropertyGroup):
    """All Limber settings of one armature object."""

    if TYPE_CHECKING:
        limbs: bpy.types.bpy_prop_collection[LIMBER_PG_limb]
        active_limb_index: int
        chains: bpy.types.bpy_prop_collection[LIMBER_PG_chain]
        bodies: bpy.types.bpy_prop_collection[LIMBER_PG_body]


    limbs: CollectionProperty(  # type: ignore[valid-type,no-redef]
        name="Limbs",
        description="Analytic two-bone limbs of this armature",
        type=LIMBER_PG_limb,
    )
    active_limb_index: IntProperty(  # type: ignore[valid-type,no-redef]
        name="Active Limb",
        description="Index of the limb selected in the list (0-based)",
        default=0,
        min=0,
    )
    chains: CollectionProperty(  # type: ignore[valid-type,no-redef]
        name="Chains",
        description="Numeric IK chains of this armature",
        type=LIMBER_PG_chain,
    )
    bodies: CollectionProperty(  # type: ignore[valid-type,no-redef]
        name="Bodies",
        description="Full bodies of this armature (numeric spine and root, analytic limbs)",
        type=LIMBER_PG_body,
    )


class LIMBER_PG_scene(bpy.types.PropertyGroup):
    """Scene-wide Limber settings."""

    if TYPE_CHECKING:
        live_playback: bool


    live_playback: BoolProperty(  # type: ignore[valid-type,no-redef]
        name="Live Playback",
        description="Solve every enabled limb after each frame change (scrubbing and "
        "playback show the IK result without baking)",
        default=False,
    )


CLASSES: tuple[type, ...] = (
    LIMBER_PG_status,
    LIMBER_PG_limb,
    LIMBER_PG_effector,
    LIMBER_PG_chain,
    LIMBER_PG_pin,
    LIMBER_PG_body_bone,
    LIMBER_PG_body,
    LIMBER_PG_object,
    LIMBER_PG_scene,
)


def attach() -> None:
    """Add ``Object.limber`` and ``Scene.limber`` (after the classes are registered)."""
    bpy.types.Object.limber = PointerProperty(  # type: ignore[attr-defined,func-returns-value]
        type=LIMBER_PG_object, name="Limber", description="Limber IK settings"
    )
    bpy.types.Scene.limber = PointerProperty(  # type: ignore[attr-defined,func-returns-value]
        type=LIMBER_PG_scene, name="Limber", description="Limber scene settings"
    )


def detach() -> None:
    """Remove the pointer properties added by :func:`attach`."""
    for owner in (bpy.types.Object, bpy.types.Scene):
        if hasattr(owner, "limber"):
            del owner.limber
