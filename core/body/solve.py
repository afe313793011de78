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
  distance from the shoulder in ``[d_min + m, d_max − m]`` — the distances the elbow can
  make within its limits (Eq. 5: d²(θ4) = C + 2 r cos(θ4 − δ)), ``m`` the margin
  :attr:`BodySettings.shell_margin` × limb length. Residual: the point's distance
  outside that interval, along the shoulder–target line (zero inside); Jacobian from the
  shoulder's position Jacobian;
* lowest, in the null space of all of them: the rest-pose / preferred-angle term
  √w (x_rest − x), the swivels' part pulling each φ to its preferred value.

Each goaled limb is then solved in closed form by :func:`~core.limb.solve_limb` in the
shoulder frame the numeric level leaves (its goal exact whenever in reach, φ the feasible
swivel nearest the numeric φ, CLOSEST), and its joint angles are written back into ``q``
(the Euler family within the Ball limits, angles shifted by 2π into the linear ranges).
All errors are then measured by forward kinematics of the whole skeleton.

Batching: every array carries the rows (frames); the numeric level iterates all rows
together (rows that have finished are dropped), each limb's closed form is one batched
call. Python loops run over iterations, priority levels, goals and limbs — never over
rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..chain.loop import StepState, lexicographic_less
from ..chain.residuals import BlockKind, RowBlock
from ..chain.settings import SolveSettings
from ..chain.skeleton import goal_tuple
from ..chain.steps.task_priority import TaskPriorityStep
from ..errors import InvalidGoalError, InvalidInputError, ShapeMismatchError, format_value
from ..geometry.rotations import euler_to_matrix, matrix_to_euler_families
from ..goals import Goal, PoseGoal, PositionGoal
from ..limb import Limb, SwivelStrategy, solve_limb
from ..limb.model import family_violations
from .model import Body, BodySettings, BodySolution

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

TAU = 2.0 * math.pi

#: Iterations without a lexicographic improvement of the goal levels before a row whose
#: goals are not all met stops (STALLED: a conflicting level at its constrained optimum).
_STALL = 10

#: Width (× limb length) of the band inside a limb's shell where its distance constraint
#: is active (held), so that lower levels cannot push the goal back and forth across it.
_BAND = 1e-3

#: Weight of the preferred-distance rows relative to ``rest_weight`` (m against rad).
_DIST_WEIGHT = 100.0

#: Halvings of a step that makes the levels lexicographically worse.
_HALVINGS = 4

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

    def _clip(self, x: FloatArray) -> FloatArray:
        out: FloatArray = np.minimum(np.maximum(x, self.lower), self.upper)
        return out


@dataclass
class _Analytic:
    """One goaled limb: its index in ``Body.limbs``, the goal's index, the limb model
    (effector = the goal's point), the wrist held for position goals, the shell and the
    preferred distance (the preferred elbow angle's)."""

    limb: int
    goal: int
    model: Limb
    wrist: FloatArray | None
    d_min: float
    d_max: float
    d_pref: float


