"""Limber's main demo: a motion-capture walk retargeted onto the Rigify meta-rig, baked by Limber.

Run it with ``bash tools/demo.sh`` (creates the venv, then runs this script in the ``bpy``
module, headless). Options: ``--frames N`` (bake only the first N frames of the clip; the
test uses a handful), ``--out DIR`` (default ``demo_out/``), ``--render`` (which renderer to
try first), ``--contact K`` (poses in the contact sheet), ``--no-limits``.

What it does, with nothing but the repository and the venv:

1. **Installs Limber the way a user does**: the release zip for this machine's platform
   (``bash tools/build.sh``: the extension with its bundled scipy wheels, built with
   Blender's own ``blender_ext.py build``; ``bash tools/demo.sh`` builds it into ``dist/``
   and passes it in ``LIMBER_PACKAGE``, else it is built into a temporary folder) is
   installed with *Install from Disk* (``bpy.ops.extensions.package_install_files``) into a
   throw-away Blender user folder (``BLENDER_USER_RESOURCES`` points at a temporary
   directory, so a developer's real Blender preferences are never touched).
2. **Builds the scene**: the Rigify human meta-rig (bundled ``rigify`` add-on), a plain
   mannequin mesh skinned to it (so renders show the pose), and the bundled CMU clip
   ``tools/data/mocap/cmu_131_01.bvh`` imported with Blender's own BVH importer
   (``io_anim_bvh``). The clip's hands and feet are **retargeted** to the meta-rig:
   each wrist (ankle) is taken relative to its shoulder (hip) in the clip's torso (pelvis)
   frame, scaled by the ratio of the two rigs' limb lengths and placed at the meta-rig's
   shoulder (hip) in the meta-rig's torso (pelvis) frame — the walk happens in place, the
   clip's root motion and torso turns are removed. Hand and foot *orientations* are mapped
   the same way through landmark frames (hand: wrist → fingers, thumb side; foot: ankle →
   toe joint → toe tip), so all four limbs use POSE goals. Each elbow (knee) of the clip
   becomes a pole Empty on the same side of the shoulder–wrist axis: the clip's swivel angle.
3. **Sets up Limber** with its operators (``limber.detect_limbs`` with ``create_targets``,
   then target animation, pole, swivel mode POLE, human joint limits on the meta-rig's
   Bone > Inverse Kinematics settings), **bakes** with ``limber.bake`` and saves
   ``limber_demo.blend``.
4. **Measures** the baked animation independently (the end bones' evaluated world frames
   against the targets, frame by frame) and **writes** ``report.md``, ``summary.json``, a
   contact sheet of poses (Workbench render; Cycles CPU or a matplotlib 3-D plot when that
   fails, chosen automatically and named in the report) and ``swivel.png`` (each limb's
   swivel angle, the clip's wish and the feasible band over time).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make `core` and `tools` importable
    sys.path.insert(0, str(ROOT))

from core import (  # noqa: E402
    continuous_quaternions,
    matrix_to_quat,
    rotation_angle_between,
    unit_rows,
    wrap_angle,
)

CLIP = ROOT / "tools" / "data" / "mocap" / "cmu_131_01.bvh"
DEFAULT_OUT = ROOT / "demo_out"
BLEND_NAME = "limber_demo.blend"
#: The add-on module of the extension installed by :func:`install_limber`.
MODULE = "bl_ext.user_default.limber"
RENDERERS = ("workbench", "cycles", "matplotlib")

#: Limb name (as limber.detect_limbs names them) → the clip's (upper, lower, end) joints and
#: the meta-rig's (upper, lower, end) bones. A joint's position is its bone's head.
LIMBS: dict[str, tuple[tuple[str, str, str], tuple[str, str, str]]] = {
    "arm.L": (("LeftShoulder", "LeftElbow", "lhand"), ("upper_arm.L", "forearm.L", "hand.L")),
    "arm.R": (("RightShoulder", "RightElbow", "rhand"), ("upper_arm.R", "forearm.R", "hand.R")),
    "leg.L": (("LeftHip", "LeftKnee", "LeftAnkle"), ("thigh.L", "shin.L", "foot.L")),
    "leg.R": (("RightHip", "RightKnee", "RightAnkle"), ("thigh.R", "shin.R", "foot.R")),
}

Landmark = tuple[str, str]  # (bone name, "head" | "tail")

#: Orientation of each hand/foot: the clip's end bone (its rotation carries the goal's
#: orientation), the clip's and meta-rig's (end joint → tip) landmarks and a world axis. At
#: rest both rigs stand upright facing -Y, hands palm down, feet flat: there the *landmark
#: frame* (Y from the end joint to the tip, X the hint axis made orthogonal to Y) means the
#: same anatomical frame on both rigs, and on the clip it then moves with the end bone.
#: Hands: wrist → finger base, hint world +Z; feet: ankle → toe joint, hint world +X.
END_FRAMES: dict[str, tuple[str, Landmark, Landmark, tuple[float, float, float]]] = {
    "arm.L": ("lhand", ("lhand", "tail"), ("hand.L", "tail"), (0.0, 0.0, 1.0)),
    "arm.R": ("rhand", ("rhand", "tail"), ("hand.R", "tail"), (0.0, 0.0, 1.0)),
    "leg.L": ("LeftAnkle", ("LeftToe", "head"), ("toe.L", "head"), (1.0, 0.0, 0.0)),
    "leg.R": ("RightAnkle", ("RightToe", "head"), ("toe.R", "head"), (1.0, 0.0, 0.0)),
}

#: Torso frames (arms) and pelvis frames (legs): X from the right to the left joint, Z along
#: the spine line (bottom → top), Y = Z × X. Clip landmarks, then meta-rig landmarks:
#: (left joint, right joint, spine bottom, spine top).
BODY_LANDMARKS: dict[str, tuple[tuple[Landmark, ...], tuple[Landmark, ...]]] = {
    "arm": (
        (("LeftShoulder", "head"), ("RightShoulder", "head"), ("Hips", "head"),
         ("lowerneck", "head")),
        (("upper_arm.L", "head"), ("upper_arm.R", "head"), ("spine", "head"),
         ("spine.004", "head")),
    ),
    "leg": (
        (("LeftHip", "head"), ("RightHip", "head"), ("Hips", "head"), ("Chest", "head")),
        (("thigh.L", "head"), ("thigh.R", "head"), ("spine", "head"), ("spine.001", "head")),
    ),
}

#: Human joint limits set on the meta-rig's bones (Bone > Inverse Kinematics), degrees, per
#: local axis (x, y, z) of each bone as (min, max) for the left side (the right side is
#: mirrored: Y and Z change sign); None leaves the axis free. Shoulders and hips are ball
#: joints with generous human ranges (X: flexion/extension, Y: twist along the bone, Z:
#: abduction/adduction); elbows and knees are hinges that straighten but do not over-extend
#: (only X turns, Y and Z are locked, so Limber's AUTO hinge axis is X; the meta-rig's rest
#: pose is slightly bent, so the lower bound 0 is replaced by minus the rest bend). Wrists
#: and ankles are left free: the meta-rig has no forearm-twist bone, so its wrist carries
#: the forearm's pronation and Euler-angle wrist limits would misstate the human range.
JOINT_LIMITS_DEG: dict[str, dict[str, tuple[tuple[float, float] | None, ...]]] = {
    "arm": {
        "upper": ((-70.0, 130.0), (-90.0, 90.0), (-100.0, 90.0)),
        "lower": ((0.0, 150.0), None, None),
        "end": (None, None, None),
    },
    "leg": {
        "upper": ((-120.0, 45.0), (-70.0, 45.0), (-100.0, 60.0)),
        "lower": ((0.0, 150.0), None, None),
        "end": (None, None, None),
    },
}

CONTACT_SIZE = (300, 420)  # width, height of one pose in the contact sheet (px)
MANNEQUIN_COLOUR = (0.72, 0.72, 0.75, 1.0)
LIMB_COLOUR = (0.95, 0.55, 0.15, 1.0)
TARGET_COLOUR = (0.85, 0.1, 0.1, 1.0)
POLE_COLOUR = (0.15, 0.35, 0.9, 1.0)


# --------------------------------------------------------------------------------------
# Small numpy helpers (no bpy)
# --------------------------------------------------------------------------------------


def frame_from(y_dir: np.ndarray, x_hint: np.ndarray) -> np.ndarray:
    """Right-handed rotation(s) (…, 3, 3) with columns (x, y, z): y along ``y_dir``, x the
    part of ``x_hint`` orthogonal to it."""
    y = unit_rows(y_dir)
    x = unit_rows(x_hint - np.sum(x_hint * y, axis=-1, keepdims=True) * y)
    z = np.cross(x, y)
    return np.stack((x, y, z), axis=-1)


def body_frame(left: np.ndarray, right: np.ndarray, bottom: np.ndarray, top: np.ndarray
               ) -> np.ndarray:
    """Torso/pelvis frame(s): X right → left, Z along the spine line, Y = Z × X."""
    x = unit_rows(left - right)
    up = top - bottom
    z = unit_rows(up - np.sum(up * x, axis=-1, keepdims=True) * x)
    y = np.cross(z, x)
    return np.stack((x, y, z), axis=-1)


# --------------------------------------------------------------------------------------
# Blender set-up
# --------------------------------------------------------------------------------------


def import_bpy() -> Any:
    """Import bpy with a throw-away Blender user folder (unless bpy is already loaded)."""
    if "bpy" not in sys.modules and "BLENDER_USER_RESOURCES" not in os.environ:
        import atexit
        import shutil

        folder = tempfile.mkdtemp(prefix="limber-demo-user-")
        os.environ["BLENDER_USER_RESOURCES"] = folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # runs after bpy's own
    import bpy

    return bpy


def install_limber(bpy: Any, workdir: Path) -> tuple[str, str]:
    """Install the extension like a user: the release zip, with *Install from Disk*.

    The zip is ``$LIMBER_PACKAGE`` when set (``bash tools/demo.sh`` builds it), else this
    machine's zip built by ``bash tools/build.sh`` into ``workdir`` (with this interpreter's
    venv). Returns the add-on module (``bl_ext.user_default.limber``) and a note on how it
    was installed.
    """
    from tools.smoke_zip import zip_for_this_machine

    package = Path(os.environ.get("LIMBER_PACKAGE", ""))
    if not package.is_file():
        dist = workdir / "dist"
        env = {**os.environ, "LIMBER_VENV": os.environ.get("LIMBER_VENV", sys.prefix)}
        proc = subprocess.run(
            ["bash", str(ROOT / "tools" / "build.sh"), str(dist)],
            capture_output=True, text=True, timeout=900, check=False, env=env,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"tools/build.sh failed:\n{proc.stdout}\n{proc.stderr}")
        package = zip_for_this_machine(dist)
    if "bl_pkg" not in bpy.context.preferences.addons:
        bpy.ops.preferences.addon_enable(module="bl_pkg")
    result = bpy.ops.extensions.package_install_files(
        filepath=str(package), repo="user_default", enable_on_install=True
    )
    module = MODULE
    if result != {"FINISHED"} or module not in bpy.context.preferences.addons:
        raise RuntimeError(f"installing {package} failed ({result})")
    return module, (f"the release package {package.name} (tools/build.sh: bundled scipy "
                    "wheels) installed with Install from Disk "
                    "(extensions.package_install_files)")


@dataclass
class Clip:
    """Per-frame world positions of the clip's landmarks (metres)."""

    frames: list[int]
    fps: float
    points: dict[Landmark, np.ndarray]  # (N, 3)
    rotations: dict[str, np.ndarray]  # end bone → (N, 3, 3) world rotation
    rest_points: dict[Landmark, np.ndarray]  # (3,) world, rest pose
    rest_rotations: dict[str, np.ndarray]  # end bone → (3, 3) world rotation at rest


