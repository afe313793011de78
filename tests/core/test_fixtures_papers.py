"""Issue 4, "Fixtures": the numbers the issue gives for the papers' shapes, asserted one by
one (test_fixtures.py checks sizes and end points): Buss's Y has 7 links and 2 effectors;
Šoch & Lórencz's chain has the segments 90, 60, 90, 150, 150, 90 in that order, planar
hinges, the start q = 0 and the ellipse a = 400, b = 50 centred at the origin; Ki & Sheen's
chains are planar (2-D) with 2, 3 and 4 effectors; the arm has 7 DOFs as Ball–Hinge–Ball.
"""

from __future__ import annotations

import numpy as np
import pytest

from core import Ball, Fixed, Hinge
from tests.fixtures import arm_chain, buss_y, ki_sheen_chain, soch_chain, soch_ellipse_targets


def _origins(sk, q=None):
    return sk.forward(sk.zero() if q is None else q)[:, :3, 3]


def _links(sk):
    """Distinct segments between distinct joint positions at rest."""
    p = _origins(sk)
    return {
        (tuple(np.round(p[jt.parent], 9)), tuple(np.round(p[j], 9)))
        for j, jt in enumerate(sk.joints)
        if jt.parent >= 0 and np.linalg.norm(p[j] - p[jt.parent]) > 1e-12
    }


def test_buss_y_has_7_links_and_2_effectors():
    fx = buss_y()
    sk = fx.skeleton
    assert len(_links(sk)) == 7
    assert [g.joint for g in fx.goals] == ["effector_right", "effector_left"]
    leaves = [j for j in range(sk.n_joints) if j not in set(sk.parents.tolist())]
    assert sorted(sk.names[j] for j in leaves) == ["effector_left", "effector_right"]


def test_soch_chain_segments_plane_start_and_ellipse():
    fx = soch_chain()
    sk = fx.skeleton
    p = _origins(sk)
    np.testing.assert_allclose(
        np.linalg.norm(np.diff(p, axis=0), axis=1), (90, 60, 90, 150, 150, 90), atol=1e-12
    )
    for jt in sk.joints[:6]:
        assert isinstance(jt.dofs, Hinge)
        np.testing.assert_array_equal(jt.dofs.axis, (0.0, 0.0, 1.0))
    np.testing.assert_array_equal(fx.q0, np.zeros(6))
    # segments keep their lengths and stay in the plane in any pose
    q = np.random.default_rng(0).uniform(-2, 2, 6)
    pq = _origins(sk, q)
    np.testing.assert_allclose(
        np.linalg.norm(np.diff(pq, axis=0), axis=1), (90, 60, 90, 150, 150, 90), atol=1e-9
    )
    assert np.abs(pq[:, 2]).max() == 0.0
    t = soch_ellipse_targets(360)
    np.testing.assert_allclose(t.mean(axis=0), 0.0, atol=1e-9)  # centred at the origin
    np.testing.assert_allclose(np.abs(t[:, 0]).max(), 400.0)
    np.testing.assert_allclose(np.abs(t[:, 1]).max(), 50.0)
    np.testing.assert_array_equal(t[:, 2], 0.0)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_ki_sheen_chains_are_planar_with_n_effectors(n):
    fx = ki_sheen_chain(n)
    sk = fx.skeleton
    assert len(fx.goals) == n and len({g.joint for g in fx.goals}) == n
    for jt in sk.joints:
        assert isinstance(jt.dofs, Hinge | Fixed)
        if isinstance(jt.dofs, Hinge):
            np.testing.assert_array_equal(jt.dofs.axis, (0.0, 0.0, 1.0))
    q = np.random.default_rng(n).uniform(-1, 1, sk.n_dofs)
    assert np.abs(_origins(sk, q)[:, 2]).max() == 0.0
    for g in fx.goals:
        assert g.position[2] == 0.0


def test_human_arm_is_ball_hinge_ball_with_7_dofs():
    sk = arm_chain().skeleton
    kinds = [type(j.dofs) for j in sk.joints]
    assert kinds == [Ball, Hinge, Ball, Fixed] and sk.n_dofs == 7
