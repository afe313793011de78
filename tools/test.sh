#!/usr/bin/env bash
# Run Limber's full check suite: ruff, mypy (strict on core/; addon/ against the pinned
# fake-bpy-module), then one pytest run over tests/.
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

# addon/ imports core relatively from the extension's root package (`from ..core import`),
# so it is checked as the package it is installed as: a staged `limber` package of links.
echo "== mypy -p limber.addon"
stage="$(mktemp -d)"
trap 'rm -rf -- "$stage"' EXIT  # also when the run is interrupted
mkdir "$stage/limber"
ln -s "$ROOT/core" "$ROOT/addon" "$ROOT/__init__.py" "$stage/limber/"
(cd "$stage" && "$VENV/bin/mypy" --config-file "$ROOT/pyproject.toml" -p limber.addon) \
    || failed+=("mypy addon")
rm -rf "$stage"

echo "== pytest"
"$VENV/bin/python" -m pytest "$@" || failed+=("pytest")

if ((${#failed[@]})); then
    echo "limber: FAILED: ${failed[*]}" >&2
    exit 1
fi
