"""Benchmark of full-body IK (``core.solve_body``, issue 18) on the humanoid fixture.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python -m benchmarks.body            # full run
    PYTHONPATH=. .venv/bin/python -m benchmarks.body --quick    # tiny sizes (smoke test)

The motion: the humanoid's joints follow smooth sinusoids within their limits; each
frame's goals are made by forward kinematics of that frame's pose (so all are reachable):
a PoseGoal on each hand and foot and an AimGoal of the head, all at priority 0 (4 end
goals + head aim). Side by side in one process, on the same goals:

* the hybrid ``solve_body`` on the ``Body`` (analytic limbs), single solves warm-started
  from the previous frame's answer (the interactive case), and one batched call over all
  frames from the rest pose (the bake case);
* the same body as a plain ``Skeleton`` (every joint numeric) with ``Method.DLS`` and
  ``Method.TASK_PRIORITY``, single solves warm-started likewise.

Reports ms per solve (median and inter-quartile range), frames per second batched, the
largest goal error (m / rad) and the fraction of frames with every goal reached (1e-6) and
within limits, and checks the issue's targets: ≤ 2 ms per single solve, ≥ 1,000 frames/s
batched, hybrid ≥ 5× faster than both plain solvers and more accurate. Writes
``benchmarks/BODY_RESULTS.md`` (``--out``). Timings are measured here only, never asserted
in tests; BLAS is limited to one thread (see :func:`benchmarks._report.limit_blas_threads`).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks._report import Spread, Target, fmt_num, fmt_pct, limit_blas_threads, md_table
from core import BodySettings, Method, SolveSettings, solve, solve_body
from tests.fixtures.humanoid import end_goals, humanoid

DEFAULT_OUT = Path(__file__).resolve().parent / "BODY_RESULTS.md"

SEED = 18


def motion(frames: int, seed: int = SEED) -> np.ndarray:
    """(frames, n_dofs) a smooth in-limit motion: each DOF a sinusoid (random phase and
    period 1–3 s at 24 fps) around a random centre, within its limits (the pelvis
    translation within ±0.1 m and its rotation within ±0.3 rad)."""
    body = humanoid()
    sk = body.skeleton
    rng = np.random.default_rng(seed)
    lo, hi = sk.lower.copy(), sk.upper.copy()
    span = sk.dof_slices[0]
    lo[span] = (-0.1, -0.1, -0.1, -0.3, -0.3, -0.3)
    hi[span] = (0.1, 0.1, 0.1, 0.3, 0.3, 0.3)
    centre = rng.uniform(lo + 0.3 * (hi - lo), hi - 0.3 * (hi - lo))
    amp = 0.25 * (hi - lo)
    period = rng.uniform(24.0, 72.0, size=sk.n_dofs)
    phase = rng.uniform(0.0, 2.0 * math.pi, size=sk.n_dofs)
    t = np.arange(frames)[:, None]
    q: np.ndarray = np.clip(centre + amp * np.sin(2.0 * math.pi * t / period + phase), lo, hi)
    return q


def _met(errors: np.ndarray, within: np.ndarray) -> float:
    return float(np.mean(np.all(errors <= 1e-6, axis=1) & within))


def run_single(name: str, frames: np.ndarray) -> dict[str, object]:
    """Each frame solved alone, warm-started from the previous frame's answer."""
    body = humanoid()
    sk = body.skeleton
    q = frames[0].copy()
    times, errs, within = [], [], []
    for f in range(1, frames.shape[0]):
        goals = end_goals(body, frames[f])
        t0 = time.perf_counter()
        if name == "hybrid":
            sol = solve_body(body, goals, q)
            q, err = sol.q, sol.goal_error
        else:
            method = Method.DLS if name == "DLS" else Method.TASK_PRIORITY
            res = solve(sk, goals, q, method, SolveSettings())
            q, err = res.q, res.per_goal_error
        times.append(time.perf_counter() - t0)
        errs.append(err)
        within.append(bool(np.all((q >= sk.lower - 1e-9) & (q <= sk.upper + 1e-9))))
    e = np.array(errs)
    return {
        "ms": Spread.of(np.array(times) * 1e3),
        "max_error": float(e.max()),
        "met": _met(e, np.array(within)),
    }


