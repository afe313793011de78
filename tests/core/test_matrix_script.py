"""``tools/test_matrix.sh`` without running Blender: its rows, and the clear skip line where
a row's Python is missing (never a silent pass)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "test_matrix.sh"


def test_rows_cover_4_2_lts_to_the_newest() -> None:
    out = subprocess.run(["bash", str(SCRIPT), "--list"], capture_output=True, text=True,
                         check=True).stdout
    rows = [line.split() for line in out.splitlines()]
    assert [r[0].rsplit(".", 1)[0] for r in rows] == ["4.2", "4.5", "5.0", "5.3"]
    assert {r[0]: r[1] for r in rows}["5.3.0"] == "3.13"
    assert all(r[1] == "3.11" for r in rows[:3])


def test_a_row_without_its_python_is_skipped_with_a_line(tmp_path: Path) -> None:
    # A PATH with the shell tools but no Python 3.13 and no pyenv.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "grep", "mkdir", "ls", "sort", "tail", "xargs", "tr", "dirname",
                 "basename", "cat", "env"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {**os.environ, "PATH": str(bin_dir)}
    proc = subprocess.run(["bash", str(SCRIPT), "5.3"], capture_output=True, text=True,
                          env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bpy 5.3.0: SKIPPED — no Python 3.13 here" in proc.stdout
    assert proc.stdout.count("SKIPPED") == 2  # the row's line and the summary's
