"""Tests of core.geometry.rotations (pure numpy, no bpy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import (
    EULER_ORDERS,
    EulerSpec,
    InvalidInputError,
    InvalidOrderError,
    InvalidRotationError,
    ShapeMismatchError,
    angle_in_range,
    axis_angle_to_matrix,
    check_order,
    check_rotation,
    euler_spec,
    euler_to_matrix,
    matrix_to_axis_angle,
    matrix_to_euler,
    matrix_to_euler_families,
    matrix_to_quat,
    orthonormalize,
    quat_to_matrix,
    rotation_angle_between,
    wrap_angle,
)

PI = math.pi
angle = st.floats(-PI, PI, allow_nan=False)
big_angle = st.floats(-20.0, 20.0, allow_nan=False)
angles3 = st.tuples(big_angle, big_angle, big_angle)
orders = st.sampled_from(EULER_ORDERS)
unit_axis = (
    st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False)] * 3)
    .map(np.array)
    .filter(lambda v: float(np.linalg.norm(v)) > 1e-3)
)


def _rx(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


ELEMENTARY = {"X": _rx, "Y": _ry, "Z": _rz}


def _random_rotations(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return quat_to_matrix(q)


# ----------------------------------------------------------------------------- orders


def test_euler_orders_are_blenders_six() -> None:
    assert EULER_ORDERS == ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
    for order in EULER_ORDERS:
        assert check_order(order) == order


@pytest.mark.parametrize("bad", ["xyz", "XYX", "XY", "", "QUATERNION", None, 3])
def test_unknown_order_raises_listing_valid_orders(bad: object) -> None:
    with pytest.raises(InvalidOrderError) as info:
        check_order(bad)  # type: ignore[arg-type]
    msg = str(info.value)
    assert repr(bad) in msg
    for order in EULER_ORDERS:
        assert order in msg
    with pytest.raises(InvalidOrderError):
        euler_to_matrix([0.0, 0.0, 0.0], bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidOrderError):
        matrix_to_euler(np.eye(3), bad)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- euler


@given(angles3, orders)
def test_euler_to_matrix_is_product_in_application_order(a: tuple[float, ...], order: str) -> None:
    comp = {"X": a[0], "Y": a[1], "Z": a[2]}
    expected = np.eye(3)
    for axis in order:  # first-applied first => left-multiply
        expected = ELEMENTARY[axis](comp[axis]) @ expected
    np.testing.assert_allclose(euler_to_matrix(a, order), expected, atol=1e-12)


def test_euler_xyz_means_z_after_y_after_x() -> None:
    a = (0.3, -0.7, 1.1)
    np.testing.assert_allclose(
        euler_to_matrix(a, "XYZ"), _rz(1.1) @ _ry(-0.7) @ _rx(0.3), atol=1e-15
    )
    np.testing.assert_allclose(
        euler_to_matrix(a, "ZYX"), _rx(0.3) @ _ry(-0.7) @ _rz(1.1), atol=1e-15
    )


@given(angles3, orders)
def test_euler_round_trip_both_families_recompose(a: tuple[float, ...], order: str) -> None:
    R = euler_to_matrix(a, order)
    fam = matrix_to_euler_families(R, order)
    assert fam.shape == (2, 3)
    assert np.all(np.isfinite(fam))
    assert np.all(fam > -PI) and np.all(fam <= PI)
    for f in range(2):
        np.testing.assert_allclose(euler_to_matrix(fam[f], order), R, atol=1e-9)
    np.testing.assert_array_equal(matrix_to_euler(R, order), fam[0])


@given(angles3, orders)
def test_family_one_middle_in_half_range_and_family_two_is_pi_shift(
    a: tuple[float, ...], order: str
) -> None:
    spec = euler_spec(order)
    fam = matrix_to_euler_families(euler_to_matrix(a, order), order)
    mid1 = fam[0, spec.middle]
    assert -PI / 2 <= mid1 <= PI / 2
    # Compared modulo 2π: at ±π the two wraps may round to opposite ends.
    np.testing.assert_allclose(wrap_angle(fam[1, spec.middle] - (PI - mid1)), 0.0, atol=1e-12)
    for c in (spec.first, spec.last):
        np.testing.assert_allclose(wrap_angle(fam[1, c] - (fam[0, c] + PI)), 0.0, atol=1e-12)


@given(st.tuples(angle, st.floats(-1.5, 1.5), angle), orders)
def test_family_one_recovers_angles_away_from_gimbal(
    a: tuple[float, float, float], order: str
) -> None:
    spec = euler_spec(order)
    comp = np.empty(3)
    comp[spec.first], comp[spec.middle], comp[spec.last] = a
    out = matrix_to_euler(euler_to_matrix(comp, order), order)
    np.testing.assert_allclose(wrap_angle(out - comp), 0.0, atol=1e-9)


@given(st.tuples(big_angle, st.sampled_from([-1.0, 1.0]), big_angle), orders)
@settings(max_examples=200)
def test_gimbal_lock_gives_finite_angles_that_recompose(
    a: tuple[float, float, float], order: str
) -> None:
    spec = euler_spec(order)
    comp = np.empty(3)
    comp[spec.first], comp[spec.middle], comp[spec.last] = a[0], a[1] * PI / 2, a[2]
    R = euler_to_matrix(comp, order)
    fam = matrix_to_euler_families(R, order)
    assert np.all(np.isfinite(fam))
    for f in range(2):
        np.testing.assert_allclose(euler_to_matrix(fam[f], order), R, atol=1e-9)
    # documented convention: the first-applied angle is 0 (family 2: pi)
    assert fam[0, spec.first] == 0.0
    assert fam[1, spec.first] == pytest.approx(PI)
    assert abs(fam[0, spec.middle]) == pytest.approx(PI / 2)


@pytest.mark.parametrize("order", EULER_ORDERS)
@pytest.mark.parametrize("eps", [1e-6, 1e-8, 1e-10, 1e-12, 1e-14])
def test_near_gimbal_lock_recomposes_accurately(order: str, eps: float) -> None:
    spec = euler_spec(order)
    rng = np.random.default_rng(1)
    comp = rng.uniform(-PI, PI, size=(200, 3))
    comp[:, spec.middle] = rng.choice([-1.0, 1.0], 200) * (PI / 2 - eps)
    R = euler_to_matrix(comp, order)
    fam = matrix_to_euler_families(R, order)
    assert np.all(np.isfinite(fam))
    for f in range(2):
        np.testing.assert_allclose(euler_to_matrix(fam[:, f], order), R, atol=1e-9)


def test_euler_of_identity_is_zero() -> None:
    for order in EULER_ORDERS:
        np.testing.assert_array_equal(matrix_to_euler(np.eye(3), order) + 0.0, 0.0)


# ----------------------------------------------------------------------------- euler_spec


def test_euler_spec_is_frozen_and_cached() -> None:
    spec = euler_spec("XYZ")
    assert isinstance(spec, EulerSpec)
    assert spec is euler_spec("XYZ")
    with pytest.raises(AttributeError):
        spec.middle = 0  # type: ignore[misc]
    for order in EULER_ORDERS:
        s = euler_spec(order)
        assert s.order == order
        assert (s.first, s.middle, s.last) == tuple("XYZ".index(ch) for ch in order)


@given(angles3, orders)
def test_euler_spec_identities_hold_on_random_angles(a: tuple[float, ...], order: str) -> None:
    s = euler_spec(order)
    R = euler_to_matrix(a, order)
    cm = math.cos(a[s.middle])
    assert s.sin_sign * R[s.sin_entry] == pytest.approx(math.sin(a[s.middle]), abs=1e-12)
    for idx, y, ys, x, xs in (
        (s.first, s.first_y, s.first_y_sign, s.first_x, s.first_x_sign),
        (s.last, s.last_y, s.last_y_sign, s.last_x, s.last_x_sign),
    ):
        assert ys * R[y] == pytest.approx(cm * math.sin(a[idx]), abs=1e-12)
        assert xs * R[x] == pytest.approx(cm * math.cos(a[idx]), abs=1e-12)


@given(angles3, orders)
def test_euler_spec_atan2_formulas_give_both_families(a: tuple[float, ...], order: str) -> None:
    s = euler_spec(order)
    R = euler_to_matrix(a, order)
    fam = matrix_to_euler_families(R, order)
    if abs(math.cos(fam[0, s.middle])) < 1e-6:
        return  # gimbal lock: the atan2 arguments vanish
    for f, sign in ((0, 1.0), (1, -1.0)):
        first = math.atan2(
            sign * s.first_y_sign * R[s.first_y], sign * s.first_x_sign * R[s.first_x]
        )
        last = math.atan2(sign * s.last_y_sign * R[s.last_y], sign * s.last_x_sign * R[s.last_x])
        assert wrap_angle(first - fam[f, s.first]) == pytest.approx(0.0, abs=1e-9)
        assert wrap_angle(last - fam[f, s.last]) == pytest.approx(0.0, abs=1e-9)
        assert math.sin(fam[f, s.middle]) == pytest.approx(s.sin_sign * R[s.sin_entry], abs=1e-12)


# ----------------------------------------------------------------------------- quaternions


@given(st.tuples(*[st.floats(-1.0, 1.0, allow_nan=False)] * 4))
def test_quat_matrix_round_trip(q: tuple[float, ...]) -> None:
    qa = np.array(q)
    if np.linalg.norm(qa) < 1e-3:
        return
    R = quat_to_matrix(qa)
    check_rotation(R, tol=1e-12)
    back = matrix_to_quat(R)
    assert back[0] >= 0.0
    assert abs(np.linalg.norm(back) - 1.0) < 1e-12
    u = qa / np.linalg.norm(qa)
    assert min(np.abs(back - u).max(), np.abs(back + u).max()) < 1e-9
    np.testing.assert_allclose(quat_to_matrix(back), R, atol=1e-12)


@given(unit_axis, st.floats(0.0, 1e-6))
def test_quat_round_trip_near_pi(axis: np.ndarray, eps: float) -> None:
    R = axis_angle_to_matrix(axis, PI - eps)
    q = matrix_to_quat(R)
    assert q[0] >= 0.0
    np.testing.assert_allclose(quat_to_matrix(q), R, atol=1e-12)
    u = axis / np.linalg.norm(axis)
    np.testing.assert_allclose(np.abs(q[1:]), np.abs(u) * math.cos(eps / 2), atol=1e-9)


def test_matrix_to_quat_of_half_turn_has_largest_component_positive() -> None:
    for R, expected in (
        (np.diag([1.0, -1.0, -1.0]), [0, 1, 0, 0]),
        (np.diag([-1.0, 1.0, -1.0]), [0, 0, 1, 0]),
        (np.diag([-1.0, -1.0, 1.0]), [0, 0, 0, 1]),
        (np.eye(3), [1, 0, 0, 0]),
    ):
        np.testing.assert_allclose(matrix_to_quat(R), expected, atol=1e-15)


def test_quat_to_matrix_normalises_and_rejects_zero() -> None:
    np.testing.assert_allclose(quat_to_matrix([2.0, 0, 0, 0]), np.eye(3))
    with pytest.raises(InvalidInputError, match="quaternion"):
        quat_to_matrix([0.0, 0.0, 0.0, 0.0])
    with pytest.raises(InvalidInputError, match=r"batch index \(1,\)"):
        quat_to_matrix([[1.0, 0, 0, 0], [0.0, 0, 0, 0]])
    with pytest.raises(InvalidInputError, match="finite"):
        quat_to_matrix([1.0, math.nan, 0, 0])
    with pytest.raises(InvalidInputError, match=r"\(\.\.\., 4\)"):
        quat_to_matrix([1.0, 0, 0])


# ----------------------------------------------------------------------------- axis-angle


@given(unit_axis, st.floats(0.0, PI))
def test_axis_angle_round_trip(axis: np.ndarray, theta: float) -> None:
    R = axis_angle_to_matrix(axis, theta)
    check_rotation(R, tol=1e-12)
    ax, ang = matrix_to_axis_angle(R)
    assert 0.0 <= ang <= PI
    assert ang == pytest.approx(theta, abs=1e-9)
    np.testing.assert_allclose(axis_angle_to_matrix(ax, ang), R, atol=1e-12)
    if 1e-6 < theta < PI - 1e-6:
        np.testing.assert_allclose(ax, axis / np.linalg.norm(axis), atol=1e-8)


@given(unit_axis, st.floats(-20.0, 20.0))
def test_axis_angle_matches_rodrigues_definition(axis: np.ndarray, theta: float) -> None:
    u = axis / np.linalg.norm(axis)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    expected = np.eye(3) + math.sin(theta) * K + (1 - math.cos(theta)) * K @ K
    np.testing.assert_allclose(axis_angle_to_matrix(axis, theta), expected, atol=1e-12)


def test_axis_angle_of_identity_is_x_axis_zero_angle() -> None:
    axis, ang = matrix_to_axis_angle(np.eye(3))
    np.testing.assert_array_equal(axis, [1.0, 0.0, 0.0])
    assert ang == 0.0


@pytest.mark.parametrize("theta", [1e-12, 1e-8, PI - 1e-8, PI - 1e-12, PI])
def test_axis_angle_robust_near_zero_and_pi(theta: float) -> None:
    axis = np.array([0.2, -0.5, 0.7])
    R = axis_angle_to_matrix(axis, theta)
    ax, ang = matrix_to_axis_angle(R)
    assert np.all(np.isfinite(ax)) and math.isfinite(float(ang))
    assert ang == pytest.approx(theta, abs=1e-10)
    np.testing.assert_allclose(np.abs(ax), np.abs(axis) / np.linalg.norm(axis), atol=1e-6)
    np.testing.assert_allclose(axis_angle_to_matrix(ax, ang), R, atol=1e-12)


def test_axis_angle_rejects_zero_axis_and_mismatched_batches() -> None:
    with pytest.raises(InvalidInputError, match="axis"):
        axis_angle_to_matrix([0.0, 0.0, 0.0], 1.0)
    with pytest.raises(ShapeMismatchError, match="axis"):
        axis_angle_to_matrix(np.ones((4, 3)), np.ones(5))
    with pytest.raises(InvalidInputError, match="angle"):
        axis_angle_to_matrix([1.0, 0, 0], math.inf)


# ----------------------------------------------------------------------------- angles


@given(st.floats(-1e3, 1e3, allow_nan=False))
def test_wrap_angle_range_and_equivalence(a: float) -> None:
    w = float(wrap_angle(a))
    assert -PI < w <= PI
    assert math.cos(w) == pytest.approx(math.cos(a), abs=1e-9)
    assert math.sin(w) == pytest.approx(math.sin(a), abs=1e-9)


def test_wrap_angle_edges() -> None:
    np.testing.assert_array_equal(wrap_angle([PI, -PI, 0.1, 3 * PI]), [PI, PI, 0.1, PI])


def test_angle_in_range_simple_and_wrapped() -> None:
    assert angle_in_range(0.5, 0.0, 1.0)
    assert not angle_in_range(1.5, 0.0, 1.0)
    assert angle_in_range(0.5 + 2 * PI, 0.0, 1.0)
    # limits past +pi: [2.5, 4.0] covers -pi + 0.5 (== pi + 0.5 = 3.64)
    assert angle_in_range(-PI + 0.5, 2.5, 4.0)
    assert angle_in_range(3.0, 2.5, 4.0)
    assert not angle_in_range(0.0, 2.5, 4.0)
    assert not angle_in_range(-2.0, 2.5, 4.0)  # -2.0 + 2pi = 4.28
    # limits below -pi
    assert angle_in_range(3.0, -4.0, -3.0)  # 3 - 2pi = -3.28
    # full circle or more: always True
    assert angle_in_range(123.0, -PI, PI)
    assert angle_in_range(1.0, 0.0, 2 * PI)
    # tolerance at the boundaries, from either side
    assert angle_in_range(1.0 + 1e-12, 0.0, 1.0)
    assert angle_in_range(-1e-12, 0.0, 1.0)
    assert not angle_in_range(1.0 + 1e-6, 0.0, 1.0)
    assert angle_in_range(1.0 + 1e-6, 0.0, 1.0, tol=1e-5)
    assert not angle_in_range(math.nan, -PI, PI)


@given(big_angle, big_angle, st.floats(0.0, 7.0))
def test_angle_in_range_agrees_with_brute_force(a: float, lower: float, width: float) -> None:
    upper = lower + width
    ks = np.arange(-10, 11)
    brute = bool(np.any((a + 2 * PI * ks >= lower - 1e-9) & (a + 2 * PI * ks <= upper + 1e-9)))
    assert bool(angle_in_range(a, lower, upper)) == brute


def test_angle_in_range_rejects_inverted_limits() -> None:
    with pytest.raises(InvalidInputError, match="lower <= upper"):
        angle_in_range(0.0, 1.0, 0.0)
    with pytest.raises(ShapeMismatchError):
        angle_in_range(np.zeros(3), np.zeros(4), np.ones(4))


@given(unit_axis, st.floats(0.0, PI))
def test_rotation_angle_between_recovers_relative_angle(axis: np.ndarray, theta: float) -> None:
    rng = np.random.default_rng(0)
    R1 = _random_rotations(rng, 1)[0]
    R2 = R1 @ axis_angle_to_matrix(axis, theta)
    got = rotation_angle_between(R1, R2)
    assert 0.0 <= got <= PI
    assert got == pytest.approx(theta, abs=1e-12)


def test_rotation_angle_between_is_accurate_near_zero_and_pi() -> None:
    axis = np.array([1.0, 2.0, 3.0])
    for theta in (1e-10, 1e-14, PI - 1e-10):
        got = rotation_angle_between(np.eye(3), axis_angle_to_matrix(axis, theta))
        assert got == pytest.approx(theta, rel=1e-5, abs=1e-15)


# ----------------------------------------------------------------------------- validation


def test_check_rotation_accepts_rotations_and_returns_float64() -> None:
    R = check_rotation(np.eye(3, dtype=np.float32))
    assert R.dtype == np.float64
    out = check_rotation(_random_rotations(np.random.default_rng(0), 7).reshape(7, 1, 3, 3))
    assert out.shape == (7, 1, 3, 3)


def test_check_rotation_rejects_non_orthonormal_naming_worst_index() -> None:
    Rs = _random_rotations(np.random.default_rng(0), 5)
    Rs[3] *= 1.01
    Rs[1, 0, 0] += 1e-5
    with pytest.raises(InvalidRotationError) as info:
        check_rotation(Rs, name="goal")
    msg = str(info.value)
    assert "goal" in msg and "(3,)" in msg and "orthonormal" in msg and "0.0201" in msg


def test_check_rotation_rejects_reflection() -> None:
    with pytest.raises(InvalidRotationError, match=r"det \+1.*det = -1"):
        check_rotation(np.diag([1.0, 1.0, -1.0]))


def test_check_rotation_rejects_nan_and_wrong_shape() -> None:
    bad = np.stack([np.eye(3), np.eye(3)])
    bad[1, 2, 2] = math.nan
    with pytest.raises(InvalidRotationError, match=r"finite.*\(1,\)"):
        check_rotation(bad)
    with pytest.raises(InvalidRotationError, match=r"\(\.\.\., 3, 3\).*\(3, 4\)"):
        check_rotation(np.zeros((3, 4)))
    with pytest.raises(InvalidRotationError, match="rotation"):
        check_rotation("not a matrix")


def test_check_rotation_raises_requested_error_class_and_honours_tol() -> None:
    class GoalError(InvalidInputError):
        pass

    R = np.eye(3)
    R[0, 1] = 1e-4
    with pytest.raises(GoalError):
        check_rotation(R, error=GoalError)
    check_rotation(R, tol=1e-3)


@given(st.integers(0, 2**31))
def test_orthonormalize_returns_nearest_proper_rotation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    R = _random_rotations(rng, 1)[0]
    noisy = R + rng.normal(scale=1e-3, size=(3, 3))
    out = orthonormalize(noisy)
    check_rotation(out, tol=1e-12)
    assert np.abs(out - R).max() < 1e-2
    np.testing.assert_allclose(orthonormalize(R), R, atol=1e-12)
    # a reflection is mapped to a proper rotation (det +1)
    assert np.linalg.det(orthonormalize(-R)) == pytest.approx(1.0)


# ----------------------------------------------------------------------------- batching


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_batched_equals_per_element(order: str) -> None:
    rng = np.random.default_rng(42)
    angles = rng.uniform(-7.0, 7.0, size=(4, 5, 3))
    angles[0, 0, euler_spec(order).middle] = PI / 2  # include a gimbal lock element
    R = euler_to_matrix(angles, order)
    assert R.shape == (4, 5, 3, 3)
    fam = matrix_to_euler_families(R, order)
    eul = matrix_to_euler(R, order)
    quat = matrix_to_quat(R)
    axis, ang = matrix_to_axis_angle(R)
    R_q = quat_to_matrix(quat)
    R_aa = axis_angle_to_matrix(axis, ang)
    between = rotation_angle_between(R[:1], R)  # broadcasts (1, 5) against (4, 5)
    ortho = orthonormalize(R)
    wrapped = wrap_angle(angles)
    inside = angle_in_range(angles, -1.0, 1.0)
    for idx in np.ndindex(4, 5):
        np.testing.assert_array_equal(R[idx], euler_to_matrix(angles[idx], order))
        np.testing.assert_array_equal(fam[idx], matrix_to_euler_families(R[idx], order))
        np.testing.assert_array_equal(eul[idx], matrix_to_euler(R[idx], order))
        np.testing.assert_array_equal(quat[idx], matrix_to_quat(R[idx]))
        a1, g1 = matrix_to_axis_angle(R[idx])
        np.testing.assert_array_equal(axis[idx], a1)
        assert ang[idx] == g1
        np.testing.assert_array_equal(R_q[idx], quat_to_matrix(quat[idx]))
        np.testing.assert_array_equal(R_aa[idx], axis_angle_to_matrix(axis[idx], ang[idx]))
        assert between[idx] == rotation_angle_between(R[0, idx[1]], R[idx])
        np.testing.assert_allclose(ortho[idx], orthonormalize(R[idx]), atol=1e-15)
        np.testing.assert_array_equal(wrapped[idx], wrap_angle(angles[idx]))
        np.testing.assert_array_equal(inside[idx], angle_in_range(angles[idx], -1.0, 1.0))
    check_rotation(R)


def test_empty_batches_are_supported() -> None:
    R = euler_to_matrix(np.zeros((0, 3)))
    assert R.shape == (0, 3, 3)
    assert matrix_to_euler_families(R).shape == (0, 2, 3)
    assert matrix_to_quat(R).shape == (0, 4)
    assert check_rotation(R).shape == (0, 3, 3)


def test_malformed_inputs_raise_invalid_input() -> None:
    with pytest.raises(InvalidInputError, match=r"euler angles.*\(\.\.\., 3\)"):
        euler_to_matrix([0.0, 1.0])
    with pytest.raises(InvalidInputError, match="finite"):
        euler_to_matrix([0.0, math.nan, 1.0])
    with pytest.raises(InvalidInputError, match=r"\(\.\.\., 3, 3\)"):
        matrix_to_euler(np.eye(4))
    with pytest.raises(InvalidInputError, match="finite"):
        matrix_to_quat(np.full((3, 3), math.inf))
    with pytest.raises(InvalidInputError, match="numeric"):
        euler_to_matrix(["a", "b", "c"])
    with pytest.raises(ShapeMismatchError):
        rotation_angle_between(np.tile(np.eye(3), (2, 1, 1)), np.tile(np.eye(3), (3, 1, 1)))


@pytest.mark.parametrize(
    "matrix",
    [
        np.diag([1.0, 1.0, -1.0]),  # reflection
        np.diag([1.0, 1.0, 1.0 + 2e-6]),  # just outside the tolerance
        np.array([[1.0, 1e-3, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),  # sheared
        np.zeros((3, 3)),
    ],
    ids=["reflection", "scaled", "sheared", "zero"],
)
def test_check_rotation_single_matrix_fast_path_rejects_like_the_batch(matrix: np.ndarray) -> None:
    """One 3×3 matrix is checked on floats first; it must reject exactly what the
    batched check rejects (the batch of one goes through the array path)."""
    with pytest.raises(InvalidRotationError):
        check_rotation(matrix)
    with pytest.raises(InvalidRotationError):
        check_rotation(matrix[None])
    ok = euler_to_matrix(np.array([0.3, -1.2, 2.0]), "ZXY")
    np.testing.assert_array_equal(check_rotation(ok), ok)
    inside = np.diag([1.0, 1.0, 1.0 + 0.4e-6])  # within the tolerance: accepted
    np.testing.assert_array_equal(check_rotation(inside), inside)
