"""Test skeletons from the papers, with suggested goals.

Each builder returns a :class:`Fixture`: the :class:`~core.skeleton.Skeleton`, suggested
goals and a start configuration ``q0``.

* :func:`buss_y`, :func:`buss_double_y` — Buss (2009) §8, Fig. 1, "the Y and double-Y
  shapes" (7 links / 2 effectors; 16 links / 4 effectors). The paper gives no
  dimensions; we use the geometry of Buss & Kim's published demo program (the
  ``BuildTreeYShape`` / ``BuildTreeDoubleYShape`` routines of their IK source code): rest
  positions and rotation axes of every joint in world coordinates, all rest rotations the
  identity, and their sinusoidal target motions (``UpdateTargets``). The Y has 7 hinges
  (Jacobian 6×7, as in the paper's timing table). The demo's double-Y has 16 links but
  25 hinges (several links carry two or three hinges at one point), so its Jacobian is
  12×25; the paper's table quotes 12×16 for an older one-hinge-per-link version.
* :func:`soch_chain`, :func:`soch_ellipse_targets` — Šoch & Lórencz (2005) §4: a planar
  chain of 6 segments 90, 60, 90, 150, 150, 90 (the paper's unit, "points"; numbers kept
  as given — scale by 1e-3 for metres if you like), hinges about z, q = 0 stretched along
  +x from [−230, 0] so the tip starts at [400, 0] on the ellipse a = 400, b = 50 centred
  at the origin.
* :func:`ki_sheen_chain` — Ki & Sheen, *Pseudo-inverse control of articulated figures*,
  Examples 5.7, 6.20 and 6.21: planar chains with 2, 3 or 4 end effectors, unit-length
  links (the paper's figures give no lengths).
* :func:`human_arm` — a 7-DOF arm: Ball shoulder, Hinge elbow, Ball wrist; upper arm
  0.30 m, forearm 0.25 m, hand 0.08 m (like :mod:`core.limb`'s README arm).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InvalidInputError
from .goals import Goal, PoseGoal, PositionGoal
from .rotations import axis_angle_to_matrix
from .skeleton import Ball, Fixed, Hinge, Joint, Skeleton

FloatArray = NDArray[np.float64]

__all__ = [
    "Fixture",
    "buss_y",
    "buss_y_targets",
    "buss_double_y",
    "buss_double_y_targets",
    "soch_chain",
    "soch_ellipse_targets",
    "ki_sheen_chain",
    "human_arm",
    "translation",
    "serial_chain",
    "random_tree",
    "reachable_problems",
]


@dataclass(frozen=True, eq=False)
class Fixture:
    """A test problem: ``skeleton``, suggested ``goals`` (world frame) and start ``q0``."""

    skeleton: Skeleton
    goals: tuple[Goal, ...]
    q0: FloatArray
    note: str = ""


def translation(t: ArrayLike, rotation: ArrayLike | None = None) -> FloatArray:
    """4×4 transform with translation ``t`` (and 3×3 ``rotation``, default identity)."""
    m = np.eye(4)
    m[:3, 3] = np.asarray(t, dtype=np.float64)
    if rotation is not None:
        m[:3, :3] = np.asarray(rotation, dtype=np.float64)
    return m


def _from_world(
    spec: Sequence[tuple[str, int, tuple[float, float, float], ArrayLike | None]],
) -> Skeleton:
    """Joints from (name, parent index, world rest position, hinge axis or None = Fixed)
    with identity rest rotations (Buss & Kim's node description)."""
    joints: list[Joint] = []
    for name, parent, pos, axis in spec:
        base = np.zeros(3) if parent < 0 else np.asarray(spec[parent][2], dtype=np.float64)
        dofs = Fixed() if axis is None else Hinge(axis)
        joints.append(Joint(name, parent, translation(np.asarray(pos) - base), dofs))
    return Skeleton(joints)


_UNIT1 = (math.sqrt(14.0) / 8.0, 1.0 / 8.0, 7.0 / 8.0)
_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)


def buss_y_targets(t: ArrayLike = 0.0) -> FloatArray:
    """Buss & Kim's moving targets of the Y at time(s) ``t``: (2, 3) or (T, 2, 3);
    row 0 for ``effector_right``, row 1 for ``effector_left``. They move in and out of
    reach."""
    tt = np.asarray(t, dtype=np.float64)
    s = np.sin
    out: FloatArray = np.stack(
        [
            np.stack([2.0 + 1.5 * s(6 * tt), 1.2 + 0.2 * s(7 * tt), 0.3 + 0.2 * s(8 * tt)], -1),
            np.stack([-0.7 + 0.4 * s(4 * tt), 0.8 + 0.3 * s(4 * tt), -0.2 + 0.2 * s(3 * tt)], -1),
        ],
        axis=-2,
    )
    return out


