"""The body: pose bones ↔ :class:`core.Body` (a Free root, bending trunk/neck/head bones,
analytic limbs), its frame and its configuration.

:func:`build_body` maps a body's bones through the chain mapping
(:func:`.rig.build_chain`: joint ``j`` is bone ``bones[j]``, offsets from the rest pose):

* the root bone is a :class:`core.Free` joint (its location, then its rotation in the
  bone's Euler order, ``'XYZ'`` for quaternion bones), acting in the frame
  :func:`root_frame` reads from the evaluated pose (parent × rest, before the bone's own
  location);
* each limb's bones are a Ball–Hinge–Ball with the limb's hinge axis and IK limits
  (:func:`.rig.limb_dofs` of the limb's :class:`~.rig.LimbRig`);
* the bending bones are Balls: their own IK locks and limits where they have any, else
  ±``bend_range`` about every axis (a human spine bone turns a few tens of degrees);
* every other bone on the way (clavicles, Rigify helpers) is Fixed and folded into its
  children's offsets (:func:`fold_fixed`), so a limb's three joints are adjacent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core import Ball, Fixed, Free, Joint, Skeleton, affine_inverse
from . import rig as mapping
from .read import mat4
from .rig import ChainRig, Dofs, LimbRig, MappingError


@dataclass(frozen=True, eq=False)
class BodyRig:
    """A body's bones mapped to a skeleton (see the module docstring).

    Attributes:
        chain: the folded :class:`~.rig.ChainRig` (root first; Free root).
        limbs: per limb name, its :class:`~.rig.LimbRig` (the analytic unit: the same
            bones, hinge axis and limits the limb pipeline uses).
        bend: the bones that bend (Balls) besides the limbs.
    """

    chain: ChainRig
    limbs: dict[str, LimbRig]
    bend: tuple[str, ...]

    @property
    def root(self) -> str:
        return self.chain.bones[0]


def bend_dofs(pose_bone: Any, bend_range: float, use_limits: bool) -> Dofs:
    """A bending bone's DOFs: its IK locks/limits (:func:`.rig.bone_dofs`) where it has
    any, else a Ball in its rotation order limited to ±``bend_range`` (rad) per axis."""
    lower, upper, limited = mapping.ik_bounds(pose_bone)
    if limited or not use_limits:
        return mapping.bone_dofs(pose_bone, use_limits)
    return Ball(order=mapping.rotation_order(pose_bone), lower=-bend_range, upper=bend_range)


def fold_fixed(rig: ChainRig, keep: set[str]) -> ChainRig:
    """The chain without its Fixed joints that are not in ``keep``: each one's offset is
    composed into its children's (a Fixed joint's frame is its parent's times its
    offset), so the skeleton has only the joints that move or are effectors."""
    joints = rig.skeleton.joints
    index: dict[int, int] = {}
    offsets: dict[int, Any] = {}
    parent_of: dict[int, int] = {}
    out: list[Joint] = []
    bones: list[str] = []
    limits = []
    for j, jt in enumerate(joints):
        off = np.asarray(jt.offset, dtype=np.float64)
        par = jt.parent
        while par >= 0 and par not in index:  # a folded ancestor: compose its offset
            off = offsets[par] @ off
            par = parent_of[par]
        if j > 0 and isinstance(jt.dofs, Fixed) and jt.name not in keep:
            offsets[j], parent_of[j] = off, par
            continue
        index[j] = len(out)
        out.append(Joint(jt.name, index[par] if par >= 0 else -1, off, jt.dofs))
        bones.append(rig.bones[j])
        limits.append(rig.family_limits[j])
    return ChainRig(bones=tuple(bones), skeleton=Skeleton(out), parent=rig.parent,
                    rest_offset=rig.rest_offset, root_connected=rig.root_connected,
                    family_limits=tuple(limits))


def build_body(
    obj: Any,
    root: str,
    bend: Sequence[str],
    limbs: dict[str, LimbRig],
    effectors: Sequence[str],
    *,
    bend_range: float,
    use_limits: bool = True,
) -> BodyRig:
    """Map a body's bones to a :class:`BodyRig` (see the module docstring).

    ``limbs``: {name: LimbRig} of the analytic limbs (built by the limb pipeline);
    ``effectors``: further bones goals may pull (the head). Raises :class:`MappingError`
    for a missing bone or one that is not below the root.
    """
    pbs = obj.pose.bones
    pb = pbs.get(root)
    if pb is None:
        raise MappingError(f"root bone {root!r} not found in armature {obj.name!r}")
    dofs: dict[str, Dofs] = {root: Free(order=mapping.rotation_order(pb))}
    for name in bend:
        if name not in pbs:
            raise MappingError(f"bone {name!r} not found in armature {obj.name!r}")
        dofs[name] = bend_dofs(pbs[name], bend_range, use_limits)
    for lr in limbs.values():
        dofs.update(mapping.limb_dofs(lr, hold_end=False))
    tips = [lr.end for lr in limbs.values()] + [e for e in effectors if e] + list(bend)
    for b in mapping.chain_bones(obj, root, tips):
        dofs.setdefault(b.name, Fixed())
    chain = fold_fixed(mapping.build_chain(obj, root, tips, use_limits=use_limits, dofs=dofs),
                       set(effectors))
    return BodyRig(chain=chain, limbs=dict(limbs), bend=tuple(bend))


def root_frame(obj_eval: Any, rig: BodyRig) -> Any:
    """The world frame (4×4) the root's location and rotation act in, as Blender
    evaluated it: the root bone's evaluated pose without its own ``matrix_basis``."""
    pb = obj_eval.pose.bones[rig.root]
    return mat4(obj_eval.matrix_world) @ mat4(pb.matrix) @ affine_inverse(mat4(pb.matrix_basis))
