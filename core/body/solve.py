"""Full-body IK: exact analytic limbs inside a numeric body (:func:`solve_body`).

The hybrid of Lee's lecture notes ("arms and legs allow analytic solutions; redundancy
can be parameterized by elbow circles; we can replace 7 dof for each limb by a single
elbow circle parameter; the numerical optimization can be done with fewer parameters")
and of Tolani, Goswami & Badler (2000) §4.2 ("once all the goals lie within the workspace
of the corresponding end effector, the inverse kinematics routines for individual
kinematic units … are invoked").

Unknowns of the numeric level (``x``): every DOF of the skeleton outside the *goaled*
limbs (a limb whose end joint carries exactly one PositionGoal / PoseGoal, and no goal on
its other joints or below its end), then one swivel φ per goaled limb. Its tasks, in
strict priority order (:class:`~core.chain.TaskPriorityStep`'s cascade, Ki & Sheen §5–7,
reused as it is; weights blend goals within a level):

* every goal not on a goaled limb, its usual residual and Jacobian
  (:meth:`~core.chain.Skeleton.evaluate`, the columns of ``x``);
* every goaled limb's *shell constraint*, at its goal's priority and weight: the goal's
  wrist centre (pose goals; the effector point for position goals) must lie at a
  distance from the shoulder in the limb's *true shell* ``[d_min, d_max]`` — the
  distances the elbow can make within its limits (Eq. 5: d²(θ4) = C + 2 r cos(θ4 − δ)),
  widened by :data:`_SHELL_SLACK` for rounding — with a hysteresis
  (:func:`_shell_target`): a goal inside it is met where it is (the limb reaches it
  exactly: a straight standing leg under a pinned pelvis is no conflict); a goal outside
  it by more than the margin ``m`` (:attr:`BodySettings.shell_margin` × limb length) is
  *pushed* to the shrunk shell ``[d_min + m, d_max − m]`` (the margin keeps a goal the
  body has to move off the boundary, where the limb's swivel sets thin out) and counts
  as met only once it lies there within the tolerance, after which the true shell
  applies again; a goal outside by less (a straight limb's float32 target, a held goal's
  second-order drift) is brought :data:`_DRIFT_INSET` × the length inside the true
  shell. Residual: the point's distance from that target (zero where met) — one row; in
  the warm path (no rest term) the vector along the shoulder–target line, three rows;
  Jacobian from the shoulder's position Jacobian. Within :data:`_BAND` × the length of
  the shrunk shell's boundary, and between the two shells, the distance is held (its
  row active at residual 0). The limbs' own tests read the same true shell (a goal in
  it without a feasible φ goes to the rescue below; one beyond it is out of reach);
* lowest, in the null space of all of them: the rest-pose / preferred-angle term
  √w (x_rest − x), the swivels' part pulling each φ to its preferred value. It is a
  secondary objective, converged loosely: once every goal is met (rows resumed from
  the warm path's trunk: within :data:`_NEAR` × the tolerance), a step that moves no
  unknown by more than :data:`_REST_STEP` ends its tail (which converges linearly, the
  goals' null space curving under it), after one more step without it that polishes
  the goals.

Each goaled limb is then solved in closed form by :func:`~core.limb.solve_limb` in the
shoulder frame the numeric level leaves (its goal exact whenever in reach, φ the feasible
swivel nearest the numeric φ, CLOSEST), and its joint angles are written back into ``q``
(the Euler family within the Ball limits, angles shifted by 2π into the linear ranges).
All errors are then measured by forward kinematics of the whole skeleton.

Limits inside the shell. A goal inside the shell can still be out of the limb's reach
*within its joint limits* from where the body put the shoulder (§3.2.4: no feasible φ —
a hand orientation the wrist cannot take from that forearm); the shell cannot see that.
After the numeric level each goaled limb's feasible swivel set is computed (closed form).
Rows where some limb has none, or where the numeric level did not settle (a conflict it
could not resolve), are finished by TASK_PRIORITY's loop over every joint (without its own
SLSQP finish: the body's follows), starting from the numeric result with each limb placed
in closed form where it has a feasible φ and as a *witness* where it has not (the limb
solved without limits at the one of :data:`_SAMPLES` swivels least outside its limits,
its angles clamped a little inside them); for rows with an infeasible limb, where that
leaves priority 0 unmet, from the start pose placed likewise. Rows whose limbs all have a
feasible φ (a conflict only) get a short pass, and none where the numeric result leaves
priority 0 unmet (beyond reach the pass did not meet it from there either). A level
still unmet then is finished by SLSQP (scipy) with the levels above as equality
constraints and the limits as bounds (one per row: a Python loop), since the clamping
loop of TASK_PRIORITY stops short of the bounded optimum. Its starts are the pass's
result, the start (its limbs placed as below) and the rest pose at the start's root (the
conflict's basins); each is scouted with :data:`_SCOUT` SLSQP iterations per level and
the best polished in full. A level already met is not minimised again; a level above
that SLSQP leaves off by more than the tolerance is restored by Gauss–Newton steps before
its candidate is judged; a level left unmet ends the polish (the levels below cannot take
it as an equality): below it, each level is minimised by Gauss–Newton over the DOFs that
move no goal above it (the neck and head under a conflict of the hands), so the levels
above stay exactly as they are. Such a row keeps its start, its limbs placed as below,
when the result is not lexicographically better by more than the tolerance +
:data:`_KEEP` × the error at some level (so a solve from its own answer gives the
answer). The limbs are then solved in closed form again, with the swivel whose elbow is
nearest the numeric one (§3.2.2); a limb whose closed form does not reach the goal keeps
its numeric angles (``limb_reached`` False).

Warm path. Every row is first solved *without* the rest term: the numeric level takes
minimum-norm steps from the start's trunk (the goals' rows only, so nothing moves in
their null space: on a warm start the body stays where the previous frame left it as
far as the goals allow), then the goaled limbs in closed form. A row whose goals are all
met there (measured by forward kinematics of its final pose, so the numeric level's
last, polishing step needs no evaluation of its own), every goaled limb reachable with a
feasible φ, is done (``iterations``: the warm path's). The other rows are solved as
described above, with the rest term; a row whose goals the warm path met (only a limb
without a feasible φ) starts that solve from the warm path's trunk, the others from the
start (``iterations``: both counted). So the rest pose shapes a solve only where keeping
the start's trunk does not work: on a cold start from the rest pose the warm path already
stays near it, on a warm start the body does not drift back to it frame by frame.
Deterministic per row (batched = one by one); the goaled limbs' own joints in the start
are still never read.

Batching: every array carries the rows (frames); the numeric level iterates all rows
together (rows that have finished are dropped), each limb's closed form is one batched
call (the feasible swivel sets of all goaled limbs one call), the whole-body pass is one
batched TASK_PRIORITY solve for the rows with an infeasible limb (each row's limbs placed
by its own pattern) and one for the rows with a conflict only. Python loops run over
iterations, priority levels, goals and limbs, and over rows only in the SLSQP finish.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import least_squares, minimize

from ..chain.joints import Free
from ..chain.loop import StepState, lexicographic_less
from ..chain.residuals import BlockKind, RowBlock
from ..chain.settings import SolveSettings, StopReason
from ..chain.skeleton import goal_tuple
from ..chain.steps.task_priority import TaskPriorityStep, budget
from ..errors import InvalidGoalError, InvalidInputError, ShapeMismatchError, format_value
from ..geometry.rotations import euler_to_matrix, matrix_to_euler_families
from ..geometry.vec3 import TAU, sum_squares, unit_rows, wrap
from ..goals import Goal, PoseGoal, PositionGoal, batch_size
from ..limb import Limb
from ..limb.feasible import feasible_intervals
from ..limb.model import family_violations
from ..limb.reach import pose_swivels
from .closed import (
    NEAR_STRAIGHT,
    STRAIGHT,
    Kernel,
    Local,
    closed_pose,
    euler_in_limits_one,
    into_range_one,
    sampled_poses,
    solve_all,
    straight_targets,
)
from .model import Body, BodySettings, BodySolution, plan_store, shell

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

#: Iterations without a lexicographic improvement of the goal levels before a row whose
#: goals are not all met stops (STALLED: a conflicting level at its constrained optimum).
_STALL = 10

#: Width (× limb length) of the band inside a limb's shell where its distance constraint
#: is active (held), so that lower levels cannot push the goal back and forth across it.
_BAND = 1e-3

#: Weight of the preferred-distance rows relative to ``rest_weight`` (m against rad).


#: Largest step (rad / m, any unknown) at which, with every goal met, the rest term
#: counts as converged: its tail (linear convergence in the goals' curved null space) is
#: cut there, after one step without the rest term that polishes the goals.
_REST_STEP = 3e-3

#: Goal error (× ``BodySettings.tolerance``) within which a row that started from a
#: trunk meeting the goals (the warm path's, re-centred by the rest term) ends the rest
#: term's tail like a row whose goals are met: each rest step disturbs the goals by its
#: second-order error (~1e-5 for steps of a few mrad), so "met" would wait for the
#: steps to shrink; the goal-only polishing steps that follow meet them (Newton from
#: ≤ 1e-5).
_NEAR = 10.0

#: Relative decrease of the objective that counts as progress.
_PROGRESS = 1e-6

#: Iterations without improvement after which a row whose goals are all met has
#: converged (the rest term at its optimum in the goals' null space).
_SETTLED = 3

#: Iteration budget (× ``BodySettings.max_iterations``) of the whole-body TASK_PRIORITY
#: solve (a conflicting lower level converges linearly there).
_WHOLE_BODY_ITERATIONS = 2

#: The same budget for rows whose limbs all have a feasible φ but whose numeric level
#: did not converge (a conflict between levels): a level the pass leaves unmet is
#: settled by the SLSQP finish, from the pass's result and from other starts (on the
#: pinned-feet draws the same optimum to 1e-6 m with 30 iterations as with 200, in less
#: than half the time).
_CONFLICT_ITERATIONS = 0.3

#: Tolerance (× ``BodySettings.tolerance``) of the numeric solve of a limb without a
#: feasible φ, so that its closed-form re-solve starts from within the goal.
_NUMERIC_LIMB_TOLERANCE = 1e-3


#: Rounding slack (× limb length) of a limb's true shell (:attr:`_Analytic.reach`): a goal
#: this far beyond it still counts as inside. A tenth of ``REACH_TOLERANCE``, so that the
#: limb's closed form reaches every goal inside exactly (distances computed along
#: different roads differ by ~1e-16 of the length; a straight rest-pose limb's goal sits
#: on the boundary).
_SHELL_SLACK = 1e-10


#: How far (× limb length) inside its true shell a goal that lies outside it by less than
#: the margin is brought (a straight limb's goal off by rounding — float32 targets — or
#: a held goal's second-order drift, e.g. a straight leg's ankle while the spine leans):
#: more than a Newton step's error from there, so one step puts it inside, and too little
#: to move a pin above the tolerance (pushed to the shrunk shell instead, a pelvis
#: pinned over straight legs would be pulled down by the margin).
_DRIFT_INSET = 1e-7

#: Swivel samples of a witness search.
_SAMPLES = 24

#: The witness search's swivels: :data:`_SAMPLES` evenly spaced over [−π, π).
_PHIS = np.linspace(-math.pi, math.pi, _SAMPLES, endpoint=False)
_PHIS.setflags(write=False)

#: How far inside its limits a witness's clamped angle is put (rad; at most a quarter of
#: the range).
_WITNESS_INSET = 0.02

#: Slack (rad / m) of :attr:`BodySolution.within_limits`.
LIMIT_SLACK = 1e-9


class _Reduced:
    """The numeric level's unknowns as the task-priority step sees a skeleton: their
    limits (swivels unlimited) and clipping."""

    def __init__(self, lower: FloatArray, upper: FloatArray) -> None:
        self.lower = lower
        self.upper = upper
        self.n_dofs = lower.shape[0]
        self.has_limits = bool(np.isfinite(lower).any() or np.isfinite(upper).any())

    def clip_unchecked(self, x: FloatArray) -> FloatArray:
        out: FloatArray = np.minimum(np.maximum(x, self.lower), self.upper)
        return out


@dataclass
class _Analytic:
    """One goaled limb: its index in ``Body.limbs``, the goal's index, the limb model
    (effector = the goal's point), the wrist held for position goals, the shell shrunk
    by the margin (``d_min``, ``d_max``: where a goal farther outside the true shell
    than the margin is pushed) and the true shell widened by :data:`_SHELL_SLACK`
    (``reach``: a goal inside it is met as it is)."""

    limb: int
    goal: int
    model: Limb
    wrist: FloatArray | None
    d_min: float
    d_max: float
    reach: tuple[float, float]

    @functools.cached_property
    def free(self) -> Limb:
        """The same limb without limits (the witnesses' solves; built when first needed)."""
        return self.model.with_limits(None)


def _into_range(a: FloatArray, lo: FloatArray, hi: FloatArray) -> FloatArray:
    """Angles ``a`` shifted by a multiple of 2π into [lo, hi] where one fits (else the
    shift leaving them nearest the range; unlimited entries stay)."""
    best_out = np.maximum(lo - a, 0.0) + np.maximum(a - hi, 0.0)
    if not best_out.any():  # all inside: no shift leaves an angle nearer its range
        return a.copy()
    best = a
    cands = a + _SHIFTS.reshape((4,) + (1,) * a.ndim)
    outs = np.maximum(lo - cands, 0.0) + np.maximum(cands - hi, 0.0)
    for c, out in zip(cands, outs, strict=True):  # the first shift that is better wins
        better = out < best_out - 1e-12
        best = np.where(better, c, best)
        best_out = np.where(better, out, best_out)
    return best


#: The 2π shifts :func:`_into_range` tries, in order.
_SHIFTS = np.array([k * TAU for k in (-2, -1, 1, 2)])
_SHIFTS.setflags(write=False)


def _euler_in_limits(rot: FloatArray, model_limits: Any, order: str) -> FloatArray:
    """(B, 3) Euler angles (``order``) of rotations (B, 3, 3): the family least outside
    the limits (Tolani §3.2.4's two families)."""
    fam = matrix_to_euler_families(rot, order, check=False)  # (B, 2, 3)
    if model_limits is None:
        return fam[:, 0]
    pick = np.argmin(family_violations(fam, model_limits), axis=1)
    out: FloatArray = fam[np.arange(fam.shape[0]), pick]
    return out


def _plan(
    body: Body,
    goals: tuple[Goal, ...],
    settings: BodySettings,
    numeric_limbs: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """Which limbs are solved analytically (not those in ``numeric_limbs``), the numeric
    unknowns and the preferred configuration."""
    sk = body.skeleton
    gj = [sk.goal_joint(g, i) for i, g in enumerate(goals)]
    anc = sk.ancestors
    analytic: list[_Analytic] = []
    limb_goal: dict[int, int] = {}
    q_rest = _rest(body, settings)
    for k, (u, _, e) in enumerate(body.joints):
        on_end = [i for i, j in enumerate(gj) if j == e]
        inside = [i for i, j in enumerate(gj) if anc[u, j] and j != e]
        if (
            k in numeric_limbs
            or len(on_end) != 1
            or inside
            or not isinstance(goals[on_end[0]], PositionGoal | PoseGoal)
        ):
            continue
        gi = on_end[0]
        goal = goals[gi]
        model = body.models[k]
        wrist = None
        if isinstance(goal, PositionGoal):
            point = np.asarray(goal.point, dtype=np.float64)
            if point.ndim != 1:
                raise InvalidGoalError(
                    f"goals[{gi}]: a PositionGoal on limb {body.limbs[k].name!r}'s end joint "
                    f"needs one point (3,) for all rows, got shape {point.shape}"
                )
            end_ball = sk.joints[e].dofs
            wrist = euler_to_matrix(q_rest[sk.dof_slices[e]], end_ball.order)  # type: ignore[union-attr]
            if np.any(point):
                eff = np.eye(4)
                eff[:3, 3] = point
                model = Limb(
                    model.a,
                    model.b,
                    model.elbow_axis,
                    eff,
                    model.limits,
                    model.swivel_reference,
                )
        d_min, d_max = body.shells[k] if wrist is None else shell(model, wrist)
        slack = _SHELL_SLACK * model.length
        reach = (d_min - slack, d_max + slack)
        margin = settings.shell_margin * model.length
        if d_max - d_min > 2.0 * margin:
            d_min, d_max = d_min + margin, d_max - margin
        else:
            d_min = d_max = 0.5 * (d_min + d_max)
        analytic.append(_Analytic(k, gi, model, wrist, d_min, d_max, reach))
        limb_goal[gi] = k
    in_limb = np.zeros(sk.n_dofs, dtype=bool)
    for an in analytic:
        for j in body.joints[an.limb]:
            in_limb[sk.dof_slices[j]] = True
    free = np.flatnonzero(~in_limb)
    numeric = [i for i in range(len(goals)) if i not in limb_goal]
    # each goaled limb's preferred swivel (BodySettings.swivel, default 0)
    pref = np.array([(settings.swivel or {}).get(body.limbs[an.limb].name, 0.0) for an in analytic])
    return {"analytic": analytic, "free": free, "numeric": numeric, "q_rest": q_rest, "pref": pref}


#: The settings of a solve given none (BodySettings is frozen: one instance serves all).
_DEFAULT_SETTINGS = BodySettings()

#: Plans :func:`_cached_plan` keeps per Body (goal structures × settings).
_PLANS_KEPT = 8


def _cached_plan(body: Body, goals: tuple[Goal, ...], settings: BodySettings) -> dict[str, Any]:
    """:func:`_plan`, kept on ``body`` per goal structure and settings values (the goals'
    types, joints, priorities, weights and PositionGoal points; every BodySettings
    field): a solve per frame with new goal objects of the same structure reuses it,
    with the numeric level's constants (:func:`_numeric_constants`). At most
    :data:`_PLANS_KEPT` plans, the oldest dropped first."""
    key = (_goals_key(goals), _settings_key(settings))
    plans = plan_store(body)
    plan = plans.get(key)
    if plan is None:
        plan = _plan(body, goals, settings)
        if len(plans) >= _PLANS_KEPT:
            # (another thread solving on the same Body may change the store meanwhile:
            # then nothing is dropped this time)
            try:
                plans.pop(next(iter(plans)), None)
            except (RuntimeError, StopIteration):
                pass
        plans[key] = plan
    return plan


def _goals_key(goals: tuple[Goal, ...]) -> tuple[Any, ...]:
    """What :func:`_plan` and :func:`_numeric_constants` read of the goals (not their
    targets)."""
    out: list[Any] = []
    for g in goals:
        item: tuple[Any, ...] = (type(g), g.joint, g.priority, g.weight)
        if isinstance(g, PositionGoal):
            point = np.asarray(g.point)
            item += (point.shape, point.tobytes())
        out.append(item)
    return tuple(out)


def _settings_key(settings: BodySettings) -> tuple[Any, ...]:
    """Every field of ``settings`` as hashable values (arrays by shape and bytes)."""
    out: list[Any] = []
    for f in dataclasses.fields(settings):
        v = getattr(settings, f.name)
        if f.name == "q_rest" and v is not None:
            a = np.asarray(v, dtype=np.float64)
            v = (a.shape, a.tobytes())
        elif f.name == "swivel" and v is not None:
            v = tuple(sorted((str(k), float(a)) for k, a in v.items()))
        out.append(v)
    return tuple(out)


def _rest(body: Body, settings: BodySettings) -> FloatArray:
    sk = body.skeleton
    if settings.q_rest is None:
        return sk.clip_unchecked(np.zeros(sk.n_dofs))
    qr = np.asarray(settings.q_rest, dtype=np.float64)
    if qr.shape != (sk.n_dofs,) or not np.all(np.isfinite(qr)):
        raise InvalidInputError(
            f"BodySettings.q_rest must be finite with shape ({sk.n_dofs},), got "
            f"{format_value(settings.q_rest)}"
        )
    return qr


def solve_body(
    body: Body,
    goals: list[Goal] | tuple[Goal, ...],
    q0: ArrayLike,
    settings: BodySettings | None = None,
) -> BodySolution:
    """Solve a whole body: analytic limbs inside a strict-priority numeric body (module
    docstring; Lee's hybrid, Tolani et al. 2000 §4.2, Ki & Sheen §5–7).

    Args:
        body: the :class:`Body`.
        goals: :mod:`core.goals` goals with ``joint=`` (a joint of the body's skeleton),
            ``weight`` (blend within a priority level) and ``priority`` (0 first; a
            reachable level is met whatever the levels below ask). Targets in the
            world frame; batched targets (leading axis N) give a batched solution.
        q0: (n_dofs,) or (N, n_dofs) start configuration (rad; m for Free translations):
            the numeric level starts there (warm start); a single q0 is shared by
            batched goals. The goaled limbs' own joints in q0 are not used (their solve
            does not depend on the start). Rows are first solved without the rest term
            (minimum-norm steps from q0's trunk; module docstring, "Warm path"): where
            that meets every goal with feasible limbs, ``settings.rest_weight`` and
            ``settings.q_rest`` do not act, so the rest pose is not converged on warm
            frames.
        settings: :class:`BodySettings` (default ``BodySettings()``).

    Returns:
        :class:`BodySolution`, with every error measured by forward kinematics of the
        returned ``q``.

    Raises:
        InvalidInputError: ``body`` not a Body, bad ``q0`` or settings.
        InvalidGoalError: malformed goals, a goal on an unknown joint.
        ShapeMismatchError: batch sizes that disagree.
    """
    if not isinstance(body, Body):
        raise InvalidInputError(f"body must be a Body, got {format_value(body)}")
    if settings is None:
        settings = _DEFAULT_SETTINGS
    if not isinstance(settings, BodySettings):
        raise InvalidInputError(f"settings must be BodySettings, got {format_value(settings)}")
    sk = body.skeleton
    goals = goal_tuple(goals)
    sizes = {n for n in map(batch_size, goals) if n is not None}
    if len(sizes) > 1:
        raise ShapeMismatchError(f"batched goals must share one batch size, got {sizes}")
    q_in, batched = sk.check_q(q0, "q0")
    if sizes:
        (n_rows,) = sizes
        if not batched:
            q_in = np.repeat(q_in, n_rows, axis=0)
        elif q_in.shape[0] != n_rows:
            raise ShapeMismatchError(
                f"goals are batched with N = {n_rows} but q0 has {q_in.shape[0]} rows"
            )
        batched = True
    plan = _cached_plan(body, goals, settings)
    q, swivel, feasible, limb_ok, iterations, reasons, gerr = _warm_first(
        body, goals, plan, q_in, settings
    )
    reached = gerr <= settings.tolerance
    level = _level_errors(sk, list(goals), q, gerr)
    within = np.all((q >= sk.lower - LIMIT_SLACK) & (q <= sk.upper + LIMIT_SLACK), axis=1)
    all_met = reached.all(axis=1)
    reasons = _reasons(
        all_met,
        StopReason.REACHED,
        _reasons(
            reasons == StopReason.MAX_ITERATIONS, StopReason.MAX_ITERATIONS, StopReason.STALLED
        ),
    )
    if batched:
        return BodySolution(
            q, reached, gerr, level, swivel, feasible, limb_ok, within, iterations, reasons
        )
    return BodySolution(
        q[0],
        reached[0],
        gerr[0],
        level[0],
        swivel[0],
        tuple(
            None if f is None else tuple((float(a), float(b)) for a, b in f[0] if not math.isnan(a))
            for f in feasible
        ),
        limb_ok[0],
        bool(within[0]),
        int(iterations[0]),
        reasons[0],
    )


def _warm_first(
    body: Body,
    goals: tuple[Goal, ...],
    plan: dict[str, Any],
    q_in: FloatArray,
    settings: BodySettings,
) -> tuple[Any, ...]:
    """The warm path, then :func:`_solve_rows` for the rows it does not settle (module
    docstring, "Warm path"): the numeric level without the rest term (minimum-norm
    steps from the start's trunk) and each goaled limb in closed form; a row whose goals
    are all met there (measured by forward kinematics), every goaled limb reachable with
    a feasible φ, is done. Returns q, swivels, feasible intervals, limbs reached,
    iterations, reasons and the goals' errors (rows of ``q_in``)."""
    sk = body.skeleton
    if settings.rest_weight == 0.0 or not settings.warm_path:
        out = _solve_rows(body, goals, plan, q_in, settings)
        return (*out, sk.goal_errors(out[0], goals))
    q = sk.clip_unchecked(q_in) if settings.use_limits else q_in.copy()
    big = q.shape[0]
    free: IntArray = plan["free"]
    every = np.arange(big)
    x_start = _start_x(body, plan, q, settings)
    x, iterations, reasons = _numeric(
        body,
        goals,
        plan,
        q,
        x_start,
        every,
        _warm_settings(plan, settings),
        measured=True,
    )
    q[:, free] = x[:, : free.size]
    swivel, feasible, limb_ok, bad = _limbs(
        body, goals, plan, q, x[:, free.size :], every, give_up=True
    )
    goaled = [an.limb for an in plan["analytic"]]
    done = (reasons == StopReason.REACHED) & ~bad.any(axis=1) & limb_ok[:, goaled].all(axis=1)
    # the goals by forward kinematics of those rows' final pose (their last numeric step
    # was not evaluated: _numeric, ``measured``)
    gerr = np.full((big, len(goals)), np.nan)
    ok_rows = np.flatnonzero(done)
    if ok_rows.size:
        gerr[ok_rows] = sk.goal_errors(q[ok_rows], _goals_at(goals, ok_rows, big))
        done[ok_rows] = np.all(gerr[ok_rows] <= settings.tolerance, axis=1)
    rest = np.flatnonzero(~done)
    if rest.size:
        # rows whose goals the warm path met (a limb without a feasible φ) start the
        # solve with the rest term from its trunk, the others from the start
        x0 = x_start[rest]
        met = reasons[rest] == StopReason.REACHED
        x0[met, : free.size] = x[rest[met], : free.size]
        sub = _goals_at(goals, rest, big)
        part = _solve_rows(body, sub, plan, q_in[rest], settings, x0, met)
        gerr_rest = sk.goal_errors(part[0], sub)
        if rest.size == big:  # (the limbs may have given up early: nothing to merge)
            return (*part[:4], iterations + part[4], part[5], gerr_rest)
        gerr[rest] = gerr_rest
        q[rest] = part[0]
        swivel[rest] = part[1]
        limb_ok[rest] = part[3]
        iterations[rest] += part[4]
        reasons[rest] = part[5]
        feasible = tuple(
            None if f is None else _scatter_intervals(f, rest, g)
            for f, g in zip(feasible, part[2], strict=True)
        )
    return q, swivel, feasible, limb_ok, iterations, reasons, gerr


def _warm_settings(plan: dict[str, Any], settings: BodySettings) -> BodySettings:
    """``settings`` without the rest term (the warm path's), kept in ``plan`` (a plan is
    kept per every settings value: :func:`_cached_plan`)."""
    warm: BodySettings | None = plan.get("warm_settings")
    if warm is None:
        warm = plan["warm_settings"] = dataclasses.replace(settings, rest_weight=0.0)
    return warm


def _goals_at(goals: tuple[Goal, ...], rows: IntArray, big: int) -> tuple[Goal, ...]:
    """The goals cut to ``rows`` of their ``big`` rows (as they are for all rows)."""
    return goals if rows.size == big else tuple(_goal_rows(g, rows) for g in goals)


def _start_x(body: Body, plan: dict[str, Any], q: FloatArray, settings: BodySettings) -> FloatArray:
    """The numeric level's unknowns at the start ``q``: the free DOFs, then each goaled
    limb's preferred swivel (:attr:`BodySettings.swivel`, default 0)."""
    pref: FloatArray = plan["pref"]
    start = np.broadcast_to(pref, (q.shape[0], pref.size))
    return np.concatenate([q[:, plan["free"]], start], axis=1)


def _solve_rows(
    body: Body,
    goals: tuple[Goal, ...] | list[Goal],
    plan: dict[str, Any],
    q_in: FloatArray,
    settings: BodySettings,
    x0: FloatArray | None = None,
    resumed: NDArray[np.bool_] | None = None,
) -> tuple[Any, ...]:
    """The numeric level with the rest term, the limbs, and the whole-body rescue
    (module docstring) for the rows of ``q_in`` (the start; the goals cut to them), the
    numeric level starting from ``x0`` (default: the start's unknowns; ``resumed``: the
    rows whose ``x0`` met the goals, see :func:`_numeric`). Returns q, swivels, feasible
    intervals, limbs reached, iterations and reasons."""
    goals = tuple(goals)
    sk = body.skeleton
    q = sk.clip_unchecked(q_in) if settings.use_limits else q_in.copy()
    q_start = q.copy()
    big = q.shape[0]
    free: IntArray = plan["free"]
    x = _start_x(body, plan, q, settings) if x0 is None else x0
    every = np.arange(big)
    x, iterations, reasons = _numeric(body, goals, plan, q, x, every, settings, resumed=resumed)
    q[:, free] = x[:, : free.size]
    # each goaled limb in closed form where the body put its shoulder; limbs without a
    # feasible φ there are solved numerically from a witness for those rows (module
    # docstring)
    swivel, feasible, limb_ok, bad = _limbs(body, goals, plan, q, x[:, free.size :], every)
    # ... and rows where the numeric level did not converge (a conflict it could not
    # settle; strict priority is then TASK_PRIORITY's over every joint)
    rows_any = np.flatnonzero(bad.any(axis=1) | (reasons != StopReason.REACHED))
    if rows_any.size:
        conflict: list[IntArray] = []  # the rows finished by SLSQP (a level unmet)
        # one batched pass for the rows with an infeasible limb, one for the rows with a
        # conflict only (their budgets differ); each row's limbs placed by its own pattern
        with_bad = bad[rows_any].any(axis=1)
        for group, infeasible in ((with_bad, True), (~with_bad, False)):
            rows = rows_any[group]
            if not rows.size:
                continue
            pat = bad[rows]
            swiv = x[rows, free.size :]
            # from where the numeric level left the body, then (rows not reached) from
            # the start's body; the limbs placed as _whole_body says
            if infeasible:
                res = _whole_body(
                    body,
                    goals,
                    plan,
                    q[rows],
                    swiv,
                    pat,
                    rows,
                    settings,
                    _WHOLE_BODY_ITERATIONS,
                    placed=True,
                )
            else:
                res = _conflict_pass(body, goals, plan, q[rows], swiv, pat, rows, settings)
            # (a conflict's rows skip it: the polish below also starts from the start)
            again = ~res.level_reached[:, 0] & infeasible
            if again.any():
                sub = rows[again]
                alt = _whole_body(
                    body,
                    goals,
                    plan,
                    q_start[sub],
                    swiv[again],
                    pat[again],
                    sub,
                    settings,
                    _WHOLE_BODY_ITERATIONS,
                )
                take = np.flatnonzero(again)[
                    _level_better(alt.level_error, res.level_error[again], settings.tolerance)
                ]
                pick = np.isin(np.flatnonzero(again), take)
                for name in ("q", "iterations", "reached", "converged", "level_reached"):
                    getattr(res, name)[take] = getattr(alt, name)[pick]
            lower = ~res.level_reached.all(axis=1)
            if lower.any():
                sub_goals = [_goal_rows(g, rows[lower]) for g in goals]
                conflict.append(rows[lower])
                # from the pass's result, from the start (its limbs placed) and from the
                # rest pose (the conflict may have another basin there): each start
                # scouted with a short polish, the best one polished in full
                placed = _placed_start(body, goals, plan, q_start[rows[lower]], rows[lower])
                best = _lexicographic_polish(sk, sub_goals, res.q[lower], settings, _SCOUT)
                for start in (placed[0], _rest_start(body, plan, q_start[rows[lower]])):
                    alt = _lexicographic_polish(sk, sub_goals, start, settings, _SCOUT)
                    better = _level_better(
                        _level_errors(sk, sub_goals, alt),
                        _level_errors(sk, sub_goals, best),
                        settings.tolerance,
                    )
                    best = np.where(better[:, None], alt, best)
                res.q[lower] = _lexicographic_polish(sk, sub_goals, best, settings)
            q[rows] = res.q
            iterations[rows] += res.iterations
            reasons[rows] = _reasons(res.converged, StopReason.STALLED, StopReason.MAX_ITERATIONS)
        # the limbs of those rows again, in closed form from the whole-body pose with φ
        # nearest its elbow
        sub_q = q[rows_any]
        sw, fs_any, ok_any, _ = _limbs(body, goals, plan, sub_q, None, rows_any)
        q[rows_any] = sub_q
        swivel[rows_any] = sw
        limb_ok[rows_any] = ok_any
        feasible = tuple(
            None if f is None else _scatter_intervals(f, rows_any, g)
            for f, g in zip(feasible, fs_any, strict=True)
        )
        # a start the result does not clearly improve on is kept (a solve from its own
        # answer is a fixed point)
        if conflict:
            cand = np.sort(np.concatenate(conflict))
            placed = _placed_start(body, goals, plan, q_start[cand], cand)
            keep = _keep_start(sk, goals, placed[0], q[cand], cand, settings)
            rows = cand[keep]
            if rows.size:
                q[rows] = placed[0][keep]
                swivel[rows] = placed[1][keep]
                limb_ok[rows] = placed[3][keep]
                feasible = tuple(
                    None if f is None else _scatter_intervals(f, rows, g[keep])
                    for f, g in zip(feasible, placed[2], strict=True)
                )
                reasons[rows] = StopReason.STALLED
    return q, swivel, feasible, limb_ok, iterations, reasons


#: Relative margin (of the larger error) by which a level's error must improve on the
#: start's for a solve to leave its start (:func:`_keep_start`).
_KEEP = 1e-6


def _bend_swivels(
    body: Body, an: _Analytic, q: FloatArray, rows: NDArray[np.bool_], pref: float
) -> FloatArray:
    """(B,) the preferred swivel ``pref``, and on ``rows`` the swivel of the limb's pose
    in ``q`` (:func:`core.pose_swivels`: the side a nearly straight limb bends to; ``pref``
    where it has none)."""
    out = np.full(q.shape[0], pref)
    if rows.any():
        phi = pose_swivels(an.model, *body.limb_pose(an.limb, q[rows]))
        out[rows] = np.where(np.isnan(phi), pref, phi)
    return out


def _placed_start(
    body: Body, goals: tuple[Goal, ...], plan: dict[str, Any], q_start: FloatArray, rows: IntArray
) -> tuple[Any, ...]:
    """The start ``q_start`` with its goaled limbs placed as the solve places them at the
    end (closed form, φ nearest the start's elbow; a straight limb's φ the preferred
    one): q, swivels, feasible intervals, limbs reached (``rows``: their indices in the
    goals' batch)."""
    cand = q_start.copy()
    swivel, feasible, ok, _ = _limbs(body, goals, plan, cand, None, rows)
    return cand, swivel, feasible, ok


def _keep_start(
    sk: Any,
    goals: tuple[Goal, ...],
    start: FloatArray,
    q: FloatArray,
    rows: IntArray,
    settings: BodySettings,
) -> NDArray[np.bool_]:
    """Rows whose result ``q`` leaves a level unmet and is not clearly better
    (:func:`_clearly_better`) than the placed start ``start`` (:func:`_placed_start`;
    ``rows``: their indices in the goals' batch). A start outside the limits
    (``use_limits``) is never kept."""
    sub = [_goal_rows(g, rows) for g in goals]
    new, old = _level_errors(sk, sub, q), _level_errors(sk, sub, start)
    tol = settings.tolerance
    keep: NDArray[np.bool_] = ~_clearly_better(new, old, tol) & np.any(new > tol, axis=1)
    if settings.use_limits:  # (a limb without a feasible φ may leave its limits)
        keep &= np.all((start >= sk.lower - LIMIT_SLACK) & (start <= sk.upper + LIMIT_SLACK), 1)
    return keep


def _clearly_better(new: FloatArray, old: FloatArray, tol: float) -> NDArray[np.bool_]:
    """(B,) whether the per-level errors ``new`` (B, L) are lexicographically better than
    ``old``, level 0 first: a level met (≤ ``tol``) by both counts as equal, others as
    equal within ``tol`` + :data:`_KEEP` × the larger error; the first level that
    differs by more decides."""
    a, b = np.where(new <= tol, 0.0, new), np.where(old <= tol, 0.0, old)
    undecided = np.ones(new.shape[0], dtype=bool)
    better = np.zeros(new.shape[0], dtype=bool)
    for k in range(a.shape[1]):
        apart = np.abs(a[:, k] - b[:, k]) > tol + _KEEP * np.maximum(a[:, k], b[:, k])
        better |= undecided & apart & (a[:, k] < b[:, k])
        undecided &= ~apart
    return better


def _rest_start(body: Body, plan: dict[str, Any], q: FloatArray) -> FloatArray:
    """The rest pose (rows like ``q``) with every Free joint (the root) where ``q`` has
    it: the body's preferred shape at the start's place."""
    sk = body.skeleton
    out = np.repeat(plan["q_rest"][None], q.shape[0], axis=0)
    for j, joint in enumerate(sk.joints):
        if isinstance(joint.dofs, Free):
            out[:, sk.dof_slices[j]] = q[:, sk.dof_slices[j]]
    return out


def _level_better(a: FloatArray, b: FloatArray, tolerance: float) -> NDArray[np.bool_]:
    """(B,) whether the per-level errors ``a`` (B, L) are lexicographically better than
    ``b``, a level met by both (error ≤ ``tolerance``) counting as equal, so that the
    first level either leaves unmet decides."""
    key_a = np.where(a <= tolerance, 0.0, a)
    key_b = np.where(b <= tolerance, 0.0, b)
    return lexicographic_less(key_a, key_b, 1.0)[1]


def _scatter_intervals(full: FloatArray, rows: IntArray, part: FloatArray) -> FloatArray:
    """(B, M, 2) NaN-padded intervals ``full`` with the rows ``rows`` replaced by
    ``part`` (R, M', 2)."""
    width = max(full.shape[1], part.shape[1])
    out = np.full((full.shape[0], width, 2), np.nan)
    out[:, : full.shape[1]] = full
    out[rows] = np.nan
    out[rows, : part.shape[1]] = part
    return out


def _goal_rows(goal: Goal, rows: IntArray) -> Goal:
    """``goal`` with its batched targets cut to ``rows`` (shared ones as they are)."""
    names = _batched(goal)
    if not names:
        return goal
    cut: dict[str, Any] = {n: np.asarray(getattr(goal, n))[rows] for n in names}
    return dataclasses.replace(goal, **cut)


def _reasons(cond: Any, yes: Any, no: Any) -> NDArray[np.object_]:
    """An object array of StopReason: ``yes`` where ``cond``, else ``no`` (a StopReason or
    an object array of them)."""
    out = np.empty(np.shape(cond), dtype=object)
    out[...] = no
    out[np.asarray(cond, dtype=bool)] = yes if isinstance(yes, StopReason) else yes[cond]
    return out


def _shoulder_frame(
    body: Body, an: _Analytic, q: FloatArray, kin: Any = None
) -> tuple[FloatArray, FloatArray]:
    """The transpose of the limb's shoulder-frame rotation (B, 3, 3) and every joint's
    origin (B, J, 3) at ``q`` (``kin``: the skeleton's kinematics at ``q`` if known)."""
    sk = body.skeleton
    rot, org, _, _ = sk.kinematics(q) if kin is None else kin
    u = body.joints[an.limb][0]
    pu = int(sk.parents[u])
    off = np.asarray(sk.joints[u].offset)[:3, :3]
    frt = np.swapaxes((rot[:, pu] if pu >= 0 else np.eye(3)) @ off, -1, -2)
    return frt, org


def _shoulder_goals(
    body: Body,
    goals: tuple[Goal, ...],
    an: _Analytic,
    q: FloatArray,
    rows: IntArray,
    kin: Any = None,
) -> Local:
    """The limb's goal in its shoulder frame ``G_parent(upper) · offset_upper`` at ``q``
    (batched over the rows of q; ``rows``: their indices in the goals' batch; ``kin`` as
    for :func:`_shoulder_frame`)."""
    frt, org = _shoulder_frame(body, an, q, kin)
    u = body.joints[an.limb][0]
    goal = goals[an.goal]
    pos = np.asarray(goal.position)  # type: ignore[union-attr]
    pos = pos if pos.ndim == 1 else pos[rows]
    p_l = (frt @ (pos - org[:, u])[..., None])[..., 0]
    if isinstance(goal, PoseGoal):
        rg = np.asarray(goal.rotation)
        return Local(p_l, frt @ (rg if rg.ndim == 2 else rg[rows]))
    return Local(p_l, None)


def _limb_angles(
    body: Body, an: _Analytic, shoulder: FloatArray, elbow: FloatArray, wrist: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The skeleton's q entries (B, 3), (B, 1), (B, 3) of a limb's R1, θ4, R2: the Euler
    family least outside each Ball's limits, shifted by 2π into the linear ranges."""
    sk = body.skeleton
    u, lo, e = body.joints[an.limb]
    lim = an.model.limits
    s_u, s_l, s_e = sk.dof_slices[u], sk.dof_slices[lo], sk.dof_slices[e]
    order_u: str = sk.joints[u].dofs.order  # type: ignore[union-attr]
    order_e: str = sk.joints[e].dofs.order  # type: ignore[union-attr]
    if shoulder.shape[0] == 1:  # one row: on floats
        lower, upper = sk.lower.tolist(), sk.upper.tolist()
        rows = (
            (euler_in_limits_one(shoulder[0], None if lim is None else lim.shoulder, order_u), s_u),
            ([float(elbow[0])], s_l),
            (euler_in_limits_one(wrist[0], None if lim is None else lim.wrist, order_e), s_e),
        )
        a_u, a_l, a_e = (np.array([into_range_one(a, lower[s], upper[s])]) for a, s in rows)
        return a_u, a_l, a_e
    a_u = _into_range(
        _euler_in_limits(shoulder, None if lim is None else lim.shoulder, order_u),
        sk.lower[s_u],
        sk.upper[s_u],
    )
    a_l = _into_range(np.asarray(elbow)[:, None], sk.lower[s_l], sk.upper[s_l])
    a_e = _into_range(
        _euler_in_limits(wrist, None if lim is None else lim.wrist, order_e),
        sk.lower[s_e],
        sk.upper[s_e],
    )
    return a_u, a_l, a_e


def _lexicographic_polish(
    sk: Any,
    goals: list[Goal],
    q: FloatArray,
    settings: BodySettings,
    iterations: int | None = None,
) -> FloatArray:
    """Rows with a level not met: each level minimised in turn (‖e_k‖², SLSQP, scipy)
    with the levels above as equality constraints and the joint limits as bounds, from
    ``q`` — the bounded optimum that TASK_PRIORITY's clamping loop does not always reach
    (a conflicting lower level, or priority 0 left short where limits bind). SLSQP's
    iterates meet the equalities only in the limit: where it stops with a level above
    off by more than the tolerance (its iteration limit on a slowly converging
    conflict), :func:`_restore` brings that level back first. Loops over the rows in
    Python (one SLSQP per row and level, one skeleton evaluation per point it visits); a
    result that still breaks a level above, or does not lower its own level's error, is
    discarded. A level met (every goal within the tolerance) is skipped: any point of its
    solution set would "lower" its error by float noise, and SLSQP's wandering there
    would move the start of the levels below. A level left unmet ends the row's polish:
    the levels below would take its residual as equalities they cannot meet (their
    candidates were never accepted); in a full polish they are minimised by
    :func:`_free_polish` instead. ``iterations``: SLSQP's limit per level (a scouted
    start); default :data:`_SLSQP_ITERATIONS`, :data:`_LOWEST` for the lowest level."""
    prios = sorted({g.priority for g in goals})
    bounds = list(zip(sk.lower, sk.upper, strict=True)) if settings.use_limits else None
    out = q.copy()
    for i in range(q.shape[0]):
        row_goals = tuple(
            dataclasses.replace(r, **_first_row(r))
            for r in (_goal_rows(g, np.array([i])) for g in goals)
        )
        at = _evaluation_cache(sk, row_goals)
        x = out[i]
        for k in range(len(prios)):
            members = [j for j, g in enumerate(row_goals) if g.priority == prios[k]]
            if np.all(at(x).goal_error[0, members] <= settings.tolerance):
                continue
            # SLSQP sees this level and the levels above only (the goals below cost
            # evaluations it never reads)
            upto = tuple(g for g in row_goals if g.priority <= prios[k])
            at_k = at if len(upto) == len(row_goals) else _evaluation_cache(sk, upto)
            blocks = at_k(x).blocks
            rk = _rows_of(blocks, lambda p, k=k: p == prios[k])
            above = _rows_of(blocks, lambda p, k=k: p < prios[k])
            above_goals = [j for j, g in enumerate(upto) if g.priority < prios[k]]

            def fun(v: FloatArray, rk: IntArray = rk, at_k: Any = at_k) -> float:
                e = at_k(v, jacobian=False).e[0, rk]
                return 0.5 * float(e @ e)

            def grad(v: FloatArray, rk: IntArray = rk, at_k: Any = at_k) -> FloatArray:
                ev = at_k(v)
                assert ev.J is not None
                g: FloatArray = -ev.J[0, rk].T @ ev.e[0, rk]
                return g

            with warnings.catch_warnings():  # SLSQP's own clip into the bounds
                warnings.filterwarnings("ignore", message="Values in x were outside bounds")
                limit = iterations or (_SLSQP_ITERATIONS if k < len(prios) - 1 else _LOWEST)
                res = _slsqp(at_k, fun, grad, x, bounds, above, limit)
            cand = np.clip(res, sk.lower, sk.upper) if bounds else res
            if above.size:
                cand = _restore(sk, at_k, cand, above, above_goals, settings)
            if (
                not above.size
                or np.all(
                    at_k(cand, jacobian=False).goal_error[0, above_goals] <= settings.tolerance
                )
            ) and fun(cand) < fun(x):
                x = cand
            if np.any(at(x, jacobian=False).goal_error[0, members] > settings.tolerance):
                # the levels below would take this unmet level as equalities; only the
                # DOFs that move no goal above them are theirs (full polish only)
                if iterations is None:
                    x = _free_polish(sk, at, x, row_goals, k, settings)
                break
        out[i] = x
    return out


#: Evaluations per level of :func:`_free_polish`'s bounded least squares.
_FREE_EVALUATIONS = 50


def _free_polish(
    sk: Any, at: Any, x: FloatArray, goals: tuple[Goal, ...], k0: int, settings: BodySettings
) -> FloatArray:
    """One row's levels below level ``k0`` (left unmet at its constrained optimum), each
    minimised in turn over the DOFs that move no goal of a level above it (no ancestor
    joint of any such goal: the neck and head beneath a conflict of the hands and feet),
    within their limits: scipy's bounded least squares (``trf``, tolerances 1e-12, at most
    :data:`_FREE_EVALUATIONS` evaluations), its result taken only when it lowers the
    level's ‖e‖². The levels above cannot change, so a strict priority holds exactly.
    (SLSQP cannot take an unmet level as an equality, and the levels below it are
    otherwise left as the polish of the unmet level leaves them.)"""
    prios = sorted({g.priority for g in goals})
    blocks = at(x, jacobian=False).blocks  # (the row blocks only: no Jacobian)
    moves = _moved_goals(sk, goals)
    for k in range(k0 + 1, len(prios)):
        members = [j for j, g in enumerate(goals) if g.priority == prios[k]]
        above = [j for j, g in enumerate(goals) if g.priority < prios[k]]
        dofs = np.flatnonzero(~moves[:, above].any(axis=1) & moves[:, members].any(axis=1))
        ev = at(x, jacobian=False)
        if not dofs.size or np.all(ev.goal_error[0, members] <= settings.tolerance):
            continue
        rk = _rows_of(blocks, lambda p, k=k: p == prios[k])
        f = float(ev.e[0, rk] @ ev.e[0, rk])
        base = x.copy()
        # (the level's own goals only: no goal of another level reads these DOFs' change)
        at_k = _evaluation_cache(sk, tuple(goals[j] for j in members))

        def point(z: FloatArray, base: FloatArray = base, dofs: IntArray = dofs) -> FloatArray:
            out = base.copy()
            out[dofs] = z
            return out

        def residual(z: FloatArray, at_k: Any = at_k, point: Any = point) -> FloatArray:
            r: FloatArray = at_k(point(z), jacobian=False).e[0]
            return r

        def jacobian(
            z: FloatArray, at_k: Any = at_k, dofs: IntArray = dofs, point: Any = point
        ) -> FloatArray:
            j: FloatArray = -at_k(point(z)).J[0][:, dofs]
            return j

        bounds = (sk.lower[dofs], sk.upper[dofs]) if settings.use_limits else (-np.inf, np.inf)
        res = least_squares(
            residual,
            x[dofs],
            jac=jacobian,
            bounds=bounds,
            method="trf",
            ftol=1e-12,
            xtol=1e-12,
            gtol=1e-12,
            max_nfev=_FREE_EVALUATIONS,
        )
        cand = point(np.clip(res.x, *bounds) if settings.use_limits else res.x)
        e = at(cand, jacobian=False).e[0, rk]
        if float(e @ e) < f:
            x = cand
    return x


def _moved_goals(sk: Any, goals: tuple[Goal, ...]) -> NDArray[np.bool_]:
    """(n_dofs, G) whether a DOF moves a goal: its joint is the goal's joint or one of
    its ancestors."""
    out = np.zeros((sk.n_dofs, len(goals)), dtype=bool)
    for gi, goal in enumerate(goals):
        j = sk.goal_joint(goal, gi)
        while j >= 0:
            out[sk.dof_slices[j], gi] = True
            j = int(sk.parents[j])
    return out


def _rows_of(blocks: tuple[RowBlock, ...], keep: Any) -> IntArray:
    """The residual rows of the blocks whose priority passes ``keep``."""
    rows = [np.arange(b.rows.start, b.rows.stop) for b in blocks if keep(b.priority)]
    return np.concatenate(rows) if rows else np.zeros(0, dtype=np.intp)


def _evaluation_cache(sk: Any, goals: tuple[Goal, ...]) -> Any:
    """``at(x)``: the skeleton's evaluation (residual, Jacobian, goal errors) of one
    row's ``goals`` at ``x`` (n,), the last point remembered (SLSQP asks for the
    objective, the constraints and their derivatives at the same point). ``at(x,
    jacobian=False)``: the residual and goal errors only (J may be None): SLSQP's line
    search asks for values at many points where it never asks for a derivative, and
    the residual does not depend on whether the Jacobian is computed with it. The
    gathered targets and forward-kinematics buffers are kept across points (the
    evaluation's ``memo``; its ``frames`` are not used)."""
    last: list[Any] = [None, None]
    memo: dict[str, Any] = {}
    # whether values are computed with the Jacobian: SLSQP asks for the derivatives at
    # every point it accepts, and on a level whose line search takes its first step (a
    # conflict of the hands: ~1.07 values per iteration) nearly every value point is
    # one; a value computed with it that was not asked for turns this off again
    eager = [False, False]  # [on, the last evaluation's J asked for]

    def at(x: FloatArray, jacobian: bool = True) -> Any:
        x = np.asarray(x, dtype=np.float64)
        key = x.tobytes()
        if last[0] == key:
            if not jacobian or last[1].J is not None:
                eager[1] = eager[1] or jacobian
                return last[1]
            eager[0] = True  # a value point accepted: its Jacobian asked for
        elif last[1] is not None and last[1].J is not None and not eager[1]:
            eager[0] = False  # a value with the Jacobian nobody asked for
        with_j = jacobian or eager[0]
        last[0], last[1] = key, sk.evaluate(x[None], goals, jacobian=with_j, memo=memo)
        eager[1] = jacobian
        return last[1]

    return at


#: Gauss–Newton steps of :func:`_restore`.
_RESTORE_STEPS = 5


def _restore(
    sk: Any,
    at: Any,
    x: FloatArray,
    rows: IntArray,
    members: list[int],
    settings: BodySettings,
) -> FloatArray:
    """``x`` moved back onto the levels above (residual rows ``rows``, goals
    ``members``) where they are off by more than the tolerance: minimum-norm
    Gauss–Newton steps on those rows alone, DOFs at a limit that a step pushes outward
    held (at most :data:`_RESTORE_STEPS`). SLSQP leaves its last iterate there when it
    stops on its iteration limit; the step is as small as that violation (≲ 1e-4), so
    the level being minimised moves by as little."""
    for _ in range(_RESTORE_STEPS):
        if np.all(at(x, jacobian=False).goal_error[0, members] <= 0.1 * settings.tolerance):
            break
        ev = at(x)
        e, jac = ev.e[0, rows], ev.J[0, rows]
        free = np.ones(x.shape[0], dtype=bool)
        for _ in range(2):
            dx = np.zeros_like(x)
            dx[free] = np.linalg.lstsq(jac[:, free], e, rcond=1e-10)[0]
            if not settings.use_limits:
                break
            out = ((x + dx < sk.lower) & (x <= sk.lower)) | ((x + dx > sk.upper) & (x >= sk.upper))
            if not (out & free).any():
                break
            free &= ~out
        x = np.clip(x + dx, sk.lower, sk.upper) if settings.use_limits else x + dx
    return x


def _level_errors(
    sk: Any, goals: list[Goal], q: FloatArray, gerr: FloatArray | None = None
) -> FloatArray:
    """(B, L) the largest goal error of each priority level at ``q`` (B, n) (``gerr``:
    the goals' errors there if known)."""
    if gerr is None:
        gerr = sk.goal_errors(q, goals)
    prios = sorted({g.priority for g in goals})
    return np.stack(
        [gerr[:, [i for i, g in enumerate(goals) if g.priority == p]].max(axis=1) for p in prios],
        axis=1,
    )


#: SLSQP's iteration limit per row and level of the full polish, for a level with levels
#: below it. Such a level converges to ``ftol`` in tens to a few hundred iterations (a
#: hand beyond reach under the feet's equalities in 150–250); stopped earlier, a solve
#: from its own answer improves it further (by 3e-6 of its error after 100–150
#: iterations on a Mixamo rig, and that solve turned a straight leg 180° about itself).
_SLSQP_ITERATIONS = 500

#: The same for the lowest level. A conflicting lowest level (a hips pin behind a hand
#: that reaches, under the feet's and the hand's equalities) does not converge to
#: ``ftol`` at all: after 100 iterations it stands within a few millimetres of where 500
#: leave it, at a fifth of the cost, and further iterations crawl along a flat valley
#: that a solve from its own answer would crawl on (docs/decisions.md).
_LOWEST = 100

#: SLSQP's iteration limit per level when a start is only scouted (:func:`_solve_rows`):
#: the conflict's starts are compared after this many, and the best is polished in full.
#: With 20, pinned-feet draws picked a basin 40 % worse; a start's basin can show later
#: than 40 too (a draw 0.7 % farther than 100 iterations from every start find), but 100
#: broke a solve from its own answer (docs/decisions.md).
_SCOUT = 40


def _slsqp(
    at: Any, fun: Any, grad: Any, x: FloatArray, bounds: Any, above: IntArray, iterations: int
) -> FloatArray:
    """SLSQP (scipy) on ``fun`` (its gradient ``grad``) from ``x`` within ``bounds``,
    with the residual rows ``above`` of the evaluation ``at`` (if any) as equality
    constraints, at most ``iterations``; returns its last iterate. Values and
    derivatives apart: SLSQP asks for the derivatives only at the points its line search
    accepts."""
    constraints = [
        {
            "type": "eq",
            "fun": lambda v: at(v, jacobian=False).e[0, above],
            "jac": lambda v: -at(v).J[0, above],
        }
    ]
    res = minimize(
        fun,
        x,
        jac=grad,
        bounds=bounds,
        constraints=constraints if above.size else [],
        method="SLSQP",
        options={"maxiter": iterations, "ftol": 1e-14},
    )
    out: FloatArray = np.asarray(res.x)
    return out


def _first_row(goal: Goal) -> dict[str, Any]:
    """The batched fields of a one-row goal, unbatched."""
    return {f: np.asarray(getattr(goal, f))[0] for f in _batched(goal)}


def _batched(goal: Goal) -> list[str]:
    """The names of a goal's batched array fields."""
    if batch_size(goal) is None:
        return []
    return [
        f.name
        for f in dataclasses.fields(goal)
        if f.init
        and f.name not in ("joint", "weight", "priority")
        and np.ndim(getattr(goal, f.name)) in (2, 3)
        and np.shape(getattr(goal, f.name))[0] == batch_size(goal)
    ]


def _whole_body(
    body: Body,
    goals: tuple[Goal, ...],
    plan: dict[str, Any],
    q: FloatArray,
    swivel: FloatArray,
    bad: NDArray[np.bool_],
    rows: IntArray,
    settings: BodySettings,
    budget: float,
    placed: bool = False,
) -> Any:
    """TASK_PRIORITY's loop over every joint (:class:`_LoopOnly`) for the rows ``rows``,
    from ``q`` with each goaled limb placed at its shoulder frame there: in closed form
    (swivel ``swivel``) where it has a feasible φ, as a witness where not (``bad`` (R, A):
    per row and analytic limb), so that the start does not depend on the limbs' own
    joints (``placed``: ``q`` holds the closed forms already); at most ``budget`` ×
    ``settings.max_iterations`` iterations."""
    qr = q.copy()
    # the shoulder frames at q, for every witness (no goaled limb's joints move another
    # limb's shoulder)
    kin = body.skeleton.kinematics(qr) if bad.any(axis=0).sum() > 1 else None
    for k, an in enumerate(plan["analytic"]):
        wit = bad[:, k]
        if wit.any():
            kin_k = None if kin is None else tuple(a[wit] for a in kin)
            qr[wit] = _witness(body, goals, an, qr[wit], rows[wit], kin_k)
        if not placed and not wit.all():
            keep = ~wit
            sub = qr[keep]
            _place(body, goals, an, sub, swivel[keep, k], rows[keep])
            qr[keep] = sub
    return _LoopOnly().run(
        body.skeleton,
        [_goal_rows(g, rows) for g in goals],
        qr,
        SolveSettings(
            tolerance=_NUMERIC_LIMB_TOLERANCE * settings.tolerance,
            use_limits=settings.use_limits,
            max_iterations=max(1, round(budget * settings.max_iterations)),
        ),
    )


def _conflict_pass(
    body: Body,
    goals: tuple[Goal, ...],
    plan: dict[str, Any],
    q: FloatArray,
    swivel: FloatArray,
    bad: NDArray[np.bool_],
    rows: IntArray,
    settings: BodySettings,
) -> Any:
    """:func:`_whole_body` (budget :data:`_CONFLICT_ITERATIONS`) for the rows ``rows``
    whose numeric level did not settle although every goaled limb has a feasible φ (a
    conflict), from their numeric pose ``q`` (limbs placed) — except rows where that pose
    leaves priority 0 unmet: they keep it as it is (q, 0 iterations, STALLED). Beyond
    reach the pass did not meet priority 0 from there either (20–30 iterations, the feet
    0.3–5 mm off) and its result was never the polish's best start; the polish, which
    follows on every row with a level unmet, meets priority 0 from it first."""
    sk = body.skeleton
    level = _level_errors(sk, [_goal_rows(g, rows) for g in goals], q)
    met = level[:, 0] <= settings.tolerance
    out = _Pass(
        q.copy(),
        np.zeros(rows.size, dtype=np.int_),
        np.ones(rows.size, dtype=bool),
        level <= settings.tolerance,
    )
    if met.any():
        res = _whole_body(
            body,
            goals,
            plan,
            q[met],
            swivel[met],
            bad[met],
            rows[met],
            settings,
            _CONFLICT_ITERATIONS,
            placed=True,
        )
        out.q[met], out.iterations[met] = res.q, res.iterations
        out.converged[met], out.level_reached[met] = res.converged, res.level_reached
    return out


@dataclass
class _Pass:
    """What :func:`_solve_rows` reads of a whole-body pass: q, iterations, whether it
    stopped before its iteration limit, and each level reached, per row."""

    q: FloatArray
    iterations: IntArray
    converged: NDArray[np.bool_]
    level_reached: NDArray[np.bool_]


class _LoopOnly(TaskPriorityStep):
    """TASK_PRIORITY's loop without its lower-level SLSQP finish: a row the whole-body
    pass leaves with a level unmet goes to :func:`_lexicographic_polish`, which starts
    from the loop's result and from the start as that finish does (and from the rest
    pose); the finish would polish the same level from the same points first."""

    def finish(self, *args: Any) -> None:
        return None


def _place(
    body: Body,
    goals: tuple[Goal, ...],
    an: _Analytic,
    q: FloatArray,
    swivel: FloatArray,
    rows: IntArray,
) -> None:
    """Write the limb's closed-form solution (swivel ``swivel``) at the shoulder frames of
    ``q`` into ``q`` (rows: their indices in the goals' batch)."""
    sk = body.skeleton
    local = _shoulder_goals(body, goals, an, q, rows)
    wrist = an.wrist if local.rotation is None else None
    sol = solve_all(an.model, local, wrist, swivel=swivel)
    angles = _limb_angles(body, an, sol.shoulder, sol.elbow, sol.wrist)
    for j, a in zip(body.joints[an.limb], angles, strict=True):
        q[:, sk.dof_slices[j]] = a


def _witness(
    body: Body,
    goals: tuple[Goal, ...],
    an: _Analytic,
    q: FloatArray,
    rows: IntArray,
    kin: Any = None,
) -> FloatArray:
    """A within-limits configuration of the limb near its goal (module docstring): q with
    the limb's joints set to it. Batched over the rows of q: the unlimited limb at
    :data:`_SAMPLES` swivels per row (one kernel pass; ``kin``: the skeleton's
    kinematics at ``q`` if known)."""
    sk = body.skeleton
    b = q.shape[0]
    local = _shoulder_goals(body, goals, an, q, rows, kin)
    shoulder, elbow, wrist = sampled_poses(an.free, local, an.wrist, _PHIS)
    a_u, a_l, a_e = _limb_angles(body, an, shoulder, elbow, wrist)
    u, lo, e = body.joints[an.limb]
    slices = [sk.dof_slices[j] for j in (u, lo, e)]
    angles = (a_u, a_l, a_e)
    outside = sum(
        (np.maximum(sk.lower[s] - a, 0.0) + np.maximum(a - sk.upper[s], 0.0)).sum(axis=1)
        for s, a in zip(slices, angles, strict=True)
    ).reshape(b, _SAMPLES)
    pick = np.arange(b) * _SAMPLES + np.argmin(outside, axis=1)
    out = q.copy()
    for s, a in zip(slices, angles, strict=True):
        lo_s, hi_s = sk.lower[s], sk.upper[s]
        inset = np.minimum(_WITNESS_INSET, 0.25 * (hi_s - lo_s))
        out[:, s] = np.clip(a[pick], lo_s + inset, hi_s - inset)
    return out


def _numeric(
    body: Body,
    goals: tuple[Goal, ...],
    plan: dict[str, Any],
    q: FloatArray,
    x: FloatArray,
    row_ids: IntArray,
    settings: BodySettings,
    measured: bool = False,
    resumed: NDArray[np.bool_] | None = None,
) -> tuple[FloatArray, NDArray[np.int_], NDArray[np.object_]]:
    """The numeric level (module docstring) for the rows of ``q`` / ``x`` (``row_ids``:
    their indices in the goals' batch). Returns x, iterations, reasons. ``measured``: the
    caller measures the goals by forward kinematics afterwards, so the polishing step
    (a Newton step from goals already met) ends a row without an evaluation of its own
    (reason REACHED). ``resumed`` (rows): rows whose ``x`` met the goals (the warm
    path's trunk, re-centred by the rest term): their rest term's tail is cut once the
    goals are within :data:`_NEAR` × the tolerance, not only once they are met."""
    sk = body.skeleton
    free: IntArray = plan["free"]
    analytic: list[_Analytic] = plan["analytic"]
    numeric: list[int] = plan["numeric"]
    nf, na = free.size, len(analytic)
    big = q.shape[0]
    x = x.copy()
    iterations = np.zeros(big, dtype=np.int_)
    reasons = np.full(big, StopReason.REACHED, dtype=object)
    nx = nf + na
    if nx == 0:
        return x, iterations, reasons
    # the goals evaluated by the skeleton: the numeric goals, then one PositionGoal at each
    # goaled limb's shoulder (its residual is −shoulder, its Jacobian ∂shoulder/∂q); the
    # row blocks and constants below depend on the goals' structure only
    (
        aux,
        blocks,
        n_num,
        m_num,
        m_aux,
        m_goal,
        scalar,
        sqw_k,
        d_lo,
        d_hi,
        reach_lo,
        reach_hi,
        inset,
        band,
        lower,
        upper,
        reduced,
        st,
        met_layout,
    ) = _numeric_constants(body, goals, plan, settings)
    eval_goals = tuple([goals[i] for i in numeric] + aux)
    # the rest term (lowest level) is not a row block: its step is the exact projection
    # in `cascade`, its value ‖√w (x_rest − x)‖² computed by `evaluate`
    rest_w = settings.rest_weight
    n_rest = nx if rest_w > 0.0 else 0
    q_rest = plan["q_rest"]
    pref = x[:, nf:]
    targets = [np.asarray(goals[an.goal].position, dtype=np.float64) for an in analytic]  # type: ignore[union-attr]
    eye3 = _EYE3
    batched_goals = any(batch_size(g) is not None for g in goals)
    # the skeleton's evaluation buffers (shared targets); the frames in this thread's kept
    # workspace (only e, J and the goal errors, new arrays, are read of an evaluation)
    memo: dict[str, Any] = (
        {} if batched_goals else {"rows": None, "frames": sk.kinematic_plan.shared_workspace(big)}
    )

    hi_band, lo_band = d_hi - band, d_lo + band  # (the shell's bands where it is held)
    # per row and goaled limb: its goal is being pushed to the shrunk shell (it lay
    # farther outside its true shell than the margin and has not reached the shrunk
    # shell yet; every evaluated point is taken, so this follows the iterate)
    pushed = np.zeros((big, na), dtype=bool)
    pushing = [False]  # (pushed.any())
    shells = (d_lo, d_hi, reach_lo, reach_hi, inset)
    shared = targets and all(t.ndim == 1 for t in targets)
    shared_targets = np.stack(targets) if shared else None

    def evaluate(xs: FloatArray, rows: IntArray) -> tuple[FloatArray, ...]:
        """e (b, m_goal) and J (b, m_goal, nx) of the goal rows, the goal errors and the
        rest term's ‖√w (x_rest − x)‖² (b,)."""
        b = xs.shape[0]
        qf = q[rows]
        qf[:, free] = xs[:, :nf]
        ev = sk.evaluate(
            qf,
            eval_goals,
            rows=row_ids[rows] if batched_goals else None,
            memo=memo,
            columns=free,  # the other DOFs are the goaled limbs'
        )
        assert ev.J is not None
        e = np.zeros((b, m_goal))
        jac = np.zeros((b, m_goal, nx))
        e[:, :m_num] = ev.e[:, :m_num]
        jac[:, :m_num, :nf] = ev.J[:, :m_num]
        gerr = np.zeros((b, n_num + na))
        gerr[:, :n_num] = ev.goal_error[:, :n_num]
        if na:
            s = -ev.e[:, m_num:m_aux].reshape(b, na, 3)
            if shared_targets is None:
                tg = np.stack([t if t.ndim == 1 else t[row_ids[rows]] for t in targets], axis=-2)
            else:
                tg = shared_targets
            v = tg - s
            d = np.sqrt(np.add.reduce(v * v, axis=-1))
            # the distance each goal is held at (c = d: met where it is) or pushed to
            c, push = _shell_target(
                d, pushed[rows] if pushing[0] else None, shells, settings.tolerance
            )
            if pushing[0] or c is not d:
                pushed[rows] = push
                pushing[0] = bool(pushed.any())
            near = (d > hi_band) | (d < lo_band)
            safe = np.where(d > 0.0, d, 1.0)
            u = v / safe[..., None]
            out_by = d - c
            gerr[:, n_num:] = np.abs(out_by)
            if scalar:
                # the distance d − c, its row uᵀ ∂s/∂q (−∂d/∂q, as the residuals' rows),
                # held within ``band`` inside the shell too. (The vector's Jacobian below
                # has, outside the shell, two tangential rows ∝ 1 − c/d that hold the
                # shoulder's slide along the sphere: that slide would be missing from
                # the rest step's null space, and the rest term's tail zig-zags.)
                e[:, m_num:m_goal] = sqw_k * out_by
                if near.any():
                    js = ev.J[:, m_num:m_aux].reshape(b, na, 3, nf)
                    jd = np.einsum("bki,bkin->bkn", u, js)
                    jac[:, m_num:m_goal, :nf] = np.where(near[..., None], sqw_k[:, None] * jd, 0.0)
            else:
                err = out_by[..., None] * u
                e[:, m_num:m_goal] = (sqw_k[:, None] * err).reshape(b, 3 * na)
                if near.any():  # (else every row of the constraints' Jacobian is 0)
                    # ∂(s + c u)/∂s = I − (c/d)(I − u uᵀ) outside the shell (u uᵀ on its
                    # boundary); inside, within ``band`` of it, u uᵀ too: the distance is
                    # held (an active inequality); deeper inside it is inactive (0)
                    js = ev.J[:, m_num:m_aux].reshape(b, na, 3, nf)
                    tang = eye3 - u[..., :, None] * u[..., None, :]
                    dd = eye3 - (c / safe)[..., None, None] * tang
                    dd = np.where(near[..., None, None], dd, 0.0)
                    jl = dd @ js  # (b, na, 3, nf)
                    jac[:, m_num:m_goal, :nf] = (sqw_k[:, None, None] * jl).reshape(b, 3 * na, nf)
        rest_sq = np.zeros(b)
        if n_rest:
            diff = np.concatenate([q_rest[free] - xs[:, :nf], pref[rows] - xs[:, nf:]], axis=1)
            diff[:, nf:] = wrap(diff[:, nf:])
            rest_sq = rest_w * np.sum(diff * diff, axis=1)
        return e, jac, gerr, rest_sq

    step = TaskPriorityStep()
    step.tolerance = settings.tolerance
    blocks_t = tuple(blocks)  # the cascade's
    goal_blocks = blocks_t
    tol2 = settings.tolerance**2

    def objective(e: FloatArray, rest_sq: FloatArray) -> FloatArray:
        """(b, L + 1): per goal level 0 when met else ‖e_k‖² (TaskPriorityStep's), then
        the rest term's ‖e‖² — compared lexicographically."""
        if met_layout is not None:  # one goal level of short blocks tiling e's rows
            starts, limit = met_layout
            met1 = np.all(np.add.reduceat(e * e, starts, axis=1) <= limit, axis=1)
            out = np.empty((e.shape[0], 2))
            out[:, 0] = np.where(met1, 0.0, sum_squares(e))
            out[:, 1] = rest_sq
            return out
        og = step.objective(e, goal_blocks)
        if og.ndim == 1:  # one goal level: TaskPriorityStep gives ‖e‖², 0 when met here
            met = np.all(
                [np.sum(e[:, b.rows] ** 2, axis=1) <= tol2 * b.weight for b in goal_blocks],
                axis=0,
            )
            og = np.where(met, 0.0, og)[:, None]
        return np.concatenate([og, rest_sq[:, None]], axis=1)

    x_rest_all = (  # (the rest term's target; none in the warm path)
        np.concatenate([np.broadcast_to(q_rest[free], (big, nf)), pref], axis=1) if n_rest else None
    )

    def cascade(
        state: StepState, j_all: FloatArray, xa: FloatArray, held: NDArray[np.bool_]
    ) -> FloatArray:
        """Δx: the goal levels by TaskPriorityStep's cascade, then the rest pose by the
        exact projection onto their null space (its rows are √w·I: the least-squares step
        of that last level is P (x_rest − x − Δx))"""
        dq, _, inverses = step.cascade(
            state, j_all, np.zeros_like(xa), None, kappa_all[state.rows], exact=True
        )
        if not n_rest:
            return dq
        assert x_rest_all is not None
        r = x_rest_all[state.rows] - xa - dq
        r[:, nf:] = wrap(r[:, nf:])
        # rows polishing their goals: no rest step; held DOFs do not move
        r *= ~(held | polish[state.rows, None])
        # P r with P = I − Σ_k V_kᵀ V_k (each level's kept right singular vectors)
        delta = r.copy()
        for _, _, gain, vt in inverses:
            vk = vt * (gain > 0.0)[:, :, None]
            delta -= (np.swapaxes(vk, -1, -2) @ (vk @ r[..., None]))[..., 0]
        delta *= ~held
        out: FloatArray = dq + budget(dq, delta, settings.max_step)[:, None] * delta
        return out

    # a DOF at (within 1e-12 of) a limit that a step takes beyond it by more than 1e-12
    lo_out, lo_at, hi_out, hi_at = lower - 1e-12, lower + 1e-12, upper + 1e-12, upper - 1e-12
    x = reduced.clip_unchecked(x)
    act = np.arange(big)
    kappa_all = np.full(big, step.RESIDUAL_DAMPING)
    polish = np.zeros(big, dtype=bool)
    # rows whose rest-term tail may be cut with the goals near (``resumed``)
    near_rows = resumed if n_rest and resumed is not None and resumed.any() else None
    near_tol = _NEAR * settings.tolerance
    cur = evaluate(x, act)
    now = objective(cur[0], cur[3])
    stall = np.zeros(big, dtype=np.int_)
    for it in range(settings.max_iterations):
        xa = x[act]
        e, jac, gerr, _ = cur
        state = StepState(
            q=xa,
            e=e,
            J=jac,
            goal_error=gerr,
            previous_e=e,
            blocks=blocks_t,
            rows=act,
            iteration=it,
            skeleton=reduced,  # type: ignore[arg-type]
            goals=eval_goals,
            settings=st,
            evaluate=functools.partial(evaluate, rows=act),  # type: ignore[arg-type]
        )
        held = np.zeros(xa.shape, dtype=bool)
        dx = cascade(state, jac, xa, held)
        if reduced.has_limits and settings.use_limits:
            # a DOF at a limit that the step pushes outward is held, the rest re-solved
            # (only the rows that hold a new DOF: the others' steps stay as they are)
            todo: IntArray | None = None  # (None: every row)
            for _ in range(2):
                xt, dt = (xa, dx) if todo is None else (xa[todo], dx[todo])
                xd = xt + dt
                out = ((xd < lo_out) & (xt <= lo_at)) | ((xd > hi_out) & (xt >= hi_at))
                new = (out & ~(held if todo is None else held[todo])).any(axis=1)
                if not new.any():
                    break
                todo = np.flatnonzero(new) if todo is None else todo[new]
                held[todo] |= out[new]
                ht = held[todo]
                dx[todo] = cascade(
                    _rows_state(state, todo, evaluate), jac[todo] * ~ht[:, None, :], xa[todo], ht
                )
        xn = reduced.clip_unchecked(xa + dx) if settings.use_limits else xa + dx
        fin = polish[act] if measured else None
        if fin is not None and fin.any():
            x[act[fin]] = xn[fin]
            iterations[act[fin]] += 1
            keep = ~fin
            act, xa, xn, now = act[keep], xa[keep], xn[keep], now[keep]
            if not act.size:
                break
        cand = evaluate(xn, act)
        if act.size == 1:  # one row (a warm frame): the same decisions on Python scalars
            x[act] = xn
            iterations[act] += 1
            obj = objective(cand[0], cand[3])
            met_one = bool(np.all(cand[2] <= settings.tolerance))
            if _settle_one(
                int(act[0]),
                float(np.max(np.abs(xn - xa))),
                met_one,
                met_one
                or (
                    near_rows is not None
                    and bool(near_rows[act[0]])
                    and bool(np.all(cand[2] <= near_tol))
                ),
                obj[0].tolist(),
                now[0].tolist(),
                stall,
                polish,
                reasons,
                settings.step_tolerance,
            ):
                act = act[:0]
                break
            cur, now = cand, obj
            continue
        moved = np.max(np.abs(xn - xa), axis=1)
        x[act] = xn
        iterations[act] += 1
        met = np.all(cand[2] <= settings.tolerance, axis=1)
        obj = objective(cand[0], cand[3])
        near = met
        if near_rows is not None:
            near = met | (near_rows[act] & np.all(cand[2] <= near_tol, axis=1))
        keep = _settle_rows(
            act, moved, met, near, obj, now, stall, polish, reasons, settings.step_tolerance
        )
        act = act[keep]
        if not act.size:
            break
        cur = tuple(a[keep] for a in cand)
        now = obj[keep]
    reasons[act] = StopReason.MAX_ITERATIONS
    return x, iterations, reasons


def _shell_target(
    d: FloatArray,
    was_pushed: NDArray[np.bool_] | None,
    shells: tuple[FloatArray, ...],
    tolerance: float,
) -> tuple[FloatArray, NDArray[np.bool_]]:
    """The shell's hysteresis (module docstring) for goals at distances ``d`` (B, A)
    from their shoulders: the distance each is held at (``d`` itself where it is met)
    and which are pushed to the shrunk shell. ``shells``: the shrunk shells' bounds, the
    true shells' bounds and the near-miss inset (A,) each. A goal farther outside its true
    shell than the margin is pushed; one outside by less (float32 targets on a straight
    limb, a held goal's second-order drift) is brought back :data:`_DRIFT_INSET` × the
    length inside the true shell, and met again once inside. ``was_pushed`` (B, A): which
    were pushed at the previous point (None: none) — those stay pushed until within
    ``tolerance`` of the shrunk shell. Returns ``d`` itself (the same array) where every
    goal is met where it is."""
    lo, hi, reach_lo, reach_hi, inset = shells
    below, above = reach_lo - d, d - reach_hi
    out = (below > 0.0) | (above > 0.0)
    if was_pushed is None and not out.any():
        return d, out
    push = (below > lo - reach_lo) | (above > reach_hi - hi)
    if was_pushed is not None:
        push |= was_pushed & (np.abs(d - np.minimum(np.maximum(d, lo), hi)) > tolerance)
    if not out.any() and not push.any():
        return d, push
    back = np.minimum(np.maximum(d, reach_lo + inset), reach_hi - inset)
    c: FloatArray = np.where(push, np.minimum(np.maximum(d, lo), hi), np.where(out, back, d))
    return c, push


def _settle_rows(
    act: IntArray,
    moved: FloatArray,
    met: NDArray[np.bool_],
    near: NDArray[np.bool_],
    obj: FloatArray,
    now: FloatArray,
    stall: NDArray[np.int_],
    polish: NDArray[np.bool_],
    reasons: NDArray[np.object_],
    step_tolerance: float,
) -> NDArray[np.bool_]:
    """:func:`_numeric`'s stop test after an evaluation of its active rows ``act``: their
    stall counts, polishing flags and reasons updated in place. ``moved``: each step's
    largest |Δx|; ``met``: every goal within tolerance; ``near``: the goals near enough
    to cut the rest term's tail (``met``, or within :data:`_NEAR` × the tolerance for a
    resumed row); ``obj``, ``now``: the objectives after and before the step. A row whose
    goals are met is done once its step is below ``step_tolerance``, it has not improved
    for :data:`_SETTLED` iterations or it has polished; with its goals near and a step
    ≤ :data:`_REST_STEP` it polishes next (one goal-only step: the rest term's tail cut,
    module docstring); a row whose goals are not met stops STALLED on a step below
    ``step_tolerance`` or after :data:`_STALL` iterations without improvement. Returns
    which rows go on."""
    improved = lexicographic_less(obj, now, 1.0 - _PROGRESS)[0]
    stall[act] = np.where(improved, 0, stall[act] + 1)
    small = moved <= step_tolerance
    done_conv = met & (small | (stall[act] >= _SETTLED) | polish[act])
    polish[act[near & ~done_conv & (moved <= _REST_STEP)]] = True
    done_stall = ~met & (small | (stall[act] >= _STALL))
    reasons[act[done_stall]] = StopReason.STALLED
    keep: NDArray[np.bool_] = ~(done_conv | done_stall)
    return keep


def _settle_one(
    row: int,
    moved: float,
    met: bool,
    near: bool,
    obj: list[float],
    now: list[float],
    stall: NDArray[np.int_],
    polish: NDArray[np.bool_],
    reasons: NDArray[np.object_],
    step_tolerance: float,
) -> bool:
    """:func:`_settle_rows` for one active row ``row`` on Python scalars (the same
    comparisons; ``obj``, ``now`` compared lexicographically as
    :func:`lexicographic_less` does). Returns whether the row is done."""
    improved = False
    for a, b in zip(obj, now, strict=True):
        improved = improved or a < b * (1.0 - _PROGRESS)
        if a != b:
            break
    count = 0 if improved else int(stall[row]) + 1
    stall[row] = count
    small = moved <= step_tolerance
    if met and (small or count >= _SETTLED or polish[row]):
        return True
    if near and moved <= _REST_STEP:
        polish[row] = True
    if not met and (small or count >= _STALL):
        reasons[row] = StopReason.STALLED
        return True
    return False


_EYE3 = np.eye(3)
_EYE3.setflags(write=False)


class _Constants(NamedTuple):
    """:func:`_numeric_constants`' values, in the order :func:`_numeric` unpacks them."""

    aux: list[Goal]
    blocks: tuple[RowBlock, ...]
    n_num: int
    m_num: int
    m_aux: int
    m_goal: int
    scalar: bool
    sqw: FloatArray
    d_lo: FloatArray
    d_hi: FloatArray
    reach_lo: FloatArray
    reach_hi: FloatArray
    inset: FloatArray
    band: FloatArray
    lower: FloatArray
    upper: FloatArray
    reduced: _Reduced
    settings: SolveSettings
    met_layout: tuple[IntArray, FloatArray] | None


def _numeric_constants(
    body: Body, goals: tuple[Goal, ...], plan: dict[str, Any], settings: BodySettings
) -> _Constants:
    """The numeric level's constants for ``plan`` (:func:`_numeric`): the shoulders'
    auxiliary goals, the row blocks and their sizes, the shell constraints' weights,
    bounds and bands, the unknowns' limits, the cascade's settings and the objective's
    block layout — kept in the plan per the settings and the goals' structure they read
    (never their targets)."""
    key = (
        settings.rest_weight > 0.0,
        settings.tolerance,
        settings.max_step,
        settings.use_limits,
        settings.priority_damping,
        # what the row blocks read of the goals (the plan's indices into them)
        _goals_key(tuple(goals[i] for i in plan["numeric"])),
        tuple((goals[an.goal].priority, goals[an.goal].weight) for an in plan["analytic"]),
    )
    kept: dict[Any, _Constants] = plan.setdefault("numeric_constants", {})
    hit = kept.get(key)
    if hit is not None:
        return hit
    sk = body.skeleton
    free: IntArray = plan["free"]
    analytic: list[_Analytic] = plan["analytic"]
    numeric: list[int] = plan["numeric"]
    na = len(analytic)
    nx = free.size + na
    aux: list[Goal] = [PositionGoal(np.zeros(3), joint=body.joints[an.limb][0]) for an in analytic]
    sk_blocks = sk.blocks(tuple([goals[i] for i in numeric] + aux))
    n_num = len(numeric)
    m_num = 3 * sum(1 for blk in sk_blocks if blk.goal < n_num)
    m_aux = m_num + 3 * na
    blocks: list[RowBlock] = [
        RowBlock(numeric[blk.goal], blk.priority, blk.rows, blk.kind, blk.weight)
        for blk in sk_blocks
        if blk.goal < n_num
    ]
    # per limb its shell constraint: with the rest term one row, the distance d − c;
    # without it (the warm path) three, the vector (d − c) u, whose tangential rows keep
    # the minimum-norm steps from sliding the shoulders (frame-to-frame repeatability,
    # docs/decisions.md) — see `evaluate`
    scalar = settings.rest_weight > 0.0
    width = 1 if scalar else 3
    row = m_num
    for an in analytic:
        g = goals[an.goal]
        blocks.append(
            RowBlock(an.goal, g.priority, slice(row, row + width), BlockKind.POSITION, g.weight)
        )
        row += width
    m_goal = row
    sqw_k = np.array([math.sqrt(goals[an.goal].weight) for an in analytic])
    d_lo = np.array([an.d_min for an in analytic])
    d_hi = np.array([an.d_max for an in analytic])
    reach_lo = np.array([an.reach[0] for an in analytic])
    reach_hi = np.array([an.reach[1] for an in analytic])
    inset = _DRIFT_INSET * np.array([an.model.length for an in analytic])
    band = _BAND * np.array([an.model.length for an in analytic])
    lower = np.concatenate([sk.lower[free], np.full(na, -np.inf)])
    upper = np.concatenate([sk.upper[free], np.full(na, np.inf)])
    if not settings.use_limits:
        lower = np.full(nx, -np.inf)
        upper = np.full(nx, np.inf)
    st = SolveSettings(
        tolerance=settings.tolerance,
        max_step=settings.max_step,
        use_limits=settings.use_limits,
        priority_damping=settings.priority_damping,
    )
    # the objective's per-block sums (one goal level whose blocks of ≤ 8 rows tile e's
    # rows in order: np.add.reduceat sums each block left to right, as np.sum does)
    spans = [blk.rows for blk in blocks]
    met_layout = None
    if (
        len({blk.priority for blk in blocks}) == 1
        and all(r.start == (spans[i - 1].stop if i else 0) for i, r in enumerate(spans))
        and all(0 < r.stop - r.start <= 8 for r in spans)
        and spans[-1].stop == m_goal
    ):
        met_layout = (
            np.array([r.start for r in spans], dtype=np.intp),
            settings.tolerance**2 * np.array([blk.weight for blk in blocks], dtype=np.float64),
        )
    for a in (sqw_k, d_lo, d_hi, reach_lo, reach_hi, inset, band, lower, upper):
        a.setflags(write=False)
    out = _Constants(
        aux=aux,
        blocks=tuple(blocks),
        n_num=n_num,
        m_num=m_num,
        m_aux=m_aux,
        m_goal=m_goal,
        scalar=scalar,
        sqw=sqw_k,
        d_lo=d_lo,
        d_hi=d_hi,
        reach_lo=reach_lo,
        reach_hi=reach_hi,
        inset=inset,
        band=band,
        lower=lower,
        upper=upper,
        reduced=_Reduced(lower, upper),
        settings=st,
        met_layout=met_layout,
    )
    kept[key] = out
    return out


def _rows_state(state: StepState, rows: IntArray, evaluate: Any) -> StepState:
    """``state`` cut to its rows ``rows`` (positions in its batch). ``evaluate(x, rows=)``:
    the evaluation that ``state.evaluate`` binds to ``state.rows``."""
    sub = state.rows[rows]
    return dataclasses.replace(
        state,
        q=state.q[rows],
        e=state.e[rows],
        J=state.J[rows],
        goal_error=state.goal_error[rows],
        previous_e=state.previous_e[rows],
        rows=sub,
        evaluate=functools.partial(evaluate, rows=sub),
    )


def _in_shell(an: _Analytic, local: Local) -> NDArray[np.bool_]:
    """(B,) the limb's local goal lies in its true shell (``an.reach``, the numeric
    level's met region of the limb's shell constraint)."""
    lo, hi = an.reach
    if local.position.shape[0] == 1:  # one row: the same sum of squares on floats
        x, y, z = local.position[0].tolist()
        d1 = math.sqrt(x * x + y * y + z * z)
        return np.array([lo <= d1 <= hi])
    d = np.linalg.norm(local.position, axis=-1)
    out: NDArray[np.bool_] = (d >= lo) & (d <= hi)
    return out


def _limbs(
    body: Body,
    goals: tuple[Goal, ...],
    plan: dict[str, Any],
    q: FloatArray,
    swivels: FloatArray | None,
    rows: IntArray,
    give_up: bool = False,
) -> tuple[FloatArray, tuple[Any, ...], NDArray[np.bool_], NDArray[np.bool_]]:
    """Each goaled limb solved in closed form from the shoulder frame at ``q`` (written
    into ``q`` in place; ``rows``: the rows' indices in the goals' batch) with the
    swivels ``swivels`` (B, A); returns per limb the swivel (B, K), the feasible
    intervals, whether its solve reached the goal (B, K) and, per analytic limb (B, A),
    whether its goal lies in the limb's shell but has no φ within the limb's limits
    (§3.2.4: feasible intervals empty; a goal beyond the shell is out of reach, not a
    matter of limits). ``swivels`` None: the limbs were solved numerically; each takes
    the closed form with φ nearest its numeric elbow (§3.2.2) where that reaches the
    goal, else keeps its numeric angles (swivel NaN). ``give_up``: stop (the later limbs
    left unsolved) once every row has a limb that did not reach its goal or has no
    feasible φ (the warm path: such rows are solved again)."""
    sk = body.skeleton
    big = q.shape[0]
    n_limbs = len(body.limbs)
    swivel = np.full((big, n_limbs), np.nan)
    ok = np.zeros((big, n_limbs), dtype=bool)
    feasible: list[Any] = [None] * n_limbs
    analytic: list[_Analytic] = plan["analytic"]
    bad = np.zeros((big, len(analytic)), dtype=bool)
    # one evaluation for every limb: no goaled limb's joints move another's shoulder
    kin = sk.kinematics(q)
    failed = np.zeros(big, dtype=bool)
    local_k = [_shoulder_goals(body, goals, an, q, rows, kin) for an in analytic]
    options: list[dict[str, FloatArray]] = []
    for k, an in enumerate(analytic):
        if swivels is not None:
            options.append({"swivel": swivels[:, k]})
            continue
        u, lo, e = body.joints[an.limb]
        frt, org = _shoulder_frame(body, an, q, kin)
        upper, whole = org[:, lo] - org[:, u], org[:, e] - org[:, u]
        target = (frt @ upper[..., None])[..., 0]
        # a straight limb's elbow gives no side: its preferred swivel is taken; a nearly
        # straight one keeps the side it bends to
        off = np.linalg.norm(np.cross(upper, unit_rows(whole)), axis=-1)
        near = off <= NEAR_STRAIGHT * an.model.length
        if near.any():
            local = local_k[k]
            wrist = an.wrist if local.rotation is None else None
            phi = _bend_swivels(
                body, an, q, near & (off > STRAIGHT * an.model.length), plan["pref"][k]
            )
            target = straight_targets(an.model, local, wrist, target, near, phi)
        options.append({"elbow_target": target})
    # the limbs with limits: their kernel passes, and all their feasible sets in one call
    kernels = {
        k: Kernel(an.model, local, an.wrist if local.rotation is None else None, **options[k])
        for k, (an, local) in enumerate(zip(analytic, local_k, strict=True))
        if an.model.limits is not None
    }
    parts = [kr.feasible_part() for kr in kernels.values()]
    sets = dict(zip(kernels, feasible_intervals(parts), strict=True))
    for k, an in enumerate(analytic):
        local = local_k[k]
        wrist = an.wrist if local.rotation is None else None
        u, lo, e = body.joints[an.limb]
        if k in kernels and swivels is None:
            # the closed form with φ nearest the numeric elbow, all rows posed
            sol, _ = closed_pose(kernels[k], sets[k], np.zeros(big, dtype=bool))
            use = sol.reachable
        elif swivels is None:
            sol = solve_all(an.model, local, wrist, **options[k])
            use = sol.reachable
        elif k in kernels:
            # the closed form from the kernel pass; rows without a feasible φ in the
            # shell are left to the rescue
            sol, bad[:, k] = closed_pose(kernels[k], sets[k], _in_shell(an, local))
            use = sol.solved
        else:
            sol = solve_all(an.model, local, wrist, swivel=swivels[:, k])
            use = sol.solved
        feasible[an.limb] = sol.intervals
        if big == 1:  # one row (a warm frame): the same bookkeeping on Python scalars
            if _write_limb_one(body, an, sol, bool(use[0]), q, swivel, ok) or bad[0, k]:
                if give_up:
                    break
                failed[0] = True
            continue
        if use.any():
            pick = slice(None) if use.all() else use
            angles = _limb_angles(body, an, sol.shoulder[pick], sol.elbow[pick], sol.wrist[pick])
            for j, a in zip((u, lo, e), angles, strict=True):
                q[pick, sk.dof_slices[j]] = a
        swivel[:, an.limb] = np.where(use, sol.swivel, np.nan)
        ok[:, an.limb] = sol.reachable & sol.solved
        if give_up and np.all(bad[:, k] | ~ok[:, an.limb] | failed):
            break
        failed = bad[:, k] | ~ok[:, an.limb] | failed
    return swivel, tuple(feasible), ok, bad


def _write_limb_one(
    body: Body,
    an: _Analytic,
    sol: Any,
    use: bool,
    q: FloatArray,
    swivel: FloatArray,
    ok: NDArray[np.bool_],
) -> bool:
    """:func:`_limbs`' writes for one row (B = 1): the limb's angles into ``q`` where
    ``use``, its swivel (NaN where not) and whether it reached its goal into ``swivel``
    and ``ok``. Returns whether it failed (did not reach)."""
    sk = body.skeleton
    if use:
        angles = _limb_angles(body, an, sol.shoulder, sol.elbow, sol.wrist)
        for j, a in zip(body.joints[an.limb], angles, strict=True):
            q[0, sk.dof_slices[j]] = a[0]
    swivel[0, an.limb] = float(sol.swivel[0]) if use else math.nan
    reached = bool(sol.reachable[0]) and bool(sol.solved[0])
    ok[0, an.limb] = reached
    return not reached
