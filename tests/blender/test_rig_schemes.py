"""Detection on the skeletons animators import: Mixamo, HumanIK, Biped, DAZ, Unreal, CMU/BVH,
Rigify names; bent rests, non-zero rolls, twist bones in and beside the chains; what is not
found is named in the report."""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
import pytest

from tests.blender.limber_rigs import add_empty, evaluate, world_pose

#: Roles of the generic layout → (head, tail, parent) for the left side (x > 0); the right
#: side mirrors x. Elbows and knees are bent in the rest pose.
_LAYOUT: dict[str, tuple[tuple[float, float, float], tuple[float, float, float], str | None]] = {
    "hips": ((0, 0, 1.0), (0, 0, 1.1), None),
    "chest": ((0, 0, 1.1), (0, 0, 1.35), "hips"),
    "clavicle": ((0.05, 0, 1.35), (0.18, 0.01, 1.35), "chest"),
    "upper": ((0.18, 0.01, 1.35), (0.44, 0.05, 1.25), "clavicle"),
    "lower": ((0.44, 0.05, 1.25), (0.68, -0.04, 1.2), "upper"),
    "end": ((0.68, -0.04, 1.2), (0.76, -0.05, 1.19), "lower"),
    "thigh": ((0.1, 0, 1.0), (0.11, -0.04, 0.56), "hips"),
    "shin": ((0.11, -0.04, 0.56), (0.1, 0.03, 0.1), "thigh"),
    "foot": ((0.1, 0.03, 0.1), (0.1, -0.1, 0.02), "shin"),
}
_ROLLS = {"upper": 0.4, "lower": -0.7, "end": 0.2, "thigh": 0.3, "shin": 1.1, "foot": -0.5}


def _names(fmt: str, words: tuple[str, ...], extra: str = "") -> dict[str, str]:
    """Role → bone name for both sides, e.g. ``{"upper.L": "mixamorig:LeftArm", ...}``."""
    out: dict[str, str] = {}
    roles = ("upper", "lower", "end", "thigh", "shin", "foot", "clavicle")
    for side, word in (("L", "Left"), ("R", "Right")):
        for role, stem in zip(roles, words, strict=True):
            out[f"{role}.{side}"] = fmt.format(
                stem=stem, S=side, s=side.lower(), Side=word, side=word.lower()
            )
    return out


_MIX = ("Arm", "ForeArm", "Hand", "UpLeg", "Leg", "Foot", "Shoulder")
#: Scheme → (role names, twist bones inserted in the chain: (after role, name format)).
SCHEMES: dict[str, tuple[dict[str, str], tuple[tuple[str, str], ...]]] = {
    "rigify meta .L/.R": (_names("{stem}.{S}", ("upper_arm", "forearm", "hand", "thigh",
                                                "shin", "foot", "shoulder")), ()),
    "mixamo colon": (_names("mixamorig:{Side}{stem}", _MIX), ()),
    "mixamo1 colon": (_names("mixamorig1:{Side}{stem}", _MIX), ()),
    "mixamo underscore": (_names("mixamorig_{Side}{stem}", _MIX), ()),
    "humanik": (_names("Character1_{Side}{stem}", _MIX),
                (("upper", "Character1_{Side}ArmRoll"),)),
    "biped": (_names("Bip01 {S} {stem}", ("UpperArm", "Forearm", "Hand", "Thigh", "Calf",
                                          "Foot", "Clavicle")), ()),
    "daz genesis": (_names("{s}{stem}", ("ShldrBend", "ForearmBend", "Hand", "ThighBend",
                                         "Shin", "Foot", "Collar")),
                    (("upper", "{s}ShldrTwist"), ("lower", "{s}ForearmTwist"))),
    "unreal _l/_r": (_names("{stem}_{s}", ("upperarm", "lowerarm", "hand", "thigh", "calf",
                                           "foot", "clavicle")), ()),
    "cmu bvh joints": (_names("{Side}{stem}", ("Shoulder", "Elbow", "Wrist", "Hip", "Knee",
                                               "Ankle", "Collar")), ()),
    "cmu arm/forearm": (_names("{Side}{stem}", _MIX), ()),
    "L_ prefix": (_names("{S}_{stem}", ("UpperArm", "Forearm", "Hand", "Thigh", "Shin",
                                        "Foot", "Clavicle")), ()),
    "Leg/Shin/Foot legs": (_names("{stem}.{S}", ("upper_arm", "forearm", "hand", "Leg",
                                                 "Shin", "Foot", "shoulder")), ()),
    "_Left/_Right suffix": (_names("{stem}_{Side}", ("UpperArm", "LowerArm", "Hand",
                                                     "UpperLeg", "LowerLeg", "Foot",
                                                     "Clavicle")), ()),
}


