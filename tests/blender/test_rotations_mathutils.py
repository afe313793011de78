"""Cross-check core.geometry.rotations against the real mathutils bundled with bpy (float32).

Findings pinned here:

* ``Euler((x, y, z), order).to_matrix()`` equals :func:`euler_to_matrix` for all orders.
* ``Matrix.to_euler(order)`` (no ``compat`` argument) returns one of our two Euler
  families: the one with the smaller ``|ax| + |ay| + |az|`` (family 1 on ties). Near
  gimbal lock (``cos(middle) < ~4e-5`` in float32) it instead sets the *last-applied*
  angle to 0 (we set the first-applied one to 0); both recompose to the same matrix.
"""

from __future__ import annotations

import os
import tempfile

# tests/blender/conftest.py normally sets this before anything imports bpy (and removes
# its folder at exit); run alone, this module makes its own.
if "BLENDER_USER_RESOURCES" not in os.environ:
    os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="limber-mathutils-user-")

import bpy  # noqa: E402, F401  (must be imported before mathutils)
import mathutils  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from core import (  # noqa: E402
    EULER_ORDERS,
    axis_angle_to_matrix,
    euler_spec,
    euler_to_matrix,
    matrix_to_axis_angle,
    matrix_to_euler,
    matrix_to_euler_families,
    matrix_to_quat,
    quat_to_matrix,
    wrap_angle,
)

TOL = 1e-6  # mathutils computes in float32
N = 400


