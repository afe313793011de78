#!/usr/bin/env bash
# Run Limber's full check suite: ruff, mypy (strict on core/), then one pytest run over tests/.
# Every step runs even if an earlier one fails; the exit status is non-zero if any failed.
# Usage: bash tools/test.sh [extra pytest args]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/venv.sh
source "$ROOT/tools/venv.sh"

failed=()

echo "== ruff check"
"$VENV/bin/ruff" check . || failed+=("ruff")

echo "== mypy -p core"
"$VENV/bin/mypy" -p core || failed+=("mypy")

echo "== pytest"
"$VENV/bin/python" -m pytest "$@" || failed+=("pytest")

if ((${#failed[@]})); then
    echo "limber: FAILED: ${failed[*]}" >&2
    exit 1
fi