def build(names: dict[str, str], twists: tuple[tuple[str, str], ...] = (),
          drop: tuple[str, ...] = ()) -> Any:
    """The generic bent, rolled skeleton with limb bones named by ``names`` (role.side →
    name; others keep their role name), twist bones inserted after the given roles (the
    next bone hangs from the twist bone), and the roles in ``drop`` left out."""
    arm = bpy.data.armatures.new("Scheme")
    obj = bpy.data.objects.new("Scheme", arm)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    ebs = arm.edit_bones
    for side, sign in (("L", 1.0), ("R", -1.0)):
        for role, (head, tail, parent) in _LAYOUT.items():
            if role in ("hips", "chest") and side == "R":
                continue
            key = f"{role}.{side}"
            if key in drop:
                continue
            name = names.get(key, role if role in ("hips", "chest") else key)
            eb = ebs.new(name)
            eb.head = (sign * head[0], head[1], head[2])
            eb.tail = (sign * tail[0], tail[1], tail[2])
            eb.roll = sign * _ROLLS.get(role, 0.0)
            if parent is not None:
                pkey = f"{parent}.{side}"
                pname = names.get(pkey, parent if parent in ("hips", "chest") else pkey)
                eb.parent = ebs.get(pname)
        for after, fmt in twists:
            key = f"{after}.{side}"
            base = ebs[names[key]]
            twist = ebs.new(fmt.format(S=side, s=side.lower(), Side="Left" if side == "L"
                                       else "Right"))
            twist.head = base.head
            twist.tail = base.head.lerp(base.tail, 0.5)
            twist.roll = base.roll
            twist.parent = base
            for child in list(base.children):
                if child != twist:
                    child.parent = twist
    bpy.ops.object.mode_set(mode="OBJECT")
    evaluate()
    return obj


def _want(names: dict[str, str]) -> dict[str, tuple[str, str, str]]:
    return {
        f"{kind}.{s}": tuple(names[f"{r}.{s}"] for r in roles)
        for kind, roles in (("arm", ("upper", "lower", "end")), ("leg", ("thigh", "shin",
                                                                            "foot")))
        for s in ("L", "R")
    }


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_each_scheme_finds_four_limbs(limber: Any, scheme: str) -> None:
    names, twists = SCHEMES[scheme]
    obj = build(names, twists)
    detection = limber.sub("addon.detect").detect(obj)
    assert detection.missing == {}
    assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"FINISHED"}
    got = {lb.name: (lb.upper_bone, lb.lower_bone, lb.end_bone) for lb in obj.limber.limbs}
    assert got == _want(names)


def test_twist_bones_in_the_chain_are_followed(limber: Any) -> None:
    """DAZ: ShldrTwist between ShldrBend and ForearmBend, ForearmTwist before the hand; the
    limb ends on the real hand and a target moved off the pose is reached."""
    names, twists = SCHEMES["daz genesis"]
    obj = build(names, twists)
    assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"FINISHED"}
    limb = obj.limber.limbs["arm.L"]
    assert limb.end_bone == "lHand"
    goal = world_pose(obj, "lHand")
    goal[:3, 3] += (-0.03, 0.04, 0.05)
    limb.target = add_empty("T", goal)
    st = limber.sub("addon.run.solve").solve_object(obj, limbs=["arm.L"])[0]
    assert st.reached, st.message
    assert np.linalg.norm(world_pose(obj, "lHand")[:3, 3] - goal[:3, 3]) < 1e-5


def test_unrecognised_scheme_reports_what_is_missing(limber: Any) -> None:
    names = _names("{Side}_{stem}_jnt", ("humerusX", "ulnaX", "carpus", "femurX", "tibiaX",
                                         "tarsus", "clav"))
    obj = build(names)
    detection = limber.sub("addon.detect").detect(obj)
    assert detection.limbs == []
    assert set(detection.missing) == {"arm.L", "arm.R", "leg.L", "leg.R"}
    assert "hand" in detection.missing["arm.L"] and "foot" in detection.missing["leg.R"]
    assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"CANCELLED"}
    assert len(obj.limber.limbs) == 0


def test_partial_rig_names_the_missing_bones(limber: Any) -> None:
    """Legs without feet: the arms are found, the legs reported with what was found."""
    names, _ = SCHEMES["mixamo colon"]
    obj = build(names, drop=("foot.L", "foot.R"))
    detection = limber.sub("addon.detect").detect(obj)
    assert [d.name for d in detection.limbs] == ["arm.L", "arm.R"]
    msg = detection.missing["leg.L"]
    assert "'mixamorig:LeftUpLeg'" in msg and "'mixamorig:LeftLeg'" in msg and "foot" in msg
    assert "leg.R" in detection.report()
    assert bpy.ops.limber.detect_limbs(armature=obj.name) == {"FINISHED"}
    assert [lb.name for lb in obj.limber.limbs] == ["arm.L", "arm.R"]


def test_segmented_deform_chain_is_refused_by_name(limber: Any) -> None:
    """DEF-upper_arm.L → DEF-upper_arm.L.001 → DEF-forearm.L → DEF-forearm.L.001 →
    DEF-hand.L: never a wrong limb; the report names the segments."""
    names = _names("DEF-{stem}.{S}", ("upper_arm", "forearm", "hand", "thigh", "shin", "foot",
                                      "shoulder"))
    twists = (("upper", "DEF-upper_arm.{S}.001"), ("lower", "DEF-forearm.{S}.001"))
    obj = build(names, twists)
    detection = limber.sub("addon.detect").detect(obj)
    assert [d.name for d in detection.limbs] == ["leg.L", "leg.R"]
    msg = detection.missing["arm.L"]
    assert "DEF-upper_arm.L.001" in msg and "segments" in msg
    # Added by hand from the hand: refused by name, never a wrong limb.
    with pytest.raises(RuntimeError, match=r"DEF-forearm.L.001' is a segment"):
        bpy.ops.limber.add_limb(armature=obj.name, end_bone="DEF-hand.L")
    assert "arm.L" not in obj.limber.limbs and "DEF-hand.L" not in obj.limber.limbs
