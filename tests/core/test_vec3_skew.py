"""core.geometry.vec3.skew_vee: the vector of a matrix's skew part, the inverse of skew."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core.geometry.vec3 import skew, skew_vee

FINITE = st.floats(-1e3, 1e3, allow_nan=False)


@given(arrays(np.float64, (4, 3), elements=FINITE))
def test_inverts_skew(v: np.ndarray) -> None:
    assert np.array_equal(skew_vee(skew(v)), v)


@given(arrays(np.float64, (2, 5, 3, 3), elements=FINITE))
def test_reads_only_the_skew_part(m: np.ndarray) -> None:
    part = 0.5 * (m - np.swapaxes(m, -1, -2))
    assert skew_vee(m).shape == (2, 5, 3)
    np.testing.assert_allclose(skew(skew_vee(m)), part, rtol=1e-12, atol=1e-9)


def test_rotation_vector_of_a_rotation() -> None:
    """vee of R = exp(θ[a]×) is sin θ · a."""
    a = np.array([2.0, -1.0, 0.5]) / np.linalg.norm([2.0, -1.0, 0.5])
    k = skew(a)
    theta = 0.3
    r = np.eye(3) + np.sin(theta) * k + (1.0 - np.cos(theta)) * (k @ k)
    np.testing.assert_allclose(skew_vee(r), np.sin(theta) * a, rtol=1e-13, atol=1e-15)
