"""write: solutions → rotation values in each bone's rotation mode (pose or keys).

Quaternion bones get the sign nearest their current value, Euler bones the angle family
within their IK limits nearest the current angles, axis-angle bones a positive angle; the
pose is written without depsgraph evaluation (:func:`write_limb`, :func:`write_chain`),
the bake takes the per-frame values of :func:`rotation_values_batch`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ...core import (
    EULER_ORDERS,
    Ball,
    EulerLimits,
    Fixed,
    Free,
    euler_to_matrix,
    matrix_to_axis_angle,
    matrix_to_euler_families,
    matrix_to_quat,
    nearest_eulers,
    quaternion_floats,
    quaternion_rows,
    rodrigues,
    rodrigues_rows,
)

if TYPE_CHECKING:
    from .rig import ChainRig, LimbRig

FloatArray = NDArray[np.float64]
#: A rotation matrix: an array, or three rows of Python floats (a float solve's).
Rotation = FloatArray | tuple[tuple[float, float, float], ...]


def pick_euler(r: FloatArray, order: str, lim: EulerLimits | None, current: Any) -> FloatArray:
    """The Euler family of ``r`` within ``lim`` (if any is), nearest the current angles."""
    fam = matrix_to_euler_families(r, order)[None]
    inside = None if lim is None else lim.contains(fam, tol=1e-6)
    out: FloatArray = nearest_eulers(fam, current, inside)[0]
    return out


def rotation_values(pose_bone: Any, r: FloatArray, lim: EulerLimits | None) -> tuple[float, ...]:
    """Values for the pose bone's active rotation property representing ``r``.

    Quaternions keep the sign nearest the current value (smooth keys); Euler angles use
    the family within ``lim`` (if one is), else the one nearest the current angles.
    """
    return path_values(pose_bone, r, lim)[1]


def path_values(pose_bone: Any, r: Rotation, lim: EulerLimits | None,
                mode: str | None = None) -> tuple[str, tuple[float, ...]]:
    """:func:`rotation_path` and :func:`rotation_values` of a pose bone, its rotation mode
    read once (``mode``: the bone's rotation mode if the caller knows it)."""
    if mode is None:
        mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        w, x, y, z = (quaternion_rows(r) if type(r) is tuple
                      else quaternion_floats(np.asarray(r, dtype=np.float64)))
        c0, c1, c2, c3 = pose_bone.rotation_quaternion[:]  # one read of the four values
        if w * c0 + x * c1 + y * c2 + z * c3 < 0.0:
            return "rotation_quaternion", (-w, -x, -y, -z)
        return "rotation_quaternion", (w, x, y, z)
    return _PATHS.get(mode, "rotation_euler"), _other_values(
        pose_bone, mode, np.asarray(r, dtype=np.float64), lim)


def _other_values(pose_bone: Any, mode: str, r: FloatArray, lim: EulerLimits | None
                  ) -> tuple[float, ...]:
    """:func:`rotation_values` of an axis-angle or Euler bone."""
    if mode == "AXIS_ANGLE":
        axis, angle = matrix_to_axis_angle(r)
        if float(angle) < 1e-12:
            axis = np.array((0.0, 1.0, 0.0))
        return (float(angle), float(axis[0]), float(axis[1]), float(axis[2]))
    e = pick_euler(r, mode, lim, pose_bone.rotation_euler)
    return (float(e[0]), float(e[1]), float(e[2]))


def rotation_values_batch(pose_bone: Any, r: FloatArray, lim: EulerLimits | None) -> FloatArray:
    """:func:`rotation_values` for a sequence of rotations ``r`` (N, 3, 3) → (N, k).

    Quaternions start with the sign nearest the bone's current value (later frames are
    made continuous by the bake); Euler angles take, frame by frame, the family within
    ``lim`` (if one is) nearest the previous frame's angles (the first: the current ones).
    """
    mode = str(pose_bone.rotation_mode)
    if mode == "QUATERNION":
        q: FloatArray = matrix_to_quat(r)
        if float(q[0] @ np.array(pose_bone.rotation_quaternion)) < 0.0:
            q = -q
        return q
    if mode == "AXIS_ANGLE":
        axis, angle = matrix_to_axis_angle(r)
        axis = np.where((angle < 1e-12)[:, None], (0.0, 1.0, 0.0), axis)
        out: FloatArray = np.concatenate([angle[:, None], axis], axis=1)
        return out
    fam = matrix_to_euler_families(r, mode)  # (N, 2, 3)
    inside = None if lim is None else lim.contains(fam, tol=1e-6)
    return nearest_eulers(fam, np.array(pose_bone.rotation_euler, dtype=np.float64), inside)


#: The RNA property holding each rotation mode's values (Euler orders: rotation_euler).
_PATHS = {"QUATERNION": "rotation_quaternion", "AXIS_ANGLE": "rotation_axis_angle"}


def rotation_path(pose_bone: Any) -> str:
    """The RNA property holding the pose bone's rotation in its rotation mode."""
    return _PATHS.get(pose_bone.rotation_mode, "rotation_euler")


def write_limb(
    obj: Any,
    rig: LimbRig,
    r1: Rotation,
    theta: float,
    r2: Rotation | None,
    bones: tuple[Any, Any, Any] | None = None,
    lower: FloatArray | None = None,
    modes: tuple[str, str, str] | None = None,
) -> dict[str, tuple[str, tuple[float, ...]]]:
    """Write a solution as local rotations; ``r2=None`` leaves the end bone untouched.
    ``bones``: the rig's (upper, lower, end) pose bones of ``obj`` if looked up already;
    ``lower``: the lower bone's local rotation when it is not the hinge rotation by
    ``theta`` (a lower bone that does not inherit rotation); ``modes``: the bones'
    rotation modes when the caller has checked them on this frame (``rig.modes`` after
    the rig check), else read here.

    Returns ``{bone name: (rotation property, values)}`` of what was written. No
    depsgraph evaluation happens here; evaluate once after all limbs are written.
    """
    if bones is None:
        pbs = obj.pose.bones
        bones = (pbs[rig.upper], pbs[rig.lower], pbs[rig.end])
    rl = (rodrigues_rows(rig.hinge_floats, theta)
          if lower is None else lower)
    up, lo, en = (None, None, None) if modes is None else modes
    items: list[tuple[str, Any, Rotation, EulerLimits | None, str | None]] = [
        (rig.upper, bones[0], r1, rig.family_limits[0], up),
        (rig.lower, bones[1], rl, rig.family_limits[1], lo),
    ]
    if r2 is not None:
        items.append((rig.end, bones[2], r2, rig.family_limits[2], en))
    written: dict[str, tuple[str, tuple[float, ...]]] = {}
    for name, pb, r, lim, mode in items:
        path, vals = path_values(pb, r, lim, mode)
        setattr(pb, path, vals)
        written[name] = (path, vals)
    return written


def write_chain(obj: Any, rig: ChainRig, q: FloatArray,
                locations: dict[str, tuple[str, tuple[float, ...]]] | None = None
                ) -> dict[str, tuple[str, tuple[float, ...]]]:
    """Write a chain configuration as local rotations (Fixed joints are left untouched);
    a Free joint (a body's root) also writes its location, recorded in ``locations``.

    Ball angles go straight into ``rotation_euler`` when the bone's mode is the Ball's
    order, and a hinge about a coordinate axis of an Euler bone sets that one component;
    everything else is converted to the bone's rotation mode. Returns what was written,
    like :func:`write_limb`.
    """
    pbs = obj.pose.bones
    written: dict[str, tuple[str, tuple[float, ...]]] = {}
    for j, name in enumerate(rig.bones):
        d = rig.skeleton.joints[j].dofs
        if isinstance(d, Fixed):
            continue
        pb = pbs[name]
        mode = str(pb.rotation_mode)
        qj = q[rig.skeleton.dof_slices[j]]
        vals: tuple[float, ...]
        if isinstance(d, Free):  # location, then the rotation as for a Ball
            pb.location = tuple(float(x) for x in qj[:3])
            if locations is not None:
                locations[name] = ("location", tuple(pb.location))
            d, qj = d.ball, qj[3:]
        if isinstance(d, Ball):
            angles = np.zeros(3)
            angles[list(d.free)] = qj
            if mode == d.order:
                vals = tuple(float(a) for a in angles)
            else:
                r = euler_to_matrix(angles, d.order)
                vals = rotation_values(pb, r, rig.family_limits[j])
        else:  # a Hinge
            axis = np.asarray(d.axis, dtype=np.float64)
            i = int(np.argmax(np.abs(axis)))
            if mode in EULER_ORDERS and abs(abs(axis[i]) - 1.0) < 1e-12:
                e = [0.0, 0.0, 0.0]
                e[i] = float(qj[0]) * float(np.sign(axis[i]))
                vals = tuple(e)
            else:
                vals = rotation_values(pb, rodrigues(axis, float(qj[0])), None)
        path = rotation_path(pb)
        setattr(pb, path, vals)
        written[name] = (path, vals)
    return written