def read_clip(bpy: Any, frames: Sequence[int]) -> tuple[Any, Clip]:
    """Import the BVH clip with Blender's importer; sample its landmarks on ``frames``."""
    if "io_anim_bvh" not in bpy.context.preferences.addons:
        bpy.ops.preferences.addon_enable(module="io_anim_bvh")
    result = bpy.ops.import_anim.bvh(
        filepath=str(CLIP), global_scale=1.0, axis_forward="-Z", axis_up="Y",
        update_scene_fps=True, update_scene_duration=True, rotate_mode="NATIVE",
    )
    if result != {"FINISHED"}:
        raise RuntimeError(f"importing {CLIP} failed ({result})")
    src = bpy.context.active_object
    src.name = "Clip (CMU 131_01)"
    wanted: set[Landmark] = set()
    for clip_lm, _ in BODY_LANDMARKS.values():
        wanted.update(clip_lm)
    for (upper, lower, end), _ in LIMBS.values():
        wanted.update(((upper, "head"), (lower, "head"), (end, "head")))
    ends = {e[0] for e in END_FRAMES.values()}
    wanted.update(e[1] for e in END_FRAMES.values())
    wanted.update((("LeftToe", "tail"), ("RightToe", "tail")))  # the clip's floor
    pts = {lm: np.empty((len(frames), 3)) for lm in wanted}
    rots = {b: np.empty((len(frames), 3, 3)) for b in ends}
    scene = bpy.context.scene
    mw = np.array(src.matrix_world)
    for i, f in enumerate(frames):
        scene.frame_set(f)
        pbs = src.pose.bones
        for lm in wanted:
            p = getattr(pbs[lm[0]], lm[1])
            pts[lm][i] = mw[:3, :3] @ np.array(p) + mw[:3, 3]
        for b in ends:
            rots[b][i] = mw[:3, :3] @ np.array(pbs[b].matrix)[:3, :3]
    fps = scene.render.fps / scene.render.fps_base
    rest = rest_points(src)
    rest_rot = {b: mw[:3, :3] @ np.array(src.data.bones[b].matrix_local)[:3, :3] for b in ends}
    return src, Clip(frames=list(frames), fps=fps, points=pts, rotations=rots,
                     rest_points=rest, rest_rotations=rest_rot)


def rest_points(rig: Any) -> dict[Landmark, np.ndarray]:
    """World positions of the meta-rig's bone heads and tails at rest."""
    mw = np.array(rig.matrix_world)
    out: dict[Landmark, np.ndarray] = {}
    for b in rig.data.bones:
        for end in ("head", "tail"):
            p = np.array(getattr(b, f"{end}_local"))
            out[(b.name, end)] = mw[:3, :3] @ p + mw[:3, 3]
    return out


@dataclass
class Retarget:
    """The retargeted goals of one limb over the clip's frames (world space)."""

    position: np.ndarray  # (N, 3) end-bone head
    rotation: np.ndarray  # (N, 3, 3) end-bone frame
    pole: np.ndarray  # (N, 3)
    scale: float  # meta-rig limb length / clip limb length


def root_height(rig: Any, clip: Clip, leg_scale: float) -> np.ndarray:
    """Vertical offset (N,) of the meta-rig so that its pelvis bobs like the clip's.

    The clip's hip height above its lowest toe point, scaled like the legs, minus the
    meta-rig's rest hip height above its toe tips: the lowest toe of the clip touches z = 0.
    """
    rest = rest_points(rig)
    h_c = (clip.points[("LeftHip", "head")][:, 2] + clip.points[("RightHip", "head")][:, 2]) / 2
    floor_c = min(float(clip.points[(t, "tail")][:, 2].min()) for t in ("LeftToe", "RightToe"))
    h_m = (rest[("thigh.L", "head")][2] + rest[("thigh.R", "head")][2]) / 2
    floor_m = rest[("toe.L", "tail")][2]
    out: np.ndarray = leg_scale * (h_c - floor_c) - (h_m - floor_m)
    return out


