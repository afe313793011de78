"""``addon.compat``: one way to write and read animation and selection on every Blender the
matrix covers (``bash tools/test_matrix.sh``: 4.2 LTS, 4.5 LTS, 5.0, the newest 5.x)."""

from __future__ import annotations

from typing import Any

import bpy

from tests.blender.limber_rigs import metarig


def test_version_flags_match_the_running_blender(limber: Any) -> None:
    compat = limber.sub("addon.compat")
    assert compat.SLOTTED_ACTIONS == (bpy.app.version >= (4, 4, 0))
    assert compat.SLOTTED_ACTIONS == hasattr(bpy.types, "ActionSlot")
    assert compat.FCURVES_NEW_GROUP_NAME == (bpy.app.version >= (5, 0, 0))
    assert compat.POSE_BONE_SELECT == (bpy.app.version >= (5, 0, 0))


def test_fcurves_written_in_groups_read_back_and_played(limber: Any) -> None:
    compat = limber.sub("addon.compat")
    obj = metarig()
    assert compat.assigned_fcurves(obj.animation_data) is None
    assert compat.action_fcurves(obj.animation_data) == []
    fcurves = compat.ensure_fcurves(obj)
    assert compat.ensure_fcurves(obj) == fcurves  # idempotent: same action, slot, channelbag
    path = 'pose.bones["forearm.L"].rotation_quaternion'
    fcs = [compat.ensure_fcurve(fcurves, path, i, "forearm.L") for i in range(4)]
    assert compat.ensure_fcurve(fcurves, path, 2, "forearm.L") == fcs[2]  # found, not new
    for fc, value in zip(fcs, (0.0, 1.0, 0.0, 0.0), strict=True):
        fc.keyframe_points.insert(1.0, value)
        fc.keyframe_points.insert(10.0, value)
    assert {fc.group.name for fc in fcs} == {"forearm.L"}

    read = compat.assigned_fcurves(obj.animation_data)
    assert read is not None
    assert sorted((fc.data_path, fc.array_index) for fc in read) == [(path, i) for i in range(4)]
    assert compat.action_fcurves(obj.animation_data) == list(read)
    if compat.SLOTTED_ACTIONS:
        assert obj.animation_data.action_slot is not None
    bpy.context.scene.frame_set(5)
    q = obj.pose.bones["forearm.L"].rotation_quaternion
    assert tuple(round(v, 6) for v in q) == (0.0, 1.0, 0.0, 0.0)


def test_bone_selection_round_trips(limber: Any) -> None:
    compat = limber.sub("addon.compat")
    obj = metarig()
    pb = obj.pose.bones["forearm.L"]
    for value in (True, False, True):
        compat.set_bone_selected(pb, value)
        assert compat.bone_selected(pb) is value
    compat.set_bone_selected(obj.pose.bones["hand.L"], False)
    assert not compat.bone_selected(obj.pose.bones["hand.L"])


def test_float32_reads_are_the_same_with_or_without_the_buffer_protocol(
    limber: Any, monkeypatch: Any
) -> None:
    """Blender 4.2's mathutils has no buffer protocol: the item-by-item reads give the
    bytes and rows the buffer gives (checked here, where both exist)."""
    import random

    import mathutils

    compat = limber.sub("addon.compat")
    rng = random.Random(5)
    items = [
        mathutils.Matrix([[rng.uniform(-3, 3) for _ in range(4)] for _ in range(4)]),
        mathutils.Matrix.Rotation(0.7, 4, "X") @ mathutils.Matrix.Translation((1e-3, 2.5, -7.0)),
        mathutils.Vector([rng.uniform(-3, 3) for _ in range(3)]),
    ]
    if not compat.MATHUTILS_BUFFER:
        return
    with_buffer = [compat.float32_bytes(m) for m in items]
    rows = compat.matrix_rows(items[0])
    monkeypatch.setattr(compat, "MATHUTILS_BUFFER", False)
    assert [compat.float32_bytes(m) for m in items] == with_buffer
    assert compat.matrix_rows(items[0]) == rows
