"""Suite 3 of issue 7: Buss's Y and double-Y tracking, beside Buss's C++ timings.

Buss (2009) §8 and Buss & Kim's demo: the Y (7 hinges, 2 effectors) and the double-Y
(25 hinges, 4 effectors) of ``tests.fixtures`` chase targets that move sinusoidally in
and out of reach (``buss_y_targets`` / ``buss_double_y_targets`` at t = 0.01·step). Each
method applies **one update per step** (``core.step_once``, what a tracking
application does once per frame) from the previous step's pose. Per method and shape:
µs per update (median [IQR] over the steps), mean and max tracking error (the largest
effector–target distance each step, averaged over the steps; the targets leave the
reachable set at times, so it never reaches 0), and an oscillation measure: sign
reversals of joint velocity per joint per step (Δq_j changing sign between consecutive
steps, |Δq_j| > 1e-9 rad counted). Buss's C++ figures (2.8 GHz Pentium) stand beside
ours for JT and DLS.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from benchmarks._report import Spread, Suite, Target, fmt_num, md_table
from benchmarks.chains import BUSS, FIXTURES, settings_for
from core import Method, PositionGoal, step_once
from tests.fixtures import buss_double_y_targets, buss_y_targets

METHODS: tuple[Method, ...] = (
    Method.JACOBIAN_TRANSPOSE,
    Method.PSEUDOINVERSE,
    Method.DLS,
    Method.DLS_CLAMPED,
    Method.SDLS,
    Method.CCD,
)
SHAPES: tuple[str, ...] = ("Y", "double-Y")
DT = 0.01  # target time per step (Buss & Kim's UpdateTargets argument)
STEPS_FULL = 1000
STEPS_QUICK = 40
MOVING = 1e-9  # rad: smaller joint steps do not count as a direction


@dataclass
class Track:
    method: Method
    shape: str
    steps: int
    us: Spread  # µs per update
    err: NDArray[np.float64]  # (steps,) largest effector error after each update
    reversals: float  # per joint per step


def track(method: Method, shape: str, steps: int) -> Track:
    fx = FIXTURES[shape]()
    sk = fx.skeleton
    q = fx.q0.copy()
    settings = settings_for(method)
    targets = (buss_y_targets if shape == "Y" else buss_double_y_targets)(DT * np.arange(steps))
    names = [g.joint for g in fx.goals]  # one PositionGoal per effector, in target order
    goals = [  # built untimed
        tuple(PositionGoal(targets[k, i], joint=j) for i, j in enumerate(names))
        for k in range(steps)
    ]
    step_once(sk, goals[0], q, method, settings)  # warm-up
    qs = np.empty((steps + 1, len(q)))
    qs[0] = q
    times = np.empty(steps)
    errs = np.empty(steps)
    clock = time.perf_counter_ns
    for k in range(steps):
        t0 = clock()
        q = step_once(sk, goals[k], q, method, settings, iteration=k)
        times[k] = clock() - t0
        qs[k + 1] = q
        errs[k] = float(np.max(sk.goal_errors(q, goals[k])))
    dq = np.diff(qs, axis=0)
    moving = np.abs(dq) > MOVING
    flips = (np.sign(dq[1:]) != np.sign(dq[:-1])) & moving[1:] & moving[:-1]
    rev = float(flips.sum()) / (flips.shape[0] * flips.shape[1]) if flips.size else 0.0
    return Track(method, shape, steps, Spread.of(times / 1000.0), errs, rev)


def chart(tracks: list[Track], out_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    for ax, shape in zip(axes, SHAPES, strict=True):
        for tr in tracks:
            if tr.shape == shape:
                ax.plot(np.arange(tr.steps) * DT, tr.err, lw=0.9, label=tr.method.name)
        ax.set_title(f"Buss's {shape}: largest effector error after each update")
        ax.set_xlabel("target time t (0.01 per update)")
        ax.set_ylabel("error (fixture units)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "buss_tracking.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render(tracks: list[Track], steps: int) -> str:
    rows = []
    by = {(t.method, t.shape): t for t in tracks}
    for shape in SHAPES:
        dls = by.get((Method.DLS, shape))
        for m in METHODS:
            t = by.get((m, shape))
            if t is None:
                continue
            buss = BUSS.get((m.name, shape))
            rows.append(
                [
                    shape,
                    m.name,
                    t.us.fmt(),
                    fmt_num(t.us.median / dls.us.median) if dls else "—",
                    fmt_num(buss) if buss else "—",
                    fmt_num(t.us.median / buss) if buss else "—",
                    fmt_num(float(np.mean(t.err))),
                    fmt_num(float(np.max(t.err))),
                    fmt_num(t.reversals),
                ]
            )
    table = md_table(
        [
            "shape",
            "method",
            "µs per update (median [IQR])",
            "time / DLS",
            "Buss C++ µs (2.8 GHz Pentium)",
            "ours / Buss",
            "mean tracking error",
            "max tracking error",
            "velocity sign reversals per joint per step",
        ],
        rows,
    )
    return "\n".join(
        [
            "## 3. Buss's Y and double-Y: tracking moving targets",
            "",
            f"{steps} updates per method and shape, one `step_once` per step from the previous "
            f"pose, targets `buss_*_targets(0.01·step)` (Buss & Kim's UpdateTargets; they move in "
            "and out of reach). Default `SolveSettings` (DLS λ = 0.01, per-step clamp 0.5 rad; "
            "the same settings as benchmarks/chains.py). µs per update: median [IQR] over the "
            "steps. Tracking error: the largest effector–target distance after each update "
            "(Buss's units: the Y is about 3 long), averaged over the steps. Oscillation: how "
            "often a joint's velocity reverses sign between consecutive steps (0 = smooth, 1 = "
            "every step). Buss's C++ timings are per update of his own demo on a 2.8 GHz "
            "Pentium; the Y Jacobian is 6×7 in both, our double-Y is Buss & Kim's demo with "
            "25 hinges (12×25; the paper timed a 12×16 version), so 'ours / Buss' is a rough "
            "language-and-hardware comparison, not a like-for-like race.",
            "",
            table,
            "",
        ]
    )


def headline(tracks: list[Track]) -> str:
    rows = []
    for t in tracks:
        buss = BUSS.get((t.method.name, t.shape))
        if buss:
            rows.append(
                [
                    f"Buss {t.shape}, {t.method.name}",
                    f"{fmt_num(t.us.median)} µs",
                    f"{fmt_num(buss)} µs",
                    fmt_num(float(np.mean(t.err))),
                ]
            )
    return md_table(
        ["tracking (one update)", "Limber (Python)", "Buss C++ (2009)", "mean tracking error"], rows
    )


def targets(tracks: list[Track]) -> list[Target]:
    done = {(t.method, t.shape) for t in tracks}
    need = {(m, s) for m in METHODS for s in SHAPES}
    missing = sorted(f"{m.name}/{s}" for m, s in need - done)
    return [
        Target(
            "Buss tracking: every method on Y and double-Y, ≥ 500 updates (full run)",
            not missing,
            f"{len(done)} of {len(need)} method/shape pairs"
            + (f"; missing {', '.join(missing)}" if missing else ""),
        )
    ]


def run(quick: bool, out_dir: Path, log: Callable[[str], None] = print) -> Suite:
    steps = STEPS_QUICK if quick else STEPS_FULL
    tracks = []
    for shape in SHAPES:
        for m in METHODS:
            t0 = time.perf_counter()
            tracks.append(track(m, shape, steps))
            log(f"  tracking: {shape} {m.name}: {time.perf_counter() - t0:.1f} s")
    png = chart(tracks, out_dir)
    tg = targets(tracks)
    if not quick and steps < 500:
        tg = [Target(tg[0].name, False, f"only {steps} steps")]
    return Suite(
        key="tracking",
        title="Buss's Y and double-Y tracking",
        markdown=render(tracks, steps),
        charts=(png,),
        targets=tuple(tg),
        seeds=(),
        headline=headline(tracks),
    )
