"""Cyclic coordinate descent (Lee)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from ...geometry.rotations import rodrigues
from ...geometry.vec3 import cross_rows
from ...goals import AimGoal
from ..loop import FloatArray, IKSolver, StepState, clamp_max_abs, matvec
from ..registry import register
from ..residuals import BlockKind, RowBlock
from ..settings import Method
from ..skeleton import Skeleton
from .common import dof_bounds, goal_joints


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
    target: FloatArray = qj + phi
    inside = (target >= lj) & (target <= hj)
    if inside.all():
        return target
    cl = np.cos(np.where(np.isfinite(lj), lj, 0.0) - qj - phi)
    ch = np.cos(np.where(np.isfinite(hj), hj, 0.0) - qj - phi)
    cl = np.where(np.isfinite(lj), cl, -np.inf)
    ch = np.where(np.isfinite(hj), ch, -np.inf)
    out: FloatArray = np.where(inside, target, np.where(ch >= cl, hj, lj))
    return out


def _position_terms(ei: FloatArray, c: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """CCD's (A, B) of one POSITION/DIRECTION block (module docstring)."""
    return 2.0 * (np.sum(c * c, -1) + np.sum(ei * cross_rows(c, w), -1)), 2.0 * np.sum(ei * c, -1)


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


@register
class CCDStep(IKSolver):
    """Cyclic coordinate descent per DOF with limits (Lee; module docstring).

    Fast path (the same updates without n forward kinematics per sweep) when every
    weighted goal block is a POSITION or ROTATION block: rotating DOF j by δ turns
    everything below it — the goal points and goal-joint rotations of the goals under its
    joint, and the world axes of its own joint's inner Euler components — by the
    rotation about its world axis w_j through its origin p_j, and nothing else the rest
    of the sweep needs (the DOFs still to visit belong to ancestors, other branches or
    the same joint; parents come before children). So the sweep updates those points,
    rotations and axes by Rodrigues' formula. A rotation block's terms come straight
    from E = R_t R_cᵀ: A = w (tr E − wᵀEw), B = w · w·vee(E − Eᵀ) (the module
    docstring's formulas with cos θ = (tr E − 1)/2, sin θ k = vee(E − Eᵀ)/2). The state
    is recomputed from scratch at the next loop iteration, so rounding does not
    accumulate across sweeps. DIRECTION and AIM blocks use the re-evaluating sweep."""

    method = Method.CCD
    default_max_iterations = 1000
    #: A sweep is many short calls per DOF, so a second thread pays only on more work
    #: (measured crossovers: docs/decisions.md).
    work_per_thread = 25_000

    #: Anderson acceleration depth (sweeps remembered), :meth:`_accelerate`; 0 turns it
    #: off. Measured on 20 random reachable targets 0.3 rad away, budget 1,000 sweeps
    #: (plain CCD → accelerated, reached and median sweeps): Y 18/20, 238 → 20/20, 18;
    #: double-Y 19/20, 298 → 20/20, 34; arm pose 12/20 (2,000 sweeps), 1,626 → 19/20, 25
    #: (the miss ends at 9e-3, where plain CCD ends too); 12-joint chain 20/20, 54 → 15.
    #: Depth 10 gave the same rates.
    DEPTH = 5
    #: Per batch row: last q and sweep residual f, ring of ΔG and ΔF, count (start()).
    _hist: tuple[FloatArray, FloatArray, FloatArray, FloatArray, NDArray[np.intp]] | None = None

    def start(self, rows: int, n: int) -> None:
        m = self.DEPTH
        self._hist = (
            np.zeros((rows, n)),
            np.zeros((rows, n)),
            np.zeros((rows, m, n)),
            np.zeros((rows, m, n)),
            np.zeros(rows, dtype=np.intp),
        )

    def step(self, state: StepState) -> FloatArray:
        sk = state.skeleton
        gj = goal_joints(sk, state.goals)
        lo, hi = dof_bounds(state)
        active = [blk for blk in state.blocks if blk.weight > 0.0]
        if all(b.kind in (BlockKind.POSITION, BlockKind.ROTATION) for b in active):
            f = self._fast_sweep(state, active, gj, lo, hi)
        else:
            f = self._general_sweep(state, gj, lo, hi)
        if self._hist is None or self.DEPTH == 0:  # step_once: one plain sweep
            return f
        return self._accelerate(state, f)

    def _accelerate(self, state: StepState, f: FloatArray) -> FloatArray:
        """Anderson acceleration of the sweeps (Anderson 1965; Walker & Ni 2011, type II):
        a sweep is a fixed-point map q ↦ T(q) = q + f(q); with the last m changes
        ΔG = [T(q_i) − T(q_{i−1})] and ΔF = [f(q_i) − f(q_{i−1})], γ = argmin ‖f − ΔF γ‖
        and q⁺ = T(q) − ΔG γ (γ from the m × m normal equations with a 1e-10 relative
        ridge). Safeguarded: q⁺ is taken only when its objective is below the one at q (one
        evaluation), else the plain sweep T(q); the history is kept either way. Comparing
        with T(q) instead (a second evaluation) rejected almost every accelerated step —
        Anderson steps are not monotone per sweep but much faster over several — and
        restarting the history on a rejection left 1–4 of 20 rows crawling. Checking the
        accelerated point lazily instead (at the next iteration, from the loop's own
        evaluation, falling back to T(q) there) saves the evaluation but measured worse
        (100 problems: Y 98 % against 100 %, arm pose 84 % against 93 %). Cost: one
        sweep plus this evaluation and the m × m solve — 11–19 % more per iteration than
        a plain sweep (Y, double-Y, arm), for 5–60× fewer iterations."""
        q_last, f_last, dg, df, cnt = self._hist  # type: ignore[misc]
        rows = state.rows
        q = state.q
        g = q + f
        m = self.DEPTH
        c = cnt[rows]
        have = c > 0
        slot = c % m
        if have.any():
            r = rows[have]
            dg[r, slot[have]] = g[have] - (q_last[r] + f_last[r])
            df[r, slot[have]] = f[have] - f_last[r]
        q_last[rows] = q
        f_last[rows] = f
        cnt[rows] = c + 1
        k = np.minimum(c, m)
        use = k > 0
        if not use.any():
            return f
        r = rows[use]
        a_f = df[r] * (np.arange(m) < k[use, None])[:, :, None]  # (u, m, n), unused rows 0
        a_g = dg[r] * (np.arange(m) < k[use, None])[:, :, None]
        gram = a_f @ np.swapaxes(a_f, -1, -2)
        scale = np.maximum(np.trace(gram, axis1=-2, axis2=-1), 1e-300)
        gram = gram + (1e-10 * scale)[:, None, None] * np.eye(m)
        gamma = np.linalg.solve(gram, matvec(a_f, f[use])[..., None])[..., 0]  # (u, m)
        q_acc = g[use] - np.einsum("um,umn->un", gamma, a_g)
        st = state.settings
        q_acc = q[use] + clamp_max_abs(q_acc - q[use], st.max_step)  # the loop's clamp, first
        if st.use_limits:
            q_acc = state.skeleton.clip_unchecked(q_acc)
        trial = q.copy()
        trial[use] = q_acc
        # the residual only (no Jacobian: cheaper than state.evaluate)
        e_t = state.skeleton.evaluate(trial, state.goals, rows=rows, jacobian=False).e
        better = use & (np.sum(e_t * e_t, axis=1) < np.sum(state.e * state.e, axis=1))
        out: FloatArray = np.where(better[:, None], trial - q, f)
        return out

    @staticmethod
    def _fast_sweep(
        state: StepState,
        active: list[RowBlock],
        gj: list[int],
        lo: FloatArray,
        hi: FloatArray,
    ) -> FloatArray:
        sk = state.skeleton
        q = state.q.copy()
        bsz = q.shape[0]
        rot, _, w_all, p_all = sk.kinematics(q)
        w_all = w_all.copy()  # inner Euler axes are turned in place
        pos_b = [blk for blk in active if blk.kind is BlockKind.POSITION]
        rot_b = [blk for blk in active if blk.kind is BlockKind.ROTATION]

        def pick(value: object, nd: int) -> FloatArray:
            arr = np.asarray(value, dtype=np.float64)
            out: FloatArray = arr if arr.ndim == nd else arr[state.rows]
            return out

        # position blocks: goal points (b, Lp, 3), targets, √weight (Lp, 1)
        sw = np.array([math.sqrt(blk.weight) for blk in pos_b]).reshape(-1, 1)
        targets = np.empty((bsz, len(pos_b), 3))
        points = np.empty((bsz, len(pos_b), 3))
        for i, blk in enumerate(pos_b):
            targets[:, i] = pick(state.goals[blk.goal].position, 1)  # type: ignore[union-attr]
            points[:, i] = targets[:, i] - state.e[:, blk.rows] / sw[i]
        # rotation blocks: target and current rotations (b, Lr, 3, 3), weights (Lr,)
        wr = np.array([blk.weight for blk in rot_b])
        r_t = np.empty((bsz, len(rot_b), 3, 3))
        for i, blk in enumerate(rot_b):
            r_t[:, i] = pick(state.goals[blk.goal].rotation, 2)  # type: ignore[union-attr]
        r_c = rot[:, [gj[blk.goal] for blk in rot_b]]
        below = sk.ancestors[sk.dof_joint]
        below_p = below[:, [gj[blk.goal] for blk in pos_b]]  # (n, Lp)
        below_r = below[:, [gj[blk.goal] for blk in rot_b]]  # (n, Lr)
        inner = _inner_dofs(sk)
        for j in range(q.shape[1] - 1, -1, -1):
            mp = np.flatnonzero(below_p[j])
            mr = np.flatnonzero(below_r[j])
            if not (mp.size or mr.size):
                continue  # φ* = 0: the DOF stays (q is inside [lo, hi])
            w, p = w_all[:, j], p_all[:, j]
            big_a = np.zeros(bsz)
            big_b = np.zeros(bsz)
            if mp.size:
                w1, p1 = w[:, None], p[:, None]  # (b, 1, 3)
                rel = points[:, mp] - p1
                wxr = cross_rows(w1, rel)  # also turns the points below (after the update)
                c = sw[mp] * wxr
                ei = sw[mp] * (targets[:, mp] - points[:, mp])
                big_a += 2.0 * (c * c + ei * cross_rows(c, w1)).sum(axis=(1, 2))
                big_b += 2.0 * (ei * c).sum(axis=(1, 2))
            if mr.size:
                e_rot = r_t[:, mr] @ np.swapaxes(r_c[:, mr], -1, -2)  # (b, k, 3, 3)
                tr = np.trace(e_rot, axis1=-2, axis2=-1)
                wew = np.einsum("bi,bkij,bj->bk", w, e_rot, w)
                vee = np.stack(
                    [
                        e_rot[..., 2, 1] - e_rot[..., 1, 2],
                        e_rot[..., 0, 2] - e_rot[..., 2, 0],
                        e_rot[..., 1, 0] - e_rot[..., 0, 1],
                    ],
                    axis=-1,
                )
                big_a += (tr - wew) @ wr[mr]
                big_b += np.einsum("bki,bi->bk", vee, w) @ wr[mr]
            new = _ccd_angle(q[:, j], big_a, big_b, lo[:, j], hi[:, j])
            delta = new - q[:, j]
            q[:, j] = new
            if mp.size:
                ca, sa = np.cos(delta)[:, None, None], np.sin(delta)[:, None, None]
                points[:, mp] = (
                    p1 + rel * ca + wxr * sa + w1 * (np.sum(w1 * rel, -1)[..., None] * (1.0 - ca))
                )
            ins = inner[j]
            if mr.size or ins.size:
                turn = rodrigues(w, delta)
                if mr.size:
                    r_c[:, mr] = turn[:, None] @ r_c[:, mr]
                if ins.size:
                    w_all[:, ins] = np.einsum("bij,bkj->bki", turn, w_all[:, ins])
        return q - state.q

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
