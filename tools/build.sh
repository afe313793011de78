#!/usr/bin/env bash
# Build Limber's installable extension packages with Blender's own builder (the
# `blender_ext.py build` shipped inside the bpy wheel), one .zip per platform.
#
#   bash tools/build.sh [OUTPUT_DIR]        (default: dist/)
#
# 1. Downloads the wheels listed in blender_manifest.toml (`wheels = [...]`, scipy for
#    Python 3.11) into the git-ignored wheels/ folder, skipping those already there:
#    `pip download --only-binary=:all: --no-deps --platform <tag> --python-version 3.11`.
#    numpy is not bundled: Blender ships its own. Needs network access to PyPI once
#    (pip's own HTTP cache makes later downloads cheap).
# 2. Runs `blender_ext.py build --split-platforms`: OUTPUT_DIR/limber-<version>-<platform>.zip
#    for every platform of the manifest (linux_x64, windows_x64, macos_arm64), each
#    holding only its own wheel.
# Install a package in Blender: Edit > Preferences > Get Extensions > Install from Disk,
# or `blender --command extension install-file -r user_default -e <zip>`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/venv.sh
source "$ROOT/tools/venv.sh"

OUT="$(mkdir -p "${1:-$ROOT/dist}" && cd "${1:-$ROOT/dist}" && pwd)"

echo "== wheels"
"$VENV/bin/python" - <<'PY'
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

manifest = tomllib.loads(Path("blender_manifest.toml").read_text(encoding="utf-8"))
for rel in manifest.get("wheels", []):
    path = Path(rel)
    if path.is_file():
        print(f"have {path}")
        continue
    # name-version-python-abi-platform.whl; the first platform tag is enough for pip.
    name, version, python, abi, platform = path.name[: -len(".whl")].split("-")
    cmd = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--only-binary=:all:", "--no-deps",
        "--platform", platform.split(".")[0],
        "--python-version", python.removeprefix("cp")[0] + "." + python.removeprefix("cp")[1:],
        "--implementation", "cp", "--abi", abi,
        f"{name}=={version}",
    ]
    print("download", path.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Download into a temporary folder and move into place atomically, so a concurrent
    # build never sees a partial wheel.
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        subprocess.run(cmd + ["--dest", tmp], check=True)
        got = Path(tmp) / path.name
        if not got.is_file():
            sys.exit(f"limber: error: pip did not produce {path.name}; check the manifest")
        os.replace(got, path)
PY

echo "== build"
EXT="$("$VENV/bin/python" -c 'import bpy, pathlib; print(pathlib.Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core/bl_pkg/cli/blender_ext.py")')"
"$VENV/bin/python" "$EXT" build --source-dir "$ROOT" --output-dir "$OUT" --split-platforms
ls -l "$OUT"/*.zip
