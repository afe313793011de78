"""Damped least squares, its clamped-target variant and SDLS (Buss 2009; Buss & Kim 2005)."""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.lapack import dposv

from ...geometry.vec3 import norm_rows
from ..loop import FloatArray, IKSolver, StepState, clamp_max_abs, matvec
from ..registry import register
from ..residuals import BlockKind
from ..settings import ClampRule, Method
from ..threads import Gate, opened
from .jacobian import svd

#: From this many rows on, :func:`spd_solve` solves by Cholesky (its docstring).
CHOLESKY_ROWS = 16


def spd_solve(a: FloatArray, r: FloatArray, parallel: bool = False) -> FloatArray:
    """x with a x = r for symmetric positive definite a (b, k, k), r (b, k).

    Below :data:`CHOLESKY_ROWS` rows, and in a solve whose chunks run side by side on
    threads (``parallel``): LAPACK LU (``numpy.linalg.solve``, one call that releases the
    GIL). Otherwise LAPACK Cholesky (``numpy.linalg.cholesky``, batched) and the two
    triangular substitutions batch-last (k steps each over rows of b values; numpy has no
    batched triangular solve): faster than LU from a few dozen rows, and from
    :data:`CHOLESKY_ROWS` rows whenever OpenBLAS runs more than one thread (its LU of a
    matrix from 6 × 6 on wakes its threads for every matrix of the batch; its Cholesky
    does not), but its 4k small calls hold the GIL, so threaded solves use LU
    (docs/decisions.md). A factor that is not positive definite to working precision
    (LinAlgError: a zero-damped, rank-deficient JJᵀ) falls back to LU for the whole
    batch."""
    b, k = r.shape
    if b >= CHOLESKY_ROWS and not parallel:
        try:
            low = np.linalg.cholesky(a).transpose(1, 2, 0).copy()  # (k, k, b)
        except np.linalg.LinAlgError:
            pass
        else:
            y = r.T.copy()  # (k, b)
            for i in range(k):  # L y = r
                if i:
                    y[i] -= np.add.reduce(low[i, :i] * y[:i], axis=0)
                y[i] /= low[i, i]
            for i in range(k - 1, -1, -1):  # Lᵀ x = y
                if i + 1 < k:
                    y[i] -= np.add.reduce(low[i + 1 :, i] * y[i + 1 :], axis=0)
                y[i] /= low[i, i]
            return y.T
    out: FloatArray = np.linalg.solve(a, r[..., None])[..., 0]
    return out


def damped_step(
    j: FloatArray, e: FloatArray, lam2: float | FloatArray, gate: Gate | None = None
) -> FloatArray:
    """Δq = Jᵀ(JJᵀ + λ²I)⁻¹e (Buss Eq. 11) when m ≤ n, else the equal (JᵀJ + λ²I)⁻¹Jᵀe
    (Eq. 10): always the smaller system, solved (not inverted; :func:`spd_solve`).
    ``lam2``: λ², a float or one per row (b,); ``gate``: the threaded chunks' gate, opened
    around the products and the solve (:class:`Gate`; its presence also picks the
    solve that suits threads)."""
    if gate is None:
        return _dls_solve(j, e, lam2, False)
    with gate.open():
        return _dls_solve(j, e, lam2, True)


def _dls_solve(
    j: FloatArray, e: FloatArray, lam2: float | FloatArray, parallel: bool
) -> FloatArray:
    b, m, n = j.shape
    if b == 1 and m <= n:  # one problem: LAPACK's Cholesky solve in one call
        j0 = j[0]
        a0 = j0 @ j0.T
        a0.flat[:: m + 1] += lam2 if isinstance(lam2, float) else float(lam2[0])
        _, x, info = dposv(a0, e[0], lower=True)
        if info == 0:
            one: FloatArray = (j0.T @ x)[None]
            return one
    jt = j.swapaxes(-1, -2)
    lam = lam2 if isinstance(lam2, float) else lam2[:, None]
    if m <= n:
        a = j @ jt
        a.reshape(b, m * m)[:, :: m + 1] += lam  # + λ²I
        out: FloatArray = matvec(jt, spd_solve(a, e, parallel))
        return out
    a = jt @ j
    a.reshape(b, n * n)[:, :: n + 1] += lam
    out = spd_solve(a, matvec(jt, e), parallel)
    return out


def _damping(state: StepState, gate: Gate | None = None) -> float | FloatArray:
    """λ² of DLS: the fixed ``damping``² (a float) or the adaptive rule's (b,) values
    (``gate`` opened around its SVD)."""
    st = state.settings
    if not st.adaptive_damping:
        return float(st.damping) ** 2
    with opened(gate):
        s = np.linalg.svd(state.J, compute_uv=False)
    smin = s[:, -1] if s.shape[1] else np.zeros(state.q.shape[0])
    eps = st.damping_threshold
    lam2: FloatArray = np.where(smin < eps, st.damping**2 * (1.0 - (smin / eps) ** 2), 0.0)
    return lam2


