"""The release packages: ``bash tools/build.sh`` (Blender's own builder, scipy wheels per
platform) and, once, the linux-x64 zip installed the way users install it.

The build downloads the wheels named in the manifest into the git-ignored ``wheels/``
folder (network to PyPI; later runs reuse them) — about 6 s with a warm pip cache.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.blender.conftest import REPO_ROOT
from tools.dev_package import manifest_without_wheels

PLATFORMS = {"linux_x64": "manylinux", "windows_x64": "win_amd64", "macos_arm64": "macosx"}


@pytest.fixture(scope="module")
def release_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "LIMBER_VENV": os.environ.get("LIMBER_VENV", sys.prefix)}
    proc = subprocess.run(
        ["bash", str(REPO_ROOT / "tools" / "build.sh"), str(out)],
        capture_output=True, text=True, timeout=900, check=False, env=env,
    )
    assert proc.returncode == 0, f"tools/build.sh failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_manifest_bundles_scipy_for_three_platforms() -> None:
    with (REPO_ROOT / "blender_manifest.toml").open("rb") as fh:
        manifest = tomllib.load(fh)
    assert manifest["platforms"] == ["linux-x64", "windows-x64", "macos-arm64"]
    wheels = manifest["wheels"]
    assert len(wheels) == 3
    for w in wheels:
        name = Path(w).name
        assert w.startswith("./wheels/") and name.startswith("scipy-1.15.3-cp311-cp311-")
    stripped = tomllib.loads(manifest_without_wheels(
        (REPO_ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    ))
    assert "wheels" not in stripped and "platforms" not in stripped
    assert stripped["id"] == "limber"


def test_one_package_per_platform_with_its_own_wheel(
    release_dir: Path, blender_ext: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    zips = sorted(p.name for p in release_dir.glob("*.zip"))
    assert zips == sorted(f"limber-0.1.0-{p}.zip" for p in PLATFORMS)
    for plat, tag in PLATFORMS.items():
        path = release_dir / f"limber-0.1.0-{plat}.zip"
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            manifest = archive.read("blender_manifest.toml").decode()
        wheels = [n for n in names if n.endswith(".whl")]
        assert len(wheels) == 1 and tag in wheels[0], wheels
        assert f'platforms = ["{plat.replace("_", "-")}"]' in manifest
        top = {n.split("/", 1)[0] for n in names}
        assert top <= {"blender_manifest.toml", "__init__.py", "core", "addon", "LICENSE",
                       "wheels"}
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        proc = blender_ext("validate", str(path))
        assert proc.returncode == 0, proc.stdout + proc.stderr


INSTALL_SCRIPT = textwrap.dedent(
    '''
    import importlib.abc, importlib.machinery, os, sys, tempfile
    os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="limber-zip-user-")
    import bpy

    venv_sp = bpy.__file__.split(os.sep + "bpy" + os.sep)[0]  # the venv's site-packages

    class HideVenvScipy(importlib.abc.MetaPathFinder):
        """scipy must come from the wheel the package bundles, not from the test venv."""
        def find_spec(self, name, path=None, target=None):
            if name != "scipy":
                return None
            paths = [p for p in sys.path if not p.startswith(venv_sp)]
            spec = importlib.machinery.PathFinder.find_spec(name, paths)
            if spec is None:
                raise ImportError("scipy is only in the venv (hidden)")
            return spec

    assert "scipy" not in sys.modules
    sys.meta_path.insert(0, HideVenvScipy())
    repo_dir = tempfile.mkdtemp(prefix="limber-zip-repo-")
    bpy.context.preferences.extensions.repos.new(
        name="Limber zip", module="limber_zip", custom_directory=repo_dir, source="USER")
    res = bpy.ops.extensions.package_install_files(
        filepath=sys.argv[1], repo="limber_zip", enable_on_install=True)
    assert res == {"FINISHED"}, res
    module = "bl_ext.limber_zip.limber"
    assert module in {a.module for a in bpy.context.preferences.addons}

    # A two-bone chain solved with L-BFGS-B (scipy) through the installed add-on.
    arm = bpy.data.armatures.new("A")
    obj = bpy.data.objects.new("A", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    a = arm.edit_bones.new("a"); a.head, a.tail = (0, 0, 0), (0, 0, 1)
    b = arm.edit_bones.new("b"); b.head, b.tail = (0, 0, 1), (0, 0, 2); b.parent = a
    b.use_connect = True
    c = arm.edit_bones.new("c"); c.head, c.tail = (0, 0, 2), (0, 0, 2.2); c.parent = b
    c.use_connect = True
    bpy.ops.object.mode_set(mode="OBJECT")
    t = bpy.data.objects.new("T", None)
    bpy.context.scene.collection.objects.link(t)
    t.location = (0.6, 0.3, 1.6)
    ch = obj.limber.chains.add(); ch.name = "c"; ch.root_bone = "a"; ch.solver = "LBFGSB"
    e = ch.effectors.add(); e.tip_bone = "c"; e.target = t
    assert bpy.ops.limber.solve(armature="A") == {"FINISHED"}
    dg = bpy.context.evaluated_depsgraph_get(); dg.update()
    ev = obj.evaluated_get(dg)
    head = ev.matrix_world @ ev.pose.bones["c"].head
    assert (head - t.location).length < 1e-5, head
    import scipy
    assert "limber-zip-user-" in scipy.__file__, scipy.__file__
    assert scipy.__version__ == "1.15.3"
    assert bpy.ops.preferences.addon_disable(module=module) == {"FINISHED"}
    assert not hasattr(bpy.types.Object, "limber")
    print("LIMBER-ZIP-OK", scipy.__file__)
    '''
)


@pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")),
    reason="the linux-x64 package installs only on linux-x64",
)
def test_install_linux_zip_enable_solve_disable(release_dir: Path, tmp_path: Path) -> None:
    """Install from file into a temporary user repository (fresh Blender user folder, in a
    subprocess), enable, solve with the bundled scipy (the venv's is hidden), disable."""
    script = tmp_path / "install.py"
    script.write_text(INSTALL_SCRIPT, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), str(release_dir / "limber-0.1.0-linux_x64.zip")],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0 and "LIMBER-ZIP-OK" in proc.stdout, proc.stdout + proc.stderr
