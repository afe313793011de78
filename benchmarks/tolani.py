"""Suite 1 of issue 7: Tolani, Goswami & Badler (2000) Tables 4–7, reproduced.

The human-proportioned 7-DOF right arm of ``tests/fixtures/sample_arm.py`` (joint limits from
that module) solved three ways on the same seeded goals, side by side in one process:

* **Analytic** — ``core.solve_limb`` (Tolani §3.2–3.4), the paper's "our approach".
* **Optimization** — ``core.solve(..., method=Method.LBFGSB)`` (Ki & Sheen §3: bounded
  L-BFGS-B with a Tikhonov term) on the equivalent 7-DOF :class:`core.Skeleton`
  (shoulder Ball 'XYZ', elbow Hinge, wrist Ball 'XYZ', hand), default settings.
* **Inverse Jacobian** — ``core.solve(..., method=Method.DLS)`` (Buss §5 damped least
  squares, Limber's default numeric method), default settings.

Rows (as the paper's tables): position only (Table 4), position + orientation (Table 5),
partial orientation (Table 6), aiming (Table 7), each with joint limits off, limits on
and unreachable goals. Columns: absolute time per solve (median [IQR] of individually
timed calls), relative time (ratio of medians on the same goals), average position
error, average orientation / aiming error, % failures. The paper's figures are printed
beside ours. The numeric methods are ~10³× slower, so they solve a subsample (the first
``numeric`` goals of each row); the analytic solver's reference time for the ratio is
its median on exactly that subsample.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks import limb as limb_bench
from benchmarks._report import Spread, Suite, Target, fmt_num, fmt_pct, md_table
from core import (
    LIMIT_TOLERANCE,
    AimGoal,
    Ball,
    Hinge,
    Joint,
    Limb,
    Method,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    Skeleton,
    SolveSettings,
    matrix_to_euler_families,
    solve,
    solve_limb,
)
from tests.fixtures.sample_arm import (
    human_arm,
    random_reachable_goals,
    random_unlimited_goals,
)

FloatArray = NDArray[np.float64]
AnyGoal = PositionGoal | PoseGoal | PartialOrientationGoal | AimGoal

SEED = 20261122
FAIL_POSITION_M = limb_bench.FAIL_POSITION_M  # 1 mm
FAIL_ANGLE_RAD = limb_bench.FAIL_ANGLE_RAD  # 1°
#: Start configuration of the numeric methods (rad): the 7-DOF arm fixture's q0
#: (tests.fixtures.human_arm), slightly bent, inside every limit.
Q0 = np.array([0.1, 0.1, 0.1, 0.3, 0.0, 0.0, 0.0])

TABLES: tuple[str, ...] = (
    "Position only (Table 4)",
    "Position and orientation (Table 5)",
    "Partial orientation (Table 6)",
    "Aiming (Table 7)",
)
CONDITIONS: tuple[str, ...] = ("limits off", "limits on", "goal unreachable")
METHODS: tuple[str, ...] = ("Analytic", "Optimization", "Inverse Jacobian")
NUMERIC: dict[str, Method] = {"Optimization": Method.LBFGSB, "Inverse Jacobian": Method.DLS}

# The paper's figures (Tolani et al. 2000, Tables 4–7): per (table, condition, method),
# (absolute time s, relative time, avg position error, avg orientation error, failures).
# Orientation error there is 1 − q_goal·q (pose) or (1 − â·ĝ)² (partial / aim), not rad;
# errors and failures are given once per table, for limits on. "" = not in the paper.
_P = dict[tuple[str, str, str], tuple[str, str, str, str, str]]
PAPER: _P = {
    (TABLES[0], CONDITIONS[0], METHODS[0]): ("0.000024", "1", "", "", ""),
    (TABLES[0], CONDITIONS[0], METHODS[1]): ("0.007", "292", "", "", ""),
    (TABLES[0], CONDITIONS[0], METHODS[2]): ("0.5", "20,833", "", "", ""),
    (TABLES[0], CONDITIONS[1], METHODS[0]): ("0.00023", "1", "2.5e-8", "", "0"),
    (TABLES[0], CONDITIONS[1], METHODS[1]): ("0.009", "39", "3.3e-7", "", "0.5%"),
    (TABLES[0], CONDITIONS[1], METHODS[2]): ("0.77", "3347", "5.6e-7", "", "1.02%"),
    (TABLES[1], CONDITIONS[0], METHODS[0]): ("0.0001", "1", "", "", ""),
    (TABLES[1], CONDITIONS[0], METHODS[1]): ("0.02", "200", "", "", ""),
    (TABLES[1], CONDITIONS[0], METHODS[2]): ("1.5", "15,000", "", "", ""),
    (TABLES[1], CONDITIONS[1], METHODS[0]): ("0.0015", "1", "2.6e-8", "1.0e-8", "0"),
    (TABLES[1], CONDITIONS[1], METHODS[1]): ("0.03", "20", "5.4e-7", "1.2e-7", "0.6%"),
    (TABLES[1], CONDITIONS[1], METHODS[2]): ("2.23", "1487", "3.2e-7", "1.4e-7", "1.75%"),
    (TABLES[1], CONDITIONS[2], METHODS[0]): ("0.005", "1", "", "", ""),
    (TABLES[1], CONDITIONS[2], METHODS[1]): ("0.037", "12.3", "", "", ""),
    (TABLES[1], CONDITIONS[2], METHODS[2]): ("3.65", "730", "", "", ""),
    (TABLES[2], CONDITIONS[0], METHODS[0]): ("0.00012", "1", "", "", ""),
    (TABLES[2], CONDITIONS[0], METHODS[1]): ("0.015", "125", "", "", ""),
    (TABLES[2], CONDITIONS[1], METHODS[0]): ("0.008", "1", "2.7e-8", "0.9e-8", "1.1%"),
    (TABLES[2], CONDITIONS[1], METHODS[1]): (
        "0.024",
        "1; 3 with limits enforced",
        "6.0e-7",
        "1.2e-7",
        "0.74%",
    ),
    (TABLES[2], CONDITIONS[2], METHODS[0]): ("0.054", "1.93", "", "", ""),
    (TABLES[2], CONDITIONS[2], METHODS[1]): ("0.028", "1", "", "", ""),
    (TABLES[3], CONDITIONS[0], METHODS[0]): ("0.000025", "1", "", "", ""),
    (TABLES[3], CONDITIONS[0], METHODS[1]): ("0.0065", "260", "", "", ""),
    (TABLES[3], CONDITIONS[1], METHODS[0]): ("0.0067", "1", "", "1.25e-8", "0"),
    (TABLES[3], CONDITIONS[1], METHODS[1]): ("0.0092", "1.373", "", "1.43e-7", "0.45%"),
    (TABLES[3], CONDITIONS[2], METHODS[0]): ("0.014", "1.27", "", "", ""),
    (TABLES[3], CONDITIONS[2], METHODS[1]): ("0.011", "1", "", "", ""),
}


@dataclass(frozen=True)
class Sizes:
    goals: int  # goals per fast row (errors / failures of the analytic solver)
    single: int  # individually timed analytic calls per fast row
    numeric: tuple[int, int]  # goals per row for (Optimization, Inverse Jacobian)
    slow: int  # goals per row where the analytic solver optimises (unreachable rows)
    numeric_slow: tuple[int, int]  # numeric goals on unreachable rows


FULL = Sizes(goals=10_000, single=2000, numeric=(100, 400), slow=100, numeric_slow=(30, 60))
QUICK = Sizes(goals=50, single=20, numeric=(2, 3), slow=3, numeric_slow=(1, 2))


@dataclass
class Case:
    table: str
    condition: str
    limb: Limb
    goal: AnyGoal  # batched
    kwargs: dict[str, Any]  # solve_limb keywords (scalars or arrays with leading N)
    reachable: bool
    single: int
    numeric: tuple[int, int]  # goals solved by (Optimization, Inverse Jacobian)
    note: str = ""


@dataclass
class MethodResult:
    time_s: Spread  # per solve, over individually timed calls
    n_time: int
    n_err: int
    pos_err: FloatArray  # m per goal (empty for aims)
    ang_err: FloatArray  # rad per goal (empty for position goals)
    failures: float | None  # fraction of reachable goals; None for unreachable rows
    violations: int  # solutions outside the limits (limits on)
    relative: float | None = None  # median time / analytic median on the same goals
    iterations: float | None = None  # numeric methods: mean iterations per solve


@dataclass
class CaseResult:
    case: Case
    methods: dict[str, MethodResult]


# --------------------------------------------------------------------------------------
# The arm as a Skeleton (for the numeric methods)
# --------------------------------------------------------------------------------------


def arm_skeleton(limb: Limb) -> Skeleton:
    """The :class:`Skeleton` equal to ``limb`` (same frames, same Euler limits): shoulder
    Ball at the origin, elbow Hinge about ``elbow_axis`` at A, wrist Ball at B, ``hand``
    (the effector frame E) fixed to the wrist. Joint angles map one to one: q = (shoulder
    Euler x, y, z, θ4, wrist Euler x, y, z) in the limits' order ('XYZ' without limits)."""
    lim = limb.limits

    def ball(e: Any) -> Ball:
        if e is None:
            return Ball("XYZ")
        lo, hi = e.bounds()
        return Ball(e.order, lo, hi)

    el = lim.elbow if lim is not None else None
    return Skeleton(
        [
            Joint("shoulder", -1, np.eye(4), ball(lim.shoulder if lim else None)),
            Joint(
                "elbow",
                0,
                np.asarray(limb.a),
                Hinge(limb.elbow_axis, *(el if el is not None else (None, None))),
            ),
            Joint("wrist", 1, np.asarray(limb.b), ball(lim.wrist if lim else None)),
            Joint("hand", 2, np.asarray(limb.effector)),
        ]
    )