def _mat(m: object) -> np.ndarray:
    return np.array([list(row) for row in m], dtype=np.float64)  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def angles() -> np.ndarray:
    rng = np.random.default_rng(20240601)
    a = rng.uniform(-np.pi, np.pi, size=(N, 3))
    a[: N // 4] *= 3.0  # also angles beyond +-pi
    return a


def test_mathutils_is_the_one_bundled_with_bpy() -> None:
    # bpy registers mathutils as a built-in module (no file); a PyPI install would have one.
    assert getattr(mathutils, "__file__", None) is None


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_to_matrix_matches_mathutils(order: str, angles: np.ndarray) -> None:
    ours = euler_to_matrix(angles, order)
    for a, R in zip(angles, ours, strict=True):
        theirs = _mat(mathutils.Euler(a.tolist(), order).to_matrix())
        np.testing.assert_allclose(R, theirs, atol=TOL)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_euler_families_recompose_to_mathutils_matrix(order: str, angles: np.ndarray) -> None:
    for a in angles:
        theirs = _mat(mathutils.Euler(a.tolist(), order).to_matrix())
        fam = matrix_to_euler_families(theirs, order)
        for f in range(2):
            recomposed = _mat(mathutils.Euler(fam[f].tolist(), order).to_matrix())
            np.testing.assert_allclose(recomposed, theirs, atol=TOL)


@pytest.mark.parametrize("order", EULER_ORDERS)
def test_mathutils_to_euler_picks_family_with_smaller_abs_sum(
    order: str, angles: np.ndarray
) -> None:
    middle = euler_spec(order).middle
    checked = 0
    for a in angles:
        R = euler_to_matrix(a, order)
        fam = matrix_to_euler_families(R, order)
        theirs = np.array(mathutils.Matrix(R.tolist()).to_euler(order))
        if abs(np.cos(fam[0, middle])) < 1e-3:
            continue  # near gimbal lock mathutils zeroes the last angle instead
        sums = np.abs(fam).sum(axis=1)
        if abs(sums[0] - sums[1]) < 1e-4:
            continue  # tie within float32 noise
        pick = int(np.argmin(sums))
        np.testing.assert_allclose(wrap_angle(theirs - fam[pick]), 0.0, atol=TOL)
        checked += 1
    assert checked > N // 2


@pytest.mark.parametrize("order", EULER_ORDERS)
@pytest.mark.parametrize("sign", [-1.0, 1.0])
def test_gimbal_lock_agrees_with_mathutils_up_to_recomposition(order: str, sign: float) -> None:
    spec = euler_spec(order)
    rng = np.random.default_rng(7)
    for _ in range(50):
        a = rng.uniform(-np.pi, np.pi, size=3)
        a[spec.middle] = sign * np.pi / 2
        # float64 matrix at exact gimbal lock: both conventions are visible exactly
        R = euler_to_matrix(a, order)
        ours = matrix_to_euler(R, order)
        theirs = np.array(mathutils.Matrix(R.tolist()).to_euler(order))
        assert ours[spec.first] == 0.0  # our convention
        assert theirs[spec.last] == 0.0  # Blender's convention
        for e in (ours, theirs):
            np.testing.assert_allclose(
                _mat(mathutils.Euler(e.tolist(), order).to_matrix()), R, atol=TOL
            )
        # float32 matrix from mathutils: cos(middle) is ~1e-8 noise, above our 1e-9
        # gimbal threshold, so the outer split is arbitrary -- but finite and exact.
        R32 = _mat(mathutils.Euler(a.tolist(), order).to_matrix())
        fam = matrix_to_euler_families(R32, order)
        assert np.all(np.isfinite(fam))
        for f in range(2):
            np.testing.assert_allclose(euler_to_matrix(fam[f], order), R32, atol=TOL)


def test_matrix_to_quat_matches_mathutils_up_to_sign(angles: np.ndarray) -> None:
    Rs = euler_to_matrix(angles, "XYZ")
    ours = matrix_to_quat(Rs)
    for R, q in zip(Rs, ours, strict=True):
        theirs = np.array(mathutils.Matrix(R.tolist()).to_quaternion())
        assert min(np.abs(q - theirs).max(), np.abs(q + theirs).max()) < TOL


def test_matrix_to_quat_near_half_turn_matches_mathutils() -> None:
    rng = np.random.default_rng(3)
    axes = rng.normal(size=(100, 3))
    Rs = axis_angle_to_matrix(axes, np.pi - rng.uniform(0.0, 1e-3, size=100))
    for R, q in zip(Rs, matrix_to_quat(Rs), strict=True):
        theirs = np.array(mathutils.Matrix(R.tolist()).to_quaternion())
        assert min(np.abs(q - theirs).max(), np.abs(q + theirs).max()) < 1e-5


def test_quat_to_matrix_matches_mathutils() -> None:
    rng = np.random.default_rng(4)
    qs = rng.normal(size=(N, 4))
    ours = quat_to_matrix(qs)
    for q, R in zip(qs, ours, strict=True):
        theirs = _mat(mathutils.Quaternion(q.tolist()).normalized().to_matrix())
        np.testing.assert_allclose(R, theirs, atol=TOL)


def test_axis_angle_matches_mathutils_rotation() -> None:
    rng = np.random.default_rng(5)
    axes = rng.normal(size=(N, 3))
    thetas = rng.uniform(-2 * np.pi, 2 * np.pi, size=N)
    ours = axis_angle_to_matrix(axes, thetas)
    for axis, theta, R in zip(axes, thetas, ours, strict=True):
        theirs = _mat(mathutils.Matrix.Rotation(float(theta), 3, axis.tolist()))
        np.testing.assert_allclose(R, theirs, atol=TOL)


def test_matrix_to_axis_angle_matches_mathutils_quaternion() -> None:
    rng = np.random.default_rng(6)
    Rs = quat_to_matrix(rng.normal(size=(N, 4)))
    axes, thetas = matrix_to_axis_angle(Rs)
    for R, axis, theta in zip(Rs, axes, thetas, strict=True):
        q = mathutils.Matrix(R.tolist()).to_quaternion()
        their_axis, their_angle = np.array(q.axis), q.angle
        if their_angle > np.pi:  # mathutils reports (axis, angle) with angle in [0, 2pi)
            their_axis, their_angle = -their_axis, 2 * np.pi - their_angle
        assert theta == pytest.approx(their_angle, abs=1e-5)
        np.testing.assert_allclose(axis, their_axis, atol=1e-4)