def buss_y(t: ArrayLike = 0.0) -> Fixture:
    """Buss's Y: 7 hinges, effectors ``effector_right`` / ``effector_left``; goals are
    :func:`buss_y_targets` at ``t`` (batched if ``t`` is an array)."""
    sk = _from_world(
        [
            ("j0", -1, (0.0, -0.5, 0.0), _Z),
            ("j1", 0, (0.0, 0.4, 0.0), _Z),
            ("j2", 0, (0.0, 0.4, 0.0), _Z),
            ("j3", 1, (0.5, 1.0, 0.0), _X),
            ("j4", 2, (-0.5, 1.0, 0.0), _X),
            ("j5", 3, (0.7, 1.3, 0.0), _UNIT1),
            ("j6", 4, (-0.8, 1.5, 0.0), _UNIT1),
            ("effector_right", 5, (0.7, 2.0, 0.0), None),
            ("effector_left", 6, (-0.8, 1.9, 0.0), None),
        ]
    )
    tg = buss_y_targets(t)
    goals = (
        PositionGoal(tg[..., 0, :], joint="effector_right"),
        PositionGoal(tg[..., 1, :], joint="effector_left"),
    )
    return Fixture(sk, goals, sk.zero(), "Buss (2009) Fig. 1 Y; geometry of Buss & Kim's demo")


def buss_double_y_targets(t: ArrayLike = 0.0) -> FloatArray:
    """Buss & Kim's moving targets of the double-Y at time(s) ``t``: (4, 3) or (T, 4, 3),
    one row per effector ``e0``..``e3``."""
    tt = np.asarray(t, dtype=np.float64)
    s = np.sin
    rows = [
        (2.0 + 3.0 * s(3 * tt), 0.5 + 0.4 * s(7 * tt), 0.3 + 1.4 * s(5 * tt)),
        (0.5 + 0.8 * s(4 * tt), 0.4 + 0.6 * s(4 * tt), -0.2 + 2.0 * s(3 * tt)),
        (-0.5 + 1.6 * s(6 * tt), 0.6 + 0.4 * s(7 * tt), 0.3 + 1.0 * s(8 * tt)),
        (-1.6 + 1.6 * s(4 * tt), 0.3 + 0.6 * s(4 * tt), -0.2 + 0.6 * s(3 * tt)),
    ]
    out: FloatArray = np.stack([np.stack(np.broadcast_arrays(*r), -1) for r in rows], axis=-2)
    return out


def buss_double_y(t: ArrayLike = 0.0) -> Fixture:
    """Buss's double-Y: 16 links, 25 hinges, effectors ``e0``..``e3``; goals are
    :func:`buss_double_y_targets` at ``t``."""
    r2, h3 = 1.0 / math.sqrt(2.0), math.sqrt(3.0) / 2.0
    bx, by = 0.5 * r2, -0.5 + 0.5 * r2
    p0, p1, p2 = (0.0, -1.5, 0.0), (0.0, -1.0, 0.0), (0.0, -0.5, 0.0)
    p3 = (bx, by, 0.0)
    p4, p5, p6 = ((bx + k * h3, by + k * 0.5, 0.0) for k in (0.5, 1.0, 1.5))
    p7, p8, p9 = ((bx + k * h3, by + k * h3, 0.0) for k in (0.5, 1.0, 1.5))
    p10 = (-bx, by, 0.0)
    p11, p12, p13 = ((-bx - k * h3, by + k * h3, 0.0) for k in (0.5, 1.0, 1.5))
    p14, p15, p16 = ((-bx - k * h3, by + k * 0.5, 0.0) for k in (0.5, 1.0, 1.5))
    # (name, parent, position, axis) in Buss & Kim's node order; siblings share a parent.
    nodes: list[tuple[str, str | None, tuple[float, float, float], ArrayLike | None]] = [
        ("j0", None, p0, _UNIT1),
        ("j1", "j0", p1, _X),
        ("j2", "j1", p1, _Z),
        ("j3", "j2", p2, _Z),
        ("j4", "j2", p2, _Z),
        ("j5", "j3", p3, _Y),
        ("j6", "j3", p3, _Y),
        ("j7", "j5", p3, _X),
        ("j8", "j7", p4, _Z),
        ("j9", "j8", p5, _X),
        ("j10", "j9", p5, _Y),
        ("e0", "j10", p6, None),
        ("j12", "j6", p3, _X),
        ("j13", "j12", p7, _Z),
        ("j14", "j13", p8, _X),
        ("j15", "j14", p8, _Y),
        ("e1", "j15", p9, None),
        ("j17", "j4", p10, _Y),
        ("j18", "j17", p10, _X),
        ("j19", "j4", p10, _Y),
        ("j20", "j18", p11, _Z),
        ("j21", "j20", p12, _X),
        ("j22", "j21", p12, _Y),
        ("e2", "j22", p13, None),
        ("j24", "j19", p10, _X),
        ("j25", "j24", p14, _Z),
        ("j26", "j25", p15, _X),
        ("j27", "j26", p15, _Y),
        ("e3", "j27", p16, None),
    ]
    names = [n[0] for n in nodes]
    sk = _from_world(
        [(n, -1 if par is None else names.index(par), pos, ax) for n, par, pos, ax in nodes]
    )
    tg = buss_double_y_targets(t)
    goals = tuple(PositionGoal(tg[..., i, :], joint=f"e{i}") for i in range(4))
    return Fixture(sk, goals, sk.zero(), "Buss (2009) Fig. 1 double-Y; Buss & Kim's demo")