def retarget(rig: Any, clip: Clip, lift: np.ndarray) -> dict[str, Retarget]:
    """Map the clip's hand/foot trajectories and elbows/knees onto the meta-rig, whose root
    is raised by ``lift`` (N,) metres."""
    rest = rest_points(rig)
    rest_rot = {
        b.name: np.array(rig.matrix_world)[:3, :3] @ np.array(b.matrix_local)[:3, :3]
        for b in rig.data.bones
    }
    out: dict[str, Retarget] = {}
    for name, ((c_up, c_lo, c_end), (m_up, m_lo, m_end)) in LIMBS.items():
        kind = name.split(".")[0]
        c_body, m_body = BODY_LANDMARKS[kind]
        bc = body_frame(*(clip.points[lm] for lm in c_body))  # (N, 3, 3)
        bm = body_frame(*(rest[lm][None] for lm in m_body))[0]
        to_meta = bm @ np.swapaxes(bc, 1, 2)  # clip world → meta-rig world, per frame
        s_c = clip.points[(c_up, "head")]
        e_c = clip.points[(c_lo, "head")]
        w_c = clip.points[(c_end, "head")]
        len_c = np.median(np.linalg.norm(e_c - s_c, axis=1) + np.linalg.norm(w_c - e_c, axis=1))
        s_m, e_m, w_m = (rest[(b, "head")] for b in (m_up, m_lo, m_end))
        len_m = float(np.linalg.norm(e_m - s_m) + np.linalg.norm(w_m - e_m))
        scale = len_m / float(len_c)
        s_m = s_m + lift[:, None] * np.array((0.0, 0.0, 1.0))
        pos = s_m + scale * np.einsum("nij,nj->ni", to_meta, w_c - s_c)
        elbow = s_m + scale * np.einsum("nij,nj->ni", to_meta, e_c - s_c)
        # The pole: the clip's elbow pushed 0.4 m away from the shoulder–wrist axis (the
        # swivel it stands for does not change; it is just easier to see and to grab).
        axis = unit_rows(pos - s_m)
        off = (elbow - s_m) - np.sum((elbow - s_m) * axis, axis=1, keepdims=True) * axis
        pole = elbow + 0.4 * unit_rows(off)
        c_bone, c_tip, m_tip, hint = END_FRAMES[name]
        a_c0 = frame_from(clip.rest_points[c_tip] - clip.rest_points[(c_bone, "head")],
                          np.array(hint))
        a_m0 = frame_from(rest[m_tip] - rest[(m_end, "head")], np.array(hint))
        # The clip's landmark frame rides on its end bone; the meta-rig's end bone sits in
        # its own landmark frame as at rest.
        a_c = clip.rotations[c_bone] @ (clip.rest_rotations[c_bone].T @ a_c0)
        rot = to_meta @ a_c @ (a_m0.T @ rest_rot[m_end])
        out[name] = Retarget(position=pos, rotation=rot, pole=pole, scale=scale)
    return out


def key_object(bpy: Any, obj: Any, frames: Sequence[int], location: np.ndarray,
               rotation: np.ndarray | None = None) -> None:
    """Key an object's location (N, 3) and quaternion rotation (N, 3, 3) on ``frames`` in bulk."""
    compat = importlib.import_module(f"{MODULE}.addon.compat")
    obj.location = location[0]
    obj.keyframe_insert("location", frame=frames[0])
    channels: dict[str, np.ndarray] = {"location": location}
    if rotation is not None:
        obj.rotation_mode = "QUATERNION"
        obj.keyframe_insert("rotation_quaternion", frame=frames[0])
        channels["rotation_quaternion"] = continuous_quaternions(matrix_to_quat(rotation))
    x = np.asarray(frames, dtype=np.float32)
    fcurves = compat.assigned_fcurves(obj.animation_data)
    for fc in [fc for fc in fcurves if fc.data_path in channels]:
        values = channels[fc.data_path][:, fc.array_index].astype(np.float32)
        points = fc.keyframe_points
        points.clear()
        points.add(len(frames))
        co = np.column_stack((x, values)).ravel()
        points.foreach_set("co", co)
        points.foreach_set("handle_left", co)
        points.foreach_set("handle_right", co)
        points.foreach_set("interpolation", np.ones(len(frames), dtype=np.int32))  # LINEAR
        fc.update()


def _cone_matrix(head: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """4×4 taking a unit cone along +Z centred at the origin onto the segment head → tail."""
    d = tail - head
    z = d / np.linalg.norm(d)
    hint = np.array((1.0, 0.0, 0.0)) if abs(z[0]) < 0.9 else np.array((0.0, 1.0, 0.0))
    x = unit_rows(hint - np.dot(hint, z) * z)
    m = np.eye(4)
    m[:3, :3] = np.column_stack((x, np.cross(z, x), z))
    m[:3, 3] = (head + tail) / 2.0
    return m


def _body_bones(rig: Any) -> list[Any]:
    """The meta-rig's bones without the face (and without the breast/pelvis helpers)."""
    out = []
    for b in rig.data.bones:
        chain = [b, *b.parent_recursive]
        if any(p.name == "face" for p in chain) or b.name.startswith(("breast", "pelvis",
                                                                      "heel")):
            continue
        out.append(b)
    return out


def add_mannequin(bpy: Any, rig: Any) -> Any:
    """A simple mesh body skinned to the meta-rig (one tapered cylinder per bone)."""
    import bmesh
    from mathutils import Matrix

    limb_bones = {b for _, bones in LIMBS.values() for b in bones}
    mesh = bpy.data.meshes.new("Mannequin")
    obj = bpy.data.objects.new("Mannequin", mesh)
    bpy.context.scene.collection.objects.link(obj)
    for name, colour in (("Mannequin", MANNEQUIN_COLOUR), ("Limber limbs", LIMB_COLOUR)):
        mesh.materials.append(material(bpy, name, colour))
    bm = bmesh.new()
    deform = bm.verts.layers.deform.verify()
    for b in _body_bones(rig):
        head, tail = np.array(b.head_local), np.array(b.tail_local)
        length = float(np.linalg.norm(tail - head))
        if b.name.startswith("spine"):
            r0 = r1 = 0.075 if b.name != "spine.004" else 0.045
        else:
            r0 = min(max(0.16 * length, 0.006), 0.06)
            r1 = 0.75 * r0
        group = obj.vertex_groups.new(name=b.name).index
        res = bmesh.ops.create_cone(
            bm, cap_ends=True, segments=16, radius1=r0, radius2=r1, depth=length,
            matrix=Matrix(_cone_matrix(head, tail).tolist()),
        )
        verts = res["verts"]
        if b.name == "spine.006" or b.name in limb_bones:  # round joints / the head
            sph = bmesh.ops.create_uvsphere(
                bm, u_segments=16, v_segments=8,
                radius=(0.11 if b.name == "spine.006" else r0 * 1.05),
                matrix=Matrix.Translation(tuple(head if b.name != "spine.006" else
                                                (head + tail) / 2.0)),
            )
            verts = verts + sph["verts"]
        for v in verts:
            v[deform][group] = 1.0
        if b.name in limb_bones:
            for f in {f for v in verts for f in v.link_faces}:
                f.material_index = 1
    bm.to_mesh(mesh)
    bm.free()
    for p in mesh.polygons:
        p.use_smooth = True
    obj.parent = rig
    mod = obj.modifiers.new("Armature", "ARMATURE")
    mod.object = rig
    return obj


def material(bpy: Any, name: str, colour: tuple[float, ...]) -> Any:
    """A plain coloured material: the viewport/Workbench colour and Cycles' base colour."""
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    mat.diffuse_color = colour
    if mat.node_tree is None:  # Blender < 5 makes materials without nodes
        mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    if bsdf is not None:
        bsdf.inputs["Base Color"].default_value = colour
    return mat


def add_marker(bpy: Any, parent: Any, name: str, radius: float, colour: tuple[float, ...]
               ) -> Any:
    """A small sphere (render-visible) riding on an Empty."""
    import bmesh

    mesh = bpy.data.meshes.new(name)
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=12, v_segments=6, radius=radius)
    bm.to_mesh(mesh)
    bm.free()
    mesh.materials.append(material(bpy, name, colour))
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = parent
    obj.hide_select = True
    return obj


def set_joint_limits(rig: Any, use_limits: bool) -> None:
    """Human joint limits on the limb bones' IK settings (Bone > Inverse Kinematics)."""
    for name, (_, bones) in LIMBS.items():
        table = JOINT_LIMITS_DEG[name.split(".")[0]]
        for role, bone in zip(("upper", "lower", "end"), bones, strict=True):
            pb = rig.pose.bones[bone]
            for i, ax in enumerate("xyz"):
                lim = table[role][i]
                if role == "lower" and ax != "x":
                    setattr(pb, f"lock_ik_{ax}", True)
                    continue
                if role == "lower" and lim is not None:
                    lim = (-rest_bend_deg(rig, bones), lim[1])
                setattr(pb, f"use_ik_limit_{ax}", bool(use_limits and lim is not None))
                if lim is not None:
                    setattr(pb, f"ik_min_{ax}", math.radians(lim[0]))
                    setattr(pb, f"ik_max_{ax}", math.radians(lim[1]))
        if rig.pose.bones[bones[0]].name.endswith(".R"):
            _mirror_limits(rig, bones)


def rest_bend_deg(rig: Any, bones: Sequence[str]) -> float:
    """Angle (degrees) between the upper and lower bone at rest: the straightening the
    hinge needs from its rest pose."""
    up, lo = (np.array(rig.data.bones[b].matrix_local)[:3, 1] for b in bones[:2])
    return math.degrees(math.acos(float(np.clip(np.dot(up, lo), -1.0, 1.0))))