def run_batched(frames: np.ndarray) -> dict[str, object]:
    """All frames in one batched call from the rest pose (the bake case)."""
    body = humanoid()
    goals = end_goals(body, frames)
    t0 = time.perf_counter()
    sol = solve_body(body, goals, np.zeros(body.skeleton.n_dofs), BodySettings())
    dt = time.perf_counter() - t0
    return {
        "fps": frames.shape[0] / dt,
        "max_error": float(sol.goal_error.max()),
        "met": _met(sol.goal_error, sol.within_limits),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    ap.add_argument("--frames", type=int, default=None, help="frames of the motion")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    blas = limit_blas_threads(1)
    n = args.frames or (4 if args.quick else 48)
    frames = motion(n + 1)
    single = {name: run_single(name, frames) for name in ("hybrid", "DLS", "TASK_PRIORITY")}
    batched = run_batched(frames[1:])
    hy = single["hybrid"]
    ms_h = hy["ms"].median  # type: ignore[attr-defined]
    rows = []
    for name, r in single.items():
        ms = r["ms"]
        rows.append(
            [
                "hybrid `solve_body`" if name == "hybrid" else f"plain Skeleton, {name}",
                ms.fmt(),  # type: ignore[attr-defined]
                fmt_num(ms.median / ms_h),  # type: ignore[attr-defined]
                fmt_num(r["max_error"]),  # type: ignore[arg-type]
                fmt_pct(r["met"]),  # type: ignore[arg-type]
            ]
        )
    targets = [
        Target("hybrid ≤ 2 ms per single solve", ms_h <= 2.0, f"{fmt_num(ms_h)} ms"),
        Target(
            "hybrid ≥ 1,000 frames/s batched",
            float(batched["fps"]) >= 1000.0,  # type: ignore[arg-type]
            f"{fmt_num(batched['fps'])} frames/s",  # type: ignore[arg-type]
        ),
    ]
    for name in ("DLS", "TASK_PRIORITY"):
        r = single[name]
        ratio = r["ms"].median / ms_h  # type: ignore[attr-defined]
        better = hy["met"] >= r["met"] and hy["max_error"] <= r["max_error"]  # type: ignore[operator]
        targets.append(
            Target(
                f"hybrid ≥ 5× faster than plain {name} and more accurate",
                ratio >= 5.0 and better,
                f"{fmt_num(ratio)}× ; max error {fmt_num(hy['max_error'])} vs "  # type: ignore[arg-type]
                f"{fmt_num(r['max_error'])}, met {fmt_pct(hy['met'])} vs {fmt_pct(r['met'])}",  # type: ignore[arg-type]
            )
        )
    text = [
        "# Full-body IK benchmark (`python -m benchmarks.body`)",
        "",
        f"Humanoid fixture (`tests/fixtures/humanoid.py`, {humanoid().skeleton.n_dofs} DOFs: "
        "Free pelvis, 3 spine Balls, neck, head, 2 clavicles, 4 limbs). A smooth in-limit "
        f"motion of {n} frames (seed {SEED}); per frame a PoseGoal on each hand and foot and "
        "an AimGoal of the head (4 end goals + head aim), made by forward kinematics, so "
        "every frame is reachable. Single solves warm-started from the previous frame's "
        "answer; the batched hybrid solves all frames in one call from the rest pose. "
        "Met: every goal within 1e-6 (m / rad) and every joint within limits.",
        "",
        f"Python {platform.python_version()}, numpy {np.__version__}; BLAS threads limited "
        f"to 1 ({', '.join(blas) or 'no OpenBLAS found'}). The machine is shared (other "
        "sessions running): absolute times are noisy, the ratios come from one run.",
        "",
        md_table(
            ["solver", "ms per solve, median [IQR]", "× hybrid", "max goal error", "met"], rows
        ),
        "",
        f"Batched hybrid: {fmt_num(batched['fps'])} frames/s, max goal error "  # type: ignore[arg-type]
        f"{fmt_num(batched['max_error'])}, met {fmt_pct(batched['met'])}.",  # type: ignore[arg-type]
        "",
        md_table(
            ["target", "result", "measured"],
            [[t.name, "pass" if t.passed else "**miss**", t.detail] for t in targets],
        ),
        "",
    ]
    args.out.write_text("\n".join(text), encoding="utf-8")
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
