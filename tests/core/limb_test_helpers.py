"""Small geometry helpers shared by the limb test modules (independent of core.limb)."""

import numpy as np

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