def numeric_goal(goal: AnyGoal) -> AnyGoal:
    """The same goal addressed to the skeleton's ``hand`` joint."""
    return replace(goal, joint="hand")


# --------------------------------------------------------------------------------------
# Errors (by forward kinematics, the same function for every method)
# --------------------------------------------------------------------------------------


def goal_errors(frames: FloatArray, goal: AnyGoal) -> tuple[FloatArray, FloatArray]:
    """(position error m, orientation / axis / aim error rad) of effector frames (N, 4, 4)
    against a batched goal; an empty array where the goal has no such component."""
    rot, pos = frames[:, :3, :3], frames[:, :3, 3]
    empty = np.zeros(0)
    if isinstance(goal, PositionGoal):
        return np.linalg.norm(pos - np.asarray(goal.position), axis=-1), empty
    if isinstance(goal, PoseGoal):
        pe = np.linalg.norm(pos - np.asarray(goal.position), axis=-1)
        # ‖Ra − Rb‖_F = 2√2 sin(θ/2): accurate for tiny angles (unlike arccos of the trace).
        d = np.linalg.norm(rot - np.asarray(goal.rotation), axis=(-2, -1))
        return pe, 2.0 * np.arcsin(np.clip(d / (2.0 * math.sqrt(2.0)), 0.0, 1.0))
    ax = np.einsum("nij,nj->ni", rot, np.broadcast_to(np.asarray(goal.axis), pos.shape))
    if isinstance(goal, PartialOrientationGoal):
        pe = np.linalg.norm(pos - np.asarray(goal.position), axis=-1)
        ref = np.broadcast_to(np.asarray(goal.direction), pos.shape)
    else:
        org = np.broadcast_to(np.asarray(goal.origin), pos.shape)
        ref = np.asarray(goal.target) - (pos + np.einsum("nij,nj->ni", rot, org))
        pe = empty
    ang = np.arctan2(np.linalg.norm(np.cross(ax, ref), axis=-1), np.sum(ax * ref, axis=-1))
    return pe, ang


