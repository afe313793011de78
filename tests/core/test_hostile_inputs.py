"""Hostile inputs to every public function of ``core`` (issue 16).

Concern: for non-finite, huge, wrong-type, wrong-shape and empty inputs every public
function either raises a :class:`core.LimberError` subclass or returns an honest result
(finite, no NaN, the flags and errors telling the truth) — never another exception.
Each case names the call; :func:`_outcome` runs it and checks the result's arrays.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import (
    AimGoal,
    Ball,
    DirectionGoal,
    EulerLimits,
    Fixed,
    Hinge,
    InvalidGoalError,
    InvalidSkeletonError,
    Joint,
    Limb,
    LimberError,
    LimbLimits,
    Method,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    PsiStrategy,
    Skeleton,
    SolveSettings,
    blocking_limits,
    feasible_swivel,
    limits_at_bound,
    solve,
    solve_limb,
    swivel_arcs,
)
from tests.fixtures import buss_y, translation


def _arm(limits: bool) -> Limb:
    lim = None
    if limits:
        r = np.radians
        lim = LimbLimits(
            shoulder=EulerLimits("XYZ", r((-90, -60, -90)), r((160, 60, 90))),
            elbow=(0.0, float(r(150))),
            wrist=EulerLimits("XYZ", r((-70, -30, -80)), r((70, 30, 80))),
        )
    return Limb(
        translation((0, 0.30, 0)),
        translation((0, 0.25, 0)),
        elbow_axis=(1, 0, 0),
        effector=translation((0, 0.08, 0)),
        limits=lim,
    )


FREE, LIMITED = _arm(False), _arm(True)
Y = buss_y().skeleton
POSE = PoseGoal((0.2, 0.3, 0.1), np.eye(3))
PARTIAL = PartialOrientationGoal((0.2, 0.3, 0.1), (0, 1, 0), (0, 0, 1))
AIM = AimGoal((0.3, 0.3, 0.3), (0, 1, 0))
TIP = PositionGoal((0.5, 1.5, 0.2), joint="effector_right")

#: Values that are never a valid number, vector or rotation.
BAD_VALUES: list[Any] = [
    math.nan,
    math.inf,
    -math.inf,
    1e300,
    "x",
    None,
    True,
    object(),
    [],
    np.zeros(0),
    np.zeros((2, 2)),
    np.full(3, np.nan),
    np.full((3, 3), np.inf),
    [1.0, "a", 2.0],
]


def _finite_outputs(value: Any, where: str) -> None:
    """Every float array/number reachable from ``value`` (dataclass fields, tuples) is
    free of NaN (inf only where it means "free", e.g. limits)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _finite_outputs(getattr(value, f.name), f"{where}.{f.name}")
        return
    if isinstance(value, tuple | list):
        for i, v in enumerate(value):
            _finite_outputs(v, f"{where}[{i}]")
        return
    if isinstance(value, float | np.floating):
        assert not math.isnan(value), where
        return
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        assert not np.isnan(value).any(), where


