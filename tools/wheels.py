"""The release's bundled wheels: download them, and check each Python's scipy against the
numpy the Blenders of that Python ship (run by ``bash tools/build.sh``).

* ``python tools/wheels.py download`` fetches every wheel ``blender_manifest.toml`` lists
  into the git-ignored ``wheels/`` (skipping those present) with ``pip download
  --only-binary=:all: --no-deps --platform <tags> --python-version <X.Y>``.
* ``python tools/wheels.py check`` reads the numpy requirement of every bpy release the
  matrix covers (``bash tools/test_matrix.sh --list``) from the bpy wheel's metadata
  (``pip install --dry-run --report``: PyPI serves the metadata alone, nothing large is
  downloaded; cached in ``wheels/.bpy-numpy.json``), and the numpy requirement of the
  bundled scipy wheel for that bpy's Python from the wheel's own METADATA. It fails unless
  the scipy accepts the oldest numpy the bpy accepts — the numpy that Blender release was
  built with and ships. A bpy wheel that names no lower bound (4.2) is reported as such;
  the matrix row then installs the zip with its numpy and solves with the bundled scipy.

Importable as ``tools.wheels`` with the repository root on ``sys.path``; no bpy needed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "wheels" / ".bpy-numpy.json"


@dataclass(frozen=True)
class Wheel:
    """One wheel file name, split: ``name-version-python-abi-platform.whl``."""

    path: Path
    name: str
    version: str
    python: str  # e.g. cp311
    abi: str
    platforms: tuple[str, ...]

    @classmethod
    def parse(cls, path: Path) -> Wheel:
        name, version, python, abi, platform = path.name[: -len(".whl")].split("-")
        return cls(path, name, version, python, abi, tuple(platform.split(".")))

    @property
    def python_version(self) -> str:
        """``cp313`` -> ``3.13``."""
        digits = self.python.removeprefix("cp")
        return f"{digits[0]}.{digits[1:]}"


def manifest_wheels(root: Path = ROOT) -> list[Wheel]:
    manifest = tomllib.loads((root / "blender_manifest.toml").read_text(encoding="utf-8"))
    return [Wheel.parse(root / rel) for rel in manifest.get("wheels", [])]


def download(root: Path = ROOT) -> None:
    for wheel in manifest_wheels(root):
        if wheel.path.is_file():
            print(f"have {wheel.path.name}")
            continue
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
               "--only-binary=:all:", "--no-deps", "--python-version", wheel.python_version,
               "--implementation", "cp", "--abi", wheel.abi,
               *[arg for tag in wheel.platforms for arg in ("--platform", tag)],
               f"{wheel.name}=={wheel.version}"]
        print("download", wheel.path.name)
        wheel.path.parent.mkdir(parents=True, exist_ok=True)
        # Download into a temporary folder and move into place atomically, so a concurrent
        # build never sees a partial wheel.
        with tempfile.TemporaryDirectory(dir=wheel.path.parent) as tmp:
            subprocess.run([*cmd, "--dest", tmp], check=True)
            got = Path(tmp) / wheel.path.name
            if not got.is_file():
                sys.exit(f"limber: error: pip did not produce {wheel.path.name}; check manifest")
            os.replace(got, wheel.path)


def wheel_numpy_spec(path: Path) -> SpecifierSet:
    """The numpy requirement in a wheel's METADATA (empty: none)."""
    with zipfile.ZipFile(path) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
    for line in text.splitlines():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.name == "numpy" and (req.marker is None or req.marker.evaluate()):
                return req.specifier
    return SpecifierSet()


def bpy_numpy_spec(version: str, python: str) -> str:
    """The numpy requirement of ``bpy==version`` (for Python ``python``) from PyPI's metadata;
    cached per version in wheels/.bpy-numpy.json (a release's metadata never changes)."""
    cache = json.loads(CACHE.read_text()) if CACHE.is_file() else {}
    if version not in cache:
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
                 "--ignore-installed", "--ignore-requires-python", "--only-binary=:all:",
                 "--python-version", python,
                 "--target", tmp, "--report", "-", f"bpy=={version}"],
                capture_output=True, text=True, check=True,
            )
        meta = json.loads(proc.stdout)["install"][0]["metadata"]
        specs = [str(Requirement(r).specifier) for r in meta.get("requires_dist", [])
                 if Requirement(r).name == "numpy"]
        cache[version] = specs[0] if specs else ""
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        # Written beside and moved into place, so a concurrent build never reads half a file.
        part = CACHE.with_name(f"{CACHE.name}.{os.getpid()}")
        part.write_text(json.dumps(cache, indent=1, sort_keys=True))
        os.replace(part, CACHE)
    return str(cache[version])


def lower_bound(spec: str) -> str | None:
    """The version of a ``>=`` clause of a specifier (None: none)."""
    found = re.search(r">=\s*([0-9][0-9.]*)", spec)
    return found.group(1) if found else None


def matrix_rows(root: Path = ROOT) -> list[tuple[str, str]]:
    """(bpy version, Python X.Y) of every row of tools/test_matrix.sh."""
    out = subprocess.run(["bash", str(root / "tools" / "test_matrix.sh"), "--list"],
                         capture_output=True, text=True, check=True).stdout
    return [(line.split()[0], line.split()[1]) for line in out.splitlines() if line.strip()]


def check(root: Path = ROOT) -> bool:
    scipy = {w.python_version: w for w in manifest_wheels(root) if w.name == "scipy"}
    ok = True
    for bpy, python in matrix_rows(root):
        wheel = scipy.get(python)
        if wheel is None:
            print(f"bpy {bpy} (Python {python}): NO bundled scipy for cp{python.replace('.', '')}")
            ok = False
            continue
        need = bpy_numpy_spec(bpy, python)
        accepts = wheel_numpy_spec(wheel.path)
        ships = lower_bound(need)
        if ships is None:
            verdict = "bpy names no lower bound; the matrix row installs it and solves"
        elif accepts.contains(ships, prereleases=True):
            verdict = f"ok: accepts numpy {ships}"
        else:
            verdict = f"FAILS: does not accept numpy {ships}"
            ok = False
        print(f"bpy {bpy} (Python {python}) requires numpy {need or '(any)'}; bundled scipy "
              f"{wheel.version} requires numpy {accepts} — {verdict}")
    return ok


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "download":
        download()
    elif command == "check":
        sys.exit(0 if check() else 1)
    else:
        sys.exit("usage: python tools/wheels.py download|check")
