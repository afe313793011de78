"""The extension's development package: its source without the bundled wheels.

The release packages (``bash tools/build.sh``) bundle scipy wheels per platform. Tests,
benchmarks and demos running inside a Python that already has scipy install this lighter
copy instead: ``core/``, ``addon/``, the root ``__init__.py`` (and ``LICENSE``) and the
manifest without its ``wheels`` / ``platforms`` arrays. Importable as
``tools.dev_package`` with the repository root on ``sys.path``; no bpy needed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Top-level manifest keys naming bundled wheels (dropped for the development package).
WHEEL_KEYS = ("wheels", "platforms")


def manifest_without_wheels(text: str) -> str:
    """The manifest text without its top-level ``wheels`` / ``platforms`` arrays."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        key = line.split("=", 1)[0].strip()
        if not skipping and "=" in line and key in WHEEL_KEYS:
            skipping = "]" not in line.split("=", 1)[1]
            continue
        if skipping:
            skipping = "]" not in line
            continue
        out.append(line)
    return "".join(out)


def stage_development_source(dst: Path, root: Path = ROOT) -> Path:
    """Copy the extension's files into the (existing) folder ``dst``; returns ``dst``."""
    for name in ("__init__.py", "LICENSE"):
        if (root / name).is_file():
            shutil.copy2(root / name, dst / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("core", "addon"):
        shutil.copytree(root / name, dst / name, ignore=ignore)
    text = (root / "blender_manifest.toml").read_text(encoding="utf-8")
    (dst / "blender_manifest.toml").write_text(manifest_without_wheels(text), encoding="utf-8")
    return dst
