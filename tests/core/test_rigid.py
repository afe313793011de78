"""core.geometry.rigid: affine/rigid transforms, Y-first orientation, goal errors, key
continuity (numpy only)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from core import (
    affine_inverse,
    affine_links,
    apply_goal_offset,
    axis_angle_to_matrix,
    bend_axis,
    chain_pose,
    compose_trs,
    continuous_eulers,
    continuous_quaternions,
    euler_to_matrix,
    extrapolate_offset,
    goal_errors,
    goal_in_frame,
    goal_offset,
    limb_links,
    matrix_to_quat,
    nearest_eulers,
    orthonormalize_yz,
    quat_to_matrix,
    refine_goal,
    rigid_inverse,
    rotation_about,
    similarity_scale,
    transform_points,
    translation,
)


def _rot(rng: np.random.Generator, n: int | None = None) -> np.ndarray:
    q = rng.normal(size=(4,) if n is None else (n, 4))
    return quat_to_matrix(q / np.linalg.norm(q, axis=-1, keepdims=True))


def _rigid(rng: np.random.Generator, n: int) -> np.ndarray:
    m = np.zeros((n, 4, 4))
    m[:, :3, :3] = _rot(rng, n)
    m[:, :3, 3] = rng.normal(size=(n, 3))
    m[:, 3, 3] = 1.0
    return m


def _affine(rng: np.random.Generator, n: int) -> np.ndarray:
    m = _rigid(rng, n)
    m[:, :3, :3] = m[:, :3, :3] @ (np.eye(3) + 0.4 * rng.uniform(-1, 1, size=(n, 3, 3)))
    return m


def test_orthonormalize_keeps_rotations_and_y_direction() -> None:
    rng = np.random.default_rng(1)
    r = _rot(rng, 50)
    assert np.allclose(orthonormalize_yz(r), r, atol=1e-12)
    a = _affine(rng, 50)
    o = orthonormalize_yz(a)
    assert np.allclose(np.swapaxes(o[:, :3, :3], 1, 2) @ o[:, :3, :3], np.eye(3), atol=1e-12)
    y = a[:, :3, 1] / np.linalg.norm(a[:, :3, 1], axis=1, keepdims=True)
    assert np.allclose(o[:, :3, 1], y, atol=1e-12)
    assert np.allclose(o[:, :3, 3], a[:, :3, 3])
    with pytest.raises(ValueError, match="Y axis"):
        orthonormalize_yz(np.zeros((3, 3)))


def test_inverses() -> None:
    rng = np.random.default_rng(2)
    a = _affine(rng, 20)
    assert np.allclose(a @ affine_inverse(a), np.eye(4), atol=1e-10)
    r = _rigid(rng, 20)
    assert np.allclose(r @ rigid_inverse(r), np.eye(4), atol=1e-12)
    t = translation(np.array([1.0, 2.0, 3.0]))
    assert np.allclose(t[:3, 3], (1, 2, 3)) and np.allclose(t[:3, :3], np.eye(3))


def test_goal_in_sheared_frame_is_exact() -> None:
    """The chain's end frame pushed through a sheared frame lands on the target: position
    exactly, Y-first orientation exactly."""
    rng = np.random.default_rng(3)
    frame = _affine(rng, 40)
    target = _affine(rng, 40)
    g = goal_in_frame(frame, target)
    end = frame @ g
    assert np.allclose(end[:, :3, 3], target[:, :3, 3], atol=1e-10)
    assert np.allclose(orthonormalize_yz(end[:, :3, :3]),
                       orthonormalize_yz(target[:, :3, :3]), atol=1e-10)
    # ... and stays exact under a positive diagonal scale of the end bone itself.
    s = np.diag([1.3, 0.7, 2.0])
    assert np.allclose(orthonormalize_yz(end[:, :3, :3] @ s),
                       orthonormalize_yz(target[:, :3, :3]), atol=1e-10)


def test_similarity_scale() -> None:
    rng = np.random.default_rng(4)
    r = _rot(rng, 10) * 1.7
    s, ok = similarity_scale(r)
    assert np.allclose(s, 1.7) and ok.all()
    s, ok = similarity_scale(r @ np.diag([1.0, 1.2, 1.0]))
    assert not ok.any()
    _, ok = similarity_scale(-np.eye(3))
    assert not ok


def test_goal_errors_of_one_frame_match_the_batched_path() -> None:
    """The single-frame path (Python floats) gives the batched path's errors, for every
    kind, on sheared and scaled frames; degenerate ones take the batched path."""
    rng = np.random.default_rng(21)
    e, t = _affine(rng, 40), _affine(rng, 40)
    for kind in ("POSITION", "POSE", "PARTIAL", "AIM"):
        axis = np.array([0.6, 0.0, 0.8])
        bp, bo = goal_errors(kind, axis, e, t)
        for i in range(len(e)):
            p, o = goal_errors(kind, axis, e[i], t[i])
            assert np.shape(p) == np.shape(o) == ()
            assert abs(float(p) - bp[i]) <= 1e-14 and abs(float(o) - bo[i]) <= 1e-14
    with pytest.raises(ValueError, match="degenerate"):
        goal_errors("POSE", axis, np.zeros((4, 4)), t[0])


def test_goal_errors_by_kind() -> None:
    t = np.eye(4)
    e = np.eye(4)
    e[:3, 3] = (0.3, 0.4, 0.0)
    e[:3, :3] = axis_angle_to_matrix((0.0, 0.0, 1.0), 0.25)
    pos, ori = goal_errors("POSE", (0, 1, 0), e, t)
    assert math.isclose(float(pos), 0.5) and math.isclose(float(ori), 0.25)
    pos, ori = goal_errors("POSITION", (0, 1, 0), e, t)
    assert math.isclose(float(pos), 0.5) and float(ori) == 0.0
    pos, ori = goal_errors("PARTIAL", (0, 0, 1), e, t)  # the Z axes still agree
    assert math.isclose(float(pos), 0.5) and abs(float(ori)) < 1e-12
    aim = np.eye(4)
    aim[:3, 3] = (0.0, -2.0, 0.0)
    pos, ori = goal_errors("AIM", (0, 1, 0), aim, t)  # +Y from (0,-2,0) hits the origin
    assert float(pos) == 0.0 and abs(float(ori)) < 1e-12
    with pytest.raises(ValueError, match="kind"):
        goal_errors("NOPE", (0, 1, 0), e, t)


def test_quaternion_keys_continue_from_previous_key() -> None:
    rng = np.random.default_rng(6)
    q = matrix_to_quat(_rot(rng, 1))[0]
    seq = np.array([q, -q, q, -q])
    out = continuous_quaternions(seq, previous=-q)
    assert np.allclose(out, -np.array([q, q, q, q]))
    out = continuous_quaternions(seq)
    assert np.allclose(out, np.array([q, q, q, q]))


def test_euler_keys_unwrap_from_previous_key() -> None:
    e = np.array([[0.1, 0.0, 3.1], [0.2, 0.0, -3.1]])
    out = continuous_eulers(e, previous=(2 * math.pi, 0.0, 3.0))
    assert np.allclose(out[0], (0.1 + 2 * math.pi, 0.0, 3.1))
    assert np.allclose(out[1, 2], 2 * math.pi - 3.1)
    r = euler_to_matrix(out, "XYZ")
    assert np.allclose(r, euler_to_matrix(e, "XYZ"))


def test_refine_goal_corrects_constant_offsets_in_one_step() -> None:
    rng = np.random.default_rng(7)
    target, left, right = _rigid(rng, 3)
    reached = left @ target  # asked `target`, got L·target
    g = refine_goal(target, reached, target)
    assert np.allclose(left @ g, target, atol=1e-10)
    reached = target @ right
    g = refine_goal(target, reached, target)
    assert np.allclose(g @ right, target, atol=1e-10)


def _basis(rng: np.random.Generator, scale: tuple[float, float, float]) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = _rot(rng) @ np.diag(scale)
    m[:3, 3] = rng.normal(size=3) * 0.1
    return m


def _pose_chain(rng: np.random.Generator, helper_scale: tuple[float, float, float]
                ) -> Callable[..., list[np.ndarray]]:
    """Pose matrices of (upper, lower, end) for their local matrices, composed like
    Blender's (parent · offset · basis) under a sheared parent, with a posed helper bone
    (scaled ``helper_scale``) between the lower and the end bone."""
    parent = _affine(rng, 1)[0]
    off_up, off_lo, off_h, off_en = _rigid(rng, 4)
    helper = _basis(rng, helper_scale)

    def chain(b_up: np.ndarray, b_lo: np.ndarray, b_en: np.ndarray) -> list[np.ndarray]:
        up = parent @ off_up @ b_up
        lo = up @ off_lo @ b_lo
        en = lo @ off_h @ helper @ off_en @ b_en
        return [up, lo, en]

    return chain


def _rotated(rng: np.random.Generator, bases: list[np.ndarray]) -> list[np.ndarray]:
    """The local matrices with other rotations, the same scales and locations."""
    new = []
    for bs in bases:
        m = bs.copy()
        m[:3, :3] = _rot(rng) @ np.diag(np.linalg.norm(bs[:3, :3], axis=0))
        new.append(m)
    return new


def test_limb_links_reproduce_the_pose_chain_with_helpers_and_scale() -> None:
    """A pose chain composed like Blender's (parent · offset · basis) with a scaled,
    sheared parent, a uniformly scaled upper bone and a posed helper between the lower and
    the end bone: frame · R1 · a · Rθ · b · R2 equals the end pose up to uniform scale,
    for other rotations too."""
    rng = np.random.default_rng(8)
    chain = _pose_chain(rng, (1.0, 1.0, 1.0))
    bases = [_basis(rng, (1.2, 1.2, 1.2)), _basis(rng, (0.9, 0.9, 0.9)), _basis(rng, (1, 2, 1))]
    pose = np.stack(chain(*bases))
    frame, a, b, ok = limb_links(pose, np.stack(bases))
    assert bool(ok)
    for _ in range(5):  # other rotations, same scales and locations
        new = _rotated(rng, bases)
        end = chain(*new)[2]
        rot = [np.eye(4) for _ in range(3)]
        for r, m in zip(rot, new, strict=True):
            r[:3, :3] = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0)
        model = frame @ rot[0] @ a @ rot[1] @ b @ rot[2]
        assert np.allclose(model[:3, 3], end[:3, 3], atol=1e-10)
        assert np.allclose(orthonormalize_yz(model[:3, :3]), orthonormalize_yz(end[:3, :3]),
                           atol=1e-10)
    stretched = [bases[0].copy(), bases[1], bases[2]]
    stretched[0][:3, :3] = stretched[0][:3, :3] @ np.diag([1.0, 1.3, 1.0])
    _, _, _, ok = limb_links(np.stack(chain(*stretched)), np.stack(stretched))
    assert not bool(ok)


def test_affine_links_reproduce_a_stretched_chain_exactly() -> None:
    """Blender's composition (parent · offset · basis) with a sheared parent, a stretched
    upper bone, a posed helper and a non-uniformly scaled end bone: chain_pose of the
    affine links is the end bone's pose (translation and the whole 3×3) for other local
    rotations, batched too; the rigid links of limb_links are not."""
    rng = np.random.default_rng(18)
    chain = _pose_chain(rng, (1.0, 0.8, 1.0))
    bases = [_basis(rng, (1.0, 1.3, 0.9)), _basis(rng, (1.1, 1.1, 1.1)), _basis(rng, (1, 2, 1))]
    frame, links = affine_links(np.stack(chain(*bases)), np.stack(bases))
    assert len(links) == 3
    news, ends = [], []
    for _ in range(6):  # other rotations, same scales and locations
        new = _rotated(rng, bases)
        news.append([m[:3, :3] / np.linalg.norm(m[:3, :3], axis=0) for m in new])
        ends.append(chain(*new)[2])
        got = chain_pose(frame, tuple(news[-1]), links)
        assert np.allclose(got, ends[-1], atol=1e-12)
    rots = tuple(np.stack([n[i] for n in news]) for i in range(3))
    assert np.allclose(chain_pose(frame, rots, links), np.stack(ends), atol=1e-12)
    _, a, b, ok = limb_links(np.stack(chain(*bases)), np.stack(bases))
    assert not bool(ok)
    rigid = chain_pose(frame, tuple(news[0]), (a, b, np.eye(4)))
    assert not np.allclose(rigid[:3, 3], ends[0][:3, 3], atol=1e-6)


def test_single_matrix_fast_paths_match_the_batched_ones() -> None:
    rng = np.random.default_rng(9)
    a = _affine(rng, 6)
    a[3, :3, :3] = _rot(rng) * 1.3  # a similarity
    a[4, :3, :3] = -_rot(rng)  # a reflection
    batched = orthonormalize_yz(a)
    inv = affine_inverse(a)
    scale, ok = similarity_scale(a)
    for i in range(len(a)):
        assert np.allclose(orthonormalize_yz(a[i]), batched[i], atol=1e-12)
        assert np.allclose(orthonormalize_yz(a[i:i + 1])[0], batched[i], atol=1e-12)
        assert np.array_equal(affine_inverse(a[i]), inv[i])  # the same arithmetic
        s1, ok1 = similarity_scale(a[i:i + 1])
        assert np.allclose(s1, scale[i]) and bool(ok1[0]) == bool(ok[i])
    assert ok.tolist() == [False, False, False, True, False, False]
    for i in range(len(a)):  # (1, 4, 4) keeps its batch axis; the last row is exact
        one = affine_inverse(a[i:i + 1])
        assert one.shape == (1, 4, 4) and one[0, 3].tolist() == [0.0, 0.0, 0.0, 1.0]
        t = orthonormalize_yz(_rigid(rng, 1)[0])
        assert np.array_equal(goal_in_frame(a[i], t, inverse=affine_inverse(a[i])),
                              goal_in_frame(a[i], t))
    singular = np.eye(4)
    singular[:3, 2] = singular[:3, 0]
    with pytest.raises(np.linalg.LinAlgError):
        affine_inverse(singular)
    with pytest.raises(np.linalg.LinAlgError):
        affine_inverse(np.full((4, 4), np.nan))


def test_goal_offset_round_trips() -> None:
    rng = np.random.default_rng(10)
    g, t = _rigid(rng, 2)
    d = goal_offset(g, t)
    assert np.allclose(apply_goal_offset(d, t), g, atol=1e-12)
    assert np.allclose(apply_goal_offset(goal_offset(t, t), t), t, atol=1e-12)


def test_extrapolate_offset_is_exact_for_polynomial_translations() -> None:
    def off(t: float) -> np.ndarray:
        m = np.eye(4)
        m[:3, 3] = (1.0 + 2.0 * t + 0.5 * t * t, -t, 3.0)
        m[:3, :3] = axis_angle_to_matrix((0.0, 0.0, 1.0), 0.1 * t)
        return m

    got = extrapolate_offset(off(0.0), off(1.0), off(2.0))
    assert np.allclose(got, off(3.0), atol=1e-12)
    lin = extrapolate_offset(off(1.0), off(2.0))
    assert np.allclose(lin[:3, :3], off(3.0)[:3, :3], atol=1e-12)
    assert np.allclose(extrapolate_offset(off(1.0)), off(1.0))
    with pytest.raises(ValueError):
        extrapolate_offset()


def test_extrapolate_offset_is_exact_for_quadratic_turns_about_a_fixed_axis() -> None:
    """Three offsets whose rotation turns about one axis by an angle quadratic in time
    (any fixed tilt on the right) extrapolate exactly; a fourth, older one is ignored."""
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    tilt = rotation_about((1.0, 0.0, 0.0), 0.4)

    def off(t: float) -> np.ndarray:
        m = np.eye(4)
        m[:3, :3] = rotation_about(axis, 0.02 + 0.01 * t + 0.003 * t * t) @ tilt
        m[:3, 3] = (t * t, 1.0, -t)
        return m

    got = extrapolate_offset(off(-5.0), off(0.0), off(1.0), off(2.0))
    assert np.allclose(got, off(3.0), atol=1e-12)


def test_transform_points_and_compose_trs() -> None:
    rng = np.random.default_rng(11)
    r = _rot(rng, 3)
    loc = rng.normal(size=(3, 3))
    scale = rng.uniform(0.5, 2.0, size=(3, 3))
    m = compose_trs(loc, r, scale)
    p = rng.normal(size=(3, 3))
    want = np.einsum("nij,nj->ni", r, p * scale) + loc
    assert np.allclose(transform_points(m, p), want, atol=1e-12)


def test_bend_axis_of_a_bent_and_a_straight_chain() -> None:
    up = np.eye(3)
    lo = axis_angle_to_matrix((1.0, 0.0, 0.0), 0.5)  # the lower bone's Y tilted toward +Z
    k = bend_axis(up, lo)
    assert k is not None and np.allclose(k, (1.0, 0.0, 0.0))
    assert bend_axis(up, up) is None


def test_nearest_eulers_follows_the_previous_pick_within_the_allowed() -> None:
    fam = np.array([[[0.1, 0.0, 0.0], [3.0, 3.1, 3.1]],
                    [[3.1, 3.1, 3.1], [0.2, 0.0, 0.0]],
                    [[0.3, 0.0, 0.0], [3.0, 3.0, 3.0]]])
    out = nearest_eulers(fam, (0.0, 0.0, 0.0))
    assert np.allclose(out[:, 0], (0.1, 0.2, 0.3))
    allowed = np.array([[False, True], [True, True], [False, False]])
    out = nearest_eulers(fam, (0.0, 0.0, 0.0), allowed)
    assert np.allclose(out[0], (3.0, 3.1, 3.1)) and np.allclose(out[1], (3.1, 3.1, 3.1))
    assert np.allclose(out[2], (3.0, 3.0, 3.0))  # none allowed: the nearest of both