def limits_ok(
    limb: Limb, shoulder: FloatArray, elbow: FloatArray, wrist: FloatArray
) -> NDArray[np.bool_]:
    """Independent check of a batched limb solution against ``limb.limits`` (slack
    ``LIMIT_TOLERANCE``): the elbow within its range and, for each spherical joint, one of
    its two Euler families (Tolani §3.2.4) within the joint's Euler limits."""
    lim = limb.limits
    th = np.asarray(elbow, dtype=np.float64)
    ok = np.ones(th.shape, bool)
    if lim is None:
        return ok
    if lim.elbow is not None:
        ok &= (th >= lim.elbow[0] - LIMIT_TOLERANCE) & (th <= lim.elbow[1] + LIMIT_TOLERANCE)
    for rot, e in ((shoulder, lim.shoulder), (wrist, lim.wrist)):
        if e is not None:
            fam = matrix_to_euler_families(rot, e.order)
            ok &= np.asarray(e.contains(fam[..., 0, :])) | np.asarray(e.contains(fam[..., 1, :]))
    return ok


def _failures(pe: FloatArray, ang: FloatArray, within: NDArray[np.bool_]) -> float:
    n = len(within)
    bad = ~within
    if pe.size:
        bad = bad | (pe > FAIL_POSITION_M)
    if ang.size:
        bad = bad | (ang > FAIL_ANGLE_RAD)
    return float(np.mean(bad)) if n else float("nan")


