"""Exit a process that imported the ``bpy`` module without the exit crash or hang before 5.0.

Before 5.0 the bpy module does not always end cleanly after its exit handlers ran: bpy 4.2
(PyPI ``bpy==4.2.*``) crashes with SIGSEGV while the interpreter finalises once an add-on
such as Rigify has been enabled (``python -c "import bpy;
bpy.ops.preferences.addon_enable(module='rigify')"`` exits 139), and bpy 4.5 hangs there
(a futex wait) after a Workbench render (the demo). 5.0 and newer exit cleanly. The work is
done and saved by then, but the process crashes or never returns. :func:`exit_process` runs
the exit handlers (``atexit``: Blender's own, temporary folders' clean-up), removes
Blender's session temporary folder (``bpy.app.tempdir``, ``$TMPDIR/blender_*``, which
Blender removes only at a normal exit), flushes the output and ends the process with the
real status before finalisation — only before 5.0.
Importable as ``tools.bpy_exit`` with the repository root on ``sys.path``; no bpy needed.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys


def crashes_on_exit() -> bool:
    """Whether this process runs a bpy module that crashes at interpreter finalisation."""
    bpy = sys.modules.get("bpy")
    return bpy is not None and tuple(bpy.app.version) < (5, 0, 0)


def exit_process(code: int) -> None:
    """On an affected bpy: run the exit handlers, flush and end the process with ``code``
    now. Elsewhere: return (the caller exits normally)."""
    if not crashes_on_exit():
        return
    session_temp = os.path.normpath(sys.modules["bpy"].app.tempdir)
    atexit._run_exitfuncs()
    if os.path.basename(session_temp).startswith("blender_"):
        shutil.rmtree(session_temp, ignore_errors=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
