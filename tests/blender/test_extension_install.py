"""Limber installs, enables and disables as a real extension inside ``bpy``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import bpy


def _enable(module: str) -> None:
    result = bpy.ops.preferences.addon_enable(module=module)
    assert result == {"FINISHED"}, f"addon_enable({module!r}) returned {result}"


def _disable(module: str) -> None:
    result = bpy.ops.preferences.addon_disable(module=module)
    assert result == {"FINISHED"}, f"addon_disable({module!r}) returned {result}"


def test_enable_disable_twice(extension_repo: Any) -> None:
    module = extension_repo.addon_module
    assert (extension_repo.directory / "limber" / "blender_manifest.toml").is_file()
    assert not extension_repo.is_enabled()

    for _ in range(2):
        _enable(module)
        assert extension_repo.is_enabled()
        core = importlib.import_module(f"{module}.core")
        assert core.__file__ is not None, "core/ must be a regular package (core/__init__.py)"
        assert Path(core.__file__).is_relative_to(extension_repo.directory)
        _disable(module)
        assert not extension_repo.is_enabled()


def test_register_unregister_twice_as_extension(extension_repo: Any) -> None:
    package = importlib.import_module(extension_repo.addon_module)
    assert Path(package.__file__ or "").is_relative_to(extension_repo.directory)
    for _ in range(2):
        package.register()
        package.unregister()
    addon = importlib.import_module(f"{extension_repo.addon_module}.addon")
    assert isinstance(addon.CLASSES, tuple)
    assert not extension_repo.is_enabled()


def test_root_init_has_no_module_level_bpy_import(repo_root: Path) -> None:
    """``bpy`` and ``addon`` may only be imported lazily, inside register()/unregister()."""
    tree = ast.parse((repo_root / "__init__.py").read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.module is not None:
                imported.add(node.module.split(".")[0])
            elif node.level > 0:
                imported |= {alias.name for alias in node.names}
    assert not imported & {"bpy", "mathutils", "addon"}


def test_core_imports_without_bpy(repo_root: Path) -> None:
    """``core`` is numpy-only: importing it must not pull in ``bpy``."""
    code = (
        "import sys; sys.modules['bpy'] = None; sys.modules['mathutils'] = None\n"
        "import core\n"
        "assert sys.modules.get('bpy') is None\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
