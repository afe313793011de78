"""What a body's live solve keeps across frames (its mapped rig and :class:`core.Body`)
follows every edit between frames: the root's location (the body's own unknown, written
by every solve) keeps the rig; an edit of what the rig is built from rebuilds it; and the
solve after an edit writes, bit for bit, what a solve with every cache cleared writes
from the same pose, with the same statuses (:func:`.test_live_cache.cached_then_fresh`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import bpy
import numpy as np
import pytest
from mathutils import Vector

from tests.blender.limber_rigs import metarig, world_pose
from tests.blender.test_live_cache import cached_then_fresh

#: The status fields a cached and a fresh solve agree on (timings aside).
FIELDS = ("solved", "message", "reachable", "within_limits", "position_error",
          "orientation_error", "reached", "measured", "notes", "written",
          "written_locations", "iterations", "stop_reason", "effector_errors", "effectors")


def _scene(limber: Any) -> tuple[Any, Any]:
    """The meta-rig's body, the left hand's target keyed from the hand forward beyond the
    arm's reach over frames 1–4 (the root moves: the body leans in)."""
    obj = metarig()
    assert bpy.ops.limber.add_body(armature=obj.name) == {"FINISHED"}
    body = obj.limber.bodies["body"]
    hand = body.pins["hand.L"]
    hand.goal_type = "POSITION"
    start = world_pose(obj, hand.tip_bone)[:3, 3]
    for f, p in enumerate([start, start + (0.0, -0.3, -0.1), start + (0.1, -0.7, -0.3),
                           start + (0.1, -0.9, -0.4)], start=1):
        hand.target.location = Vector(p.tolist())
        hand.target.keyframe_insert("location", frame=f)
    bpy.context.scene.limber.live_playback = False
    return obj, body


def test_the_rig_is_kept_while_the_body_moves_its_root(limber: Any) -> None:
    obj, body = _scene(limber)
    run_body, solve = limber.sub("addon.run.body"), limber.sub("addon.run.solve")
    scene = bpy.context.scene
    scene.frame_set(1)
    solve.solve_object(obj)
    rig, core_body = run_body.body_rig_for(obj, body)
    roots = []
    for f in (2, 3, 4):
        scene.frame_set(f)
        st = solve.solve_object(obj)[0]
        assert st.solved, st.message
        roots.append(np.array(obj.pose.bones[body.root_bone].location))
        assert run_body.body_rig_for(obj, body) == (rig, core_body)  # the same objects
    assert np.ptp(np.array(roots), axis=0).max() > 1e-4  # the root did move


def _root_location(obj: Any) -> None:
    obj.pose.bones["spine"].location = (0.01, -0.02, 0.03)


def _thigh_location(obj: Any) -> None:  # an unconnected bone's location is a rest offset
    obj.pose.bones["thigh.L"].location = (0.0, 0.01, 0.0)


def _spine_mode(obj: Any) -> None:
    obj.pose.bones["spine.002"].rotation_mode = "YXZ"


def _spine_ik_limit(obj: Any) -> None:
    pb = obj.pose.bones["spine.001"]
    pb.use_ik_limit_x, pb.ik_min_x, pb.ik_max_x = True, -0.2, 0.2


@pytest.mark.parametrize("edit, rebuilt", [(_root_location, False), (_thigh_location, True),
                                           (_spine_mode, True), (_spine_ik_limit, True)])
def test_a_solve_after_an_edit_equals_a_fresh_one(limber: Any, edit: Callable[[Any], None],
                                                  rebuilt: bool) -> None:
    obj, body = _scene(limber)
    run_body = limber.sub("addon.run.body")
    seen = []

    def spy(o: Any) -> None:
        seen.append(run_body.body_rig_for(o, body))
        edit(o)
        seen.append(run_body.body_rig_for(o, body))

    sts = cached_then_fresh(limber, obj, spy, warm=(1, 2), fields=FIELDS)
    assert sts[0].solved, sts[0].message
    assert (seen[0][0] is not seen[1][0]) == rebuilt
