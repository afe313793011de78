"""Finding arms and legs by bone names: data-driven tables, no if-chains.

A bone name is parsed as ``[namespace:][vendor prefix][copy prefix]<side-decorated stem>
[.NNN]``: the namespace (``mixamorig:``), a vendor prefix (:data:`VENDOR_PREFIXES`:
``mixamorig_``, ``Character1_``, ``Bip01 ``), a copy prefix (:data:`PREFIX_PREFERENCE`:
Rigify's ``ORG-``/``DEF-``), the side by the patterns of :data:`SIDE_PATTERNS` (``.L``,
``_l``, ``Left``, ``L_``, ``L ``, DAZ's ``l``) and the stem, lower case without separators.

A limb is one of the stem triples of :data:`LIMB_SCHEMES` (upper, lower, end; Rigify, Mixamo
and HumanIK, Biped, DAZ Genesis, Unreal, CMU/BVH, ...) found in one (namespace, prefix,
side) group, each bone below the previous one. Bones between them (twist or roll bones) are
followed as helpers; on a generated Rigify rig the FK controls are the limb
(:data:`RIGIFY_FK`); a main bone split into numbered segments (``DEF-forearm.L.001``) is
refused with a message, since only its first segment would bend. Per side and kind the
first scheme, in :data:`PREFIX_PREFERENCE` order, wins (a generated Rigify rig has ORG- and
DEF- copies). What is not found is listed by :func:`detect` with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

#: Per limb kind: stem triples (upper, lower, end), tried in order; stems are the bone
#: names without namespace, prefixes and side, lower case, separators removed.
LIMB_SCHEMES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "arm": (
        ("upperarm", "forearm", "hand"),  # Rigify, Biped ("Bip01 L UpperArm"), space/L_
        ("arm", "forearm", "hand"),  # Mixamo, HumanIK, CMU (LeftArm/LeftForeArm/LeftHand)
        ("upperarm", "lowerarm", "hand"),  # Unreal (upperarm_l / lowerarm_l / hand_l)
        ("shldrbend", "forearmbend", "hand"),  # DAZ Genesis (lShldrBend / lForearmBend)
        ("shoulder", "elbow", "wrist"),  # CMU BVH joints (LeftShoulder / LeftElbow)
        ("humerus", "radius", "hand"),
    ),
    "leg": (
        ("thigh", "shin", "foot"),  # Rigify, DAZ 3 (lThigh / lShin / lFoot)
        ("upleg", "leg", "foot"),  # Mixamo, HumanIK, CMU (LeftUpLeg / LeftLeg / LeftFoot)
        ("thigh", "calf", "foot"),  # Unreal, Biped (Bip01 L Thigh / Calf / Foot)
        ("thighbend", "shin", "foot"),  # DAZ Genesis 8 (lThighBend / lShin / lFoot)
        ("upperleg", "lowerleg", "foot"),
        ("leg", "shin", "foot"),  # Leg.L / Shin.L / Foot.L
        ("hip", "knee", "ankle"),  # CMU BVH joints (LeftHip / LeftKnee / LeftAnkle)
        ("femur", "tibia", "foot"),
    ),
}
#: Human-readable role names per kind, for reports.
ROLE_WORDS: dict[str, tuple[str, str, str]] = {
    "arm": ("upper arm", "forearm", "hand"),
    "leg": ("thigh", "shin", "foot"),
}
ROLES: tuple[str, ...] = ("upper", "lower", "end")
SIDES: tuple[str, ...] = ("L", "R")
#: Limb naming: kind → limb name stem; the side is appended as ".L" / ".R".
KIND_NAMES: dict[str, str] = {"arm": "arm", "leg": "leg"}

#: Normalised stem → (limb kind, role) of its first scheme (for :func:`parse_bone_name`).
STEMS: dict[str, tuple[str, str]] = {}
for _kind, _triples in LIMB_SCHEMES.items():
    for _triple in _triples:
        for _role, _stem in zip(ROLES, _triple, strict=True):
            STEMS.setdefault(_stem, (_kind, _role))

#: Side decorations: (regex with a ``stem`` group, side). Tried in order.
SIDE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), side)
    for p, side in (
        (r"^(?P<stem>.+)[._ ]L$", "L"),
        (r"^(?P<stem>.+)[._ ]R$", "R"),
        (r"^(?P<stem>.+)[._ ]l$", "L"),
        (r"^(?P<stem>.+)[._ ]r$", "R"),
        (r"^(?P<stem>.+)[._ ]?Left$", "L"),
        (r"^(?P<stem>.+)[._ ]?Right$", "R"),
        (r"^Left[._ ]?(?P<stem>.+)$", "L"),
        (r"^Right[._ ]?(?P<stem>.+)$", "R"),
        (r"^(?P<stem>.+)[._ ]left$", "L"),
        (r"^(?P<stem>.+)[._ ]right$", "R"),
        (r"^left[._ ]?(?P<stem>.+)$", "L"),
        (r"^right[._ ]?(?P<stem>.+)$", "R"),
        (r"^[Ll][._ ](?P<stem>.+)$", "L"),  # L_UpperArm, Biped "L UpperArm"
        (r"^[Rr][._ ](?P<stem>.+)$", "R"),
        (r"^l(?P<stem>[A-Z].*)$", "L"),  # DAZ lShldrBend
        (r"^r(?P<stem>[A-Z].*)$", "R"),
    )
)

#: Copy prefixes of a bone, most preferred first ('' = plain name).
PREFIX_PREFERENCE: tuple[str, ...] = ("", "ORG-", "DEF-")
#: Vendor prefixes (part of the group, like a namespace): Mixamo without a namespace,
#: HumanIK, 3ds Max Biped.
VENDOR_PREFIXES = re.compile(r"^(mixamorig\d*_|Character\d*_|Bip\d+[ _])")

_NAMESPACE = re.compile(r"^(?P<ns>[^:]*:)?(?P<rest>.*)$")
_SEGMENT = re.compile(r"^(?P<base>.+)\.(?P<n>\d{3})$")
_SEPARATORS = re.compile(r"[._ \-]")
#: At most this many bones between two main bones (twist / roll / helper bones).
MAX_BETWEEN = 3


@dataclass(frozen=True)
class ParsedName:
    namespace: str
    prefix: str
    side: str
    kind: str
    role: str
    stem: str = ""


def _split(name: str) -> tuple[str, str, str, str] | None:
    """(namespace + vendor prefix, copy prefix, side, stem) of a bone name, or None.
    Numbered segments (``.001``) are not parsed (they are not main bones)."""
    if _SEGMENT.match(name):
        return None
    m = _NAMESPACE.match(name)
    assert m is not None
    ns, rest = m.group("ns") or "", m.group("rest")
    vm = VENDOR_PREFIXES.match(rest)
    if vm is not None:
        ns += vm.group(0)
        rest = rest[vm.end():]
    prefix = next((p for p in PREFIX_PREFERENCE if p and rest.startswith(p)), "")
    rest = rest[len(prefix):]
    for pattern, side in SIDE_PATTERNS:
        sm = pattern.match(rest)
        if sm is None:
            continue
        stem = _SEPARATORS.sub("", sm.group("stem")).lower()
        if stem in STEMS:
            return ns, prefix, side, stem
    return None


def parse_bone_name(name: str) -> ParsedName | None:
    """Classify a bone name, or None if it is not an arm/leg bone of a known scheme (the
    kind and role are those of the stem's first scheme; a stem such as ``shoulder`` is an
    upper arm only where the rest of its scheme is present)."""
    hit = _split(name)
    if hit is None:
        return None
    ns, prefix, side, stem = hit
    kind, role = STEMS[stem]
    return ParsedName(ns, prefix, side, kind, role, stem)


@dataclass(frozen=True)
class DetectedLimb:
    name: str
    upper: str
    lower: str
    end: str
    #: Pose bone holding the limb's IK/FK switch (custom property :data:`RIGIFY_SWITCH`;
    #: generated Rigify rigs), or '' when the limb has none.
    switch: str = ""


#: Generated Rigify rigs (armature data with a ``rig_id``): per kind, the FK controls
#: (upper, lower, end) and the bone holding the IK/FK switch; the side is appended as
#: ``.L`` / ``.R``. Limber solves the FK controls (through the MCH- helper bones between
#: them); the ORG- and DEF- bones follow them once the switch is at FK.
RIGIFY_FK: dict[str, tuple[str, str, str, str]] = {
    "arm": ("upper_arm_fk", "forearm_fk", "hand_fk", "upper_arm_parent"),
    "leg": ("thigh_fk", "shin_fk", "foot_fk", "thigh_parent"),
}
#: The switch's custom property and its FK value (0 = IK, 1 = FK).
RIGIFY_SWITCH = "IK_FK"
RIGIFY_FK_VALUE = 1.0
RIGIFY_IK_VALUE = 0.0
#: The switch bone's property turning the IK pole control on (else the IK base control's
#: rotation sets the swivel).
RIGIFY_POLE_SWITCH = "pole_vector"


@dataclass(frozen=True)
class RigifyIk:
    """A generated Rigify limb's IK chain (names without the side): the IK base control
    (upper bone), the mechanism bone bending under the IK constraint (lower), the IK end
    control, the pole control, the bone whose transform the ORG- end bone copies in IK
    (the end control's result), the ORG- bones (what the rig shows in either mode) and
    the DEF- end bone; ``tail``: (FK control, ORG- bone) pairs below the end bone that
    the FK chain carries too (the toe)."""

    base: str
    mch: str
    control: str
    pole: str
    result: str
    org: tuple[str, str, str]
    deform_end: str
    tail: tuple[tuple[str, str], ...] = ()

    def sided(self, side: str) -> RigifyIk:
        """The same names with ``.<side>`` appended."""
        def s(n: str) -> str:
            return f"{n}.{side}"
        return RigifyIk(s(self.base), s(self.mch), s(self.control), s(self.pole),
                        s(self.result), (s(self.org[0]), s(self.org[1]), s(self.org[2])),
                        s(self.deform_end), tuple((s(f), s(o)) for f, o in self.tail))


#: Generated Rigify rigs: per kind, the IK chain Limber drives in IK mode.
RIGIFY_IK: dict[str, RigifyIk] = {
    "arm": RigifyIk("upper_arm_ik", "MCH-forearm_ik", "hand_ik", "upper_arm_ik_target",
                    "MCH-upper_arm_ik_target", ("ORG-upper_arm", "ORG-forearm", "ORG-hand"),
                    "DEF-hand"),
    "leg": RigifyIk("thigh_ik", "MCH-shin_ik", "foot_ik", "thigh_ik_target",
                    "MCH-thigh_ik_target", ("ORG-thigh", "ORG-shin", "ORG-foot"), "DEF-foot",
                    (("toe_fk", "ORG-toe"),)),
}


def rigify_ik(obj: Any, switch_bone: str) -> RigifyIk | None:
    """The IK chain of the Rigify limb whose IK/FK switch is ``switch_bone``
    (``upper_arm_parent.L``), or None when the rig lacks any of its bones."""
    stem, _, side = switch_bone.rpartition(".")
    kind = next((k for k, v in RIGIFY_FK.items() if v[3] == stem), None)
    if kind is None or not side:
        return None
    ik = RIGIFY_IK[kind].sided(side)
    names = (ik.base, ik.mch, ik.control, ik.pole, ik.result, *ik.org, ik.deform_end)
    bones = obj.data.bones
    if not all(n in bones for n in names):
        return None
    return replace(ik, tail=tuple(t for t in ik.tail if t[0] in bones and t[1] in bones))


def _rigify_fk(obj: Any, kind: str, side: str) -> DetectedLimb | None:
    """The FK controls of a generated Rigify rig's limb, or None (not such a rig)."""
    if "rig_id" not in obj.data:
        return None
    names = [f"{n}.{side}" for n in RIGIFY_FK[kind]]
    bones = obj.data.bones
    if not all(n in bones for n in names[:3]):
        return None
    pb = obj.pose.bones.get(names[3])
    switch = names[3] if pb is not None and RIGIFY_SWITCH in pb.keys() else ""
    return DetectedLimb(f"{KIND_NAMES[kind]}.{side}", names[0], names[1], names[2], switch)


@dataclass(frozen=True)
class Detection:
    """What :func:`detect` found: the limbs, and per limb not found the reason."""

    limbs: list[DetectedLimb]
    missing: dict[str, str] = field(default_factory=dict)

    def report(self) -> str:
        """One line for the operator report: found limbs, then what is missing and why."""
        found = ", ".join(d.name for d in self.limbs) or "none"
        text = f"{len(self.limbs)} limbs: {found}"
        if self.missing:
            text += "; not found: " + "; ".join(f"{k} ({v})" for k, v in self.missing.items())
        return text


def _between(bones: Any, child: Any, ancestor: Any) -> list[str] | None:
    """Bone names strictly between ``child`` and ``ancestor`` (None: not within reach)."""
    out: list[str] = []
    b = child.parent
    while b is not None and b != ancestor and len(out) <= MAX_BETWEEN:
        out.append(b.name)
        b = b.parent
    return out if b == ancestor and len(out) <= MAX_BETWEEN else None


def _segments(main: str, between: list[str]) -> list[str]:
    """The bones of ``between`` that are numbered segments of ``main`` (``main.001``)."""
    return [n for n in between if (m := _SEGMENT.match(n)) and m.group("base") == main]


def detect(obj: Any) -> Detection:
    """Arms and legs of an armature object in (arm, leg) × (L, R) order, and the reason
    for each limb that was not found (by name, never a silent partial result)."""
    bones = obj.data.bones
    groups: dict[tuple[str, str, str], dict[str, str]] = {}
    for bone in bones:
        hit = _split(bone.name)
        if hit is None:
            continue
        ns, prefix, side, stem = hit
        groups.setdefault((ns, prefix, side), {}).setdefault(stem, bone.name)
    found: list[DetectedLimb] = []
    missing: dict[str, str] = {}
    for kind, triples in LIMB_SCHEMES.items():
        for side in SIDES:
            limb_name = f"{KIND_NAMES[kind]}.{side}"
            rigify = _rigify_fk(obj, kind, side)
            if rigify is not None:
                found.append(rigify)
                continue
            keys = sorted(
                (k for k in groups if k[2] == side),
                key=lambda k: (PREFIX_PREFERENCE.index(k[1]), k[0]),
            )
            hit_limb, reason = _find(bones, groups, keys, triples, kind)
            if hit_limb is not None:
                found.append(DetectedLimb(limb_name, *hit_limb))
            else:
                missing[limb_name] = reason
    return Detection(found, missing)


def _find(
    bones: Any,
    groups: dict[tuple[str, str, str], dict[str, str]],
    keys: list[tuple[str, str, str]],
    triples: tuple[tuple[str, str, str], ...],
    kind: str,
) -> tuple[tuple[str, str, str] | None, str]:
    """The first (upper, lower, end) of a scheme in the groups ``keys``, or None and the
    reason of the most complete candidate."""
    words = ROLE_WORDS[kind]
    best: tuple[int, str] = (-1, f"no {' / '.join(words)} bones recognised")
    for key in keys:
        stems = groups[key]
        for triple in triples:
            names = [stems.get(s) for s in triple]
            present = [n for n in names if n is not None]
            if len(present) < 3:
                if present and len(present) > best[0]:
                    lacking = [w for w, n in zip(words, names, strict=True) if n is None]
                    best = (len(present), f"found {', '.join(repr(n) for n in present)}; "
                            f"no {' or '.join(lacking)} bone of the same scheme")
                continue
            up, lo, en = (bones[n] for n in names)
            pairs = ((lo, up), (en, lo))
            gaps = [_between(bones, c, a) for c, a in pairs]
            if gaps[0] is None or gaps[1] is None:
                bad = 0 if gaps[0] is None else 1
                c, a = pairs[bad]
                if best[0] < 3:
                    best = (3, f"{c.name!r} is not below {a.name!r}")
                continue
            segs = _segments(up.name, gaps[0]) + _segments(lo.name, gaps[1])
            if segs:
                if best[0] < 4:
                    best = (4, f"{up.name!r} / {lo.name!r} are split into segments "
                            f"({', '.join(segs)}): map the unsegmented (ORG- or FK) bones")
                continue
            return (up.name, lo.name, en.name), ""
    return None, best[1]


def segmented(*names: str) -> str:
    """Which of ``names`` are numbered segments (``DEF-forearm.L.001`` of
    ``DEF-forearm.L``), as a message; '' when none is."""
    found = [(n, m.group("base")) for n in names if (m := _SEGMENT.match(n))]
    return ", ".join(f"{n!r} is a segment of {base!r}" for n, base in found)


def detect_limbs(obj: Any) -> list[DetectedLimb]:
    """Arms and legs of an armature object, in (arm, leg) × (L, R) order (see
    :func:`detect` for the reasons of the limbs not found)."""
    return detect(obj).limbs