def shell(
    model: Limb, wrist: FloatArray | None = None, elbow: float | None = None
) -> tuple[float, float, float]:
    """(d_min, d_max, d): the distances from the shoulder at which the limb can put its
    wrist centre (``wrist`` None) or, with R2 = ``wrist``, its effector point, over the
    elbow angles within the elbow limits (Tolani Eq. 5: |tA + RA Rθ t|² = C + 2 r cos(θ − δ)),
    and the distance at the elbow angle ``elbow`` (rad; default the limits' middle, 0
    without limits)."""
    a = np.asarray(model.a)
    b = np.asarray(model.b)
    e = np.asarray(model.effector)
    k = np.asarray(model.elbow_axis)
    t = b[:3, 3] if wrist is None else b[:3, 3] + b[:3, :3] @ wrist @ e[:3, 3]
    ta = a[:3, 3]
    ta_l = a[:3, :3].T @ ta
    kta, ktb = float(k @ ta_l), float(k @ t)
    ca = float(ta_l @ t) - kta * ktb
    cb = float(ta_l @ np.cross(k, t))
    r = math.hypot(ca, cb)
    delta = math.atan2(cb, ca)
    const = float(ta @ ta + t @ t) + 2.0 * kta * ktb
    limits = model.limits
    hi_c, lo_c = 1.0, -1.0
    if elbow is None:
        elbow = 0.0 if limits is None or limits.elbow is None else 0.5 * sum(limits.elbow)
    at = math.sqrt(max(const + 2.0 * r * math.cos(elbow - delta), 0.0))
    if limits is not None and limits.elbow is not None:
        lo, hi = limits.elbow
        ends = [math.cos(lo - delta), math.cos(hi - delta)]

        def inside(angle: float) -> bool:
            return (angle - lo) % TAU <= hi - lo

        hi_c = 1.0 if inside(delta) else max(ends)
        lo_c = -1.0 if inside(delta + math.pi) else min(ends)
    return (
        math.sqrt(max(const + 2.0 * r * lo_c, 0.0)),
        math.sqrt(max(const + 2.0 * r * hi_c, 0.0)),
        at,
    )


def _into_range(a: FloatArray, lo: FloatArray, hi: FloatArray) -> FloatArray:
    """Angles ``a`` shifted by a multiple of 2π into [lo, hi] where one fits (else the
    shift leaving them nearest the range; unlimited entries stay)."""
    best = a
    best_out = np.maximum(lo - a, 0.0) + np.maximum(a - hi, 0.0)
    for k in (-2, -1, 1, 2):
        c = a + k * TAU
        out = np.maximum(lo - c, 0.0) + np.maximum(c - hi, 0.0)
        better = out < best_out - 1e-12
        best = np.where(better, c, best)
        best_out = np.where(better, out, best_out)
    return best


def _euler_in_limits(rot: FloatArray, model_limits: Any, order: str) -> FloatArray:
    """(B, 3) Euler angles (``order``) of rotations (B, 3, 3): the family least outside
    the limits (Tolani §3.2.4's two families)."""
    fam = matrix_to_euler_families(rot, order, check=False)  # (B, 2, 3)
    if model_limits is None:
        return fam[:, 0]
    pick = np.argmin(family_violations(fam, model_limits), axis=1)
    out: FloatArray = fam[np.arange(fam.shape[0]), pick]
    return out


def _plan(body: Body, goals: tuple[Goal, ...], settings: BodySettings) -> dict[str, Any]:
    """Which limbs are solved analytically, the numeric unknowns and the row layout."""
    sk = body.skeleton
    gj = [sk._goal_joint(g, i) for i, g in enumerate(goals)]
    anc = sk.ancestors
    analytic: list[_Analytic] = []
    limb_goal: dict[int, int] = {}
    q_rest = _rest(body, settings)
    for k, (u, lo, e) in enumerate(body.joints):
        on_end = [i for i, j in enumerate(gj) if j == e]
        inside = [i for i, j in enumerate(gj) if anc[u, j] and j != e]
        if len(on_end) != 1 or inside or not isinstance(goals[on_end[0]], PositionGoal | PoseGoal):
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
        elbow = None if settings.q_rest is None else float(q_rest[sk.dof_slices[lo]][0])
        d_min, d_max, d_pref = shell(model, wrist, elbow)
        margin = settings.shell_margin * model.length
        if d_max - d_min > 2.0 * margin:
            d_min, d_max = d_min + margin, d_max - margin
        else:
            d_min = d_max = 0.5 * (d_min + d_max)
        d_pref = min(max(d_pref, d_min), d_max)
        analytic.append(_Analytic(k, gi, model, wrist, d_min, d_max, d_pref))
        limb_goal[gi] = k
    in_limb = np.zeros(sk.n_dofs, dtype=bool)
    for an in analytic:
        for j in body.joints[an.limb]:
            in_limb[sk.dof_slices[j]] = True
    free = np.flatnonzero(~in_limb)
    numeric = [i for i in range(len(goals)) if i not in limb_goal]
    return {"analytic": analytic, "free": free, "numeric": numeric, "q_rest": q_rest}


