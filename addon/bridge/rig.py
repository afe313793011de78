"""The rig: pose bones ↔ :class:`core.Limb` / :class:`core.Skeleton`, rotation values.

Three pose bones (upper, lower, end) of an armature become a :class:`LimbRig`:

* The *shoulder frame* is the frame in which the upper bone's ``matrix_basis`` acts; it
  is read from the evaluated pose each solve (:func:`shoulder_frame`, world space, may
  scale or shear), so everything Blender does above the limb is in it.
* ``A = upper rest⁻¹ · lower rest · T(lower location)`` and likewise ``B`` (lower → end),
  through any helper bones between them (their evaluated pose is folded in by
  :func:`addon.bridge.requests.links_limb`):
  the elbow's proximal frame is the lower bone's rest frame, so the core hinge angle θ4
  about the hinge axis ``k`` (in the lower bone's local frame) *is* the lower bone's local
  rotation ``Rot(k, θ4)``. The wrist rotation R2 is the end bone's local rotation, and the
  effector frame is the end bone's pose frame (E = identity).
* Limits come from the pose bones' IK settings (``lock_ik_*``, ``use_ik_limit_*``,
  ``ik_min_*``/``ik_max_*``) as :class:`core.EulerLimits` in each bone's rotation order
  (``'XYZ'`` for quaternion / axis-angle bones); a single limited axis on a ball joint is
  honoured like any other.

Targets go from world space straight to the shoulder frame (any armature scale).
Solutions are written back as local rotations respecting each bone's ``rotation_mode``
without evaluating the depsgraph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...core import (
    EULER_ORDERS,
    Ball,
    EulerLimits,
    Fixed,
    Free,
    Hinge,
    Joint,
    Limb,
    LimbLimits,
    Skeleton,
    axis_angle_to_matrix,
    basis_frame,
    bend_axis,
    euler_to_matrix,
    matrix_to_axis_angle,
    matrix_to_euler_families,
    nearest_eulers,
    orthonormalize_yz,
    quat_to_matrix,
    rigid_inverse,
    translation,
)
from .read import mat4

FloatArray = NDArray[np.float64]

#: Hinge-axis choices (``LimbSettings.hinge_axis``) → unit axis in the lower bone's frame.
HINGE_AXES: dict[str, tuple[float, float, float]] = {
    "X": (1.0, 0.0, 0.0),
    "Z": (0.0, 0.0, 1.0),
    "NEG_X": (-1.0, 0.0, 0.0),
    "NEG_Z": (0.0, 0.0, -1.0),
}
#: Below this |upper × lower| (sine of the rest bend angle) the rest chain counts as straight.
STRAIGHT_SINE = 1e-4


class MappingError(ValueError):
    """A limb cannot be mapped: missing bones, broken hierarchy, non-uniform scale, ..."""


def _rigid(m: FloatArray) -> FloatArray:
    """``m`` with its 3×3 part made a rotation (Y axis first; float32 noise removed)."""
    return orthonormalize_yz(m)


def rotation_order(pose_bone: Any) -> str:
    """The Euler order a pose bone's limits are expressed in ('XYZ' unless an Euler mode)."""
    mode = str(pose_bone.rotation_mode)
    return mode if mode in EULER_ORDERS else "XYZ"


def ik_bounds(pose_bone: Any) -> tuple[list[float | None], list[float | None], bool]:
    """Per-axis (lower, upper) bounds from a pose bone's IK lock/limit settings.

    Returns ``(lower, upper, any_limited)`` with ``None`` for free axes. A locked axis is
    fixed at 0; a limited one spans ``[ik_min, ik_max]`` (Blender keeps ik_min ∈ [−π, 0],
    ik_max ∈ [0, π]).
    """
    lower: list[float | None] = [None, None, None]
    upper: list[float | None] = [None, None, None]
    limited = False
    for i, ax in enumerate("xyz"):
        if getattr(pose_bone, f"lock_ik_{ax}"):
            lower[i] = upper[i] = 0.0
            limited = True
        elif getattr(pose_bone, f"use_ik_limit_{ax}"):
            lower[i] = float(getattr(pose_bone, f"ik_min_{ax}"))
            upper[i] = float(getattr(pose_bone, f"ik_max_{ax}"))
            limited = True
    return lower, upper, limited


