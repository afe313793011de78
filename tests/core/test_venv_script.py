"""``tools/venv.sh`` only ever deletes, recreates or installs into a venv it created.

The script is sourced by bash in a subprocess, pointed (``LIMBER_VENV``) at temporary
folders: one of unrelated files, a venv it did not create, an empty folder, and a broken
venv it marked. The requirements file is a comment only, so no test needs the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARKER = ".limber-venv"
VERSION = "{}.{}".format(*sys.version_info[:2])


def _source(venv: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    req = tmp_path / "requirements.txt"
    req.write_text("# nothing to install\n", encoding="utf-8")
    env = {
        **os.environ,
        "LIMBER_VENV": str(venv),
        "LIMBER_PYTHON": sys.executable,
        "LIMBER_PY_VERSION": VERSION,
        "LIMBER_REQUIREMENTS": str(req),
    }
    return subprocess.run(
        ["bash", "-c", f'source "{ROOT}/tools/venv.sh" && echo "VENV=$VENV"'],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(folder.rglob("*"))}


def test_refuses_a_folder_of_unrelated_files(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    (folder / "bin").mkdir(parents=True)
    (folder / "holiday.jpg").write_bytes(b"\xff\xd8 not a venv")
    (folder / "notes.txt").write_text("keep me", encoding="utf-8")
    # Looks like a broken venv of another Python: the old script deleted exactly this.
    fake = folder / "bin" / "python"
    fake.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    fake.chmod(0o755)
    before = _snapshot(folder)
    proc = _source(folder, tmp_path)
    assert proc.returncode != 0
    assert "refusing to touch it" in proc.stderr and MARKER in proc.stderr, proc.stderr
    assert _snapshot(folder) == before


def test_refuses_a_file(tmp_path: Path) -> None:
    path = tmp_path / "thesis.tex"
    path.write_text("keep me", encoding="utf-8")
    proc = _source(path, tmp_path)
    assert proc.returncode != 0 and "not a folder" in proc.stderr, proc.stderr
    assert path.read_text(encoding="utf-8") == "keep me"


def test_uses_a_foreign_venv_as_it_is(tmp_path: Path) -> None:
    """A venv of the right Python it did not create: used, nothing written into it."""
    folder = tmp_path / "their-venv"
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(sys.executable)
    (folder / "pyvenv.cfg").write_text("home = elsewhere\n", encoding="utf-8")
    before = _snapshot(folder)
    proc = _source(folder, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "not created by tools/venv.sh" in proc.stderr
    assert f"VENV={folder}" in proc.stdout
    assert _snapshot(folder) == before


@pytest.mark.parametrize("state", ["empty", "marked-broken"])
def test_creates_in_an_empty_folder_and_recreates_only_its_own(
    tmp_path: Path, state: str
) -> None:
    folder = tmp_path / "venv"
    folder.mkdir()
    if state == "marked-broken":
        (folder / MARKER).write_text("created by tools/venv.sh\n", encoding="utf-8")
        (folder / "leftover").write_text("from the broken venv", encoding="utf-8")
    proc = _source(folder, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (folder / MARKER).is_file() and (folder / "bin" / "python").exists()
    assert not (folder / "leftover").exists()
    assert (folder / ".limber-requirements.sha256").is_file()
    # Sourcing again reuses it without recreating (the marker and stamp are kept).
    again = _source(folder, tmp_path)
    assert again.returncode == 0 and "creat" not in again.stderr, again.stderr
