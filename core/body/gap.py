"""How far a goaled limb's goal is from its *limited* workspace, and how that distance
moves with the limb's shoulder frame: the numeric level's limit row of
:func:`~core.body.solve.solve_body`.

A goal inside a limb's shell can still have no swivel φ at which the shoulder and the
wrist are within their Euler limits (Tolani et al. 2000, §3.2.4: the feasible set is
empty). Its *limit gap* is

    r(G) = √ min_φ Σ v_i(φ, G)²,

``v_i`` how far each limited Euler angle of R1(φ) and R2(φ) (the family least outside)
lies outside its range shrunk by an inset (so r = 0 leaves a margin: a feasible φ with
every angle at least ``inset / 2`` inside its real limits whenever r ≤ inset / 2). The
squares make the minimum over φ smooth where two joints trade off, so by the envelope
theorem ∂r²/∂G is ∂/∂G of the sum at the minimising φ held fixed: forward differences
along the six directions of a twist of the shoulder frame (the goal G fixed in the
world), one batched kernel pass for all of them. The twist's Jacobian is the
skeleton's (DOF axes and origins), so the row's Jacobian over the body's unknowns is
their product.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..geometry import vec3 as V
from ..geometry.rotations import axis_angle_to_matrix, matrix_to_euler_families
from ..limb import EulerLimits, Limb, LimbLimits
from ..limb.feasible import JointCoeffs, joint_coeffs
from .closed import Local, _circle

FloatArray = NDArray[np.float64]

#: Swivel samples of the search for the minimising φ (then refined by a parabola
#: through the best sample and its neighbours).
_SAMPLES = 48

#: Spacing (rad) of the three samples around a given φ.
_NEAR = 0.05

#: Forward-difference step (rad / m) of the twist directions.
_FD = 1e-6


def _sq_outside(rot: FloatArray, lim: EulerLimits | None, inset: float) -> FloatArray:
    """Σ of squared distances (rad²) of the Euler angles of ``rot`` (..., 3, 3) outside
    ``lim`` shrunk by ``inset`` (at most a quarter of each range), the family with the
    least; 0 without limits."""
    if lim is None or not any(lim.limited):
        return np.zeros(rot.shape[:-2])
    on = np.flatnonzero(lim.limited)
    start, width = lim.range_start[on], lim.range_width[on]
    cut = np.minimum(inset, 0.25 * width)
    fam = matrix_to_euler_families(rot, lim.order, check=False)[..., on]  # (..., 2, k)
    d = (fam - (start + cut)) % V.TAU
    w = width - 2.0 * cut
    out = np.where(d <= w, 0.0, np.minimum(d - w, V.TAU - d))
    best: FloatArray = np.sum(out * out, axis=-1).min(axis=-1)
    return best


def _sq_gap(
    lim: LimbLimits, sh: JointCoeffs, wr: JointCoeffs, phi: FloatArray, inset: float
) -> FloatArray:
    """(N, K) the squared limit gap's sum at swivels ``phi`` (N, K) of the rows of the
    joints' coefficients ``sh``, ``wr`` (R(φ) = P + cosφ Q + sinφ S)."""
    out: FloatArray = _sq_outside(sh.at(phi), lim.shoulder, inset) + _sq_outside(
        wr.at(phi), lim.wrist, inset
    )
    return out


@functools.lru_cache(maxsize=4)
def _turns(h: float) -> FloatArray:
    """(3, 3, 3): exp(−h [e_i]×), the frame's axes e_i."""
    out: FloatArray = axis_angle_to_matrix(np.eye(3), -h)
    return out


def _moved(local: Local, h: float) -> Local:
    """The goal ``local`` (B rows) seen from the shoulder frame moved by each of the six
    unit twists × ``h`` (rotations about, then translations along, the frame's axes):
    rows (7B): the goal itself, then per direction its B rows."""
    eye = np.eye(3)
    turn = _turns(h)
    pos = [local.position]
    rot = [] if local.rotation is None else [local.rotation]
    for i in range(3):
        pos.append(local.position @ turn[i].T)
        if local.rotation is not None:
            rot.append(turn[i] @ local.rotation)
    for i in range(3):
        pos.append(local.position - h * eye[i])
        if local.rotation is not None:
            rot.append(local.rotation)
    return Local(
        np.concatenate(pos, axis=0),
        None if local.rotation is None else np.concatenate(rot, axis=0),
    )


