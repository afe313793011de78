"""Full-body IK (core.body): solving again from the answer, at the same goals, gives the
answer (live solving runs again on every scene change: a pose that moves on each solve
creeps while nothing changes). Beyond reach, as the add-on sets it up: the feet pinned at
priority 0, the hands at 1 (the left one's target 1.3 arm lengths from its shoulder), the
head's aim at 2, the pelvis pinned at 3 (in conflict), each solve's preferred swivels
those of its start (``core.pose_swivel``, as the add-on passes them)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from core import (
    Body,
    BodySettings,
    Free,
    Goal,
    PoseGoal,
    Skeleton,
    pose_swivel,
    solve_body,
)
from core.body.solve import _clearly_better
from core.geometry.rotations import euler_to_matrix
from tests.fixtures.humanoid import LIMBS, end_goals, humanoid_skeleton, random_poses

#: Arm length of the humanoid (m): upper arm + forearm.
ARM = 0.53


def _body(scale: float) -> Body:
    """The humanoid with every length × ``scale`` (``scale`` 100: centimetres, as a Mixamo
    rig comes into Blender under a 0.01 object scale)."""
    joints = []
    for j in humanoid_skeleton().joints:
        offset = np.array(j.offset, dtype=np.float64)
        offset[:3, 3] *= scale
        dofs = j.dofs
        if isinstance(dofs, Free):
            dofs = dataclasses.replace(
                dofs,
                translation_lower=tuple(np.asarray(dofs.translation_lower) * scale),
                translation_upper=tuple(np.asarray(dofs.translation_upper) * scale),
            )
        joints.append(dataclasses.replace(j, offset=offset, dofs=dofs))
    return Body(Skeleton(joints), LIMBS)


def _swivels(body: Body, q: np.ndarray) -> dict[str, float]:
    """Each limb's swivel in the pose ``q`` (the add-on's preferred swivels)."""
    sk = body.skeleton
    out: dict[str, float] = {}
    for bl, model, (u, lo, _) in zip(body.limbs, body.models, body.joints, strict=True):
        phi = pose_swivel(
            model, euler_to_matrix(q[sk.dof_slices[u]], "XYZ"), float(q[sk.dof_slices[lo]][0])
        )
        if phi is not None:
            out[bl.name] = phi
    return out


def _beyond_reach(
    body: Body,
    q: np.ndarray,
    scale: float,
    reach: float = 1.3,
    aside: np.ndarray | None = None,
) -> list[Goal]:
    """Every end pinned where ``q`` has it, the left hand's target moved out along its
    shoulder–hand line (turned toward it + ``aside``, if given) to ``reach`` arm lengths,
    the pelvis pinned at the lowest priority."""
    sk = body.skeleton
    prio = {"foot_l": 0, "foot_r": 0, "hand_l": 1, "hand_r": 1, "head": 2}
    rot, org, _, _ = sk.kinematics(q[None])
    shoulder, hand = org[0, sk.joint_index("upperarm_l")], org[0, sk.joint_index("hand_l")]
    line = (hand - shoulder) / np.linalg.norm(hand - shoulder)
    if aside is not None:
        line = (line + aside) / np.linalg.norm(line + aside)
    target = shoulder + line * reach * ARM * scale
    goals: list[Goal] = []
    for g in end_goals(body, q):
        g = dataclasses.replace(g, priority=prio[g.joint])
        goals.append(dataclasses.replace(g, position=target) if g.joint == "hand_l" else g)
    p = sk.joint_index("pelvis")
    return [*goals, PoseGoal(org[0, p], rot[0, p], joint="pelvis", priority=3)]


def _moved(body: Body, a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The largest change of any joint's origin and of its frame's rotation (rad)."""
    ra, oa, _, _ = body.skeleton.kinematics(a[None])
    rb, ob, _, _ = body.skeleton.kinematics(b[None])
    cos = (np.trace(np.swapaxes(ra, -1, -2) @ rb, axis1=-2, axis2=-1) - 1.0) / 2.0
    angle = np.arccos(np.clip(cos, -1.0, 1.0))
    return float(np.linalg.norm(oa - ob, axis=-1).max()), float(angle.max())


def _start(body: Body, draw: int) -> np.ndarray:
    """The rest (T-) pose (``draw`` < 0) or the ``draw``-th random stance of seed 1."""
    sk = body.skeleton
    if draw < 0:
        return np.zeros(sk.n_dofs)
    rng = np.random.default_rng(1)
    for _ in range(draw + 1):
        q = random_poses(body, 1, rng, root=0.2)[0]
    q[sk.dof_slices[0]][:3] = 0.0
    return q


@pytest.mark.parametrize(
    ("scale", "draw"),
    [
        # centimetres from the T-pose: the finish minimised the met feet level again,
        # SLSQP wandered within it and the levels below followed (a straight limb turned
        # 0.13 rad about itself)
        (100.0, -1),
        # metres from a random stance (the pelvis moved 0.9 mm)
        (1.0, 2),
    ],
)
def test_solving_again_from_the_answer_moves_nothing(scale: float, draw: int) -> None:
    body = _body(scale)
    q0 = _start(body, draw)
    goals = _beyond_reach(body, q0, scale)
    first = solve_body(body, goals, q0, BodySettings(tolerance=1e-7, swivel=_swivels(body, q0)))
    assert not first.reached.all()  # beyond reach: the pelvis yields
    again = solve_body(
        body, goals, first.q, BodySettings(tolerance=1e-7, swivel=_swivels(body, first.q))
    )
    pos, rot = _moved(body, first.q, again.q)
    assert pos <= 1e-9 * scale and rot <= 1e-6, (pos, rot)
    np.testing.assert_allclose(again.level_error, first.level_error, rtol=1e-9, atol=1e-9)


TOL = 1e-6
errors = arrays(
    np.float64,
    st.tuples(st.integers(1, 4), st.integers(1, 4)),
    elements=st.sampled_from([0.0, 1e-9, 1e-6, 2e-6, 1e-3, 0.1, 0.1000001, 1.0]),
)


@given(errors, errors)
def test_the_start_is_left_only_for_a_clearly_better_level(
    new: np.ndarray, old: np.ndarray
) -> None:
    """The keep-start comparison (``_clearly_better``): never between equal errors, never
    both ways, met-by-both levels equal, and a level above decides before any below."""
    old = np.resize(old, new.shape)
    assert not _clearly_better(new, new, TOL).any()
    assert not (_clearly_better(new, old, TOL) & _clearly_better(old, new, TOL)).any()
    both_met = np.all((new <= TOL) & (old <= TOL), axis=1)
    assert not _clearly_better(new, old, TOL)[both_met].any()
    # a clearly lower first level wins whatever the levels below say
    first = old.copy()
    first[:, 0] = 0.5
    lower = first.copy()
    lower[:, 0] = 0.4
    lower[:, 1:] = 10.0
    assert _clearly_better(lower, first, TOL).all()
    assert not _clearly_better(first, lower, TOL).any()
