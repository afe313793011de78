#!/usr/bin/env bash
# Run the Limber demo (sets up the venv first). Output goes to out/demo unless told otherwise.
# Usage: bash tools/demo.sh [demo args]   (see: bash tools/demo.sh --help)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/venv.sh
source "$ROOT/tools/venv.sh"

if [[ ! -f "$ROOT/tools/demo.py" ]]; then
    echo "limber: error: tools/demo.py does not exist yet." >&2
    exit 1
fi
export LIMBER_DEMO_OUT="${LIMBER_DEMO_OUT:-$ROOT/out/demo}"
mkdir -p "$LIMBER_DEMO_OUT"
exec "$VENV/bin/python" "$ROOT/tools/demo.py" "$@"
