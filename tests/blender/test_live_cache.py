"""What a live solve keeps across frames (the limb's rig with its rotation modes, the
frame parts of a plain limb keyed by the float32 values Blender stores) follows every
edit between frames: the solve after an edit writes, bit for bit, what a solve with every
cache cleared writes from the same pose, and reports the same status."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import bpy
import pytest

from tests.blender import test_plain_limbs
from tests.blender.limber_rigs import metarig
from tests.blender.test_plain_limbs import FIELDS, _Counting, _rig


@pytest.fixture
def prefs(limber: Any) -> Iterator[Any]:
    """Limber's preferences; the tolerances restored afterwards."""
    p = bpy.context.preferences.addons[limber.module].preferences
    saved = p.position_tolerance, p.orientation_tolerance
    yield p
    p.position_tolerance, p.orientation_tolerance = saved


#: The plain-road counter of test_plain_limbs (the same fixture).
counting = test_plain_limbs.counting


def cached_then_fresh(limber: Any, obj: Any, edit: Callable[[Any], None],
                      warm: Sequence[int] = (2,), fields: Sequence[str] = FIELDS) -> list[Any]:
    """Solve the frames ``warm`` (caches warm), edit, solve frame 3; then from the pose
    before that solve, with every cache cleared, solve frame 3 again: the same values and
    the same status ``fields``. Returns the cached solve's statuses."""
    solve, live = limber.sub("addon.run.solve"), limber.sub("addon.run.live")
    scene = bpy.context.scene
    for f in warm:
        scene.frame_set(f)
        solve.solve_object(obj)
    edit(obj)
    scene.frame_set(3)
    before = live.capture_pose(obj)
    cached = solve.solve_object(obj)
    after = live.capture_pose(obj)
    live.restore_pose(obj, before)
    solve.clear_caches()
    fresh = solve.solve_object(obj)
    assert live.capture_pose(obj) == after
    for a, b in zip(cached, fresh, strict=True):
        for name in fields:
            assert getattr(a, name) == getattr(b, name), (a.limb, name)
    return cached


def _cached_then_fresh(limber: Any, obj: Any, edit: Callable[[Any], None]) -> list[Any]:
    """:func:`cached_then_fresh` of proven limbs (their statuses from the model)."""
    cached = cached_then_fresh(limber, obj, edit)
    for a in cached:
        assert a.solved and a.proven and a.measured == "model"
    return cached


@pytest.mark.parametrize("mode", ["XYZ", "ZXY", "AXIS_ANGLE"])
@pytest.mark.parametrize("bone", ["upper_arm.L", "forearm.L", "hand.L"])
def test_a_rotation_mode_changed_between_frames_is_written(limber: Any, counting: _Counting,
                                                            bone: str, mode: str) -> None:
    obj = _rig({"arm.L": "POSE"})

    def edit(o: Any) -> None:
        o.pose.bones[bone].rotation_mode = mode

    st, = _cached_then_fresh(limber, obj, edit)
    path = "rotation_axis_angle" if mode == "AXIS_ANGLE" else "rotation_euler"
    assert st.written[bone][0] == path
    assert counting.solved >= 2  # both solves of the edited frame went the plain road


def test_the_upper_bones_location_is_read_every_frame(limber: Any, counting: _Counting) -> None:
    """The upper bone's location is not part of the rig (it is read each frame); moving it
    keeps the rig and moves the solve's frame."""
    solve = limber.sub("addon.run.solve")
    obj = _rig({"arm.L": "POSE"})
    lb = obj.limber.limbs["arm.L"]
    up = obj.pose.bones["upper_arm.L"]
    assert not up.bone.use_connect
    bpy.context.scene.frame_set(2)
    solve.solve_object(obj)
    rig = solve.rig_for(obj, lb)
    up.location = (0.01, 0.02, -0.015)
    assert solve.rig_for(obj, lb) is rig

    def edit(o: Any) -> None:
        o.pose.bones["upper_arm.L"].location = (0.02, -0.01, 0.01)

    _cached_then_fresh(limber, obj, edit)


@pytest.mark.parametrize("edit_name", ["object", "parent", "parent_scale", "none"])
def test_frame_parts_follow_the_armature_side(limber: Any, counting: _Counting,
                                              edit_name: str) -> None:
    """The plain limb's frame parts are kept under the world matrix, the parent's pose and
    the upper bone's location as Blender stores them: moving the armature object or
    turning or scaling the parent gives new parts; nothing moved reuses them."""
    obj = _rig({"arm.L": "POSE", "arm.R": "POSE"})

    def edit(o: Any) -> None:
        if edit_name == "object":
            o.location = (0.1, -0.2, 0.05)
            o.rotation_euler = (0.0, 0.0, 0.3)
        elif edit_name == "parent":
            o.pose.bones["shoulder.L"].rotation_euler = (0.2, 0.1, -0.15)  # a YXZ bone
        elif edit_name == "parent_scale":
            o.pose.bones["spine.003"].scale = (1.1, 1.1, 1.1)

    _cached_then_fresh(limber, obj, edit)


