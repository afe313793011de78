"""Cyclic coordinate descent (Lee)."""

from __future__ import annotations

import math
import threading
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ...geometry.vec3 import cross_rows, sum_squares
from ...goals import AimGoal, Goal
from ..loop import FloatArray, IKSolver, StepState, clamp_max_abs, matvec
from ..registry import register
from ..residuals import BlockKind, RowBlock
from ..settings import Method
from ..skeleton import Skeleton
from .common import dof_bounds, goal_joints
from .dls import damped_step


def _aim_vectors(
    skeleton: Skeleton,
    goal: AimGoal,
    joint: int,
    rot: FloatArray,
    org: FloatArray,
    rows: NDArray[np.intp],
) -> tuple[FloatArray, FloatArray]:
    """Current world ray axis a and unit direction u from the ray origin to the target."""
    b = rot.shape[0]

    def pick(value: object) -> FloatArray:
        arr = np.asarray(value, dtype=np.float64)
        if arr.ndim == 1:
            return np.broadcast_to(arr, (b, 3))
        out: FloatArray = arr[rows]
        return out

    rj = rot[:, joint]
    a = np.einsum("bij,bj->bi", rj, pick(goal.axis))
    o = np.einsum("bij,bj->bi", rj, pick(goal.origin)) + org[:, joint]
    v = pick(goal.target) - o
    d = np.sqrt(np.sum(v * v, axis=-1))
    u = np.where((d < 1e-12)[:, None], a, v / np.where(d < 1e-12, 1.0, d)[:, None])
    return a, u


def _ccd_angle(
    qj: FloatArray, big_a: FloatArray, big_b: FloatArray, lj: FloatArray, hj: FloatArray
) -> FloatArray:
    """New value of one DOF: q_j + φ*, φ* = atan2(B, A) (0 when A = B = 0), or the bound
    of [lj, hj] with the larger cos(bound − q_j − φ*) when q_j + φ* is outside."""
    phi = np.arctan2(big_b, big_a)
    phi = np.where((big_a == 0.0) & (big_b == 0.0), 0.0, phi)
    return _into(qj + phi, lj, hj)


def _into(target: FloatArray, lj: FloatArray, hj: FloatArray) -> FloatArray:
    """``target`` where inside [lj, hj], else the bound with the larger cos(bound − target)
    (f(φ) = const − (A cos φ + B sin φ) restricted to the interval)."""
    inside = (target >= lj) & (target <= hj)
    if np.logical_and.reduce(inside, axis=None):
        return target
    cl = np.cos(np.where(np.isfinite(lj), lj, 0.0) - target)
    ch = np.cos(np.where(np.isfinite(hj), hj, 0.0) - target)
    cl = np.where(np.isfinite(lj), cl, -np.inf)
    ch = np.where(np.isfinite(hj), ch, -np.inf)
    out: FloatArray = np.where(inside, target, np.where(ch >= cl, hj, lj))
    return out