def _outcome(call: Callable[[], Any], name: str) -> str | None:
    """Run ``call``: None for a LimberError or a NaN-free result, else what went wrong."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = call()
    except LimberError:
        return None
    except Exception as exc:
        return f"{name}: {type(exc).__name__}: {str(exc)[:120]}"
    try:
        _finite_outputs(out, name)
    except AssertionError as exc:
        return f"NaN in {exc}"
    return None


def _limb_calls(bad: Any) -> dict[str, Callable[[], Any]]:
    """Every keyword of the limb entry points, one at a time, set to ``bad``."""
    calls: dict[str, Callable[[], Any]] = {}
    for limb_name, limb in (("free", FREE), ("limited", LIMITED)):
        for kw in ("swivel", "elbow_target", "wrist", "elbow_near", "strategy"):
            calls[f"solve_limb({limb_name}, pose/position, {kw}=bad)"] = lambda limb=limb, kw=kw: (
                solve_limb(
                    limb, POSE if kw != "wrist" else PositionGoal((0.2, 0.3, 0.1)), **{kw: bad}
                )
            )
        for kw in ("psi", "up", "wrist_target", "swivel", "elbow_target", "psi_strategy"):
            extra = {"psi_strategy": PsiStrategy.LOWEST_WRIST} if kw == "up" else {}
            if kw == "wrist_target":
                extra = {"psi_strategy": PsiStrategy.CLOSEST_WRIST}
            calls[f"solve_limb({limb_name}, partial, {kw}=bad)"] = (
                lambda limb=limb, kw=kw, extra=extra: solve_limb(
                    limb, PARTIAL, **{**extra, kw: bad}
                )
            )
        for kw in ("elbow", "wrist", "swivel", "strategy"):
            calls[f"solve_limb({limb_name}, aim, {kw}=bad)"] = lambda limb=limb, kw=kw: solve_limb(
                limb, AIM, **{kw: bad}
            )
        calls[f"solve_limb({limb_name}, goal=bad)"] = lambda limb=limb: solve_limb(limb, bad)
        calls[f"solve_limb(limb=bad, {limb_name} goal)"] = lambda: solve_limb(bad, POSE)
        calls[f"feasible_swivel({limb_name}, goal=bad)"] = lambda limb=limb: feasible_swivel(
            limb, bad
        )
        for kw in ("wrist", "psi", "elbow"):
            goal = {"wrist": PositionGoal((0.2, 0.3, 0.1)), "psi": PARTIAL, "elbow": AIM}[kw]
            calls[f"feasible_swivel({limb_name}, {kw}=bad)"] = lambda limb=limb, kw=kw, goal=goal: (
                feasible_swivel(limb, goal, **{kw: bad})
            )
            calls[f"blocking_limits({limb_name}, {kw}=bad)"] = lambda limb=limb, kw=kw, goal=goal: (
                blocking_limits(limb, goal, **{kw: bad})
            )
        calls[f"swivel_arcs({limb_name}, swivel=bad)"] = lambda limb=limb: swivel_arcs(
            limb, POSE, swivel=bad
        )
        calls[f"swivel_arcs({limb_name}, n=bad)"] = lambda limb=limb: swivel_arcs(limb, POSE, bad)
        calls[f"limits_at_bound({limb_name}, shoulder=bad)"] = lambda limb=limb: limits_at_bound(
            limb, bad, 0.5, np.eye(3)
        )
        calls[f"limits_at_bound({limb_name}, elbow=bad)"] = lambda limb=limb: limits_at_bound(
            limb, np.eye(3), bad, np.eye(3)
        )
    return calls


def _constructor_calls(bad: Any) -> dict[str, Callable[[], Any]]:
    return {
        "EulerLimits(lower=bad)": lambda: EulerLimits("XYZ", lower=bad),
        "EulerLimits(order=bad)": lambda: EulerLimits(bad),
        "LimbLimits(elbow=bad)": lambda: LimbLimits(elbow=bad),
        "LimbLimits(shoulder=bad)": lambda: LimbLimits(shoulder=bad),
        "Limb(a=bad)": lambda: Limb(bad, translation((0, 0.25, 0))),
        "Limb(elbow_axis=bad)": lambda: Limb(
            translation((0, 0.3, 0)), translation((0, 0.25, 0)), elbow_axis=bad
        ),
        "Limb(limits=bad)": lambda: Limb(
            translation((0, 0.3, 0)), translation((0, 0.25, 0)), (1, 0, 0), limits=bad
        ),
        "PositionGoal(bad)": lambda: PositionGoal(bad),
        "PositionGoal(weight=bad)": lambda: PositionGoal((0, 0, 0), weight=bad),
        "PositionGoal(priority=bad)": lambda: PositionGoal((0, 0, 0), priority=bad),
        "PositionGoal(joint=bad)": lambda: PositionGoal((0, 0, 0), joint=bad),
        "PoseGoal(rotation=bad)": lambda: PoseGoal((0, 0, 0), bad),
        "OrientationGoal(bad)": lambda: OrientationGoal(bad),
        "DirectionGoal(bad)": lambda: DirectionGoal(bad, (0, 0, 1)),
        "AimGoal(target=bad)": lambda: AimGoal(bad, (0, 1, 0)),
        "PartialOrientationGoal(axis=bad)": lambda: PartialOrientationGoal(
            (0, 0, 0), bad, (0, 0, 1)
        ),
        "Ball(lower=bad)": lambda: Ball("XYZ", bad),
        "Ball(locked=bad)": lambda: Ball(locked=bad),
        "Ball(order=bad)": lambda: Ball(bad),
        "Hinge(axis=bad)": lambda: Hinge(bad),
        "Hinge(lower=bad)": lambda: Hinge((0, 0, 1), bad),
        "Joint(offset=bad)": lambda: Joint("a", -1, bad),
        "Joint(parent=bad)": lambda: Joint("a", bad),
        "Joint(name=bad)": lambda: Joint(bad),
        "Joint(dofs=bad)": lambda: Joint("a", dofs=bad),
        "Skeleton(bad)": lambda: Skeleton(bad),
        "Skeleton([bad])": lambda: Skeleton([bad]),
        "SolveSettings(tolerance=bad)": lambda: SolveSettings(tolerance=bad),
        "SolveSettings(max_iterations=bad)": lambda: SolveSettings(max_iterations=bad),
        "SolveSettings(q_rest=bad)": lambda: SolveSettings(q_rest=bad),
    }


def _chain_calls(bad: Any) -> dict[str, Callable[[], Any]]:
    q0 = Y.zero()
    calls: dict[str, Callable[[], Any]] = {
        "solve(skeleton=bad)": lambda: solve(bad, [TIP], q0),
        "solve(goals=bad)": lambda: solve(Y, bad, q0),
        "solve(goals=[bad])": lambda: solve(Y, [bad], q0),
        "solve(q0=bad)": lambda: solve(Y, [TIP], bad),
        "solve(method=bad)": lambda: solve(Y, [TIP], q0, bad),
        "solve(settings=bad)": lambda: solve(Y, [TIP], q0, Method.DLS, bad),
        "Skeleton.forward(bad)": lambda: Y.forward(bad),
        "Skeleton.errors(q=bad)": lambda: Y.errors(bad, [TIP]),
        "Skeleton.errors(goals=bad)": lambda: Y.errors(q0, bad),
        "Skeleton.jacobian(goals=[bad])": lambda: Y.jacobian(q0, [bad]),
        "Skeleton.goal_errors(goals=bad)": lambda: Y.goal_errors(q0, bad),
        "Skeleton.joint_index(bad)": lambda: Y.joint_index(bad),
        "Skeleton.check_q(bad)": lambda: Y.check_q(bad),
        "Skeleton.clip(bad)": lambda: Y.clip(bad),
        "Skeleton.blocks(bad)": lambda: Y.blocks(bad),
        "Limb.forward(shoulder=bad)": lambda: LIMITED.forward(bad, 0.3, np.eye(3)),
        "Limb.forward(elbow=bad)": lambda: LIMITED.forward(np.eye(3), bad, np.eye(3)),
        "Limb.elbow_position(bad)": lambda: LIMITED.elbow_position(bad),
        "Limb.wrist_position(elbow=bad)": lambda: LIMITED.wrist_position(np.eye(3), bad),
        "EulerLimits.contains(bad)": lambda: EulerLimits("XYZ", (-1, -1, -1), (1, 1, 1)).contains(
            bad
        ),
        "LimbLimits.elbow_contains(bad)": lambda: LimbLimits(elbow=(0.0, 2.0)).elbow_contains(bad),
        "Limb.with_limits(bad)": lambda: LIMITED.with_limits(bad),
    }
    for m in Method:
        calls[f"solve(Y, {m.name}, target=bad)"] = lambda m=m: solve(
            Y, [PositionGoal(bad, joint="effector_right")], q0, m, SolveSettings(max_iterations=5)
        )
    return calls


@pytest.mark.parametrize("bad", BAD_VALUES, ids=lambda v: repr(v)[:24])
def test_every_public_function_rejects_or_answers_honestly(bad):
    calls = {**_limb_calls(bad), **_constructor_calls(bad), **_chain_calls(bad)}
    problems = [p for name, call in calls.items() if (p := _outcome(call, name)) is not None]
    assert not problems, "\n".join(problems)


def test_the_issue_cases_raise_limber_errors_naming_the_value():
    """The cases listed in issue 16, each a LimberError whose message names the value."""
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: EulerLimits("XYZ", lower=0.1, upper=(1, 1, 1)), "0.1"),
        (lambda: EulerLimits("XYZ", lower=("a", 0, 0)), "'a'"),
        (lambda: solve_limb(FREE, PARTIAL, psi="x"), "'x'"),
        (lambda: solve_limb(FREE, PARTIAL, psi_strategy=PsiStrategy.LOWEST_WRIST, up="x"), "'x'"),
        (lambda: solve_limb(FREE, AIM, elbow="x"), "'x'"),
        (lambda: solve_limb(FREE, AIM, wrist="x"), "'x'"),
        (lambda: solve_limb(FREE, AIM, swivel="x"), "'x'"),
        (lambda: solve_limb(LIMITED, POSE, strategy=lambda a: np.zeros(5)), "(5,)"),
        (lambda: Ball(locked=True), "True"),
        (lambda: Skeleton(None), "None"),
        (lambda: Skeleton(Joint("a")), "Joint"),
        (lambda: solve(None, [TIP], Y.zero()), "None"),
        (lambda: solve(Y, TIP, Y.zero()), "PositionGoal"),
        (lambda: solve(Y, [TIP, None], Y.zero()), "None"),
        (lambda: solve_limb(LIMITED, POSE, swivel=math.nan), "nan"),
        (lambda: solve_limb(LIMITED, PARTIAL, swivel=math.inf), "inf"),
        (lambda: solve_limb(LIMITED, AIM, swivel=math.nan), "nan"),
        # strings on both the partial and the aim path, free and limited limbs
        (lambda: solve_limb(LIMITED, PARTIAL, psi="x"), "'x'"),
        (
            lambda: solve_limb(LIMITED, PARTIAL, psi_strategy=PsiStrategy.LOWEST_WRIST, up="x"),
            "'x'",
        ),
        (lambda: solve_limb(FREE, PARTIAL, swivel="x"), "'x'"),
        (lambda: solve_limb(LIMITED, AIM, swivel="x"), "'x'"),
        (lambda: solve_limb(LIMITED, AIM, wrist="x"), "'x'"),
        (lambda: solve_limb(FREE, PARTIAL, elbow="x"), "elbow"),
        (lambda: solve_limb(FREE, AIM, psi="x"), "psi"),
        # NaN arrays (not only scalars) in the membership tests
        (lambda: EulerLimits("XYZ", (-1, -1, -1), (1, 1, 1)).contains(np.full(3, np.nan)), "nan"),
        (lambda: LimbLimits(elbow=(0.0, 2.0)).elbow_contains(np.array([np.nan])), "nan"),
        (lambda: LimbLimits().elbow_contains("x"), "'x'"),
        (lambda: EulerLimits("XYZ").contains(np.zeros(3), tol=math.nan), "nan"),
        (lambda: PositionGoal((1e160, 0, 0)), "1e+160"),
        (lambda: Limb(translation((0, 1e200, 0)), translation((0, 1e200, 0))), "e+200"),
    ]
    for call, text in cases:
        with pytest.raises(LimberError) as info:
            call()
        assert text in str(info.value), (text, str(info.value))
    up_batch = PartialOrientationGoal(np.full((3, 3), 0.2), (0, 1, 0), (0, 0, 1))
    with pytest.raises(LimberError, match="2 rows"):
        solve_limb(FREE, up_batch, psi_strategy=PsiStrategy.LOWEST_WRIST, up=np.ones((2, 3)))


def test_bool_joint_rejected_after_an_int_joint_solve():
    """The goal-plan cache keyed on the goal's joint, and True == 1 in Python."""
    solve(Y, [PositionGoal((1, 1, 0), joint=1)], Y.zero())
    with pytest.raises(InvalidGoalError, match="True"):
        solve(Y, [PositionGoal((1, 1, 0), joint=True)], Y.zero())


