"""The extended Jacobian with basic elements (Šoch & Lórencz §3)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.linalg.lapack import dposv

from ...geometry.vec3 import cross_rows
from ..loop import FloatArray, IKSolver, StepState, matvec
from ..registry import register
from ..settings import Method
from ..skeleton import Skeleton


@lru_cache(maxsize=64)
def basic_elements(skeleton: Skeleton) -> tuple[tuple[int, int, int], ...]:
    """Šoch & Lórencz's basic elements (p, k, c) of a tree: joint k with parent p and
    child c (two adjacent segments p→k→c); only those whose vector depends on a DOF."""
    parents = skeleton.parents
    out: list[tuple[int, int, int]] = []
    for c in range(skeleton.n_joints):
        k = int(parents[c])
        if k < 0:
            continue
        p = int(parents[k])
        if p < 0:
            continue
        if skeleton.joints[p].dofs.n_dofs + skeleton.joints[k].dofs.n_dofs == 0:
            continue
        out.append((p, k, c))
    return tuple(out)


def _element_data(
    skeleton: Skeleton,
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp], NDArray[np.bool_]]:
    el = basic_elements(skeleton)
    p = np.array([x[0] for x in el], dtype=np.intp)
    pp = np.array([int(skeleton.parents[x[0]]) for x in el], dtype=np.intp)
    c = np.array([x[2] for x in el], dtype=np.intp)
    dj = skeleton.dof_joint
    mask = np.array([(dj == x[0]) | (dj == x[1]) for x in el], dtype=bool).reshape(
        len(el), skeleton.n_dofs
    )
    return p, pp, c, mask


def element_jacobian(skeleton: Skeleton, q: FloatArray) -> FloatArray:
    """(b, 3E, n) Jacobian of the basic elements' local vectors (module docstring)."""
    el = basic_elements(skeleton)
    b = q.shape[0]
    if not el:
        return np.zeros((b, 0, skeleton.n_dofs))
    rot, org, w, pd = skeleton.kinematics(q)
    p, pp, c, mask = _element_data(skeleton)
    offs = np.stack([np.asarray(skeleton.joints[i].offset)[:3, :3] for i in p])  # (E, 3, 3)
    parent_rot = np.where(
        (pp >= 0)[None, :, None, None], rot[:, np.maximum(pp, 0)], np.eye(3)
    )  # (b, E, 3, 3)
    pre = parent_rot @ offs[None]
    oc = org[:, c]  # (b, E, 3)
    cols = cross_rows(w[:, None, :, :], oc[:, :, None, :] - pd[:, None, :, :])  # (b, E, n, 3)
    cols = cols * mask[None, :, :, None]
    rows = np.einsum("beji,benj->bein", pre, cols)  # (b, E, 3, n)
    out: FloatArray = rows.reshape(b, 3 * len(el), skeleton.n_dofs)
    return out


@register
class ExtendedJacobianStep(IKSolver):
    """Šoch & Lórencz: goal rows + basic-element rows (desired change 0), normal
    equations + LU (module docstring)."""

    method = Method.EXTENDED_JACOBIAN
    #: Not a descent method for ‖e‖² (the element rows damp some directions, leave
    #: others nearly undamped; steps along those overshoot): on the double-Y the error
    #: stays above its best for > 50 iterations at a time while converging.
    stall_window = 100
    #: Batches up to this many rows solve their normal equations row by row (Cholesky).
    CHOLESKY_ROWS = 8

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        out: FloatArray
        if state.q.shape[1] == 0:  # no DOF: nothing to move (the loop reports STALLED)
            return np.zeros_like(state.q)
        jx = st.extended_weight * element_jacobian(state.skeleton, state.q)
        j = state.J
        jt = np.swapaxes(j, -1, -2)
        a = jt @ j + np.swapaxes(jx, -1, -2) @ jx
        n = a.shape[-1]
        diag = np.max(np.abs(np.diagonal(a, axis1=-2, axis2=-1)), axis=-1)
        mu = 1e-12 * np.where(diag > 0.0, diag, 1.0)
        a = a + mu[:, None, None] * np.eye(n)
        rhs = matvec(jt, state.e)
        if a.shape[0] <= self.CHOLESKY_ROWS:
            # few problems: LAPACK's Cholesky solve row by row (the normal matrix is
            # positive definite with the guard; a row's result does not depend on the
            # batch); numpy's LU (getrf) runs multithreaded in OpenBLAS and stalls on a
            # busy machine (docs/decisions.md)
            out = np.empty_like(rhs)
            for i in range(a.shape[0]):
                _, x, info = dposv(a[i], rhs[i], lower=True)
                out[i] = x if info == 0 else np.linalg.solve(a[i], rhs[i])
            return out
        out = np.linalg.solve(a, rhs[..., None])[..., 0]
        return out
