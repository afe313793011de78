"""A human-proportioned right arm for the demo, the benchmarks and the smoke tests.

Not part of the extension (``tools/`` is excluded from the build). Import it as
``tools.sample_arm`` with the repository root on ``sys.path``.

Frames (Blender bone convention: every bone points along its local +Y):

* The *shoulder frame* is the upper-arm bone's rest frame; the solver's goals live in it.
  R1 = identity is the rest pose, a T-pose with the palm facing forward. For a right arm
  its axes are, in body terms::

      +X = up          +Y = lateral (away from the body, to the character's right)
      +Z = forward     (so medial = -Y, down = -X, backward = -Z)

  :data:`BODY_FROM_SHOULDER` maps shoulder-frame vectors to body coordinates
  (x = right, y = forward, z = up) for plotting.
* Upper arm 0.30 m along +Y (``A``); the elbow hinges about the elbow frame's local X,
  positive θ4 flexing the forearm forward (toward +Z).
* Forearm 0.25 m with a 10° *carrying angle*: the forearm bone (``B``) is rotated −10°
  about Z, so in the T-pose the straight arm's forearm leans 10° upward (in anatomical
  position: away from the body). The hinge axis is then not perpendicular to the forearm
  (the paper's general case, §3.2.1), and the zero pose is slightly bent.
* Hand 0.08 m along the wrist frame's +Y (``effector``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from core import EulerLimits, Limb, LimbLimits, PoseGoal, PositionGoal, euler_to_matrix

FloatArray = NDArray[np.float64]

UPPER_ARM = 0.30
FOREARM = 0.25
HAND = 0.08
CARRYING_ANGLE_DEG = 10.0

#: Rows map shoulder-frame vectors (up, lateral, forward) to body (right, forward, up).
BODY_FROM_SHOULDER: FloatArray = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])

#: Joint limits in degrees: (lower, upper) per Euler component (x, y, z), order 'XYZ'.
SHOULDER_LIMITS_DEG: dict[str, tuple[float, float]] = {
    # about up: horizontal flexion (+, arm swings forward/across) / extension (-, backward)
    "x": (-40.0, 130.0),
    # about the humerus: external (+) / internal (-) rotation
    "y": (-70.0, 90.0),
    # about forward: adduction (+, arm down to the side at +90) / abduction (-, overhead)
    "z": (-80.0, 95.0),
}
#: Elbow flexion (θ4 about local X); 0 = straight, positive bends the forearm forward.
ELBOW_LIMITS_DEG: tuple[float, float] = (0.0, 150.0)
WRIST_LIMITS_DEG: dict[str, tuple[float, float]] = {
    # about the palm normal's perpendicular (up at rest): flexion (+) / extension (-)
    "x": (-70.0, 80.0),
    # about the forearm: pronation / supination (lumped into the spherical wrist)
    "y": (-80.0, 80.0),
    # about forward: radial (-) / ulnar (+) deviation
    "z": (-30.0, 20.0),
}


def _rot_z(deg: float) -> FloatArray:
    t = math.radians(deg)
    c, s = math.cos(t), math.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _transform(rotation: FloatArray, translation: tuple[float, float, float]) -> FloatArray:
    m = np.eye(4)
    m[:3, :3] = rotation
    m[:3, 3] = translation
    return m


def _euler_limits(deg: dict[str, tuple[float, float]]) -> EulerLimits:
    lower = tuple(math.radians(deg[k][0]) for k in "xyz")
    upper = tuple(math.radians(deg[k][1]) for k in "xyz")
    return EulerLimits("XYZ", lower, upper)


def arm_limits() -> LimbLimits:
    """The human-plausible joint limits (radians) of :func:`human_arm`."""
    return LimbLimits(
        shoulder=_euler_limits(SHOULDER_LIMITS_DEG),
        elbow=(math.radians(ELBOW_LIMITS_DEG[0]), math.radians(ELBOW_LIMITS_DEG[1])),
        wrist=_euler_limits(WRIST_LIMITS_DEG),
    )


def human_arm(limits: bool = True) -> Limb:
    """The right arm described in the module docstring, with or without joint limits."""
    rb = _rot_z(-CARRYING_ANGLE_DEG)
    a = _transform(np.eye(3), (0.0, UPPER_ARM, 0.0))
    # B's translation (elbow distal frame) runs along the rotated forearm bone's +Y.
    tb = rb @ np.array([0.0, FOREARM, 0.0])
    b = _transform(rb, (float(tb[0]), float(tb[1]), float(tb[2])))
    effector = _transform(np.eye(3), (0.0, HAND, 0.0))
    return Limb(
        a=a,
        b=b,
        elbow_axis=(1.0, 0.0, 0.0),
        effector=effector,
        limits=arm_limits() if limits else None,
    )


@dataclass(frozen=True)
class JointSample:
    """Joint values drawn by the goal generators (radians / rotation matrices)."""

    shoulder: FloatArray  # (N, 3, 3)
    elbow: FloatArray  # (N,)
    wrist: FloatArray  # (N, 3, 3)


def _uniform_in(rng: np.random.Generator, lim: EulerLimits | None, n: int) -> FloatArray:
    """(N, 3) Euler angles uniform within ``lim`` (uniform over (-π, π] where unlimited)."""
    out = rng.uniform(-math.pi, math.pi, size=(n, 3))
    if lim is None:
        return out
    lo, hi = lim.bounds()
    for i, on in enumerate(lim.limited):
        if on:
            out[:, i] = rng.uniform(lo[i], hi[i], size=n)
    return out


def _random_rotations(rng: np.random.Generator, n: int) -> FloatArray:
    """Uniformly distributed rotations (from normalised Gaussian quaternions)."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def sample_within_limits(limb: Limb, n: int, seed: int) -> JointSample:
    """Random joint values uniform (per Euler angle) within the limb's limits."""
    rng = np.random.default_rng(seed)
    lim = limb.limits
    sh = lim.shoulder if lim else None
    wr = lim.wrist if lim else None
    r1 = euler_to_matrix(_uniform_in(rng, sh, n), sh.order if sh else "XYZ")
    if lim is not None and lim.elbow is not None:
        th = rng.uniform(lim.elbow[0], lim.elbow[1], size=n)
    else:
        th = rng.uniform(-math.pi, math.pi, size=n)
    r2 = euler_to_matrix(_uniform_in(rng, wr, n), wr.order if wr else "XYZ")
    return JointSample(shoulder=r1, elbow=th, wrist=r2)