@pytest.mark.parametrize("limb", [FREE, LIMITED], ids=["free", "limited"])
def test_empty_batches_give_empty_solutions(limb):
    for goal in (
        PoseGoal(np.zeros((0, 3)), np.zeros((0, 3, 3))),
        PositionGoal(np.zeros((0, 3))),
    ):
        sol = solve_limb(limb, goal)
        assert np.shape(sol.shoulder) == (0, 3, 3) and np.shape(sol.reachable) == (0,)


def test_no_dof_skeleton_every_method_returns_unreached():
    sk = Skeleton([Joint("a"), Joint("b", 0, translation((0, 1, 0)), Fixed())])
    for m in Method:
        r = solve(sk, [PositionGoal((1, 1, 0), joint="b")], sk.zero(), m)
        assert not r.reached and r.error == pytest.approx(1.0)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    exponent=st.floats(0.0, 12.0),
    direction=st.tuples(*[st.floats(-1, 1)] * 3).filter(lambda v: np.linalg.norm(v) > 0.1),
)
def test_magnitudes_up_to_the_bound_give_finite_honest_results(exponent, direction):
    """Below MAX_COORDINATE (1e12 m) every solver and the limb solver return finite
    results whose reported error is the measured one; far goals are not reached."""
    d = np.asarray(direction) / np.linalg.norm(direction)
    target = 10.0**exponent * d
    for limb in (FREE, LIMITED):
        sol = solve_limb(limb, PoseGoal(target, np.eye(3)))
        _finite_outputs(sol, "solve_limb")
        fk = limb.forward(sol.shoulder, sol.elbow, sol.wrist)
        assert sol.position_error == pytest.approx(
            float(np.linalg.norm(fk[:3, 3] - target)), rel=1e-9, abs=1e-9
        )
        if exponent > 1.0:
            assert not sol.reachable
    for m in (Method.DLS, Method.JACOBIAN_TRANSPOSE, Method.CCD, Method.TASK_PRIORITY):
        g = [PositionGoal(target, joint="effector_right")]
        r = solve(Y, g, Y.zero(), m, SolveSettings(max_iterations=20))
        _finite_outputs(r, m.name)
        assert r.error == pytest.approx(float(Y.goal_errors(r.q, g).max()), rel=1e-12)
        if exponent > 1.0:
            assert not r.reached