SOCH_SEGMENTS = (90.0, 60.0, 90.0, 150.0, 150.0, 90.0)


def soch_ellipse_targets(n: int, a: float = 400.0, b: float = 50.0) -> FloatArray:
    """(n, 3) points (a cos t, b sin t, 0), t = 2πk/n, k = 0..n−1: Šoch & Lórencz's
    ellipse, starting at [a, 0] (the chain's q = 0 tip) and running counter-clockwise.

    Raises InvalidInputError for n < 1."""
    if not isinstance(n, int | np.integer) or isinstance(n, bool) or n < 1:
        raise InvalidInputError(f"n must be an int >= 1, got {n!r}")
    t = 2.0 * math.pi * np.arange(n) / n
    return np.stack([a * np.cos(t), b * np.sin(t), np.zeros(n)], axis=-1)


def soch_chain(target: ArrayLike | None = None) -> Fixture:
    """Šoch & Lórencz's planar 6-segment chain (units "points"); joints ``j0``..``j5``
    (Hinge z), tip ``tip``. Goal: ``target`` (default the ellipse's second of 64 points)."""
    joints = [Joint("j0", -1, translation((-230.0, 0.0, 0.0)), Hinge(_Z))]
    for i, seg in enumerate(SOCH_SEGMENTS[:-1]):
        joints.append(Joint(f"j{i + 1}", i, translation((seg, 0.0, 0.0)), Hinge(_Z)))
    joints.append(Joint("tip", 5, translation((SOCH_SEGMENTS[-1], 0.0, 0.0))))
    sk = Skeleton(joints)
    tgt = soch_ellipse_targets(64)[1] if target is None else np.asarray(target, dtype=float)
    goals = (PositionGoal(tgt, joint="tip"),)
    return Fixture(sk, goals, sk.zero(), "Šoch & Lórencz (2005) §4 planar chain")


