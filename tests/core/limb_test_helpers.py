"""Helpers shared by the limb test modules (independent of core.limb's internals)."""

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings

from core import (
    LIMIT_TOLERANCE,
    EulerLimits,
    Limb,
    LimbLimits,
    matrix_to_euler_families,
    quat_to_matrix,
)

PI = np.pi
TAU = 2.0 * np.pi


def tf(rot: np.ndarray | None = None, t: tuple[float, ...] | np.ndarray = (0.0, 0.0, 0.0)):
    m = np.eye(4)
    if rot is not None:
        m[:3, :3] = rot
    m[:3, 3] = t
    return m


def readme_arm(limits: LimbLimits | None = None, **kw: Any) -> Limb:
    """The README's arm, a Blender-like bone chain along +Y: upper arm 0.30 m, forearm
    0.25 m, hand 0.08 m along the wrist's +Y; elbow hinge about X."""
    return Limb(
        tf(t=(0.0, 0.30, 0.0)),
        tf(t=(0.0, 0.25, 0.0)),
        elbow_axis=(1.0, 0.0, 0.0),
        effector=tf(t=(0.0, 0.08, 0.0)),
        limits=limits,
        **kw,
    )


#: The README's human-arm limits (degrees there): shoulder XYZ (−90, −60, −90)..(160, 60, 90),
#: elbow 0..150, wrist XYZ (−70, −30, −80)..(70, 30, 80).
README_LIMITS = LimbLimits(
    EulerLimits("XYZ", np.radians((-90, -60, -90)), np.radians((160, 60, 90))),
    (0.0, float(np.radians(150))),
    EulerLimits("XYZ", np.radians((-70, -30, -80)), np.radians((70, 30, 80))),
)


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def rand_rot(rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    return quat_to_matrix(rng.normal(size=(4,) if size is None else (size, 4)))


def wrap(a: np.ndarray | float) -> np.ndarray:
    return (np.asarray(a) + PI) % TAU - PI


def circ_dist(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    return np.abs(wrap(np.asarray(a) - np.asarray(b)))


#: Hypothesis settings of the limb test modules (deterministic, no example database).
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

#: The LimbSolution fields every goal type defines.
SOLUTION_FIELDS = ("shoulder", "elbow", "wrist", "swivel", "position_error", "orientation_error")


def angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle between vectors (..., 3), robust near 0."""
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))


@contextmanager
def no_warnings() -> Iterator[None]:
    """Any warning (RuntimeWarning from NaN/0-division, …) becomes an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def assert_finite(sol: Any, names: tuple[str, ...] = SOLUTION_FIELDS) -> None:
    """Every named field of the solution is finite."""
    for name in names:
        value = np.asarray(getattr(sol, name), dtype=np.float64)
        assert np.all(np.isfinite(value)), f"{name} is not finite: {value}"


def in_range(a: np.ndarray, lo: float, hi: float, tol: float = LIMIT_TOLERANCE) -> np.ndarray:
    """Some a + 2πk in [lo − tol, hi + tol] (our own implementation)."""
    a = np.asarray(a, dtype=np.float64)
    if hi - lo >= TAU:
        return np.ones(a.shape, dtype=bool)
    k = np.ceil((lo - tol - a) / TAU)
    return a + TAU * k <= hi + tol


def euler_ok(r: np.ndarray, lim: EulerLimits | None, tol: float = LIMIT_TOLERANCE) -> np.ndarray:
    """Whether either Euler family of rotations r (..., 3, 3) lies within ``lim``."""
    if lim is None:
        return np.ones(r.shape[:-2], dtype=bool)
    fam = matrix_to_euler_families(r, lim.order)  # (..., 2, 3)
    ok = np.ones(fam.shape[:-1], dtype=bool)
    lo, hi = lim.bounds()
    for i in range(3):
        ok &= in_range(fam[..., i], lo[i], hi[i], tol)
    return np.asarray(ok.any(axis=-1))


def joints_within(
    limb: Limb, r1: np.ndarray, theta: np.ndarray, w: np.ndarray, tol: float = LIMIT_TOLERANCE
) -> np.ndarray:
    """Whether shoulder r1, elbow θ and wrist w lie within the limb's limits."""
    lim = limb.limits
    if lim is None:
        return np.ones(np.shape(theta), dtype=bool)
    el = np.ones(np.shape(theta), dtype=bool)
    if lim.elbow is not None:
        el = in_range(np.asarray(theta), lim.elbow[0], lim.elbow[1], tol)
    return el & euler_ok(r1, lim.shoulder, tol) & euler_ok(w, lim.wrist, tol)


def pose_within(limb: Limb, sol: Any, tol: float = LIMIT_TOLERANCE) -> np.ndarray:
    """Whether a LimbSolution's joints lie within the limb's limits."""
    return joints_within(limb, sol.shoulder, np.asarray(sol.elbow), sol.wrist, tol)
