"""Generated Rigify limbs: the IK/FK switch, Rigify's IK controls, and what the rig shows.

A limb found on a generated Rigify rig (``limb.switch_bone`` set) is driven in one of two
modes (``limb.rigify_mode``):

* ``FK``: Limber rotates the FK controls (the limb's own bones); the switch at FK.
* ``IK``: Limber places Rigify's own IK controls from its analytic solution, so the rig's
  IK shows Limber's swivel: the IK end control (``hand_ik`` / ``foot_ik``) where the ORG-
  end bone must be (through the bone it copies in IK, so the foot-roll mechanism is
  respected), the pole control (``upper_arm_ik_target`` / ``thigh_ik_target``) on Limber's
  pole point when the rig uses its pole (``pole_vector``), and the IK chain's start pose:
  the IK base control's rotation (``upper_arm_ik``: the swivel control when the pole is off)
  and the mechanism bone under the IK constraint (``MCH-forearm_ik``). The limb is solved
  with its rest lengths, the IK chain's (:func:`ik_request`). Blender's IK (Rigify sets IK
  stretch 0.1 on both bones) then has nothing to do; started from any other pose it
  iterates and shrinks the bones by 1.5–3 % on a reachable goal (the elbow 8–10 mm off).
  Out of reach, the end control goes to the target and the rig stretches as set up. The
  switch at IK. The status measures the DEF- end bone on the evaluated pose.

Rigify limbs are read where the rig shows them (the ORG- bones copy the FK or the IK chain)
when snapping. Written IK channels other than a bone's rotation are keyed as
``"<bone>\\t<property>"`` in a status's ``written`` (:func:`channel`, :func:`bone_of`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from mathutils import Matrix
from numpy.typing import NDArray

from ...core import affine_inverse
from ..detect import (
    RIGIFY_FK_VALUE,
    RIGIFY_IK_VALUE,
    RIGIFY_POLE_SWITCH,
    RIGIFY_SWITCH,
    RigifyIk,
    rigify_ik,
)
from .read import mat4
from .write import rotation_path, rotation_values

FloatArray = NDArray[np.float64]
Written = dict[str, tuple[str, tuple[float, ...]]]
_SEP = "\t"


def channel(bone: str, prop: str) -> str:
    """Key of a written channel other than the bone's rotation (see the module docstring)."""
    return f"{bone}{_SEP}{prop}"


def bone_of(key: str) -> str:
    """The bone of a key of a status's ``written``."""
    return key.split(_SEP, 1)[0]


def ik_chain(obj: Any, settings: Any) -> RigifyIk | None:
    """The Rigify IK chain a limb drives (IK mode on a generated Rigify limb), or None."""
    if not settings.switch_bone or settings.rigify_mode != "IK":
        return None
    return rigify_ik(obj, settings.switch_bone)


def shown_bones(obj: Any, settings: Any) -> tuple[str, str, str] | None:
    """The ORG- (upper, lower, end) bones of a Rigify limb: what the rig shows in either
    mode (the FK controls are hidden in IK); None for other limbs."""
    if not settings.switch_bone:
        return None
    ik = rigify_ik(obj, settings.switch_bone)
    return None if ik is None else ik.org


def measured_end(obj: Any, settings: Any) -> str:
    """The bone whose evaluated pose a limb's status measures: the DEF- end bone in IK
    mode, else the limb's end bone."""
    ik = ik_chain(obj, settings)
    return settings.end_bone if ik is None else ik.deform_end


def switch_value(settings: Any) -> float:
    """The IK/FK switch value of a limb's mode."""
    return RIGIFY_IK_VALUE if settings.rigify_mode == "IK" else RIGIFY_FK_VALUE


def set_switch(obj: Any, settings: Any) -> None:
    """Set the limb's IK/FK switch to its mode's value (no-op when it already is)."""
    pb = obj.pose.bones.get(settings.switch_bone) if settings.switch_bone else None
    if pb is None or RIGIFY_SWITCH not in pb.keys():
        return
    value = switch_value(settings)
    if float(pb[RIGIFY_SWITCH]) != value:
        pb[RIGIFY_SWITCH] = value
        obj.update_tag()


def uses_pole(obj: Any, settings: Any) -> bool:
    """Whether the rig's IK uses its pole control (the switch bone's ``pole_vector``)."""
    pb = obj.pose.bones.get(settings.switch_bone)
    return bool(pb is not None and pb.get(RIGIFY_POLE_SWITCH, False))


def _write_rotation(pb: Any, basis: Matrix, written: Written) -> None:
    path = rotation_path(pb)
    vals = rotation_values(pb, np.array(basis.to_3x3().normalized(), dtype=np.float64), None)
    setattr(pb, path, vals)
    written[pb.name] = (path, vals)


def _write_scale(pb: Any, basis: Matrix, written: Written) -> None:
    v = basis.to_scale()
    vals = (float(v[0]), float(v[1]), float(v[2]))
    pb.scale = vals
    written[channel(pb.name, "scale")] = ("scale", vals)


def _write_location(pb: Any, basis: Matrix, written: Written) -> None:
    t = basis.to_translation()
    vals = (float(t[0]), float(t[1]), float(t[2]))
    pb.location = vals
    written[channel(pb.name, "location")] = ("location", vals)


def _local(obj_eval: Any, bone: str, pose: FloatArray) -> Matrix:
    """The basis matrix giving ``bone`` the armature-space ``pose``, with its parent as
    evaluated (Blender's own conversion: inherit modes, local location)."""
    m: Matrix = obj_eval.convert_space(pose_bone=obj_eval.pose.bones[bone],
                                       matrix=Matrix(pose.tolist()),
                                       from_space="POSE", to_space="LOCAL")
    return m


