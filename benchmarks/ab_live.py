"""Interleaved A/B of the live per-frame solve of source trees (benchmark rig, 4 POSE limbs).

Run from the repository root (the ``bpy`` module of the venv)::

    PYTHONPATH=. .venv/bin/python -m benchmarks.ab_live BEFORE_TREE AFTER_TREE [...]
        [--frames 300] [--rounds 4] [--processes 3] [--check] [--quick]

Each tree is a copy of the repository (``git archive <commit> | tar -x -C /tmp/before``);
give the same tree twice (two copies) for a control. The per-frame row of
``benchmarks.bake`` measures one tree; here every process builds its rig once (this
repository's ``benchmarks.bake``: the meta-rig, its detected limbs, keyed targets) and
imports each tree's ``core`` and ``addon`` under a package name of its own, and the trees
take turns frame by frame: each frame is ``scene.frame_set`` (Blender evaluates the pose
the previous tree wrote) then one tree's ``addon.run.solve.solve_object``, timed on the
thread's CPU clock. So all trees see the same machine load and the same cold caches after
an evaluation. A process reports each tree's median µs; the trees' order rotates from one
process to the next (one layout can favour a tree by a few percent), and the report gives,
per tree, the median over processes of its ratio to the first tree (and their range).

``--check``: instead of timing, every tree solves every frame after the same evaluation;
the written values and the stored statuses of each tree must equal the first tree's, bit
for bit (exit status 1 otherwise). ``--quick``: a smoke run (30 frames, one round, one
process). Not part of the test suite: a run takes a minute or more.
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_ROW = re.compile(r"^(\S+) median ([\d.]+)$")
#: A stored status' fields compared by ``--check``.
STATUS_FIELDS = ("reached", "within_limits", "position_error", "orientation_error", "message",
                 "measured", "frame")


def _trees(specs: list[str]) -> list[tuple[str, Path]]:
    """``label=path`` or ``path`` (labelled t0, t1, ...) → (label, path)."""
    out = []
    for i, spec in enumerate(specs):
        label, _, path = spec.rpartition("=")
        out.append((label or f"t{i}", Path(path).resolve()))
    return out


def _import_trees(trees: list[tuple[str, Path]]) -> dict[str, Any]:
    """Each tree's ``addon.run.solve`` under a package of its own (``lb_<label>``)."""
    pkgs = Path(tempfile.mkdtemp(prefix="limber-ab-live-"))
    atexit.register(shutil.rmtree, pkgs, ignore_errors=True)
    sys.path.insert(0, str(pkgs))
    out = {}
    for label, tree in trees:
        pkg = pkgs / f"lb_{label}"
        pkg.mkdir()
        for name in ("core", "addon"):
            shutil.copytree(tree / name, pkg / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(tree / "__init__.py", pkg)
        out[label] = importlib.import_module(f"lb_{label}.addon.run.solve")
    return out


def _rig(bpy: Any, frames: int) -> Any:
    from benchmarks import bake

    bake.enable_limber(bpy)
    bake.clear_scene(bpy)
    obj = bake.metarig(bpy)
    assert bpy.ops.limber.detect_limbs(armature=obj.name, create_targets=True) == {"FINISHED"}
    bake.animate_targets(bpy, obj, frames)
    bpy.context.scene.limber.live_playback = False
    return obj


def _stored(obj: Any) -> list[tuple[Any, ...]]:
    return [tuple(getattr(lb.status, k) for k in STATUS_FIELDS) for lb in obj.limber.limbs]


def run_process(trees: list[tuple[str, Path]], frames: int, rounds: int, check: bool) -> int:
    """One process: time (or ``check``) the trees frame by frame; prints one row a tree."""
    users = tempfile.mkdtemp(prefix="limber-ab-live-user-")
    atexit.register(shutil.rmtree, users, ignore_errors=True)
    os.environ["BLENDER_USER_RESOURCES"] = users
    import bpy

    obj = _rig(bpy, frames)
    solvers = _import_trees(trees)
    scene = bpy.context.scene
    labels = [label for label, _ in trees]
    if check:
        differ = 0
        for f in range(1, frames + 1):
            got = []
            for label in labels:
                scene.frame_set(f)
                sts = solvers[label].solve_object(obj, bpy.context.evaluated_depsgraph_get())
                got.append(([(s.limb, s.written, s.message, s.reached, s.position_error,
                              s.orientation_error) for s in sts], _stored(obj)))
            differ += any(g != got[0] for g in got[1:])
        print(f"check: {differ} of {frames} frames differ")
        return 1 if differ else 0
    times: dict[str, list[float]] = {label: [] for label in labels}
    for r in range(rounds):
        for f in range(1, frames + 1):
            label = labels[(f + r) % len(labels)]
            scene.frame_set(f)
            dg = bpy.context.evaluated_depsgraph_get()
            c0 = time.thread_time()
            solvers[label].solve_object(obj, dg)
            times[label].append((time.thread_time() - c0) * 1e6)
    for label in labels:
        print(f"{label} median {statistics.median(times[label]):.1f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("trees", nargs="+", help="repository copies, as PATH or LABEL=PATH")
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=4, help="passes over the frames a process")
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--quick", action="store_true", help="30 frames, 1 round, 1 process")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child process
    a = ap.parse_args(argv)
    if a.quick:
        a.frames, a.rounds, a.processes = 30, 1, 1
    trees = _trees(a.trees)
    if a.one or a.check:
        return run_process(trees, a.frames, a.rounds, a.check)
    ratios: dict[str, list[float]] = {label: [] for label, _ in trees}
    first = trees[0][0]
    for p in range(a.processes):
        k = p % len(trees)
        order = trees[k:] + trees[:k]
        cmd = [sys.executable, "-m", "benchmarks.ab_live", "--one", "--frames", str(a.frames),
               "--rounds", str(a.rounds), *(f"{label}={path}" for label, path in order)]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
        medians = {m.group(1): float(m.group(2)) for line in done.stdout.splitlines()
                   if (m := _ROW.match(line))}
        print(f"process {p}: " + ", ".join(f"{label} {us:.0f} µs" for label, us in
                                           medians.items()), flush=True)
        for label, us in medians.items():
            ratios[label].append(us / medians[first])
    for label, r in ratios.items():
        print(f"{label}: {statistics.median(r):.3f} of {first} "
              f"(range {min(r):.3f}–{max(r):.3f}, {len(r)} processes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
