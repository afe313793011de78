"""Benchmark of the analytic 7-DOF limb solver (``core.solve_limb``).

Run from the repository root::

    PYTHONPATH=. .venv/bin/python -m benchmarks.limb            # full run
    PYTHONPATH=. .venv/bin/python -m benchmarks.limb --quick    # small N (smoke test)

Prints a markdown report (also written to ``--out``, default
``benchmarks/LIMB_RESULTS.md``): µs per solve for single calls (median and p10–p90 over
individually timed calls) and batched calls (one call on N goals, median of repeats),
for position / pose goals with and without joint limits on the human-proportioned arm of
``tools/sample_arm.py``, plus the cost of constructing goals. Goals are built before
timing. Speed is measured here only, never asserted in tests.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy
from numpy.typing import NDArray

from core import Limb, PoseGoal, PositionGoal, feasible_swivel, solve_limb
from tools.sample_arm import (
    human_arm,
    random_reachable_goals,
    random_unlimited_goals,
    split_goals,
    with_limits,
)

Goal = PoseGoal | PositionGoal

DEFAULT_OUT = Path(__file__).resolve().parent / "LIMB_RESULTS.md"
SEED = 20240611

#: Row names of the solve table, in order (the smoke test checks for each).
CASES: tuple[str, ...] = (
    "position goal, no limits",
    "pose goal, no limits",
    "position goal, limits",
    "pose goal, limits",
    "pose goal, limits, unsolvable goals",
)
#: Row names of the goal-construction table.
CONSTRUCTION_ROWS: tuple[str, ...] = (
    "PositionGoal(p), single",
    "PoseGoal(p, R), single",
    "PositionGoal(P), batched",
    "PoseGoal(P, R), batched",
)
#: Targets (single µs per solve, batched solves/s); None = no target for that column.
TARGETS: dict[str, tuple[float | None, float | None]] = {
    "pose goal, no limits": (25.0, 1_000_000.0),
    "position goal, no limits": (None, 1_000_000.0),
    "position goal, limits": (250.0, None),
    "pose goal, limits": (250.0, None),
}


@dataclass(frozen=True)
class Sizes:
    single: int  # individually timed single calls
    batch: int  # N of a batched call
    batch_repeats: int
    unsolvable_single: int
    unsolvable_batch: int
    construction: int  # single constructions timed


FULL = Sizes(
    single=2000,
    batch=100_000,
    batch_repeats=3,
    unsolvable_single=200,
    unsolvable_batch=500,
    construction=5000,
)
QUICK = Sizes(
    single=200,
    batch=2000,
    batch_repeats=2,
    unsolvable_single=10,
    unsolvable_batch=20,
    construction=500,
)


@dataclass
class SingleStats:
    calls: int
    median_us: float
    mean_us: float
    p10_us: float
    p90_us: float
    unsolvable: int
    unsolvable_median_us: float | None


@dataclass
class BatchStats:
    n: int
    us_per_solve: float
    solves_per_s: float
    unsolvable: int


@dataclass
class CaseResult:
    name: str
    single: SingleStats
    batch: BatchStats


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------


def _is_unsolvable_single(limb: Limb, sol_feasible: object) -> bool:
    return limb.limits is not None and sol_feasible == ()


def time_single(limb: Limb, goals: Sequence[Goal]) -> SingleStats:
    """Time ``solve_limb`` on each goal individually (perf_counter_ns around each call)."""
    for g in goals[: min(20, len(goals))]:  # warm-up
        solve_limb(limb, g)
    times = np.empty(len(goals))
    unsolved = np.zeros(len(goals), dtype=bool)
    clock = time.perf_counter_ns
    for i, g in enumerate(goals):
        t0 = clock()
        sol = solve_limb(limb, g)
        times[i] = clock() - t0
        unsolved[i] = _is_unsolvable_single(limb, sol.feasible_swivel)
    us = times / 1000.0
    return SingleStats(
        calls=len(goals),
        median_us=float(np.median(us)),
        mean_us=float(np.mean(us)),
        p10_us=float(np.percentile(us, 10)),
        p90_us=float(np.percentile(us, 90)),
        unsolvable=int(unsolved.sum()),
        unsolvable_median_us=float(np.median(us[unsolved])) if unsolved.any() else None,
    )


def time_batch(limb: Limb, goal: Goal, repeats: int) -> BatchStats:
    """Median over ``repeats`` of one ``solve_limb`` call on a batched goal."""
    n = len(np.asarray(goal.position))
    sol = solve_limb(limb, goal)  # warm-up (and the unsolvable count)
    fs = np.asarray(sol.feasible_swivel)
    unsolvable = int(np.isnan(fs[:, 0, 0]).sum()) if limb.limits is not None else 0
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        solve_limb(limb, goal)
        runs.append(time.perf_counter() - t0)
    t = statistics.median(runs)
    return BatchStats(n=n, us_per_solve=t / n * 1e6, solves_per_s=n / t, unsolvable=unsolvable)


def time_construction(fn: Callable[[], object], calls: int) -> float:
    """Median µs per call of ``fn`` over ``calls`` individually timed calls."""
    for _ in range(min(20, calls)):
        fn()
    clock = time.perf_counter_ns
    times = np.empty(calls)
    for i in range(calls):
        t0 = clock()
        fn()
        times[i] = clock() - t0
    return float(np.median(times)) / 1000.0


def unsolvable_goals(limb: Limb, n: int, seed: int) -> PoseGoal:
    """N pose goals (reachable in position) for which no swivel satisfies every limit."""
    out_p: list[NDArray[np.float64]] = []
    out_r: list[NDArray[np.float64]] = []
    have = 0
    k = 0
    while have < n:
        cand = random_unlimited_goals(limb, max(4 * n, 64), seed + k)
        assert isinstance(cand, PoseGoal)
        fs = np.asarray(feasible_swivel(limb, cand))
        empty = np.isnan(fs[:, 0, 0])
        out_p.append(np.asarray(cand.position)[empty])
        out_r.append(np.asarray(cand.rotation)[empty])
        have += int(empty.sum())
        k += 1
    return PoseGoal(np.concatenate(out_p)[:n], np.concatenate(out_r)[:n])


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def run(sizes: Sizes, seed: int = SEED, log: Callable[[str], None] | None = None) -> str:
    """Run every case and return the markdown report."""
    say = log or (lambda _msg: None)
    arm = human_arm(limits=True)
    free = with_limits(arm, None)
    cases: list[tuple[str, Limb, Goal, Goal, int]] = []
    for name, limb, position_only in (
        (CASES[0], free, True),
        (CASES[1], free, False),
        (CASES[2], arm, True),
        (CASES[3], arm, False),
    ):
        gen = random_reachable_goals if limb.limits is not None else random_unlimited_goals
        single = gen(limb, sizes.single, seed + 1, position_only=position_only)
        batch = gen(limb, sizes.batch, seed + 2, position_only=position_only)
        cases.append((name, limb, single, batch, sizes.batch_repeats))
    cases.append(
        (
            CASES[4],
            arm,
            unsolvable_goals(arm, sizes.unsolvable_single, seed + 3),
            unsolvable_goals(arm, sizes.unsolvable_batch, seed + 4),
            1,
        )
    )

    results: list[CaseResult] = []
    for name, limb, single_goal, batch_goal, repeats in cases:
        say(f"benchmark: {name} ...")
        s = time_single(limb, split_goals(single_goal))
        b = time_batch(limb, batch_goal, repeats)
        results.append(CaseResult(name, s, b))

    say("benchmark: goal construction ...")
    rng = np.random.default_rng(seed)
    p1 = rng.normal(size=3)
    pose1 = random_unlimited_goals(free, 1, seed)
    assert isinstance(pose1, PoseGoal)
    r1 = np.asarray(pose1.rotation)[0]
    pose_n = random_unlimited_goals(free, sizes.batch, seed + 5)
    assert isinstance(pose_n, PoseGoal)
    pn, rn = np.asarray(pose_n.position), np.asarray(pose_n.rotation)
    n_rep = max(5, sizes.construction // 500)
    construction = {
        CONSTRUCTION_ROWS[0]: time_construction(lambda: PositionGoal(p1), sizes.construction),
        CONSTRUCTION_ROWS[1]: time_construction(lambda: PoseGoal(p1, r1), sizes.construction),
        CONSTRUCTION_ROWS[2]: time_construction(lambda: PositionGoal(pn), n_rep) / len(pn),
        CONSTRUCTION_ROWS[3]: time_construction(lambda: PoseGoal(pn, rn), n_rep) / len(pn),
    }
    return render(results, construction, sizes, seed)


def _fmt_target_single(name: str, s: SingleStats) -> str:
    t = TARGETS.get(name, (None, None))[0]
    if t is None:
        return "—"
    return f"≤ {t:g} {'✓' if s.median_us <= t else '✗'}"


def _fmt_target_batch(name: str, b: BatchStats) -> str:
    t = TARGETS.get(name, (None, None))[1]
    if t is None:
        return "—"
    return f"≥ {t:,.0f}/s {'✓' if b.solves_per_s >= t else '✗'}"


def render(
    results: Sequence[CaseResult], construction: dict[str, float], sizes: Sizes, seed: int
) -> str:
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Limb solver benchmark",
        "",
        f"- Date: {now}",
        f"- CPU: {_cpu_model()}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}), "
        f"numpy {np.__version__}, scipy {scipy.__version__}, {platform.system()} "
        f"{platform.machine()}",
        f"- Seed: {seed}. Arm: `tools/sample_arm.py` (human-proportioned right arm).",
        f"- Single: {sizes.single} different goals, each call timed with "
        "`time.perf_counter_ns`; median and p10–p90 of the per-call times. Batched: one "
        f"call on N goals, median of {sizes.batch_repeats} repeats.",
        "- Goals: no limits, forward kinematics of uniformly random rotations and elbow "
        "angles; limits, forward kinematics of random joint angles within the limits (so "
        "a feasible swivel exists); unsolvable, reachable pose goals with no feasible swivel "
        "(the solver's bounded-optimisation fallback). Position goals use the default "
        "wrist (identity). Default strategy (CLOSEST, φ_d = 0).",
        "",
        "## Solve",
        "",
        "| case | single µs (median) | p10–p90 µs | single µs (mean) | single calls "
        "| target single "
        "| batched µs/solve | batched solves/s | N | target batched | unsolvable "
        "(single / batched) | unsolvable single µs (median) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        s, b = r.single, r.batch
        unsolved_us = "—" if s.unsolvable_median_us is None else f"{s.unsolvable_median_us:.0f}"
        lines.append(
            f"| {r.name} | {s.median_us:.1f} | {s.p10_us:.1f}–{s.p90_us:.1f} | "
            f"{s.mean_us:.1f} | {s.calls} | "
            f"{_fmt_target_single(r.name, s)} | {b.us_per_solve:.3f} | "
            f"{b.solves_per_s:,.0f} | {b.n:,} | {_fmt_target_batch(r.name, b)} | "
            f"{s.unsolvable / s.calls:.1%} / {b.unsolvable / b.n:.1%} | {unsolved_us} |"
        )
    lines += [
        "",
        "## Goal construction (validation)",
        "",
        "| construction | µs per goal |",
        "| --- | --- |",
    ]
    for name in CONSTRUCTION_ROWS:
        lines.append(f"| {name} | {construction[name]:.4g} |")
    lines += [
        "",
        f"Batched construction: N = {sizes.batch:,} goals per call, µs per goal.",
        "",
        "Notes: batched µs/solve is a mean over the batch (compare with the single-call "
        "mean, not the median, for the long-tailed unsolvable case). The first unsolvable "
        "solve in a process also pays the lazy `scipy.optimize` import (~0.1 s, excluded "
        "by the warm-up).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.limb", description="Benchmark core.solve_limb."
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes (200 single calls, N = 2,000)"
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"markdown output (default {DEFAULT_OUT})"
    )
    parser.add_argument("--seed", type=int, default=SEED, help=f"random seed (default {SEED})")
    args = parser.parse_args(argv)
    report = run(QUICK if args.quick else FULL, args.seed, log=lambda m: print(m, file=sys.stderr))
    print(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