def _mirror_limits(rig: Any, bones: Sequence[str]) -> None:
    """Right-side bones are mirrored: rotations about local Y and Z change sign."""
    for bone in bones:
        pb = rig.pose.bones[bone]
        for ax in "yz":
            lo, hi = getattr(pb, f"ik_min_{ax}"), getattr(pb, f"ik_max_{ax}")
            setattr(pb, f"ik_min_{ax}", -hi)
            setattr(pb, f"ik_max_{ax}", -lo)


@dataclass
class Scene:
    rig: Any
    source: Any
    clip: Clip
    goals: dict[str, Retarget]
    targets: dict[str, Any]
    poles: dict[str, Any]
    module: str


def build_scene(bpy: Any, module: str, frames: Sequence[int], use_limits: bool) -> Scene:
    """Meta-rig, mannequin, clip, retargeted targets and poles, Limber limbs set up."""
    if "rigify" not in bpy.context.preferences.addons:
        bpy.ops.preferences.addon_enable(module="rigify")
    scene = bpy.context.scene
    scene.frame_set(frames[0])
    assert bpy.ops.object.armature_human_metarig_add() == {"FINISHED"}
    rig = bpy.context.active_object
    rig.name = "metarig"
    rig.show_in_front = True
    source, clip = read_clip(bpy, frames)
    # The source clip walks on 1.5 m to the side; it is not rendered.
    source.location = (1.5, 0.0, 0.0)
    source.hide_render = True
    goals = retarget(rig, clip, np.zeros(len(frames)))  # first pass: the limb scales
    leg_scale = (goals["leg.L"].scale + goals["leg.R"].scale) / 2.0
    lift = root_height(rig, clip, leg_scale)
    goals = retarget(rig, clip, lift)
    key_object(bpy, rig, frames, lift[:, None] * np.array((0.0, 0.0, 1.0)))
    scene.frame_start, scene.frame_end = frames[0], frames[-1]
    scene.frame_set(frames[0])
    bpy.context.view_layer.objects.active = rig
    set_joint_limits(rig, use_limits)
    assert bpy.ops.limber.detect_limbs(armature=rig.name, create_targets=True) == {"FINISHED"}
    targets, poles = {}, {}
    for limb in rig.limber.limbs:
        g = goals[limb.name]
        target = limb.target
        target.name = f"target.{limb.name}"
        key_object(bpy, target, frames, g.position, g.rotation)
        pole = bpy.data.objects.new(f"pole.{limb.name}", None)
        pole.empty_display_type = "SPHERE"
        pole.empty_display_size = 0.04
        scene.collection.objects.link(pole)
        key_object(bpy, pole, frames, g.pole)
        add_marker(bpy, target, f"marker.{limb.name}", 0.028, TARGET_COLOUR)
        add_marker(bpy, pole, f"marker.pole.{limb.name}", 0.02, POLE_COLOUR)
        limb.goal_type = "POSE"
        limb.pole = pole
        limb.swivel_mode = "POLE"
        limb.use_limits = use_limits
        targets[limb.name], poles[limb.name] = target, pole
    missing = set(LIMBS) - set(targets)
    if missing:
        raise RuntimeError(f"limber.detect_limbs did not find {sorted(missing)}")
    add_mannequin(bpy, rig)
    scene.frame_set(frames[0])
    return Scene(rig, source, clip, goals, targets, poles, module)


# --------------------------------------------------------------------------------------
# Bake and measure
# --------------------------------------------------------------------------------------


@dataclass
class Track:
    """One limb over the baked frames."""

    position_error: np.ndarray  # m, baked end bone vs target (evaluated in Blender)
    orientation_error: np.ndarray  # rad
    reachable: np.ndarray  # bool, Limber's status
    within_limits: np.ndarray  # bool
    swivel: np.ndarray  # rad, the swivel Limber used
    wish: np.ndarray  # rad, the clip's swivel (the pole's), before the limits
    feasible: list[tuple[tuple[float, float], ...]]
    solve_us: np.ndarray
    reach_gap: np.ndarray  # m, how far the target is beyond the limb's reach (0 if within)
    messages: dict[str, int] = field(default_factory=dict)


def bake(bpy: Any, sc: Scene, frames: Sequence[int]) -> float:
    """``limber.bake`` over the frames; returns the wall time (s)."""
    bpy.context.view_layer.objects.active = sc.rig
    t0 = time.perf_counter()
    result = bpy.ops.limber.bake(armature=sc.rig.name, frame_start=frames[0],
                                 frame_end=frames[-1])
    seconds = time.perf_counter() - t0
    if result != {"FINISHED"}:
        raise RuntimeError(f"limber.bake failed ({result})")
    return seconds


def measure(bpy: Any, sc: Scene, frames: Sequence[int]) -> dict[str, Track]:
    """Play the baked action back and compare each end bone with its target."""
    solve = importlib.import_module(f"{sc.module}.addon.run.solve")
    core = importlib.import_module(f"{sc.module}.core")
    scene = bpy.context.scene
    names = [lb.name for lb in sc.rig.limber.limbs]
    n = len(frames)
    raw: dict[str, dict[str, list[Any]]] = {k: {} for k in names}
    wish_in: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {k: [] for k in names}
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        rig_eval = sc.rig.evaluated_get(dg)
        mw = np.array(rig_eval.matrix_world)
        statuses = {s.limb: s for s in solve.solve_object(sc.rig, dg, write=False)}
        for lb in sc.rig.limber.limbs:
            end = mw @ np.array(rig_eval.pose.bones[lb.end_bone].matrix)
            tgt = np.array(lb.target.evaluated_get(dg).matrix_world)
            tgt[:3, :3] /= np.linalg.norm(tgt[:3, :3], axis=0)
            st = statuses[lb.name]
            rec = raw[lb.name]
            rec.setdefault("pos", []).append(float(np.linalg.norm(end[:3, 3] - tgt[:3, 3])))
            rec.setdefault("rot", []).append(
                float(rotation_angle_between(end[:3, :3], tgt[:3, :3])))
            for key in ("reachable", "within_limits", "swivel", "feasible_swivel", "solve_us"):
                rec.setdefault(key, []).append(getattr(st, key))
            rec.setdefault("message", []).append(st.message)
            req = solve.limb_request_at(sc.rig, lb, dg)  # the goal as the pipeline sees it
            wish_in[lb.name].append((req.target_goal[0][:3, 3],
                                     np.asarray(req.kwargs["elbow_target"])))
    tracks: dict[str, Track] = {}
    for lb in sc.rig.limber.limbs:
        rec = raw[lb.name]
        limb = solve.rig_for(sc.rig, lb).limb
        free = limb.with_limits(None)
        goal_p = np.array([g for g, _ in wish_in[lb.name]])
        pole_p = np.array([p for _, p in wish_in[lb.name]])
        wish = core.solve_limb(free, core.PositionGoal(goal_p), elbow_target=pole_p).swivel
        reach = float(np.linalg.norm(limb.a[:3, 3]) + np.linalg.norm(limb.b[:3, 3]))
        messages: dict[str, int] = {}
        for m in rec["message"]:
            for part in m.split("; "):
                key = part.split(" (")[0]
                messages[key] = messages.get(key, 0) + 1
        tracks[lb.name] = Track(
            position_error=np.array(rec["pos"]),
            orientation_error=np.array(rec["rot"]),
            reachable=np.array(rec["reachable"], dtype=bool),
            within_limits=np.array(rec["within_limits"], dtype=bool),
            swivel=np.array(rec["swivel"], dtype=float),
            wish=np.asarray(wish, dtype=float).reshape(n),
            feasible=[tuple(fs) for fs in rec["feasible_swivel"]],
            solve_us=np.array(rec["solve_us"], dtype=float),
            reach_gap=np.maximum(np.linalg.norm(goal_p, axis=1) - reach, 0.0),
            messages=messages,
        )
    return tracks


# --------------------------------------------------------------------------------------
# Pictures
# --------------------------------------------------------------------------------------


