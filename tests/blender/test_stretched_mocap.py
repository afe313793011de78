"""A mocap skeleton (the CMU clip the demo uses) whose thighs are stretched
non-uniformly: every FK pose of the leg, made on that stretched chain, is reached by
limber.solve on the evaluated pose (the affine-chain refinement starts far from the
rigid solution there and needs more steps than on the meta-rig's stretches)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Matrix

from core import orthonormalize_yz
from tests.blender.limber_rigs import evaluate, random_quaternion, world_pose
from tests.blender.test_evaluated_pose import POS_TOL, ROT_TOL, _measured

CLIP = Path(__file__).resolve().parents[2] / "tools" / "data" / "mocap" / "cmu_131_01.bvh"


@pytest.mark.parametrize("goal", ["POSITION", "POSE"])
def test_stretched_thighs_reach_fk_targets(limber: Any, goal: str) -> None:
    assert bpy.ops.import_anim.bvh(filepath=str(CLIP)) == {"FINISHED"}
    arm = bpy.context.active_object
    assert bpy.ops.limber.detect_limbs(armature=arm.name, create_targets=True) == {"FINISHED"}
    arm.animation_data.action = None
    pbs = arm.pose.bones
    rng = np.random.default_rng(3)
    for name in ("leg.L", "leg.R"):
        lb = arm.limber.limbs[name]
        pbs[lb.upper_bone].scale = (1.1, 1.3, 0.9)
        lb.goal_type = goal
        for other in arm.limber.limbs:
            other.enabled = other.name == name
        for trial in range(6):
            bones = (lb.upper_bone, lb.lower_bone, lb.end_bone)
            for b, angle in zip(bones, (0.9, 0.8, 0.5), strict=True):
                pbs[b].rotation_mode = "QUATERNION"
                pbs[b].rotation_quaternion = random_quaternion(rng, angle)
            evaluate()
            lb.target.matrix_world = Matrix(
                orthonormalize_yz(world_pose(arm, lb.end_bone)).tolist())
            for b in bones:
                pbs[b].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
            evaluate()
            assert bpy.ops.limber.solve(armature=arm.name) == {"FINISHED"}
            pos, ori = _measured(arm, lb)
            assert pos <= POS_TOL and ori <= ROT_TOL, (name, trial, pos, ori, lb.status.message)
            assert lb.status.reached, lb.status.message
