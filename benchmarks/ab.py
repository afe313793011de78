"""A/B timing of source trees on the rows of ``benchmarks.limb`` and ``benchmarks.chains``.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python -m benchmarks.ab BEFORE_TREE [...] AFTER_TREE [--rounds 3]

Each tree is a checkout of the repository (for example ``git archive <commit> | tar -x -C
/tmp/before``). Every row group (the limb solve cases, the Tolani partial/aim cases, one
numeric method on the chain fixtures, the tracking test) runs in a fresh process per tree
and round, the trees taking turns (which one goes first rotates too), so all see the
same machine load. ``--log`` appends each result as it arrives; ``--report LOG...``
renders logs (several logs of the same trees add rounds: a repeat of slower-looking rows).
Each process imports that tree's own ``core`` and its own
``benchmarks.limb`` / ``benchmarks.chains`` timing functions (the same functions in both
trees), with fixed sizes smaller than the full runs. The report gives, per row, the median
over rounds of each tree and the last tree's ratios to the others; rows more than
``--threshold`` slower are listed for a repeat (``--only`` runs the given groups again).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from core import Method

#: Sizes of the A/B rows (the full benchmarks use larger ones; the ratio is what counts).
LIMB_SINGLE = 200
LIMB_BATCH = 5_000
CHAIN_ITERS = 20
CHAIN_REPEATS = 5
CHAIN_BIG = 300
CHAIN_SOLVES = 5
CHAIN_BUDGET = 500
#: LBFGSB loops over batch rows in Python and runs 20 L-BFGS-B iterations per outer one.
LBFGSB_BIG = 20
LBFGSB_BUDGET = 20
TRACK_FRAMES = 100

#: The row groups; one per numeric method (``core.Method`` is the same in both trees).
GROUPS: tuple[str, ...] = ("limb", "tolani", *(f"chain:{m.name}" for m in Method), "tracking")


# ------------------------------------------------------------------------------- worker


def _limb_rows() -> dict[str, float]:
    from benchmarks import limb as lb  # the tree's own module (sys.path set by the worker)

    sizes = lb.Sizes(
        single=LIMB_SINGLE,
        batch=LIMB_BATCH,
        batch_repeats=3,
        unsolvable_single=10,
        unsolvable_batch=20,
        construction=2000,
    )
    arm = lb.human_arm(limits=True)
    free = arm.with_limits(None)
    seed = lb.SEED
    out: dict[str, float] = {}
    for name, limb, position_only in (
        (lb.CASES[0], free, True),
        (lb.CASES[1], free, False),
        (lb.CASES[2], arm, True),
        (lb.CASES[3], arm, False),
    ):
        gen = lb.random_reachable_goals if limb.limits is not None else lb.random_unlimited_goals
        single = gen(limb, sizes.single, seed + 1, position_only=position_only)
        batch = gen(limb, sizes.batch, seed + 2, position_only=position_only)
        out[f"limb | {name} | single median µs"] = lb.time_single(
            limb, lb.split_goals(single)
        ).median_us
        out[f"limb | {name} | batched µs/solve"] = lb.time_batch(
            limb, batch, sizes.batch_repeats
        ).us_per_solve
    uns_single = lb.unsolvable_goals(arm, sizes.unsolvable_single, seed + 3)
    uns_batch = lb.unsolvable_goals(arm, sizes.unsolvable_batch, seed + 4)
    out[f"limb | {lb.CASES[4]} | single median µs"] = lb.time_single(
        arm, lb.split_goals(uns_single)
    ).median_us
    out[f"limb | {lb.CASES[4]} | batched µs/solve"] = lb.time_batch(arm, uns_batch, 1).us_per_solve
    import numpy as np

    p1 = np.random.default_rng(seed).normal(size=3)
    pose1 = lb.random_unlimited_goals(free, 1, seed)
    r1 = np.asarray(pose1.rotation)[0]
    out["limb | PositionGoal(p), single | µs"] = lb.time_construction(
        lambda: lb.PositionGoal(p1), sizes.construction
    )
    out["limb | PoseGoal(p, R), single | µs"] = lb.time_construction(
        lambda: lb.PoseGoal(p1, r1), sizes.construction
    )
    return out


def _tolani_rows() -> dict[str, float]:
    from benchmarks import limb as lb

    sizes = lb.Sizes(
        single=0,
        batch=0,
        batch_repeats=1,
        unsolvable_single=0,
        unsolvable_batch=0,
        construction=0,
        tolani_single=200,
        tolani_batch=20_000,
        tolani_limited_batch=1000,
        tolani_slow_single=10,
        tolani_slow_batch=10,
    )
    out: dict[str, float] = {}
    for case, batch_n in lb.tolani_cases(sizes, lb.SEED):
        r = lb.time_tolani(case, batch_n)
        out[f"tolani | {case.name} | single median µs"] = r.single_median_us
        out[f"tolani | {case.name} | batched µs/solve"] = r.batch_us
    return out


def _chain_rows(method_name: str) -> dict[str, float]:
    from benchmarks import chains as ch

    method = ch.Method[method_name]
    slow = method_name == "LBFGSB"
    big = LBFGSB_BIG if slow else CHAIN_BIG
    budget = LBFGSB_BUDGET if slow else CHAIN_BUDGET
    out: dict[str, float] = {}
    for name, make in ch.FIXTURES.items():
        fx = make()
        key = f"chains | {method_name} | {name}"
        iters, repeats = (5, 3) if slow else (CHAIN_ITERS, CHAIN_REPEATS)
        out[f"{key} | µs/iter single"] = ch.per_iteration(method, fx, 1, iters, repeats)
        us, its, _ = ch.per_solve(method, fx, CHAIN_SOLVES, budget)
        out[f"{key} | µs/solve single"] = us
        out[f"{key} | mean iterations, solve single"] = its
        bit = 3 if slow else CHAIN_ITERS
        reps = 3
        out[f"{key} | µs/problem-iter batched"] = ch.per_iteration(method, fx, big, bit, reps)
        out[f"{key} | µs/problem-iter batched, 1 thread"] = ch.per_iteration(
            method, fx, big, bit, reps, threads=1
        )
        us, its, _ = ch.per_solve_batched(method, fx, big, budget)
        out[f"{key} | µs/solve batched"] = us
        out[f"{key} | mean iterations, solve batched"] = its
    return out


def _tracking_rows() -> dict[str, float]:
    from benchmarks import chains as ch

    out: dict[str, float] = {}
    for method in ch.Method:
        for name in ("Y", "double-Y"):
            frames = TRACK_FRAMES if method is not ch.Method.LBFGSB else TRACK_FRAMES // 10
            out[f"tracking | {method.name} | {name} | µs/update"] = ch.tracking(
                method, name, frames
            )[0]
    return out


def _worker(group: str) -> dict[str, float]:
    if group == "limb":
        return _limb_rows()
    if group == "tolani":
        return _tolani_rows()
    if group == "tracking":
        return _tracking_rows()
    if group.startswith("chain:"):
        return _chain_rows(group.split(":", 1)[1])
    raise SystemExit(f"unknown group {group!r}; valid: {', '.join(GROUPS)}")


# ------------------------------------------------------------------------------- driver


def _run(tree: Path, group: str, clock: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    script = str(Path(__file__).resolve())
    proc = subprocess.run(
        [sys.executable, script, "--worker", group, "--tree", str(tree), "--clock", clock],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{group} in {tree} failed:\n{proc.stderr[-3000:]}")
    result: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


Rows = dict[str, dict[int, list[float]]]


def run_ab(
    trees: Sequence[Path],
    groups: Sequence[str],
    rounds: int,
    say: Callable[[str], None],
    log: Path | None = None,
    clock: str = "cpu",
) -> Rows:
    """Per row and tree index: one value per round. Within a round each group runs in
    every tree back to back, in an order rotated from group to group and round to round.
    ``log``: each result is appended there as it arrives (JSON lines, :func:`load_log`)."""
    rows: Rows = {}
    n = len(trees)
    for r in range(rounds):
        for k, group in enumerate(groups):
            shift = (r + k) % n
            for side in [(i + shift) % n for i in range(n)]:
                result = _run(trees[side], group, clock)
                for row, value in result.items():
                    rows.setdefault(row, {}).setdefault(side, []).append(value)
                if log is not None:
                    with log.open("a", encoding="utf-8") as f:
                        f.write(json.dumps({"round": r, "side": side, "rows": result}) + "\n")
            say(f"round {r + 1}/{rounds}: {group} done")
    return rows


def load_log(*logs: Path) -> Rows:
    """The rows of one or more logs written by :func:`run_ab` (repeats add rounds)."""
    rows: Rows = {}
    for log in logs:
        for line in log.read_text(encoding="utf-8").splitlines():
            entry = json.loads(line)
            for row, value in entry["rows"].items():
                rows.setdefault(row, {}).setdefault(entry["side"], []).append(value)
    return rows


def render(rows: Rows, names: Sequence[str], threshold: float, title: str) -> tuple[str, list[str]]:
    """Markdown: per row each tree's median over rounds and, for every earlier tree, the
    last tree's ratio to it — the ratio of the medians and the median of the per-round
    ratios (each pairs two runs made back to back, so it cancels slow load drift). A row
    whose per-round median ratio to any earlier tree exceeds ``1 + threshold`` is listed."""
    last = len(names) - 1
    head = " | ".join(names)
    ratio_cols = " | ".join(f"{names[last]} / {names[i]} (per round)" for i in range(last))
    lines = [
        f"## {title}",
        "",
        f"Load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} CPUs. Median over "
        "rounds; ratios below 1: faster.",
        "",
        f"| row | {head} | {ratio_cols} | rounds |",
        "|" + "---|" * (2 + len(names) + last),
    ]
    slower: list[str] = []
    for row, sides in rows.items():
        if len(sides) < len(names):
            continue
        med = [statistics.median(sides[i]) for i in range(len(names))]
        cells = []
        flagged = False
        for i in range(last):
            pairs = [a / b for a, b in zip(sides[last], sides[i], strict=False) if b > 0]
            per_round = statistics.median(pairs) if pairs else float("nan")
            flag = " ⚠" if per_round > 1.0 + threshold else ""
            flagged = flagged or bool(flag)
            cells.append(f"{med[last] / med[i]:.3f} ({per_round:.3f}){flag}")
        if flagged:
            slower.append(row)
        values = " | ".join(f"{m:.4g}" for m in med)
        lines.append(f"| {row} | {values} | {' | '.join(cells)} | {len(sides[last])} |")
    return "\n".join(lines) + "\n", slower


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.ab", description=__doc__.splitlines()[0]
    )
    ap.add_argument("trees", type=Path, nargs="*", help="source trees, the one measured last")
    ap.add_argument("--names", nargs="*", default=None, help="a label per tree")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None, help=f"groups (default all: {GROUPS})")
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--title", default="A/B")
    ap.add_argument("--log", type=Path, default=None, help="append raw values here (JSON lines)")
    ap.add_argument(
        "--report", type=Path, action="append", help="only render this log (repeatable)"
    )
    ap.add_argument(
        "--clock",
        choices=("cpu", "wall"),
        default="cpu",
        help="time rows in process CPU time (default: robust on a loaded machine) or wall time",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        sys.path[:] = [str(args.tree)] + [p for p in sys.path if Path(p) != Path(__file__).parent]
        if args.clock == "cpu":  # the benchmarks read time.perf_counter(_ns) when timing
            time.perf_counter = time.process_time  # type: ignore[assignment]
            time.perf_counter_ns = time.process_time_ns  # type: ignore[assignment]
        print(json.dumps(_worker(args.worker)))
        return 0
    if args.report:
        rows = load_log(*args.report)
        count = 1 + max(side for sides in rows.values() for side in sides)
    else:
        if len(args.trees) < 2:
            ap.error("at least two trees are required")
        count = len(args.trees)
        rows = run_ab(
            args.trees,
            args.only or list(GROUPS),
            args.rounds,
            lambda m: print(m, file=sys.stderr),
            args.log,
            args.clock,
        )
    names = args.names or [f"tree {i}" for i in range(count)]
    text, slower = render(rows, names, args.threshold, args.title)
    print(text)
    if slower:
        print("slower than the threshold (repeat with --only):", file=sys.stderr)
        for row in slower:
            print(f"  {row}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
