"""The single-input branches of the rotation kernels compute what their batched branches
compute: matrix→quaternion bit for bit (sums, products and one square root, all correctly
rounded), Rodrigues to one ulp of 1 (its entries lie in [-1, 1]; the two branches call
Python's and numpy's cos/sin, which agree bit for bit where numpy uses the C library and
to an ulp where it has its own SIMD kernels)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import (
    axis_angle_to_matrix,
    matrix_to_quat,
    quat_to_matrix,
    quaternion_floats,
    quaternion_of,
    rodrigues,
)

EPS = float(np.finfo(np.float64).eps)  # one ulp of 1.0

coord = st.floats(-1.0, 1.0, allow_nan=False)
axis3 = st.tuples(coord, coord, coord).filter(lambda v: math.fsum(x * x for x in v) > 1e-6)
angles = st.floats(-20.0, 20.0, allow_nan=False)
quats = st.tuples(coord, coord, coord, coord).filter(lambda v: math.fsum(x * x for x in v) > 1e-6)


def _special_rotations() -> np.ndarray:
    """Ties between Shepperd's candidates: identity, half turns, signed axis swaps."""
    out = [np.eye(3)]
    for i in range(3):
        d = -np.ones(3)
        d[i] = 1.0
        out.append(np.diag(d))  # half turn about axis i
    out.append(np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    out.append(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]]))
    return np.array(out)


@settings(max_examples=300)
@given(quats)
def test_quaternion_of_one_matrix_equals_the_batched_branch_bit_for_bit(
    q: tuple[float, ...],
) -> None:
    r = quat_to_matrix(q)
    single = quaternion_of(r)
    batched = quaternion_of(np.stack((r, np.eye(3))))[0]  # two matrices: the array branch
    assert np.array_equal(single, batched)
    assert np.array_equal(matrix_to_quat(r), single)
    assert quaternion_floats(r) == tuple(batched.tolist())


def test_quaternion_branches_agree_at_candidate_ties() -> None:
    rots = _special_rotations()
    batched = quaternion_of(rots)
    for r, b in zip(rots, batched, strict=True):
        assert np.array_equal(quaternion_of(r), b)
        assert b[0] >= 0.0 and np.allclose(quat_to_matrix(b), r, atol=1e-15)


@settings(max_examples=300)
@given(axis3, angles)
def test_rodrigues_one_axis_equals_the_batched_branch(
    axis: tuple[float, float, float], angle: float
) -> None:
    k = np.array(axis) / math.sqrt(math.fsum(x * x for x in axis))
    single = rodrigues(k, angle)
    batched = rodrigues(k[None], np.array([angle]))[0]
    assert np.abs(single - batched).max() <= EPS
    if math.cos(angle) == float(np.cos(angle)) and math.sin(angle) == float(np.sin(angle)):
        assert np.array_equal(single, batched)


@settings(max_examples=200)
@given(axis3, angles)
def test_axis_angle_to_matrix_single_check_path_equals_the_batched_one(
    axis: tuple[float, float, float], angle: float
) -> None:
    single = axis_angle_to_matrix(axis, angle)
    batched = axis_angle_to_matrix(np.array([axis]), np.array([angle]))[0]
    assert np.abs(single - batched).max() <= EPS


@settings(max_examples=20)
@given(st.integers(0, 2**32 - 1))
def test_quaternion_of_a_batch_equals_one_matrix_at_a_time(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rots = quat_to_matrix(rng.normal(size=(2, 50, 4)))
    batched = quaternion_of(rots)
    for idx in np.ndindex(2, 50):
        assert np.array_equal(quaternion_of(rots[idx]), batched[idx])
