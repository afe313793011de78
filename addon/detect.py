"""Finding arms and legs by bone names: data-driven tables, no if-chains.

A bone name is parsed as ``[namespace:][prefix]<side-decorated stem>``; the stem is looked
up in :data:`STEMS` (Rigify, Mixamo, Unreal/common names) and the side by the patterns of
:data:`SIDE_PATTERNS`. Bones of one (namespace, prefix, side, kind) group with all three
roles and a direct parent chain form a limb; per side and kind the first group in
:data:`PREFIX_PREFERENCE` order wins (a generated Rigify rig has ORG- and DEF- copies).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Normalised stem (lower case, no separators) → (limb kind, role).
STEMS: dict[str, tuple[str, str]] = {
    # Rigify (meta-rig and ORG-/DEF- bones of generated rigs)
    "upperarm": ("arm", "upper"),
    "forearm": ("arm", "lower"),
    "hand": ("arm", "end"),
    "thigh": ("leg", "upper"),
    "shin": ("leg", "lower"),
    "foot": ("leg", "end"),
    # Mixamo (mixamorig:LeftArm / LeftForeArm / LeftHand, LeftUpLeg / LeftLeg / LeftFoot)
    "arm": ("arm", "upper"),
    "upleg": ("leg", "upper"),
    "leg": ("leg", "lower"),
    # Unreal / common variants
    "lowerarm": ("arm", "lower"),
    "upperleg": ("leg", "upper"),
    "lowerleg": ("leg", "lower"),
    "calf": ("leg", "lower"),
}

#: Side decorations: (regex with a ``stem`` group, side).
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
    )
)

#: Name prefixes of a bone's copy, most preferred first ('' = plain name).
PREFIX_PREFERENCE: tuple[str, ...] = ("", "ORG-", "DEF-")

#: Limb naming: kind → limb name stem; the side is appended as ".L" / ".R".
KIND_NAMES: dict[str, str] = {"arm": "arm", "leg": "leg"}
ROLES: tuple[str, ...] = ("upper", "lower", "end")
SIDES: tuple[str, ...] = ("L", "R")

_NAMESPACE = re.compile(r"^(?P<ns>[^:]*:)?(?P<rest>.*)$")
_SEPARATORS = re.compile(r"[._ \-]")


@dataclass(frozen=True)
class ParsedName:
    namespace: str
    prefix: str
    side: str
    kind: str
    role: str


def parse_bone_name(name: str) -> ParsedName | None:
    """Classify a bone name, or None if it is not an arm/leg bone of a known scheme."""
    m = _NAMESPACE.match(name)
    assert m is not None
    ns, rest = m.group("ns") or "", m.group("rest")
    prefix = next((p for p in PREFIX_PREFERENCE if p and rest.startswith(p)), "")
    rest = rest[len(prefix) :]
    for pattern, side in SIDE_PATTERNS:
        sm = pattern.match(rest)
        if sm is None:
            continue
        stem = _SEPARATORS.sub("", sm.group("stem")).lower()
        hit = STEMS.get(stem)
        if hit is not None:
            return ParsedName(ns, prefix, side, hit[0], hit[1])
    return None


@dataclass(frozen=True)
class DetectedLimb:
    name: str
    upper: str
    lower: str
    end: str


def detect_limbs(obj: Any) -> list[DetectedLimb]:
    """Arms and legs of an armature object, in (arm, leg) × (L, R) order."""
    groups: dict[tuple[str, str, str, str], dict[str, str]] = {}
    for bone in obj.data.bones:
        parsed = parse_bone_name(bone.name)
        if parsed is None:
            continue
        key = (parsed.namespace, parsed.prefix, parsed.side, parsed.kind)
        groups.setdefault(key, {}).setdefault(parsed.role, bone.name)
    bones = obj.data.bones
    found: list[DetectedLimb] = []
    for kind in KIND_NAMES:
        for side in SIDES:
            candidates = sorted(
                (k for k in groups if k[2] == side and k[3] == kind),
                key=lambda k: (PREFIX_PREFERENCE.index(k[1]), k[0]),
            )
            for key in candidates:
                roles = groups[key]
                if not all(r in roles for r in ROLES):
                    continue
                up, lo, en = (bones[roles[r]] for r in ROLES)
                if lo.parent != up or en.parent != lo:
                    continue
                found.append(DetectedLimb(f"{KIND_NAMES[kind]}.{side}", up.name, lo.name, en.name))
                break
    return found
