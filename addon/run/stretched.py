"""Limbs with stretched segments: the analytic solution refined against the affine chain.

A limb whose only departure from the rigid model is a stretched (non-uniformly scaled)
segment is evaluated by Blender as its affine chain (:func:`core.affine_links`, read from
the evaluated pose; constant while the limb's rotations change). The live solve and the
bake solve the rigid model first, then move its joints with :func:`core.refine_on_chain`
until that chain's end bone is on the goal, for every goal type: the pose written is on
target without correction rounds on the depsgraph, which then only confirms it
(:func:`.solve.verify_pending`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...core import affine_links, refine_on_chain
from ..bridge.read import LimbRead
from ..bridge.requests import AXES, WRIST_GOALS, LimbRequest

FloatArray = NDArray[np.float64]

#: The share of the status tolerance the refinement aims for (Blender's float32
#: evaluation adds ~1e-7 relative on top).
SHARE = 0.1


def chain_links(rd: LimbRead | None) -> tuple[FloatArray, ...] | None:
    """The (upper, lower, end) affine links of a limb's reads (their first frame), or None
    when the reads hold no evaluated pose (the limb's rest links: nothing stretched)."""
    if rd is None or rd.pose is None or rd.basis is None:
        return None
    return affine_links(rd.pose[0], rd.basis[0])[1]


def on_chain(rig: Any, req: LimbRequest, sol: Any, links: tuple[FloatArray, ...],
             position: float, orientation: float) -> Any:
    """``sol`` (a single or batched :class:`core.LimbSolution` of ``req``) with its joints
    refined so that the affine chain's end bone reaches the request's target within
    ``SHARE`` × (``position`` m, ``orientation`` rad); the status fields stay the rigid
    solve's. Rows whose refinement leaves the joint limits keep the rigid solution (then
    the verification measures and corrects them as any unproven limb)."""
    solve_wrist = req.kind in WRIST_GOALS
    wrist = sol.wrist if req.wrist is None else (req.wrist[0] if req.single else req.wrist)
    target = req.target[0] if req.single else req.target
    frame = req.frame[0] if req.single else req.frame
    fit = refine_on_chain(frame, links, sol.shoulder, sol.elbow, wrist, rig.hinge_axis,
                          req.kind, AXES[req.axis], target, solve_wrist=solve_wrist,
                          limits=req.limb.limits, position_tolerance=SHARE * position,
                          orientation_tolerance=SHARE * orientation)
    keep = np.asarray(fit.within_limits | ~np.asarray(sol.within_limits, dtype=bool))
    if req.single:
        if not keep:
            return sol
        return replace(sol, shoulder=fit.shoulder, elbow=float(fit.elbow),
                       wrist=fit.wrist if solve_wrist else sol.wrist)
    k = keep[:, None, None]
    return replace(sol, shoulder=np.where(k, fit.shoulder, sol.shoulder),
                   elbow=np.where(keep, fit.elbow, sol.elbow),
                   wrist=np.where(k, fit.wrist, sol.wrist) if solve_wrist else sol.wrist)
