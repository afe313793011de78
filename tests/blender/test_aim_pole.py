"""Aim goals with an elbow target: a limb in Pole swivel mode, and a full body's aim hand
pin (the body passes the elbow it solved as the pole). Both were skipped ("elbow_target
does not apply to an AimGoal"); now solved on target on the evaluated pose, the elbow
turned toward the pole."""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
from mathutils import Euler, Matrix

from core import goal_errors
from tests.blender.limber_rigs import add_empty, add_limb, metarig, world_pose
from tests.blender.test_evaluated_pose import ARM, ROT_TOL, _measured
from tests.blender.test_stretched_goals import _target_matrix


def _elbow_to(obj: Any, pole: Any) -> float:
    return float(np.linalg.norm(world_pose(obj, "forearm.L")[:3, 3]
                                - np.array(pole.matrix_world.translation)))


def test_aim_goal_in_pole_mode(limber: Any) -> None:
    obj = metarig()
    pole = add_empty("P")
    t = add_empty("T", _target_matrix(obj, "AIM", 4))
    add_limb(obj, "arm.L", ARM, target=t, goal_type="AIM", swivel_mode="POLE", pole=pole,
             use_limits=False)
    settings = obj.limber.limbs["arm.L"]
    shoulder = world_pose(obj, "upper_arm.L")[:3, 3]
    for side in (1.0, -1.0):
        pole.location = (shoulder + side * np.array((0.3, 0.4, -0.2))).tolist()
        settings.swivel_mode = "POLE"
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        _, ori = _measured(obj, settings)
        assert ori <= ROT_TOL and settings.status.reached, settings.status.message
        got = _elbow_to(obj, pole)
        # no swivel angle of the aim brings the elbow nearer the pole
        settings.swivel_mode = "ANGLE"
        for swivel in np.linspace(-np.pi, np.pi, 24, endpoint=False):
            settings.swivel = float(swivel)
            assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
            assert settings.status.reached, settings.status.message
            assert got <= _elbow_to(obj, pole) + 1e-5, (side, swivel)


def test_body_aim_hand_pin(limber: Any) -> None:
    from tests.blender.test_body import _add_body, _solve

    obj = metarig()
    pin = _add_body(obj).pins["hand.L"]
    pin.goal_type = "AIM"
    pin.target.matrix_world = (Matrix.Translation((0.1, -0.3, 0.1)) @ pin.target.matrix_world
                               @ Euler((0.4, 0.2, -0.3)).to_matrix().to_4x4())
    _solve(limber, obj)
    _, ori = goal_errors("AIM", (0.0, 1.0, 0.0), world_pose(obj, "hand.L"),
                         np.array(pin.target.matrix_world))
    assert ori <= ROT_TOL and pin.status.reached, (ori, pin.status.message)