def test_hinge_custom_is_read_only_for_a_custom_hinge(limber: Any, counting: _Counting) -> None:
    """The custom hinge axis is in the rig's signature only when the hinge is custom: an
    edit of it then rebuilds the rig; with another hinge choice it does not shape the rig
    (and the rig is kept)."""
    solve = limber.sub("addon.run.solve")
    obj = _rig({"arm.L": "POSE"})
    lb = obj.limber.limbs["arm.L"]
    bpy.context.scene.frame_set(2)
    rig = solve.rig_for(obj, lb)
    lb.hinge_custom = (0.0, 0.0, 1.0)  # AUTO: not read
    assert solve.rig_for(obj, lb) is rig

    def to_custom(o: Any) -> None:
        o.limber.limbs["arm.L"].hinge_axis = "CUSTOM"

    _cached_then_fresh(limber, obj, to_custom)
    custom = solve.rig_for(obj, lb)
    assert tuple(custom.hinge_axis) == (0.0, 0.0, 1.0)

    def turn(o: Any) -> None:
        o.limber.limbs["arm.L"].hinge_custom = (1.0, 0.0, 0.2)

    _cached_then_fresh(limber, obj, turn)
    assert solve.rig_for(obj, lb).hinge_axis[0] == pytest.approx(1.0 / (1.04 ** 0.5))


def test_tolerance_bounds_are_the_preferences_range(limber: Any, prefs: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """reached() decides errors below the lowest or above the highest tolerance without
    reading the preferences: those bounds are the properties' range as Blender stores it,
    and a stored value outside it (e.g. from a preferences file of another range) acts as
    the bound."""
    verify = limber.sub("addon.bridge.verify")
    props = type(prefs).bl_rna.properties
    lo, hi = verify.TOLERANCE_LOWEST, verify.TOLERANCE_HIGHEST
    for name, field in (("position_tolerance", "position"),
                        ("orientation_tolerance", "orientation")):
        assert props[name].hard_min == getattr(lo, field)
        assert props[name].hard_max == getattr(hi, field)
    prefs.position_tolerance = 0.0  # clamped by Blender to the lowest
    assert prefs.position_tolerance == lo.position
    tol = limber.sub("addon.ui.preferences").Tolerance
    with monkeypatch.context() as m:
        m.setattr(verify, "tolerances", lambda: tol(0.0, 0.0))  # acts as the lowest
        assert verify.reached(lo.position, 0.0) and not verify.reached(1.01 * lo.position, 0.0)
        m.setattr(verify, "tolerances", lambda: tol(1.0, 1.0))  # acts as the highest
        assert verify.reached(hi.position, 0.0) and not verify.reached(1.01 * hi.position, 0.0)
    prefs.position_tolerance = 5e-3
    with verify.tolerance_when_needed():
        assert verify.reached(4.9e-3, 0.0) and not verify.reached(5.1e-3, 0.0)
        prefs.position_tolerance = 1e-3  # read once, at the first decision that needed it
        assert verify.reached(4.9e-3, 0.0)
    assert not verify.reached(4.9e-3, 0.0)


@pytest.mark.parametrize("bone", ["", "hand.R"])
def test_plain_targets_object_or_bone_match_the_general_road(limber: Any, counting: _Counting,
                                                             bone: str) -> None:
    """A plain limb reads its target's world frame as rows of floats (an object's straight
    from Blender's matrix, a bone's through the armature): the general road's values."""
    obj = _rig({"arm.L": "POSE"})
    lb = obj.limber.limbs["arm.L"]
    if bone:  # the other hand of a second meta-rig, posed near the first one's hand
        other = metarig(location=(0.55, 0.1, 0.0))
        other.pose.bones["upper_arm.R"].rotation_quaternion = (0.95, 0.1, -0.2, 0.1)
        lb.target, lb.target_bone = other, bone
    for fast, slow in test_plain_limbs._both_roads(limber, obj, counting, range(2, 5)):
        for a, b in zip(fast, slow, strict=True):
            for name in FIELDS:
                assert getattr(a, name) == getattr(b, name), (a.limb, name)
            assert a.solved and a.proven
    assert counting.solved == 3