def random_reachable_goals(
    limb: Limb, n: int, seed: int, *, position_only: bool = False
) -> PoseGoal | PositionGoal:
    """N goals reached by forward kinematics of random joint angles within the limits.

    So every goal is reachable and its feasible swivel set is non-empty (up to numerical
    edge cases). ``position_only`` gives a :class:`PositionGoal` whose points were
    generated with the wrist at identity (the solver's default ``wrist`` for position
    goals), so they are feasible with that wrist too.
    """
    js = sample_within_limits(limb, n, seed)
    wrist = np.broadcast_to(np.eye(3), (n, 3, 3)) if position_only else js.wrist
    fk = limb.forward(js.shoulder, js.elbow, wrist)
    if position_only:
        return PositionGoal(fk[:, :3, 3].copy())
    return PoseGoal(fk[:, :3, 3].copy(), fk[:, :3, :3].copy())


def random_unlimited_goals(
    limb: Limb, n: int, seed: int, *, position_only: bool = False
) -> PoseGoal | PositionGoal:
    """N reachable goals from uniformly random rotations and elbow angles (limits ignored)."""
    rng = np.random.default_rng(seed)
    r1 = _random_rotations(rng, n)
    th = rng.uniform(-math.pi, math.pi, size=n)
    r2 = np.broadcast_to(np.eye(3), (n, 3, 3)) if position_only else _random_rotations(rng, n)
    fk = limb.forward(r1, th, r2)
    if position_only:
        return PositionGoal(fk[:, :3, 3].copy())
    return PoseGoal(fk[:, :3, 3].copy(), fk[:, :3, :3].copy())


def split_goals(goal: PoseGoal | PositionGoal) -> list[PoseGoal | PositionGoal]:
    """A batched goal as a list of single goals."""
    p = np.asarray(goal.position)
    if isinstance(goal, PoseGoal):
        r = np.asarray(goal.rotation)
        return [PoseGoal(p[i], r[i]) for i in range(len(p))]
    return [PositionGoal(p[i]) for i in range(len(p))]