def ki_sheen_chain(n_effectors: int = 2) -> Fixture:
    """Ki & Sheen's planar multi-effector chains (Examples 5.7, 6.20, 6.21).

    Main chain: hinges ``h1``..``h6`` (about z) with unit links along +x at rest, tip
    ``tip2`` (effector 2). Branch 1 (``h7``..``h9``, tip ``tip1``) starts at the end of
    link 3 and branch 2 (``h10``, ``h11``, tip ``tip3``, for 3 or 4 effectors) at the end of
    link 1, matching the paper's w₆₊ᵢ = Σ_{j≤3} hⱼ + … and w₉₊ᵢ = h₁ + …. Our choice (the
    paper's figure has no numbers): branch 1 rests at +90°, branch 2 at −120°.
    Effector 4 (4 effectors) is the end of link 2, the origin of ``h3``.

    Goals (Example 6.20 displacements): tip1 + (0, −1), tip2 + (−1, −1), tip3 + (1, −1);
    effector 4: + (0, −1) (Example 6.21). For 2 effectors (Example 5.7, no numbers given)
    the first two. The paper lists "P5" for effector 2; its formula puts it at the end of
    link 6, which we follow.

    With unit links a straight start cannot reach the paper's displacements (the end of
    link 2 cannot move to (2, −1) from (2, 0)), so the start ``q0`` is a zig-zag
    (h1..h6 = ±0.3 rad alternating, branches 0) and the displacements are halved; the
    goals are ``FK(q0) + ½ · displacement``, all reachable together.

    Raises InvalidInputError unless n_effectors is 2, 3 or 4.
    """
    if n_effectors not in (2, 3, 4):
        raise InvalidInputError(f"n_effectors must be 2, 3 or 4, got {n_effectors!r}")
    one = translation((1.0, 0.0, 0.0))
    joints = [Joint("h1", -1, np.eye(4), Hinge(_Z))]
    for i in range(2, 7):
        joints.append(Joint(f"h{i}", i - 2, one, Hinge(_Z)))
    joints.append(Joint("tip2", 5, one))  # index 6
    up = translation((1.0, 0.0, 0.0), axis_angle_to_matrix(_Z, math.pi / 2))
    joints.append(Joint("h7", 2, up, Hinge(_Z)))  # end of link 3, parent h3 (index 2)
    joints.append(Joint("h8", 7, one, Hinge(_Z)))
    joints.append(Joint("h9", 8, one, Hinge(_Z)))
    joints.append(Joint("tip1", 9, one))
    if n_effectors >= 3:
        down = translation((1.0, 0.0, 0.0), axis_angle_to_matrix(_Z, -2 * math.pi / 3))
        joints.append(Joint("h10", 0, down, Hinge(_Z)))  # end of link 1, parent h1
        joints.append(Joint("h11", 11, one, Hinge(_Z)))
        joints.append(Joint("tip3", 12, one))
    sk = Skeleton(joints)
    q0 = np.zeros(sk.n_dofs)
    q0[:6] = 0.3 * np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    frames = sk.forward(q0)
    moves = [
        ("tip1", (0.0, -1.0)),
        ("tip2", (-1.0, -1.0)),
        ("tip3", (1.0, -1.0)),
        ("h3", (0.0, -1.0)),
    ][:n_effectors]
    goals = tuple(
        PositionGoal(frames[sk.joint_index(name), :3, 3] + (dx / 2, dy / 2, 0.0), joint=name)
        for name, (dx, dy) in moves
    )
    return Fixture(sk, goals, q0, f"Ki & Sheen planar chain, {n_effectors} effectors")


ARM_LENGTHS = (0.30, 0.25, 0.08)


def human_arm(limits: bool = False) -> Fixture:
    """7-DOF arm: ``shoulder`` Ball('XYZ') at the origin, ``elbow`` Hinge about x at
    (0, 0.30, 0), ``wrist`` Ball('XYZ') 0.25 m further along +y, ``hand`` (Fixed) 0.08 m
    beyond. ``limits``: the README limb limits (shoulder (−90, −60, −90)…(160, 60, 90)°,
    elbow 0…150°, wrist (−70, −30, −80)…(70, 30, 80)°). Goal: a reachable hand pose."""
    r = np.radians
    sh = Ball("XYZ", r((-90, -60, -90)), r((160, 60, 90))) if limits else Ball("XYZ")
    el = Hinge(_X, float(r(0.0)), float(r(150.0))) if limits else Hinge(_X)
    wr = Ball("XYZ", r((-70, -30, -80)), r((70, 30, 80))) if limits else Ball("XYZ")
    up, fore, hand = ARM_LENGTHS
    sk = Skeleton(
        [
            Joint("shoulder", -1, np.eye(4), sh),
            Joint("elbow", 0, translation((0.0, up, 0.0)), el),
            Joint("wrist", 1, translation((0.0, fore, 0.0)), wr),
            Joint("hand", 2, translation((0.0, hand, 0.0))),
        ]
    )
    q_goal = np.array([0.4, -0.3, 0.5, 1.1, 0.2, 0.1, -0.3])
    g = sk.forward(q_goal)[3]
    goals = (PoseGoal(g[:3, 3], g[:3, :3], joint="hand"),)
    q0 = np.array([0.1, 0.1, 0.1, 0.3, 0.0, 0.0, 0.0])
    return Fixture(sk, goals, q0, "7-DOF human arm (Ball–Hinge–Ball)")