def setup_stage(bpy: Any) -> None:
    """Camera (three-quarter front view), floor, world colour and Workbench look."""
    from mathutils import Vector

    scene = bpy.context.scene
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.data.lens = 50.0
    cam.location = (2.3, -3.0, 1.35)
    look = Vector((0.0, 0.0, 0.92)) - cam.location
    cam.rotation_euler = look.to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam
    floor_mesh = bpy.data.meshes.new("Floor")
    floor_mesh.from_pydata([(-2, -2, 0), (2, -2, 0), (2, 2, 0), (-2, 2, 0)], [], [(0, 1, 2, 3)])
    floor = bpy.data.objects.new("Floor", floor_mesh)
    floor_mesh.materials.append(material(bpy, "Floor", (0.55, 0.57, 0.6, 1.0)))
    scene.collection.objects.link(floor)
    floor.hide_select = True
    world = bpy.data.worlds.new("World")
    world.color = (0.93, 0.94, 0.96)  # Workbench's background
    if world.node_tree is None:  # Cycles' background: the same colour, dimmer, plus a sun
        world.use_nodes = True
    bg = world.node_tree.nodes.get("Background")
    if bg is not None:
        bg.inputs["Color"].default_value = (0.93, 0.94, 0.96, 1.0)
        bg.inputs["Strength"].default_value = 0.6
    scene.world = world
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 3.0
    sun.rotation_euler = (math.radians(40.0), math.radians(10.0), math.radians(35.0))
    scene.collection.objects.link(sun)
    shading = scene.display.shading
    shading.light = "STUDIO"
    shading.color_type = "MATERIAL"
    shading.show_shadows = True
    shading.shadow_intensity = 0.35
    scene.render.resolution_x, scene.render.resolution_y = CONTACT_SIZE
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = False


def contact_frames(frames: Sequence[int], k: int) -> list[int]:
    """``k`` frames spread over the clip (ends excluded when there is room)."""
    k = max(1, min(k, len(frames)))
    if len(frames) <= k:
        return list(frames)
    idx = np.linspace(0, len(frames) - 1, k + 2)[1:-1] if len(frames) > k + 2 else \
        np.linspace(0, len(frames) - 1, k)
    return [frames[int(round(i))] for i in idx]


def image_has_content(path: Path) -> bool:
    """A render that is not one flat colour (a failed GPU context renders blank)."""
    from PIL import Image

    if not path.is_file():
        return False
    with Image.open(path) as im:
        arr = np.asarray(im.convert("RGB"), dtype=np.float64)
    return bool(arr.std(axis=(0, 1)).max() > 8.0)


def render_frames(bpy: Any, frames: Sequence[int], engine: str, folder: Path) -> list[Path]:
    """Render ``frames`` with Workbench or Cycles (CPU, few samples) to PNGs."""
    scene = bpy.context.scene
    if engine == "workbench":
        scene.render.engine = "BLENDER_WORKBENCH"
    else:
        scene.render.engine = "CYCLES"
        scene.cycles.device = "CPU"
        scene.cycles.samples = 16
        scene.cycles.use_denoising = False
    scene.render.image_settings.file_format = "PNG"
    out = []
    for f in frames:
        scene.frame_set(f)
        path = folder / f"pose_{engine}_{f:04d}.png"
        scene.render.filepath = str(path)
        bpy.ops.render.render(write_still=True)
        if not image_has_content(path):
            raise RuntimeError(f"{engine} rendered an empty image for frame {f}")
        out.append(path)
    return out