def euler_limits(pose_bone: Any) -> EulerLimits | None:
    """The pose bone's IK limits as :class:`EulerLimits` in its rotation order, or None."""
    lower, upper, limited = ik_bounds(pose_bone)
    if not limited:
        return None
    return EulerLimits(rotation_order(pose_bone), lower, upper)


#: Where an AUTO hinge axis came from (``LimbRig.hinge_source``; shown in the panel).
HINGE_SOURCES: dict[str, str] = {
    "CHOSEN": "chosen axis",
    "CUSTOM": "custom axis",
    "LOCKS": "IK locks",
    "REST": "rest bend",
    "POSE": "bent pose",
    "ACTION": "bent pose in the animation",
    "DEFAULT": "default +X (straight rest, no bent pose: set Hinge Axis)",
}
#: A pose bends the lower bone enough to show its hinge axis above this angle (rad).
POSE_BEND_MIN = np.radians(5.0)
#: At most this many animation frames are sampled for the bent-pose axis.
MAX_ACTION_SAMPLES = 2000


def _rotation_of(mode: str, values: Sequence[float]) -> FloatArray:
    """A local rotation (3×3) from rotation property values in ``mode`` (quaternion w,x,y,z;
    axis-angle angle,x,y,z; Euler angles)."""
    if mode == "QUATERNION":
        return quat_to_matrix(tuple(values))
    if mode == "AXIS_ANGLE":
        if abs(values[0]) < 1e-15 or not any(values[1:]):
            return np.eye(3)
        return axis_angle_to_matrix(tuple(values[1:]), values[0])
    return euler_to_matrix(tuple(values), mode)


_ROTATION_PROPS = {"QUATERNION": ("rotation_quaternion", 4),
                   "AXIS_ANGLE": ("rotation_axis_angle", 4)}


