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
``G_j``. Degrees of freedom are rotational (radians) except the three translations of a
:class:`Free` joint (``R_j = T(t)·R(euler)``, metres); lengths are in the skeleton's
length unit (metres by convention). The joint's *origin* is the translation of ``G_j``
(it does not depend on a rotation ``R_j``; a Free joint's translation moves it).

The configuration vector ``q`` has :attr:`Skeleton.n_dofs` entries: joint by joint, for a
Hinge its angle, for a Ball its unlocked Euler angles in component order (x, y, z), for a
Free joint its translation (x, y, z) then its Euler angles (x, y, z) —
Blender's convention (:mod:`core.geometry.rotations`): order ``'XYZ'`` means ``R = Rz·Ry·Rx``.
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
  ``w_d`` its world angular-velocity axis, ``p_d`` its joint's origin. A translation DOF
  (of a :class:`Free` joint) has the column ``w_d`` (its world axis) in every position
  term and 0 in every rotation / direction term (it moves points, never turns axes).
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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import (
    InvalidGoalError,
    InvalidInputError,
    InvalidSkeletonError,
    ShapeMismatchError,
    finite_array,
    format_value,
)
from ..geometry.vec3 import norm_rows, row_max, skew, sum_squares
from ..goals import (
    AimGoal,
    DirectionGoal,
    Goal,
    OrientationGoal,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    batch_size,
)
from .joints import Ball, BoolArray, FloatArray, Free, Hinge, IntArray, Joint
from .kinematics import CYC, KinematicPlan
from .residuals import (
    RESIDUALS,
    BlockKind,
    Evaluation,
    GoalFrame,
    RowBlock,
    goal_kinds,
    goal_rows,
    rotation_columns,
    rotation_errors,
)

#: Goal-list structures whose evaluation plans a skeleton keeps (cleared when full).
_PLAN_CACHE_SIZE = 64


def goal_tuple(goals: Sequence[Goal], where: str = "goals") -> tuple[Goal, ...]:
    """``goals`` as a non-empty tuple of goal objects (:mod:`core.goals`).

    Raises InvalidGoalError for a single goal or None instead of a list, a non-goal entry,
    or an empty list."""
    if not isinstance(goals, list | tuple):
        raise InvalidGoalError(
            f"{where} must be a list or tuple of goals (e.g. [PositionGoal(...)]), got "
            f"{format_value(goals)}"
        )
    kinds = (
        PositionGoal,
        OrientationGoal,
        PoseGoal,
        PartialOrientationGoal,
        DirectionGoal,
        AimGoal,
    )
    for i, g in enumerate(goals):
        if not isinstance(g, kinds):
            raise InvalidGoalError(
                f"{where}[{i}] must be a goal (PositionGoal, OrientationGoal, PoseGoal, "
                f"PartialOrientationGoal, DirectionGoal, AimGoal), got {format_value(g)}"
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
    _kin: KinematicPlan = field(init=False, repr=False, compare=False)
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
                raise InvalidSkeletonError(f"joints[{i}] must be a Joint, got {format_value(jt)}")
            if jt.name in names:
                raise InvalidSkeletonError(
                    f"joint names must be unique; {format_value(jt.name)} is used by joints "
                    f"{names.index(jt.name)} and {i}"
                )
            names.append(jt.name)
            if jt.parent < -1 or jt.parent >= len(joints):
                raise InvalidSkeletonError(
                    f"joint {i} ({format_value(jt.name)}) has unknown parent index {jt.parent}; "
                    f"valid: -1 "
                    f"(root) or 0..{len(joints) - 1}"
                )
            if jt.parent >= i:
                raise InvalidSkeletonError(
                    f"joint {i} ({format_value(jt.name)}) has parent index {jt.parent} >= its "
                    f"own index; "
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
            elif isinstance(d, Free):
                lo += np.concatenate([d.translation_lower, d.lower]).tolist()
                hi += np.concatenate([d.translation_upper, d.upper]).tolist()
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
        object.__setattr__(self, "_kin", KinematicPlan(joints, slices, start))
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

    @property
    def kinematic_plan(self) -> KinematicPlan:
        """The forward-kinematics plan of the joints (:class:`KinematicPlan`)."""
        plan: KinematicPlan = self._kin
        return plan

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
                    f"skeleton has no joint named {format_value(joint)}; joints are "
                    f"{list(self.names)}"
                )
            return self.names.index(joint)
        if isinstance(joint, int | np.integer) and not isinstance(joint, bool):
            if -n <= int(joint) < n:
                return int(joint) % n
            raise InvalidSkeletonError(
                f"joint index {int(joint)} out of range for a skeleton of {n} joints "
                f"(valid: {-n}..{n - 1})"
            )
        raise InvalidSkeletonError(
            f"joint must be an int index or a str name, got {format_value(joint)}"
        )

    def check_q(self, q: ArrayLike, name: str = "q") -> tuple[FloatArray, bool]:
        """``q`` as a (B, n_dofs) float array and whether it was batched.

        Raises:
            InvalidInputError: non-numeric, non-finite, or not of shape (n_dofs,) /
                (B, n_dofs).
        """
        arr = finite_array(q, name, InvalidInputError)
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
        arr = finite_array(q, "q", InvalidInputError)
        if arr.ndim < 1 or arr.shape[-1] != self.n_dofs:
            raise InvalidInputError(
                f"q must have shape (…, {self.n_dofs}) for this skeleton, got {arr.shape}"
            )
        return self.clip_unchecked(arr)

    def clip_unchecked(self, q: FloatArray) -> FloatArray:
        """:meth:`clip` without validation, for the solvers' own arrays."""
        out: FloatArray = np.minimum(np.maximum(q, self.lower), self.upper)
        return out

    _clip = clip_unchecked

    # ------------------------------------------------------------------ kinematics

    def kinematics(self, q: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Global rotations (B, J, 3, 3), origins (B, J, 3), DOF world axes (B, n, 3) and
        DOF origins (B, n, 3) for batched ``q`` (B, n) (float64, unvalidated)."""
        kin = self._kin  # (kinematics_of copies what it picks: the frames may be reused)
        return self.kinematics_of(kin.frames(q, kin.shared_workspace(q.shape[0])))

    _kinematics = kinematics

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
        rot, org, _, _ = self.kinematics(qb)
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
            kinds = goal_kinds(goal)
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

    def goal_plan(self, goals: Sequence[Goal]) -> tuple[tuple[RowBlock, ...], list[Any]]:
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

    _goal_plan = goal_plan
    goal_joint = _goal_joint

    def _new_goal_plan(self, goals: Sequence[Goal]) -> tuple[tuple[RowBlock, ...], list[Any]]:
        """The plan of :meth:`_goal_plan`, computed (validates the goals' joints)."""
        blocks = self.blocks(goals)
        per: list[Any] = []
        masks: list[FloatArray] = []  # per goal: √weight on the DOFs that move it, else 0
        for gi, goal in enumerate(goals):
            j = self._goal_joint(goal, gi)
            sw = float(np.sqrt(goal.weight))
            maskw = sw * self.ancestors[self.dof_joint, j].astype(np.float64)
            masks.append(maskw)
            zero_point = (
                isinstance(goal, PositionGoal)
                and np.ndim(goal.point) == 1
                and not np.any(goal.point)
            )
            per.append(
                (
                    j,
                    int(self._kin.joint_node[j]),
                    goal_kinds(goal),
                    sw,
                    None if np.all(maskw == 1.0) else maskw,  # None: no mask to apply
                    zero_point,
                )
            )
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
            gmask = np.stack([masks[gi] for gi in gg])  # (Gp, n)
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
                None if np.all(gmask == 1.0) else gmask[:, None, :],  # None: no mask
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
        # ROTATION blocks, when there are several: their errors are computed stacked
        rot_blocks = [i for i, kind in enumerate(kinds_flat) if kind is BlockKind.ROTATION]
        rot: tuple[Any, ...] | None = None
        if len(rot_blocks) > 1:
            block_goal = [gi for gi in range(len(goals)) for _ in per[gi][2]]
            rot_goals = [block_goal[i] for i in rot_blocks]
            rot = (
                {bi: k for k, bi in enumerate(rot_blocks)},
                tuple(rot_goals),
                np.array([per[gi][1] for gi in rot_goals], dtype=np.intp),
            )
        per.append(
            (
                pos,
                grouped.tolist(),
                np.array(starts, dtype=np.intp),
                skip,
                all(skip),
                need_mt,
                rot,
            )
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
        columns: IntArray | None = None,
    ) -> Evaluation:
        """Residual, Jacobian and per-goal errors for batched ``q`` (b, n_dofs).

        ``rows`` selects which rows of batched goal targets belong to the b rows of ``q``
        (default: all B rows, b = B, or shared targets). ``memo``: an empty dict the
        caller keeps across calls with the same ``goals`` (and goal arrays left
        unchanged) to reuse the gathered targets and the forward-kinematics buffers
        (:meth:`KinematicPlan.workspace`; ``Evaluation.frames`` is then overwritten by
        the next call with the same memo — e, J and goal_error are always new arrays);
        it is refilled whenever ``rows`` is a different object. ``columns``: the DOFs
        whose Jacobian columns are wanted, in that order (J is then (b, m, len(columns));
        default all); each column by the full Jacobian's formula (equal to it up to
        rounding: small matrix products of another width may round differently). Used by
        the solvers; most callers want :meth:`errors` / :meth:`jacobian` /
        :meth:`goal_errors`.
        """
        blocks, per = self.goal_plan(goals)
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
        pos, grouped, starts, skip, all_skip, need_mt, rot = per[-1]
        if ws[1] and all_skip:
            ev = self._evaluate_last(
                q, goals, blocks, pos, ws[2], rows, jacobian, target_based, memo
            )
            if columns is None or ev.J is None:
                return ev
            return Evaluation(ev.e, ev.J[:, :, columns], ev.goal_error, blocks, ev.source, ev.last)
        dof_cyc, prismatic, masks, gmask = (
            (kin.dof_cyc, kin.prismatic, None, None if pos is None else pos[4])
            if columns is None
            else self._column_plan(per, columns)
        )
        if columns is not None:
            n = len(columns)
        g = kin.frames(q, ws)
        m = 3 * len(blocks)
        e = np.empty((b, m))
        jac = np.empty((b, m, n)) if jacobian else None
        wt: FloatArray | None = None
        mt: FloatArray | None = None
        if jacobian:
            # (b, n, 5, 2): DOF origins p and axes w, components x y z x y (CYC)
            pw = g[:, dof_cyc, CYC, 3:]
            if not all_skip:
                w = pw[..., :3, 1]  # (b, n, 3) DOF world axes
                wt = np.swapaxes(w, -1, -2)  # (b, 3, n)
                if need_mt:
                    # (b, 3, n): p_d × w_d, so that w_d × (x − p_d) = mt − [x]× wt.
                    mt = np.swapaxes((skew(pw[..., :3, 0]) @ w[..., None])[..., 0], -1, -2)
                if prismatic.size:
                    # translation DOFs: no turning (wt = 0), the axis in position terms
                    if mt is not None:
                        mt[..., prismatic] = wt[..., prismatic]
                    wt = wt.copy()
                    wt[..., prismatic] = 0.0

        nb = len(blocks)
        bn = np.empty((b, nb))  # per-block error norms
        if pos is not None:
            sel, gg, gnodes, gsw, _, _ = pos
            s5 = g[:, gnodes, CYC, 3]  # (b, Gp, 5) joint origins, x y z x y
            s_all = s5[..., :3]
            tgt_all = None if memo is None else memo.get("position")
            if tgt_all is None or tgt_all.shape != s_all.shape:
                tgt_all = np.empty(s_all.shape)
                for i, gi in enumerate(gg):
                    tgt_all[:, i] = goal_rows(goals[gi], goals[gi].position, rows, b)
                if memo is not None:
                    memo["position"] = tgt_all
            e3 = e.reshape(b, nb, 3)
            if all_skip and gsw is None:  # all blocks grouped (sel = all), unit weights
                err_all = np.subtract(tgt_all, s_all, e3)
            else:
                err_all = tgt_all - s_all
                e3[:, sel] = err_all if gsw is None else gsw * err_all
            bn[:, sel] = norm_rows(err_all)
            if jac is not None:
                # columns w_d × (x − p_d) for every goal x and DOF d, (b, Gp, n, 3),
                # by the component formula (a × b)_i = a_{i+1} b_{i+2} − a_{i+2} b_{i+1}
                ref5 = tgt_all[..., CYC] if target_based else s5
                d = ref5[:, :, None] - pw[:, None, :, :, 0]  # (b, Gp, n, 5)
                w4 = pw[:, None, :, :, 1]
                jac4 = jac.reshape(b, nb, 3, n)
                if gmask is None and isinstance(sel, slice) and not prismatic.size:
                    # unmasked columns straight into J's rows (b, Gp, n, 3 view)
                    cols_all = np.multiply(w4[..., 1:4], d[..., 2:5])
                    np.subtract(
                        cols_all, w4[..., 2:5] * d[..., 1:4], out=jac4[:, sel].swapaxes(-1, -2)
                    )
                else:
                    cols_all = w4[..., 1:4] * d[..., 2:5] - w4[..., 2:5] * d[..., 1:4]
                    if prismatic.size:  # translation DOFs: the axis itself
                        cols_all[:, :, prismatic] = w4[:, :, prismatic, :3]
                    cols_all = cols_all.swapaxes(-1, -2)  # (b, Gp, 3, n)
                    if gmask is None:
                        jac4[:, sel] = cols_all
                    elif isinstance(sel, slice):
                        np.multiply(cols_all, gmask, out=jac4[:, sel])
                    else:
                        jac4[:, sel] = cols_all * gmask
        bi = 0
        frame = GoalFrame(rows, b, wt, mt, target_based)
        stacked = {} if rot is None else self._rotation_errors(goals, rot, g, rows)
        for gi, goal in enumerate(() if all_skip else goals):
            _, node, kinds, sw, maskw, zero_point = per[gi]
            if masks is not None:
                maskw = masks[gi]
            if skip[gi]:
                bi += len(kinds)
                continue
            gn = g[:, node]
            frame.rotation = gn[:, :3, :3]
            frame.origin = gn[:, :3, 3]
            frame.zero_point = zero_point
            for kind in kinds:
                if grouped[bi]:
                    bi += 1
                    continue
                r0 = 3 * bi
                norm = None
                if bi in stacked:
                    err, norm = stacked[bi]
                    cols = rotation_columns(err, frame)
                else:
                    err, cols = RESIDUALS[kind](goal, frame)
                e[:, r0 : r0 + 3] = err if sw == 1.0 else sw * err
                if jac is not None and cols is not None:
                    if maskw is None:
                        jac[:, r0 : r0 + 3, :] = cols
                    else:
                        np.multiply(cols, maskw, out=jac[:, r0 : r0 + 3, :])
                bn[:, bi] = norm_rows(err) if norm is None else norm
                bi += 1
        if nb == len(goals):
            gerr = bn
        elif len(goals) == 1:  # one goal of two blocks
            gerr = row_max(bn)[:, None]
        else:
            gerr = np.maximum.reduceat(bn, starts, axis=1)
        return Evaluation(e, jac, gerr, blocks, g)

    def _rotation_errors(
        self,
        goals: Sequence[Goal],
        rot: tuple[Any, ...],
        g: FloatArray,
        rows: IntArray | None,
    ) -> dict[int, tuple[FloatArray, FloatArray]]:
        """Per ROTATION block of the goal plan (``rot``: their block positions, goals and
        joint nodes) its :func:`rotation_residual` error (b, 3) and its norm (b,), from the
        frames ``g`` (b, N, 3+, 5): all blocks by one stacked call (norms as
        :func:`norm_rows` of each, summed in the same order). The joint rotations
        are copied into a buffer strided as the frames are (every other column), so that
        R_t R_jᵀ takes the same matrix-product loop as one goal's and each error is the
        same to the bit."""
        _, gis, nodes = rot
        b = g.shape[0]
        rj = np.empty((len(gis), b, 3, 6))[..., ::2]
        np.copyto(rj, g[:, nodes, :3, :3].swapaxes(0, 1))
        rt = np.empty((len(gis), b, 3, 3))
        for k, gi in enumerate(gis):
            rt[k] = goal_rows(goals[gi], goals[gi].rotation, rows, b, 2)
        err = rotation_errors(rt, rj)
        norm = norm_rows(err)
        return {bi: (err[k], norm[k]) for bi, k in rot[0].items()}

    def _column_plan(
        self, per: list[Any], columns: IntArray
    ) -> tuple[IntArray, IntArray, list[FloatArray | None], FloatArray | None]:
        """:meth:`evaluate`'s per-DOF constants restricted to ``columns``: the DOF nodes
        (n', 1), the translation DOFs' positions among the columns, each goal's mask and
        the grouped goals' masks (None where all ones); cached for the last goal plan
        and columns seen."""
        key = columns.tobytes()
        hit = self._goal_cache.get("columns")
        if hit is not None and hit[0] is per and hit[1] == key:
            return hit[2]  # type: ignore[no-any-return]
        kin = self._kin
        prismatic = np.flatnonzero(np.isin(columns, kin.prismatic))
        masks: list[FloatArray | None] = []
        for item in per[:-1]:
            maskw = item[4]
            masks.append(None if maskw is None or np.all(maskw[columns] == 1.0) else maskw[columns])
        pos = per[-1][0]
        gmask = None if pos is None or pos[4] is None else pos[4][..., columns]
        if gmask is not None and np.all(gmask == 1.0):
            gmask = None
        out = (kin.dof_cyc[columns], prismatic, masks, gmask)
        self._goal_cache["columns"] = (per, key, out)
        return out

    def sum_squared_error(
        self,
        q: FloatArray,
        goals: Sequence[Goal],
        *,
        rows: IntArray | None = None,
        memo: dict[str, Any] | None = None,
    ) -> FloatArray:
        """(b,) ‖e‖² of :meth:`evaluate`'s residual (``rows``, ``memo`` as there), the same
        values as ``sum_squares(evaluate(q, goals, jacobian=False).e)``; on the batch-last
        position path without forming e, its row layout or the per-goal errors."""
        blocks, per = self.goal_plan(goals)
        if memo is None:
            memo = {}  # this call's: its workspace serves evaluate() below too
        if memo.get("rows", memo) is not rows:
            memo.clear()
            memo["rows"] = rows
        b = q.shape[0]
        ws = memo.get("frames")
        if ws is None or ws[0] != b:
            ws = memo["frames"] = self._kin.workspace(b)
        pos, *_, all_skip, _, _ = per[-1]
        if not (ws[1] and all_skip):
            ev = self.evaluate(q, goals, rows=rows, jacobian=False, memo=memo)
            return sum_squares(ev.e)
        f = self._kin.frames_last(q, ws[2])
        _, gg, gnodes, gsw, _, _ = pos
        err = self._targets_last(goals, gg, rows, b, memo) - f[gnodes[:, 0], 3]  # (G, 3, b)
        if gsw is not None:
            err *= gsw[:, :, None]
        m = 3 * len(gg)
        if m >= 8:  # numpy sums 8 or more entries pairwise: as sum_squares does, on e
            return sum_squares(np.ascontiguousarray(err.reshape(m, b).T))
        # e's entries of a row in its order (goal, then x y z), summed left to right as
        # sum_squares sums fewer than 8
        sq = np.multiply(err, err, out=err).reshape(m, b)
        out: FloatArray = np.add.reduce(sq, axis=0)
        return out

    def _targets_last(
        self,
        goals: Sequence[Goal],
        gg: Sequence[int],
        rows: IntArray | None,
        b: int,
        memo: dict[str, Any] | None,
    ) -> FloatArray:
        """(G, 3, b) targets of the position goals ``gg`` for the batch-last path (kept
        in ``memo``)."""
        tgt: FloatArray | None = None if memo is None else memo.get("position_last")
        if tgt is None:
            tgt = np.empty((len(gg), 3, b))
            for i, gi in enumerate(gg):
                v = goal_rows(goals[gi], goals[gi].position, rows, b)  # type: ignore[union-attr]
                tgt[i] = v.T if v.ndim == 2 else v[:, None]
            if memo is not None:
                memo["position_last"] = tgt
        return tgt

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
        the (N, 4, 3, B) axis frames of :meth:`KinematicPlan.frames_last`, computing only
        the structurally non-zero (goal, DOF) columns and scattering them into J."""
        b = q.shape[0]
        n = self.n_dofs
        f = self._kin.frames_last(q, ws)
        _, gg, gnodes, gsw, _, (pg, pnode, flat, pw) = pos
        ng = len(gg)
        m = 3 * ng
        tgt = self._targets_last(goals, gg, rows, b, memo)
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
        return Evaluation(e, jac, gerr, blocks, lambda: kin.standard_last(f, ws), f)

    def check_batch(self, q: ArrayLike, goals: Sequence[Goal]) -> tuple[FloatArray, bool]:
        """``q`` as (B, n) and whether it was batched (:meth:`check_q`), checked against the
        goals' batch size (:func:`~core.goals.batch_size`; batched goals need a batched
        ``q`` with as many rows). Raises ShapeMismatchError naming both sizes."""
        goals = goal_tuple(goals)
        qb, batched = self.check_q(q)
        sizes = {n for n in map(batch_size, goals) if n is not None}
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

    _batch = check_batch

    def errors(self, q: ArrayLike, goals: Sequence[Goal]) -> FloatArray:
        """Stacked weighted residual e = target − current, (m,) or (B, m) (module doc)."""
        qb, batched = self.check_batch(q, goals)
        ev = self.evaluate(qb, goals, jacobian=False)
        return ev.e if batched else ev.e[0]

    def jacobian(
        self, q: ArrayLike, goals: Sequence[Goal], *, target_based: bool = False
    ) -> FloatArray:
        """Stacked weighted Jacobian J = −∂e/∂q, (m, n_dofs) or (B, m, n_dofs), rows as in
        :meth:`errors`. ``target_based``: Buss's alternate Jacobian (module doc)."""
        qb, batched = self.check_batch(q, goals)
        ev = self.evaluate(qb, goals, target_based=target_based)
        assert ev.J is not None
        return ev.J if batched else ev.J[0]

    def goal_errors(self, q: ArrayLike, goals: Sequence[Goal]) -> FloatArray:
        """Unweighted error of each goal (largest 3-block norm; m or ≈ rad), (G,) / (B, G)."""
        qb, batched = self.check_batch(q, goals)
        # (the goal errors are new arrays: the frames may be this thread's kept buffers)
        memo = {"rows": None, "frames": self._kin.shared_workspace(qb.shape[0])}
        ev = self.evaluate(qb, goals, jacobian=False, memo=memo)
        return ev.goal_error if batched else ev.goal_error[0]
