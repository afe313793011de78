"""``blender_manifest.toml`` passes Blender's own validator and states what Limber promises."""

from __future__ import annotations

import string
import subprocess
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

BlenderExt = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def manifest(repo_root: Path) -> dict[str, Any]:
    """The parsed manifest."""
    with (repo_root / "blender_manifest.toml").open("rb") as fh:
        return tomllib.load(fh)


def test_blender_validator_accepts_manifest(blender_ext: BlenderExt, repo_root: Path) -> None:
    proc = blender_ext("validate", str(repo_root))
    assert proc.returncode == 0, f"validate failed:\n{proc.stdout}\n{proc.stderr}"


def test_identity(manifest: dict[str, Any]) -> None:
    assert manifest["schema_version"] == "1.0.0"
    assert manifest["id"] == "limber"
    assert manifest["name"] == "Limber"
    assert manifest["type"] == "add-on"
    assert manifest["version"] == "0.1.0"
    assert manifest["blender_version_min"] == "4.2.0"
    assert manifest["license"] == ["SPDX:GPL-3.0-or-later"]
    assert manifest["maintainer"].strip()


def test_version_min_is_the_oldest_row_the_matrix_tests(
    manifest: dict[str, Any], repo_root: Path
) -> None:
    """``blender_version_min`` is the oldest Blender ``tools/test_matrix.sh`` proves."""
    proc = subprocess.run(["bash", str(repo_root / "tools" / "test_matrix.sh"), "--list"],
                          capture_output=True, text=True, check=True, timeout=60)
    versions = [tuple(int(x) for x in line.split()[0].split(".")[:2])
                for line in proc.stdout.splitlines() if line.strip()]
    oldest = min(versions)
    assert manifest["blender_version_min"] == f"{oldest[0]}.{oldest[1]}.0"


def test_permissions_and_maintainer(manifest: dict[str, Any]) -> None:
    """The CLI writes .blend and JSON files: the manifest asks for ``files`` with the reason
    Blender shows; the maintainer is a name with a reachable address, not a placeholder."""
    reason = manifest["permissions"]["files"]
    assert 10 < len(reason) <= 64 and reason[-1] not in string.punctuation
    name, _, address = manifest["maintainer"].partition("<")
    assert name.strip() and "@" in address and address.endswith(">")
    assert not any(w in manifest["maintainer"].lower() for w in ("example", "todo", "your"))


def test_tagline(manifest: dict[str, Any]) -> None:
    tagline = manifest["tagline"]
    assert 0 < len(tagline) <= 64
    assert tagline[-1] not in string.punctuation, "tagline must not end with punctuation"


def test_package_contains_only_the_extension(built_extension: Path) -> None:
    """The built zip holds the manifest, the entry point, core/ and addon/, and nothing else."""
    with zipfile.ZipFile(built_extension) as archive:
        names = archive.namelist()
    assert "blender_manifest.toml" in names
    assert "__init__.py" in names
    assert "addon/__init__.py" in names
    top_level = {name.split("/", 1)[0] for name in names}
    assert top_level <= {"blender_manifest.toml", "__init__.py", "core", "addon", "LICENSE"}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