def limit_gap(
    limb: Limb,
    local: Local,
    wrist: FloatArray | None,
    inset: float,
    near: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The limit gap r (B,) of the goals ``local`` (B rows, in the shoulder frame; module
    docstring), its gradient (B, 6) with respect to a twist of the shoulder frame in its
    own axes (rotation, then translation of its origin), the goal held in the world, and
    the minimising φ (B,). ``wrist``: R2 held for position goals. ``near`` (B,): a φ near
    the minimum (the previous iterate's; NaN: none), searched around instead of over the
    whole circle. The limb has limits."""
    b = local.position.shape[0]
    lim = limb.limits
    assert lim is not None
    moved = _moved(local, _FD)
    n = 7 * b
    pr, ci = _circle(limb, moved.goal(), wrist, V.ArrayOps, n)
    sh, wr = joint_coeffs(V.ArrayOps, limb.constants, pr, ci, n)
    # the minimising φ: samples (over the circle, or three around ``near``), then the
    # vertex of the parabola through the best and its neighbours (the sum is smooth
    # there), kept where it is lower
    phi, low, sample = np.zeros(b), np.zeros(b), np.zeros(b)
    fresh = np.ones(b, dtype=bool) if near is None else np.isnan(near)
    for part in (np.flatnonzero(fresh), np.flatnonzero(~fresh)):
        if not part.size:
            continue
        if fresh[part[0]]:
            h = 2.0 * math.pi / _SAMPLES
            grid = np.broadcast_to(
                np.linspace(-math.pi, math.pi, _SAMPLES, endpoint=False), (part.size, _SAMPLES)
            )
        else:
            assert near is not None
            h = _NEAR
            grid = near[part, None] + h * np.array([-1.0, 0.0, 1.0])
        co = [JointCoeffs(c.P[part], c.Q[part], c.S[part]) for c in (sh, wr)]
        f = _sq_gap(lim, co[0], co[1], grid, inset)
        k = grid.shape[1]
        every = np.arange(part.size)
        pick = np.argmin(f, axis=1)
        if k > 3:
            mid = pick
            fm, fp = f[every, pick - 1], f[every, (pick + 1) % k]
        else:
            mid = np.ones(part.size, dtype=np.intp)
            fm, fp = f[:, 0], f[:, 2]
        curv = fm - 2.0 * f[every, mid] + fp
        shift = np.where(curv > 0.0, 0.5 * (fm - fp) / np.where(curv > 0.0, curv, 1.0), 0.0)
        reach = 0.5 if k > 3 else 2.0
        phi[part] = grid[every, mid] + h * np.clip(shift, -reach, reach)
        low[part] = f[every, pick]
        sample[part] = grid[every, pick]

    def moved_at(rows: NDArray[np.intp]) -> FloatArray:
        """(7, R) the sums at φ of the rows ``rows`` and their six moved goals."""
        idx = (np.arange(7)[:, None] * b + rows).ravel()
        co = [JointCoeffs(c.P[idx], c.Q[idx], c.S[idx]) for c in (sh, wr)]
        tiled = np.tile(phi[rows], 7)[:, None]
        return _sq_gap(lim, co[0], co[1], tiled, inset)[:, 0].reshape(7, rows.size)

    every = np.arange(b)
    at = moved_at(every)
    use = at[0] <= low
    phi = np.where(use, phi, sample)
    best = np.where(use, at[0], low)
    if not use.all():  # those rows' differences at the sample
        worse = np.flatnonzero(~use)
        at[:, worse] = moved_at(worse)
    grad_sq = (at[1:] - at[0]).T / _FD  # (B, 6)
    r = np.sqrt(best)
    safe = np.where(r > 0.0, r, 1.0)
    grad = np.where(r[:, None] > 0.0, 0.5 * grad_sq / safe[:, None], 0.0)
    return r, grad, phi


def twist_rows(
    sk: Any, kin: Any, u: int, columns: NDArray[np.intp], grad: FloatArray, frt: FloatArray
) -> FloatArray:
    """(B, len(columns)) the row ∂r/∂q over the DOFs ``columns`` of a quantity whose
    gradient ``grad`` (B, 6) is taken with respect to a twist of joint ``u``'s shoulder
    frame (its parent's frame times its offset; rotation, then translation of joint
    ``u``'s origin, both in that frame's axes, whose world-to-frame rotation is ``frt``
    (B, 3, 3)). ``kin``: the skeleton's kinematics at q. Only the DOFs of ``u``'s
    strict ancestors move that frame; a translation DOF moves its origin along its axis."""
    _, org, axes, origins = kin
    g_w = np.swapaxes(frt, -1, -2) @ grad[:, :3, None]  # world gradients (B, 3, 1)
    g_v = np.swapaxes(frt, -1, -2) @ grad[:, 3:, None]
    ax = axes[:, columns]  # (B, n, 3)
    lever = org[:, u][:, None, :] - origins[:, columns]
    lin = np.cross(ax, lever)
    slide = np.isin(columns, sk.kinematic_plan.prismatic)
    if slide.any():
        lin[:, slide] = ax[:, slide]
        ax = ax.copy()
        ax[:, slide] = 0.0
    moves = sk.ancestors[sk.dof_joint[columns], u] & (sk.dof_joint[columns] != u)
    out: FloatArray = ((ax @ g_w) + (lin @ g_v))[..., 0] * moves
    return out
