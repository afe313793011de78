"""requests: a limb's settings and reads → a typed core request.

The goal is expressed in the frame the upper bone's local rotation acts in, as Blender
evaluated it (:func:`core.basis_frame`: parent chain, pose scale, inherit modes and
constraints above the limb included), and the limb's links (upper → lower → end) are
taken from the evaluated pose too (:func:`core.limb_links`: helper bones between the
limb's bones, pose scale on its bones). Where those links are similarities the rigid
core model *is* Blender's evaluation (``LimbRequest.linked``); where not (a stretched
segment), the request is still the best model and the result is verified on the
depsgraph (:mod:`.verify`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...core import (
    AimGoal,
    Limb,
    PartialOrientationGoal,
    PoseGoal,
    PositionGoal,
    SwivelStrategy,
    affine_inverse,
    basis_rotation,
    goal_in_frame,
    hinged_end,
    hinged_frame,
    limb_links,
    orthonormalize_yz,
    pose_goal_rows,
    similarity_scale,
    transform_points,
    translation,
    trusted_goal,
)
from .read import LimbRead, made

FloatArray = NDArray[np.float64]

#: Goal types the limb path handles.
SUPPORTED_GOALS = ("POSITION", "POSE", "PARTIAL", "AIM")
#: Goal types whose solution sets the end bone's rotation (the others hold it).
WRIST_GOALS = ("POSE", "PARTIAL")
#: ``axis`` enum items → unit axis in the end bone's frame.
AXES = {
    "X": (1.0, 0.0, 0.0),
    "Y": (0.0, 1.0, 0.0),
    "Z": (0.0, 0.0, 1.0),
    "NEG_X": (-1.0, 0.0, 0.0),
    "NEG_Y": (0.0, -1.0, 0.0),
    "NEG_Z": (0.0, 0.0, -1.0),
}


class VaryingLinks(ValueError):
    """The limb's links change within a batch (an animated helper bone or segment
    scale): the frames are solved one by one instead."""


def limb_goal(kind: str, axis_name: str, g: Any) -> Any:
    """The core goal of a limb for goal frame(s) ``g`` ((4, 4) or batched (N, 4, 4))."""
    axis = np.array(AXES[axis_name])
    p, r = g[..., :3, 3], g[..., :3, :3]
    if kind == "POSE":
        return PoseGoal(position=p, rotation=r)
    if kind == "PARTIAL":  # the end bone's axis along the target's same axis
        return PartialOrientationGoal(position=p, axis=axis, direction=r @ axis)
    if kind == "AIM":  # the end bone's axis ray through the target's origin
        return AimGoal(target=p, axis=axis)
    return PositionGoal(position=p)


def limb_kwargs(settings: Any, wrist: Any, elbow_target: Any, swivel: Any,
                swivel_mode: str | None = None) -> dict[str, Any]:
    """solve_limb keyword arguments (single or batched values); ``swivel_mode``: the
    settings' if read."""
    kwargs: dict[str, Any] = {}
    if wrist is not None:
        kwargs["wrist"] = wrist
    if elbow_target is not None:
        kwargs["elbow_target"] = elbow_target
    else:
        kwargs["swivel"] = swivel
        if (settings.swivel_mode if swivel_mode is None else swivel_mode) == "LIMITS_MIDPOINT":
            kwargs["strategy"] = SwivelStrategy.MIDPOINT
    return kwargs


