"""Rigs and helpers shared by the add-on tests (real bpy data, no mocks)."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix, Quaternion

#: Mixamo bone layout: name → (head, tail, parent), metres, Z up, T-pose arms.
MIXAMO_BONES: dict[str, tuple[tuple[float, ...], tuple[float, ...], str | None]] = {
    "Hips": ((0, 0, 1.0), (0, 0, 1.1), None),
    "Spine": ((0, 0, 1.1), (0, 0, 1.35), "Hips"),
    "Neck": ((0, 0, 1.35), (0, 0, 1.5), "Spine"),
    "LeftShoulder": ((0.05, 0, 1.35), (0.18, 0, 1.35), "Spine"),
    "LeftArm": ((0.18, 0, 1.35), (0.46, 0, 1.35), "LeftShoulder"),
    "LeftForeArm": ((0.46, 0, 1.35), (0.72, 0, 1.35), "LeftArm"),
    "LeftHand": ((0.72, 0, 1.35), (0.8, 0, 1.35), "LeftForeArm"),
    "LeftHandIndex1": ((0.8, 0, 1.35), (0.84, 0, 1.35), "LeftHand"),
    "RightShoulder": ((-0.05, 0, 1.35), (-0.18, 0, 1.35), "Spine"),
    "RightArm": ((-0.18, 0, 1.35), (-0.46, 0, 1.35), "RightShoulder"),
    "RightForeArm": ((-0.46, 0, 1.35), (-0.72, 0, 1.35), "RightArm"),
    "RightHand": ((-0.72, 0, 1.35), (-0.8, 0, 1.35), "RightForeArm"),
    "LeftUpLeg": ((0.1, 0, 1.0), (0.1, -0.01, 0.55), "Hips"),
    "LeftLeg": ((0.1, -0.01, 0.55), (0.1, 0.02, 0.1), "LeftUpLeg"),
    "LeftFoot": ((0.1, 0.02, 0.1), (0.1, -0.1, 0.02), "LeftLeg"),
    "LeftToeBase": ((0.1, -0.1, 0.02), (0.1, -0.15, 0.02), "LeftFoot"),
    "RightUpLeg": ((-0.1, 0, 1.0), (-0.1, -0.01, 0.55), "Hips"),
    "RightLeg": ((-0.1, -0.01, 0.55), (-0.1, 0.02, 0.1), "RightUpLeg"),
    "RightFoot": ((-0.1, 0.02, 0.1), (-0.1, -0.1, 0.02), "RightLeg"),
}

RIGIFY_LIMBS = {
    "arm.L": ("upper_arm.L", "forearm.L", "hand.L"),
    "arm.R": ("upper_arm.R", "forearm.R", "hand.R"),
    "leg.L": ("thigh.L", "shin.L", "foot.L"),
    "leg.R": ("thigh.R", "shin.R", "foot.R"),
}
MIXAMO_LIMBS = {
    "arm.L": ("mixamorig:LeftArm", "mixamorig:LeftForeArm", "mixamorig:LeftHand"),
    "arm.R": ("mixamorig:RightArm", "mixamorig:RightForeArm", "mixamorig:RightHand"),
    "leg.L": ("mixamorig:LeftUpLeg", "mixamorig:LeftLeg", "mixamorig:LeftFoot"),
    "leg.R": ("mixamorig:RightUpLeg", "mixamorig:RightLeg", "mixamorig:RightFoot"),
}


def evaluate() -> Any:
    dg = bpy.context.evaluated_depsgraph_get()
    dg.update()
    return dg


def metarig(
    location: tuple[float, float, float] = (0.0, 0.0, 0.0),
    rotation: tuple[float, float, float] = (0.0, 0.0, 0.0),
    scale: float | tuple[float, float, float] = 1.0,
) -> Any:
    """The Rigify human meta-rig (rigify must be enabled), with an object transform."""
    assert bpy.ops.object.armature_human_metarig_add() == {"FINISHED"}
    obj = bpy.context.object
    obj.location = location
    obj.rotation_euler = rotation
    obj.scale = (scale,) * 3 if isinstance(scale, float) else scale
    evaluate()
    return obj


BoneLayout = dict[str, tuple[tuple[float, ...], tuple[float, ...], str | None]]


def armature_from(name: str, bones: BoneLayout, rename: Any = None,
                  rolls: dict[str, float] | None = None) -> Any:
    """An armature object built in edit mode from ``{bone: (head, tail, parent)}`` (bones
    renamed by ``rename(name)`` if given, rolled by ``rolls[bone]`` degrees); a child
    whose head is its parent's tail is connected."""
    new = rename or (lambda n: n)
    arm = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    ebs = arm.edit_bones
    for bname, (head, tail, parent) in bones.items():
        eb = ebs.new(new(bname))
        eb.head, eb.tail = head, tail
        eb.roll = math.radians((rolls or {}).get(bname, 0.0))
        if parent is not None:
            eb.parent = ebs[new(parent)]
            eb.use_connect = tuple(eb.parent.tail) == tuple(eb.head)
    bpy.ops.object.mode_set(mode="OBJECT")
    evaluate()
    return obj


def mixamo_rig(name: str = "MixamoRig") -> Any:
    """A Mixamo-named armature ("mixamorig:" prefix) built in edit mode."""
    return armature_from(name, MIXAMO_BONES, lambda n: f"mixamorig:{n}")


def add_empty(name: str, matrix: Any = None) -> Any:
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    if matrix is not None:
        obj.matrix_world = Matrix(np.asarray(matrix).tolist())
    return obj


def world_pose(obj: Any, bone: str) -> np.ndarray:
    """Evaluated world matrix (4×4) of a pose bone."""
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    return np.array(ev.matrix_world @ ev.pose.bones[bone].matrix, dtype=np.float64)


def normalized(m: np.ndarray) -> np.ndarray:
    out = m.copy()
    out[:3, :3] /= np.linalg.norm(out[:3, :3], axis=0)
    return out


def rotation_angle(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) between two (possibly uniformly scaled) frames' rotations."""
    ra = normalized(a)[:3, :3]
    rb = normalized(b)[:3, :3]
    c = (np.trace(ra.T @ rb) - 1.0) / 2.0
    # acos is ill-conditioned near 0: use the skew part as well.
    s = np.linalg.norm(ra.T @ rb - rb.T @ ra) / (2.0 * math.sqrt(2.0))
    return float(math.atan2(s, c))


def random_quaternion(rng: np.random.Generator, max_angle: float = math.pi) -> Quaternion:
    axis = rng.normal(size=3)
    return Quaternion(axis / np.linalg.norm(axis), float(rng.uniform(0.0, max_angle)))


def add_limb(obj: Any, name: str, bones: tuple[str, str, str], **settings: Any) -> Any:
    limb = obj.limber.limbs.add()
    limb.name = name
    limb.upper_bone, limb.lower_bone, limb.end_bone = bones
    for k, v in settings.items():
        setattr(limb, k, v)
    return limb


def rest_pose(obj: Any) -> None:
    for pb in obj.pose.bones:
        pb.matrix_basis = Matrix.Identity(4)
