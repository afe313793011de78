"""Nothing a solve or bake computes depends on what was solved before it: module-level
state in the add-on (goal offsets, driven-bone lists) is keyed so that another object of
the same name, another goal type or another frame range never reuses it."""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from tests.blender.limber_rigs import add_empty, add_limb, evaluate, metarig
from tests.blender.test_stretched_goals import (
    ARM,
    FRAMES,
    OVERRIDES,
    _target_matrix,
    moving_target,
)


def test_a_bake_does_not_depend_on_what_was_solved_before(limber: Any) -> None:
    """A measured limb's verification starts each frame from the corrections the frames
    before it needed. A bake starts from none: baked again after the frame before its
    range was solved live, or after another object of the same name with another goal
    type was solved there, it writes the very same keys."""
    scene = bpy.context.scene

    def rig(goal: str) -> Any:
        obj = metarig()
        OVERRIDES["hand without Inherit Rotation"](obj)
        add_limb(obj, "arm.L", ARM, target=moving_target(obj, goal, 6), goal_type=goal)
        return obj

    bake = limber.sub("addon.run.bake")
    obj = rig("POSE")
    first = bake.bake_object(obj, scene, FRAMES[0], FRAMES[-1])
    scene.frame_set(FRAMES[0] - 1)  # the frame before the range
    assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
    again = bake.bake_object(obj, scene, FRAMES[0], FRAMES[-1])
    assert first.channels.keys() == again.channels.keys()
    for key, values in first.channels.items():
        assert np.array_equal(values, again.channels[key]), key
    name = obj.name
    bpy.data.objects.remove(obj)
    other = rig("PARTIAL")
    assert other.name == name
    scene.frame_set(FRAMES[0] - 1)
    assert bpy.ops.limber.solve(armature=other.name) == {"FINISHED"}
    bpy.data.objects.remove(other)
    obj = rig("POSE")
    assert obj.name == name
    third = bake.bake_object(obj, scene, FRAMES[0], FRAMES[-1])
    for key, values in first.channels.items():
        assert np.array_equal(values, third.channels[key]), key


def test_driven_bones_of_a_removed_armature_are_not_reused(limber: Any) -> None:
    """An armature with a driver on its forearm is measured and says so; a new armature
    of the same name with one driver elsewhere is not (the model is proven for it)."""
    def solved(path: str, index: int) -> Any:
        obj = metarig()
        t = add_empty("T", _target_matrix(obj, "POSE", 8))
        add_limb(obj, "arm.L", ARM, target=t)
        fc = obj.driver_add(path, index)
        fc.driver.expression = "0.0"
        evaluate()
        assert bpy.ops.limber.solve(armature=obj.name) == {"FINISHED"}
        return obj, obj.limber.limbs["arm.L"].status

    obj, st = solved('pose.bones["forearm.L"].location', 0)
    assert st.measured and "drivers on forearm.L" in st.message, st.message
    name = obj.name
    bpy.data.objects.remove(obj)
    obj, st = solved('pose.bones["spine"].location', 0)
    assert obj.name == name
    assert st.reached and not st.measured and "drivers" not in st.message, st.message