@dataclass(frozen=True, eq=False)
class LimbRequest:
    """A limb solve ready for :func:`core.solve_limb` (N frames, or one: then unbatched).

    Attributes:
        kind, axis: the goal type and the end-bone axis name (settings' ``goal_type``,
            ``axis``).
        limb: the core limb (the rig's, or one with the evaluated links).
        goal, kwargs: ``solve_limb(limb, goal, **kwargs)``; ``goal`` is the core goal of
            ``goal_frame``, made when first asked for (a request whose goal is replaced
            before it is solved never builds it).
        frame: (N, 4, 4) world frame the upper bone's rotation acts in (may scale/shear).
        goal_frame: (N, 4, 4) the goal asked for, in ``frame`` coordinates (rigid).
        target_goal: (N, 4, 4) the target in ``frame`` coordinates (rigid): what must be
            reached (``goal_frame`` differs only while refining, see :mod:`.verify`).
        target: (N, 4, 4) the target's world frame, orthonormalised (Y first).
        linked: (N,) whether the limb's links are similarities on that frame (the rigid
            model is then exactly Blender's evaluation of the limb).
        frame_scale: (N,) the frame's uniform scale, or None when it is sheared or
            non-uniformly scaled on some frame.
        single: one frame (``goal`` and ``kwargs`` unbatched).
        wrist: the held end-bone rotation (POSITION / AIM goals) or None.
        frame_inverse: ``frame``'s inverse (verifications map evaluated end bones back
            into the frame with it).
        end_frame: (N, 3, 3) when the end bone does not inherit rotation: the rotation its
            local rotation acts in (``frame`` coordinates), which does not turn with the
            limb; the solved end orientation is then written through it
            (:func:`end_rotation`), and an aim goal holds the wrist the end bone shows
            relative to the lower bone (:func:`core.hinged_end`). Else None.
        lower_frame: (N, 3, 3) likewise for a lower bone that does not inherit rotation
            (:func:`lower_rotation`), else None.
    """

    kind: str
    axis: str
    limb: Limb
    kwargs: dict[str, Any]
    frame: FloatArray
    goal_frame: FloatArray
    target_goal: FloatArray
    target: FloatArray
    linked: NDArray[np.bool_]
    wrist: FloatArray | None
    frame_scale: FloatArray | None = None
    single: bool = True
    #: (N, 4, 4) ``affine_inverse(frame)`` (world → frame coordinates).
    frame_inverse: FloatArray | None = None
    end_frame: FloatArray | None = None
    lower_frame: FloatArray | None = None

    @cached_property
    def goal(self) -> Any:
        if self.single and self.goal_frame is self.target_goal and self.kind in (
                "POSE", "POSITION"):
            # the target's goal: goal_in_frame's rigid output, already in validated form
            g = self.goal_frame[0]
            return trusted_goal(g[:3, 3], g[:3, :3] if self.kind == "POSE" else None)
        return limb_goal(self.kind, self.axis,
                         self.goal_frame[0] if self.single else self.goal_frame)

    def _but(self, **changes: Any) -> LimbRequest:
        """A copy with some fields changed (the goal made anew), without re-running the
        dataclass ``__init__``: a per-frame request is copied up to three times."""
        out = object.__new__(LimbRequest)
        out.__dict__.update(self.__dict__)
        out.__dict__.pop("goal", None)
        out.__dict__.update(changes)
        return out


def _close(x: FloatArray, y: Any, tol: float) -> bool:
    return bool(np.abs(x - np.asarray(y)).max() <= tol)


def links_limb(rig: Any, a: FloatArray, b: FloatArray) -> Limb:
    """The core limb for evaluated links ``a``, ``b`` ((N, 4, 4)): the rig's own when they
    match its rest links (to float32 rounding), else one limb with those links (the same
    hinge axis, limits and swivel reference, cached on the rig); :class:`VaryingLinks`
    when they change within the batch."""
    limb = rig.limb
    tol = 1e-6 * max(1.0, float(limb.length))
    if _close(a, limb.a, tol) and _close(b, limb.b, tol):
        return limb  # type: ignore[no-any-return]
    if not (_close(a, a[0], tol) and _close(b, b[0], tol)):
        raise VaryingLinks("the limb's links change within the frame range")
    key = (np.round(a[0], 9).tobytes(), np.round(b[0], 9).tobytes())
    hit = rig.posed_limbs.get(key)
    if hit is None:
        hit = Limb(a=a[0], b=b[0], elbow_axis=rig.hinge_axis, limits=limb.limits,
                   swivel_reference=limb.swivel_reference)
        if len(rig.posed_limbs) > 64:
            rig.posed_limbs.clear()
        rig.posed_limbs[key] = hit
    return hit  # type: ignore[no-any-return]