def serial_chain(n_joints: int = 12, link: float = 0.25) -> Fixture:
    """A serial chain of ``n_joints`` hinges ``j0``..``j{n−1}`` along +y, ``link`` m apart,
    axes cycling z, x, y (a 3-D chain, no two neighbours parallel), tip ``tip`` one link
    beyond the last hinge (issue 16's 12-joint chain). Goal: the tip at q = 0.5 rad each.

    Raises InvalidInputError for n_joints < 1."""
    if not isinstance(n_joints, int | np.integer) or isinstance(n_joints, bool) or n_joints < 1:
        raise InvalidInputError(f"n_joints must be an int >= 1, got {n_joints!r}")
    axes = (_Z, _X, _Y)
    joints = [Joint("j0", -1, np.eye(4), Hinge(_Z))]
    for i in range(1, int(n_joints)):
        joints.append(Joint(f"j{i}", i - 1, translation((0.0, link, 0.0)), Hinge(axes[i % 3])))
    joints.append(Joint("tip", int(n_joints) - 1, translation((0.0, link, 0.0))))
    sk = Skeleton(joints)
    tip = sk.forward(np.full(sk.n_dofs, 0.5))[-1, :3, 3]
    return Fixture(sk, (PositionGoal(tip, joint="tip"),), sk.zero(), f"{n_joints}-hinge chain")


def random_tree(seed: int, max_joints: int = 12) -> Fixture:
    """A random tree of 3..``max_joints`` DOF joints (Hinge about a random axis, or a Ball
    in a random order with probability 1/4), each a random 0.15–0.5 m offset from a
    random earlier joint, and a Fixed end point on every leaf (names ``j<k>``, ``end<k>``).
    Goals: each end point at FK of a random q (at most 3 of them). Deterministic in
    ``seed``."""
    rng = np.random.default_rng(seed)
    count = int(rng.integers(3, max(3, int(max_joints)) + 1))
    joints = [Joint("j0", -1, np.eye(4), Hinge(rng.normal(size=3)))]
    for k in range(1, count):
        parent = int(rng.integers(max(0, k - 3), k))
        d = rng.normal(size=3)
        off = translation(d / np.linalg.norm(d) * rng.uniform(0.15, 0.5))
        dofs: Hinge | Ball = Hinge(rng.normal(size=3))
        if rng.uniform() < 0.25:
            dofs = Ball(str(rng.choice(["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"])))
        joints.append(Joint(f"j{k}", parent, off, dofs))
    leaves = [k for k in range(count) if all(j.parent != k for j in joints)]
    for k in leaves[:3]:
        d = rng.normal(size=3)
        joints.append(Joint(f"end{k}", k, translation(d / np.linalg.norm(d) * 0.2)))
    sk = Skeleton(joints)
    frames = sk.forward(rng.uniform(-1.0, 1.0, sk.n_dofs))
    goals = tuple(
        PositionGoal(frames[i, :3, 3], joint=sk.names[i])
        for i in range(sk.n_joints)
        if sk.names[i].startswith("end")
    )
    return Fixture(sk, goals, sk.zero(), f"random tree (seed {seed}, {count} joints)")


def reachable_problems(
    fx: Fixture, n: int, seed: int = 0, sigma: float = 0.3, pose: bool = False
) -> tuple[list[Goal], FloatArray, FloatArray]:
    """``n`` random reachable problems on the fixture's skeleton (issue 16's success-rate
    protocol): answers q* ~ U(−1, 1) per DOF, goals = FK(q*) at the joints of the
    fixture's goals (PositionGoal, or PoseGoal with ``pose``), starts q0 = q* + N(0, σ²).
    Returns batched goals (N leading axis), q0 (n, n_dofs) and q* (n, n_dofs)."""
    sk = fx.skeleton
    rng = np.random.default_rng(seed)
    qs = rng.uniform(-1.0, 1.0, size=(n, sk.n_dofs))
    q0 = qs + rng.normal(0.0, sigma, size=qs.shape)
    frames = sk.forward(qs)
    goals: list[Goal] = []
    for g in fx.goals:
        j = sk.joint_index(g.joint)  # type: ignore[arg-type]
        if pose:
            goals.append(PoseGoal(frames[:, j, :3, 3], frames[:, j, :3, :3], joint=g.joint))
        else:
            goals.append(PositionGoal(frames[:, j, :3, 3], joint=g.joint))
    return goals, q0, qs
