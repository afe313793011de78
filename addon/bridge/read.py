"""read: Blender → arrays. What a limb solve needs, from the *evaluated* depsgraph.

Every matrix is read as Blender evaluated it (pose bones' ``matrix`` and
``matrix_basis`` of the evaluated armature, evaluated targets and poles), so whatever
Blender does above the limb — pose scale, inherit modes, constraints, drivers, NLA — is
in the numbers. :class:`LimbRead` holds N frames (a live solve reads one; a bake stacks
its frames with :func:`stack`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..compat import assigned_fcurves

FloatArray = NDArray[np.float64]


class ReadError(ValueError):
    """Something a solve needs is missing (a bone, a target bone)."""


def made(cls: Any, **fields: Any) -> Any:
    """An instance of the frozen dataclass ``cls`` with ``fields`` (every field, defaults
    included), made without its generated ``__init__``: a live solve builds a read and a
    request per limb and frame, and ``__init__``'s ``object.__setattr__`` per field costs
    more than the rest of the read. For values the caller has already checked."""
    out = object.__new__(cls)
    out.__dict__.update(fields)
    return out


def constrained(pose_bone: Any) -> bool:
    """Whether a pose bone has a constraint that acts (enabled, influence > 0); the
    collection's length first (most bones have none: no iteration then)."""
    cons = pose_bone.constraints
    return len(cons) > 0 and any(c.enabled and c.influence > 0.0 for c in cons)