def frame_and_links(rig: Any, read: LimbRead
                    ) -> tuple[FloatArray, FloatArray | None, FloatArray | None,
                               NDArray[np.bool_]]:
    """(frame (N, 4, 4) world, links a, b (N, 4, 4) or None for the rig's rest links,
    linked (N,)) of a limb's reads: the frame the upper bone's rotation acts in, composed
    from its parent when the upper bone follows it plainly (free of the limb's own pose,
    even by float32 rounding), else taken from its evaluated pose."""
    if read.pose is None or read.basis is None:
        assert read.parent is not None
        return (read.world @ read.parent @ _upper_offset(rig, read.location), None, None,
                np.ones(len(read), dtype=bool))
    frame_arm, a, b, linked = limb_links(read.pose, read.basis)
    if read.parent is not None:
        frame_arm = read.parent @ _upper_offset(rig, read.location)
    return read.world @ frame_arm, a, b, linked


def _upper_offset(rig: Any, location: FloatArray) -> FloatArray:
    """parent rest⁻¹ · upper rest · T(location) (the rig's rest offset when unmoved)."""
    if not location.any():
        return rig.rest_offset  # type: ignore[no-any-return]
    return rig.rest_offset @ translation(location)  # type: ignore[no-any-return]


def limb_request(settings: Any, rig: Any, read: LimbRead,
                 goal_frame: FloatArray | None = None) -> LimbRequest:
    """The core request of a limb for its reads (see the module docstring).

    ``goal_frame``: ask for this goal (frame coordinates) instead of the target (the
    refinement of :mod:`.verify`). Raises :class:`VaryingLinks`, ``core.LimberError``.
    """
    frame, inverse, scale, a, b, linked = _frame_parts(rig, read)
    if inverse is None:
        inverse = affine_inverse(frame)
    target = orthonormalize_yz(read.target)
    target_goal = goal_in_frame(frame, target, rigid_target=True, inverse=inverse)
    g = target_goal if goal_frame is None else goal_frame
    limb = rig.limb if a is None or b is None else links_limb(rig, a, b)
    kind = settings.goal_type
    wrist = (basis_rotation(read.end_basis)
             if kind not in WRIST_GOALS and read.end_basis is not None else None)
    end_frame = None
    if read.end_pose is not None:  # an end bone that does not inherit rotation
        held, end_frame = hinged_end(inverse @ read.world, read.end_pose,
                                     np.asarray(limb.b)[:3, :3])
        wrist = held if kind == "AIM" else wrist
    lower_frame = None
    if read.lower_rest is not None:  # a lower bone that does not inherit rotation
        lower_frame = hinged_frame(inverse @ read.world, read.lower_rest)
    elbow = None
    if read.pole is not None:
        elbow = transform_points(inverse, read.pole)
    single = len(read) == 1

    def pick(x: FloatArray | None) -> FloatArray | None:
        return x[0] if single and x is not None else x

    swivel = float(read.swivel[0]) if single else read.swivel
    kwargs = limb_kwargs(settings, pick(wrist), pick(elbow), swivel)
    return made(  # type: ignore[no-any-return]
        LimbRequest, kind=kind, axis=settings.axis, limb=limb, kwargs=kwargs, frame=frame,
        goal_frame=g, target_goal=target_goal, target=target, linked=linked, wrist=wrist,
        frame_scale=scale, single=single, frame_inverse=inverse, end_frame=end_frame,
        lower_frame=lower_frame)


def lower_rotation(req: LimbRequest, sol: Any) -> FloatArray | None:
    """The lower bone's local rotation(s) to write where it does not inherit rotation:
    the rotation that shows the model's lower-bone orientation (:func:`core.hinged_frame`);
    None where the hinge angle is written as it is."""
    if req.lower_frame is None:
        return None
    eye = np.eye(3)
    lower = req.limb.frames(sol.shoulder, sol.elbow, eye)[..., 1, :3, :3]
    acts = req.lower_frame[0] if req.single else req.lower_frame
    return np.swapaxes(acts, -1, -2) @ lower  # type: ignore[no-any-return]