def write_ik(obj: Any, settings: Any, ik: RigifyIk, poses: FloatArray,
             pole: FloatArray | None, depsgraph: Any, reach: FloatArray | None = None
             ) -> Written:
    """Place a limb's Rigify IK controls for the solved pose.

    Args:
        obj: the armature object (original).
        poses: (3, 4, 4) world poses of the limb's upper, lower and end bone as solved
            (:meth:`core.Limb.frames` through the request's frame); the ORG- bones copy
            the IK chain, so these are the IK chain's poses.
        pole: (3,) world pole point (:meth:`core.Limb.pole_position`), used when the rig's
            IK uses its pole.
        depsgraph: evaluated once here (the IK base hangs below a bone tracking the end
            control).
        reach: (3,) world position for the end control when the goal is out of the limb's
            reach (the target's): Rigify's IK then stretches to it as the rig is set up
            (``IK_Stretch``), with the chain started on Limber's closest pose.

    Returns what was written (``{key: (property, values)}``, see :func:`channel`).
    """
    set_switch(obj, settings)
    obj_eval = obj.evaluated_get(depsgraph)
    to_arm = affine_inverse(mat4(obj_eval.matrix_world))
    upper, lower, end = (to_arm @ p for p in poses)
    if reach is not None:
        end = end.copy()
        end[:3, 3] = (to_arm @ np.append(reach, 1.0))[:3]
    pbs = obj.pose.bones
    ebs = obj_eval.pose.bones
    written: Written = {}
    # the end control: where the bone the ORG- end copies must be, through the control's
    # current offset to it (foot roll, copy-location helpers)
    delta = affine_inverse(mat4(ebs[ik.result].matrix)) @ mat4(ebs[ik.control].matrix)
    basis = _local(obj_eval, ik.control, end @ delta)
    _write_location(pbs[ik.control], basis, written)
    _write_rotation(pbs[ik.control], basis, written)
    if pole is not None and uses_pole(obj, settings):
        p = np.eye(4)
        p[:3, 3] = (to_arm @ np.append(pole, 1.0))[:3]
        _write_location(pbs[ik.pole], _local(obj_eval, ik.pole, p), written)
    depsgraph.update()
    obj_eval = obj.evaluated_get(depsgraph)
    # the IK chain's start pose: the base control under its swing bone, then the mechanism
    # bone relative to the base as solved
    basis = _local(obj_eval, ik.base, upper)
    _write_rotation(pbs[ik.base], basis, written)
    mch = obj.data.bones[ik.mch]
    rel = affine_inverse(mat4(mch.parent.matrix_local)) @ mat4(mch.matrix_local)
    basis = Matrix((affine_inverse(upper @ rel) @ lower).tolist())
    _write_rotation(pbs[ik.mch], basis, written)
    return written


def snap_fk_to_shown(obj: Any, limbs: list[tuple[Any, tuple[str, str, str]]],
                     depsgraph: Any) -> None:
    """Give the FK controls of Rigify limbs the pose the rig shows (its ORG- bones), level
    by level (upper, lower, end, then the bones the FK chain carries below the end, e.g.
    the toe; one evaluation per level), so switching to FK moves nothing.

    Args:
        limbs: (settings, (upper, lower, end) FK control names) per limb.
    """
    levels: list[list[tuple[str, FloatArray]]] = []
    obj_eval = obj.evaluated_get(depsgraph)
    for settings, names in limbs:
        ik = rigify_ik(obj, settings.switch_bone) if settings.switch_bone else None
        if ik is None:
            continue
        pairs = list(zip(names, ik.org, strict=True)) + list(ik.tail)
        for level, (fk, org) in enumerate(pairs):
            if level == len(levels):
                levels.append([])
            levels[level].append((fk, mat4(obj_eval.pose.bones[org].matrix)))
    for todo in levels:
        obj_eval = obj.evaluated_get(depsgraph)
        for fk, pose in todo:
            pb = obj.pose.bones[fk]
            basis = _local(obj_eval, fk, pose)
            _write_rotation(pb, basis, {})
            _write_scale(pb, basis, {})
        depsgraph.update()


def solved_poses(req: Any, sol: Any) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    """World poses (3, 4, 4) of the upper, lower and end bone of a single solution, its
    pole point (3,) (:meth:`core.Limb.frames`, :meth:`core.Limb.pole_position` through
    the request's evaluated frame), and the target's position when the goal is out of
    reach and asks the end bone to be there (Position, Pose, Partial), else None."""
    wrist = sol.wrist if req.wrist is None else req.wrist[0]
    frame = req.frame[0]
    elbow = float(sol.elbow)
    poses: FloatArray = frame @ req.limb.frames(sol.shoulder, elbow, wrist)
    pole: FloatArray = (frame @ np.append(req.limb.pole_position(sol.shoulder, elbow), 1.0))[:3]
    reach = None
    if not bool(sol.reachable) and req.kind in ("POSITION", "POSE", "PARTIAL"):
        reach = np.asarray(req.target[0][:3, 3], dtype=np.float64)
    return poses, pole, reach


def ik_request(req: Any, rig: Any) -> Any:
    """A request for Rigify's IK chain: the limb's rest geometry (the IK chain's lengths;
    the FK controls' scale, read into the request's links, does not act in IK)."""
    return replace(req, limb=rig.limb, linked=np.ones_like(req.linked))
