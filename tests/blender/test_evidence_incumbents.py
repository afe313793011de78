"""Smoke tests of the evidence suites 2 (incumbents) and 4 (motion capture), issue 7.

Each suite runs in ``--quick`` mode into a temporary folder; the tests assert that every
table, the targets and the charts are produced — never timings (speed is measured in
the benchmarks only).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks import incumbents


def _check_suite(suite: object, out: Path) -> None:
    from benchmarks._report import Suite

    assert isinstance(suite, Suite)
    assert suite.markdown.startswith("## ")
    assert "### Targets" in suite.markdown
    assert suite.targets
    assert suite.headline
    assert suite.charts
    for chart in suite.charts:
        assert chart.parent == out
        assert chart.suffix == ".png" and chart.stat().st_size > 1000


def test_incumbents_quick_produces_every_table_and_target(tmp_path: Path) -> None:
    suite = incumbents.run(quick=True, out_dir=tmp_path)
    _check_suite(suite, tmp_path)
    md = suite.markdown
    for heading in incumbents.TABLES:
        assert heading in md
    methods = ["Limber analytic", "Limber analytic, batched", "Blender LEGACY", "Blender ITASC"]
    if incumbents.ikpy_version() is not None:
        methods.append("ikpy")
    for method in methods:
        assert f"| {method} |" in md
    names = [t.name for t in suite.targets]
    assert any("LEGACY IK-only" in n for n in names)
    assert any("batched" in n for n in names)
    assert any("start-pose" in n for n in names)
    assert any("cyclic drift" in n for n in names)
    assert any("violated limit" in n for n in names)


def test_mocap_quick_produces_every_table_and_target(tmp_path: Path) -> None:
    from benchmarks import mocap

    suite = mocap.run(quick=True, out_dir=tmp_path)
    _check_suite(suite, tmp_path)
    md = suite.markdown
    for heading in mocap.TABLES:
        assert heading in md
    for limb in mocap.LIMBS:
        for method in ("Limber analytic", mocap.NEAR, "Limber DLS"):
            assert f"| {limb} | {method} |" in md
        assert f"| {limb} | Blender LEGACY" in md
        assert f"| {limb} | Blender ITASC" in md
        assert f"| {limb} | the clip itself |" in md
    assert len(suite.targets) == 2


def test_bvh_reader_agrees_with_blenders_importer() -> None:
    """The suite's numpy BVH reader and Blender's io_anim_bvh put the clip's joints at the
    same world positions (Blender's importer converts Y-up to Z-up: (x, y, z) → (x, −z, y))."""
    import bpy
    import numpy as np

    from benchmarks import _bvh, mocap

    bpy.ops.preferences.addon_enable(module="io_anim_bvh")
    before = set(bpy.data.objects)
    result = bpy.ops.import_anim.bvh(
        filepath=str(mocap.CLIP), global_scale=1.0, frame_start=1, use_fps_scale=False
    )
    assert result == {"FINISHED"}
    (ob,) = [o for o in bpy.data.objects if o not in before and o.type == "ARMATURE"]
    try:
        clip = _bvh.load(mocap.CLIP)
        g = clip.global_transforms()
        z_up = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
        for frame in (0, 400, 994):
            bpy.context.scene.frame_set(frame + 1)
            for name in ("LeftWrist", "RightAnkle", "LeftElbow", "RightKnee", "Head"):
                head = np.array(ob.matrix_world @ ob.pose.bones[name].head)
                ours = z_up @ g[frame, clip.index(name), :3, 3]
                np.testing.assert_allclose(head, ours, atol=1e-5)
    finally:
        action = ob.animation_data.action if ob.animation_data else None
        arm = ob.data
        bpy.data.objects.remove(ob)
        bpy.data.armatures.remove(arm)
        if action is not None:
            bpy.data.actions.remove(action)
        bpy.context.scene.frame_set(1)