def end_rotation(req: LimbRequest, sol: Any) -> FloatArray | None:
    """The end bone's local rotation(s) to write for a solution of the request, or None
    (the goal holds it): the solved wrist, or where the end bone does not inherit rotation
    the rotation that shows the model's end orientation (:func:`core.hinged_end`; also
    for aim goals, whose wrist is held relative to the lower bone)."""
    if req.end_frame is None:
        return sol.wrist if req.kind in WRIST_GOALS else None
    if req.kind not in WRIST_GOALS and req.kind != "AIM":
        return None
    wrist = sol.wrist if req.wrist is None else (req.wrist[0] if req.single else req.wrist)
    end = req.limb.forward(sol.shoulder, sol.elbow, wrist)[..., :3, :3]
    acts = req.end_frame[0] if req.single else req.end_frame
    return np.swapaxes(acts, -1, -2) @ end  # type: ignore[no-any-return]


def plain_request(settings: Any, rig: Any, read: LimbRead
                  ) -> tuple[Any, dict[str, Any], float] | None:
    """What :func:`limb_request` gives a one-frame read whose frame is composed from the
    upper bone's parent (``read.pose`` None) and is a similarity: (the goal, the
    :func:`core.solve_limb` keyword arguments, the frame's uniform scale), the same values
    from the same functions, without the :class:`LimbRequest` around them (a live solve of
    a proven limb needs nothing else). None for any other read (then use
    :func:`limb_request`)."""
    parts = _plain_parts(rig, read)
    if parts is None:
        return None
    frame, inverse, scale = parts
    g = goal_in_frame(frame, orthonormalize_yz(read.target), rigid_target=True,
                      inverse=inverse)[0]
    kind = settings.goal_type
    goal = trusted_goal(g[:3, 3], g[:3, :3] if kind == "POSE" else None)
    wrist = (basis_rotation(read.end_basis)[0]
             if kind not in WRIST_GOALS and read.end_basis is not None else None)
    elbow = None if read.pole is None else transform_points(inverse, read.pole)[0]
    return goal, limb_kwargs(settings, wrist, elbow, float(read.swivel[0])), float(scale[0])


def pose_goal_floats(settings: Any, inverse: FloatArray, scale: float,
                     inverse_rows: Sequence[Sequence[float]],
                     target: Sequence[Sequence[float]], pole: FloatArray | None,
                     swivel: float, swivel_mode: str | None = None) -> tuple[
        tuple[float, float, float], Any, dict[str, Any], float]:
    """:func:`plain_request` of a POSE limb with the goal as Python floats, from its parts:
    (position, rotation rows, the :func:`core.solve_limb` keyword arguments, the frame's
    uniform scale), the goal from :func:`core.pose_goal_rows` (``goal_in_frame``'s values
    bit for bit), for :func:`core.solve_pose_floats`. The parts: the frame's inverse,
    uniform scale and inverse as rows of floats (of :func:`plain_frame_parts`), the
    target's world frame as rows of floats, the pole's world position ((1, 3) or None) and
    the swivel angle (``swivel_mode``: the settings' if read). Raises ``ValueError`` for a
    degenerate target frame (as :func:`plain_request` does)."""
    position, rotation = pose_goal_rows(inverse_rows, target)
    elbow = None if pole is None else transform_points(inverse, pole)[0]
    return position, rotation, limb_kwargs(settings, None, elbow, swivel, swivel_mode), scale


