"""In-process A/B of two source trees' ``core`` on chain solves.

Run from the repository root::

    OPENBLAS_NUM_THREADS=1 .venv/bin/python -m benchmarks.ab_inprocess BEFORE_TREE [AFTER_TREE] \\
        --cases sb:EXTENDED_JACOBIAN:Y ss:PSEUDOINVERSE:double-Y it:DLS:arm --rounds 7

:mod:`benchmarks.ab` runs every tree in its own processes; between processes its rows move
by 5–10 % on this kind of machine (address layout, allocator and cache state differ per
process) even where the trees execute the same instructions. Here both trees' ``core``
packages are loaded into **one** process (each copied under its own package name; ``core``
uses relative imports only), the same problems are built with each tree's own classes and
fixtures, and the two solves alternate call by call. Each round times two calls per tree
(process CPU time; ``it`` cases per problem-iteration); the report gives the least round of
each tree (noise only ever adds) and the ratio of the medians beside it.

Cases are ``kind:METHOD:fixture``. Kinds: ``it`` (per-iteration cost: 300 reachable rows,
20 iterations, stopping tests off), ``sb`` (one batched solve of 300 reachable problems,
≤ 500 iterations, one thread), ``ss`` (five single-problem solves), ``tr`` (Buss's
tracking: 100 ``step_once`` updates along the moving targets, as
:func:`benchmarks.chains.tracking`; ``Y`` and ``double-Y`` only). Fixtures: ``Y``,
``double-Y`` (Buss), ``arm`` (the 7-DOF arm with a pose goal). AFTER_TREE defaults to this
repository.

One process still has one memory layout, and the layout alone moves a small case's ratio:
``it:CCD:Y`` measured 0.81–1.07 against the same before-tree in twelve processes that
differed only in the size of one unused environment variable (which shifts the stack and
the allocator's addresses; Mytkowicz et al., "Producing wrong data without doing anything
obviously wrong!", ASPLOS 2009). ``--layouts K`` runs the comparison in K processes with
environment padding 0, 517, 2·517, … bytes and reports, per case, the median over the
layouts of each ratio, with their range.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from benchmarks import chains

#: Problems per batched case, problems per single case, iterations of an ``it`` case.
BATCH = 300
SINGLES = 5
ITERATIONS = 20
#: Updates of a ``tr`` case.
TRACK_FRAMES = 100


def load_core(tree: Path, name: str, scratch: Path) -> tuple[ModuleType, ModuleType]:
    """``tree``'s ``core`` imported as package ``name`` (copied into ``scratch``) and its
    paper fixtures built with that package's classes (``core/fixtures.py`` in older trees,
    ``tests/fixtures/papers.py`` in newer ones)."""
    shutil.copytree(tree / "core", scratch / name)
    if str(scratch) not in sys.path:
        sys.path.insert(0, str(scratch))
    core = importlib.import_module(name)
    if (tree / "core" / "fixtures.py").exists():
        return core, importlib.import_module(f"{name}.fixtures")
    src = (tree / "tests" / "fixtures" / "papers.py").read_text(encoding="utf-8")
    src = src.replace("from core import", f"from {name} import")
    spec = importlib.util.spec_from_loader(f"{name}_papers", loader=None)
    assert spec is not None
    fixtures = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fixtures
    exec(compile(src, str(tree / "tests/fixtures/papers.py"), "exec"), fixtures.__dict__)
    return core, fixtures


def _fixture(fixtures: ModuleType, shape: str) -> Any:
    if shape == "arm":
        make = getattr(fixtures, "arm_chain", None) or fixtures.human_arm
        return make()
    return {"Y": fixtures.buss_y, "double-Y": fixtures.buss_double_y}[shape]()


def case(core: ModuleType, fixtures: ModuleType, spec: str) -> Callable[[], float]:
    """The timed call of one case with this tree's ``core``; it returns the units its time
    is divided by (``it``: the problem-iterations actually taken, summed over the rows, as
    :func:`benchmarks.chains.per_iteration`; otherwise 1)."""
    kind, method_name, shape = spec.split(":")
    fx = _fixture(fixtures, shape)
    method = core.Method[method_name]
    extra: dict[str, Any] = {}
    if method_name == "EXTENDED_JACOBIAN":
        extra["extended_weight"] = 0.1
    if method_name == "LBFGSB":
        extra["lbfgsb_iterations"] = 20
    if kind == "it":
        goals, q0 = chains.reachable(fx, BATCH, 42, api=core)
        s = core.SolveSettings(
            max_iterations=ITERATIONS, tolerance=0.0, stall_iterations=10**6, threads=1, **extra
        )
        return lambda: float(np.sum(core.solve(fx.skeleton, goals, q0, method, s).iterations))
    if kind == "sb":
        goals, q0 = chains.reachable(fx, BATCH, 7, api=core)
        s = core.SolveSettings(max_iterations=500, threads=1, **extra)

        def batched() -> float:
            core.solve(fx.skeleton, goals, q0, method, s)
            return 1.0

        return batched
    if kind == "ss":
        goals, q0 = chains.reachable(fx, SINGLES, 7, api=core)
        s = core.SolveSettings(max_iterations=500, **extra)
        rows = [chains.row(goals, b, api=core) for b in range(SINGLES)]

        def singles() -> float:
            for b in range(SINGLES):
                core.solve(fx.skeleton, rows[b], q0[b], method, s)
            return 1.0

        return singles
    if kind == "tr":
        make = fixtures.buss_y if shape == "Y" else fixtures.buss_double_y
        extra["lbfgsb_iterations"] = 5
        s = core.SolveSettings(**extra)
        path = [make(0.01 * k).goals for k in range(TRACK_FRAMES)]
        # older trees kept step_once out of core's exports
        step = (
            getattr(core, "step_once", None)
            or importlib.import_module(f"{core.__name__}.ik_methods").step_once
        )

        def track() -> float:
            q = fx.q0.copy()
            for k, goals in enumerate(path):
                q = step(fx.skeleton, goals, q, method, s, iteration=k)
            return 1.0

        return track
    raise SystemExit(f"unknown case kind {kind!r} in {spec!r}: it, sb, ss or tr")


#: Bytes of environment padding added per layout by ``--layouts``.
PAD_STEP = 517


def _ratios(lines: list[str]) -> dict[str, tuple[float, float]]:
    """Per case, (ratio of least, ratio of medians) from one run's table rows."""
    out: dict[str, tuple[float, float]] = {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and ":" in cells[0]:
            out[cells[0]] = (float(cells[3]), float(cells[4]))
    return out


def over_layouts(argv: list[str], trees: list[Path], cases: list[str], layouts: int) -> None:
    """Run this comparison in ``layouts`` processes (environment padding k·PAD_STEP bytes)
    and print, per case, the median and range over the layouts of both ratios."""
    runs: list[dict[str, tuple[float, float]]] = []
    for k in range(layouts):
        env = {**os.environ, "LIMBER_AB_PAD": "x" * (k * PAD_STEP)}
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.ab_inprocess", *argv, "--layouts", "1"],
            capture_output=True, text=True, check=True, env=env,
            cwd=Path(__file__).resolve().parent.parent,
        )
        runs.append(_ratios(proc.stdout.splitlines()))
        print(f"layout {k + 1}/{layouts} done", file=sys.stderr, flush=True)
    print(f"Ratios {trees[1]} / {trees[0]} over {layouts} memory layouts: median [min–max].\n")
    print("| case | ratio of least | ratio of medians |")
    print("|---|---|---|")
    for spec in cases:
        least = [r[spec][0] for r in runs]
        med = [r[spec][1] for r in runs]
        print(
            f"| {spec} | {statistics.median(least):.3f} [{min(least):.3f}–{max(least):.3f}] "
            f"| {statistics.median(med):.3f} [{min(med):.3f}–{max(med):.3f}] |",
            flush=True,
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trees", nargs="+", type=Path, help="BEFORE_TREE [AFTER_TREE]")
    ap.add_argument("--cases", nargs="+", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--layouts", type=int, default=1,
                    help="repeat in this many processes with different memory layouts")
    args = ap.parse_args(argv)
    trees = list(args.trees)
    if len(trees) == 1:
        trees.append(Path(__file__).resolve().parent.parent)
    if len(trees) != 2:
        raise SystemExit("give one or two trees")
    if args.layouts > 1:
        child = [str(t.resolve()) for t in trees] + ["--rounds", str(args.rounds), "--cases",
                                                      *args.cases]
        over_layouts(child, trees, list(args.cases), args.layouts)
        return
    with tempfile.TemporaryDirectory(prefix="limber-ab-") as tmp:
        loaded = [load_core(t.resolve(), f"core_ab{i}", Path(tmp)) for i, t in enumerate(trees)]
        print("Least round per call: ms (it: µs per problem-iteration).\n")
        print(f"| case | {trees[0]} | {trees[1]} | ratio of least | ratio of medians |")
        print("|---|---|---|---|---|")
        for spec in args.cases:
            calls = [case(core, fixtures, spec) for core, fixtures in loaded]
            for c in calls:
                c()  # warm-up: imports, plans, caches
            times: list[list[float]] = [[], []]
            for r in range(args.rounds):
                order = (0, 1) if r % 2 == 0 else (1, 0)
                for i in order:
                    t0 = time.process_time()
                    units = calls[i]() + calls[i]()
                    times[i].append((time.process_time() - t0) / units)
            scale = 1e6 if spec.startswith("it:") else 1e3  # µs per problem-iteration, ms
            least = [min(t) * scale for t in times]
            med = [statistics.median(t) for t in times]
            print(
                f"| {spec} | {least[0]:.2f} | {least[1]:.2f} | {least[1] / least[0]:.3f} "
                f"| {med[1] / med[0]:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
