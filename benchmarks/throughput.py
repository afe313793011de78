"""Suite 6 of issue 7: batch throughput.

* **Analytic** (``core.solve_limb``) on the human arm of ``tests/fixtures/sample_arm.py``: solves
  per second for single calls (one goal per call, each call timed) and for one batched
  call on B goals, B = 1 … 100,000 (the conventions: batched functions take a leading
  batch axis and loop nowhere in Python over it).
* **Numeric** (``core.solve``) on the same arm as a Skeleton: B independent pose problems
  solved in one call (batched q0 and goals, per-row stopping), default settings, from the
  same start pose; solves per second and the fraction reached.

Every figure is a median over repeats with its IQR, measured side by side in one process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._report import Spread, Suite, fmt_num, fmt_pct, md_table
from benchmarks.tolani import Q0, arm_skeleton, numeric_goal
from core import Limb, Method, PoseGoal, PositionGoal, SolveSettings, solve, solve_limb
from tests.fixtures.sample_arm import human_arm, random_reachable_goals, random_unlimited_goals

SEED = 20261123
ANALYTIC_CASES: tuple[str, ...] = (
    "position goal, limits off",
    "pose goal, limits off",
    "pose goal, limits on",
)
NUMERIC_METHODS: tuple[Method, ...] = (Method.DLS, Method.PSEUDOINVERSE, Method.LBFGSB)


@dataclass(frozen=True)
class Sizes:
    single: int
    batches: tuple[int, ...]
    numeric_batches: tuple[int, ...]
    lbfgsb_batches: tuple[int, ...]
    min_seconds: float  # keep repeating a batched call until this much time has passed


FULL = Sizes(2000, (1, 10, 100, 1000, 10_000, 100_000), (1, 10, 100, 1000), (1, 4, 16), 0.5)
QUICK = Sizes(30, (1, 10, 100), (1, 10), (1, 2), 0.01)


@dataclass
class Point:
    batch: int
    us_per_solve: Spread
    reached: float | None = None


@dataclass
class Curve:
    name: str
    single_us: Spread | None
    points: list[Point]


def _repeat(fn: Callable[[], Any], min_seconds: float, min_reps: int = 3) -> list[float]:
    fn()  # warm-up
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < min_reps or (time.perf_counter() - start < min_seconds and len(times) < 200):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def _goals(case: str, n: int, seed: int) -> tuple[Limb, PoseGoal | PositionGoal]:
    arm = human_arm(limits=True)
    if case.endswith("limits on"):
        return arm, random_reachable_goals(arm, n, seed, position_only=case.startswith("position"))
    free = arm.with_limits(None)
    return free, random_unlimited_goals(free, n, seed, position_only=case.startswith("position"))


def _take(goal: PoseGoal | PositionGoal, idx: Any) -> PoseGoal | PositionGoal:
    if isinstance(goal, PoseGoal):
        return PoseGoal(np.asarray(goal.position)[idx], np.asarray(goal.rotation)[idx])
    return PositionGoal(np.asarray(goal.position)[idx])


#: Largest batch for limits-on goals (each costs ~35 µs batched; 100,000 would take seconds).
LIMITED_MAX_BATCH = 10_000


def analytic(case: str, sizes: Sizes, seed: int) -> Curve:
    batches = [b for b in sizes.batches if b <= LIMITED_MAX_BATCH or "limits off" in case]
    limb, goal = _goals(case, max(max(batches), sizes.single), seed)
    singles = [_take(goal, i) for i in range(sizes.single)]
    for g in singles[:5]:
        solve_limb(limb, g)
    clock = time.perf_counter_ns
    t = np.empty(len(singles))
    for i, g in enumerate(singles):
        t0 = clock()
        solve_limb(limb, g)
        t[i] = clock() - t0
    points = []
    for b in batches:
        gb = _take(goal, slice(0, b))
        times = _repeat(lambda gb=gb: solve_limb(limb, gb), sizes.min_seconds)
        points.append(Point(b, Spread.of(np.array(times) / b * 1e6)))
    return Curve(f"analytic, {case}", Spread.of(t / 1000.0), points)


def numeric(method: Method, batches: Sequence[int], sizes: Sizes, seed: int) -> Curve:
    limb, goal = _goals("pose goal, limits off", max(batches), seed)
    assert isinstance(goal, PoseGoal)
    sk = arm_skeleton(limb)
    settings = SolveSettings()
    points = []
    for b in batches:
        g = numeric_goal(_take(goal, slice(0, b)))
        q0 = np.tile(Q0, (b, 1))
        res: list[Any] = []

        def call(g: Any = g, q0: Any = q0, res: list[Any] = res) -> None:
            res[:] = [solve(sk, [g], q0, method, settings)]

        times = _repeat(call, sizes.min_seconds)
        reached = float(np.mean(np.asarray(res[0].reached)))
        points.append(Point(b, Spread.of(np.array(times) / b * 1e6), reached))
    return Curve(f"{method.name} (numeric), pose goal, limits off", None, points)


def chart(curves: Sequence[Curve], out_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for c in curves:
        b = [p.batch for p in c.points]
        sps = [1e6 / p.us_per_solve.median for p in c.points]
        (line,) = ax.plot(b, sps, marker="o", ls="-" if c.single_us else "--", label=c.name)
        if c.single_us is not None:  # single calls: a dotted level in the same colour
            ax.axhline(1e6 / c.single_us.median, color=line.get_color(), ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("batch size B (goals per call)")
    ax.set_ylabel("solves per second (median)")
    ax.set_title("Batch throughput, human arm (7 DOF); dotted: analytic single calls")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "throughput.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render(curves: Sequence[Curve], sizes: Sizes, seed: int) -> str:
    rows = []
    for c in curves:
        if c.single_us is not None:
            rows.append(
                [
                    c.name,
                    "single calls",
                    c.single_us.fmt(),
                    fmt_num(1e6 / c.single_us.median),
                    "1.00",
                    "—",
                ]
            )
        ref = c.single_us.median if c.single_us is not None else c.points[0].us_per_solve.median
        for p in c.points:
            rows.append(
                [
                    c.name,
                    f"batched, B = {p.batch:,}",
                    p.us_per_solve.fmt(),
                    fmt_num(1e6 / p.us_per_solve.median),
                    fmt_num(ref / p.us_per_solve.median),
                    fmt_pct(p.reached) if p.reached is not None else "—",
                ]
            )
    table = md_table(
        [
            "solver",
            "call",
            "µs per solve (median [IQR])",
            "solves / s",
            "speed-up vs single call (numeric: vs B = 1)",
            "reached",
        ],
        rows,
    )
    return "\n".join(
        [
            "## 6. Batch throughput",
            "",
            f"Human arm of `tests/fixtures/sample_arm.py`, seed {seed}. Analytic single calls: "
            f"{sizes.single:,} goals, each call timed (median [IQR]). Batched calls: one "
            f"`solve_limb` on the first B goals, repeated for ≥ {sizes.min_seconds} s (≥ 3 "
            "times); µs per solve = call time / B, median [IQR] over the repeats. Numeric "
            "methods: B independent pose problems (limits off) in one `core.solve` call with a "
            f"batched q0 (all rows from q0 = {Q0.tolist()}), default `SolveSettings`; rows stop "
            "individually, so a batch costs as much as its slowest rows' iterations. 'reached' "
            "is the fraction of rows within tolerance (1e-6).",
            "",
            table,
            "",
        ]
    )


def headline(curves: Sequence[Curve]) -> str:
    rows = []
    for c in curves:
        if c.single_us is None:
            continue
        best = min(c.points, key=lambda p: p.us_per_solve.median)
        rows.append(
            [
                c.name,
                fmt_num(1e6 / c.single_us.median),
                f"{fmt_num(1e6 / best.us_per_solve.median)} (B = {best.batch:,})",
                f"{fmt_num(c.single_us.median / best.us_per_solve.median)}×",
            ]
        )
    return md_table(
        ["throughput", "single calls, solves/s", "batched, solves/s", "batched / single"], rows
    )


def run(quick: bool, out_dir: Path, log: Callable[[str], None] = print) -> Suite:
    sizes = QUICK if quick else FULL
    curves = []
    for k, case in enumerate(ANALYTIC_CASES):
        t0 = time.perf_counter()
        curves.append(analytic(case, sizes, SEED + k))
        log(f"  throughput: analytic {case}: {time.perf_counter() - t0:.1f} s")
    for m in NUMERIC_METHODS:
        t0 = time.perf_counter()
        b = sizes.lbfgsb_batches if m is Method.LBFGSB else sizes.numeric_batches
        curves.append(numeric(m, b, sizes, SEED + 10))
        log(f"  throughput: {m.name}: {time.perf_counter() - t0:.1f} s")
    png = chart(curves, out_dir)
    best = {c.name: min(p.us_per_solve.median for p in c.points) for c in curves if c.single_us}
    return Suite(
        key="throughput",
        title="Batch throughput",
        markdown=render(curves, sizes, SEED),
        charts=(png,),
        targets=(),
        seeds=(SEED,),
        headline=headline(curves),
        extra={"analytic_batched_us": best},
    )
