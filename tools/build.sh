#!/usr/bin/env bash
# Build Limber's installable extension packages with Blender's own builder (the
# `blender_ext.py build` shipped inside the bpy wheel), one .zip per platform.
#
#   bash tools/build.sh [OUTPUT_DIR]        (default: dist/)
#
# 1. Downloads the wheels listed in blender_manifest.toml (`wheels = [...]`: scipy for
#    Python 3.11 and 3.13, five platforms) into the git-ignored wheels/ folder, skipping
#    those already there (tools/wheels.py download). numpy is not bundled: Blender ships its
#    own. Needs network access to PyPI once (pip's HTTP cache makes later downloads cheap).
# 2. Checks that each Python's scipy accepts the numpy the Blenders of that Python ship,
#    read from the bpy wheels' metadata (tools/wheels.py check; cached in wheels/).
# 3. Runs `blender_ext.py build --split-platforms`: OUTPUT_DIR/limber-<version>-<platform>.zip
#    for every platform of the manifest (linux_x64, linux_arm64, macos_arm64, macos_x64,
#    windows_x64), each holding only its own platform's wheels (cp311 and cp313); Blender
#    installs the one for its Python.
# Install a package in Blender: Edit > Preferences > Get Extensions > Install from Disk,
# or `blender --command extension install-file -r user_default -e <zip>`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/venv.sh
source "$ROOT/tools/venv.sh"

OUT="$(mkdir -p "${1:-$ROOT/dist}" && cd "${1:-$ROOT/dist}" && pwd)"

echo "== wheels"
"$VENV/bin/python" tools/wheels.py download

echo "== numpy each Blender ships vs the bundled scipy"
"$VENV/bin/python" tools/wheels.py check

echo "== build"
EXT="$("$VENV/bin/python" -c 'import bpy, pathlib; print(pathlib.Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core/bl_pkg/cli/blender_ext.py")')"
"$VENV/bin/python" "$EXT" build --source-dir "$ROOT" --output-dir "$OUT" --split-platforms
ls -l "$OUT"/*.zip
