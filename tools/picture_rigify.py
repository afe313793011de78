"""The README's picture of a generated Rigify rig posed by Limber (``docs/rigify_limber.png``).

Run: ``$LIMBER_VENV/bin/python tools/picture_rigify.py [--out docs/rigify_limber.png]``
(headless, in the ``bpy`` module; Workbench render as in ``tools/demo_blender.py``).

1. Installs Limber's development package with *Install from Disk* into a throw-away Blender
   user folder and enables the bundled ``rigify`` add-on.
2. Adds the human meta-rig, a mannequin skinned to it (``demo_blender.add_mannequin``), and
   generates the Rigify rig (``pose.rigify_generate``); the mannequin is re-skinned to the
   generated rig's DEF- bones.
3. Poses the FK controls, lets ``limber.detect_limbs(create_targets=True)`` put a target
   Empty (with a blue sphere) on each hand and foot, resets the FK controls to rest,
   and solves with ``limber.solve``: the pose in the picture is Limber's, reached through
   the FK controls, the MCH- helpers and Rigify's constraints down to the DEF- bones.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import demo_blender as demo  # noqa: E402
from tools.dev_package import stage_development_source  # noqa: E402

#: Colour of the target spheres (blue, against the orange limbs).
TARGET_COLOUR = (0.15, 0.45, 0.95, 1.0)
#: FK control → (axis, angle in degrees): the pose the targets are taken from.
FK_POSE: dict[str, tuple[tuple[float, float, float], float]] = {
    "upper_arm_fk.L": ((0.3, 0.0, 1.0), 60.0),
    "forearm_fk.L": ((1.0, 0.0, 0.0), 75.0),
    "hand_fk.L": ((0.0, 0.0, 1.0), -20.0),
    "upper_arm_fk.R": ((1.0, 0.2, -0.4), 55.0),
    "forearm_fk.R": ((1.0, 0.0, 0.0), 40.0),
    "thigh_fk.L": ((1.0, 0.0, 0.1), 45.0),
    "shin_fk.L": ((1.0, 0.0, 0.0), 60.0),
    "foot_fk.L": ((1.0, 0.0, 0.0), -15.0),
    "thigh_fk.R": ((1.0, 0.0, -0.1), -15.0),
    "shin_fk.R": ((1.0, 0.0, 0.0), 20.0),
}


def install(bpy: object, workdir: Path) -> None:
    """Build the development package with Blender's ``blender_ext.py`` and install it."""
    (workdir / "source").mkdir()
    src = stage_development_source(workdir / "source")
    cli = (Path(bpy.utils.system_resource("SCRIPTS"))  # type: ignore[attr-defined]
           / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py")
    zip_path = workdir / "limber.zip"
    subprocess.run([sys.executable, str(cli), "build", "--source-dir", str(src),
                    "--output-filepath", str(zip_path)], check=True, capture_output=True)
    ops = bpy.ops  # type: ignore[attr-defined]
    prefs = bpy.context.preferences  # type: ignore[attr-defined]
    if "bl_pkg" not in prefs.addons:
        ops.preferences.addon_enable(module="bl_pkg")
    result = ops.extensions.package_install_files(filepath=str(zip_path), repo="user_default",
                                                  enable_on_install=True)
    if result != {"FINISHED"}:
        raise RuntimeError(f"installing {zip_path} failed ({result})")
    ops.preferences.addon_enable(module="rigify")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "rigify_limber.png")
    args = parser.parse_args(argv)
    bpy = demo.import_bpy()
    from mathutils import Matrix, Quaternion

    with tempfile.TemporaryDirectory() as tmp:
        install(bpy, Path(tmp))
    for obj in list(bpy.data.objects):
        bpy.data.objects.remove(obj)
    assert bpy.ops.object.armature_human_metarig_add() == {"FINISHED"}
    meta = bpy.context.object
    body = demo.add_mannequin(bpy, meta)
    bpy.context.view_layer.objects.active = meta
    assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
    rig = next(o for o in bpy.data.objects if o.type == "ARMATURE" and "rig_id" in o.data)
    for group in body.vertex_groups:
        for prefix in ("DEF-", "ORG-"):
            if prefix + group.name in rig.data.bones:
                group.name = prefix + group.name
                break
    body.parent = rig
    body.modifiers["Armature"].object = rig
    meta.hide_render = meta.hide_viewport = True
    rig.hide_render = True

    pbs = rig.pose.bones
    for bone, (axis, deg) in FK_POSE.items():
        pbs[bone].rotation_quaternion = Quaternion(axis, deg * 3.141592653589793 / 180.0)
    bpy.context.view_layer.update()
    assert bpy.ops.limber.detect_limbs(armature=rig.name, create_targets=True) == {"FINISHED"}
    for limb in rig.limber.limbs:
        demo.add_marker(bpy, limb.target, f"{limb.name}.marker", 0.045, TARGET_COLOUR)
        for bone in (limb.upper_bone, limb.lower_bone, limb.end_bone):
            pbs[bone].matrix_basis = Matrix.Identity(4)
    bpy.context.view_layer.update()
    assert bpy.ops.limber.solve(armature=rig.name) == {"FINISHED"}
    for limb in rig.limber.limbs:
        st = limb.status
        print(f"{limb.name}: reached={st.reached} position error {st.position_error:.2e} m, "
              f"{st.message}")

    demo.setup_stage(bpy)
    scene = bpy.context.scene
    scene.render.resolution_x, scene.render.resolution_y = 720, 900
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = str(args.out)
    bpy.ops.render.render(write_still=True)
    if not demo.image_has_content(args.out):
        raise RuntimeError("Workbench rendered an empty image")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
