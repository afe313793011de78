"""Jacobian transpose and pseudo-inverse steps (Buss 2009), with the null-space objectives."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..loop import FloatArray, IKSolver, IntArray, StepState, matvec
from ..registry import register
from ..settings import Method, NullSpace


def _c_einsum() -> Callable[..., Any]:
    """np.einsum's C function without its Python wrapper (the wrapper costs about 1 µs
    per call, as much as a small dot product); np.einsum itself where numpy does not
    expose it (same results)."""
    try:
        module = importlib.import_module("numpy._core.multiarray")
    except ImportError:  # pragma: no cover - numpy before 1.26
        return np.einsum
    found: Callable[..., Any] = getattr(module, "c_einsum", np.einsum)
    return found


_einsum = _c_einsum()

#: Up to this many Jacobian entries (m · n) JACOBIAN_TRANSPOSE forms Jᵀe and J·d by einsum
#: (batched and one-row alike, which agree bit for bit): faster on 300 rows of a 6 × 7 J
#: than numpy's stacked product (one BLAS call per row), slower from about 6 × 12 on.
EINSUM_ENTRIES = 48


@register
class JacobianTransposeStep(IKSolver):
    """Buss §3: Δq = α d along the transpose direction g = Jᵀe, with conjugate directions.

    Buss's α = ⟨e, Jd⟩ / ⟨Jd, Jd⟩ (0 when Jd = 0) is the step along d that minimises
    ‖e − αJd‖ for the linearised error — his optimal step for d = Jᵀe, the exact line
    search of steepest descent on ½‖e‖². Steepest descent alone zig-zags, so
    from the second iteration on d is a momentum direction: nonlinear conjugate gradients
    (Polak & Ribière 1969, the "PR+" variant), d_k = g_k + β d_{k−1} with
    β = max(0, ⟨g_k, g_k − g_{k−1}⟩ / ⟨g_{k−1}, g_{k−1}⟩), restarted (β = 0) every n
    iterations (n = the DOF count; Powell 1977). α is the minimiser over all real α, so
    where d happens not to be a descent direction of the linearised error (⟨d, g⟩ < 0)
    α is negative and the step still descends. With a constant J this is CGLS —
    conjugate gradients on the normal equations, exact in at most n steps whatever the
    conditioning — so the method only ever multiplies by J and Jᵀ (no factorisation)
    yet does not crawl near singular configurations (Buss cites conjugate-gradient IK
    among the alternatives to the transpose). The previous g, 1/‖g‖² and d are kept per
    batch row for the iterations of one solve; :func:`~core.chain.solve.step_once` (no
    history) takes Buss's α on Jᵀe. Cost per iteration: one product with J and one with
    Jᵀ, like Buss's α on Jᵀe, plus a few vector operations. Default budget 2,000
    iterations (measured convergence: docs/decisions.md)."""

    method = Method.JACOBIAN_TRANSPOSE
    #: Per thread of the solve: the rows, g, 1/‖g‖² and d of the previous iteration
    #: (created by start(); None in step_once, which then takes Buss's α on Jᵀe).
    _history: dict[int, tuple[IntArray, FloatArray, FloatArray, FloatArray]] | None = None

    def start(self, rows: int, n: int) -> None:
        self._history = {}

    #: The max_step clamp and the nonlinearity make the descent not quite monotone: a
    #: little longer than the default window.
    stall_window = 50
    default_max_iterations = 2000

    def step(self, state: StepState) -> FloatArray:
        jac, e = state.J, state.e
        if e.shape[0] == 1:
            return self._one_row(state)
        small = jac.shape[1] * jac.shape[2] <= EINSUM_ENTRIES
        g = _einsum("ij,ijk->ik", e, jac) if small else (e[:, None, :] @ jac)[:, 0]  # Jᵀe
        d = g
        history = self._history
        if history is not None:
            # per thread (a threaded solve's chunks share this instance); rows only ever
            # drop out (compaction keeps order); every row still iterating has taken
            # state.iteration steps, so the restarts (β = 0 every n) are common to all
            key = threading.get_ident()
            gg = _dots(g, g)
            if state.iteration % max(g.shape[1], 1):
                r0, g_p, inv_p, d_p = history[key]
                if len(r0) != len(state.rows):
                    pick = np.searchsorted(r0, state.rows)
                    g_p, inv_p, d_p = g_p[pick], inv_p[pick], d_p[pick]
                # β = ⟨g, g − g_p⟩ / ‖g_p‖², from ‖g‖² (needed anyway) and one more dot
                beta = (gg - _dots(g, g_p)) * inv_p
                np.maximum(beta, 0.0, out=beta)
                d = d_p * beta[:, None]
                d += g
            # 1/‖g‖² (0 where g = 0: the next β is then 0)
            inv = 1.0 / gg if gg.all() else np.divide(1.0, gg, out=np.zeros(gg.shape), where=gg > 0)
            history[key] = (state.rows, g, inv, d)
        # Buss's α along d: the exact minimiser over all α of ‖e − αJd‖ (negative where d
        # is not a descent direction of the linearised error, so the step still descends)
        jd = _einsum("ijk,ik->ij", jac, d) if small else (jac @ d[:, :, None])[:, :, 0]
        alpha = _dots(e, jd) / (_dots(jd, jd) + 1e-300)
        out: FloatArray = d * alpha[:, None]
        return out

    def _one_row(self, state: StepState) -> FloatArray:
        """:meth:`step` for one row, on vectors and Python floats: the same products and
        dot products (numpy's stacked and vector matrix products agree bit for bit, and so
        do einsum's row-wise and vector dots, so a batched solve gives the rows of
        one-by-one solves) in a fraction of the calls; the history keeps the batched
        layout."""
        e, jac = state.e[0], state.J[0]
        small = jac.size <= EINSUM_ENTRIES
        g = _einsum("i,ik->k", e, jac) if small else e @ jac
        d = g
        history = self._history
        if history is not None:
            key = threading.get_ident()
            gg = float(_einsum("i,i", g, g))
            if state.iteration % max(g.shape[0], 1):
                _, g_p, inv_p, d_p = history[key]
                beta = (gg - float(_einsum("i,i", g, g_p[0]))) * float(inv_p[0])
                if beta > 0.0:
                    d = d_p[0] * beta
                    d += g
            inv = np.array([1.0 / gg if gg > 0.0 else 0.0])
            history[key] = (state.rows, g[None], inv, d[None])
        jd = _einsum("jk,k->j", jac, d) if small else jac @ d
        alpha = float(_einsum("i,i", e, jd)) / (float(_einsum("i,i", jd, jd)) + 1e-300)
        out: FloatArray = (d * alpha)[None]
        return out


def _dots(a: FloatArray, b: FloatArray) -> FloatArray:
    """Row-wise dot products (b, k) · (b, k) → (b,) by one einsum (one pass, no
    temporary; the same result as the vector dot ``_einsum("i,i", a[i], b[i])``)."""
    out: FloatArray = _einsum("ij,ij->i", a, b)
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
