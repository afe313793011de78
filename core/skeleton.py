"""Kinematic trees for the numeric IK solvers: joints, forward kinematics, goal residuals
and their analytic Jacobians (Buss 2009, §2).

Model
-----
A :class:`Skeleton` is a list of :class:`Joint` objects, parents before children. Joint
``j`` has the global frame ::

    G_j = G_parent(j) · offset_j · R_j(q)          (G_parent = identity for a root)

with ``offset_j`` the 4×4 rest transform in the parent's frame (for a root: in the
skeleton's root/world frame) and ``R_j`` the rotation of its degrees of freedom
(:class:`Ball`, :class:`Hinge` or :class:`Fixed`). Children's offsets are expressed in
``G_j``. Every degree of freedom is rotational and measured in radians; lengths are in
the skeleton's length unit (metres by convention). The joint's *origin* is the
translation of ``G_j`` (it does not depend on ``R_j``).

The configuration vector ``q`` has :attr:`Skeleton.n_dofs` entries: joint by joint, for a
Hinge its angle, for a Ball its unlocked Euler angles in component order (x, y, z) —
Blender's convention (:mod:`core.rotations`): order ``'XYZ'`` means ``R = Rz·Ry·Rx``.
:attr:`Skeleton.dof_slices` says which entries belong to which joint.

Residuals and Jacobians
-----------------------
For a list of goals (:mod:`core.goals`, ``joint=`` naming the goal's joint, targets in
the world frame) :meth:`Skeleton.errors` returns the stacked residual ``e = target −
current`` (what a Newton step should reduce) and :meth:`Skeleton.jacobian` the matrix
``J = −∂e/∂q`` — Buss's ``J = ∂s/∂θ`` of the *current* features ``s`` — so that the
Newton/Gauss step solves ``J Δq ≈ e``. Rows come goal by goal in the given order, three
rows per block (see :class:`BlockKind`):

* :class:`~core.goals.PositionGoal`: one POSITION block, ``e = position − s`` with
  ``s = G_j · point``; Jacobian column of DOF ``d`` is ``w_d × (s − p_d)`` (Buss §2),
  ``w_d`` its world angular-velocity axis, ``p_d`` its joint's origin.
* :class:`~core.goals.OrientationGoal`: one ROTATION block, ``e = log(R_target · Rᵀ)``,
  the rotation vector (axis · angle, world frame, rad) that turns the current frame onto
  the target. Its exact Jacobian is ``J_r⁻¹(e) · w_d`` with ``J_r`` the right Jacobian
  of SO(3) (equal to ``w_d`` to first order in the error). The angle is at most π; at
  exactly π the rotation vector flips sign discontinuously (any direction is a descent
  direction there).
* :class:`~core.goals.PoseGoal`: POSITION (joint origin) then ROTATION.
* :class:`~core.goals.DirectionGoal`: one DIRECTION block, ``e = direction − a`` with
  ``a = R · axis`` the current world axis; Jacobian ``w_d × a``. ``‖e‖ = 2 sin(θ/2)``
  for the angle θ between them (≈ θ, rad, for small angles). Its only spurious
  stationary point is the exactly opposite axis (θ = π).
* :class:`~core.goals.PartialOrientationGoal`: POSITION (joint origin) then DIRECTION.
* :class:`~core.goals.AimGoal`: one AIM block, ``e = u − a`` with ``a`` the world ray
  axis and ``u = (target − o)/‖target − o‖`` the unit direction from the ray origin ``o``
  to the target: zero exactly when the ray passes through the target *in front of* its
  origin. Jacobian ``w_d × a + (I − u uᵀ)(w_d × (o − p_d)) / ‖target − o‖``. When the
  target coincides with the ray origin (closer than 1e-12) ``u := a`` (zero residual).

Weights multiply a goal's rows (residual and Jacobian) by ``sqrt(weight)``, so the
least-squares objective is ``Σ_goals weight · ‖e_goal‖²``. :meth:`Skeleton.goal_errors`
reports the *unweighted* error of each goal: the largest norm of its 3-row blocks
(metres for POSITION, ≈ radians for the others).

Buss's *alternate Jacobian* (§2, "the target is attached to the effector's link") is
available with ``target_based=True``: POSITION columns become ``w_d × (t − p_d)`` with
``t`` the target (only PositionGoal and PoseGoal position blocks; the partial-orientation
position block too). The residual is unchanged.

Every function takes ``q`` of shape ``(n_dofs,)`` or batched ``(B, n_dofs)``; goal targets
may be shared or batched with the same B. Batched calls never loop in Python over B.

Errors: malformed skeletons raise :class:`~core.errors.InvalidSkeletonError`, malformed
limits :class:`~core.errors.InvalidLimitsError`, bad ``q`` :class:`InvalidInputError`,
goals on unknown joints :class:`~core.errors.InvalidGoalError`, disagreeing batch sizes
:class:`~core.errors.ShapeMismatchError`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import (
    InvalidGoalError,
    InvalidInputError,
    InvalidLimitsError,
    InvalidSkeletonError,
    ShapeMismatchError,
)
from .goals import (
    MAX_COORDINATE,
    AimGoal,
    DirectionGoal,
    Goal,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
)
from .rotations import (
    check_order,
    check_rotation,
    matrix_to_axis_angle,
)

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.intp]

__all__ = [
    "Ball",
    "Hinge",
    "Fixed",
    "Dofs",
    "Joint",
    "Skeleton",
    "BlockKind",
    "RowBlock",
    "Evaluation",
]

#: Hinge axes shorter than this are rejected.
_MIN_AXIS = 1e-9
#: Aim targets closer than this to the ray origin count as hit.
_MIN_AIM_DISTANCE = 1e-12
_EYE3 = np.eye(3)
#: Goal-list structures whose evaluation plans a skeleton keeps (cleared when full).
_PLAN_CACHE_SIZE = 64
#: Component permutations i+1 and i+2 (mod 3) of the cross-product formula.
_NEXT = np.array([1, 2, 0], dtype=np.intp)
_NEXT2 = np.array([2, 0, 1], dtype=np.intp)
#: Components x, y, z, x, y: slices 1:4 and 2:5 of a vector extended so are its
#: components i+1 and i+2 (views, not copies).
_CYC = np.array([0, 1, 2, 0, 1], dtype=np.intp)
_AXES = {"X": 0, "Y": 1, "Z": 2}
#: From this many rows on, forward kinematics runs batch-last (see _KinematicPlan).
BATCH_LAST_ROWS = 64


# --------------------------------------------------------------------------------------
# Degrees of freedom
# --------------------------------------------------------------------------------------


def _finite(value: ArrayLike, name: str, error: type[Exception]) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise error(f"{name} must be numeric, got {value!r}") from exc
    if not np.all(np.isfinite(arr)):
        raise error(f"{name} must be finite, got {arr!r}")
    return arr


def _limits(
    lower: ArrayLike | None, upper: ArrayLike | None, size: int, name: str
) -> tuple[FloatArray, FloatArray]:
    """Limits as float arrays of ``size`` (None / NaN-free ±inf meaning free)."""

    def one(value: ArrayLike | None, default: float, which: str) -> FloatArray:
        if value is None:
            return np.full(size, default)
        try:
            arr = np.array(
                [default if v is None else v for v in np.ravel(np.asarray(value, dtype=object))],
                dtype=np.float64,
            )
        except (TypeError, ValueError) as exc:
            raise InvalidLimitsError(f"{name}.{which} must be numeric, got {value!r}") from exc
        if arr.size == 1 and size > 1:
            arr = np.full(size, float(arr[0]))
        if arr.shape != (size,):
            raise InvalidLimitsError(
                f"{name}.{which} must be a scalar or have {size} entries, got {value!r}"
            )
        if np.any(np.isnan(arr)):
            raise InvalidLimitsError(f"{name}.{which} must not be NaN, got {value!r}")
        return arr

    lo = one(lower, -np.inf, "lower")
    hi = one(upper, np.inf, "upper")
    bad = lo > hi
    if np.any(bad):
        i = int(np.argmax(bad))
        raise InvalidLimitsError(
            f"{name} limits must satisfy lower <= upper, got lower={lo[i]!r} > upper={hi[i]!r}"
            f" (entry {i})"
        )
    lo.setflags(write=False)
    hi.setflags(write=False)
    return lo, hi


@dataclass(frozen=True, eq=False)
class Ball:
    """Three rotational DOFs: Blender Euler angles (x, y, z components) in ``order``.

    Attributes:
        order: one of Blender's six orders; ``'XYZ'`` means R = Rz·Ry·Rx.
        lower, upper: per-component limits (rad), each None (free), a scalar or three
            values (None / ±inf entries free). Raises InvalidLimitsError if lower > upper.
        locked: per component; locked angles are not solved for and stay 0.
    """

    order: str = "XYZ"
    lower: ArrayLike | None = None
    upper: ArrayLike | None = None
    locked: tuple[bool, bool, bool] = (False, False, False)
    #: Component indices (0 = x, 1 = y, 2 = z) of the unlocked angles, in q order.
    free: tuple[int, ...] = field(init=False, repr=False, default=())

    def __post_init__(self) -> None:
        try:
            check_order(self.order)
        except InvalidInputError as exc:
            raise InvalidSkeletonError(f"Ball.order: {exc}") from exc
        lo, hi = _limits(self.lower, self.upper, 3, "Ball")
        lk = self.locked
        if (
            not isinstance(lk, tuple | list | np.ndarray)
            or len(lk) != 3
            or not all(isinstance(v, bool | np.bool_) for v in lk)
        ):
            raise InvalidSkeletonError(
                f"Ball.locked must be 3 bools (x, y, z), e.g. (False, True, False), got {lk!r}"
            )
        locked = tuple(bool(v) for v in lk)
        object.__setattr__(self, "lower", lo)
        object.__setattr__(self, "upper", hi)
        object.__setattr__(self, "locked", locked)
        object.__setattr__(self, "free", tuple(i for i in range(3) if not locked[i]))

    @property
    def n_dofs(self) -> int:
        return len(self.free)


@dataclass(frozen=True, eq=False)
class Hinge:
    """One rotational DOF (rad, right hand) about ``axis`` (joint frame, normalised inside).

    Raises InvalidSkeletonError for a zero/non-finite axis, InvalidLimitsError if
    lower > upper. None / ±inf limits are free.
    """

    axis: ArrayLike = (0.0, 0.0, 1.0)
    lower: float | None = None
    upper: float | None = None

    def __post_init__(self) -> None:
        a = _finite(self.axis, "Hinge.axis", InvalidSkeletonError)
        if a.shape != (3,):
            raise InvalidSkeletonError(f"Hinge.axis must have shape (3,), got {a.shape}")
        norm = float(np.linalg.norm(a))
        if norm <= _MIN_AXIS:
            raise InvalidSkeletonError(
                f"Hinge.axis must be non-zero (length > {_MIN_AXIS:g}), got {a.tolist()}"
            )
        lo, hi = _limits(self.lower, self.upper, 1, "Hinge")
        axis = a / norm
        axis.setflags(write=False)
        object.__setattr__(self, "axis", axis)
        object.__setattr__(self, "lower", float(lo[0]))
        object.__setattr__(self, "upper", float(hi[0]))

    @property
    def n_dofs(self) -> int:
        return 1


@dataclass(frozen=True, eq=False)
class Fixed:
    """No DOF: the joint frame is ``parent · offset``."""

    @property
    def n_dofs(self) -> int:
        return 0


Dofs = Ball | Hinge | Fixed


@dataclass(frozen=True, eq=False)
class Joint:
    """One joint of a :class:`Skeleton`.

    Attributes:
        name: unique non-empty name.
        parent: index of the parent joint, -1 for a root; must be smaller than this
            joint's own index (parents come before children).
        offset: 4×4 rest transform in the parent joint's frame (root: world frame);
            its 3×3 block must be a rotation and its last row (0, 0, 0, 1). Default eye.
        dofs: :class:`Ball`, :class:`Hinge` or :class:`Fixed` (default).
    """

    name: str
    parent: int = -1
    offset: ArrayLike = field(default_factory=lambda: np.eye(4))
    dofs: Dofs = field(default_factory=Fixed)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InvalidSkeletonError(f"Joint.name must be a non-empty str, got {self.name!r}")
        if not isinstance(self.parent, int | np.integer) or isinstance(self.parent, bool):
            raise InvalidSkeletonError(
                f"Joint {self.name!r}: parent must be an int index (-1 for a root), "
                f"got {self.parent!r}"
            )
        m = _finite(self.offset, f"Joint {self.name!r} offset", InvalidSkeletonError)
        if m.shape != (4, 4):
            raise InvalidSkeletonError(
                f"Joint {self.name!r}: offset must be a 4×4 transform, got shape {m.shape}"
            )
        if np.max(np.abs(m[3] - (0.0, 0.0, 0.0, 1.0))) > 1e-12:
            raise InvalidSkeletonError(
                f"Joint {self.name!r}: offset must have last row (0, 0, 0, 1), got {m[3]!r}"
            )
        check_rotation(
            m[:3, :3], name=f"Joint {self.name!r} offset[:3, :3]", error=InvalidSkeletonError
        )
        if float(np.max(np.abs(m[:3, 3]))) > MAX_COORDINATE:
            raise InvalidSkeletonError(
                f"Joint {self.name!r}: offset translation must be within ±{MAX_COORDINATE:g} m "
                f"(core.goals.MAX_COORDINATE), got {m[:3, 3].tolist()}"
            )
        if not isinstance(self.dofs, Ball | Hinge | Fixed):
            raise InvalidSkeletonError(
                f"Joint {self.name!r}: dofs must be Ball(...), Hinge(...) or Fixed(), "
                f"got {self.dofs!r}"
            )
        m = m.copy()
        m.setflags(write=False)
        object.__setattr__(self, "parent", int(self.parent))
        object.__setattr__(self, "offset", m)


# --------------------------------------------------------------------------------------
# Row blocks
# --------------------------------------------------------------------------------------


class BlockKind(Enum):
    """What a 3-row block of the residual measures (see the module docstring)."""

    POSITION = "position"
    ROTATION = "rotation"
    DIRECTION = "direction"
    AIM = "aim"


@dataclass(frozen=True)
class RowBlock:
    """Three rows of the stacked residual/Jacobian belonging to one goal.

    Attributes:
        goal: index of the goal in the goal list.
        priority: the goal's priority (0 = most important).
        rows: the rows of ``e`` / ``J`` (a slice of length 3).
        kind: what the rows measure.
        weight: the goal's weight (rows are scaled by sqrt(weight)).
    """

    goal: int
    priority: int
    rows: slice
    kind: BlockKind
    weight: float


@dataclass(frozen=True)
class Evaluation:
    """Everything one evaluation at ``q`` produces (always batched, leading axis B).

    Attributes:
        e: (B, m) weighted residual. J: (B, m, n_dofs) weighted Jacobian (None if not
        requested). goal_error: (B, G) unweighted per-goal errors. blocks: row layout.
        frames: the forward kinematics behind them, for the solvers (internal node
        layout; :meth:`Skeleton.kinematics_of` turns it into joint and DOF frames). The
        batch-last position path makes it on first access (from buffers the next
        evaluation with the same memo overwrites, like the frames themselves).
    """

    e: FloatArray
    J: FloatArray | None
    goal_error: FloatArray
    blocks: tuple[RowBlock, ...]
    source: FloatArray | Callable[[], FloatArray] | None = field(default=None, repr=False)

    @property
    def frames(self) -> FloatArray | None:
        """(B, N, ≥3, 5) node frames (see the class docstring), or None."""
        src = self.source
        return src() if callable(src) else src


def _goal_kinds(goal: Goal) -> tuple[BlockKind, ...]:
    if isinstance(goal, PositionGoal):
        return (BlockKind.POSITION,)
    if isinstance(goal, OrientationGoal):
        return (BlockKind.ROTATION,)
    if isinstance(goal, PoseGoal):
        return (BlockKind.POSITION, BlockKind.ROTATION)
    if isinstance(goal, PartialOrientationGoal):
        return (BlockKind.POSITION, BlockKind.DIRECTION)
    if isinstance(goal, DirectionGoal):
        return (BlockKind.DIRECTION,)
    if isinstance(goal, AimGoal):
        return (BlockKind.AIM,)
    raise InvalidGoalError(
        f"goal must be a PositionGoal, OrientationGoal, PoseGoal, PartialOrientationGoal, "
        f"DirectionGoal or AimGoal, got {goal!r}"
    )


def _inv_right_jacobian(phi: FloatArray) -> FloatArray:
    """(B, 3, 3) inverse right Jacobian of SO(3), J_r⁻¹(φ), for rotation vectors φ."""
    theta = np.sqrt(np.sum(phi * phi, axis=-1))
    k = np.zeros(phi.shape[:-1] + (3, 3))
    k[..., 0, 1] = -phi[..., 2]
    k[..., 0, 2] = phi[..., 1]
    k[..., 1, 0] = phi[..., 2]
    k[..., 1, 2] = -phi[..., 0]
    k[..., 2, 0] = -phi[..., 1]
    k[..., 2, 1] = phi[..., 0]
    small = theta < 1e-4
    t = np.where(small, 1.0, theta)
    s = np.maximum(np.sin(t), 1e-12)
    c = np.where(
        small,
        1.0 / 12.0 + theta * theta / 720.0,
        1.0 / (t * t) - (1.0 + np.cos(t)) / (2.0 * t * s),
    )
    out: FloatArray = _EYE3 + 0.5 * k + c[..., None, None] * (k @ k)
    return out


def _goal_rows(goal: Goal, value: object, rows: IntArray | None, b: int, nd: int = 1) -> FloatArray:
    """A goal's target array for the b rows being evaluated: shared arrays (unbatched
    ndim ``nd``) as they are, to broadcast against the rows; batched ones at ``rows`` (all
    N rows when None). ShapeMismatchError when that is not b rows."""
    arr = np.asarray(value)
    if goal._n is None or arr.ndim == nd:
        return arr
    sel = arr if rows is None else arr[rows]
    if sel.shape[0] != b:
        raise ShapeMismatchError(
            f"{type(goal).__name__} is batched with N = {goal._n} but q has "
            f"{b} rows; they must agree"
        )
    out: FloatArray = sel
    return out


def _cross(a: FloatArray, b: FloatArray) -> FloatArray:
    """a × b over the last axis (broadcast), by components: faster than np.cross on the
    small arrays of the solvers."""
    out: FloatArray = a[..., _NEXT] * b[..., _NEXT2] - a[..., _NEXT2] * b[..., _NEXT]
    return out


def _skew_table() -> FloatArray:
    """(3, 9) table E with ``(v @ E).reshape(3, 3)`` the cross-product matrix [v]×."""
    t = np.zeros((3, 9))
    t[2, 1], t[1, 2], t[2, 3] = -1.0, 1.0, 1.0
    t[0, 5], t[1, 6], t[0, 7] = -1.0, -1.0, 1.0
    t.setflags(write=False)
    return t


_SKEW = _skew_table()


def _skew(v: FloatArray) -> FloatArray:
    """[v]× for v (..., 3): (..., 3, 3), with [v]× u = v × u."""
    out: FloatArray = (v @ _SKEW).reshape(v.shape[:-1] + (3, 3))
    return out


def _axis_basis(a: FloatArray) -> FloatArray:
    """An orthonormal K (3×3, det +1) with K·e_z = a for a unit axis ``a``; the identity
    for a = e_z or a = 0 (no DOF), a cyclic permutation of the unit vectors for a = e_x or
    e_y (so that composing axis frames of Euler components stays exact)."""
    a = np.asarray(a, dtype=np.float64)
    if not a.any() or (a[0] == 0.0 and a[1] == 0.0 and a[2] == 1.0):
        return _EYE3.copy()
    for i in (0, 1):
        if a[i] == 1.0 and a[1 - i] == 0.0 and a[2] == 0.0:
            k = np.zeros((3, 3))
            k[(i + 1) % 3, 0] = 1.0  # x' = e_{i+1}, y' = e_{i+2}, z' = e_i
            k[(i + 2) % 3, 1] = 1.0
            k[i, 2] = 1.0
            return k
    h = _EYE3[int(np.argmin(np.abs(a)))]
    x = np.cross(h, a)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(a, x), a], axis=1)


def _rotate(*views: FloatArray) -> None:
    """Columns (F₀, F₁) of one level's axis frames ← (c F₀ + s F₁, c F₁ − s F₀) in place,
    from its views (X = [F₀ F₁], X reversed, [c c], [s −s], scratch, scratch): three
    element-wise calls for the level (nothing if the level has no DOF)."""
    if views:
        x, x_rev, cc, ss, a, b = views
        np.multiply(x, cc, out=a)
        np.multiply(x_rev, ss, out=b)
        np.add(a, b, out=x)


class _KinematicPlan:
    """Constant arrays of the vectorised forward kinematics of one skeleton.

    Every joint becomes one or more *nodes* with global frame
    ``G_n = G_parent(n) · C_n · Rot(a_n, θ_n)``: a Hinge one node (C = offset, a = its
    axis), a Ball one node per unlocked component in multiplication order (Blender's
    ``R = R_k R_m R_i``; the first node carries the offset, the others C = I), a Fixed
    joint (or a fully locked Ball) one node without rotation. A joint's frame is that of
    its last node; a DOF's world axis is ``G_n[:3, :3] · a_n`` of its node (the rotation
    about ``a_n`` leaves ``a_n`` fixed). Nodes are numbered level by level (tree depth),
    so each level is a contiguous slice composed with one batched matmul. The local
    transforms are ``T0 + sin θ · T1 + (1 − cos θ) · T2`` (Rodrigues with [a]× and
    [a]×² premultiplied by C).

    The batch-last path (:meth:`frames_last`, from :data:`BATCH_LAST_ROWS` rows) works in
    *axis frames* ``F_n = R_n · K_n`` instead, with a constant orthonormal ``K_n`` whose
    third column is ``a_n`` (the identity for a z axis and for nodes without a DOF, a
    cyclic permutation of the unit vectors for an x or y axis). Since
    ``Rot(a, θ) = K Rot_z(θ) Kᵀ``, ``F_n = F_parent · (K_parentᵀ C_n K_n) · Rot_z(θ)``:
    one constant 4×4 per node (:attr:`mt`, acting on the parent's columns [F₀ F₁ F₂ t])
    and a plane rotation of two columns. ``F_n``'s third column is the DOF's world axis
    and the joint rotation is ``F_n K_nᵀ``.
    """

    def __init__(self, joints: Sequence[Joint], slices: Sequence[slice], n_dofs: int) -> None:
        eye4 = np.eye(4)
        parent: list[int] = []
        const: list[FloatArray] = []
        axis: list[FloatArray] = []
        dof: list[int] = []
        joint_node: list[int] = []

        def add(par: int, c: FloatArray, a: FloatArray, d: int) -> int:
            parent.append(par)
            const.append(c)
            axis.append(a)
            dof.append(d)
            return len(parent) - 1

        zero3 = np.zeros(3)
        for j, jt in enumerate(joints):
            par = joint_node[jt.parent] if jt.parent >= 0 else -1
            d = jt.dofs
            off = np.asarray(jt.offset, dtype=np.float64)
            s = slices[j]
            if isinstance(d, Hinge):
                par = add(par, off, np.asarray(d.axis, dtype=np.float64), s.start)
            elif isinstance(d, Ball) and d.free:
                i, m, k = (_AXES[ch] for ch in d.order)
                c = off
                for comp in (k, m, i):
                    if comp in d.free:
                        par = add(par, c, _EYE3[comp], s.start + d.free.index(comp))
                        c = eye4
            else:
                par = add(par, off, zero3, -1)
            joint_node.append(par)

        # Level-order renumbering: children of one depth form a contiguous range,
        # sorted by their (already renumbered) parent.
        count = len(parent)
        depth = [0] * count
        for nd in range(count):
            depth[nd] = 0 if parent[nd] < 0 else depth[parent[nd]] + 1
        new = [-1] * count
        order: list[int] = []
        levels: list[tuple[int, int, slice | IntArray]] = []
        for lv in range(max(depth) + 1):
            here = [nd for nd in range(count) if depth[nd] == lv]
            here.sort(key=lambda nd: (new[parent[nd]] if parent[nd] >= 0 else -1, nd))
            start = len(order)
            for nd in here:
                new[nd] = len(order)
                order.append(nd)
            if lv == 0:
                continue
            ps = [new[parent[nd]] for nd in here]
            sel: slice | IntArray
            if all(p == ps[0] for p in ps):
                sel = slice(ps[0], ps[0] + 1)
            elif ps == list(range(ps[0], ps[0] + len(ps))):
                sel = slice(ps[0], ps[0] + len(ps))
            else:
                sel = np.array(ps, dtype=np.intp)
            levels.append((start, len(order), sel))

        # Local transforms as 4×5: [rotation | translation | C·a] — the last column is the
        # DOF's axis in the parent frame (Rot(a, θ)·a = a), so composed frames carry the
        # DOF's world axis R_n·a_n there.
        t0 = np.zeros((count, 4, 5))
        t1 = np.zeros((count, 4, 5))
        t2 = np.zeros((count, 4, 5))
        node_q = np.zeros(count, dtype=np.intp)
        dof_node = np.zeros(n_dofs, dtype=np.intp)
        for nn, nd in enumerate(order):
            c = const[nd]
            a = axis[nd]
            t0[nn, :, :4] = c
            if dof[nd] >= 0:
                sk = _skew(a)
                t0[nn, :3, 4] = c[:3, :3] @ a
                t1[nn, :3, :3] = c[:3, :3] @ sk
                t2[nn, :3, :3] = c[:3, :3] @ (sk @ sk)
                node_q[nn] = dof[nd]
                dof_node[dof[nd]] = nn
        self.n_nodes = count
        self.levels = tuple(levels)
        #: per level (node-major frames): the index of its parents' 4×4 blocks, its nodes
        self.level_index = tuple(
            ((par, slice(None), slice(None), slice(None, 4)), slice(start, stop))
            for start, stop, par in levels
        )
        self.n_roots = levels[0][0] if levels else count
        # (N, 3, 20) [T0 + T2; T1; −T2] for the coefficients [1, sin θ, cos θ] (= T0 +
        # sin θ T1 + (1 − cos θ) T2), contiguous: one BLAS product per node over the batch
        self.tt = np.ascontiguousarray(
            np.stack([t.reshape(count, 20) for t in (t0 + t2, t1, -t2)], axis=1)
        )
        # Batch-last axis frames (class docstring): K per node, and per node the 4×4 that
        # maps the parent's columns [F₀ F₁ F₂ t] to the child's before its rotation:
        # rows i < 3 the columns of K_pᵀ C K, row 3 the translation K_pᵀ c plus t.
        kk = np.array([_axis_basis(axis[nd]) for nd in order]).reshape(count, 3, 3)
        #: (N, 3, 3) K_n of every node (renumbered)
        self.axis_basis = kk
        mt = np.zeros((count, 4, 4))
        for nn, nd in enumerate(order):
            pn = new[parent[nd]] if parent[nd] >= 0 else -1
            kp = kk[pn] if pn >= 0 else _EYE3
            c = const[nd]
            mt[nn, :3, :3] = (kp.T @ c[:3, :3] @ kk[nn]).T
            mt[nn, 3, :3] = kp.T @ c[:3, 3]
            mt[nn, 3, 3] = 1.0
        #: (N, 4, 4) the constant composition of each node in axis frames
        self.mt = mt
        #: nodes with a DOF (the others' rotation is the identity: sin 0, cos 1)
        self.node_has_dof = np.array([dof[nd] >= 0 for nd in order], dtype=bool)
        # nodes without a DOF on a level that is rotated (levels without any DOF are not)
        spans = [(0, levels[0][0] if levels else count)] + [(a, z) for a, z, _ in levels]
        self.fixed_nodes = np.array(
            [
                i
                for a, z in spans
                if self.node_has_dof[a:z].any()
                for i in range(a, z)
                if not self.node_has_dof[i]
            ],
            dtype=np.intp,
        )
        self.max_level = max((stop - start for start, stop, _ in levels), default=1)
        self.node_q = node_q
        self.dof_node = dof_node
        #: (n_dofs, 1): dof_node broadcast against _CYC (one fancy index for p and w)
        self.dof_cyc = dof_node[:, None]
        self.joint_node = np.array([new[nd] for nd in joint_node], dtype=np.intp)
        self.n_dofs = n_dofs

    def workspace(self, b: int) -> tuple[Any, ...]:
        """Preallocated buffers of :meth:`frames` for ``b`` rows: ``(b, batch_last,
        buffers)`` (built once per solver run and row count, see
        :meth:`Skeleton.evaluate`'s ``memo``)."""
        if b >= BATCH_LAST_ROWS and self.n_dofs:
            return (b, True, self._workspace_last(b))
        return (b, False, self._workspace_first(b))

    def frames(self, q: FloatArray, ws: tuple[Any, ...] | None = None) -> FloatArray:
        """(B, N, ≥3, 5) global node frames [R | t | R·a] (rows 0–2; a fourth row, if
        present, is not part of the contract; R·a is the DOF's world axis, for nodes
        with a DOF) for batched q (B, n_dofs): a view of node-major batch-first storage
        below :data:`BATCH_LAST_ROWS` rows, from there on of a batch-last (N, 5, 3, B)
        array converted from the axis frames of :meth:`frames_last`. ``ws``: this plan's
        :meth:`workspace` for B rows (the result is then overwritten by the next call
        with ``ws``)."""
        if ws is None:
            ws = self.workspace(q.shape[0])
        if ws[1]:
            return self.standard_last(self.frames_last(q, ws[2]), ws[2])
        return self._frames_first(q, ws[2])

    def standard_last(self, f: FloatArray, ws: tuple[Any, ...]) -> FloatArray:
        """The (B, N, 3, 5) [R | t | R·a] view (:meth:`frames`) of the axis frames ``f``
        (N, 4, 3, B) of :meth:`frames_last`: R = F·Kᵀ, R·a = F₂ (``ws``: the batch-last
        workspace; its conversion buffer is overwritten)."""
        count, b = self.n_nodes, f.shape[-1]
        conv = ws[-1]
        np.matmul(
            self.axis_basis,
            f[:, :3].reshape(count, 3, 3 * b),
            out=conv[:, :3].reshape(count, 3, 3 * b),
        )
        np.copyto(conv[:, 3], f[:, 3])
        np.copyto(conv[:, 4], f[:, 2])
        out: FloatArray = conv.transpose(3, 0, 2, 1)
        return out

    def _workspace_last(self, b: int) -> tuple[Any, ...]:
        count = self.n_nodes
        r = self.n_roots
        cc = np.empty((count, 2, 1, b))  # [cos θ, cos θ]
        ss = np.empty((count, 2, 1, b))  # [sin θ, −sin θ]
        frames = np.empty((count, 4, 3, b))  # axis frames, columns [F₀ F₁ F₂ t]
        flat = frames.reshape(count, 4, 3 * b)
        widest = max(self.max_level, r)
        gathered = np.empty((widest, 4, 3 * b))  # parents given by index, gathered
        scratch = (np.empty((widest, 2, 3, b)), np.empty((widest, 2, 3, b)))

        def rotation(start: int, stop: int) -> tuple[Any, ...]:
            # views of the plane rotation of columns 0 and 1 by θ (none if no DOF here)
            if not self.node_has_dof[start:stop].any():
                return ()
            x = frames[start:stop, :2]
            k = stop - start
            return (x, x[:, ::-1], cc[start:stop], ss[start:stop]) + tuple(y[:k] for y in scratch)

        roots = (frames[:r], self.mt[:r, :, :3, None], rotation(0, r))
        levels = []
        for start, stop, sel in self.levels:
            k = stop - start
            take = None if isinstance(sel, slice) else sel
            par = flat[sel] if isinstance(sel, slice) else gathered[:k]
            levels.append((take, par, self.mt[start:stop], flat[start:stop], rotation(start, stop)))
        conv = np.empty((count, 5, 3, b))  # frames() in the [R | t | R·a] layout
        return (
            np.empty((count, b)),
            np.empty((count, b)),
            cc,
            ss,
            frames,
            flat,
            roots,
            tuple(levels),
            conv,
        )

    def frames_last(self, q: FloatArray, ws: tuple[Any, ...]) -> FloatArray:
        """(N, 4, 3, B) global *axis frames* of the nodes, batch-last, for q (B, n_dofs):
        ``[:, c]`` is column c of F_n = R_n·K_n (c = 0, 1, 2; column 2 is the world axis of
        the node's DOF) and ``[:, 3]`` its origin (class docstring); ``ws``: the batch-last
        part of :meth:`workspace` (≥ :data:`BATCH_LAST_ROWS` rows). Every quantity of one
        node is a contiguous row of B values, so each tree level is one BLAS product per
        node (the constant 4×4 of :attr:`mt` on the parent's columns) and a plane rotation
        of two columns by θ (three element-wise calls) instead of B tiny matrix products.
        sin θ and cos θ come from t = tan(θ/2) (sin = 2t/(1 + t²), cos = (1 − t²)/(1 + t²)):
        numpy vectorises float64 tan but not sin/cos, so this is ~10× cheaper than
        ``np.sin`` + ``np.cos`` for the same accuracy (≤ 4e-16 absolute over ±7 rad,
        measured; θ = ±π gives t ≈ 1.6e16 and the exact float results). Per row the
        results differ from the batch-first path only in rounding (≤ a few ulp)."""
        theta, t2, cc, ss, frames, flat, roots, levels, _ = ws
        np.take(q.T, self.node_q, 0, out=theta)
        half = np.multiply(theta, 0.5, out=theta)
        t = np.tan(half, out=half)
        np.multiply(t, t, out=t2)
        d = np.add(t2, 1.0, out=cc[:, 1, 0])
        np.divide(2.0, d, out=d)  # 2 / (1 + t²)
        np.multiply(t, d, out=ss[:, 0, 0])  # sin θ
        np.negative(ss[:, 0], out=ss[:, 1])
        np.subtract(1.0, t2, out=t2)
        np.multiply(t2, d, out=t2)
        np.multiply(t2[:, None, None], 0.5, out=cc)  # cos θ, twice
        if self.fixed_nodes.size:
            ss[self.fixed_nodes] = 0.0
            cc[self.fixed_nodes] = 1.0
        out, const, rot = roots
        np.copyto(out, const)  # a root's parent is the world (K = I, origin 0)
        _rotate(*rot)
        for take, par, mt, out, rot in levels:
            if take is not None:
                np.take(flat, take, 0, out=par)
            np.matmul(mt, par, out=out)
            _rotate(*rot)
        result: FloatArray = frames
        return result

    def _workspace_first(self, b: int) -> tuple[Any, ...]:
        """Preallocated buffers of :meth:`frames` for ``b`` rows and the views each tree
        level writes through (built once per solver run and row count, see
        :meth:`Skeleton.evaluate`'s ``memo``): (theta (b, N), coef (N, max(b, 2), 3) with
        its constant column of ones set, sin/cos views, local (N, max(b, 2), 20), the
        node-major frames (N, b, 4, 5) view of the strided buffer, the roots' copy
        views and per level (parents, locals, out) views)."""
        count = self.n_nodes
        theta = np.empty((b, count))
        coef = np.empty((count, max(b, 2), 3))
        coef[..., 0] = 1.0
        local_full = np.empty((count, max(b, 2), 20))
        local = local_full[:, :b].reshape(count, b, 4, 5)
        g: FloatArray = np.empty((count, b, 4, 10))[..., ::2]
        r = self.n_roots
        # parents given by an index array are gathered at each call (a copy), slices are
        # views taken once
        levels = tuple(
            (g[parent] if isinstance(sel, slice) else parent, local[child], g[child])
            for (parent, child), (_, _, sel) in zip(self.level_index, self.levels, strict=True)
        )
        return (theta, coef, coef[..., 1], coef[..., 2], local_full, g, g[:r], local[:r], levels)

    def _frames_first(self, q: FloatArray, ws: tuple[Any, ...]) -> FloatArray:
        """(B, N, 4, 5) global node frames [R | t | R·a] for batched q (B, n_dofs).

        The local transforms are one BLAS product per node over the whole batch
        ([1, sin θ, cos θ] · [T0 + T2; T1; −T2], node-major, contiguous; a single row is
        doubled so that it rounds exactly as in a batch); each tree level is
        then one ``matmul`` of the parents' frames with the level's local transforms into
        a strided buffer (every other column): with a strided operand numpy uses its own
        loop for the many tiny 4×4 products instead of one BLAS call per matrix, which is
        several times faster for large B. The result is a (B, N, …) view of node-major
        storage. ``ws``: the batch-first part of :meth:`workspace` for B rows (reused
        buffers: the result is overwritten by the next call with ``ws``)."""
        b = q.shape[0]
        if not self.n_dofs:
            count = self.n_nodes
            g0: FloatArray = np.empty((count, b, 4, 10))[..., ::2]
            r0 = self.n_roots
            g0[:r0] = self.tt[:r0, None, 0].reshape(r0, 1, 4, 5)
            for parent, child in self.level_index:
                np.matmul(g0[parent], self.tt[child, None, 0].reshape(-1, 1, 4, 5), out=g0[child])
            return g0.swapaxes(0, 1)
        theta, coef, sin_v, cos_v, local_full, g, g_roots, local_roots, levels = ws
        q.take(self.node_q, 1, theta)  # (the method: several times cheaper than np.take)
        # one row is computed twice (coef has max(b, 2) rows): BLAS then multiplies
        # matrices (gemm), not a vector (gemv), and the row rounds exactly as in a batch
        np.sin(theta.T, sin_v)
        np.cos(theta.T, cos_v)
        np.matmul(coef, self.tt, local_full)
        g_roots[...] = local_roots
        for parent_v, local_v, out_v in levels:
            np.matmul(
                parent_v if isinstance(parent_v, np.ndarray) else g[parent_v], local_v, out=out_v
            )
        out: FloatArray = g.swapaxes(0, 1)
        return out


# --------------------------------------------------------------------------------------
# Skeleton
# --------------------------------------------------------------------------------------


def goal_tuple(goals: Sequence[Goal], where: str = "goals") -> tuple[Goal, ...]:
    """``goals`` as a non-empty tuple of goal objects (:mod:`core.goals`).

    Raises InvalidGoalError for a single goal or None instead of a list, a non-goal entry,
    or an empty list."""
    if not isinstance(goals, list | tuple):
        raise InvalidGoalError(
            f"{where} must be a list or tuple of goals (e.g. [PositionGoal(...)]), got {goals!r}"
        )
    for i, g in enumerate(goals):
        if not isinstance(
            g,
            PositionGoal
            | OrientationGoal
            | PoseGoal
            | PartialOrientationGoal
            | DirectionGoal
            | AimGoal,
        ):
            raise InvalidGoalError(
                f"{where}[{i}] must be a goal (PositionGoal, OrientationGoal, PoseGoal, "
                f"PartialOrientationGoal, DirectionGoal, AimGoal), got {g!r}"
            )
    if not goals:
        raise InvalidGoalError(f"{where} needs at least one goal, got none")
    return tuple(goals)


@dataclass(frozen=True, eq=False)
class Skeleton:
    """A validated kinematic tree (see the module docstring).

    Attributes (derived):
        n_dofs, n_joints: sizes. names: joint names. parents: (J,) parent indices.
        dof_slices: per joint, its slice of q. dof_joint: (n_dofs,) joint of each DOF.
        lower, upper: (n_dofs,) limits in rad, ±inf where free.

    Raises:
        InvalidSkeletonError: no joints, a non-Joint entry, a parent index that is
            unknown (≥ J or < -1) or not smaller than the joint's own index (a parent
            after its child, or a cycle), duplicate names.
    """

    joints: Sequence[Joint]
    n_dofs: int = field(init=False)
    names: tuple[str, ...] = field(init=False, repr=False)
    parents: IntArray = field(init=False, repr=False)
    dof_slices: tuple[slice, ...] = field(init=False, repr=False)
    dof_joint: IntArray = field(init=False, repr=False)
    lower: FloatArray = field(init=False, repr=False)
    upper: FloatArray = field(init=False, repr=False)
    #: (J, J): [a, j] is True when joint a is joint j or one of its ancestors.
    ancestors: BoolArray = field(init=False, repr=False)
    #: Whether any DOF has a finite lower or upper limit.
    has_limits: bool = field(init=False, repr=False)
    #: Precomputed constant arrays of the vectorised forward kinematics (private).
    _kin: _KinematicPlan = field(init=False, repr=False, compare=False)
    #: Single-entry cache of the per-goal-list evaluation plan (private).
    _goal_cache: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.joints, list | tuple):
            raise InvalidSkeletonError(
                f"Skeleton needs a list or tuple of Joint, got {self.joints!r}"
            )
        joints = tuple(self.joints)
        if not joints:
            raise InvalidSkeletonError("Skeleton needs at least one joint, got none")
        names: list[str] = []
        for i, jt in enumerate(joints):
            if not isinstance(jt, Joint):
                raise InvalidSkeletonError(f"joints[{i}] must be a Joint, got {jt!r}")
            if jt.name in names:
                raise InvalidSkeletonError(
                    f"joint names must be unique; {jt.name!r} is used by joints "
                    f"{names.index(jt.name)} and {i}"
                )
            names.append(jt.name)
            if jt.parent < -1 or jt.parent >= len(joints):
                raise InvalidSkeletonError(
                    f"joint {i} ({jt.name!r}) has unknown parent index {jt.parent}; valid: -1 "
                    f"(root) or 0..{len(joints) - 1}"
                )
            if jt.parent >= i:
                raise InvalidSkeletonError(
                    f"joint {i} ({jt.name!r}) has parent index {jt.parent} >= its own index; "
                    "parents must come before children (this also rules out cycles)"
                )
        n = len(joints)
        anc = np.zeros((n, n), dtype=bool)
        for j, jt in enumerate(joints):
            if jt.parent >= 0:
                anc[:, j] = anc[:, jt.parent]
            anc[j, j] = True
        slices: list[slice] = []
        dof_joint: list[int] = []
        lo: list[float] = []
        hi: list[float] = []
        start = 0
        for j, jt in enumerate(joints):
            d = jt.dofs
            k = d.n_dofs
            slices.append(slice(start, start + k))
            dof_joint += [j] * k
            if isinstance(d, Ball):
                lo += [float(np.asarray(d.lower)[c]) for c in d.free]
                hi += [float(np.asarray(d.upper)[c]) for c in d.free]
            elif isinstance(d, Hinge):
                lo.append(float(d.lower))  # type: ignore[arg-type]
                hi.append(float(d.upper))  # type: ignore[arg-type]
            start += k
        arrays: dict[str, NDArray[Any]] = {
            "parents": np.array([jt.parent for jt in joints], dtype=np.intp),
            "dof_joint": np.array(dof_joint, dtype=np.intp),
            "lower": np.array(lo, dtype=np.float64),
            "upper": np.array(hi, dtype=np.float64),
            "ancestors": anc,
        }
        for key, arr in arrays.items():
            arr.setflags(write=False)
            object.__setattr__(self, key, arr)
        object.__setattr__(self, "joints", joints)
        object.__setattr__(self, "names", tuple(names))
        object.__setattr__(self, "dof_slices", tuple(slices))
        object.__setattr__(self, "n_dofs", start)
        object.__setattr__(self, "_kin", _KinematicPlan(joints, slices, start))
        object.__setattr__(
            self,
            "has_limits",
            bool(np.isfinite(arrays["lower"]).any() or np.isfinite(arrays["upper"]).any()),
        )
        object.__setattr__(self, "_goal_cache", {})

    # ------------------------------------------------------------------ basics

    @property
    def n_joints(self) -> int:
        return len(self.names)

    def joint_index(self, joint: int | str) -> int:
        """Index of a joint given by index or name.

        Raises:
            InvalidSkeletonError: unknown name or index out of range (negative indices
                count from the end like Python's, down to -J).
        """
        n = self.n_joints
        if isinstance(joint, str):
            if joint not in self.names:
                raise InvalidSkeletonError(
                    f"skeleton has no joint named {joint!r}; joints are {list(self.names)}"
                )
            return self.names.index(joint)
        if isinstance(joint, int | np.integer) and not isinstance(joint, bool):
            if -n <= int(joint) < n:
                return int(joint) % n
            raise InvalidSkeletonError(
                f"joint index {int(joint)} out of range for a skeleton of {n} joints "
                f"(valid: {-n}..{n - 1})"
            )
        raise InvalidSkeletonError(f"joint must be an int index or a str name, got {joint!r}")

    def check_q(self, q: ArrayLike, name: str = "q") -> tuple[FloatArray, bool]:
        """``q`` as a (B, n_dofs) float array and whether it was batched.

        Raises:
            InvalidInputError: non-numeric, non-finite, or not of shape (n_dofs,) /
                (B, n_dofs).
        """
        arr = _finite(q, name, InvalidInputError)
        if arr.ndim == 1 and arr.shape[0] == self.n_dofs:
            return arr[None, :], False
        if arr.ndim == 2 and arr.shape[1] == self.n_dofs:
            return arr, True
        raise InvalidInputError(
            f"{name} must have shape ({self.n_dofs},) or (B, {self.n_dofs}) for this "
            f"skeleton of {self.n_dofs} DOFs, got shape {arr.shape}"
        )

    def zero(self) -> FloatArray:
        """The rest configuration q = 0 (n_dofs,)."""
        return np.zeros(self.n_dofs)

    def clip(self, q: ArrayLike) -> FloatArray:
        """``q`` clipped to [lower, upper] (any leading shape, last axis n_dofs).

        Raises InvalidInputError for a non-numeric, non-finite or misshaped q."""
        arr = _finite(q, "q", InvalidInputError)
        if arr.ndim < 1 or arr.shape[-1] != self.n_dofs:
            raise InvalidInputError(
                f"q must have shape (…, {self.n_dofs}) for this skeleton, got {arr.shape}"
            )
        return self._clip(arr)

    def _clip(self, q: FloatArray) -> FloatArray:
        """:meth:`clip` without validation, for the solvers' own arrays."""
        out: FloatArray = np.minimum(np.maximum(q, self.lower), self.upper)
        return out

    # ------------------------------------------------------------------ kinematics

    def _kinematics(self, q: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Global rotations (B, J, 3, 3), origins (B, J, 3), DOF world axes (B, n, 3) and
        DOF origins (B, n, 3) for batched ``q`` (B, n)."""
        return self.kinematics_of(self._kin.frames(q))

    def kinematics_of(
        self, frames: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Global joint rotations (B, J, 3, 3), joint origins (B, J, 3), DOF world axes
        (B, n, 3) and DOF origins (B, n, 3) from :attr:`Evaluation.frames`."""
        kin = self._kin
        gj = frames[:, kin.joint_node]
        gd = frames[:, kin.dof_node]
        return gj[..., :3, :3], gj[..., :3, 3], gd[..., :3, 4], gd[..., :3, 3]

    def forward(self, q: ArrayLike) -> FloatArray:
        """Global 4×4 frames of all joints: (J, 4, 4) for q (n_dofs,), (B, J, 4, 4) for
        q (B, n_dofs). Raises InvalidInputError for a malformed q."""
        qb, batched = self.check_q(q)
        rot, org, _, _ = self._kinematics(qb)
        out = np.zeros(rot.shape[:2] + (4, 4))
        out[..., :3, :3] = rot
        out[..., :3, 3] = org
        out[..., 3, 3] = 1.0
        return out if batched else out[0]

    # ------------------------------------------------------------------ goals

    def blocks(self, goals: Sequence[Goal]) -> tuple[RowBlock, ...]:
        """Row layout of ``errors``/``jacobian`` for ``goals`` (validates joints)."""
        goals = goal_tuple(goals)
        out: list[RowBlock] = []
        row = 0
        for gi, goal in enumerate(goals):
            kinds = _goal_kinds(goal)
            self._goal_joint(goal, gi)
            for kind in kinds:
                out.append(RowBlock(gi, goal.priority, slice(row, row + 3), kind, goal.weight))
                row += 3
        return tuple(out)

    def _goal_joint(self, goal: Goal, gi: int) -> int:
        if goal.joint is None:
            raise InvalidGoalError(
                f"goals[{gi}] ({type(goal).__name__}) needs joint= naming a joint of the "
                f"skeleton (index or name); joints are {list(self.names)}"
            )
        try:
            return self.joint_index(goal.joint)
        except InvalidSkeletonError as exc:
            raise InvalidGoalError(f"goals[{gi}] ({type(goal).__name__}): {exc}") from exc

    def _goal_plan(self, goals: Sequence[Goal]) -> tuple[tuple[RowBlock, ...], list[Any]]:
        """Row blocks and per-goal constants (joint node, DOF mask × sqrt(weight), kinds)
        for ``goals``; validated once and cached for the last goal list seen."""
        cache = self._goal_cache.get("plan")
        if cache is not None and cache[0] is goals:
            return cache[1], cache[2]
        if (
            cache is not None
            and len(cache[0]) == len(goals)
            and all(a is b for a, b in zip(cache[0], goals, strict=True))
        ):
            if isinstance(goals, tuple):  # the next call with this tuple: identity hit
                self._goal_cache["plan"] = (goals, cache[1], cache[2])
            return cache[1], cache[2]
        # The plan depends on the goals' types, joints, weights, priorities and (for
        # PositionGoal) whether the point is the joint origin, never on their targets:
        # new goal objects of a known structure (one solve per frame) reuse it.
        key = tuple(
            (
                type(goal),
                goal.joint,
                goal.weight,
                goal.priority,
                isinstance(goal, PositionGoal)
                and np.ndim(goal.point) == 1
                and not np.asarray(goal.point).any(),
            )
            for goal in goals
        )
        plans: dict[Any, tuple[tuple[RowBlock, ...], list[Any]]] = self._goal_cache.setdefault(
            "plans", {}
        )
        hit = plans.get(key)
        if hit is not None:
            self._goal_cache["plan"] = (tuple(goals), hit[0], hit[1])
            return hit
        blocks, per = self._new_goal_plan(goals)
        if len(plans) >= _PLAN_CACHE_SIZE:
            plans.clear()
        plans[key] = (blocks, per)
        self._goal_cache["plan"] = (tuple(goals), blocks, per)
        return blocks, per

    def _new_goal_plan(self, goals: Sequence[Goal]) -> tuple[tuple[RowBlock, ...], list[Any]]:
        """The plan of :meth:`_goal_plan`, computed (validates the goals' joints)."""
        blocks = self.blocks(goals)
        per: list[Any] = []
        for gi, goal in enumerate(goals):
            j = self._goal_joint(goal, gi)
            sw = float(np.sqrt(goal.weight))
            maskw = sw * self.ancestors[self.dof_joint, j].astype(np.float64)
            zero_point = (
                isinstance(goal, PositionGoal)
                and np.ndim(goal.point) == 1
                and not np.any(goal.point)
            )
            per.append((j, int(self._kin.joint_node[j]), _goal_kinds(goal), sw, maskw, zero_point))
        # POSITION blocks measured at the joint origin (zero-point PositionGoal, PoseGoal,
        # PartialOrientationGoal) are evaluated together, vectorised over the goals.
        group: list[tuple[int, int]] = []  # (block, goal)
        starts: list[int] = []
        bi = 0
        for gi, goal in enumerate(goals):
            starts.append(bi)
            for kind in per[gi][2]:
                if kind is BlockKind.POSITION and (
                    per[gi][5] or isinstance(goal, PoseGoal | PartialOrientationGoal)
                ):
                    group.append((bi, gi))
                bi += 1
        grouped = np.zeros(bi, dtype=bool)
        pos: tuple[Any, ...] | None = None
        if group:
            gb = [x[0] for x in group]
            gg = [x[1] for x in group]
            grouped[gb] = True
            sel: slice | IntArray = (
                slice(gb[0], gb[-1] + 1)
                if gb == list(range(gb[0], gb[-1] + 1))
                else np.array(gb, dtype=np.intp)
            )
            sws = np.array([per[gi][3] for gi in gg])
            gmask = np.stack([per[gi][4] for gi in gg])  # (Gp, n)
            # the structurally non-zero (goal, DOF) pairs of these rows, for the batch-last
            # evaluation: DOF and goal nodes, their flat (row · n + DOF) positions in J
            # component by component, and the masks' weights (None if all 1)
            pg, pd = np.nonzero(gmask)
            rows = 3 * np.asarray(gb, dtype=np.intp)[pg][None, :] + np.arange(3)[:, None]
            pw = gmask[pg, pd]
            pos = (
                sel,
                tuple(gg),
                np.array([per[gi][1] for gi in gg], dtype=np.intp)[:, None],
                None if np.all(sws == 1.0) else sws[:, None],
                gmask[:, None, :],
                (
                    pg,
                    self._kin.dof_node[pd],
                    (rows * self.n_dofs + pd[None, :]).ravel(),
                    None if np.all(pw == 1.0) else pw[:, None],
                ),
            )
        skip = [bool(grouped[st : st + len(per[gi][2])].all()) for gi, st in enumerate(starts)]
        # p_d × w_d (mt in evaluate) is needed only by ungrouped POSITION and AIM blocks
        kinds_flat = [kind for gi in range(len(goals)) for kind in per[gi][2]]
        need_mt = any(
            not grouped[i] and kind in (BlockKind.POSITION, BlockKind.AIM)
            for i, kind in enumerate(kinds_flat)
        )
        per.append(
            (pos, grouped.tolist(), np.array(starts, dtype=np.intp), skip, all(skip), need_mt)
        )
        return blocks, per

    def evaluate(
        self,
        q: FloatArray,
        goals: Sequence[Goal],
        *,
        rows: IntArray | None = None,
        jacobian: bool = True,
        target_based: bool = False,
        memo: dict[str, Any] | None = None,
    ) -> Evaluation:
        """Residual, Jacobian and per-goal errors for batched ``q`` (b, n_dofs).

        ``rows`` selects which rows of batched goal targets belong to the b rows of ``q``
        (default: all B rows, b = B, or shared targets). ``memo``: an empty dict the
        caller keeps across calls with the same ``goals`` (and goal arrays left
        unchanged) to reuse the gathered targets and the forward-kinematics buffers
        (:meth:`_KinematicPlan.workspace`; ``Evaluation.frames`` is then overwritten by
        the next call with the same memo — e, J and goal_error are always new arrays);
        it is refilled whenever ``rows`` is a different object. Used by the solvers;
        most callers want :meth:`errors` / :meth:`jacobian` / :meth:`goal_errors`.
        """
        blocks, per = self._goal_plan(goals)
        if memo is not None and memo.get("rows", memo) is not rows:
            memo.clear()
            memo["rows"] = rows
        b = q.shape[0]
        n = self.n_dofs
        kin = self._kin
        ws = None if memo is None else memo.get("frames")
        if ws is None or ws[0] != b:
            ws = kin.workspace(b)
            if memo is not None:
                memo["frames"] = ws
        pos, grouped, starts, skip, all_skip, need_mt = per[-1]
        if ws[1] and all_skip:
            return self._evaluate_last(
                q, goals, blocks, pos, ws[2], rows, jacobian, target_based, memo
            )
        g = kin.frames(q, ws)
        m = 3 * len(blocks)
        e = np.empty((b, m))
        jac = np.empty((b, m, n)) if jacobian else None
        wt: FloatArray | None = None
        mt: FloatArray | None = None
        if jacobian:
            # (b, n, 5, 2): DOF origins p and axes w, components x y z x y (_CYC)
            pw = g[:, kin.dof_cyc, _CYC, 3:]
            if not all_skip:
                w = pw[..., :3, 1]  # (b, n, 3) DOF world axes
                wt = np.swapaxes(w, -1, -2)  # (b, 3, n)
                if need_mt:
                    # (b, 3, n): p_d × w_d, so that w_d × (x − p_d) = mt − [x]× wt.
                    mt = np.swapaxes((_skew(pw[..., :3, 0]) @ w[..., None])[..., 0], -1, -2)

        def target(goal: Goal, value: object, nd: int = 1) -> FloatArray:
            return _goal_rows(goal, value, rows, b, nd)

        def apply(x: FloatArray, v: FloatArray) -> FloatArray:
            """x (b, 3, 3) times v (3,) or (b, 3)."""
            out: FloatArray = x @ v if v.ndim == 1 else (x @ v[..., None])[..., 0]
            return out

        nb = len(blocks)
        bn = np.empty((b, nb))  # per-block error norms
        if pos is not None:
            sel, gg, gnodes, gsw, gmask, _ = pos
            s5 = g[:, gnodes, _CYC, 3]  # (b, Gp, 5) joint origins, x y z x y
            s_all = s5[..., :3]
            tgt_all = None if memo is None else memo.get("position")
            if tgt_all is None or tgt_all.shape != s_all.shape:
                tgt_all = np.empty(s_all.shape)
                for i, gi in enumerate(gg):
                    tgt_all[:, i] = target(goals[gi], goals[gi].position)
                if memo is not None:
                    memo["position"] = tgt_all
            e3 = e.reshape(b, nb, 3)
            if all_skip and gsw is None:  # all blocks grouped (sel = all), unit weights
                err_all = np.subtract(tgt_all, s_all, e3)
            else:
                err_all = tgt_all - s_all
                e3[:, sel] = err_all if gsw is None else gsw * err_all
            bn[:, sel] = np.sqrt(np.add.reduce(err_all * err_all, axis=-1))
            if jac is not None:
                # columns w_d × (x − p_d) for every goal x and DOF d, (b, Gp, n, 3),
                # by the component formula (a × b)_i = a_{i+1} b_{i+2} − a_{i+2} b_{i+1}
                ref5 = tgt_all[..., _CYC] if target_based else s5
                d = ref5[:, :, None] - pw[:, None, :, :, 0]  # (b, Gp, n, 5)
                w4 = pw[:, None, :, :, 1]
                cols_all = w4[..., 1:4] * d[..., 2:5] - w4[..., 2:5] * d[..., 1:4]
                cols_all = cols_all.swapaxes(-1, -2)  # (b, Gp, 3, n)
                jac4 = jac.reshape(b, nb, 3, n)
                if isinstance(sel, slice):
                    np.multiply(cols_all, gmask, out=jac4[:, sel])
                else:
                    jac4[:, sel] = cols_all * gmask
        bi = 0
        for gi, goal in enumerate(() if all_skip else goals):
            _, node, kinds, sw, maskw, zero_point = per[gi]
            if skip[gi]:
                bi += len(kinds)
                continue
            gn = g[:, node]
            rj = gn[:, :3, :3]
            oj = gn[:, :3, 3]
            for kind in kinds:
                if grouped[bi]:
                    bi += 1
                    continue
                r0 = 3 * bi
                cols: FloatArray | None = None
                if kind is BlockKind.POSITION:
                    if zero_point:
                        s = oj
                    elif isinstance(goal, PositionGoal):
                        s = apply(rj, target(goal, goal.point)) + oj
                    else:
                        s = oj
                    tgt = target(goal, goal.position)  # type: ignore[union-attr]
                    err = tgt - s
                    if wt is not None and mt is not None:
                        ref = tgt if target_based else s
                        cols = mt - _skew(ref) @ wt
                elif kind is BlockKind.ROTATION:
                    rt = target(goal, goal.rotation, 2)  # type: ignore[union-attr]
                    axis, angle = matrix_to_axis_angle(rt @ np.swapaxes(rj, -1, -2))
                    err = axis * angle[:, None]
                    if wt is not None:
                        cols = _inv_right_jacobian(err) @ wt
                elif kind is BlockKind.DIRECTION:
                    assert isinstance(goal, DirectionGoal | PartialOrientationGoal)
                    a = apply(rj, target(goal, goal.axis))
                    err = target(goal, goal.direction) - a
                    if wt is not None:
                        cols = -(_skew(a) @ wt)
                else:
                    assert isinstance(goal, AimGoal)
                    a = apply(rj, target(goal, goal.axis))
                    o = apply(rj, target(goal, goal.origin)) + oj
                    v = target(goal, goal.target) - o
                    dist = np.sqrt(np.sum(v * v, axis=-1))
                    hit = dist < _MIN_AIM_DISTANCE
                    safe = np.where(hit, 1.0, dist)
                    u = np.where(hit[:, None], a, v / safe[:, None])
                    err = u - a
                    if wt is not None and mt is not None:
                        dv = mt - _skew(o) @ wt  # −∂v/∂q, (b, 3, n)
                        proj: FloatArray = dv - u[:, :, None] * (u[:, None, :] @ dv)
                        proj = np.where(hit[:, None, None], 0.0, proj / safe[:, None, None])
                        cols = proj - _skew(a) @ wt
                e[:, r0 : r0 + 3] = err if sw == 1.0 else sw * err
                if jac is not None and cols is not None:
                    np.multiply(cols, maskw, out=jac[:, r0 : r0 + 3, :])
                bn[:, bi] = np.sqrt(np.add.reduce(err * err, axis=-1))
                bi += 1
        gerr = bn if nb == len(goals) else np.maximum.reduceat(bn, starts, axis=1)
        return Evaluation(e, jac, gerr, blocks, g)

    def _evaluate_last(
        self,
        q: FloatArray,
        goals: Sequence[Goal],
        blocks: tuple[RowBlock, ...],
        pos: tuple[Any, ...],
        ws: tuple[Any, ...],
        rows: IntArray | None,
        jacobian: bool,
        target_based: bool,
        memo: dict[str, Any] | None,
    ) -> Evaluation:
        """:meth:`evaluate` for many rows when every goal is a position goal at a joint
        origin (one 3-row block per goal), batch-last: the same residual, Jacobian
        (w_d × (x − p_d), x the effector or, target-based, the target) and errors from
        the (N, 4, 3, B) axis frames of :meth:`_KinematicPlan.frames_last`, computing only
        the structurally non-zero (goal, DOF) columns and scattering them into J."""
        b = q.shape[0]
        n = self.n_dofs
        f = self._kin.frames_last(q, ws)
        _, gg, gnodes, gsw, _, (pg, pnode, flat, pw) = pos
        ng = len(gg)
        m = 3 * ng
        tgt = None if memo is None else memo.get("position_last")
        if tgt is None:
            tgt = np.empty((ng, 3, b))
            for i, gi in enumerate(gg):
                v = _goal_rows(goals[gi], goals[gi].position, rows, b)
                tgt[i] = v.T if v.ndim == 2 else v[:, None]
            if memo is not None:
                memo["position_last"] = tgt
        s = f[gnodes[:, 0], 3]  # (G, 3, b) effector positions
        err = tgt - s
        gerr = np.ascontiguousarray(np.sqrt(np.add.reduce(err * err, axis=1)).T)
        e = np.empty((b, m))
        e[...] = (err if gsw is None else gsw[:, :, None] * err).reshape(m, b).T
        jac = None
        if jacobian:
            ref = (tgt if target_based else s)[pg]  # (P, 3, b)
            wp = f[pnode, 2:]  # (P, 2, 3, b): DOF world axes and origins
            d = np.subtract(ref, wp[:, 1], out=ref)
            w = wp[:, 0]
            cols = np.empty((3, pg.size, b))
            for i, i1, i2 in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):  # w × d by components
                np.multiply(w[:, i1], d[:, i2], out=cols[i])
                cols[i] -= w[:, i2] * d[:, i1]
            if pw is not None:
                cols *= pw
            flat_j = np.zeros((b, m * n))
            flat_j[:, flat] = cols.reshape(-1, b).T
            jac = flat_j.reshape(b, m, n)
        kin = self._kin
        return Evaluation(e, jac, gerr, blocks, lambda: kin.standard_last(f, ws))

    def _batch(self, q: ArrayLike, goals: Sequence[Goal]) -> tuple[FloatArray, bool]:
        goals = goal_tuple(goals)
        qb, batched = self.check_q(q)
        sizes = {g._n for g in goals if g._n is not None}
        if len(sizes) > 1:
            raise ShapeMismatchError(f"batched goals must share one batch size, got {sizes}")
        if sizes:
            (nb,) = sizes
            if not batched:
                raise ShapeMismatchError(
                    f"goals are batched with N = {nb}; q must then have shape "
                    f"({nb}, {self.n_dofs}), got shape {np.shape(q)}"
                )
            if nb != qb.shape[0]:
                raise ShapeMismatchError(
                    f"goals are batched with N = {nb} but q has {qb.shape[0]} rows"
                )
        return qb, batched

    def errors(self, q: ArrayLike, goals: Sequence[Goal]) -> FloatArray:
        """Stacked weighted residual e = target − current, (m,) or (B, m) (module doc)."""
        qb, batched = self._batch(q, goals)
        ev = self.evaluate(qb, goals, jacobian=False)
        return ev.e if batched else ev.e[0]

    def jacobian(
        self, q: ArrayLike, goals: Sequence[Goal], *, target_based: bool = False
    ) -> FloatArray:
        """Stacked weighted Jacobian J = −∂e/∂q, (m, n_dofs) or (B, m, n_dofs), rows as in
        :meth:`errors`. ``target_based``: Buss's alternate Jacobian (module doc)."""
        qb, batched = self._batch(q, goals)
        ev = self.evaluate(qb, goals, target_based=target_based)
        assert ev.J is not None
        return ev.J if batched else ev.J[0]

    def goal_errors(self, q: ArrayLike, goals: Sequence[Goal]) -> FloatArray:
        """Unweighted error of each goal (largest 3-block norm; m or ≈ rad), (G,) / (B, G)."""
        qb, batched = self._batch(q, goals)
        ev = self.evaluate(qb, goals, jacobian=False)
        return ev.goal_error if batched else ev.goal_error[0]