def plain_frame_parts(rig: Any, read: LimbRead, key: Any = None
                      ) -> tuple[FloatArray, float, list[list[float]]] | None:
    """The (inverse, uniform scale, inverse as rows of floats) of a one-frame read's frame
    as :func:`pose_goal_floats` uses them, None where :func:`plain_request` gives None.
    ``key``: what else identifies the read's world matrix, parent pose and upper-bone
    location (e.g. their float32 bytes as Blender stores them): the parts are kept on the
    rig under it too, for :func:`kept_frame_parts`."""
    parts = _plain_parts(rig, read)
    if parts is None:
        return None
    inverse = parts[1]
    out = (inverse, float(parts[2][0]), inverse[0].tolist())
    if key is not None:
        if len(rig.frames) >= _KEPT_FRAMES:
            rig.frames.clear()
        rig.frames[key] = out
    return out


def kept_frame_parts(rig: Any, key: Any) -> tuple[FloatArray, float, list[list[float]]] | None:
    """The parts :func:`plain_frame_parts` kept under ``key``, or None."""
    return rig.frames.get(key)  # type: ignore[no-any-return]


def _plain_parts(rig: Any, read: LimbRead) -> tuple[FloatArray, FloatArray, FloatArray] | None:
    """The (frame, inverse, uniform scale) of a one-frame read whose frame is composed from
    the upper bone's parent and is a similarity with rest links; None otherwise."""
    if read.pose is not None or read.parent is None or len(read) != 1:
        return None
    frame, inverse, scale, a, _, _ = _frame_parts(rig, read)
    if scale is None or inverse is None or a is not None:
        return None
    return frame, inverse, scale


#: Frames kept per rig by :func:`_frame_parts` (a handful: the parent's pose of the last
#: frames; a parent animated over the range makes each frame new anyway).
_KEPT_FRAMES = 4


def _frame_parts(rig: Any, read: LimbRead) -> tuple[
        FloatArray, FloatArray | None, FloatArray | None, FloatArray | None,
        FloatArray | None, NDArray[np.bool_]]:
    """:func:`frame_and_links` plus the frame's inverse (None: not computed yet) and uniform
    scale (None: sheared or non-uniform on some frame). A one-frame read whose frame is
    composed from its parent (``read.pose`` None) depends only on the world matrix, the
    parent's pose and the upper bone's location: the parts are kept on the rig under
    those bytes, so a live solve whose armature side did not move since the last frame
    computes only the target's goal."""
    key = None
    if read.pose is None and read.parent is not None and len(read) == 1:
        key = read.world.tobytes() + read.parent.tobytes() + read.location.tobytes()
        hit = rig.frames.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
    frame, a, b, linked = frame_and_links(rig, read)
    scale, similar = similarity_scale(frame)
    inverse = None if key is None else affine_inverse(frame)
    parts = (frame, inverse, scale if bool(similar.all()) else None, a, b, linked)
    if key is not None:
        if len(rig.frames) >= _KEPT_FRAMES:
            rig.frames.clear()
        rig.frames[key] = parts
    return parts


def row(req: LimbRequest, i: int) -> LimbRequest:
    """Frame ``i`` of an N-frame request as a one-frame request (unbatched goal and
    options; the same limb, frame, target and links as row ``i`` of the batch): a bake
    that solves some limbs frame by frame builds their requests once for the range."""
    def one(x: FloatArray | None) -> FloatArray | None:
        return None if x is None else x[i:i + 1]

    kwargs = {k: v if k == "strategy" else (float(v[i]) if k == "swivel" else v[i])
              for k, v in req.kwargs.items()}
    return req._but(kwargs=kwargs, frame=req.frame[i:i + 1],
                    goal_frame=req.goal_frame[i:i + 1],
                    target_goal=req.target_goal[i:i + 1], target=req.target[i:i + 1],
                    linked=req.linked[i:i + 1], wrist=one(req.wrist),
                    frame_scale=one(req.frame_scale), single=True,
                    frame_inverse=one(req.frame_inverse), end_frame=one(req.end_frame),
                    lower_frame=one(req.lower_frame))


def with_goal(req: LimbRequest, settings: Any, goal_frame: FloatArray) -> LimbRequest:
    """The same request asking for another goal (frame coordinates, (N, 4, 4)): the frame,
    links, limb, target and solve options are kept (a warm start or a verification's
    corrected goal)."""
    return req._but(goal_frame=goal_frame)
