# shellcheck shell=bash
# Create or reuse Limber's project virtualenv. Source this file; it sets and exports VENV.
#
#   VENV          path of the venv (default: <repo>/.venv, override with LIMBER_VENV)
#   LIMBER_PYTHON interpreter used to create the venv (default: python3.11, else python3)
#
# Dependencies come from tools/requirements.txt (exact pins). They are (re)installed only
# when that file's hash differs from the stamp stored inside the venv.

_limber_fail() {
    echo "limber: error: $*" >&2
    return 1
}

_limber_venv_setup() {
    local root req py ver want_hash have_hash stamp log
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    req="$root/tools/requirements.txt"
    VENV="${LIMBER_VENV:-$root/.venv}"
    stamp="$VENV/.limber-requirements.sha256"

    [[ -f "$req" ]] || { _limber_fail "missing $req"; return 1; }

    # Pick a Python 3.11 interpreter.
    py="${LIMBER_PYTHON:-}"
    if [[ -z "$py" ]]; then
        if command -v python3.11 >/dev/null 2>&1; then
            py=python3.11
        elif command -v python3 >/dev/null 2>&1; then
            py=python3
        else
            _limber_fail "Python 3.11 is required: neither 'python3.11' nor 'python3' is on PATH."
            return 1
        fi
    fi
    ver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" || {
        _limber_fail "could not run '$py'."
        return 1
    }
    if [[ "$ver" != "3.11" ]]; then
        _limber_fail "Python 3.11 is required (bpy 5.0 wheels are built for 3.11), but '$py' is Python $ver."
        return 1
    fi

    want_hash="$("$py" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$req")"
    have_hash="$(cat "$stamp" 2>/dev/null || true)"

    # Recreate the venv if it is missing, broken, or built from another Python version.
    if [[ ! -x "$VENV/bin/python" ]] \
        || ! "$VENV/bin/python" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
        echo "limber: creating virtualenv at $VENV" >&2
        rm -rf "$VENV"
        "$py" -m venv "$VENV" || { _limber_fail "could not create a venv at $VENV (is the 'venv' module installed?)"; return 1; }
        have_hash=""
    fi

    if [[ "$want_hash" != "$have_hash" ]]; then
        echo "limber: installing pinned dependencies from tools/requirements.txt (needs PyPI access) ..." >&2
        log="$VENV/.limber-pip.log"
        if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
            --requirement "$req" >"$log" 2>&1; then
            grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -n 40 >&2 || true
            rm -f "$stamp"
            _limber_fail "installing dependencies failed (full log: $log). Is PyPI reachable?"
            return 1
        fi
        echo "$want_hash" >"$stamp"
        echo "limber: dependencies installed" >&2
    fi
    export VENV
}

_limber_venv_setup || return 1
