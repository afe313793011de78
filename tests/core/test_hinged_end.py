"""hinged_end / hinged_frame: a bone that does not inherit its parent's rotation is put
at a model orientation by writing its local rotation through the frame it acts in, and
its held wrist is its evaluated orientation relative to the lower bone."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core import axis_angle_to_matrix, hinged_end, hinged_frame, orthonormalize_yz


def _rot(rng: np.random.Generator) -> np.ndarray:
    axis = rng.normal(size=3)
    return axis_angle_to_matrix(axis / np.linalg.norm(axis), rng.uniform(-3.0, 3.0))


def _similarity(rng: np.random.Generator) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = _rot(rng) * rng.uniform(0.5, 2.0)
    m[:3, 3] = rng.normal(size=3)
    return m


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_written_rotation_shows_the_model_orientation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    to_frame, lower, rest = _similarity(rng), _similarity(rng), _similarity(rng)
    rest[:3, :3] /= np.linalg.norm(rest[:3, :3], axis=0)  # a rest matrix is rigid
    frame = rest.copy()  # what the bone inherits of its parent: scale and position
    frame[:3, :3] *= rng.uniform(0.5, 2.0)
    frame[:3, 3] = rng.normal(size=3)
    basis = np.eye(4)
    basis[:3, :3] = _rot(rng) * rng.uniform(0.5, 2.0, size=3)  # T · R · S, scale kept
    basis[:3, 3] = rng.normal(size=3)
    end = frame @ basis  # Blender: the bone's pose is its frame times its local matrix
    end[:3, 3] = frame[:3, 3] + frame[:3, :3] @ basis[:3, 3]
    link = _rot(rng)
    wrist, acts = hinged_end(to_frame, np.stack([lower, end, rest]), link)
    np.testing.assert_allclose(acts, orthonormalize_yz(to_frame[:3, :3] @ frame[:3, :3]),
                               atol=1e-12)
    np.testing.assert_allclose(acts, hinged_frame(to_frame, rest), atol=1e-15)
    # the held wrist reproduces the evaluated orientation through the lower bone and link
    shown = orthonormalize_yz(to_frame[:3, :3] @ end[:3, :3])
    np.testing.assert_allclose(orthonormalize_yz(to_frame[:3, :3] @ lower[:3, :3]) @ link
                               @ wrist, shown, atol=1e-12)
    # a model orientation M written as actsᵀ·M is what the bone then shows
    m = _rot(rng)
    r = acts.T @ m
    new = frame[:3, :3] @ r @ np.diag(np.linalg.norm(basis[:3, :3], axis=0))
    np.testing.assert_allclose(orthonormalize_yz(to_frame[:3, :3] @ new), m, atol=1e-12)


def test_batches_broadcast() -> None:
    rng = np.random.default_rng(2)
    poses = np.stack([np.stack([_similarity(rng), _similarity(rng), _similarity(rng)])
                      for _ in range(4)])
    to_frame = np.stack([_similarity(rng) for _ in range(4)])
    link = _rot(rng)
    wrist, acts = hinged_end(to_frame, poses, link)
    assert wrist.shape == acts.shape == (4, 3, 3)
    for i in range(4):
        w, a = hinged_end(to_frame[i], poses[i], link)
        np.testing.assert_allclose(w, wrist[i], atol=1e-14)
        np.testing.assert_allclose(a, acts[i], atol=1e-14)
