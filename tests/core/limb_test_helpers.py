"""Helpers shared by the limb test modules (independent of core.limb's internals)."""

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings

from core.rotations import quat_to_matrix

PI = np.pi
TAU = 2.0 * np.pi


def tf(rot: np.ndarray | None = None, t: tuple[float, ...] | np.ndarray = (0.0, 0.0, 0.0)):
    m = np.eye(4)
    if rot is not None:
        m[:3, :3] = rot
    m[:3, 3] = t
    return m


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
