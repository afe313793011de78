#!/usr/bin/env bash
# Limber's main demo, headless: the bundled motion-capture clip retargeted onto the Rigify
# meta-rig and baked by Limber (installed like a user installs it) in the bpy module. Sets
# up the venv first. Writes demo_out/: limber_demo.blend, report.md, summary.json,
# contact_sheet.png, swivel.png (another folder: --out DIR or LIMBER_DEMO_OUT=DIR).
# Usage: bash tools/demo.sh [--frames N] [--out DIR] ...   (see: bash tools/demo.sh --help)
# The numeric core's own demo (no Blender): .venv/bin/python tools/demo.py
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/venv.sh
source "$ROOT/tools/venv.sh"

exec "$VENV/bin/python" "$ROOT/tools/demo_blender.py" "$@"