# --------------------------------------------------------------------------------------
# Goals
# --------------------------------------------------------------------------------------


def _rows(goal: AnyGoal, idx: Any) -> AnyGoal:
    """Goals ``idx`` (an int: a single goal) of a batched goal; unbatched fields kept."""

    def pick(v: Any, core: int = 1) -> FloatArray:
        a = np.asarray(v, dtype=np.float64)
        return a[idx] if a.ndim == core + 1 else a

    if isinstance(goal, PositionGoal):
        return PositionGoal(pick(goal.position))
    if isinstance(goal, PoseGoal):
        return PoseGoal(pick(goal.position), pick(goal.rotation, 2))
    if isinstance(goal, PartialOrientationGoal):
        return PartialOrientationGoal(pick(goal.position), pick(goal.axis), pick(goal.direction))
    return AimGoal(pick(goal.target), pick(goal.axis), pick(goal.origin))


def _kw_rows(kwargs: dict[str, Any], n_all: int, idx: Any) -> dict[str, Any]:
    return {
        k: (v[idx] if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == n_all else v)
        for k, v in kwargs.items()
    }


def _n(goal: AnyGoal) -> int:
    f = goal.target if isinstance(goal, AimGoal) else goal.position
    return len(np.asarray(f))


def _far_positions(limb: Limb, n: int, seed: int) -> PositionGoal:
    """Targets 1.1–1.5 × the arm's length from the shoulder (out of reach)."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(n, 3))
    d *= (limb.length * rng.uniform(1.1, 1.5, (n, 1))) / np.linalg.norm(d, axis=1, keepdims=True)
    return PositionGoal(d)


def cases(sizes: Sizes, seed: int = SEED) -> list[Case]:
    """The 12 rows (goals generated here, untimed)."""
    arm = human_arm(limits=True)
    free = arm.with_limits(None)
    n, s, m = sizes.goals, sizes.single, sizes.numeric
    out = [
        Case(
            TABLES[0],
            CONDITIONS[0],
            free,
            random_unlimited_goals(free, n, seed + 1, position_only=True),
            {},
            True,
            s,
            m,
        ),
        Case(
            TABLES[0],
            CONDITIONS[1],
            arm,
            random_reachable_goals(arm, n, seed + 2, position_only=True),
            {},
            True,
            s,
            m,
        ),
        Case(
            TABLES[0],
            CONDITIONS[2],
            arm,
            _far_positions(arm, sizes.slow, seed + 3),
            {},
            False,
            sizes.slow,
            sizes.numeric_slow,
            "targets 1.1–1.5 × the arm's length away",
        ),
        Case(
            TABLES[1],
            CONDITIONS[0],
            free,
            random_unlimited_goals(free, n, seed + 4),
            {},
            True,
            s,
            m,
        ),
        Case(
            TABLES[1], CONDITIONS[1], arm, random_reachable_goals(arm, n, seed + 5), {}, True, s, m
        ),
        Case(
            TABLES[1],
            CONDITIONS[2],
            arm,
            limb_bench.unsolvable_goals(arm, sizes.slow, seed + 6),
            {},
            False,
            sizes.slow,
            sizes.numeric_slow,
            "reachable poses with no swivel inside the limits (§3.2.5 optimisation)",
        ),
    ]
    # Tables 6–7: the goals of benchmarks/limb.py (its Tolani rows), at our sizes.
    lb = limb_bench.Sizes(
        single=1,
        batch=1,
        batch_repeats=1,
        unsolvable_single=1,
        unsolvable_batch=1,
        construction=1,
        tolani_single=s,
        tolani_batch=n,
        tolani_limited_batch=n,
        tolani_slow_single=sizes.slow,
        tolani_slow_batch=sizes.slow,
    )
    by_name = {c.name: c for c, _ in limb_bench.tolani_cases(lb, seed + 7)}
    rows = limb_bench.TOLANI_ROWS
    pick = [
        (TABLES[2], CONDITIONS[0], rows[0], "ψ by CLOSEST_WRIST (Eq. 12)"),
        (TABLES[2], CONDITIONS[1], rows[1], "ψ by CLOSEST_WRIST (Eq. 12)"),
        (TABLES[2], CONDITIONS[2], rows[3], "targets 1.1–1.5 × the arm's length away"),
        (TABLES[3], CONDITIONS[0], rows[4], "θ4 and wrist given (paper: 'analytic if θ4 given')"),
        (TABLES[3], CONDITIONS[1], rows[6], "θ4 and wrist given"),
        (
            TABLES[3],
            CONDITIONS[2],
            rows[8],
            "targets no ray of the hand can pass through with the given wrist (the numeric "
            "methods also move the wrist, so for them most are reachable)",
        ),
    ]
    for table, cond, name, note in pick:
        c = by_name[name]
        slow = not c.reachable
        out.append(
            Case(
                table,
                cond,
                c.limb,
                c.goal,
                c.kwargs,
                c.reachable,
                sizes.slow if slow else s,
                sizes.numeric_slow if slow else m,
                note,
            )
        )
    return out


# --------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------


def _time_calls(calls: Sequence[Callable[[], Any]]) -> tuple[FloatArray, list[Any]]:
    clock = time.perf_counter_ns
    t = np.empty(len(calls))
    out = []
    for i, f in enumerate(calls):
        t0 = clock()
        out.append(f())
        t[i] = clock() - t0
    return t * 1e-9, out


def measure(case: Case, methods: Sequence[str] = METHODS) -> CaseResult:
    limb, goal = case.limb, case.goal
    n_all = _n(goal)
    limited = limb.limits is not None
    results: dict[str, MethodResult] = {}

    # Analytic: individually timed calls on the first `single` goals, errors on all.
    singles = [(_rows(goal, i), _kw_rows(case.kwargs, n_all, i)) for i in range(case.single)]
    for g, kw in singles[:3]:  # warm-up (lazy imports, caches)
        solve_limb(limb, g, **kw)
    t, _ = _time_calls([lambda g=g, kw=kw: solve_limb(limb, g, **kw) for g, kw in singles])
    sol = solve_limb(limb, goal, **case.kwargs)
    frames = limb.forward(sol.shoulder, sol.elbow, sol.wrist)
    pe, ang = goal_errors(frames, goal)
    within = np.asarray(sol.within_limits, dtype=bool) if limited else np.ones(n_all, bool)
    checked = limits_ok(limb, sol.shoulder, sol.elbow, sol.wrist)
    results[METHODS[0]] = MethodResult(
        Spread.of(t),
        len(t),
        n_all,
        pe,
        ang,
        _failures(pe, ang, within & checked) if case.reachable else None,
        int(np.sum(~(within & checked))) if limited else 0,
    )
    t_analytic = t

    # Numeric: the first `numeric` goals, one solve() each from Q0.
    sk = arm_skeleton(limb)
    for name in methods[1:]:
        n_num = case.numeric[METHODS.index(name) - 1]
        ng = [numeric_goal(_rows(goal, i)) for i in range(n_num)]
        sub = _rows(goal, np.arange(n_num))
        ref = float(np.median(t_analytic[:n_num]))
        method = NUMERIC[name]
        settings = SolveSettings()
        solve(sk, [ng[0]], Q0, method, settings)  # warm-up
        t, res = _time_calls(
            [lambda g=g, m=method, s=settings: solve(sk, [g], Q0, m, s) for g in ng]
        )
        q = np.array([r.q for r in res])
        frames = sk.forward(q)[:, sk.joint_index("hand")]
        pe, ang = goal_errors(frames, sub)
        # use_limits clips every iterate; check that the result is inside the bounds.
        ok = np.all(np.abs(sk.clip(q) - q) <= LIMIT_TOLERANCE, axis=1)
        results[name] = MethodResult(
            Spread.of(t),
            len(t),
            len(t),
            pe,
            ang,
            _failures(pe, ang, ok) if case.reachable else None,
            int(np.sum(~ok)),
            iterations=float(np.mean([r.iterations for r in res])),
            relative=float(np.median(t)) / ref,
        )
    results[METHODS[0]].relative = 1.0
    return CaseResult(case, results)


def run_cases(
    sizes: Sizes,
    seed: int = SEED,
    log: Callable[[str], None] = print,
    methods: Sequence[str] = METHODS,
) -> list[CaseResult]:
    out = []
    for c in cases(sizes, seed):
        t0 = time.perf_counter()
        out.append(measure(c, methods))
        log(f"  tolani: {c.table}, {c.condition}: {time.perf_counter() - t0:.1f} s")
    return out


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def _mean(x: FloatArray) -> float | None:
    return float(np.mean(x)) if x.size else None


def _max(x: FloatArray) -> float | None:
    return float(np.max(x)) if x.size else None


def render_table(results: Sequence[CaseResult], table: str) -> str:
    header = [
        "condition",
        "method",
        "goals (time / errors)",
        "time per solve, s (median [IQR])",
        "relative time",
        "avg position error (m)",
        "avg orient./aim error (rad)",
        "max orient./aim error (rad)",
        "failures",
        "within limits",
        "iterations (mean)",
        "paper: time (s)",
        "paper: relative",
        "paper: pos. error",
        "paper: orient. error",
        "paper: failures",
    ]
    rows = []
    for r in results:
        if r.case.table != table:
            continue
        for name, m in r.methods.items():
            paper = PAPER.get((table, r.case.condition, name), ("",) * 5)
            rows.append(
                [
                    r.case.condition,
                    name,
                    f"{m.n_time:,} / {m.n_err:,}",
                    m.time_s.fmt(),
                    fmt_num(m.relative),
                    fmt_num(_mean(m.pos_err)),
                    fmt_num(_mean(m.ang_err)),
                    fmt_num(_max(m.ang_err)),
                    fmt_pct(m.failures),
                    fmt_pct(1.0 - m.violations / m.n_err) if r.case.limb.limits else "—",
                    fmt_num(m.iterations),
                    *[p or "—" for p in paper],
                ]
            )
    return md_table(header, rows)


def targets(results: Sequence[CaseResult]) -> list[Target]:
    reach = [r for r in results if r.case.reachable]
    an = [(r, r.methods[METHODS[0]]) for r in reach]
    fails = sum(int(round((m.failures or 0.0) * m.n_err)) for _, m in an)
    n_goals = sum(m.n_err for _, m in an)
    pos = [float(np.max(m.pos_err)) for _, m in an if m.pos_err.size]
    ang = [float(np.max(m.ang_err)) for _, m in an if m.ang_err.size]
    out = [
        Target(
            "Analytic: 0 failures on reachable goals",
            fails == 0,
            f"{fails} of {n_goals:,} reachable goals failed (> 1 mm, > 1° or outside limits)",
        ),
        Target(
            "Analytic: position error ≤ 1e-10 m (max over reachable goals)",
            bool(pos) and max(pos) <= 1e-10,
            f"max {fmt_num(max(pos) if pos else None)} m",
        ),
        Target(
            "Analytic: orientation / aim error ≤ 1e-10 rad (max over reachable goals)",
            bool(ang) and max(ang) <= 1e-10,
            f"max {fmt_num(max(ang) if ang else None)} rad",
        ),
    ]
    for other, need in (("Optimization", 200.0), ("Inverse Jacobian", 1000.0)):
        ratios = {
            r.case.table.split(" (")[0]: r.methods[other].relative
            for r in results
            if r.case.condition == CONDITIONS[0]
            and r.case.table in TABLES[:2]
            and other in r.methods
        }
        ok = bool(ratios) and all(v is not None and v >= need for v in ratios.values())
        out.append(
            Target(
                f"Relative time analytic vs {other} ≥ {need:,.0f}× (position and pose, limits off)",
                ok,
                ", ".join(f"{k}: {fmt_num(v)}×" for k, v in ratios.items()) or "not measured",
            )
        )
    lim = [(r, r.methods[METHODS[0]]) for r in reach if r.case.condition == CONDITIONS[1]]
    viol = sum(m.violations for _, m in lim)
    out.append(
        Target(
            "Limits: never a violated limit when a feasible solution exists (analytic)",
            viol == 0,
            f"{viol} of {sum(m.n_err for _, m in lim):,} limits-on reachable goals outside the "
            "limits (solver's within_limits flag and an independent Euler-family check)",
        )
    )
    return out


def chart(results: Sequence[CaseResult], out_dir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(15, 4), sharey=True)
    colors = {"Analytic": "#1b7837", "Optimization": "#2166ac", "Inverse Jacobian": "#b2182b"}
    for ax, table in zip(axes, TABLES, strict=True):
        rows = [r for r in results if r.case.table == table]
        x = np.arange(len(rows))
        width = 0.27
        for k, name in enumerate(METHODS):
            med, lo, hi = [], [], []
            for r in rows:
                m = r.methods.get(name)
                s = m.time_s if m else Spread(np.nan, np.nan, np.nan, 0)
                med.append(s.median)
                lo.append(s.median - s.q1)
                hi.append(s.q3 - s.median)
            ax.bar(x + (k - 1) * width, med, width, yerr=[lo, hi], label=name, color=colors[name])
        ax.set_xticks(x, [r.case.condition.replace("goal ", "") for r in rows])
        ax.set_yscale("log")
        ax.set_title(table, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("seconds per solve (median, IQR)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Tolani Tables 4–7 reproduced: time per solve, human arm (7 DOF)")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "tolani_times.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render(results: Sequence[CaseResult], sizes: Sizes, seed: int, quick: bool) -> str:
    parts = [
        "## 1. Tolani Tables 4–7, reproduced",
        "",
        f"Human-proportioned right arm of `tests/fixtures/sample_arm.py` (upper arm 0.30 m, "
        f"forearm "
        f"0.25 m with a 10° carrying angle, hand 0.08 m; 7 DOF; its human joint limits). "
        f"Seed {seed}{' (quick run: tiny N)' if quick else ''}. Per row the analytic solver "
        f"solves {sizes.goals:,} goals in one batched call for the errors and failures and "
        f"times {sizes.single:,} of them one call at a time; rows where it runs an "
        f"optimisation (unreachable goals) use {sizes.slow} goals. The numeric methods are "
        f"much slower, so they solve only a subsample — the first {sizes.numeric[0]} "
        f"(Optimization) / {sizes.numeric[1]} (Inverse Jacobian) goals of each row "
        f"({sizes.numeric_slow[0]} / {sizes.numeric_slow[1]} on unreachable rows) — one "
        f"`solve()` each from "
        f"q0 = {Q0.tolist()} rad with default `SolveSettings` (tolerance 1e-6, ≤ 200 "
        "iterations). *Relative time* = median time of the method / the analytic median on "
        "exactly the same goals (measured in this process, one after the other).",
        "",
        "Methods: **Analytic** = `core.solve_limb`; **Optimization** = `core.solve(..., "
        "Method.LBFGSB)` (bounded L-BFGS-B, Ki & Sheen) on the same arm as a `Skeleton`; "
        "**Inverse Jacobian** = `core.solve(..., Method.DLS)` (damped least squares, Buss). "
        "The paper used CFSQP and an SVD pseudo-inverse integrated along a trajectory by a "
        "Bulirsch–Stoer ODE solver (on 2000-era hardware), so its inverse-Jacobian times "
        "include a whole trajectory.",
        "",
        "Errors by forward kinematics of the returned joints: position |p − g| (m); "
        "orientation the angle between effector and goal frames, partial orientation the "
        "angle between the effector axis and `direction`, aiming the angle between the ray "
        "and origin → target (all in rad; the paper used 1 − q·q or (1 − â·ĝ)², so compare "
        "magnitudes loosely). A *failure* is a reachable goal left > 1 mm or > 1° off, or "
        "solved outside the limits; unreachable rows have no failure rate. *Within limits*: "
        "the analytic solver's flag confirmed by an independent Euler-family check; for the "
        "numeric methods (which clip every iterate) q within the skeleton's bounds. The "
        "paper's "
        "errors and failure rates are given once per table (limits on).",
        "",
    ]
    for table in TABLES:
        notes = {r.case.condition: r.case.note for r in results if r.case.table == table}
        parts += [f"### {table}", "", render_table(results, table), ""]
        extra = "; ".join(f"{k}: {v}" for k, v in notes.items() if v)
        if extra:
            parts += [f"Goals — {extra}.", ""]
    parts += [
        "**Reading the ratios.** The paper's inverse-Jacobian baseline integrated a whole "
        "trajectory from the start pose with an ODE solver, hence its 15,000–20,833×. "
        "Limber's DLS is a Gauss–Newton-like iteration that stops at the goal after the "
        "mean iteration count shown (≈ 0.1 ms each), so it is a much stronger baseline and "
        "the analytic solver's lead over it is smaller; the ≥ 1,000× target is recorded "
        "against it as measured. LBFGSB (scipy L-BFGS-B per outer iteration, Python "
        "callbacks) is the slow one here, unlike the paper's CFSQP. Where the analytic "
        "solver runs an optimisation itself (limits on for partial / aim goals with the "
        "solver's ψ, unreachable goals) the ratios shrink or invert, as in the paper.",
        "",
    ]
    return "\n".join(parts)


def headline(results: Sequence[CaseResult]) -> str:
    """Reachable rows: analytic time, the ratios with the paper's beside them, failures
    and the largest error."""
    rows = []
    for r in results:
        if not r.case.reachable:
            continue
        a = r.methods[METHODS[0]]

        def ratio(k: str, r: CaseResult = r) -> str:
            if k not in r.methods:
                return "—"
            paper = PAPER.get((r.case.table, r.case.condition, k), ("", ""))[1]
            return f"{fmt_num(r.methods[k].relative)}×" + (f" (paper {paper})" if paper else "")

        errs = [x for x in (_max(a.pos_err), _max(a.ang_err)) if x is not None]
        rows.append(
            [
                f"{r.case.table.split(' (')[0]}, {r.case.condition}",
                f"{fmt_num(a.time_s.median * 1e6)} µs",
                ratio(METHODS[1]),
                ratio(METHODS[2]),
                fmt_pct(a.failures),
                fmt_num(max(errs) if errs else None),
            ]
        )
    return md_table(
        [
            "Tolani Tables 4–7 (human arm)",
            "analytic per solve",
            "LBFGSB / analytic (paper: optimisation)",
            "DLS / analytic (paper: inverse Jacobian)",
            "analytic failures",
            "analytic max error (m / rad)",
        ],
        rows,
    )


def run(quick: bool, out_dir: Path, log: Callable[[str], None] = print) -> Suite:
    sizes = QUICK if quick else FULL
    results = run_cases(sizes, SEED, log)
    png = chart(results, out_dir)
    return Suite(
        key="tolani",
        title="Tolani Tables 4–7",
        markdown=render(results, sizes, SEED, quick),
        charts=(png,),
        targets=tuple(targets(results)),
        seeds=(SEED,),
        headline=headline(results),
    )