def _solve_dls(state: StepState, e: FloatArray, gate: Gate | None = None) -> FloatArray:
    # λ = 0 (fixed damping 0, or the adaptive rule away from singularities, where the
    # smaller system is regular): still guard exact zeros of a degenerate J with the
    # tiniest damping.
    lam2 = _damping(state, gate)
    lam2 = max(lam2, 1e-300) if isinstance(lam2, float) else np.maximum(lam2, 1e-300)
    return damped_step(state.J, e, lam2, gate)


@register
class DLSStep(IKSolver):
    """Buss §5: solve (JJᵀ + λ²I) f = e, Δq = Jᵀf (λ fixed or adaptive, see settings)."""

    method = Method.DLS
    gated = True
    #: Gated chunks gain from less work (measured crossovers: docs/decisions.md).
    work_per_thread = 6_000

    def step(self, state: StepState) -> FloatArray:
        return _solve_dls(state, state.e, self.gate)


@register
class DLSClampedStep(IKSolver):
    """Buss's DLS′ (§2 "Setting target positions closer", §8): DLS on e with every 3-row
    block clamped, e_i = ClampMag(e_i, D_i) (:class:`ClampRule`)."""

    method = Method.DLS_CLAMPED
    gated = True
    work_per_thread = DLSStep.work_per_thread

    #: (blocks, settings, (nb,) clamp distance × √weight per block) of the last step
    _limits: tuple[object, object, FloatArray] | None = None

    def step(self, state: StepState) -> FloatArray:
        # every 3-row block at once: the blocks tile e in order, block i = e[:, 3i:3i+3]
        st = state.settings
        b, m = state.e.shape
        e3 = state.e.reshape(b, m // 3, 3)
        cached = self._limits
        if cached is not None and cached[0] is state.blocks and cached[1] is st:
            limit0 = cached[2]
        else:
            limit0 = np.array(
                [
                    (st.clamp_distance if blk.kind is BlockKind.POSITION else st.clamp_angle)
                    * math.sqrt(blk.weight)
                    for blk in state.blocks
                ]
            )
            self._limits = (state.blocks, st, limit0)
        norm = norm_rows(e3)  # (b, blocks)
        limit: FloatArray = limit0
        if st.clamp_rule is ClampRule.PER_EFFECTOR:
            pnorm = norm_rows(state.previous_e.reshape(b, m // 3, 3))
            closer = np.maximum(pnorm - norm, 0.0)
            limit = np.where(np.isnan(pnorm), np.inf, limit0 + closer)
        over = norm > limit
        scale = np.where(over, limit / np.where(over, norm, 1.0), 1.0)
        e: FloatArray = (e3 * scale[..., None]).reshape(b, m)
        return _solve_dls(state, e, self.gate)


@register
class SDLSStep(IKSolver):
    """Buss & Kim's selectively damped least squares. With J = Σ σᵢuᵢvᵢᵀ, for each kept
    σᵢ (> svd_cutoff · σ_max): αᵢ = uᵢᵀe; Nᵢ = Σ_l ‖(uᵢ)_l‖ over the 3-row blocks l;
    Mᵢ = σᵢ⁻¹ Σⱼ |vⱼᵢ| ρⱼ with ρⱼ = Σ_l ‖(column j)_l‖; γᵢ = min(1, Nᵢ/Mᵢ) γ_max;
    φᵢ = ClampMaxAbs(σᵢ⁻¹αᵢvᵢ, γᵢ); Δq = ClampMaxAbs(Σᵢ φᵢ, γ_max)."""

    method = Method.SDLS

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        j = state.J
        b, m, n = j.shape
        u, s, vt, keep = svd(j, st.svd_cutoff)
        k = s.shape[1]
        alpha = matvec(np.swapaxes(u, -1, -2), state.e)  # (b, k)
        nl = m // 3
        # n_i (b, k) and rho (b, n); np.add.reduce: np.sum's arithmetic without its wrapper
        n_i = np.add.reduce(np.sqrt(np.add.reduce(u.reshape(b, nl, 3, k) ** 2, axis=2)), axis=1)
        rho = np.add.reduce(np.sqrt(np.add.reduce(j.reshape(b, nl, 3, n) ** 2, axis=2)), axis=1)
        sinv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
        m_i = sinv * matvec(np.abs(vt), rho)  # (b, k)
        ratio = np.where(m_i > 0.0, n_i / np.where(m_i > 0.0, m_i, 1.0), 1.0)
        gamma = np.minimum(1.0, ratio) * st.gamma_max
        phi = (sinv * alpha)[:, :, None] * vt  # (b, k, n): row i is σᵢ⁻¹αᵢvᵢ
        phi = clamp_max_abs(phi, gamma)
        return clamp_max_abs(np.add.reduce(phi, axis=1), st.gamma_max)