def _rest(body: Body, settings: BodySettings) -> FloatArray:
    sk = body.skeleton
    if settings.q_rest is None:
        return sk._clip(np.zeros(sk.n_dofs))
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
            does not depend on the start).
        settings: :class:`BodySettings` (default ``BodySettings()``).

    Returns:
        :class:`BodySolution`, with every error measured by forward kinematics of the
        returned ``q``.

    Raises:
        InvalidSkeletonError: ``body`` not a Body. InvalidGoalError: malformed goals, a
        goal on an unknown joint. InvalidInputError: bad ``q0`` or settings.
        ShapeMismatchError: batch sizes that disagree.
    """
    if not isinstance(body, Body):
        raise InvalidInputError(f"body must be a Body, got {format_value(body)}")
    if settings is None:
        settings = BodySettings()
    if not isinstance(settings, BodySettings):
        raise InvalidInputError(f"settings must be BodySettings, got {format_value(settings)}")
    sk = body.skeleton
    goals = goal_tuple(goals)
    sizes = {g._n for g in goals if g._n is not None}
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
    plan = _plan(body, goals, settings)
    q = sk._clip(q_in) if settings.use_limits else q_in.copy()
    x, iterations, reasons = _numeric(body, goals, plan, q, settings)
    q[:, plan["free"]] = x[:, : plan["free"].size]
    swivel, feasible, limb_ok = _limbs(body, goals, plan, q, x[:, plan["free"].size :])
    gerr = sk.goal_errors(q, goals) if sizes else sk.goal_errors(q, goals)
    reached = gerr <= settings.tolerance
    prios = sorted({g.priority for g in goals})
    level = np.stack(
        [gerr[:, [i for i, g in enumerate(goals) if g.priority == p]].max(axis=1) for p in prios],
        axis=1,
    )
    within = np.all((q >= sk.lower - LIMIT_SLACK) & (q <= sk.upper + LIMIT_SLACK), axis=1)
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
        str(reasons[0]),
    )


def _numeric(
    body: Body,
    goals: tuple[Goal, ...],
    plan: dict[str, Any],
    q: FloatArray,
    settings: BodySettings,
) -> tuple[FloatArray, NDArray[np.int_], NDArray[np.object_]]:
    """The numeric level (module docstring): returns x (B, nf + K), iterations, reasons."""
    sk = body.skeleton
    free: IntArray = plan["free"]
    analytic: list[_Analytic] = plan["analytic"]
    numeric: list[int] = plan["numeric"]
    nf, na = free.size, len(analytic)
    big = q.shape[0]
    pref = np.array([(settings.swivel or {}).get(body.limbs[an.limb].name, 0.0) for an in analytic])
    x = np.concatenate([q[:, free], np.broadcast_to(pref, (big, na))], axis=1)
    iterations = np.zeros(big, dtype=np.int_)
    reasons = np.full(big, "converged", dtype=object)
    nx = nf + na
    if nx == 0:
        return x, iterations, reasons
    # the goals evaluated by the skeleton: the numeric goals, then one PositionGoal at
    # each goaled limb's shoulder (its residual is −shoulder, its Jacobian ∂shoulder/∂q)
    aux = [PositionGoal(np.zeros(3), joint=body.joints[an.limb][0]) for an in analytic]
    eval_goals = tuple([goals[i] for i in numeric] + aux)
    sk_blocks = sk.blocks(eval_goals)
    m_num = 3 * sum(1 for blk in sk_blocks if blk.goal < len(numeric))
    blocks: list[RowBlock] = [
        RowBlock(numeric[blk.goal], blk.priority, blk.rows, blk.kind, blk.weight)
        for blk in sk_blocks
        if blk.goal < len(numeric)
    ]
    row = m_num
    for an in analytic:
        g = goals[an.goal]
        blocks.append(
            RowBlock(an.goal, g.priority, slice(row, row + 3), BlockKind.POSITION, g.weight)
        )
        row += 3
    m_goal = row
    rest_w = settings.rest_weight
    n_rest = 3 * math.ceil(nx / 3) if rest_w > 0.0 else 0
    low = max(g.priority for g in goals) + 1
    for i in range(n_rest // 3):
        blocks.append(
            RowBlock(len(goals) + i, low, slice(row, row + 3), BlockKind.POSITION, rest_w)
        )
        row += 3
    # the preferred elbow angles, as preferred shoulder–goal distances (same level)
    m_dist = row
    if rest_w > 0.0:
        for i in range(na):
            blocks.append(
                RowBlock(
                    len(goals) + n_rest // 3 + i,
                    low,
                    slice(row, row + 3),
                    BlockKind.POSITION,
                    _DIST_WEIGHT * rest_w,
                )
            )
            row += 3
    m = row
    d_pref = np.array([an.d_pref for an in analytic])
    sdw = math.sqrt(_DIST_WEIGHT * rest_w)
    sqw = [math.sqrt(goals[an.goal].weight) for an in analytic]
    d_lo = np.array([an.d_min for an in analytic])
    d_hi = np.array([an.d_max for an in analytic])
    band = _BAND * np.array([an.model.length for an in analytic])
    q_rest = plan["q_rest"]
    x_rest = np.concatenate([q_rest[free], pref])
    srw = math.sqrt(rest_w)
    targets = [np.asarray(goals[an.goal].position, dtype=np.float64) for an in analytic]
    lower = np.concatenate([sk.lower[free], np.full(na, -np.inf)])
    upper = np.concatenate([sk.upper[free], np.full(na, np.inf)])
    if not settings.use_limits:
        lower = np.full(nx, -np.inf)
        upper = np.full(nx, np.inf)
    reduced = _Reduced(lower, upper)
    batched_goals = any(g._n is not None for g in goals)
    eye3 = np.eye(3)

    def evaluate(
        xs: FloatArray, rows: IntArray, memo: dict[str, Any]
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        b = xs.shape[0]
        qf = q[rows]
        qf[:, free] = xs[:, :nf]
        ev = sk.evaluate(qf, eval_goals, rows=rows if batched_goals else None, memo=memo)
        assert ev.J is not None
        e = np.zeros((b, m))
        jac = np.zeros((b, m, nx))
        e[:, :m_num] = ev.e[:, :m_num]
        jac[:, :m_num, :nf] = ev.J[:, :m_num][:, :, free]
        gerr = np.zeros((b, len(numeric) + na))
        gerr[:, : len(numeric)] = ev.goal_error[:, : len(numeric)]
        if na:
            s = -ev.e[:, m_num:].reshape(b, na, 3)
            js = ev.J[:, m_num:][:, :, free].reshape(b, na, 3, nf)
            tg = np.stack([t if t.ndim == 1 else t[rows] for t in targets], axis=-2) * np.ones(
                (b, 1, 1)
            )
            v = tg - s
            d = np.sqrt(np.sum(v * v, axis=-1))
            c = np.clip(d, d_lo, d_hi)
            near = (d > d_hi - band) | (d < d_lo + band)
            safe = np.where(d > 0.0, d, 1.0)
            u = v / safe[..., None]
            err = (d - c)[..., None] * u
            # ∂(s + c u)/∂s = I − (c/d)(I − u uᵀ) outside the shell (u uᵀ on its
            # boundary); inside, within ``band`` of it, u uᵀ too: the distance is held
            # (an active inequality), deeper inside the constraint is inactive (0)
            tang = eye3 - u[..., :, None] * u[..., None, :]
            dd = eye3 - (c / safe)[..., None, None] * tang
            dd = np.where(near[..., None, None], dd, 0.0)
            jl = dd @ js  # (b, na, 3, nf)
            # the preferred distance: the same residual with c = d_pref, always active
            ep = (d - d_pref)[..., None] * u
            jp = (eye3 - (d_pref / safe)[..., None, None] * tang) @ js
            for k in range(na):
                r0 = m_num + 3 * k
                e[:, r0 : r0 + 3] = sqw[k] * err[:, k]
                jac[:, r0 : r0 + 3, :nf] = sqw[k] * jl[:, k]
                if rest_w > 0.0:
                    r1 = m_dist + 3 * k
                    e[:, r1 : r1 + 3] = sdw * ep[:, k]
                    jac[:, r1 : r1 + 3, :nf] = sdw * jp[:, k]
            gerr[:, len(numeric) :] = np.abs(d - c)
        if n_rest:
            diff = x_rest - xs
            diff[:, nf:] = np.remainder(diff[:, nf:] + math.pi, TAU) - math.pi
            e[:, m_goal : m_goal + nx] = srw * diff
            idx = np.arange(nx)
            jac[:, m_goal + idx, idx] = srw
        return e, jac, gerr

    st = SolveSettings(
        tolerance=settings.tolerance,
        max_step=settings.max_step,
        use_limits=settings.use_limits,
        priority_damping=settings.priority_damping,
    )
    step = TaskPriorityStep()
    blocks_t = tuple(blocks)
    goal_blocks = tuple(blk for blk in blocks_t if blk.priority < low)
    tol2 = settings.tolerance**2
    goal_levels = (
        [
            np.concatenate(
                [np.arange(b.rows.start, b.rows.stop) for b in goal_blocks if b.priority == p]
            )
            for p in sorted({b.priority for b in goal_blocks})
        ]
        if n_rest
        else []
    )
    step.tolerance = settings.tolerance
    rest_rows = slice(m_goal, m)

    def objective(e: FloatArray) -> FloatArray:
        """(b, L + 1): per goal level 0 when met else ‖e_k‖² (TaskPriorityStep's), then
        the rest term's ‖e‖² — compared lexicographically."""
        og = step.objective(e[:, :m_goal], goal_blocks)
        if og.ndim == 1:  # one goal level: TaskPriorityStep gives ‖e‖², 0 when met here
            met = np.all(
                [np.sum(e[:, b.rows] ** 2, axis=1) <= tol2 * b.weight for b in goal_blocks], axis=0
            )
            og = np.where(met, 0.0, og)[:, None]
        rest = np.sum(e[:, rest_rows] ** 2, axis=1)[:, None]
        return np.concatenate([og, rest], axis=1)

    x = reduced._clip(x)
    act = np.arange(big)
    kappa_all = np.full(big, step.RESIDUAL_DAMPING)
    cur = evaluate(x, act, {})
    stall = np.zeros(big, dtype=np.int_)
    for it in range(settings.max_iterations):
        xa = x[act]
        e, jac, gerr = cur
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
            evaluate=lambda xs, rows=act: evaluate(xs, rows, {}),
        )
        kappa = kappa_all[act]
        zero = np.zeros_like(xa)
        dx = step._cascade(state, jac, zero, None, kappa)[0]
        if reduced.has_limits and settings.use_limits:
            # a DOF at a limit that the step pushes outward is held, the rest re-solved
            for _ in range(3):
                held = ((xa + dx < lower - 1e-12) & (xa <= lower + 1e-12)) | (
                    (xa + dx > upper + 1e-12) & (xa >= upper - 1e-12)
                )
                if not held.any():
                    break
                dx = step._cascade(state, jac * ~held[:, None, :], zero, None, kappa)[0]
        if goal_levels:
            # strict priority: the goal levels restored at q + Δx (TaskPriorityStep's
            # feasibility restoration), so lower levels never leave them off
            dx = step._restore(state, dx, goal_levels)[0]
        now = objective(e)
        # backtracking: a step that makes the levels lexicographically worse is halved
        # (at most _HALVINGS times; the last is taken anyway)
        for attempt in range(_HALVINGS + 1):
            xn = reduced._clip(xa + dx) if settings.use_limits else xa + dx
            cand = evaluate(xn, act, {})
            worse = lexicographic_less(now, objective(cand[0]), 1.0)[1]
            if attempt == _HALVINGS or not worse.any():
                break
            dx = np.where(worse[:, None], 0.5 * dx, dx)
        moved = np.max(np.abs(xn - xa), axis=1)
        x[act] = xn
        iterations[act] += 1
        met = np.all(cand[2] <= settings.tolerance, axis=1)
        improved = lexicographic_less(objective(cand[0]), now, 1.0 - 1e-9)[0]
        stall[act] = np.where(improved, 0, stall[act] + 1)
        small = moved <= settings.step_tolerance
        done_conv = met & small
        done_stall = ~met & (small | (stall[act] >= _STALL))
        reasons[act[done_stall]] = "stalled"
        keep = ~(done_conv | done_stall)
        act = act[keep]
        if not act.size:
            break
        cur = (cand[0][keep], cand[1][keep], cand[2][keep])
    reasons[act] = "max_iterations"
    return x, iterations, reasons


