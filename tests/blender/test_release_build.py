"""The release packages: ``bash tools/build.sh`` (Blender's own builder, scipy wheels for
Python 3.11 and 3.13 per platform) and, once, this machine's zip installed the way users
install it (``tools/smoke_zip.py``, which ``bash tools/test_matrix.sh`` runs on every row).

The build downloads the wheels named in the manifest into the git-ignored ``wheels/``
folder (network to PyPI; later runs reuse them) — about 6 s with a warm pip cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.blender.conftest import REPO_ROOT
from tools.dev_package import manifest_without_wheels
from tools.smoke_zip import zip_for_this_machine

#: Release platform -> the parts of its wheels' platform tags.
PLATFORMS = {"linux_x64": ("manylinux", "x86_64"), "linux_arm64": ("manylinux", "aarch64"),
             "macos_arm64": ("macosx", "arm64"), "macos_x64": ("macosx", "x86_64"),
             "windows_x64": ("win_amd64",)}


def _for(platform: str, wheel: str) -> bool:
    return all(part in wheel for part in PLATFORMS[platform])
PYTHONS = ("cp311", "cp313")


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


def test_manifest_bundles_scipy_for_five_platforms_and_two_pythons() -> None:
    with (REPO_ROOT / "blender_manifest.toml").open("rb") as fh:
        manifest = tomllib.load(fh)
    assert manifest["platforms"] == [p.replace("_", "-") for p in PLATFORMS]
    wheels = [Path(w).name for w in manifest["wheels"]]
    assert all(w.startswith("./wheels/scipy-") for w in manifest["wheels"])
    assert len(wheels) == len(PLATFORMS) * len(PYTHONS)
    for plat in PLATFORMS:
        for py in PYTHONS:
            assert len([w for w in wheels if f"-{py}-{py}-" in w and _for(plat, w)]) == 1, plat
    stripped = tomllib.loads(manifest_without_wheels(
        (REPO_ROOT / "blender_manifest.toml").read_text(encoding="utf-8")
    ))
    assert "wheels" not in stripped and "platforms" not in stripped
    assert stripped["id"] == "limber"


def test_manifest_permissions_and_maintainer() -> None:
    with (REPO_ROOT / "blender_manifest.toml").open("rb") as fh:
        manifest = tomllib.load(fh)
    assert set(manifest["permissions"]) == {"files"}  # the CLI writes .blend files, reports
    reason = manifest["permissions"]["files"]
    assert 0 < len(reason) <= 64 and reason[-1] not in ".!?"
    assert "example" not in manifest["maintainer"] and "<" in manifest["maintainer"]
    assert manifest["blender_version_min"] == "4.2.0"  # the matrix's oldest row


def test_one_package_per_platform_with_its_own_wheel(
    release_dir: Path, blender_ext: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    zips = sorted(p.name for p in release_dir.glob("*.zip"))
    assert zips == sorted(f"limber-0.1.0-{p}.zip" for p in PLATFORMS)
    for plat in PLATFORMS:
        path = release_dir / f"limber-0.1.0-{plat}.zip"
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            manifest = archive.read("blender_manifest.toml").decode()
        wheels = [n for n in names if n.endswith(".whl")]
        assert len(wheels) == len(PYTHONS), wheels
        assert all(_for(plat, w) for w in wheels) and all(
            any(f"-{py}-" in w for w in wheels) for py in PYTHONS), wheels
        assert f'platforms = ["{plat.replace("_", "-")}"]' in manifest
        top = {n.split("/", 1)[0] for n in names}
        assert top <= {"blender_manifest.toml", "__init__.py", "core", "addon", "LICENSE",
                       "wheels"}
        assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
        proc = blender_ext("validate", str(path))
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_install_zip_enable_solve_bake_disable(release_dir: Path, tmp_path: Path) -> None:
    """This machine's zip installed from file into a fresh Blender user folder (in a
    subprocess): enabled, solved with the bundled scipy (the venv's is hidden), baked and
    read back through the installed compat module, disabled."""
    package = zip_for_this_machine(release_dir)
    scratch = tmp_path / "tmp"  # the smoke's own temporary folders, which it must remove
    scratch.mkdir()
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "smoke_zip.py"), str(package)],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    assert proc.returncode == 0 and "LIMBER-ZIP-OK" in proc.stdout, proc.stdout + proc.stderr
    assert sorted(p.name for p in scratch.iterdir()) == [], "smoke_zip.py left temporary files"
