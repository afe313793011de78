"""A batched bake's statuses are made when read (addon/run/statuses.py): the worst frame
it picks without making them is the one the rows give, and the rows are complete; the
keys it writes get their handles from the keys."""

from __future__ import annotations

import math
from typing import Any

import bpy
import numpy as np
import pytest

from tests.blender.limber_rigs import RIGIFY_LIMBS, add_empty, add_limb, metarig, world_pose


def test_worst_frame_of_lazy_rows_is_the_rows_worst(limber: Any) -> None:
    obj = metarig()
    for i, name in enumerate(("arm.L", "leg.R")):
        bones = RIGIFY_LIMBS[name]
        t = add_empty(f"T.{name}")
        rest = world_pose(obj, bones[2])[:3, 3]
        for f in range(0, 31, 5):
            a = 2 * math.pi * f / 30 + i
            # out of reach on some keys: missed frames, the largest miss the worst
            far = 0.6 if f in (10, 25) else 0.0
            t.location = rest + (0.05 + far) * np.array((math.cos(a), 0.3, math.sin(a)))
            t.keyframe_insert("location", frame=f)
        add_limb(obj, name, bones, target=t, goal_type="POSE" if "arm" in name else "POSITION")
    bake = limber.sub("addon.run.bake")
    statuses = limber.sub("addon.run.statuses")
    res = bake.bake_object(obj, bpy.context.scene, 1, 30)
    assert res.batched and isinstance(res.statuses, statuses.StatusRows)
    rows = [list(r) for r in res.statuses]
    assert len(rows) == 30 and all(len(r) == 2 for r in rows)
    assert [st.frame for st in rows[4]] == [5, 5]
    expected = bake._worst(rows, res.frames)  # the rank loop over ready-made statuses
    for got, want in zip(res.worst, expected, strict=True):
        assert (got.limb, got.frame, got.reached) == (want.limb, want.frame, want.reached)
        # (the playback check may replace the model's miss by the measured one)
        assert got.position_error == pytest.approx(want.position_error, abs=1e-6)
        assert not got.reached and got.frame in range(8, 28)
        assert f"worst frame {got.frame} of frames 1–30" in got.message


def test_baked_keys_have_the_auto_handles_of_their_keys(limber: Any) -> None:
    """The bake leaves new keys' handles to ``FCurve.update()`` (auto-clamped, computed
    from the keys): re-computing them from any starting handles changes nothing, and
    re-baking the range gives the same keys in every field."""
    obj = metarig()
    t = add_empty("T")
    rest = world_pose(obj, RIGIFY_LIMBS["arm.L"][2])[:3, 3]
    for f in range(0, 21, 5):
        t.location = rest + 0.05 * np.array((math.cos(f), 0.3, math.sin(f)))
        t.keyframe_insert("location", frame=f)
    add_limb(obj, "arm.L", RIGIFY_LIMBS["arm.L"], target=t)
    bake = limber.sub("addon.run.bake")
    compat = limber.sub("addon.compat")
    scene = bpy.context.scene

    def keys() -> list[tuple[Any, ...]]:
        out = []
        for fc in compat.assigned_fcurves(obj.animation_data):
            pts = fc.keyframe_points
            out.append(tuple(tuple(getattr(p, a)) if a in ("co", "handle_left", "handle_right")
                             else getattr(p, a) for p in pts for a in (
                "co", "handle_left", "handle_right", "handle_left_type", "handle_right_type",
                "interpolation")))
        return out

    bake.bake_object(obj, scene, 1, 20)
    first = keys()
    assert first and all(len(k) == 20 * 6 for k in first)
    assert all(p.handle_left_type == "AUTO_CLAMPED" for fc in compat.assigned_fcurves(
        obj.animation_data) for p in fc.keyframe_points)
    for fc in compat.assigned_fcurves(obj.animation_data):
        for p in fc.keyframe_points:
            p.handle_left = p.handle_right = (0.0, 0.0)
        fc.update()
    assert keys() == first
    bake.bake_object(obj, scene, 1, 20)  # every key inside the range: none kept
    assert keys() == first
