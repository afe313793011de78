"""Tests of tests.fixtures: the paper skeletons have the stated shapes and sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import Fixed, Hinge, InvalidInputError
from tests.fixtures import (
    arm_chain,
    buss_double_y,
    buss_double_y_targets,
    buss_y,
    buss_y_targets,
    ki_sheen_chain,
    soch_chain,
    soch_ellipse_targets,
)


def origins(fx):
    return fx.skeleton.forward(fx.skeleton.zero())[:, :3, 3]


def test_buss_y():
    fx = buss_y()
    sk = fx.skeleton
    assert sk.n_dofs == 7 and len(fx.goals) == 2
    assert sk.jacobian(sk.zero(), fx.goals).shape == (6, 7)  # Buss §8: "6×7"
    p = origins(fx)
    np.testing.assert_allclose(p[sk.joint_index("effector_right")], (0.7, 2.0, 0.0), atol=1e-15)
    np.testing.assert_allclose(p[sk.joint_index("effector_left")], (-0.8, 1.9, 0.0), atol=1e-15)
    np.testing.assert_allclose(p[0], (0.0, -0.5, 0.0))
    # two branches split at the root's child level: j1 and j2 are siblings
    assert sk.parents[1] == sk.parents[2] == 0
    assert buss_y_targets(np.linspace(0, 1, 5)).shape == (5, 2, 3)
    assert np.shape(buss_y(np.linspace(0, 1, 5)).goals[0].position) == (5, 3)


def test_buss_double_y():
    fx = buss_double_y()
    sk = fx.skeleton
    assert sk.n_dofs == 25 and len(fx.goals) == 4
    assert sk.jacobian(sk.zero(), fx.goals).shape == (12, 25)
    # 16 links: distinct segments between distinct joint positions along the tree
    p = origins(fx)
    links = {
        (tuple(np.round(p[jt.parent], 9)), tuple(np.round(p[j], 9)))
        for j, jt in enumerate(sk.joints)
        if jt.parent >= 0 and np.linalg.norm(p[j] - p[jt.parent]) > 1e-12
    }
    assert len(links) == 16
    tips = [p[sk.joint_index(f"e{i}")] for i in range(4)]
    assert all(isinstance(sk.joints[sk.joint_index(f"e{i}")].dofs, Fixed) for i in range(4))
    assert len({tuple(np.round(t, 9)) for t in tips}) == 4
    assert buss_double_y_targets(0.3).shape == (4, 3)


def test_soch_chain_and_ellipse():
    fx = soch_chain()
    sk = fx.skeleton
    assert sk.n_dofs == 6
    assert all(isinstance(j.dofs, Hinge) for j in sk.joints[:6])
    p = origins(fx)
    np.testing.assert_allclose(p[0], (-230.0, 0.0, 0.0))
    np.testing.assert_allclose(p[-1], (400.0, 0.0, 0.0))  # touches the ellipse at [400, 0]
    t = soch_ellipse_targets(8)
    assert t.shape == (8, 3)
    np.testing.assert_allclose(t[0], (400.0, 0.0, 0.0))
    np.testing.assert_allclose(t[2], (0.0, 50.0, 0.0), atol=1e-12)
    np.testing.assert_allclose((t[:, 0] / 400) ** 2 + (t[:, 1] / 50) ** 2, 1.0)
    with pytest.raises(InvalidInputError):
        soch_ellipse_targets(0)


@pytest.mark.parametrize(("n", "dofs"), [(2, 9), (3, 11), (4, 11)])
def test_ki_sheen_chains(n, dofs):
    fx = ki_sheen_chain(n)
    assert fx.skeleton.n_dofs == dofs and len(fx.goals) == n
    # every link has unit length
    p = origins(fx)
    for j, jt in enumerate(fx.skeleton.joints):
        if jt.parent >= 0:
            assert np.linalg.norm(p[j] - p[jt.parent]) == pytest.approx(1.0)
    with pytest.raises(InvalidInputError):
        ki_sheen_chain(5)


@pytest.mark.parametrize("limits", [False, True])
def test_human_arm(limits):
    fx = arm_chain(limits)
    sk = fx.skeleton
    assert sk.n_dofs == 7
    np.testing.assert_allclose(origins(fx)[3], (0.0, 0.63, 0.0), atol=1e-15)
    assert np.isfinite(sk.lower).all() == limits
    if limits:
        assert sk.upper[3] == pytest.approx(math.radians(150))
    assert fx.goals[0].joint == "hand"