def _animated_rotations(pose_bone: Any) -> list[FloatArray]:
    """The pose bone's local rotations at the keyed frames of its rotation F-curves in the
    armature's assigned action (empty without animation)."""
    from ..compat import assigned_fcurves

    obj = pose_bone.id_data
    fcurves = assigned_fcurves(obj.animation_data) if obj.animation_data else None
    if fcurves is None:
        return []
    mode = str(pose_bone.rotation_mode)
    prop, width = _ROTATION_PROPS.get(mode, ("rotation_euler", 3))
    path = pose_bone.path_from_id(prop)
    curves = {fc.array_index: fc for fc in fcurves if fc.data_path == path}
    if not curves:
        return []
    frames = sorted({kp.co[0] for fc in curves.values() for kp in fc.keyframe_points})
    step = max(1, len(frames) // MAX_ACTION_SAMPLES)
    default = tuple(getattr(pose_bone, prop))
    out = []
    for f in frames[::step]:
        values = [curves[i].evaluate(f) if i in curves else default[i] for i in range(width)]
        out.append(_rotation_of(mode, values))
    return out


def _bent_axis(rotations: Sequence[FloatArray]) -> FloatArray | None:
    """Axis of the most bent of the lower bone's local rotations (positive angle = bending
    further), or None when none bends more than :data:`POSE_BEND_MIN`."""
    best: tuple[float, FloatArray | None] = (float(POSE_BEND_MIN), None)
    for rot in rotations:
        axis, angle = matrix_to_axis_angle(rot)
        if float(angle) > best[0]:
            best = (float(angle), np.asarray(axis, dtype=np.float64))
    return best[1]


def _hinge_axis(
    upper: Any, lower: Any, choice: str, custom: Sequence[float] | None = None,
    found: tuple[Sequence[float], str] | None = None,
) -> tuple[FloatArray, str]:
    """Unit hinge axis in the lower bone's local frame and its source
    (:data:`HINGE_SOURCES`).

    ``CUSTOM``: ``custom`` (a 3-vector in the lower bone's frame, normalised). ``AUTO``, in
    order: the lower bone's only IK-unlocked axis (a Rigify-style hinge set-up); the rest
    bend axis (upper × lower bone direction, so that a positive angle bends further),
    unless the animation bends the other way; the axis of the lower bone's rotation
    relative to rest where it is bent: in the armature's animation (the most bent keyed
    frame) or else the current pose, so an imported clip's own knees and elbows decide;
    else (straight rest, nothing bent) local +X, reported as a default. ``found`` is an
    (axis, source) found so before (kept on the limb, so that baking over the animation
    it came from never changes it).
    """
    if choice in HINGE_AXES:
        return np.array(HINGE_AXES[choice]), "CHOSEN"
    if choice == "CUSTOM":
        k = np.asarray(custom if custom is not None else (), dtype=np.float64)
        n = float(np.linalg.norm(k)) if k.shape == (3,) else 0.0
        if not np.isfinite(n) or n < 1e-9:
            raise MappingError(f"custom hinge axis must be a non-zero 3-vector, got {custom!r}")
        return k / n, "CUSTOM"
    if choice != "AUTO":
        raise MappingError(
            f"hinge_axis must be AUTO, CUSTOM, X, Z, NEG_X or NEG_Z, got {choice!r}")
    unlocked = [i for i, ax in enumerate("xyz") if not getattr(lower, f"lock_ik_{ax}")]
    if len(unlocked) == 1:
        axis: FloatArray = np.eye(3)[unlocked[0]]
        return axis, "LOCKS"
    rest = bend_axis(mat4(upper.bone.matrix_local), mat4(lower.bone.matrix_local),
                     STRAIGHT_SINE)
    if found is not None:
        animated: FloatArray | None = np.asarray(found[0], dtype=np.float64)
    else:
        animated = _bent_axis(_animated_rotations(lower))
    if rest is not None and (animated is None or float(np.dot(rest, animated)) > 0.0):
        return rest, "REST"
    if found is not None and animated is not None:
        return animated, found[1]
    if animated is not None:
        return animated, "ACTION"
    posed = _bent_axis([read_rotation(lower)])
    if posed is not None:
        return posed, "POSE"
    return np.array((1.0, 0.0, 0.0)), "DEFAULT"


def _elbow_limits(lower: Any, k: FloatArray) -> tuple[tuple[float, float] | None, bool]:
    """Hinge-angle limits from the lower bone's IK settings for the axis ``k``.

    Returns ``(limits or None, expressible)``: ``expressible`` is False when the bone has
    limits on an axis the hinge is not aligned with (they cannot be honoured exactly).
    """
    lo, hi, limited = ik_bounds(lower)
    if not limited:
        return None, True
    i = int(np.argmax(np.abs(k)))
    if abs(abs(k[i]) - 1.0) > 1e-9:
        return None, False
    if lo[i] is None or hi[i] is None:
        return None, True
    lo_i, hi_i = float(lo[i]), float(hi[i])  # type: ignore[arg-type]
    if k[i] < 0.0:
        lo_i, hi_i = -hi_i, -lo_i
    return (lo_i, hi_i), True


@dataclass(frozen=True, eq=False)
class LimbRig:
    """A limb's bones and their mapping to a :class:`core.Limb`."""

    upper: str
    lower: str
    end: str
    parent: str | None
    limb: Limb
    hinge_axis: FloatArray  # in the lower bone's local frame
    #: upper rest (armature space) and, with a parent, parent rest⁻¹ · upper rest.
    rest_offset: FloatArray
    upper_connected: bool
    #: Euler limits per bone (upper, lower, end) used to pick Euler families on write.
    family_limits: tuple[EulerLimits | None, EulerLimits | None, EulerLimits | None]
    #: False when limits exist that the limb model cannot express (reported, not fatal).
    limits_exact: bool
    #: Euler orders of the limits of (upper, lower, end) (:func:`rotation_order`).
    orders: tuple[str, str, str] = ("XYZ", "XYZ", "XYZ")
    #: Bones between upper and lower, and between lower and end (helpers, e.g. MCH-).
    helpers: tuple[str, ...] = ()
    #: Limbs for posed links (see :func:`addon.bridge.requests.links_limb`), by key.
    posed_limbs: dict[Any, Limb] = field(default_factory=dict)
    #: Where the hinge axis came from (a key of :data:`HINGE_SOURCES`).
    hinge_source: str = "CHOSEN"
    #: The rotation modes of (upper, lower, end) when the rig was built (None: not read).
    modes: tuple[str, str, str] | None = None
    #: The upper bone inherits its parent's rotation and full scale (its pose is composed
    #: from the parent's), as the bone was when the rig was built.
    upper_inherits: bool = True
    #: One-frame request parts by what they depend on (see
    #: :func:`addon.bridge.requests.limb_request`).
    frames: dict[bytes, Any] = field(default_factory=dict)

    @cached_property
    def hinge_floats(self) -> list[float]:
        """:attr:`hinge_axis` as Python floats (for the one-frame write)."""
        out: list[float] = np.asarray(self.hinge_axis, dtype=np.float64).tolist()
        return out

    @property
    def bones(self) -> tuple[str, str, str]:
        return (self.upper, self.lower, self.end)


def _rest_offset(pb: Any) -> FloatArray:
    """parent rest⁻¹ · own rest (own rest without a parent), rigid 4×4."""
    own = _rigid(mat4(pb.bone.matrix_local))
    if pb.parent is None:
        return own
    return rigid_inverse(_rigid(mat4(pb.parent.bone.matrix_local))) @ own


def _between(child: Any, ancestor: Any) -> list[str] | None:
    """Names of the bones strictly between ``child`` and its ``ancestor`` (None: not an
    ancestor)."""
    out: list[str] = []
    pb = child.parent
    while pb is not None and pb != ancestor:
        out.append(pb.name)
        pb = pb.parent
    return None if pb is None else out


def pose_bones(obj: Any, names: tuple[str, str, str]) -> tuple[Any, Any, Any]:
    """The three pose bones, checked to exist and to form a parent chain (helper bones
    between them are allowed: see :func:`helper_bones`)."""
    if obj is None or obj.type != "ARMATURE":
        raise MappingError(f"{getattr(obj, 'name', obj)!r} is not an armature object")
    out = []
    for role, name in zip(("upper", "lower", "end"), names, strict=True):
        if not name:
            raise MappingError(f"no {role} bone set")
        pb = obj.pose.bones.get(name)
        if pb is None:
            raise MappingError(f"{role} bone {name!r} not found in armature {obj.name!r}")
        out.append(pb)
    up, lo, en = out
    if _between(lo, up) is None:
        raise MappingError(f"bone {lo.name!r} must be a child of {up.name!r} (or below it)")
    if _between(en, lo) is None:
        raise MappingError(f"bone {en.name!r} must be a child of {lo.name!r} (or below it)")
    return up, lo, en


def helper_bones(up: Any, lo: Any, en: Any) -> tuple[str, ...]:
    """The bones between upper and lower and between lower and end (their pose is read
    from the evaluated depsgraph and folded into the limb's links)."""
    return tuple((_between(lo, up) or []) + (_between(en, lo) or []))


def build_rig(
    obj: Any,
    names: tuple[str, str, str],
    *,
    hinge_axis: str = "AUTO",
    use_limits: bool = True,
    hinge_custom: Sequence[float] | None = None,
    hinge_found: tuple[Sequence[float], str] | None = None,
) -> LimbRig:
    """Map three pose bones (upper, lower, end) of ``obj`` to a :class:`LimbRig`."""
    up, lo, en = pose_bones(obj, names)
    r_up = _rigid(mat4(up.bone.matrix_local))
    r_lo = _rigid(mat4(lo.bone.matrix_local))
    r_en = _rigid(mat4(en.bone.matrix_local))
    t_lo = np.zeros(3) if lo.bone.use_connect else np.array(lo.location, dtype=np.float64)
    t_en = np.zeros(3) if en.bone.use_connect else np.array(en.location, dtype=np.float64)
    a = rigid_inverse(r_up) @ r_lo @ translation(t_lo)
    b = rigid_inverse(r_lo) @ r_en @ translation(t_en)
    k, source = _hinge_axis(up, lo, hinge_axis, hinge_custom, hinge_found)
    parent = up.parent
    rest_offset = _rest_offset(up)
    limits = None
    exact = True
    sh = wr = None
    if use_limits:
        sh = euler_limits(up)
        wr = euler_limits(en)
        elbow, exact = _elbow_limits(lo, k)
        if sh is not None or wr is not None or elbow is not None:
            limits = LimbLimits(shoulder=sh, elbow=elbow, wrist=wr)
    try:
        limb = Limb(a=_rigid(a), b=_rigid(b), elbow_axis=k, limits=limits)
    except ValueError as exc:
        raise MappingError(f"bones {names!r} do not form a valid limb: {exc}") from exc
    lo_lim = euler_limits(lo) if use_limits else None
    return LimbRig(
        upper=up.name,
        lower=lo.name,
        end=en.name,
        parent=None if parent is None else parent.name,
        limb=limb,
        hinge_axis=k,
        rest_offset=rest_offset,
        upper_connected=bool(up.bone.use_connect),
        family_limits=(sh, lo_lim, wr),
        limits_exact=exact,
        orders=(rotation_order(up), rotation_order(lo), rotation_order(en)),
        helpers=helper_bones(up, lo, en),
        hinge_source=source,
        modes=(str(up.rotation_mode), str(lo.rotation_mode), str(en.rotation_mode)),
        upper_inherits=bool(up.bone.use_inherit_rotation) and up.bone.inherit_scale == "FULL",
    )


# --------------------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------------------


def bone_frame(obj_eval: Any, bone: str) -> FloatArray:
    """The world frame (4×4, may scale or shear) in which a bone's local rotation acts, as
    Blender evaluated it (:func:`core.basis_frame` of its evaluated pose)."""
    pb = obj_eval.pose.bones[bone]
    out: FloatArray = mat4(obj_eval.matrix_world) @ basis_frame(
        mat4(pb.matrix), mat4(pb.matrix_basis))
    return out


def shoulder_frame(obj_eval: Any, rig: LimbRig) -> FloatArray:
    """The world frame in which the limb's upper-bone rotation R1 acts (evaluated)."""
    return bone_frame(obj_eval, rig.upper)


# --------------------------------------------------------------------------------------
# Reading local rotations
# --------------------------------------------------------------------------------------


def read_rotation(pose_bone: Any) -> FloatArray:
    """The pose bone's local rotation (3×3) from its rotation properties."""
    mode = str(pose_bone.rotation_mode)
    prop, _ = _ROTATION_PROPS.get(mode, ("rotation_euler", 3))
    return _rotation_of(mode, tuple(getattr(pose_bone, prop)))


def read_limb_pose(obj: Any, rig: LimbRig) -> tuple[FloatArray, float, FloatArray]:
    """Current (R1, θ4, R2) of the limb from the bones' local rotations.

    θ4 is the lower bone's rotation angle about the hinge axis (its component along the
    axis; rotation about other axes cannot be represented and is dropped).
    """
    pbs = obj.pose.bones
    r1 = read_rotation(pbs[rig.upper])
    rl = read_rotation(pbs[rig.lower])
    r2 = read_rotation(pbs[rig.end])
    axis, angle = matrix_to_axis_angle(rl)
    theta = float(angle) * float(np.dot(axis, rig.hinge_axis))
    return r1, theta, r2


# --------------------------------------------------------------------------------------
# General chains (numeric solvers): bones → core.Skeleton
# --------------------------------------------------------------------------------------

Dofs = Ball | Hinge | Fixed | Free


def bone_dofs(pose_bone: Any, use_limits: bool = True) -> Dofs:
    """A pose bone's degrees of freedom from its IK locks (and, with ``use_limits``, its
    IK limits, rad):

    * all three axes locked (``lock_ik_x/y/z``): :class:`core.Fixed`;
    * exactly one axis unlocked: :class:`core.Hinge` about that local axis;
    * otherwise :class:`core.Ball` in the bone's rotation order ('XYZ' for quaternion and
      axis-angle bones) with the locked components locked.

    Locks always shape the joint; ``use_limits=False`` only drops the ranges.
    """
    locked = tuple(bool(getattr(pose_bone, f"lock_ik_{ax}")) for ax in "xyz")
    free = [i for i in range(3) if not locked[i]]
    lower, upper, _ = ik_bounds(pose_bone) if use_limits else ([None] * 3, [None] * 3, False)
    if not free:
        return Fixed()
    if len(free) == 1:
        i = free[0]
        return Hinge(axis=np.eye(3)[i], lower=lower[i], upper=upper[i])
    lo = [None if locked[i] else lower[i] for i in range(3)]
    hi = [None if locked[i] else upper[i] for i in range(3)]
    return Ball(order=rotation_order(pose_bone), lower=lo, upper=hi,  # type: ignore[arg-type]
                locked=locked)  # type: ignore[arg-type]


def limb_dofs(rig: LimbRig, hold_end: bool) -> dict[str, Dofs]:
    """DOFs of a limb's three bones for the numeric solvers: the upper and end bones are
    Euler balls with the limb's shoulder/wrist limits, the lower bone a hinge about the
    limb's hinge axis with its elbow limits; ``hold_end`` makes the end bone Fixed (goals
    that keep the end bone's own rotation)."""
    lim = rig.limb.limits

    def ball(e: EulerLimits | None, order: str) -> Ball:
        if e is None:
            return Ball(order=order)
        return Ball(order=e.order, lower=e.lower, upper=e.upper)  # type: ignore[arg-type]

    elbow = None if lim is None else lim.elbow
    sh = None if lim is None else lim.shoulder
    wr = None if lim is None else lim.wrist
    return {
        rig.upper: ball(sh, rig.orders[0]),
        rig.lower: Hinge(
            axis=rig.hinge_axis,
            lower=None if elbow is None else elbow[0],
            upper=None if elbow is None else elbow[1],
        ),
        rig.end: Fixed() if hold_end else ball(wr, rig.orders[2]),
    }


@dataclass(frozen=True, eq=False)
class ChainRig:
    """A root bone and the bones on the paths to its tips, mapped to a :class:`core.Skeleton`.

    Joint ``j`` of :attr:`skeleton` is bone ``bones[j]`` (root first, parents before
    children); its frame is the bone's pose frame expressed in the *root frame* (the frame
    in which the root bone's local rotation acts, see :func:`base_frame`), so the root joint
    has the identity offset and every other joint ``parent rest⁻¹ · own rest ·
    T(location)`` (the location only for unconnected bones). A joint's DOFs produce the
    bone's local rotation: Ball q entries are the bone's Euler angles (locked ones 0),
    a Hinge's its angle about the axis.
    """

    bones: tuple[str, ...]
    skeleton: Skeleton
    parent: str | None
    rest_offset: FloatArray
    root_connected: bool
    #: Euler limits per bone, used to pick Euler families on write (None: free).
    family_limits: tuple[EulerLimits | None, ...]

    def joint(self, bone: str) -> int:
        return self.bones.index(bone)


def chain_bones(obj: Any, root: str, tips: Sequence[str]) -> list[Any]:
    """Pose bones from ``root`` to every tip (the union of the paths), parents first.

    Raises :class:`MappingError` for a missing bone or a tip not below the root.
    """
    if obj is None or obj.type != "ARMATURE":
        raise MappingError(f"{getattr(obj, 'name', obj)!r} is not an armature object")
    pbs = obj.pose.bones
    if not root or pbs.get(root) is None:
        raise MappingError(f"root bone {root!r} not found in armature {obj.name!r}")
    if not tips:
        raise MappingError(f"chain at {root!r} has no effectors")
    depth: dict[str, int] = {root: 0}
    for tip in tips:
        pb = pbs.get(tip) if tip else None
        if pb is None:
            raise MappingError(f"tip bone {tip!r} not found in armature {obj.name!r}")
        path = []
        while pb is not None and pb.name != root:
            path.append(pb.name)
            pb = pb.parent
        if pb is None:
            raise MappingError(f"tip bone {tip!r} is not the root bone {root!r} or below it")
        for k, name in enumerate(reversed(path), start=1):
            depth[name] = k
    order = {pb.name: i for i, pb in enumerate(pbs)}
    names = sorted(depth, key=lambda n: (depth[n], order[n]))
    return [pbs[n] for n in names]


def _family_limits(d: object) -> EulerLimits | None:
    if not isinstance(d, Ball):
        return None
    lo = np.where(d.locked, 0.0, np.asarray(d.lower))
    hi = np.where(d.locked, 0.0, np.asarray(d.upper))
    if not (np.isfinite(lo).any() or np.isfinite(hi).any()):
        return None
    return EulerLimits(d.order, tuple(lo.tolist()), tuple(hi.tolist()))


def build_chain(
    obj: Any,
    root: str,
    tips: Sequence[str],
    *,
    use_limits: bool = True,
    dofs: dict[str, Dofs] | None = None,
) -> ChainRig:
    """Map a root bone and its tips to a :class:`ChainRig` (see :func:`bone_dofs`);
    ``dofs`` overrides the DOFs of some bones (numeric limbs use :func:`limb_dofs`)."""
    pbs = chain_bones(obj, root, tips)
    names = [pb.name for pb in pbs]
    joints = []
    for pb in pbs:
        d = (dofs or {}).get(pb.name) or bone_dofs(pb, use_limits)
        if pb.name == root:
            joints.append(Joint(pb.name, -1, np.eye(4), d))
            continue
        off = _rest_offset(pb)
        if not pb.bone.use_connect:
            off = off @ translation(pb.location)
        joints.append(Joint(pb.name, names.index(pb.parent.name), _rigid(off), d))
    try:
        skeleton = Skeleton(joints)
    except ValueError as exc:
        raise MappingError(f"chain at {root!r} cannot be mapped: {exc}") from exc
    head = pbs[0]
    return ChainRig(
        bones=tuple(names),
        skeleton=skeleton,
        parent=None if head.parent is None else head.parent.name,
        rest_offset=_rest_offset(head),
        root_connected=bool(head.bone.use_connect),
        family_limits=tuple(_family_limits(j.dofs) for j in joints),
    )


def root_frame(obj_eval: Any, rig: ChainRig) -> FloatArray:
    """The world frame in which the chain's root-bone rotation acts (evaluated)."""
    return bone_frame(obj_eval, rig.bones[0])


def _ball_angles(items: list[tuple[Any, Ball, EulerLimits | None]]) -> list[FloatArray]:
    """Each bone's current rotation as Euler angles in its Ball's order (its own angles if
    the bone is in that Euler mode, else the family within the limits nearest zero, as
    :func:`.write.pick_euler`), for (pose bone, Ball, limits) items: the quaternions
    converted in one call and the Euler families in one call per order."""
    out: list[FloatArray] = [np.empty(0)] * len(items)
    quats: list[int] = []
    others: dict[int, FloatArray] = {}
    for i, (pb, d, _) in enumerate(items):
        mode = str(pb.rotation_mode)
        if mode == d.order:
            out[i] = np.array(pb.rotation_euler, dtype=np.float64)
        elif mode == "QUATERNION":
            quats.append(i)
        else:
            others[i] = read_rotation(pb)
    rot: dict[int, FloatArray] = dict(others)
    if quats:
        ms = quat_to_matrix(np.array([tuple(items[i][0].rotation_quaternion) for i in quats]))
        rot.update(zip(quats, ms, strict=True))
    by_order: dict[str, list[int]] = {}
    for i in rot:
        by_order.setdefault(items[i][1].order, []).append(i)
    zero = (0.0, 0.0, 0.0)
    for order, idx in by_order.items():
        fams = matrix_to_euler_families(np.array([rot[i] for i in idx]), order)
        for i, fam in zip(idx, fams, strict=True):
            lim = items[i][2]
            inside = None if lim is None else lim.contains(fam[None], tol=1e-6)
            out[i] = nearest_eulers(fam[None], zero, inside)[0]
    return out


def read_chain_q(obj: Any, rig: ChainRig) -> FloatArray:
    """The chain's configuration q from the bones' current local rotations (rotation
    about locked axes, or about other axes than a hinge's, is dropped)."""
    pbs = obj.pose.bones
    sk = rig.skeleton
    q = np.zeros(sk.n_dofs)
    balls: list[tuple[Any, Ball, EulerLimits | None]] = []
    at: list[tuple[int, Any]] = []  # (joint, its Ball / Free) per item of balls
    for j, name in enumerate(rig.bones):
        d = sk.joints[j].dofs
        if isinstance(d, Ball):
            balls.append((pbs[name], d, rig.family_limits[j]))
            at.append((j, d))
        elif isinstance(d, Free):  # the bone's location, then its rotation's angles
            balls.append((pbs[name], d.ball, None))
            at.append((j, d))
        elif isinstance(d, Hinge):
            axis, angle = matrix_to_axis_angle(read_rotation(pbs[name]))
            q[sk.dof_slices[j]] = float(angle) * float(np.dot(axis, np.asarray(d.axis)))
    for (j, d), angles in zip(at, _ball_angles(balls), strict=True):
        if isinstance(d, Free):
            q[sk.dof_slices[j]] = np.concatenate([np.array(pbs[rig.bones[j]].location,
                                                           dtype=np.float64), angles])
        else:
            q[sk.dof_slices[j]] = angles[list(d.free)]
    return q
