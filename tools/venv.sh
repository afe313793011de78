# shellcheck shell=bash
# Create or reuse Limber's project virtualenv. Source this file; it sets and exports VENV.
#
#   VENV                 path of the venv (default: <repo>/.venv, override with LIMBER_VENV)
#   LIMBER_PYTHON        interpreter used to create the venv (default: python<version>, else
#                        python3)
#   LIMBER_PY_VERSION    Python version the venv must run (default: 3.11)
#   LIMBER_REQUIREMENTS  pinned requirements file (default: tools/requirements.txt)
#
# Dependencies are (re)installed only when the requirements file's hash differs from the
# stamp stored inside the venv.
#
# Safety: every venv this script creates holds the marker file .limber-venv. The script only
# ever deletes, recreates or installs into a folder that holds this marker (or the requirements
# stamp of an earlier version of this script). Any other folder is refused with a message: an
# existing venv of the right Python that it did not create is used as it is (nothing is
# installed into it), and a folder of anything else is left untouched.

_limber_fail() {
    echo "limber: error: $*" >&2
    return 1
}

_limber_venv_setup() {
    local root req py ver want want_hash have_hash stamp marker log ours
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    req="${LIMBER_REQUIREMENTS:-$root/tools/requirements.txt}"
    want="${LIMBER_PY_VERSION:-3.11}"
    VENV="${LIMBER_VENV:-$root/.venv}"
    stamp="$VENV/.limber-requirements.sha256"
    marker="$VENV/.limber-venv"

    [[ -f "$req" ]] || { _limber_fail "missing $req"; return 1; }

    # Pick the interpreter.
    py="${LIMBER_PYTHON:-}"
    if [[ -z "$py" ]]; then
        if "python$want" -c '' >/dev/null 2>&1; then
            py="python$want"
        elif command -v python3 >/dev/null 2>&1; then
            py=python3
        else
            _limber_fail "Python $want is required: neither 'python$want' nor 'python3' is on PATH."
            return 1
        fi
    fi
    ver="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" || {
        _limber_fail "could not run '$py'."
        return 1
    }
    if [[ "$ver" != "$want" ]]; then
        _limber_fail "Python $want is required (the pinned bpy wheel is built for it), but '$py' is Python $ver."
        return 1
    fi

    # Ours: created by this script (marker), or by its earlier versions (stamp + pyvenv.cfg).
    ours=0
    if [[ -f "$marker" ]] || [[ -f "$stamp" && -f "$VENV/pyvenv.cfg" ]]; then
        ours=1
    fi
    local healthy=0
    if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c \
        "import sys; assert '%d.%d' % sys.version_info[:2] == '$want'" 2>/dev/null; then
        healthy=1
    fi

    if ((!ours)); then
        if [[ -e "$VENV" && ! -d "$VENV" ]]; then
            _limber_fail "$VENV exists and is not a folder; refusing to touch it. Point LIMBER_VENV elsewhere."
            return 1
        fi
        if ((healthy)); then
            # Someone else's venv of the right Python: use it as is, never modify it.
            echo "limber: using $VENV as it is (not created by tools/venv.sh: nothing is installed into it)" >&2
            export VENV
            return 0
        fi
        if [[ -d "$VENV" ]] && [[ -n "$(ls -A "$VENV" 2>/dev/null)" ]]; then
            _limber_fail "$VENV is not empty and was not created by tools/venv.sh (no $marker); refusing to touch it. Point LIMBER_VENV at a new or empty folder, or at a venv this script created."
            return 1
        fi
    fi

    # Create the venv if it is missing, or recreate our own when broken or of another Python.
    if ((!healthy)); then
        if ((ours)); then
            echo "limber: recreating the virtualenv at $VENV (created by tools/venv.sh; broken or not Python $want)" >&2
            rm -rf -- "$VENV"
        else
            echo "limber: creating virtualenv at $VENV" >&2
        fi
        "$py" -m venv "$VENV" || { _limber_fail "could not create a venv at $VENV (is the 'venv' module installed?)"; return 1; }
        echo "created by Limber's tools/venv.sh; it deletes or recreates only folders holding this file" >"$marker"
        rm -f -- "$stamp"
    elif [[ ! -f "$marker" ]]; then
        # An earlier version of this script created it (it holds the stamp): mark it.
        echo "created by Limber's tools/venv.sh; it deletes or recreates only folders holding this file" >"$marker"
    fi

    want_hash="$("$py" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$req")"
    have_hash="$(cat "$stamp" 2>/dev/null || true)"
    if [[ "$want_hash" != "$have_hash" ]]; then
        echo "limber: installing pinned dependencies from $req (needs PyPI access) ..." >&2
        log="$VENV/.limber-pip.log"
        if ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
            --requirement "$req" >"$log" 2>&1; then
            grep -v "is ignored: it is neither a file nor a directory" "$log" | tail -n 40 >&2 || true
            rm -f -- "$stamp"
            _limber_fail "installing dependencies failed (full log: $log). Is PyPI reachable?"
            return 1
        fi
        echo "$want_hash" >"$stamp"
        echo "limber: dependencies installed" >&2
    fi
    export VENV
}

_limber_venv_setup || return 1
