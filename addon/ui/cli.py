"""Batch runs: ``blender -c limber bake|report ...`` (registered with register_cli_command).

::

    blender -c limber bake --input rig.blend --output out.blend --start 1 --end 250 \\
        [--step 1] [--limbs NAME ...] [--armature NAME]    (NAME: a limb's or a chain's)
    blender -c limber report --input rig.blend --start 1 --end 250 --json out.json \\
        [--armature NAME]

:func:`main` takes the argument list and returns the exit status (0 ok, 1 bad input file
or rig, 2 bad arguments), printing a one-line reason on failure; the ``bpy`` module calls
it directly.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Sequence
from typing import Any

import bpy

from ..bridge.rig import MappingError
from ..run import solve
from ..run.bake import bake_object

CLI_ID = "limber"


class CliError(Exception):
    """A bad command line or input; the message is the one-line reason."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # never print usage and exit
        raise CliError(message, status=2)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="blender -c limber", description="Limber batch IK")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_ in (
        ("bake", "solve a frame range and save the keys to another .blend"),
        ("report", "solve a frame range and write per-frame limb status as JSON"),
    ):
        s = sub.add_parser(name, help=help_)
        s.add_argument("--input", required=True, help="the .blend file to read")
        s.add_argument("--start", type=int, required=True, help="first frame")
        s.add_argument("--end", type=int, required=True, help="last frame (inclusive)")
        s.add_argument("--step", type=int, default=1, help="frame step (default 1)")
        s.add_argument("--armature", action="append", default=None,
                       help="armature object name (repeatable; default: all with limbs)")
        if name == "bake":
            s.add_argument("--output", required=True, help="the .blend file to write")
            s.add_argument("--limbs", nargs="+", default=None,
                           help="limb or chain names to bake (default: all enabled)")
        else:
            s.add_argument("--json", required=True, help="the JSON report to write")
    return p


def _armatures(names: Sequence[str] | None) -> list[Any]:
    if names:
        out: list[Any] = []
        for n in names:
            obj = bpy.data.objects.get(n)
            if obj is None or obj.type != "ARMATURE":
                raise CliError(f"no armature object named {n!r}")
            if not (len(obj.limber.limbs) or len(obj.limber.chains)):
                raise CliError(f"armature {n!r} has no Limber limbs or chains")
            out.append(obj)
        return out
    out = [
        o for o in bpy.data.objects
        if o.type == "ARMATURE" and (len(o.limber.limbs)  # type: ignore[attr-defined]
                                     or len(o.limber.chains))  # type: ignore[attr-defined]
    ]
    if not out:
        raise CliError("no armature with Limber limbs or chains in the file")
    return out


def _check_limbs(obj: Any, limbs: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """(limb names, chain names) to solve: the enabled ones, or those named in ``limbs``
    (a name may be a limb's or a chain's); every one checked to map onto the bones."""
    data = obj.limber
    if limbs is None:
        names = [lb.name for lb in data.limbs if lb.enabled]
        chains = [c.name for c in data.chains if c.enabled]
    else:
        names = [n for n in limbs if n in data.limbs]
        chains = [n for n in limbs if n in data.chains and n not in data.limbs]
        for n in limbs:
            if n not in data.limbs and n not in data.chains:
                raise CliError(f"armature {obj.name!r} has no limb or chain {n!r}")
    for n in names:
        try:
            solve.rig_for(obj, data.limbs[n])
        except MappingError as exc:
            raise CliError(f"limb {n!r} of {obj.name!r}: {exc}") from exc
    for n in chains:
        try:
            solve.chain_rig_for(obj, data.chains[n])
        except MappingError as exc:
            raise CliError(f"chain {n!r} of {obj.name!r}: {exc}") from exc
    return names, chains


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def run(args: argparse.Namespace) -> int:
    if not os.path.isfile(args.input):
        raise CliError(f"input file not found: {args.input}")
    if args.end < args.start:
        raise CliError(f"--end {args.end} is before --start {args.start}", status=2)
    if args.step < 1:
        raise CliError(f"--step must be >= 1, got {args.step}", status=2)
    bpy.ops.wm.open_mainfile(filepath=args.input, load_ui=False)
    scene = bpy.context.scene
    if scene is None:
        raise CliError("the file has no scene")
    objs = _armatures(args.armature)
    if args.command == "bake":
        plan = [(o, _check_limbs(o, args.limbs)) for o in objs]
        keys = 0
        for obj, (names, chains) in plan:
            if not names and not chains:
                print(f"limber: warning: {obj.name}: no enabled limbs or chains")
                continue
            res = bake_object(obj, scene, args.start, args.end, args.step, limbs=names,
                              chains=chains)
            keys += res.keys_written
            for name, why in res.skipped.items():
                print(f"limber: warning: {obj.name}: {name} skipped: {why}")
            for st in res.worst:
                if st.solved and not st.reached:
                    print(f"limber: warning: {obj.name}: {st.limb}: {st.message}")
        if not keys:
            raise CliError("nothing was baked (0 keys); the output file was not written")
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args.output), copy=False)
        return 0
    plan = [(o, _check_limbs(o, None)) for o in objs]
    frames: list[dict[str, Any]] = []
    for f in range(args.start, args.end + 1, args.step):
        scene.frame_set(f)
        rows = []
        for obj, (names, chains) in plan:
            for st in solve.solve_object(obj, None, limbs=names, chains=chains):
                rows.append(
                    {
                        "armature": st.object,
                        "limb": st.limb,
                        "kind": st.kind,
                        "solver": st.solver,
                        "iterations": st.iterations,
                        "solved": st.solved,
                        "message": st.message,
                        "reached": st.reached,
                        "reachable": st.reachable,
                        "within_limits": st.within_limits,
                        "position_error": _finite(st.position_error),
                        "orientation_error": _finite(st.orientation_error),
                        "measured": st.measured == "depsgraph",
                        "feasible_swivel": [list(iv) for iv in st.feasible_swivel],
                        "feasible_swivel_measure": st.feasible_measure,
                        "solve_us": _finite(st.solve_us),
                        "total_us": _finite(st.total_us),
                    }
                )
        frames.append({"frame": f, "limbs": rows})
    with open(args.json, "w", encoding="utf-8") as fh:
        json.dump({"input": args.input, "frames": frames}, fh, indent=1)
    if not any(r["solved"] for fr in frames for r in fr["limbs"]):
        print("limber: error: no limb or chain was solved on any frame")
        return 1
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point: ``argv`` without the command id; returns the exit status."""
    try:
        return run(_parser().parse_args(list(argv)))
    except CliError as exc:
        print(f"limber: error: {exc}")
        return exc.status
    except (MappingError, RuntimeError, OSError, ValueError) as exc:
        print(f"limber: error: {exc}")
        return 1


_handle: Any = None


def register() -> None:
    global _handle
    if _handle is None and hasattr(bpy.utils, "register_cli_command"):
        _handle = bpy.utils.register_cli_command(  # type: ignore[func-returns-value]
            CLI_ID, main)


def unregister() -> None:
    global _handle
    if _handle is not None:
        bpy.utils.unregister_cli_command(_handle)
        _handle = None
