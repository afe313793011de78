"""Limber demo: the analytic 7-DOF limb solver on a human-proportioned right arm.

Run with ``bash tools/demo.sh`` (sets up the venv) or, from the repository root,
``PYTHONPATH=. .venv/bin/python tools/demo.py [--out DIR]``. Headless; writes into the
output folder (``--out``, else ``$LIMBER_DEMO_OUT``, else ``out/demo``):

* ``report.md``          the arm, a goal × swivel sweep, feasible swivel intervals, the
                         swivel picked by each strategy, and timings;
* ``swivel_sweep.png``   elbow circles with feasible / infeasible arcs, and the feasible
                         interval bars per goal;
* ``summary.json``       the key numbers.

The arm, its frames and limits are described in ``tests/fixtures/sample_arm.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # run as a script: make `core` and `tools` importable
    sys.path.insert(0, str(_ROOT))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # type: ignore[import-untyped]  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from core import (  # noqa: E402
    EulerLimits,
    Limb,
    LimbLimits,
    LimbSolution,
    PoseGoal,
    SwivelStrategy,
    axis_angle_to_matrix,
    feasible_swivel,
    matrix_to_euler_families,
    solve_limb,
    wrap_angle,
)
from tests.fixtures.sample_arm import (  # noqa: E402
    BODY_FROM_SHOULDER,
    CARRYING_ANGLE_DEG,
    ELBOW_LIMITS_DEG,
    FOREARM,
    HAND,
    SHOULDER_LIMITS_DEG,
    UPPER_ARM,
    WRIST_LIMITS_DEG,
    human_arm,
    random_reachable_goals,
)

FloatArray = NDArray[np.float64]

#: Swivel angles of the sweep (degrees): −150° … +180° in 30° steps (the full circle).
SWEEP_DEG: tuple[int, ...] = tuple(range(-150, 181, 30))
#: Goals drawn in the 3D panel (indices into the goal list).
PLOTTED_GOALS: tuple[int, ...] = (0, 11)
SEED = 20240611
VIEW_ELEV, VIEW_AZIM = 22.0, 65.0


@dataclass(frozen=True)
class DemoGoal:
    label: str
    goal: PoseGoal


@dataclass
class GoalResult:
    """Everything the report says about one goal."""

    index: int
    label: str
    position: list[float]
    distance: float
    reachable: bool
    elbow_deg: float
    feasible_deg: list[tuple[float, float]]
    sweep_within: list[bool]
    sweep_reachable: list[bool]
    sweep_pos_err: list[float]
    sweep_ori_err: list[float]
    sweep_consistent: list[bool]
    strategies: dict[str, dict[str, Any]] = field(default_factory=dict)


# --------------------------------------------------------------------------------------
# Goals
# --------------------------------------------------------------------------------------


def demo_goals() -> list[DemoGoal]:
    """12 goals on a path in front of the body, one the limits forbid, two out of reach.

    Shoulder-frame axes: +X up, +Y lateral, +Z forward (see tests/fixtures/sample_arm.py). The path
    sweeps the hand from low and lateral to shoulder height across the midline, about
    0.45 m in front of the shoulder, the hand pointing forward with the palm turned
    medially and 30° down (a relaxed "handshake" reach).
    """
    # Handshake: hand +Y → forward (+Z), palm normal (+Z at rest) → medial (−Y).
    handshake = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    relaxed = handshake @ axis_angle_to_matrix((0.0, 1.0, 0.0), math.radians(-30.0))
    out: list[DemoGoal] = []
    for i, t in enumerate(np.linspace(0.0, 1.0, 12)):
        p = np.array([-0.25 + 0.30 * t, 0.20 - 0.40 * t, 0.42 + 0.06 * math.sin(math.pi * t)])
        out.append(DemoGoal(f"path {i + 1}", PoseGoal(p, relaxed)))
    # Reachable in position, but the medial reach with a vertical palm needs more forearm
    # pronation / shoulder rotation than the limits allow.
    out.append(DemoGoal("limits forbid", PoseGoal((0.05, -0.20, 0.42), handshake)))
    out.append(DemoGoal("too far ahead", PoseGoal((0.0, 0.0, 0.75), relaxed)))
    up = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # hand +Y → up
    out.append(DemoGoal("too far above", PoseGoal((0.70, 0.10, 0.10), up)))
    return out


# --------------------------------------------------------------------------------------
# Solving
# --------------------------------------------------------------------------------------


def _deg(x: float) -> float:
    return math.degrees(x)


def _within(limits: LimbLimits, sol: LimbSolution) -> NDArray[np.bool_]:
    """Independent limit check of a (batched) solution via Euler families."""
    ok = np.asarray(limits.elbow_contains(sol.elbow), dtype=bool)
    for lim, r in ((limits.shoulder, sol.shoulder), (limits.wrist, sol.wrist)):
        if lim is not None:
            ok = ok & lim.contains(matrix_to_euler_families(r, lim.order)).any(axis=-1)
    return ok


def _in_intervals(phi: float, intervals: Sequence[tuple[float, float]], tol: float) -> bool:
    return any(((phi - lo) % (2 * math.pi)) <= (hi - lo) + tol for lo, hi in intervals)


def _near_boundary(phi: float, intervals: Sequence[tuple[float, float]], tol: float) -> bool:
    def dist(a: float, b: float) -> float:
        return abs(float(wrap_angle(a - b)))

    return any(min(dist(phi, lo), dist(phi, hi)) < tol for lo, hi in intervals)


def _pose_goal_batch(goal: PoseGoal, n: int) -> PoseGoal:
    return PoseGoal(
        np.broadcast_to(np.asarray(goal.position), (n, 3)),
        np.broadcast_to(np.asarray(goal.rotation), (n, 3, 3)),
    )


def solve_goal(
    index: int, dg: DemoGoal, arm: Limb, elbow_only: Limb, limits: LimbLimits
) -> GoalResult:
    """Sweep the swivel, compute the feasible set and both strategies' picks for a goal."""
    phis = np.radians(np.array(SWEEP_DEG, dtype=np.float64))
    # The elbow-only limb picks the same θ4 root as `arm` (the root rule depends on the
    # elbow limits only) and, having no shoulder/wrist limits, honours φ exactly.
    sweep = solve_limb(elbow_only, _pose_goal_batch(dg.goal, len(phis)), swivel=phis)
    within = _within(limits, sweep)
    intervals = feasible_swivel(arm, dg.goal)
    assert isinstance(intervals, tuple)
    consistent = [
        bool(within[j]) == _in_intervals(float(phis[j]), intervals, 1e-9)
        or _near_boundary(float(phis[j]), intervals, 1e-6)
        for j in range(len(phis))
    ]
    pos = np.asarray(dg.goal.position, dtype=np.float64)
    res = GoalResult(
        index=index,
        label=dg.label,
        position=[float(x) for x in pos],
        distance=float(np.linalg.norm(pos)),
        reachable=bool(np.all(sweep.reachable)),
        elbow_deg=_deg(float(sweep.elbow[0])),
        feasible_deg=[(_deg(lo), _deg(hi)) for lo, hi in intervals],
        sweep_within=[bool(x) for x in within],
        sweep_reachable=[bool(x) for x in sweep.reachable],
        sweep_pos_err=[float(x) for x in sweep.position_error],
        sweep_ori_err=[float(x) for x in sweep.orientation_error],
        sweep_consistent=consistent,
    )
    for strategy in (SwivelStrategy.CLOSEST, SwivelStrategy.MIDPOINT):
        s = solve_limb(arm, dg.goal, strategy=strategy)
        res.strategies[strategy.name] = {
            "swivel_deg": _deg(float(s.swivel)),
            "elbow_deg": _deg(float(s.elbow)),
            "reachable": bool(s.reachable),
            "within_limits": bool(s.within_limits),
            "position_error_m": float(s.position_error),
            "orientation_error_deg": _deg(float(s.orientation_error)),
        }
    return res


