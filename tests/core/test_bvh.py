"""The benchmarks' small BVH reader (benchmarks/_bvh.py): parsing, channel order,
forward kinematics, malformed input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks import _bvh

TWO_BONES = """HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT Knee
  {
    OFFSET 0 -1 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 -2 0
    }
  }
}
MOTION
Frames: 2
Frame Time: 0.5
1 2 3 0 0 0 0 0 0
0 0 0 90 0 0 0 90 0
"""


def test_parse_hierarchy_and_motion() -> None:
    clip = _bvh.parse(TWO_BONES)
    assert clip.names == ("Hips", "Knee")
    assert clip.parents == (-1, 0)
    assert clip.n_frames == 2 and clip.frame_time == 0.5
    np.testing.assert_array_equal(clip.offsets[1], [0, -1, 0])
    np.testing.assert_array_equal(clip.end_sites[1], [0, -2, 0])
    assert clip.channels[1] == ("Zrotation", "Xrotation", "Yrotation")


def test_channels_multiply_in_listed_order() -> None:
    clip = _bvh.parse(TWO_BONES.replace("0 0 0 90 0 0 0 90 0", "0 0 0 90 30 0 0 0 0"))
    r = clip.local_rotation("Hips")[1]
    rz = _bvh.axis_rotation("Z", np.array(math.pi / 2))
    rx = _bvh.axis_rotation("X", np.array(math.pi / 6))
    np.testing.assert_allclose(r, rz @ rx, atol=1e-12)


def test_forward_kinematics() -> None:
    clip = _bvh.parse(TWO_BONES)
    g = clip.global_transforms()
    np.testing.assert_allclose(g[0, 0, :3, 3], [1, 2, 3])
    np.testing.assert_allclose(g[0, 1, :3, 3], [1, 1, 3])
    # Frame 1: hips turned 90° about Z, so the knee offset (0, -1, 0) points along +x.
    np.testing.assert_allclose(g[1, 1, :3, 3], [1, 0, 0], atol=1e-12)
    # The knee's own rotation (90° about X) turns its frame, not its origin: Rz·Rx (0, -2, 0).
    np.testing.assert_allclose(g[1, 1, :3, :3] @ [0, -2, 0], [0, 0, -2], atol=1e-12)


def test_bundled_clip_keeps_bone_lengths() -> None:
    from benchmarks.mocap import CLIP

    clip = _bvh.load(CLIP)
    assert clip.n_frames == 995
    g = clip.global_transforms()
    for a, b in (("LeftShoulder", "LeftElbow"), ("RightKnee", "RightAnkle")):
        d = np.linalg.norm(g[:, clip.index(a), :3, 3] - g[:, clip.index(b), :3, 3], axis=1)
        assert np.ptp(d) < 1e-12


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("HIERARCHY\nJOINT x", "expected ROOT"),
        (TWO_BONES.replace("Frames: 2", "Frames: 3"), "motion has"),
        (
            TWO_BONES.replace("Zrotation Xrotation Yrotation\n", "Wrotation Xrotation Yrotation\n"),
            "unknown channel",
        ),
        (TWO_BONES[: TWO_BONES.index("MOTION")], "unexpected end"),
    ],
)
def test_malformed_input_raises(text: str, match: str) -> None:
    with pytest.raises(_bvh.BvhError, match=match):
        _bvh.parse(text)


def test_unknown_joint_lists_valid_names() -> None:
    with pytest.raises(_bvh.BvhError, match="Knee"):
        _bvh.parse(TWO_BONES).index("Elbow")