def plot_frames(bpy: Any, sc: Scene, frames: Sequence[int], folder: Path) -> list[Path]:
    """The fallback: one matplotlib 3-D stick figure per frame, from evaluated bones."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scene = bpy.context.scene
    bones = [b.name for b in _body_bones(sc.rig)]
    limb_bones = {b for _, bs in LIMBS.values() for b in bs}
    out = []
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        ev = sc.rig.evaluated_get(dg)
        mw = np.array(ev.matrix_world)
        fig = plt.figure(figsize=(CONTACT_SIZE[0] / 100, CONTACT_SIZE[1] / 100), dpi=100)
        ax = fig.add_subplot(projection="3d")
        for name in bones:
            pb = ev.pose.bones[name]
            h = mw[:3, :3] @ np.array(pb.head) + mw[:3, 3]
            t = mw[:3, :3] @ np.array(pb.tail) + mw[:3, 3]
            colour = LIMB_COLOUR if name in limb_bones else (0.35, 0.35, 0.4, 1.0)
            ax.plot(*zip(h, t, strict=True), color=colour[:3],
                    lw=3 if name in limb_bones else 1.5)
        for tgt in sc.targets.values():
            p = np.array(tgt.evaluated_get(dg).matrix_world)[:3, 3]
            ax.scatter(*p, color=TARGET_COLOUR[:3], s=18)
        ax.set_xlim(-0.8, 0.8)
        ax.set_ylim(-0.8, 0.8)
        ax.set_zlim(0.0, 2.0)
        ax.set_box_aspect((1.6, 1.6, 2.0), zoom=1.35)
        fig.subplots_adjust(left=0, right=1, bottom=0, top=1)
        ax.view_init(elev=10, azim=-55)
        ax.set_axis_off()
        path = folder / f"pose_plot_{f:04d}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        out.append(path)
    return out


def compose_sheet(images: Sequence[Path], frames: Sequence[int], fps: float, path: Path,
                  columns: int) -> None:
    """Tile pose images into one labelled contact sheet (palette PNG, small)."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=17)
    tiles = [Image.open(p).convert("RGB") for p in images]
    w, h = tiles[0].size
    cols = max(1, min(columns, len(tiles)))
    rows = math.ceil(len(tiles) / cols)
    sheet = Image.new("RGB", (cols * w, rows * h), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for i, (tile, f) in enumerate(zip(tiles, frames, strict=True)):
        x, y = (i % cols) * w, (i // cols) * h
        sheet.paste(tile, (x, y))
        draw.text((x + 8, y + 6), f"frame {f}  (t = {(f - 1) / fps:.2f} s)", fill=(20, 20, 20),
                  font=font)
    for t in tiles:
        t.close()
    sheet.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def make_contact_sheet(bpy: Any, sc: Scene, frames: Sequence[int], out: Path, k: int,
                       prefer: str, name: str = "contact_sheet.png",
                       chosen: Sequence[int] | None = None) -> tuple[Path, str, list[str]]:
    """Render (or plot) ``k`` poses (or the ``chosen`` frames) into ``out / name``; returns
    (sheet, renderer used, notes on failures)."""
    chosen = list(chosen) if chosen is not None else contact_frames(frames, k)
    folder = out / "poses"
    folder.mkdir(parents=True, exist_ok=True)
    order = [prefer, *[r for r in RENDERERS if r != prefer]]
    notes: list[str] = []
    images: list[Path] = []
    used = ""
    for renderer in order:
        try:
            if renderer == "matplotlib":
                images = plot_frames(bpy, sc, chosen, folder)
            else:
                images = render_frames(bpy, chosen, renderer, folder)
        except Exception as exc:  # noqa: BLE001 - any failure means: try the next one
            notes.append(f"{renderer}: {type(exc).__name__}: {exc}".strip())
            continue
        used = renderer
        break
    if not used:
        raise RuntimeError("no renderer worked: " + "; ".join(notes))
    sheet = out / name
    compose_sheet(images, chosen, sc.clip.fps, sheet, columns=len(chosen))
    return sheet, used, notes


# --------------------------------------------------------------------------------------
# The full-body scene
# --------------------------------------------------------------------------------------

#: Frames of the full-body scene (the hand target's path).
BODY_FRAMES = 24
#: The hand target's last position relative to the shoulder, in arm lengths along a
#: forward-down direction (armature space): beyond the arm's reach, so the spine bends and
#: the hips shift.
BODY_REACH = 1.6
BODY_DIRECTION = (0.35, -1.0, -0.9)
#: How far each spine, neck and head bone may turn about each axis (degrees).
BODY_BEND_DEG = 20.0
FOOT_COLOUR = (0.15, 0.35, 0.9, 1.0)


@dataclass
class BodyRun:
    """The full-body scene's measurements (evaluated pose of the baked keys)."""

    frames: list[int]
    foot_error: np.ndarray  # (N,) m, worst foot against its pin, per frame
    foot_rotation: np.ndarray  # (N,) rad
    hand_error: np.ndarray  # (N,) m
    hand_gap: np.ndarray  # (N,) m, how far the target is beyond the arm from the rest shoulder
    hips_shift: np.ndarray  # (N,) m, root bone head from its rest position
    spine_bend: np.ndarray  # (N,) rad, the chest's turn relative to the pelvis
    bake_s: float
    message: str


def clear_scene(bpy: Any, keep: Sequence[str] = ("Camera", "Floor", "Sun")) -> None:
    """Remove every object but the stage (camera, floor, sun)."""
    for ob in [o for o in bpy.data.objects if o.name not in keep]:
        bpy.data.objects.remove(ob)


def build_body_scene(bpy: Any, module: str, frames: Sequence[int]) -> tuple[Scene, str]:
    """The meta-rig (human limb limits) with a Limber body added by ``limber.add_body``:
    feet pinned where they stand, the hips pinned at a low priority, spine bones within
    ±:data:`BODY_BEND_DEG`, the left hand reaching for a target that moves forward and
    down to :data:`BODY_REACH` arm lengths, the head looking at it."""
    clear_scene(bpy)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = frames[0], frames[-1]
    scene.frame_set(frames[0])
    assert bpy.ops.object.armature_human_metarig_add() == {"FINISHED"}
    rig = bpy.context.active_object
    rig.name = "metarig"
    set_joint_limits(rig, True)
    assert bpy.ops.limber.add_body(armature=rig.name) == {"FINISHED"}
    body = rig.limber.bodies[0]
    body.bend_range = math.radians(BODY_BEND_DEG)
    hand = body.pins["hand.L"]
    hand.goal_type = "POSITION"
    pbs = rig.pose.bones
    shoulder = np.array(pbs[hand.upper_bone].head)
    reach = (pbs[hand.lower_bone].head - pbs[hand.upper_bone].head).length + (
        pbs[hand.tip_bone].head - pbs[hand.lower_bone].head).length
    start = np.array(pbs[hand.tip_bone].head)
    end = shoulder + unit_rows(np.array(BODY_DIRECTION, dtype=float)) * reach * BODY_REACH
    s = np.linspace(0.0, 1.0, len(frames))[:, None]
    path = start + (end - start) * (3 * s**2 - 2 * s**3)  # ease in and out
    key_object(bpy, hand.target, frames, path)
    head = body.pins.get("head")
    if head is not None:
        key_object(bpy, head.target, frames, path)
    add_marker(bpy, hand.target, "marker.hand", 0.045, TARGET_COLOUR)
    for name in ("foot.L", "foot.R"):
        add_marker(bpy, body.pins[name].target, f"marker.{name}", 0.04, FOOT_COLOUR)
    add_mannequin(bpy, rig)
    targets = {p.name: p.target for p in body.pins if p.kind in ("HAND", "FOOT")}
    fps = scene.render.fps / scene.render.fps_base
    clip = Clip(list(frames), fps, {}, {}, {}, {})  # only its fps labels the sheet
    return Scene(rig, None, clip, {}, targets, {}, module), body.name


def bake_body(bpy: Any, sc: Scene, name: str, frames: Sequence[int]) -> BodyRun:
    """``limber.bake`` of the body, then the baked keys played back (body disabled) and
    measured on the evaluated pose."""
    rig = sc.rig
    body = rig.limber.bodies[name]
    t0 = time.perf_counter()
    result = bpy.ops.limber.bake(armature=rig.name, frame_start=frames[0],
                                 frame_end=frames[-1])
    bake_s = time.perf_counter() - t0
    if result != {"FINISHED"}:
        raise RuntimeError(f"limber.bake of the body failed ({result})")
    message = body.status.message
    body.enabled = False  # play the keys back as they are
    scene = bpy.context.scene
    hand = body.pins["hand.L"]
    pbs = rig.pose.bones
    shoulder = np.array(pbs[hand.upper_bone].bone.head_local)
    reach = (pbs[hand.lower_bone].bone.head_local - pbs[hand.upper_bone].bone.head_local
             ).length + (pbs[hand.tip_bone].bone.head_local - pbs[hand.lower_bone].bone.head_local
                         ).length
    root_rest = np.array(pbs[body.root_bone].bone.head_local)
    clavicle = pbs[hand.upper_bone].parent.name  # turns with the chest
    rest = np.array(pbs[body.root_bone].bone.matrix_local)[:3, :3].T @ np.array(
        pbs[clavicle].bone.matrix_local)[:3, :3]
    rows = []
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        ev = rig.evaluated_get(dg)
        mw = np.array(ev.matrix_world)

        def world(bone: str, ev: Any = ev, mw: np.ndarray = mw) -> np.ndarray:
            return mw @ np.array(ev.pose.bones[bone].matrix)  # type: ignore[no-any-return]

        feet = []
        for foot in ("foot.L", "foot.R"):
            pin = body.pins[foot]
            got, want = world(pin.tip_bone), np.array(pin.target.evaluated_get(dg).matrix_world)
            want[:3, :3] /= np.linalg.norm(want[:3, :3], axis=0)
            feet.append((float(np.linalg.norm(got[:3, 3] - want[:3, 3])),
                         float(rotation_angle_between(got[:3, :3], want[:3, :3]))))
        p = np.array(hand.target.evaluated_get(dg).matrix_world)[:3, 3]
        hand_err = float(np.linalg.norm(world(hand.tip_bone)[:3, 3] - p))
        gap = max(float(np.linalg.norm(p - (mw[:3, :3] @ shoulder + mw[:3, 3]))) - reach, 0.0)
        shift = float(np.linalg.norm(world(body.root_bone)[:3, 3]
                                     - (mw[:3, :3] @ root_rest + mw[:3, 3])))
        pelvis, top = world(body.root_bone), world(clavicle)
        bend = float(rotation_angle_between(pelvis[:3, :3].T @ top[:3, :3], rest))
        rows.append((max(e[0] for e in feet), max(e[1] for e in feet), hand_err, gap, shift,
                     bend))
    a = np.array(rows)
    return BodyRun(list(frames), a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4], a[:, 5], bake_s,
                   message)


def body_summary(run: BodyRun) -> dict[str, Any]:
    """The full-body scene's numbers for summary.json and the report."""
    return {
        "frames": len(run.frames),
        "bake_s": run.bake_s,
        "bake_ms_per_frame": 1000.0 * run.bake_s / len(run.frames),
        "feet_position_error_max_m": float(run.foot_error.max()),
        "feet_orientation_error_max_rad": float(run.foot_rotation.max()),
        "hand_error_m": {"first": float(run.hand_error[0]), "last": float(run.hand_error[-1])},
        "hand_target_beyond_arm_m": float(run.hand_gap.max()),
        "hips_shift_max_m": float(run.hips_shift.max()),
        "spine_bend_max_deg": math.degrees(float(run.spine_bend.max())),
        "status": run.message,
    }


def _breaks(t: np.ndarray, deg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Insert NaNs where an angle curve wraps (so lines do not jump across the plot)."""
    jump = np.abs(np.diff(deg)) > 180.0
    idx = np.flatnonzero(jump) + 1
    return np.insert(t, idx, np.nan), np.insert(deg, idx, np.nan)


def plot_swivel(tracks: dict[str, Track], times: np.ndarray, path: Path) -> None:
    """Per limb: the feasible swivel band over time, the clip's swivel and Limber's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    bins = np.arange(-180.0, 180.0, 1.0) + 0.5
    fig, axes = plt.subplots(len(tracks), 1, figsize=(11, 2.3 * len(tracks)), sharex=True,
                             squeeze=False)
    span = (float(times[0]), float(times[-1]) if len(times) > 1 else float(times[0]) + 1e-2)
    for ax, (name, tr) in zip(axes[:, 0], tracks.items(), strict=True):
        rad = np.radians(bins)
        mask = np.zeros((len(bins), len(times)))
        for j, fs in enumerate(tr.feasible):
            for lo, hi in fs:
                mask[((rad - lo) % (2.0 * math.pi)) <= (hi - lo), j] = 1.0
        ax.imshow(mask, extent=(*span, -180.0, 180.0), origin="lower", aspect="auto",
                  cmap=ListedColormap(["#f3d3cf", "#cfeccf"]), vmin=0, vmax=1,
                  interpolation="nearest")
        ax.plot(*_breaks(times, np.degrees(wrap_angle(tr.wish))), color="0.45", lw=1.0, ls="--")
        ax.plot(*_breaks(times, np.degrees(wrap_angle(tr.swivel))), color="k", lw=1.3)
        ax.set_ylim(-180, 180)
        ax.set_yticks((-180, -90, 0, 90, 180))
        ax.set_ylabel(f"{name}\nswivel (°)")
    axes[-1, 0].set_xlabel("time (s)")
    handles = [
        Patch(color="#cfeccf", label="feasible swivel (all joint limits hold)"),
        Patch(color="#f3d3cf", label="infeasible"),
        plt.Line2D([], [], color="0.45", ls="--", label="the clip's swivel (pole)"),
        plt.Line2D([], [], color="k", label="swivel Limber used"),
    ]
    fig.legend(handles=handles, loc="upper center", ncol=4, frameon=False, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=90)
    plt.close(fig)


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def _stats(x: np.ndarray) -> tuple[float, float]:
    return (float(np.median(x)), float(np.max(x))) if len(x) else (float("nan"), float("nan"))


def summarise(tracks: dict[str, Track], frames: Sequence[int], bake_s: float) -> dict[str, Any]:
    """The numbers of the report (also written to summary.json)."""
    limbs: dict[str, Any] = {}
    for name, tr in tracks.items():
        ok = tr.reachable
        inside = np.array([any(((w - lo) % (2.0 * math.pi)) <= (hi - lo) for lo, hi in fs)
                           for w, fs in zip(tr.wish, tr.feasible, strict=True)])
        pos_med, pos_max = _stats(tr.position_error[ok])
        rot_med, rot_max = _stats(tr.orientation_error[ok])
        miss = tr.position_error[~ok]
        limbs[name] = {
            "frames": len(frames),
            "reached": int(ok.sum()),
            "within_limits": int(tr.within_limits.sum()),
            "clip_swivel_feasible": int(inside.sum()),
            "no_feasible_swivel": int(sum(1 for fs in tr.feasible if not fs)),
            "beyond_reach": int((tr.reach_gap > 0).sum()),
            "position_error_m": {"median": pos_med, "max": pos_max},
            "orientation_error_rad": {"median": rot_med, "max": rot_max},
            "missed_position_error_m": {"median": _stats(miss)[0], "max": _stats(miss)[1]},
            "missed_orientation_error_rad": _stats(tr.orientation_error[~ok])[1],
            "solve_us": {"median": float(np.median(tr.solve_us)),
                         "p95": float(np.percentile(tr.solve_us, 95))},
            "messages": tr.messages,
        }
    n = len(frames)
    reached = [v["reached"] for v in limbs.values()]
    all_pos = np.concatenate([t.position_error[t.reachable] for t in tracks.values()])
    all_rot = np.concatenate([t.orientation_error[t.reachable] for t in tracks.values()])
    return {
        "frames": n,
        "first_frame": frames[0],
        "last_frame": frames[-1],
        "limbs": limbs,
        "limb_frames": n * len(tracks),
        "limb_frames_reached": int(sum(reached)),
        "position_error_m": {"median": _stats(all_pos)[0], "max": _stats(all_pos)[1]},
        "orientation_error_rad": {"median": _stats(all_rot)[0], "max": _stats(all_rot)[1]},
        "bake_s": bake_s,
        "bake_ms_per_frame": 1e3 * bake_s / n,
    }


def _fmt_um(m: float) -> str:
    return "—" if math.isnan(m) else f"{m * 1e6:.2f} µm"


def _fmt_mm(m: float) -> str:
    return "—" if math.isnan(m) else f"{m * 1e3:.1f} mm"


def _fmt_urad(r: float) -> str:
    return "—" if math.isnan(r) else f"{r * 1e6:.2f} µrad"


def write_report(path: Path, sc: Scene, summary: dict[str, Any], info: dict[str, Any]) -> None:
    """report.md: what was built, how well it was baked, how long it took."""
    fr = summary["frames"]
    fps = sc.clip.fps
    lines = [
        "# Limber demo: a motion-capture clip on the Rigify meta-rig",
        "",
        f"Produced by `{info['command']}` on {info['date']} — Blender {info['blender']} "
        f"(bpy module, headless), Python {info['python']}, {info['machine']}.",
        f"Limber was installed as a user installs it: {info['installed']}.",
        "",
        "## Scene",
        "",
        "- **Rig**: the Rigify human meta-rig (`armature_human_metarig_add`), a mannequin mesh "
        "skinned to it for the pictures.",
        f"- **Clip**: `tools/data/mocap/cmu_131_01.bvh` (CMU motion-capture database, subject "
        f"131, trial 1), imported with Blender's BVH importer; frames "
        f"{summary['first_frame']}–{summary['last_frame']} ({fr} frames, {fr / fps:.2f} s at "
        f"{fps:.0f} fps).",
        "- **Retargeting**: each wrist (ankle) relative to its shoulder (hip) in the clip's "
        "torso (pelvis) frame, scaled by the limb-length ratio "
        + ", ".join(f"{k} ×{g.scale:.3f}" for k, g in sc.goals.items())
        + ", and placed at the meta-rig's shoulder (hip); the pelvis height follows the clip "
        "(walk in place: root travel and torso turns removed). Hand and foot orientations "
        "come from the clip's hand and ankle bones through rest-pose landmark frames, so "
        "every limb has a **POSE** goal (position and orientation). Each clip elbow (knee) "
        "drives a **pole** Empty: swivel mode POLE, i.e. the clip's swivel angle.",
        "- **Limits** (Bone > Inverse Kinematics on the meta-rig, degrees, left side; the right "
        "side mirrored): "
        + ("none (`--no-limits`)." if not info["use_limits"] else "; ".join(
            f"{kind} {role} " + " ".join(
                f"{ax} [{lim[0]:g}, {lim[1]:g}]" for ax, lim in zip("xyz", axes, strict=True)
                if lim is not None)
            for kind, table in JOINT_LIMITS_DEG.items()
            for role, axes in table.items() if any(a is not None for a in axes))
           + "; wrists and ankles free. Where the clip's swivel would break a limit, Limber "
           "uses the nearest feasible swivel; where no swivel is feasible it reports the "
           "target as not reached."),
        "",
        "## Results",
        "",
        "Measured on the **baked** animation: each frame is played back and the end bone's "
        "evaluated world frame is compared with its target; *reached*, *within limits* and "
        "the feasible swivel are Limber's own per-frame status.",
        "",
        "| limb | frames reached | within limits | clip swivel feasible | position error "
        "(median / max) | orientation error (median / max) | missed by (median / max) | "
        "solve µs (median / p95) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, v in summary["limbs"].items():
        pe, oe, me, su = (v["position_error_m"], v["orientation_error_rad"],
                          v["missed_position_error_m"], v["solve_us"])
        lines.append(
            f"| {name} | {v['reached']}/{fr} | {v['within_limits']}/{fr} | "
            f"{v['clip_swivel_feasible']}/{fr} | {_fmt_um(pe['median'])} / {_fmt_um(pe['max'])}"
            f" | {_fmt_urad(oe['median'])} / {_fmt_urad(oe['max'])} | "
            f"{_fmt_mm(me['median'])} / {_fmt_mm(me['max'])} | "
            f"{su['median']:.0f} / {su['p95']:.0f} |")
    lines += [
        "",
        "Errors are over the frames where the target was reached (float32 keys and targets "
        "bound them near 1e-6); *missed by* is the position error on the other frames. "
        "Per-limb status messages (frames):",
        "",
    ]
    for name, v in summary["limbs"].items():
        msgs = ", ".join(f"{k}: {c}" for k, c in sorted(v["messages"].items()))
        lines.append(f"- {name}: {msgs}")
    lines += [
        "",
        "## Timing",
        "",
        f"- `limber.bake`: **{summary['bake_s']:.2f} s** for {fr} frames × "
        f"{len(summary['limbs'])} limbs = **{summary['bake_ms_per_frame']:.2f} ms per frame** "
        "(solve, write, frame change and keying).",
        "- Analytic solve per limb (median): "
        + ", ".join(f"{k} {v['solve_us']['median']:.0f} µs" for k, v in
                    summary["limbs"].items()) + ".",
        f"- Whole demo: {info['total_s']:.1f} s (scene {info['scene_s']:.1f} s, measure "
        f"{info['measure_s']:.1f} s, pictures {info['pictures_s']:.1f} s). Timings are from "
        "one run on a shared machine.",
        "",
        "## Pictures",
        "",
        f"- `contact_sheet.png`: {len(info['contact_frames'])} poses (frames "
        f"{', '.join(map(str, info['contact_frames']))}), rendered with "
        f"**{info['renderer']}**"
        + (f" (tried first: {'; '.join(info['render_notes'])})" if info["render_notes"]
           else "") + ". Orange: the four limbs Limber solves; red balls: targets; blue "
        "balls: poles.",
        "- `swivel.png`: per limb, the feasible swivel band over time (green), the clip's "
        "swivel (dashed) and the swivel Limber used (black).",
        "",
        "![contact sheet](contact_sheet.png)",
        "",
        "![swivel](swivel.png)",
        "",
        *body_report(summary.get("body")),
        "## The .blend",
        "",
        f"`{BLEND_NAME}`: the meta-rig with the baked action, the targets, poles, the "
        "mannequin and the source clip (1.5 m to the side). Open it in Blender 4.5 LTS or "
        "newer (the file format of Blender 5.0, which wrote it, is not readable by 4.4 and "
        "older) with the Limber extension installed (File → Open); press Play to see the baked "
        "walk, or move a target / the swivel with Limber's live playback to re-solve.",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def body_report(body: dict[str, Any] | None) -> list[str]:
    """The report's full-body section (none when the scene was skipped)."""
    if body is None:
        return []
    return [
        "## Full body",
        "",
        "A second scene: the meta-rig with a Limber **body** (`limber.add_body`: the pelvis "
        "moves and turns, spine, neck and head bend, the four limbs are solved analytically). "
        "The feet are pinned where they stand (priority 0), the hips too, at the lowest "
        f"priority (3); spine, neck and head bones turn at most {BODY_BEND_DEG:g}° about each "
        "axis. The left hand (priority 1) reaches for a target that moves forward and down "
        f"to {BODY_REACH} arm lengths from the shoulder, and the head looks at it (priority "
        "2). Baked with "
        f"`limber.bake` ({body['frames']} frames, {body['bake_s']:.2f} s, "
        f"{body['bake_ms_per_frame']:.0f} ms per frame), then played back with the body "
        "disabled and measured on the evaluated pose:",
        "",
        f"- feet on their pins: worst position error "
        f"**{_fmt_um(body['feet_position_error_max_m'])}**, orientation "
        f"{_fmt_urad(body['feet_orientation_error_max_rad'])}, over every frame;",
        f"- the hand target ends {_fmt_mm(body['hand_target_beyond_arm_m'])} beyond the arm's "
        "reach from the rest shoulder; the hand's error: "
        f"{_fmt_mm(body['hand_error_m']['first'])} at the first frame, "
        f"{_fmt_mm(body['hand_error_m']['last'])} at the last;",
        f"- to get there the hips shift up to {_fmt_mm(body['hips_shift_max_m'])} and the "
        f"chest turns up to {body['spine_bend_max_deg']:.0f}° against the pelvis;",
        f"- Limber's status after the bake (worst frame): {body['status']}.",
        "",
        f"`body_sheet.png` (frames {', '.join(map(str, body['sheet_frames']))}, "
        f"{body['renderer']}): red ball the hand's target, blue balls the feet's pins.",
        "",
        "![full body](body_sheet.png)",
        "",
    ]


def clip_frame_count() -> int:
    """Frames in the bundled clip (from its BVH header)."""
    with CLIP.open(encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("Frames:"):
                return int(line.split()[1])
    raise RuntimeError(f"no 'Frames:' line in {CLIP}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bash tools/demo.sh",
        description="Limber demo: retarget a mocap clip onto the Rigify meta-rig, bake it "
        "with Limber, write a report, pictures and a .blend (headless).",
    )
    p.add_argument("--frames", type=int, default=None,
                   help="bake only the first N frames of the clip (default: all)")
    p.add_argument("--out", type=Path, default=None,
                   help="output folder (default: $LIMBER_DEMO_OUT, else demo_out/)")
    p.add_argument("--render", choices=RENDERERS, default="workbench",
                   help="renderer tried first for the contact sheet; the others follow "
                   "automatically if it fails (default: workbench)")
    p.add_argument("--contact", type=int, default=6,
                   help="poses in the contact sheet (default: 6)")
    p.add_argument("--no-limits", action="store_true",
                   help="bake without the joint limits")
    p.add_argument("--body-frames", type=int, default=BODY_FRAMES,
                   help="frames of the full-body scene (0: skip it; default: "
                   f"{BODY_FRAMES})")
    args = p.parse_args(argv)
    if args.frames is not None and args.frames < 1:
        p.error(f"--frames must be at least 1, got {args.frames}")
    if args.contact < 1:
        p.error(f"--contact must be at least 1, got {args.contact}")
    if args.body_frames < 0:
        p.error(f"--body-frames must be at least 0, got {args.body_frames}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if "bpy" in sys.modules:
        # Inside a Blender session the demo would reset its preferences and install Limber
        # into the user's own extensions folder: it runs in a fresh bpy-module process only.
        print("limber demo: error: run it with 'bash tools/demo.sh' (a fresh bpy-module "
              "process), not inside a running Blender or after importing bpy", file=sys.stderr)
        return 2
    out = Path(args.out or os.environ.get("LIMBER_DEMO_OUT") or DEFAULT_OUT).resolve()
    out.mkdir(parents=True, exist_ok=True)
    n_clip = clip_frame_count()
    n = n_clip if args.frames is None else min(args.frames, n_clip)
    frames = list(range(1, n + 1))
    t_start = time.perf_counter()
    bpy = import_bpy()
    bpy.ops.wm.read_factory_settings(use_empty=True)

    def say(msg: str) -> None:
        print(f"limber demo [{time.perf_counter() - t_start:6.1f} s] {msg}", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="limber-demo-") as tmp:
        module, installed = install_limber(bpy, Path(tmp))
        say(f"Limber installed ({installed})")
        t0 = time.perf_counter()
        sc = build_scene(bpy, module, frames, use_limits=not args.no_limits)
        scene_s = time.perf_counter() - t0
        say(f"scene built: meta-rig, clip, {len(sc.targets)} targets and poles")
        bake_s = bake(bpy, sc, frames)
        say(f"baked {n} frames in {bake_s:.2f} s")
        t0 = time.perf_counter()
        tracks = measure(bpy, sc, frames)
        measure_s = time.perf_counter() - t0
        say("measured the baked animation")
        bpy.context.scene.frame_set(frames[0])
        blend = out / BLEND_NAME
        bpy.ops.wm.save_as_mainfile(filepath=str(blend), compress=True, copy=True)
        say(f"saved {blend}")
        t0 = time.perf_counter()
        setup_stage(bpy)
        sheet, renderer, notes = make_contact_sheet(bpy, sc, frames, out, args.contact,
                                                    args.render)
        times = (np.asarray(frames, dtype=float) - 1.0) / sc.clip.fps
        plot_swivel(tracks, times, out / "swivel.png")
        pictures_s = time.perf_counter() - t0
        say(f"pictures: {sheet.name} ({renderer}), swivel.png")
        body = None
        if args.body_frames:
            bframes = list(range(1, args.body_frames + 1))
            bsc, bname = build_body_scene(bpy, module, bframes)
            run = bake_body(bpy, bsc, bname, bframes)
            say(f"full body: baked {len(bframes)} frames in {run.bake_s:.2f} s")
            chosen = sorted({bframes[int(round(i))] for i in np.linspace(
                0, len(bframes) - 1, min(args.contact, len(bframes)))})
            bsheet, brenderer, _ = make_contact_sheet(bpy, bsc, bframes, out, args.contact,
                                                      renderer, "body_sheet.png", chosen)
            body = {**body_summary(run), "sheet_frames": chosen, "renderer": brenderer}
            say(f"pictures: {bsheet.name} ({brenderer})")
    summary = summarise(tracks, frames, bake_s)
    if body is not None:
        summary["body"] = body
    info = {
        "command": "bash tools/demo.sh" + ("" if argv is None else " " + " ".join(argv)),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "blender": bpy.app.version_string,
        "python": platform.python_version(),
        "machine": f"{platform.machine()} {platform.processor() or platform.system()} "
                   f"({os.cpu_count()} CPUs)",
        "installed": installed,
        "use_limits": not args.no_limits,
        "renderer": {"workbench": "Workbench", "cycles": "Cycles (CPU, 16 samples)",
                     "matplotlib": "matplotlib (3-D stick figures)"}[renderer],
        "render_notes": notes,
        "contact_frames": contact_frames(frames, args.contact),
        "scene_s": scene_s,
        "measure_s": measure_s,
        "pictures_s": pictures_s,
        "total_s": time.perf_counter() - t_start,
    }
    summary["renderer"] = info["renderer"]
    summary["installed"] = installed
    write_report(out / "report.md", sc, summary, info)
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    say(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    from tools.bpy_exit import exit_process

    status = main()
    exit_process(status)  # bpy < 5.0 may crash or hang at finalisation
    sys.exit(status)
