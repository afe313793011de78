"""Install a release zip (``bash tools/build.sh``) into the running bpy as users do, and use it.

    python tools/smoke_zip.py dist/limber-0.1.0-linux_x64.zip

In a fresh Blender user folder: *Install from Disk* (``extensions.package_install_files``)
into a new user repository with "enable on install"; the venv's own scipy is hidden, so the
add-on must import the scipy wheel the zip bundles for this Python (its version is checked
against the zip's wheels). Then a three-bone chain is solved with L-BFGS-B (scipy) and its
evaluated tip checked against the target, the chain is baked over 3 frames and the keys read
back through the installed ``addon.compat``, and the add-on is disabled (its RNA gone).
Prints ``LIMBER-ZIP-OK <scipy path>`` and exits 0 when everything held. Used by
``bash tools/test_matrix.sh`` on every row and by tests/blender/test_release_build.py.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.abc
import importlib.machinery
import os
import platform
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: make `tools` importable
    sys.path.insert(0, str(ROOT))

#: (sys.platform prefix, machine) -> the platform suffix of the release zips.
PLATFORMS = {
    ("linux", "x86_64"): "linux_x64",
    ("linux", "aarch64"): "linux_arm64",
    ("darwin", "arm64"): "macos_arm64",
    ("darwin", "x86_64"): "macos_x64",
    ("win32", "AMD64"): "windows_x64",
}


def zip_for_this_machine(dist: str | Path) -> Path:
    """The release zip in ``dist`` for this machine's platform."""
    key = next(((p, m) for p, m in PLATFORMS if sys.platform.startswith(p)
                and platform.machine() == m), None)
    if key is None:
        raise SystemExit(f"limber: no release package for {sys.platform} {platform.machine()}")
    found = sorted(Path(dist).glob(f"limber-*-{PLATFORMS[key]}.zip"))
    if len(found) != 1:
        raise SystemExit(f"limber: expected one limber-*-{PLATFORMS[key]}.zip in {dist}: {found}")
    return found[0]


def bundled_scipy_version(package: Path) -> str:
    """The version of the scipy wheel the zip bundles for this Python."""
    tag = "cp{}{}".format(*sys.version_info[:2])
    with zipfile.ZipFile(package) as archive:
        names = [Path(n).name for n in archive.namelist() if n.endswith(".whl")]
    versions = [n.split("-")[1] for n in names if n.startswith("scipy-") and f"-{tag}-" in n]
    if len(versions) != 1:
        raise SystemExit(f"limber: the package bundles no single scipy for {tag}: {names}")
    return versions[0]


class HideVenvScipy(importlib.abc.MetaPathFinder):
    """scipy must come from the wheel the package bundles, not from the venv."""

    def __init__(self, venv_site: str) -> None:
        self.venv_site = venv_site

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != "scipy":
            return None
        paths = [p for p in sys.path if not p.startswith(self.venv_site)]
        spec = importlib.machinery.PathFinder.find_spec(name, paths)
        if spec is None:
            raise ImportError("scipy is only in the venv (hidden): the package's wheel is missing")
        return spec


def _chain_rig(bpy: Any) -> tuple[Any, Any]:
    arm = bpy.data.armatures.new("A")
    obj = bpy.data.objects.new("A", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for name, z0, z1 in (("a", 0.0, 1.0), ("b", 1.0, 2.0), ("c", 2.0, 2.2)):
        bone = arm.edit_bones.new(name)
        bone.head, bone.tail = (0.0, 0.0, z0), (0.0, 0.0, z1)
        if parent is not None:
            bone.parent, bone.use_connect = parent, True
        parent = bone
    bpy.ops.object.mode_set(mode="OBJECT")
    target = bpy.data.objects.new("T", None)
    bpy.context.scene.collection.objects.link(target)
    for frame, x in ((1, 0.6), (3, 0.5)):
        target.location = (x, 0.3, 1.6)
        target.keyframe_insert("location", frame=frame)
    chain = obj.limber.chains.add()
    chain.name, chain.root_bone, chain.solver = "c", "a", "LBFGSB"
    effector = chain.effectors.add()
    effector.tip_bone, effector.target = "c", target
    return obj, target


def smoke(package: Path) -> str:
    user = tempfile.mkdtemp(prefix="limber-zip-user-")
    os.environ["BLENDER_USER_RESOURCES"] = user
    # Registered before bpy is imported, so they run after bpy's own exit handlers.
    atexit.register(shutil.rmtree, user, ignore_errors=True)
    import bpy

    assert "scipy" not in sys.modules, "scipy was imported before the package was installed"
    venv_site = bpy.__file__.split(os.sep + "bpy" + os.sep)[0]
    sys.meta_path.insert(0, HideVenvScipy(venv_site))
    repo_dir = tempfile.mkdtemp(prefix="limber-zip-repo-")  # the installed package, ~70 MB
    atexit.register(shutil.rmtree, repo_dir, ignore_errors=True)
    bpy.context.preferences.extensions.repos.new(
        name="Limber zip", module="limber_zip", custom_directory=repo_dir, source="USER")
    result = bpy.ops.extensions.package_install_files(
        filepath=str(package), repo="limber_zip", enable_on_install=True)
    assert result == {"FINISHED"}, result
    module = "bl_ext.limber_zip.limber"
    assert module in {a.module for a in bpy.context.preferences.addons}, "not enabled"
    compat = importlib.import_module(f"{module}.addon.compat")

    obj, target = _chain_rig(bpy)
    bpy.context.scene.frame_set(1)
    assert bpy.ops.limber.solve(armature="A") == {"FINISHED"}
    depsgraph = bpy.context.evaluated_depsgraph_get()
    depsgraph.update()
    evaluated = obj.evaluated_get(depsgraph)
    tip = evaluated.matrix_world @ evaluated.pose.bones["c"].head
    assert (tip - target.location).length < 1e-5, tip

    assert bpy.ops.limber.bake(armature="A", frame_start=1, frame_end=3) == {"FINISHED"}
    fcurves = compat.assigned_fcurves(obj.animation_data)
    keyed = {fc.data_path.split('"')[1] for fc in fcurves}
    assert keyed == {"a", "b", "c"}, keyed
    assert all(len(fc.keyframe_points) == 3 for fc in fcurves)

    import scipy

    assert "limber-zip-user-" in str(scipy.__file__), scipy.__file__
    assert scipy.__version__ == bundled_scipy_version(package), scipy.__version__
    assert bpy.ops.preferences.addon_disable(module=module) == {"FINISHED"}
    assert not hasattr(bpy.types.Object, "limber")
    return f"LIMBER-ZIP-OK {scipy.__file__} (scipy {scipy.__version__}, Blender " \
           f"{bpy.app.version_string}, Python {platform.python_version()})"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python tools/smoke_zip.py <release zip>", file=sys.stderr)
        return 2
    print(smoke(Path(args[0]).resolve()))
    return 0


if __name__ == "__main__":
    from tools.bpy_exit import exit_process

    status = main()
    exit_process(status)  # bpy < 5.0 may crash or hang at finalisation
    sys.exit(status)