def test_beyond_the_bound_is_an_invalid_goal():
    for value in (1.01e12, 1e154, 1e300):
        with pytest.raises(InvalidGoalError, match="1e\\+12"):
            PositionGoal((value, 0.0, 0.0))
        with pytest.raises(InvalidGoalError):
            AimGoal((0.0, 0.0, -value), (0, 1, 0))
    with pytest.raises(InvalidSkeletonError):
        Joint("far", -1, translation((0.0, 2e12, 0.0)))


@pytest.mark.parametrize("at", [0, 1, 2])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 2e12])
def test_one_float64_goal_point_is_checked_like_any_other(at, value):
    """A single float64 (3,) array takes the goals' scalar fast path: a non-finite or too
    large coordinate in any position is still an InvalidGoalError, and a rotation with a
    NaN anywhere is rejected."""
    p = np.zeros(3)
    p[at] = value
    with pytest.raises(InvalidGoalError):
        PositionGoal(p)
    with pytest.raises(InvalidGoalError):
        PoseGoal(p, np.eye(3))
    r = np.eye(3)
    r[at, (at + 1) % 3] = math.nan
    with pytest.raises(InvalidGoalError):
        PoseGoal(np.zeros(3), r)
    good = PoseGoal(np.array([0.1, 0.2, 0.3]), np.eye(3))
    assert good._n is None and good.weight == 1.0 and good.priority == 0
