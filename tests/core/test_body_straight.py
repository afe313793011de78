"""A straight limb inside the body: its elbow lies on the shoulder–wrist axis, so the
swivel of the nearest elbow is rounding noise; the body takes the limb's preferred swivel
there (``core.body.closed.straight_targets``)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.body.closed import Kernel, Local, straight_targets
from tests.fixtures.humanoid import humanoid

BODY = humanoid()


@settings(max_examples=40, deadline=None)
@given(
    limb=st.integers(0, len(BODY.models) - 1),
    reach=st.floats(0.3, 0.98),
    fallback=st.floats(-math.pi, math.pi - 1e-9),
    seed=st.integers(0, 2**31 - 1),
)
def test_straight_rows_take_the_fallback_swivel(
    limb: int, reach: float, fallback: float, seed: int
) -> None:
    model = BODY.models[limb]
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(4, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    local = Local(reach * model.length * d, None)
    target = rng.normal(size=(4, 3)) * 0.1
    straight = np.array([True, False, True, False])
    out = straight_targets(model, local, None, target, straight, fallback)
    np.testing.assert_array_equal(out[~straight], target[~straight])
    if model.limits is None:
        return
    phi = Kernel(model, local, None, elbow_target=out).phi_d
    err = (np.asarray(phi)[straight] - fallback + math.pi) % (2 * math.pi) - math.pi
    assert np.all(np.abs(err) <= 1e-9)


def test_no_straight_row_returns_the_targets_unchanged() -> None:
    model = BODY.models[0]
    local = Local(np.full((2, 3), 0.1), None)
    target = np.ones((2, 3))
    assert straight_targets(model, local, None, target, np.zeros(2, bool), 1.0) is target
