"""Jacobian transpose and pseudo-inverse steps (Buss 2009), with the null-space objectives."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..loop import FloatArray, IKSolver, StepState, matvec
from ..registry import register
from ..settings import Method, NullSpace


@register
class JacobianTransposeStep(IKSolver):
    """Buss §3: Δq = α Jᵀe with α = ⟨e, JJᵀe⟩ / ⟨JJᵀe, JJᵀe⟩ (0 when JJᵀe = 0)."""

    method = Method.JACOBIAN_TRANSPOSE

    def step(self, state: StepState) -> FloatArray:
        g = matvec(np.swapaxes(state.J, -1, -2), state.e)
        jg = matvec(state.J, g)
        num = np.sum(state.e * jg, axis=-1)
        den = np.sum(jg * jg, axis=-1)
        alpha = np.where(den > 0.0, num / np.where(den > 0.0, den, 1.0), 0.0)
        out: FloatArray = alpha[:, None] * g
        return out


def svd(
    j: FloatArray, cutoff: float
) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_]]:
    """Thin SVD of stacked J and the mask of singular values kept (σ > cutoff · σ_max)."""
    u, s, vt = np.linalg.svd(j, full_matrices=False)
    smax = s[:, :1] if s.shape[1] else np.zeros((s.shape[0], 1))
    keep: NDArray[np.bool_] = (s > cutoff * smax) & (s > 0.0)
    return u, s, vt, keep


@register
class PseudoinverseStep(IKSolver):
    """Buss §4 / Eq. 13: Δq = J⁺e + (I − J⁺J)φ with J⁺ = Σ σᵢ⁻¹ vᵢuᵢᵀ over σᵢ > cutoff·σ_max;
    φ from ``settings.null_space`` (Eq. 7, Liégeois). The projector uses the same
    singular vectors as J⁺, so the secondary motion leaves J·Δq unchanged."""

    method = Method.PSEUDOINVERSE
    supports_null_space = True

    def step(self, state: StepState) -> FloatArray:
        st = state.settings
        u, s, vt, keep = svd(state.J, st.svd_cutoff)
        inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
        ute = matvec(np.swapaxes(u, -1, -2), state.e)
        v = np.swapaxes(vt, -1, -2)
        dq = matvec(v, inv * ute)
        phi = _null_space_objective(state)
        if phi is not None:
            dq = dq + phi - matvec(v, keep * matvec(vt, phi))
        return dq


def _null_space_objective(state: StepState) -> FloatArray | None:
    st = state.settings
    if st.null_space is NullSpace.NONE:
        return None
    q = state.q
    if st.null_space is NullSpace.REST_POSE:
        rest = np.zeros(q.shape[1]) if st.q_rest is None else np.asarray(st.q_rest)
        out: FloatArray = st.null_space_gain * (rest - q)
        return out
    lo, hi = state.skeleton.lower, state.skeleton.upper
    finite = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    mid = np.where(finite, 0.5 * (lo + hi), 0.0)
    rng = np.where(finite, hi - lo, 1.0)
    grad = np.where(finite, 2.0 * (q - mid) / (rng * rng), 0.0) / max(q.shape[1], 1)
    out = -st.null_space_gain * grad
    return out
