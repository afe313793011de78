"""Fixtures for tests that drive the real ``bpy`` module (no mocks).

Blender reads and writes its user configuration under ``BLENDER_USER_RESOURCES``. It is
pointed at a fresh temporary folder here, at import time and before anything imports
``bpy``, so the tests never see or touch a developer's real Blender preferences.
"""

from __future__ import annotations

import atexit
import importlib
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if "bpy" in sys.modules:  # pragma: no cover - guards the ordering promise above
    raise RuntimeError("bpy was imported before tests/blender/conftest.py could isolate it")

_USER_RESOURCES = tempfile.mkdtemp(prefix="limber-blender-user-")
os.environ["BLENDER_USER_RESOURCES"] = _USER_RESOURCES
# Registered before bpy is imported, so it runs after bpy's own exit handlers.
atexit.register(shutil.rmtree, _USER_RESOURCES, ignore_errors=True)

import bpy  # noqa: E402  (must follow the environment set-up above)
import pytest  # noqa: E402

from tools.bpy_exit import exit_process  # noqa: E402
from tools.dev_package import stage_development_source  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
EXTENSION_ID = "limber"
_repo_counter = itertools.count(1)


def blender_ext_cli() -> Path:
    """Path of Blender's extension command line tool shipped inside the bpy wheel.

    Note: once imported, ``bpy.__file__`` names ``<wheel>/5.0/scripts/modules/bpy``, not the
    wheel's top-level folder, so the bundled scripts folder is asked for instead.
    """
    scripts = Path(bpy.utils.system_resource("SCRIPTS"))
    cli = scripts / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    if not cli.is_file():
        raise FileNotFoundError(f"blender_ext.py not found at {cli}")
    return cli


def run_blender_ext(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``blender_ext.py`` with this interpreter; output is captured, never raised on."""
    return subprocess.run(
        [sys.executable, str(blender_ext_cli()), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """Root of the checkout, which is also the extension's source directory."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def blender_ext() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runner for Blender's ``blender_ext.py`` CLI: ``blender_ext("validate", path)``."""
    return run_blender_ext


@pytest.fixture(scope="session")
def built_extension(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The development package (``.zip``, no bundled wheels: the test interpreter has
    scipy) built by Blender's own ``blender_ext.py build``. The release packages with
    wheels are built and installed once in test_release_build.py."""
    src = stage_development_source(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("build") / f"{EXTENSION_ID}.zip"
    proc = run_blender_ext("build", "--source-dir", str(src), "--output-filepath", str(out))
    assert proc.returncode == 0, f"build failed:\n{proc.stdout}\n{proc.stderr}"
    assert out.is_file()
    return out


@dataclass(frozen=True)
class ExtensionRepo:
    """A local extensions repository holding the built extension."""

    module: str
    directory: Path

    @property
    def addon_module(self) -> str:
        """Module name Blender gives the extension, e.g. ``bl_ext.limber_test_1.limber``."""
        return f"bl_ext.{self.module}.{EXTENSION_ID}"

    def is_enabled(self) -> bool:
        """Whether the extension is listed among the enabled add-ons in the preferences."""
        return self.addon_module in {a.module for a in bpy.context.preferences.addons}


@pytest.fixture
def extension_repo(built_extension: Path, tmp_path: Path) -> Iterator[ExtensionRepo]:
    """A fresh local user repository with the built extension unpacked into ``<dir>/limber``.

    Teardown disables the extension if still enabled, removes the repository and drops its
    modules from ``sys.modules``.
    """
    module = f"limber_test_{next(_repo_counter)}"
    directory = tmp_path / "extensions"
    with zipfile.ZipFile(built_extension) as archive:
        archive.extractall(directory / EXTENSION_ID)

    repos = bpy.context.preferences.extensions.repos
    repo = repos.new(
        name=f"Limber test {module}",
        module=module,
        custom_directory=str(directory),
        source="USER",
    )
    handle = ExtensionRepo(module=module, directory=directory)
    try:
        yield handle
    finally:
        if handle.is_enabled():
            bpy.ops.preferences.addon_disable(module=handle.addon_module)
        repos.remove(repo)
        prefix = f"bl_ext.{module}"
        for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
            del sys.modules[name]
        importlib.invalidate_caches()


# --------------------------------------------------------------------------------------
# Limber installed once per session (for tests of the add-on's behaviour)
# --------------------------------------------------------------------------------------

SESSION_REPO_MODULE = "limber_session"


@dataclass(frozen=True)
class InstalledLimber:
    """The extension installed from a local repository and enabled for the whole session."""

    module: str

    def sub(self, name: str) -> Any:
        """A sub-module of the installed extension, e.g. ``sub("addon.run.solve")``."""
        return importlib.import_module(f"{self.module}.{name}")

    def ensure_registered(self) -> None:
        """Re-register if another copy of the extension (other tests) replaced our classes."""
        addon = self.sub("addon")
        props = self.sub("addon.props")
        ok = all(getattr(c, "is_registered", False) for c in addon.CLASSES)
        pointer = getattr(bpy.types.Object, "bl_rna", None)
        prop = pointer.properties.get("limber") if pointer is not None else None
        ok = ok and prop is not None and prop.fixed_type.identifier == (
            props.LIMBER_PG_object.bl_rna.identifier
        )
        if not ok:
            package = importlib.import_module(self.module)
            package.unregister()
            package.register()


@pytest.fixture(scope="session")
def limber_session(
    built_extension: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[InstalledLimber]:
    """Limber installed through a local extensions repository and enabled once."""
    directory = tmp_path_factory.mktemp("session-extensions")
    with zipfile.ZipFile(built_extension) as archive:
        archive.extractall(directory / EXTENSION_ID)
    repos = bpy.context.preferences.extensions.repos
    repo = repos.new(
        name="Limber session", module=SESSION_REPO_MODULE, custom_directory=str(directory),
        source="USER",
    )
    module = f"bl_ext.{SESSION_REPO_MODULE}.{EXTENSION_ID}"
    assert bpy.ops.preferences.addon_enable(module=module) == {"FINISHED"}
    bpy.ops.preferences.addon_enable(module="rigify")
    try:
        yield InstalledLimber(module=module)
    finally:
        if module in {a.module for a in bpy.context.preferences.addons}:
            bpy.ops.preferences.addon_disable(module=module)
        repos.remove(repo)


_exit_status: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _exit_status.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """The last hook: bpy < 5.0 may crash or hang at interpreter finalisation
    (see tools/bpy_exit.py), so there the run ends here with pytest's own status."""
    exit_process(_exit_status[-1] if _exit_status else 0)


def compat() -> Any:
    """The session-installed extension's ``addon.compat``: tests read baked results through
    it, so they run on every Blender the matrix covers (4.2 ``action.fcurves`` to 5.x
    channelbags)."""
    return importlib.import_module(f"bl_ext.{SESSION_REPO_MODULE}.{EXTENSION_ID}.addon.compat")


def clear_blend_data() -> None:
    """Remove every object, armature, action and empty collection child of the scene."""
    for coll in (bpy.data.objects, bpy.data.armatures, bpy.data.actions, bpy.data.meshes):
        for item in list(coll):
            coll.remove(item)
    scene = bpy.context.scene
    scene.frame_set(1)


@pytest.fixture
def limber(limber_session: InstalledLimber) -> InstalledLimber:
    """The installed extension, registered, with an empty scene."""
    limber_session.ensure_registered()
    clear_blend_data()
    bpy.context.scene.limber.live_playback = False
    return limber_session