def mat4(m: Any) -> FloatArray:
    """A mathutils 4×4 matrix (or nested sequence) as a float64 array."""
    return np.array(m, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class LimbRead:
    """One limb's reads for N frames (world space unless noted).

    Attributes:
        world: (N, 4, 4) armature object's world matrix (any scale, shear allowed).
        pose: (N, 3, 4, 4) pose matrices of (upper, lower, end), armature space; None
            when the limb's links are its rest links (``parent`` given, no helper bones,
            unit scale on the three bones): then nothing of them needs reading.
        basis: (N, 3, 4, 4) their ``matrix_basis`` (local location · rotation · scale), or
            None with ``pose``.
        location: (N, 3) the upper bone's local location.
        end_basis: (N, 4, 4) the end bone's ``matrix_basis`` (its held rotation), or None
            when the goal sets the end bone's rotation.
        target: (N, 4, 4) the target's world frame (× its target bone's pose).
        pole: (N, 3) pole world positions, or None (no pole in use).
        swivel: (N,) swivel angles, radians.
        parent: (N, 4, 4) pose matrices of the upper bone's parent (identity without one)
            when the upper bone follows it plainly (Inherit Rotation, full Inherit Scale,
            no constraints of its own): its frame is then composed from the parent and
            does not depend, even by float32 rounding, on the limb's current pose; else
            None (the frame is taken from the upper bone's own evaluated pose).
        end_pose: (N, 3, 4, 4) when the end bone does not inherit rotation (and the goal
            is not a position goal): the lower bone's and the end bone's evaluated pose
            matrices and the end bone's rest matrix (armature space); else None.
        lower_rest: (N, 4, 4) when the lower bone does not inherit rotation: its rest
            matrix (armature space); else None.
    """

    world: FloatArray
    pose: FloatArray | None
    basis: FloatArray | None
    location: FloatArray
    end_basis: FloatArray | None
    target: FloatArray
    pole: FloatArray | None
    swivel: FloatArray
    parent: FloatArray | None = None
    end_pose: FloatArray | None = None
    lower_rest: FloatArray | None = None

    def __len__(self) -> int:
        return len(self.swivel)


def target_world(target_eval: Any, target_bone: str = "") -> FloatArray:
    """A target's world frame (4×4; × its pose bone's matrix when ``target_bone``)."""
    tw = mat4(target_eval.matrix_world)
    if target_bone:
        pb = target_eval.pose.bones.get(target_bone) if target_eval.type == "ARMATURE" else None
        if pb is None:
            raise ReadError(
                f"target bone {target_bone!r} not found in target {target_eval.name!r}")
        tw = tw @ mat4(pb.matrix)
    return tw


def bone_world(obj_eval: Any, bone: str) -> FloatArray:
    """World matrix (4×4) of an evaluated pose bone (what the viewport shows)."""
    return mat4(obj_eval.matrix_world) @ mat4(obj_eval.pose.bones[bone].matrix)


_UNIT = (1.0, 1.0, 1.0)


def setting_fcurves(obj: Any) -> Any | None:
    """The F-curves that may animate ``obj``'s Limber settings (its assigned action's), or
    None when there are none."""
    ad = obj.animation_data
    fcurves = assigned_fcurves(ad) if ad is not None else None
    return None if fcurves is None or not len(fcurves) else fcurves


#: :func:`animated_setting`'s default: look the F-curves up.
_LOOK_UP: Any = object()


def animated_setting(settings: Any, prop: str, depsgraph: Any,
                     fcurves: Any = _LOOK_UP) -> float:
    """A limb setting's value at the scene's current frame: its F-curve in the armature's
    assigned action when it has one (Blender does not flush animated values of add-on
    property groups to every object it evaluates, e.g. armatures made by the BVH
    importer), else the stored value. ``fcurves``: :func:`setting_fcurves` of the
    armature when the caller has read it (once for all its limbs)."""
    value = float(getattr(settings, prop))
    if fcurves is _LOOK_UP:
        fcurves = setting_fcurves(settings.id_data)
    if fcurves is None:
        return value
    fc = fcurves.find(settings.path_from_id(prop))
    if fc is None or fc.mute:
        return value
    scene = depsgraph.scene
    return float(fc.evaluate(scene.frame_current + scene.frame_subframe))


def read_limb(obj_eval: Any, settings: Any, bones: tuple[str, str, str], depsgraph: Any,
              helpers: bool = False) -> LimbRead:
    """One frame's reads of a limb (N = 1) at the depsgraph's current evaluation.

    ``bones``: (upper, lower, end) names; ``settings``: the ``LIMBER_PG_limb``;
    ``helpers``: whether bones sit between them (their pose must then be read).
    """
    pbs = obj_eval.pose.bones
    up, lo, en = pbs[bones[0]], pbs[bones[1]], pbs[bones[2]]
    lb, eb = lo.bone, en.bone
    parent = None
    b = up.bone
    if b.use_inherit_rotation and b.inherit_scale == "FULL" and not constrained(up):
        parent = np.eye(4)[None] if up.parent is None else mat4(up.parent.matrix)[None]
    pose = basis = None
    if parent is None or helpers or not (tuple(up.scale) == tuple(lo.scale) == tuple(en.scale)
                                         == _UNIT) or _partial_scale(lb, eb):
        pose = np.empty((1, 3, 4, 4))
        basis = np.empty((1, 3, 4, 4))
        for i, pb in enumerate((up, lo, en)):
            pose[0, i] = pb.matrix
            basis[0, i] = pb.matrix_basis
    # No target (snapping an FK pose): the identity, replaced by the caller.
    target = (np.eye(4) if settings.target is None else
              target_world(settings.target.evaluated_get(depsgraph), settings.target_bone))
    pole = None
    if settings.swivel_mode == "POLE" and settings.pole is not None:
        pole = np.array([settings.pole.evaluated_get(depsgraph).matrix_world.translation],
                        dtype=np.float64)
    return made(  # type: ignore[no-any-return]
        LimbRead,
        world=mat4(obj_eval.matrix_world)[None],
        pose=pose,
        basis=basis,
        location=np.array([up.location], dtype=np.float64),
        end_basis=(mat4(en.matrix_basis)[None] if settings.goal_type in ("POSITION", "AIM")
                   else None),
        target=target[None],
        pole=pole,
        swivel=np.array([animated_setting(settings, "swivel", depsgraph)]),
        parent=parent,
        end_pose=(None if eb.use_inherit_rotation or settings.goal_type == "POSITION"
                  else np.array([[lo.matrix, en.matrix, eb.matrix_local]],
                                dtype=np.float64)),
        lower_rest=(None if lb.use_inherit_rotation
                    else mat4(lb.matrix_local)[None]),
    )


def _partial_scale(lower: Any, end: Any) -> bool:
    """Whether the lower bone follows the upper bone's rotation but the lower or the end
    bone not its full scale: the links then differ from the rest links by the scale
    they drop (read from the evaluated pose: :func:`core.limb_links`)."""
    return bool(lower.use_inherit_rotation) and (
        lower.inherit_scale != "FULL"
        or (end.use_inherit_rotation and end.inherit_scale != "FULL"))


def stack(reads: list[LimbRead]) -> LimbRead:
    """N one-frame reads → one N-frame read (poles: all or none)."""
    def cat(arrays: list[FloatArray | None]) -> FloatArray | None:
        return None if any(a is None for a in arrays) else np.concatenate(arrays)  # type: ignore[arg-type]

    if any(r.pose is None for r in reads) and not all(r.pose is None for r in reads):
        # some frames need the links: read them for all (frames are re-read then)
        raise ValueError("a limb's links are plain on some frames only")
    poles = [r.pole for r in reads]
    parents = [r.parent for r in reads]
    return LimbRead(
        world=np.concatenate([r.world for r in reads]),
        pose=cat([r.pose for r in reads]),
        basis=cat([r.basis for r in reads]),
        location=np.concatenate([r.location for r in reads]),
        end_basis=cat([r.end_basis for r in reads]),
        target=np.concatenate([r.target for r in reads]),
        pole=cat(poles),
        swivel=np.concatenate([r.swivel for r in reads]),
        parent=cat(parents),
        end_pose=cat([r.end_pose for r in reads]),
        lower_rest=cat([r.lower_rest for r in reads]),
    )


def broadcast(read: LimbRead, n: int, **over: Any) -> LimbRead:
    """A one-frame read repeated over N frames, some fields replaced by (N, ...) arrays."""
    def rep(a: FloatArray | None) -> FloatArray | None:
        return None if a is None else np.broadcast_to(a[0], (n,) + a.shape[1:])

    fields: dict[str, Any] = {k: rep(getattr(read, k)) for k in (
        "world", "pose", "basis", "location", "end_basis", "target", "pole", "swivel",
        "parent", "end_pose", "lower_rest")}
    fields.update(over)
    return LimbRead(**fields)