def _median_us(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def measure_timing(arm: Limb, free: Limb, goals: list[DemoGoal]) -> dict[str, float]:
    """Informational µs per solve (the benchmarks in benchmarks/limb.py are the real ones)."""
    solvable = [g.goal for g in goals[:12]]
    out: dict[str, float] = {}
    for name, limb in (("no_limits", free), ("limits", arm)):
        for g in solvable[:2]:  # warm-up
            solve_limb(limb, g)

        def run_single(limb: Limb = limb) -> None:
            for g in solvable:
                solve_limb(limb, g)

        out[f"single_{name}_us"] = _median_us(run_single, 15) / len(solvable)
        n = 10_000
        batch = random_reachable_goals(arm, n, SEED)
        solve_limb(limb, batch)  # warm-up

        def run_batch(limb: Limb = limb, batch: Any = batch) -> None:
            solve_limb(limb, batch)

        out[f"batched_{name}_us"] = _median_us(run_batch, 3) / n
        out["batch_size"] = n
    return out


# --------------------------------------------------------------------------------------
# Plot
# --------------------------------------------------------------------------------------


def _body(p: FloatArray) -> FloatArray:
    """Shoulder-frame points (..., 3) → body coordinates (x right, y forward, z up)."""
    return np.asarray(p @ BODY_FROM_SHOULDER.T, dtype=np.float64)


def _split_wrapped(lo: float, hi: float) -> list[tuple[float, float]]:
    """An interval in degrees with lo ∈ [-180, 180) and hi possibly > 180, as ≤ 2 pieces."""
    if hi <= 180.0:
        return [(lo, hi)]
    return [(lo, 180.0), (-180.0, hi - 360.0)]


def plot(
    path: Path,
    arm: Limb,
    elbow_only: Limb,
    limits: LimbLimits,
    goals: list[DemoGoal],
    results: list[GoalResult],
) -> None:
    fig: Figure = plt.figure(figsize=(15, 6.8), dpi=110)
    ax3: Any = fig.add_subplot(1, 2, 1, projection="3d")
    ax2: Axes = fig.add_subplot(1, 2, 2)

    # --- left: elbow circles and arm poses in body coordinates -------------------------
    torso = np.array([[-0.36, 0.0, 0.05], [0.0, 0.0, 0.05], [0.0, 0.0, -0.5], [-0.36, 0.0, -0.5]])
    ax3.add_collection3d(Poly3DCollection([torso], facecolor="0.85", edgecolor="0.6", alpha=0.5))
    ax3.scatter([0.0], [0.0], [0.0], color="k", s=25)
    path_pts = _body(np.array([g.goal.position for g in goals[:12]], dtype=np.float64))
    ax3.plot(*path_pts.T, color="0.55", ls=":", lw=1.2)
    ax3.scatter(*path_pts.T, color="0.45", s=8)
    colours = ("tab:blue", "tab:purple")
    n_circle = 361
    phi_c = np.linspace(-math.pi, math.pi, n_circle)
    for gi, colour in zip(PLOTTED_GOALS, colours, strict=True):
        goal = goals[gi].goal
        sol = solve_limb(elbow_only, _pose_goal_batch(goal, n_circle), swivel=phi_c)
        ok = _within(limits, sol)
        elbow = _body(elbow_only.elbow_position(sol.shoulder))
        for j in range(n_circle - 1):
            ax3.plot(
                elbow[j : j + 2, 0],
                elbow[j : j + 2, 1],
                elbow[j : j + 2, 2],
                color="tab:green" if ok[j] and ok[j + 1] else "tab:red",
                lw=2.6 if ok[j] and ok[j + 1] else 1.4,
            )
        for deg in (-90, -30, 30, 90, 150):
            j = int(np.argmin(np.abs(np.degrees(phi_c) - deg)))
            wrist = elbow_only.wrist_position(sol.shoulder[j], sol.elbow[j])
            hand = elbow_only.forward(sol.shoulder[j], sol.elbow[j], sol.wrist[j])[:3, 3]
            elb = elbow_only.elbow_position(sol.shoulder[j])
            pts = _body(np.array([np.zeros(3), elb, wrist, hand]))
            ax3.plot(*pts.T, color=colour, lw=1.6 if ok[j] else 0.9, ls="-" if ok[j] else "--",
                     alpha=0.95 if ok[j] else 0.55)
        # the CLOSEST solution of the fully limited arm, bold
        s = solve_limb(arm, goal)
        pts = _body(np.array([
            np.zeros(3),
            arm.elbow_position(s.shoulder),
            arm.wrist_position(s.shoulder, s.elbow),
            arm.forward(s.shoulder, s.elbow, s.wrist)[:3, 3],
        ]))
        ax3.plot(*pts.T, color=colour, lw=3.2, marker="o", ms=3.5)
        g_body = _body(np.asarray(goal.position, dtype=np.float64))
        ax3.scatter(*g_body, color=colour, marker="*", s=140, edgecolor="k", lw=0.5)
        ax3.text(*(g_body + np.array([0.0, 0.02, 0.02])), f"goal {gi + 1}", color=colour,
                 fontsize=8)
    ax3.set_xlabel("x: right (m)")
    ax3.set_ylabel("y: forward (m)")
    ax3.set_zlabel("z: up (m)")
    ax3.set_xlim(-0.45, 0.35)
    ax3.set_ylim(-0.15, 0.65)
    ax3.set_zlim(-0.55, 0.25)
    ax3.set_box_aspect((1.0, 1.0, 1.0))
    ax3.view_init(elev=VIEW_ELEV, azim=VIEW_AZIM)
    ax3.set_title("Right arm, elbow circles (shoulder at origin, torso in grey)", fontsize=10)
    handles = [
        Line2D([], [], color="tab:green", lw=2.6, label="elbow circle: feasible φ"),
        Line2D([], [], color="tab:red", lw=1.4, label="elbow circle: violates limits"),
        Line2D([], [], color="0.3", lw=1.6, label="arm at φ = −90°, −30°, 30°, 90°, 150°"),
        Line2D([], [], color="0.3", lw=0.9, ls="--", label="… (dashed: outside limits)"),
        Line2D([], [], color="0.3", lw=3.2, marker="o", ms=3.5, label="CLOSEST solution"),
        Line2D([], [], color="0.45", ls=":", marker=".", label="goal path (12 goals)"),
    ]
    ax3.legend(handles=handles, loc="upper left", fontsize=7.5, framealpha=0.85)

    # --- right: feasible interval bars ---------------------------------------------------
    n = len(results)
    for r in results:
        y = r.index
        ax2.axhspan(y - 0.45, y + 0.45, color="0.96" if y % 2 else "white", zorder=0)
        for lo, hi in r.feasible_deg:
            for a, b in _split_wrapped(lo, hi):
                ax2.barh(y, b - a, left=a, height=0.55, color="tab:green", alpha=0.75, zorder=2)
        if not r.feasible_deg:
            why = "out of reach" if not r.reachable else "no φ meets every limit"
            ax2.text(-172, y, f"empty: {why}", va="center", fontsize=8, color="tab:red",
                     zorder=5, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
        for j, deg in enumerate(SWEEP_DEG):
            d = ((deg + 180) % 360) - 180
            ok_j = r.sweep_within[j]
            ax2.plot(d, y, marker="o" if ok_j else "x", ms=4 if ok_j else 3,
                     color="k" if ok_j else "#e88", zorder=3, ls="none")
        c = r.strategies["CLOSEST"]["swivel_deg"]
        m = r.strategies["MIDPOINT"]["swivel_deg"]
        ax2.plot(c, y + 0.3, marker="v", color="tab:blue", ms=7, zorder=4, ls="none")
        ax2.plot(m, y - 0.3, marker="^", color="tab:orange", ms=7, zorder=4, ls="none")
    ax2.axvline(0.0, color="0.5", lw=0.8, ls="--", zorder=1)
    ax2.set_xlim(-180, 180)
    ax2.set_xticks(range(-180, 181, 30))
    ax2.set_ylim(n - 0.5, -0.5)
    ax2.set_yticks(range(n))
    ax2.set_yticklabels([f"{r.index + 1}: {r.label}" for r in results], fontsize=8)
    ax2.set_xlabel("swivel angle φ (degrees; 0 = elbow down, φ_d = 0 dashed)")
    ax2.set_title("Feasible swivel intervals per goal (all joint limits)", fontsize=10)
    ax2.grid(axis="x", color="0.85", lw=0.6)
    ax2.legend(
        handles=[
            Line2D([], [], color="tab:green", lw=6, alpha=0.75, label="feasible φ"),
            Line2D([], [], color="k", marker="o", ls="none", ms=4, label="sweep φ within limits"),
            Line2D([], [], color="tab:red", marker="x", ls="none", ms=4,
                   label="sweep φ violates limits"),
            Line2D([], [], color="tab:blue", marker="v", ls="none", label="CLOSEST (to φ_d = 0)"),
            Line2D([], [], color="tab:orange", marker="^", ls="none",
                   label="MIDPOINT (largest interval)"),
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.09),
        ncol=3,
        fontsize=8,
        frameon=False,
    )
    fig.suptitle(
        "Limber: analytic 7-DOF arm IK (Tolani et al. 2000) — feasible swivel angles",
        fontsize=12,
    )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def _fmt_limits(deg: dict[str, tuple[float, float]]) -> str:
    return ", ".join(f"{k} ∈ [{lo:g}°, {hi:g}°]" for k, (lo, hi) in deg.items())


def _fmt_intervals(iv: Sequence[tuple[float, float]]) -> str:
    if not iv:
        return "∅"
    return " ∪ ".join(f"[{lo:.1f}, {hi:.1f}]" for lo, hi in iv)


def _yn(b: bool) -> str:
    return "yes" if b else "no"


def write_report(
    path: Path, results: list[GoalResult], timing: dict[str, float], arm: Limb
) -> None:
    ref = np.asarray(arm.swivel_reference)
    lines = [
        "# Limber demo: analytic IK of a human-proportioned right arm",
        "",
        "Solver: `core.solve_limb` (Tolani, Goswami & Badler 2000). "
        "Arm: `tests/fixtures/sample_arm.py`.",
        "",
        "## Arm",
        "",
        "Shoulder frame = the upper-arm bone's rest frame (Blender: bones point along +Y); "
        "rest pose = T-pose, palm forward. Axes: +X up, +Y lateral (right), +Z forward.",
        "",
        "| Segment | Length | Transform |",
        "| --- | --- | --- |",
        f"| upper arm | {UPPER_ARM:.2f} m | A = translate (0, {UPPER_ARM}, 0) |",
        f"| forearm | {FOREARM:.2f} m | B = rotate {-CARRYING_ANGLE_DEG:g}° about Z "
        f"(carrying angle), then {FOREARM} m along the rotated +Y |",
        f"| hand (effector) | {HAND:.2f} m | E = translate (0, {HAND}, 0) |",
        "",
        f"- Elbow hinge: local X; limits θ4 ∈ [{ELBOW_LIMITS_DEG[0]:g}°, "
        f"{ELBOW_LIMITS_DEG[1]:g}°] (positive = flexion, forearm forward).",
        f"- Shoulder limits (Euler 'XYZ'): {_fmt_limits(SHOULDER_LIMITS_DEG)}.",
        f"- Wrist limits (Euler 'XYZ'): {_fmt_limits(WRIST_LIMITS_DEG)}.",
        f"- Total length {arm.length:.3f} m; swivel reference â = "
        f"({ref[0]:.3f}, {ref[1]:.3f}, {ref[2]:.3f}) — φ = 0 puts the elbow down.",
        "",
        "## Goals",
        "",
        "Pose goals (shoulder frame, metres). Goals 1–12 lie on a path in front of the body; "
        "13 is in reach but no swivel satisfies every limit; 14–15 are out of reach.",
        "`elbow` is θ4 (fixed by the goal). Errors are the worst over the sweep below, from "
        "forward kinematics.",
        "",
        "| # | goal | position (up, lat, fwd) | dist | reachable | elbow | max pos err "
        "| max ori err | feasible φ intervals (°) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        p = r.position
        lines.append(
            f"| {r.index + 1} | {r.label} | ({p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f}) | "
            f"{r.distance:.3f} | {_yn(r.reachable)} | {r.elbow_deg:.1f}° | "
            f"{max(r.sweep_pos_err):.1e} m | {math.degrees(max(r.sweep_ori_err)):.1e}° | "
            f"{_fmt_intervals(r.feasible_deg)} |"
        )
    lines += [
        "",
        "## Swivel sweep",
        "",
        "Each goal solved at fixed φ (an elbow-limited copy of the arm honours φ exactly; the "
        "shoulder and wrist are then checked against their limits). "
        "`✓` within all limits, `·` violates a limit, `✗` goal not reached.",
        "",
        "| # | " + " | ".join(f"{d:+d}°" for d in SWEEP_DEG) + " |",
        "| --- | " + " | ".join("---" for _ in SWEEP_DEG) + " |",
    ]
    for r in results:
        cells = [
            "✗" if not reach else ("✓" if ok else "·")
            for ok, reach in zip(r.sweep_within, r.sweep_reachable, strict=True)
        ]
        lines.append(f"| {r.index + 1} | " + " | ".join(cells) + " |")
    mismatches = sum(not c for r in results for c in r.sweep_consistent)
    lines += [
        "",
        f"Consistency: the sweep's independent limit check agrees with `feasible_swivel` at "
        f"{sum(len(r.sweep_consistent) for r in results) - mismatches} of "
        f"{sum(len(r.sweep_consistent) for r in results)} (goal, φ) pairs"
        + (" (mismatches are listed in summary.json)." if mismatches else "."),
        "",
        "## Strategies",
        "",
        "The fully limited arm, default desired swivel φ_d = 0. CLOSEST: the feasible φ "
        "nearest φ_d; MIDPOINT: the middle of the largest feasible interval. When the "
        "feasible set is empty the position is kept and the orientation error minimised "
        "within the limits.",
        "",
        "| # | CLOSEST φ | within | pos err | ori err | MIDPOINT φ | within | pos err "
        "| ori err |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        c, m = r.strategies["CLOSEST"], r.strategies["MIDPOINT"]
        lines.append(
            f"| {r.index + 1} | {c['swivel_deg']:.1f}° | {_yn(c['within_limits'])} | "
            f"{c['position_error_m']:.1e} m | {c['orientation_error_deg']:.2g}° | "
            f"{m['swivel_deg']:.1f}° | {_yn(m['within_limits'])} | "
            f"{m['position_error_m']:.1e} m | {m['orientation_error_deg']:.2g}° |"
        )
    lines += [
        "",
        "## Timing (informational)",
        "",
        f"Measured here with `time.perf_counter` on {platform.python_implementation()} "
        f"{platform.python_version()}; see `python -m benchmarks.limb` for the benchmark.",
        "",
        "| | µs per solve, single call | µs per solve, batched |",
        "| --- | --- | --- |",
        f"| no limits (pose goal) | {timing['single_no_limits_us']:.1f} | "
        f"{timing['batched_no_limits_us']:.2f} |",
        f"| limits, CLOSEST (pose goal) | {timing['single_limits_us']:.1f} | "
        f"{timing['batched_limits_us']:.2f} |",
        "",
        f"Single: median over 15 runs of goals 1–12. Batched: N = {int(timing['batch_size'])} "
        "random reachable goals within the limits.",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def run(out_dir: Path) -> dict[str, Any]:
    """Solve, plot and write everything into ``out_dir``; returns the summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    arm = human_arm(limits=True)
    limits = arm.limits
    assert limits is not None
    elbow_only = arm.with_limits(LimbLimits(elbow=limits.elbow))
    free = arm.with_limits(None)
    goals = demo_goals()
    results = [solve_goal(i, g, arm, elbow_only, limits) for i, g in enumerate(goals)]
    timing = measure_timing(arm, free, goals)
    plot(out_dir / "swivel_sweep.png", arm, elbow_only, limits, goals, results)
    write_report(out_dir / "report.md", results, timing, arm)

    def limits_json(lim: EulerLimits | None) -> dict[str, Any] | None:
        if lim is None:
            return None
        lo, hi = lim.bounds()
        return {"order": lim.order, "lower_deg": [_deg(x) for x in lo],
                "upper_deg": [_deg(x) for x in hi]}

    summary: dict[str, Any] = {
        "arm": {
            "upper_arm_m": UPPER_ARM,
            "forearm_m": FOREARM,
            "hand_m": HAND,
            "carrying_angle_deg": CARRYING_ANGLE_DEG,
            "length_m": arm.length,
            "limits": {
                "shoulder": limits_json(limits.shoulder),
                "elbow_deg": [_deg(x) for x in limits.elbow] if limits.elbow else None,
                "wrist": limits_json(limits.wrist),
            },
        },
        "sweep_deg": list(SWEEP_DEG),
        "goals": [
            {
                "index": r.index + 1,
                "label": r.label,
                "position_m": r.position,
                "reachable": r.reachable,
                "elbow_deg": r.elbow_deg,
                "feasible_swivel_deg": [list(iv) for iv in r.feasible_deg],
                "sweep_within_limits": r.sweep_within,
                "max_position_error_m": max(r.sweep_pos_err),
                "max_orientation_error_rad": max(r.sweep_ori_err),
                "strategies": r.strategies,
            }
            for r in results
        ],
        "counts": {
            "goals": len(results),
            "reachable": sum(r.reachable for r in results),
            "with_feasible_swivel": sum(bool(r.feasible_deg) for r in results),
            "sweep_pairs": sum(len(r.sweep_within) for r in results),
            "sweep_within_limits": sum(sum(r.sweep_within) for r in results),
            "sweep_inconsistent": [
                {"goal": r.index + 1, "swivel_deg": SWEEP_DEG[j]}
                for r in results
                for j, ok in enumerate(r.sweep_consistent)
                if not ok
            ],
        },
        "timing_us": timing,
        "seed": SEED,
        "runtime_s": time.perf_counter() - t_start,
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/demo.py",
        description="Solve a human-proportioned arm for a sweep of goals and swivel angles; "
        "write report.md, swivel_sweep.png and summary.json.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default: $LIMBER_DEMO_OUT, else out/demo)",
    )
    args = parser.parse_args(argv)
    out = args.out or Path(os.environ.get("LIMBER_DEMO_OUT") or _ROOT / "out" / "demo")
    summary = run(out)
    c = summary["counts"]
    print(
        f"limber demo: {c['goals']} goals × {len(SWEEP_DEG)} swivel angles; "
        f"{c['reachable']} reachable, {c['with_feasible_swivel']} with a feasible swivel; "
        f"{summary['runtime_s']:.1f} s"
    )
    for name in ("report.md", "swivel_sweep.png", "summary.json"):
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
