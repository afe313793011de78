# SCRATCH (18f): never commit
from typing import Any
import numpy as np
import pytest
from tests.blender import test_body_rigs as rigs
from tests.blender.test_body_repeat import _beyond_reach, _pose
from tests.blender.limber_rigs import world_pose, rotation_angle

@pytest.mark.parametrize("kind", ["game"])
def test_rep(limber: Any, kind: str) -> None:
    body_run = limber.sub("addon.run.body")
    orig = body_run.start_swivels
    core = limber.sub("core")
    def ss(cb, q, names=None):
        out = orig(cb, q, names)
        i = [b.name for b in cb.limbs].index("hand.R")
        u, lo, e = cb.joints[i]
        print("\n start_swivels", names, {k: round(v, 4) for k, v in out.items()}, "elbow R", q[cb.skeleton.dof_slices[lo]], "delta", cb.models[i].constants.eq5_pose.delta)
        return out
    body_run.start_swivels = ss
    obj, body = _beyond_reach(kind)
    st = rigs._solve(limber, obj)
    before = _pose(obj)
    for i in range(2):
        body_run._ANSWERS.clear()
        st2 = rigs._solve(limber, obj)
        rows = sorted(((rotation_angle(world_pose(obj, n), m), float(np.linalg.norm(world_pose(obj, n)[:3,3]-m[:3,3])), n) for n, m in before.items()), reverse=True)[:6]
        print("\n", kind, i, [(f"{a:.3g}", f"{p:.3g}", n) for a, p, n in rows])
