#!/usr/bin/env bash
# Limber's main demo, headless: the bundled motion-capture clip retargeted onto the Rigify
# meta-rig and baked by Limber in the bpy module. Sets up the venv, builds the release zips
# into dist/ (tools/build.sh) and installs this machine's zip from disk, as users do.
# Writes demo_out/: limber_demo.blend, report.md, summary.json, contact_sheet.png,
# swivel.png (another folder: --out DIR or LIMBER_DEMO_OUT=DIR).
# Usage: bash tools/demo.sh [--frames N] [--out DIR] ...   (see: bash tools/demo.sh --help)
# The numeric core's own demo (no Blender): .venv/bin/python tools/demo.py
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/venv.sh
source "$ROOT/tools/venv.sh"

# The demo installs the release zip for this machine, as a user does (Install from Disk).
bash "$ROOT/tools/build.sh" "$ROOT/dist" >&2
LIMBER_PACKAGE="$("$VENV/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1]); from tools.smoke_zip import zip_for_this_machine; print(zip_for_this_machine(sys.argv[2]))' "$ROOT" "$ROOT/dist")"
export LIMBER_PACKAGE
exec "$VENV/bin/python" "$ROOT/tools/demo_blender.py" "$@"