def _limbs(
    body: Body,
    goals: tuple[Goal, ...],
    plan: dict[str, Any],
    q: FloatArray,
    swivels: FloatArray,
) -> tuple[FloatArray, tuple[Any, ...], NDArray[np.bool_]]:
    """Each goaled limb solved in closed form from the shoulder frame at ``q`` (written
    into ``q`` in place); returns per limb the swivel (B, K), the feasible intervals and
    whether its solve reached the goal (B, K)."""
    sk = body.skeleton
    big = q.shape[0]
    n_limbs = len(body.limbs)
    swivel = np.full((big, n_limbs), np.nan)
    ok = np.zeros((big, n_limbs), dtype=bool)
    feasible: list[Any] = [None] * n_limbs
    analytic: list[_Analytic] = plan["analytic"]
    if not analytic:
        return swivel, tuple(feasible), ok
    rot, org, _, _ = sk._kinematics(q)
    for k, an in enumerate(analytic):
        u, lo, e = body.joints[an.limb]
        pu = int(sk.parents[u])
        off = np.asarray(sk.joints[u].offset)[:3, :3]
        fr = (rot[:, pu] if pu >= 0 else np.eye(3)) @ off  # (B, 3, 3) shoulder frame
        ft = org[:, u]
        goal = goals[an.goal]
        frt = np.swapaxes(fr, -1, -2)
        p_l = (frt @ (np.asarray(goal.position) - ft)[..., None])[..., 0]  # type: ignore[union-attr]
        if isinstance(goal, PoseGoal):
            local: PositionGoal | PoseGoal = PoseGoal(p_l, frt @ np.asarray(goal.rotation))
            sol = solve_limb(an.model, local, swivel=swivels[:, k])
        else:
            local = PositionGoal(p_l)
            sol = solve_limb(
                an.model,
                local,
                swivel=swivels[:, k],
                wrist=an.wrist,
                strategy=SwivelStrategy.CLOSEST,
            )
        lim = an.model.limits
        ball_u, ball_e = sk.joints[u].dofs, sk.joints[e].dofs
        s_u, s_l, s_e = sk.dof_slices[u], sk.dof_slices[lo], sk.dof_slices[e]
        q[:, s_u] = _into_range(
            _euler_in_limits(sol.shoulder, None if lim is None else lim.shoulder, ball_u.order),  # type: ignore[union-attr]
            sk.lower[s_u],
            sk.upper[s_u],
        )
        q[:, s_l] = _into_range(np.asarray(sol.elbow)[:, None], sk.lower[s_l], sk.upper[s_l])
        q[:, s_e] = _into_range(
            _euler_in_limits(sol.wrist, None if lim is None else lim.wrist, ball_e.order),  # type: ignore[union-attr]
            sk.lower[s_e],
            sk.upper[s_e],
        )
        swivel[:, an.limb] = sol.swivel
        ok[:, an.limb] = sol.reachable
        feasible[an.limb] = sol.feasible_swivel
    return swivel, tuple(feasible), ok