def _position_terms(ei: FloatArray, c: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """CCD's (A, B) of one POSITION/DIRECTION block (module docstring)."""
    return 2.0 * (np.sum(c * c, -1) + np.sum(ei * cross_rows(c, w), -1)), 2.0 * np.sum(ei * c, -1)


def _translation_sweep(
    state: StepState, f: FloatArray, lo: FloatArray, hi: FloatArray
) -> FloatArray:
    """The sweep's change ``f`` with a Free joint's translations (visited last: they are
    root DOFs) replaced by their exact coordinate-block step: the residual is linear in
    them, so the least-squares Δt of their Jacobian columns at q + f (one evaluation),
    clipped to [lo, hi] (the sweeps treat every DOF as a rotation)."""
    pr = state.skeleton.kinematic_plan.prismatic
    f = f.copy()
    f[:, pr] = 0.0
    e, jac, _ = state.evaluate(state.q + f)
    dt = matvec(np.linalg.pinv(jac[:, :, pr]), e)
    qp = state.q[:, pr]
    f[:, pr] = np.clip(qp + dt, lo[:, pr], hi[:, pr]) - qp
    return f


@lru_cache(maxsize=64)
def _inner_dofs(skeleton: Skeleton) -> tuple[NDArray[np.intp], ...]:
    """Per DOF j: the DOFs i < j of the same joint whose world axis turns with DOF j (the
    Ball's Euler components applied after it, nearer the child; their kinematic nodes
    are deeper, hence numbered higher)."""
    node = skeleton.kinematic_plan.dof_node
    dj = skeleton.dof_joint
    idx = np.arange(skeleton.n_dofs)
    return tuple(
        np.flatnonzero((dj == dj[j]) & (node > node[j]) & (idx < j)) for j in range(skeleton.n_dofs)
    )


#: [w]× = [[0, −w_z, w_y], [w_z, 0, −w_x], [−w_y, w_x, 0]] (so [w]× v = w × v, and
#: w · vee(H − Hᵀ) = Σ_ij ([w]×)_ij H_ij): the flat entries that are +w_(x,y,z) and
#: −w_(x,y,z) (the diagonal 0, 4, 8 is 0).
_K_PLUS = np.array([7, 2, 3])
_K_MINUS = np.array([5, 6, 1])
_EYE3 = np.eye(3)


def _axis_operators(w: FloatArray, out: FloatArray) -> None:
    """Writes P = I − wwᵀ and K = [w]× of unit axes w (..., 3, b) into ``out`` (..., 2,
    3, 3, b) (batch last). For a DOF about w through p, A = Σ_ij P_ij H_ij, B = Σ_ij
    K_ij H_ij, and its rotation by δ is R = I + sin δ K − (1 − cos δ) P (Rodrigues)."""
    np.subtract(
        _EYE3[:, :, None], w[..., :, None, :] * w[..., None, :, :], out=out[..., 0, :, :, :]
    )
    k = out[..., 1, :, :, :].reshape(w.shape[:-2] + (9, w.shape[-1]))
    k[..., 0::4, :] = 0.0
    k[..., _K_PLUS, :] = w
    k[..., _K_MINUS, :] = -w


_Sel = slice | NDArray[np.intp]


class _One(NamedTuple):
    """One DOF of the fast sweep (its place in the sweep's DOF order, :class:`_Plan`):
    its goals (position / rotation selections with 2 × / 1 × their weights, None
    without such goals) and its joint's inner DOFs (places; None without)."""

    dof: int
    mp: _Sel
    wp: FloatArray | None
    mr: _Sel
    wr: FloatArray | None
    inner: _Sel | None


class _Group(NamedTuple):
    """g ≥ 2 mutually independent DOFs updated at once (:func:`_sweep_plan`), adjacent
    in the sweep's DOF order (``dofs``: their places, ``size`` g): the position goals
    below a member with 2 × their weights (None without) and the member below which
    each lies (``pos_owner``; ``pos_direct``: goal i lies below member i, one goal
    each), per DOF the weights of every rotation goal (0 for goals not below it; None
    without), the goals they turn with the member that turns each (``rot_owner``), and
    the inner DOFs (places) with their member (None without)."""

    dofs: slice
    size: int
    pos_w: FloatArray | None
    pos_sel: NDArray[np.intp]
    pos_owner: NDArray[np.intp]
    pos_direct: bool
    wr: FloatArray | None
    rot_sel: NDArray[np.intp]
    rot_owner: NDArray[np.intp]
    inner: NDArray[np.intp] | None
    inner_owner: NDArray[np.intp]


class _Plan(NamedTuple):
    """The fast sweep's schedule: its DOF order (the DOFs of each step adjacent, so that
    a step's rows of the per-DOF arrays are a view; the DOFs that move no goal last;
    None: the DOFs' own order already is such), their kinematic nodes and the steps."""

    order: NDArray[np.intp] | None
    nodes: NDArray[np.intp]
    steps: tuple[_One | _Group, ...]


@lru_cache(maxsize=64)
def _sweep_plan(
    skeleton: Skeleton,
    pos: tuple[tuple[int, float], ...],
    rot: tuple[tuple[int, float], ...],
) -> _Plan:
    """The fast sweep's schedule (keyed by the goals' (joint, weight) pairs). The sweep
    visits the DOFs that move a goal from the last to the first; two DOFs are
    *independent* when no goal lies below both and neither's joint lies below (or is)
    the other's — then neither update changes what the other sees, and they commute.
    Each DOF gets a level, one more than the highest level of the dependent DOFs visited
    before it; a level's DOFs are updated together (the branches of a tree side by
    side), which gives exactly the sequential sweep's result. The per-DOF arrays of the
    sweep are kept in the order of the steps (:class:`_Plan`), so that a step reads and
    writes its DOFs' rows through views."""
    anc = skeleton.ancestors
    dj = skeleton.dof_joint
    below = anc[dj]  # (n, J)
    n = skeleton.n_dofs
    wp_all = 2.0 * np.array([w for _, w in pos])
    wr_all = np.array([w for _, w in rot])
    pj = [g for g, _ in pos]
    rj = [g for g, _ in rot]
    inner = _inner_dofs(skeleton)

    def select(cols: NDArray[np.bool_]) -> _Sel:
        idx = np.flatnonzero(cols)
        if idx.size and idx[-1] - idx[0] == idx.size - 1:  # contiguous: a view
            return slice(int(idx[0]), int(idx[-1]) + 1)
        return idx

    bp = below[:, pj] if pos else np.zeros((n, 0), dtype=bool)
    br = below[:, rj] if rot else np.zeros((n, 0), dtype=bool)
    order = [j for j in range(n - 1, -1, -1) if bp[j].any() or br[j].any()]
    level: dict[int, int] = {}
    for i, k in enumerate(order):
        deps = [
            level[j]
            for j in order[:i]
            if (bp[j] & bp[k]).any()
            or (br[j] & br[k]).any()
            or anc[dj[j], dj[k]]
            or anc[dj[k], dj[j]]
        ]
        level[k] = 1 + max(deps, default=-1)
    steps = [
        [j for j in order if level[j] == lv] for lv in range(max(level.values(), default=-1) + 1)
    ]
    for i, dofs in enumerate(steps):
        if len(dofs) > 1:  # one position goal per member: members in the order of their goals
            owner_p = np.argmax(bp[dofs], axis=0)[np.flatnonzero(bp[dofs].any(axis=0))]
            if np.array_equal(np.sort(owner_p), np.arange(len(dofs))):
                steps[i] = [dofs[m] for m in owner_p]
    # the DOFs' own order where each step's DOFs are already adjacent and ascending
    natural = all(dofs == list(range(dofs[0], dofs[0] + len(dofs))) for dofs in steps)
    sweep = list(range(n)) if natural else [j for dofs in steps for j in dofs]
    sweep += [j for j in range(n) if j not in sweep]
    place = np.empty(n, dtype=np.intp)
    place[sweep] = np.arange(n)
    plan: list[_One | _Group] = []
    for dofs in steps:
        start = int(place[dofs[0]])
        if len(dofs) == 1:
            j = dofs[0]
            mp, mr = select(bp[j]), select(br[j])
            plan.append(
                _One(
                    start,
                    mp,
                    wp_all[mp] if bp[j].any() else None,
                    mr,
                    wr_all[mr] if br[j].any() else None,
                    select(np.isin(np.arange(n), place[inner[j]])) if inner[j].size else None,
                )
            )
            continue
        pos_sel = np.flatnonzero(bp[dofs].any(axis=0))
        owner_p = np.argmax(bp[dofs], axis=0)[pos_sel]  # the member each goal is below
        g = np.array(dofs)
        owner_r = np.argmax(br[g], axis=0)
        rot_sel = np.flatnonzero(br[g].any(axis=0))
        ins = [(int(place[i]), m) for m, j in enumerate(dofs) for i in inner[j]]
        plan.append(
            _Group(
                slice(start, start + g.size),
                g.size,
                wp_all[pos_sel] if pos_sel.size else None,
                pos_sel,
                owner_p,
                np.array_equal(owner_p, np.arange(g.size)),
                (br[g] * wr_all) if br[g].any() else None,
                rot_sel,
                owner_r[rot_sel],
                np.array([i for i, _ in ins], dtype=np.intp) if ins else None,
                np.array([m for _, m in ins], dtype=np.intp),
            )
        )
    places = np.array(sweep, dtype=np.intp)
    nodes = skeleton.kinematic_plan.dof_node[places]
    return _Plan(None if natural else places, nodes, tuple(plan))


def _moments(w2: FloatArray, u: FloatArray, v: FloatArray) -> FloatArray:
    """Per goal k the moment w2_k u_k v_kᵀ (k, 3, 3, b) of u, v (k, 3, b) (``u`` is
    scaled in place)."""
    u *= w2[:, None, None]
    out: FloatArray = u[:, :, None] * v[:, None]
    return out


def _group_update(
    grp: _Group,
    q: FloatArray,
    points: FloatArray,
    targets: FloatArray,
    err: FloatArray,
    w_all: FloatArray,
    p_all: FloatArray,
    ops: FloatArray,
    lo_rel: FloatArray,
    hi_rel: FloatArray,
    noise: FloatArray,
) -> None:
    """The fast sweep's update of a :class:`_Group` of independent DOFs (in place, batch
    last like :meth:`CCDStep._fast_sweep`; its single-DOF update with a member axis)."""
    g, size = grp.dofs, grp.size  # a slice: views of the per-DOF arrays
    piv = p_all[g]  # (g, 3, b)
    h: FloatArray | None = None
    if grp.pos_w is not None:
        # per position goal below a member: 2w (t − p)(s − p)ᵀ, summed per member
        own = piv if grp.pos_direct else piv[grp.pos_owner]  # (S, 3, b)
        rel = points[grp.pos_sel] - own
        h = _moments(grp.pos_w, targets[grp.pos_sel] - own, rel)
        if not grp.pos_direct:
            per_goal = h
            h = np.zeros((size,) + per_goal.shape[1:])
            np.add.at(h, grp.pos_owner, per_goal)
    if grp.wr is not None:
        hr = np.einsum("gk,kijb->gijb", grp.wr, err)
        h = hr if h is None else h + hr
    assert h is not None
    op = ops[g]  # (g, 2, 3, 3, b)
    nb = h.shape[-1]
    ab = np.einsum("gcxb,gxb->gcb", op.reshape(size, 2, 9, nb), h.reshape(size, 9, nb))
    delta = np.arctan2(ab[:, 1], ab[:, 0])
    flat = np.add.reduce(ab * ab, axis=1) <= noise
    if np.logical_or.reduce(flat, axis=None):
        delta[flat] = 0.0
    delta = _into(delta, lo_rel[g], hi_rel[g])
    q[g] += delta
    sc = np.empty((size, 2, nb))  # 1 − cos δ, sin δ
    np.cos(delta, out=sc[:, 0])
    np.subtract(1.0, sc[:, 0], out=sc[:, 0])
    np.sin(delta, out=sc[:, 1])
    turn_t = _EYE3[:, :, None] - np.einsum("gcb,gcijb->gijb", sc, op)  # (g, 3, 3, b)
    if grp.pos_w is not None:
        turn_p = turn_t if grp.pos_direct else turn_t[grp.pos_owner]
        points[grp.pos_sel] = own + np.einsum("sib,sijb->sjb", rel, turn_p)
    if grp.rot_sel.size:
        err[grp.rot_sel] = np.einsum("saib,sijb->sajb", err[grp.rot_sel], turn_t[grp.rot_owner])
    if grp.inner is not None:
        turned = np.einsum("sib,sijb->sjb", w_all[grp.inner], turn_t[grp.inner_owner])
        w_all[grp.inner] = turned
        ops_in = np.empty(turned.shape[:1] + (2, 3, 3, nb))
        _axis_operators(turned, ops_in)
        ops[grp.inner] = ops_in


@register
class CCDStep(IKSolver):
    """Cyclic coordinate descent per DOF with limits (Lee; module docstring).

    Fast path (the same updates without n forward kinematics per sweep) when every
    weighted goal block is a POSITION or ROTATION block: rotating DOF j by δ turns
    everything below it — the goal points and goal-joint rotations of the goals under its
    joint, and the world axes of its own joint's inner Euler components — by the
    rotation about its world axis w_j through its origin p_j, and nothing else the rest
    of the sweep needs (the DOFs still to visit belong to ancestors, other branches or
    the same joint; parents come before children). So the sweep turns those points,
    error rotations and axes in place. Both block kinds reduce to one 3 × 3 moment
    H = Σ 2wᵢ (tᵢ − p)(sᵢ − p)ᵀ + Σ w_k E_k (goal points s, targets t, error rotations
    E = R_t R_cᵀ of the goals below the DOF): A = tr H − wᵀHw, B = w · vee(H − Hᵀ)
    (the module docstring's sums; for a rotation block with cos θ = (tr E − 1)/2,
    sin θ k = vee(E − Eᵀ)/2), so a DOF costs a handful of batched calls whatever the
    goal count. A DOF whose (A, B) is at rounding level (its goals lie on its axis) stays.
    DOFs that cannot affect each other (the branches of a tree) are updated together
    (:func:`_sweep_plan`; Buss's double-Y: 9 batched steps instead of 25), with exactly
    the sequential sweep's result. The state is recomputed from scratch at the next loop
    iteration, so rounding does not accumulate across sweeps. DIRECTION and AIM blocks
    use the re-evaluating sweep.

    Each iteration is a sweep, Anderson-accelerated, with a damped least-squares rescue
    (:meth:`_accelerate`). Default budget 1,000 iterations (measured convergence:
    docs/decisions.md)."""

    method = Method.CCD
    default_max_iterations = 1000
    uses_frames = True
    #: A sweep is many short calls per DOF, so a second thread pays only on more work
    #: (measured crossovers: docs/decisions.md).
    work_per_thread = 25_000

    #: Anderson acceleration depth (sweeps remembered), :meth:`_accelerate`; 0 turns the
    #: acceleration and the rescue off (plain sweeps); the choice of depth is measured in
    #: docs/decisions.md.
    DEPTH = 5
    #: Per batch row: last q and sweep residual f, ring of ΔG and ΔF, and the rescue's
    #: damping factor μ (start()).
    _hist: tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray] | None = None

    def start(self, rows: int, n: int) -> None:
        m = self.DEPTH
        self._memo = {}
        self._targets = {}
        self._hist = (
            np.zeros((rows, n)),
            np.zeros((rows, n)),
            np.zeros((rows, m, n)),
            np.zeros((rows, m, n)),
            np.ones(rows),
        )

    #: Per thread: the rows and the accelerated points' evaluation memo.
    _memo: dict[int, tuple[NDArray[np.intp], dict[str, Any]]]
    #: Per thread: the rows, the goals and the fast sweep's (Lp, 3, b) position targets.
    _targets: dict[int, tuple[NDArray[np.intp], tuple[Goal, ...], FloatArray]]

    def step(self, state: StepState) -> FloatArray:
        sk = state.skeleton
        gj = goal_joints(sk, state.goals)
        lo, hi = dof_bounds(state)
        active = [blk for blk in state.blocks if blk.weight > 0.0]
        if all(b.kind in (BlockKind.POSITION, BlockKind.ROTATION) for b in active):
            # the position targets kept per thread after start() (not in step_once)
            cache = self.__dict__.get("_targets")
            f = self._fast_sweep(state, active, gj, lo, hi, cache)
        else:
            f = self._general_sweep(state, gj, lo, hi)
        if sk.kinematic_plan.prismatic.size:
            f = _translation_sweep(state, f, lo, hi)
        if self._hist is None or self.DEPTH == 0:  # step_once: one plain sweep
            return f
        return self._accelerate(state, f)

    def _accelerate(self, state: StepState, f: FloatArray) -> FloatArray:
        """Anderson acceleration of the sweeps (Anderson 1965; Walker & Ni 2011, type II)
        with a damped least-squares rescue (the combination of CCD with a Newton-type
        method, Wang & Chen 1991).

        Anderson: a sweep is a fixed-point map q ↦ T(q) = q + f(q); with the last m changes
        ΔG = [T(q_i) − T(q_{i−1})] and ΔF = [f(q_i) − f(q_{i−1})], γ = argmin ‖f − ΔF γ‖
        and q⁺ = T(q) − ΔG γ (γ from the m × m normal equations with a 1e-10 relative
        ridge). Rescue: near singular configurations (the arm's elbow nearly straight)
        the sweeps and their Anderson points crawl, so beside q⁺ the step proposes the damped
        least-squares step from q, Δq = Jᵀ(JJᵀ + λ²I)⁻¹e (Buss Eq. 11, the loop's J and e),
        with λ = μ · ``damping`` and a per-row μ following Levenberg–Marquardt's rule (× 10
        after a rejected rescue, ÷ 10 after an accepted one, within [1, 1e4]). Both
        candidates are clamped to ``max_step`` and clipped to the limits, and cost one
        residual evaluation each. Safeguarded: q⁺ is taken when its objective ‖e‖² is below
        the one at q, else the rescue when it is, else the plain sweep T(q) — so the objective
        never increases; the history is kept either way. The rescue is computed and
        evaluated only for the rows whose q⁺ is rejected (alternatives measured and
        rejected: docs/decisions.md). Cost per iteration: one sweep, the k × k solve and
        one residual evaluation, plus a DLS solve and an evaluation in the iterations that
        need the rescue."""
        q_last, f_last, dg, df, mu = self._hist  # type: ignore[misc]
        rows = state.rows
        # contiguous rows (the usual case until rows finish) index the history as views
        at: slice | NDArray[np.intp] = rows
        if rows.size and int(rows[-1]) - int(rows[0]) == rows.size - 1:
            at = slice(int(rows[0]), int(rows[-1]) + 1)
        q = state.q
        # every row still iterating has taken state.iteration sweeps before this one
        c = state.iteration
        m = self.DEPTH
        if c > 0:  # ring slot (c − 1) mod m: the first k = min(c, m) slots are filled
            slot = (c - 1) % m
            df[at, slot] = f - f_last[at]
            dg[at, slot] = df[at, slot] + (q - q_last[at])
        q_last[at] = q
        f_last[at] = f
        if c == 0:
            return f
        # Anderson: γ = argmin ‖f − ΔF γ‖ over the k sweeps remembered, q⁺ = T(q) − ΔG γ
        k = min(c, m)
        a_f, a_g = df[at, :k], dg[at, :k]
        gram = a_f @ np.swapaxes(a_f, -1, -2)
        diag = gram.reshape(-1, k * k)[:, :: k + 1]
        diag += 1e-10 * np.maximum(np.add.reduce(diag, axis=1), 1e-300)[:, None]
        gamma = np.linalg.solve(gram, matvec(a_f, f)[..., None])  # (b, k, 1)
        acc = f - (np.swapaxes(gamma, -1, -2) @ a_g)[:, 0]  # q⁺ − q
        st = state.settings
        sk = state.skeleton
        clip = st.use_limits and sk.has_limits
        cand = q + clamp_max_abs(acc, st.max_step)
        if clip:
            cand = sk.clip_unchecked(cand)
        # its ‖e‖² (an evaluation memo kept while the rows stay the same)
        key = threading.get_ident()
        kept = self._memo.get(key)
        if kept is None or kept[0] is not rows:
            kept = (rows, {})
            self._memo[key] = kept
        obj0 = sum_squares(state.e)
        better = sk.sum_squared_error(cand, state.goals, rows=rows, memo=kept[1]) < obj0
        out: FloatArray = cand - q
        if np.logical_and.reduce(better):
            return out
        # the rescue where q⁺ is rejected: a damped least-squares step from q, λ = μ·damping
        bad = np.flatnonzero(~better)
        mu_b = mu[rows[bad]]
        lam2 = np.maximum(st.damping**2 * mu_b * mu_b, 1e-300)
        q_b = q[bad]
        cand_b = q_b + clamp_max_abs(damped_step(state.J[bad], state.e[bad], lam2), st.max_step)
        if clip:
            cand_b = sk.clip_unchecked(cand_b)
        rescue = sk.sum_squared_error(cand_b, state.goals, rows=rows[bad]) < obj0[bad]
        # Levenberg–Marquardt's rule for μ
        mu[rows[bad]] = np.where(rescue, np.maximum(mu_b / 10.0, 1.0), np.minimum(mu_b * 10.0, 1e4))
        out[bad] = np.where(rescue[:, None], cand_b - q_b, f[bad])
        return out

    @staticmethod
    def _fast_sweep(
        state: StepState,
        active: list[RowBlock],
        gj: list[int],
        lo: FloatArray,
        hi: FloatArray,
        cache: dict[int, tuple[NDArray[np.intp], tuple[Goal, ...], FloatArray]] | None = None,
    ) -> FloatArray:
        # batch last: every array (..., b), so each call runs over contiguous rows
        sk = state.skeleton
        bsz = state.q.shape[0]
        pos_b = [blk for blk in active if blk.kind is BlockKind.POSITION]
        rot_b = [blk for blk in active if blk.kind is BlockKind.ROTATION]
        plan = _sweep_plan(
            sk,
            tuple((gj[blk.goal], blk.weight) for blk in pos_b),
            tuple((gj[blk.goal], blk.weight) for blk in rot_b),
        )
        order = plan.order  # the per-DOF arrays below are in the sweep's DOF order
        last = None if state.frames_last is None else state.frames_last()
        if last is not None and not rot_b:  # DOF axes and origins from the axis frames
            w_all = last[plan.nodes, 2]  # (n, 3, b) (a copy), turned in place
            p_all = last[plan.nodes, 3]
            rot = None
        else:
            known = None if state.frames is None else state.frames()
            rot, _, w_bf, p_bf = (
                sk.kinematics(state.q) if known is None else sk.kinematics_of(known)
            )
            w_all = np.ascontiguousarray(w_bf.transpose(1, 2, 0))
            p_all = np.ascontiguousarray(p_bf.transpose(1, 2, 0))
            if order is not None:
                w_all, p_all = w_all[order], p_all[order]
        q = state.q.T.copy() if order is None else state.q.T[order]  # (n, b)

        def pick(value: object, nd: int) -> FloatArray:
            arr = np.asarray(value, dtype=np.float64)
            out: FloatArray = arr if arr.ndim == nd else arr[state.rows]
            return out

        # position blocks: targets (kept per thread while the rows stay the same) and
        # current goal points (Lp, 3, b)
        key = threading.get_ident()
        kept = None if cache is None else cache.get(key)
        if kept is not None and kept[0] is state.rows and kept[1] is state.goals:
            targets = kept[2]
        else:
            targets = np.empty((len(pos_b), 3, bsz))
            for i, blk in enumerate(pos_b):
                t = pick(state.goals[blk.goal].position, 1)  # type: ignore[union-attr]
                targets[i] = t[:, None] if t.ndim == 1 else t.T
            if cache is not None:
                cache[key] = (state.rows, state.goals, targets)
        points = np.empty((len(pos_b), 3, bsz))
        for i, blk in enumerate(pos_b):
            points[i] = targets[i] - state.e[:, blk.rows].T / math.sqrt(blk.weight)
        # rotation blocks: error rotations E = R_t R_cᵀ (Lr, 3, 3, b)
        r_t = np.empty((bsz, len(rot_b), 3, 3))
        for i, blk in enumerate(rot_b):
            r_t[:, i] = pick(state.goals[blk.goal].rotation, 2)  # type: ignore[union-attr]
        err = np.empty((0, 3, 3, bsz))
        if rot is not None:
            err = np.ascontiguousarray(
                (r_t @ np.swapaxes(rot[:, [gj[blk.goal] for blk in rot_b]], -1, -2)).transpose(
                    1, 2, 3, 0
                )
            )
        ops = np.empty((q.shape[0], 2, 3, 3, bsz))
        _axis_operators(w_all, ops)
        # rounding level of A and B per row: Σ weights × the largest squared distance
        # between a pivot and a goal point or target (1 for rotations)
        reach = np.concatenate([targets, points])[:, None] - p_all[None]
        np.multiply(reach, reach, out=reach)
        reach2 = np.maximum.reduce(
            np.add.reduce(reach, axis=2).reshape(reach.shape[0] * reach.shape[1], bsz),
            axis=0,
            initial=0.0,
        )
        wsum = 2.0 * sum(blk.weight for blk in pos_b)
        noise = (1e-13 * (wsum * reach2 + sum(blk.weight for blk in rot_b))) ** 2
        sc = np.empty((2, bsz))  # 1 − cos δ, sin δ
        # the bounds relative to q (DOF j keeps its value until its own update)
        lo_rel, hi_rel = (lo - state.q).T, (hi - state.q).T
        if order is not None:
            lo_rel, hi_rel = lo_rel[order], hi_rel[order]
        for entry in plan.steps:
            if isinstance(entry, _Group):
                grid = (w_all, p_all, ops, lo_rel, hi_rel, noise)
                _group_update(entry, q, points, targets, err, *grid)
                continue
            j, mp, wp, mr, wr, inner = entry
            p1 = p_all[j]
            # H = Σ 2w_i (t_i − p)(s_i − p)ᵀ + Σ w_k E_k; (A, B) = Σ_ij (P, K)_ij H_ij
            h: FloatArray | None = None
            if wp is not None:
                rel = points[mp] - p1
                h = _moments(wp, targets[mp] - p1, rel)
                h = h[0] if h.shape[0] == 1 else np.add.reduce(h, axis=0)
            if wr is not None:
                e_sel = err[mr]
                hr = np.einsum("k,kijb->ijb", wr, e_sel)
                h = hr if h is None else h + hr
            assert h is not None  # the plan lists only DOFs that move a goal
            op = ops[j]
            ab = np.einsum("cxb,xb->cb", op.reshape(2, 9, bsz), h.reshape(9, bsz))
            # a DOF that moves none of its goals (a point on its axis) has A and B at
            # rounding level: it stays instead of turning by the angle of noise
            flat = np.add.reduce(ab * ab, axis=0) <= noise
            delta = np.arctan2(ab[1], ab[0])
            if np.logical_or.reduce(flat):
                delta[flat] = 0.0
            delta = _into(delta, lo_rel[j], hi_rel[j])
            q[j] += delta
            # Rᵀ = I − (1 − cos δ) P − sin δ K
            np.cos(delta, out=sc[0])
            np.subtract(1.0, sc[0], out=sc[0])
            np.sin(delta, out=sc[1])
            turn_t = _EYE3[:, :, None] - np.einsum("cb,cijb->ijb", sc, op)
            if wp is not None:
                points[mp] = p1 + np.einsum("kib,ijb->kjb", rel, turn_t)
            if wr is not None:
                err[mr] = np.einsum("kaib,ijb->kajb", e_sel, turn_t)
            if inner is not None:
                turned = np.einsum("kib,ijb->kjb", w_all[inner], turn_t)
                w_all[inner] = turned
                if isinstance(inner, slice):  # a view: written in place
                    _axis_operators(turned, ops[inner])
                else:
                    ops_in = np.empty(turned.shape[:1] + (2, 3, 3, bsz))
                    _axis_operators(turned, ops_in)
                    ops[inner] = ops_in
        if order is None:
            return q.T - state.q
        swept = np.empty_like(q)
        swept[order] = q
        return swept.T - state.q

    @staticmethod
    def _general_sweep(
        state: StepState, gj: list[int], lo: FloatArray, hi: FloatArray
    ) -> FloatArray:
        st = state.settings
        sk = state.skeleton
        q0 = state.q
        q = q0.copy()
        e, jac = state.e, state.J
        n = q.shape[1]
        memo: dict[str, object] = {}
        rot, org, w_all, _ = sk.kinematics(q)
        for j in range(n - 1, -1, -1):
            w = w_all[:, j]  # (b, 3) world axis of DOF j
            big_a = np.zeros(q.shape[0])
            big_b = np.zeros(q.shape[0])
            for blk in state.blocks:
                if blk.weight == 0.0 or not sk.ancestors[sk.dof_joint[j], gj[blk.goal]]:
                    continue
                ei = e[:, blk.rows]
                c = jac[:, blk.rows, j]
                if blk.kind is BlockKind.POSITION or blk.kind is BlockKind.DIRECTION:
                    if blk.kind is BlockKind.POSITION and st.target_jacobian:
                        c = c - cross_rows(w, ei)  # back to √w · w × (s − p)
                    da, db = _position_terms(ei, c, w)
                    big_a += da
                    big_b += db
                elif blk.kind is BlockKind.ROTATION:
                    sw = math.sqrt(blk.weight)
                    vec = ei / sw
                    th = np.sqrt(np.sum(vec * vec, -1))
                    k = vec / np.where(th > 0.0, th, 1.0)[:, None]
                    kw = np.sum(k * w, -1)
                    ct = np.cos(th)
                    big_a += blk.weight * (2.0 * ct + (1.0 - ct) * (1.0 - kw * kw))
                    big_b += blk.weight * 2.0 * np.sin(th) * kw
                else:  # AIM: a direction goal towards the current u
                    goal = state.goals[blk.goal]
                    assert isinstance(goal, AimGoal)
                    a, u = _aim_vectors(sk, goal, gj[blk.goal], rot, org, state.rows)
                    da, db = _position_terms(u - a, cross_rows(w, a), w)
                    big_a += blk.weight * da
                    big_b += blk.weight * db
            q[:, j] = _ccd_angle(q[:, j], big_a, big_b, lo[:, j], hi[:, j])
            if j > 0:  # re-evaluate (the frames give the next DOF's axis)
                ev = sk.evaluate(
                    q, state.goals, rows=state.rows, target_based=st.target_jacobian, memo=memo
                )
                assert ev.J is not None and ev.frames is not None
                e, jac = ev.e, ev.J
                rot, org, w_all, _ = sk.kinematics_of(ev.frames)
        return q - q0
