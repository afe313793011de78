"""The cascade's primitives: ``thin_svd`` (Gram eigen-decomposition where accurate, LAPACK's
SVD elsewhere) against ``np.linalg.svd``, and ``budget``'s step fraction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import Method, SolveSettings, step_once
from core.chain.steps.task_priority import budget, thin_svd
from tests.fixtures import arm_chain

CUTOFF = 1e-6


def _pinv(u: np.ndarray, s: np.ndarray, vt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ σ⁻¹ v uᵀ over the kept σ (> CUTOFF · σ_max), and the keep mask."""
    keep = (s > CUTOFF * s[:, :1]) & (s > 0.0)
    inv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    return np.swapaxes(vt, -1, -2) @ (inv[:, :, None] * np.swapaxes(u, -1, -2)), keep


def _matrices(rng: np.random.Generator, b: int, m: int, n: int) -> dict[str, np.ndarray]:
    out = {"random": rng.standard_normal((b, m, n))}
    a = rng.standard_normal((b, m, n))
    a[:, : m // 3] = 0.0  # zero rows (inactive constraints)
    out["zero rows"] = a
    a = rng.standard_normal((b, m, n))
    a[:, 1] = a[:, 0]  # rank deficient
    out["dependent"] = a
    a = rng.standard_normal((b, m, n))
    a[:, 1] = a[:, 0] * (1.0 + 1e-6 * rng.uniform(0.5, 5.0, (b, 1)))  # σ near the cutoff
    out["near cutoff"] = a
    out["graded"] = rng.standard_normal((b, m, n)) * np.logspace(0, -6, n)
    out["zero"] = np.zeros((b, m, n))
    return out


@pytest.mark.parametrize("shape", [(40, 15, 31), (40, 27, 55), (40, 31, 15), (40, 6, 6), (1, 3, 7)])
def test_thin_svd_matches_lapack(shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    for name, a in _matrices(rng, *shape).items():
        ref_u, ref_s, ref_vt = np.linalg.svd(a, full_matrices=False)
        u, s, vt = thin_svd(a.copy(), CUTOFF)
        assert u.shape == ref_u.shape and s.shape == ref_s.shape and vt.shape == ref_vt.shape
        p_ref, keep_ref = _pinv(ref_u, ref_s, ref_vt)
        p, keep = _pinv(u, s, vt)
        np.testing.assert_array_equal(keep, keep_ref, err_msg=name)
        scale = np.maximum(np.max(np.abs(p_ref), axis=(1, 2), keepdims=True), 1e-300)
        assert np.max(np.abs(p - p_ref) / scale) <= 1e-9, name
        top = np.maximum(ref_s[:, :1], 1e-300)
        np.testing.assert_allclose(
            np.where(keep, s, 0.0) / top, np.where(keep, ref_s, 0.0) / top, atol=1e-12
        )
        # the kept right singular vectors are orthonormal
        vk = vt * keep[:, :, None]
        gram = vk @ np.swapaxes(vk, -1, -2)
        eye = np.eye(gram.shape[-1]) * keep[:, :, None]
        np.testing.assert_allclose(gram, eye, atol=1e-9, err_msg=name)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 4),
    st.integers(0, 6),
    st.floats(0.05, 2.0),
)
def test_budget_is_the_largest_fraction_within_max_step(
    seed: int, b: int, n: int, max_step: float
) -> None:
    rng = np.random.default_rng(seed)
    dq = rng.uniform(-max_step, max_step, (b, n))
    delta = rng.standard_normal((b, n)) * rng.choice([0.01, 0.5, 3.0])
    alpha = budget(dq, delta, max_step)
    assert alpha.shape == (b,)
    assert np.all((alpha >= 0.0) & (alpha <= 1.0))
    step = np.abs(dq + alpha[:, None] * delta)
    assert np.all(step <= max_step * (1.0 + 1e-12))
    fits = np.all(np.abs(dq + delta) <= max_step, axis=1)
    assert np.all(alpha[fits] == 1.0)
    for i in np.flatnonzero(~fits):  # α < 1 only where some component reaches max_step
        assert alpha[i] == 1.0 or np.isclose(step[i].max(), max_step, rtol=1e-12)


def test_clamping_loop_rows_do_not_depend_on_the_batch() -> None:
    """The limits' clamping loop re-solves only the rows that clamp a new DOF: each row's
    TASK_PRIORITY update in a batch equals that row's update alone (to rounding), with
    rows that clamp several DOFs beside rows that clamp none."""
    fx = arm_chain(limits=True)
    sk = fx.skeleton
    rng = np.random.default_rng(4)
    span = sk.upper - sk.lower
    q = sk.lower + span * rng.choice([0.002, 0.5, 0.998], size=(12, sk.n_dofs))
    st = SolveSettings(use_limits=True, max_step=0.5)
    batch = step_once(sk, fx.goals, q, Method.TASK_PRIORITY, st)
    alone = np.stack([step_once(sk, fx.goals, row, Method.TASK_PRIORITY, st) for row in q])
    np.testing.assert_allclose(batch, alone, rtol=0.0, atol=1e-12)
    at_limit = (np.abs(batch - sk.lower) < 1e-12) | (np.abs(batch - sk.upper) < 1e-12)
    moved = np.abs(batch - q) > 1e-9
    assert np.any(np.sum(at_limit & moved, axis=1) >= 2)  # rows that clamp several DOFs
    assert np.any(~np.any(at_limit & moved, axis=1))  # and rows that clamp none
