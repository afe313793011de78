"""``Body.shells``: each limb's reachable wrist-centre distances from its shoulder, against
forward kinematics of the skeleton over the elbow's range."""

from __future__ import annotations

import numpy as np

from core.body import shell
from tests.fixtures.humanoid import humanoid

BODY = humanoid()
SK = BODY.skeleton


def test_shells_are_the_limbs_distance_range_by_forward_kinematics() -> None:
    assert len(BODY.shells) == len(BODY.limbs)
    for k, (u, lo, e) in enumerate(BODY.joints):
        d_min, d_max = BODY.shells[k]
        assert (d_min, d_max) == shell(BODY.models[k])
        # the shoulder–wrist distance depends on the elbow angle alone
        s = SK.dof_slices[lo]
        angles = np.linspace(SK.lower[s][0], SK.upper[s][0], 4001)
        q = np.zeros((angles.size, SK.n_dofs))
        q[:, s.start] = angles
        _, org, _, _ = SK.kinematics(q)
        d = np.linalg.norm(org[:, e] - org[:, u], axis=1)
        assert np.all(d >= d_min - 1e-12) and np.all(d <= d_max + 1e-12)
        assert abs(d.min() - d_min) <= 1e-6 and abs(d.max() - d_max) <= 1e-6
