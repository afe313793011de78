"""``feasible_intervals`` (several limbs' feasible swivel sets in one pass) gives exactly
what ``feasible_sets(...).all`` gives for each limb alone: same values, same NaN padding."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from core.geometry.rotations import rodrigues
from core.limb import EulerLimits, LimbLimits
from core.limb.feasible import JointCoeffs, feasible_intervals, feasible_sets
from tests.fixtures.humanoid import humanoid


def _unit(v: NDArray[np.float64]) -> NDArray[np.float64]:
    out: NDArray[np.float64] = v / np.linalg.norm(v, axis=-1, keepdims=True)
    return out


def _coeffs(rng: np.random.Generator, n: int) -> JointCoeffs:
    """R(φ) = A · Rot(k, φ) · B for random rotations A, B and axis k, per row, written
    as P + cosφ Q + sinφ S (Rodrigues)."""
    a, b, k = (_unit(rng.normal(size=(n, 3))) for _ in range(3))
    a = rodrigues(a, rng.uniform(0.0, 0.6, n))
    b = rodrigues(b, rng.uniform(0.0, 0.6, n))
    kk = k[:, :, None] * k[:, None, :]
    cross = np.zeros((n, 3, 3))
    cross[:, 0, 1], cross[:, 0, 2], cross[:, 1, 2] = -k[:, 2], k[:, 1], -k[:, 0]
    cross -= np.swapaxes(cross, 1, 2)
    return JointCoeffs(a @ kk @ b, a @ (np.eye(3) - kk) @ b, a @ cross @ b)


def _limits() -> list[LimbLimits]:
    """The humanoid's four limbs, and limbs with one joint unlimited or without limits."""
    out = [m.limits for m in humanoid().models]
    assert all(lim is not None for lim in out)
    half = EulerLimits("XYZ", (-0.5, None, -1.0), (0.5, None, 0.3))
    return [
        *out,  # type: ignore[list-item]
        LimbLimits(shoulder=half, elbow=(0.2, 2.0)),
        LimbLimits(wrist=half),
        LimbLimits(shoulder=EulerLimits("XYZ"), elbow=(-0.5, 3.0), wrist=half),
    ]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rows", [(1, 1, 1, 1), (3, 1, 5, 2, 1, 4, 2), (1, 2)])
def test_feasible_intervals_equal_one_limb_at_a_time(seed: int, rows: tuple[int, ...]) -> None:
    rng = np.random.default_rng(seed)
    limits = _limits()
    parts = []
    for i, n in enumerate(rows):
        lim = limits[(seed + i) % len(limits)]
        theta = rng.uniform(-0.5, 3.0, size=n)
        parts.append((lim, _coeffs(rng, n), _coeffs(rng, n), theta))
    got = feasible_intervals(parts)
    assert len(got) == len(parts)
    for part, g in zip(parts, got, strict=True):
        want = feasible_sets(*part).all
        np.testing.assert_array_equal(g, want)


def test_feasible_intervals_with_different_euler_orders() -> None:
    """Limbs whose joints use different Euler orders: each limb's own sets still."""
    rng = np.random.default_rng(3)
    zyx = EulerLimits("ZYX", (-0.5, -0.4, -1.0), (0.5, 0.6, 0.3))
    limits = [_limits()[0], LimbLimits(shoulder=zyx, elbow=(0.0, 2.5), wrist=zyx)]
    parts = [(lim, _coeffs(rng, 2), _coeffs(rng, 2), rng.uniform(0.0, 2.5, 2)) for lim in limits]
    for part, g in zip(parts, feasible_intervals(parts), strict=True):
        np.testing.assert_array_equal(g, feasible_sets(*part).all)


@pytest.mark.parametrize("seed", range(40))
def test_one_row_per_limb_pass_equals_one_limb_at_a_time(seed: int) -> None:
    """The pass for limbs of one row each, every joint limited (a warm frame's four
    limbs): each limb's sets exactly as ``feasible_sets`` gives them alone."""
    from core.limb.feasible import _intervals_one_each

    rng = np.random.default_rng(100 + seed)
    limits = _limits()[:4]
    parts = [(lim, _coeffs(rng, 1), _coeffs(rng, 1), rng.uniform(-0.5, 3.0, 1)) for lim in limits]
    want = [feasible_sets(*p).all for p in parts]
    for got in (feasible_intervals(parts), _intervals_one_each(parts, "XYZ")):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_one_solve_outer_coefficients_equal_the_component_formula(seed: int, sign: float) -> None:
    """``_outer_coeffs`` of one solve on floats (one outer product) equals its
    component-by-component formula bit for bit."""
    from core.limb.feasible import _outer_coeffs

    rng = np.random.default_rng(seed)
    vecs = [tuple(float(x) for x in v) for v in rng.normal(size=(6, 3))]
    left, right = tuple(vecs[:3]), tuple(vecs[3:])
    fast = _outer_coeffs(left, right, sign, 1, scalar=True)  # type: ignore[arg-type]
    slow = _outer_coeffs(left, right, sign, 1)  # type: ignore[arg-type]
    for a in "PQS":
        np.testing.assert_array_equal(getattr(fast, a), getattr(slow, a))
        assert getattr(fast, a).shape == (1, 3, 3)
