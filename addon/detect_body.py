"""Finding a body: root, spine, neck, head and the four limbs of an armature.

Data-driven like :mod:`.detect` (whose limb detection it reuses):

* the **limbs** are :func:`.detect.detect`'s (on a generated Rigify rig its FK controls);
* the **root** (pelvis / hips) is the Rigify ``torso`` control on a generated Rigify rig,
  else the lowest common ancestor of the legs' upper bones (the meta-rig's ``spine``,
  Mixamo's ``Hips``), else a bone named by :data:`ROOT_STEMS`;
* the **chest** is the lowest common ancestor of the arms' upper bones; the **trunk** is
  the path from the root down to the chest;
* the **head** is the bone named by :data:`HEAD_STEMS`, or on a Rigify meta-rig the last
  bone of the connected chain its ``spines.super_head`` bone starts; the **neck** is the
  path from the head up to the trunk;
* the bones that **bend** are the trunk, neck and head bones that are controls (not a
  Rigify helper, :data:`HELPER_PREFIXES`) and whose effect reaches the chest (head)
  unblended: no enabled constraint on the bone or between it and the chest (head). On a
  generated Rigify rig that is ``spine_fk.003`` and ``head`` (the ``MCH-`` bones between
  the other FK controls copy half of the hips / chest controls' transforms).

What is not found is reported by name (:attr:`DetectedBody.missing`), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .detect import DetectedLimb, detect

#: Bone-name stems (lower case, separators removed) of a root bone, tried in order.
ROOT_STEMS: tuple[str, ...] = ("hips", "pelvis", "hip", "root")
#: Bone-name stems of a head bone.
HEAD_STEMS: tuple[str, ...] = ("head",)
#: The Rigify meta-rig type whose connected chain ends in the head.
RIGIFY_HEAD_TYPE = "spines.super_head"
#: Name prefixes of helper bones that never bend as part of the body (generated Rigify).
HELPER_PREFIXES: tuple[str, ...] = ("MCH-", "ORG-", "DEF-", "VIS_", "tweak_")
#: The generated Rigify rig's root control.
RIGIFY_ROOT = "torso"


class BodyNotFound(ValueError):
    """The armature has no body Limber can recognise (the message says what is missing)."""


@dataclass(frozen=True)
class DetectedBody:
    """What :func:`detect_body` found.

    Attributes:
        root: the root bone (moves and turns: location and rotation are solved).
        bend: trunk, neck and head bones that rotate, root side first.
        head: the head bone ('' when none was found).
        limbs: the detected arms and legs (analytic units of the body).
        missing: {part: why} for what was not found.
    """

    root: str
    bend: tuple[str, ...]
    head: str
    limbs: tuple[DetectedLimb, ...]
    missing: dict[str, str] = field(default_factory=dict)

    def report(self) -> str:
        """One line for the operator report."""
        text = (f"root {self.root}, bending {', '.join(self.bend) or 'nothing'}, head "
                f"{self.head or 'none'}, limbs {', '.join(d.name for d in self.limbs)}")
        if self.missing:
            text += "; not found: " + "; ".join(f"{k} ({v})" for k, v in self.missing.items())
        return text


def _stem(name: str) -> str:
    base = name.rsplit(":", 1)[-1]
    for sep in "._ -":
        base = base.replace(sep, "")
    return base.lower()


def _path(bone: Any) -> list[Any]:
    """``bone`` and its ancestors, the bone first."""
    out = []
    while bone is not None:
        out.append(bone)
        bone = bone.parent
    return out


def _common_ancestor(bones: list[Any]) -> Any:
    """The lowest bone that is an ancestor of (or is) every bone of ``bones``; None."""
    if not bones:
        return None
    common = _path(bones[0])
    for b in bones[1:]:
        names = {x.name for x in _path(b)}
        common = [x for x in common if x.name in names]
    return common[0] if common else None


def _between(top: Any, bottom: Any) -> list[Any]:
    """Bones from below ``top`` down to ``bottom`` (inclusive), top side first; [] when
    ``top`` is not above ``bottom``."""
    out = []
    b = bottom
    while b is not None and b != top:
        out.append(b)
        b = b.parent
    return list(reversed(out)) if b == top else []


def _find_root(obj: Any, legs: list[DetectedLimb]) -> tuple[Any, str]:
    bones = obj.data.bones
    if "rig_id" in obj.data and RIGIFY_ROOT in bones:
        return bones[RIGIFY_ROOT], ""
    if legs:
        uppers = [bones[d.upper].parent for d in legs]
        if all(u is not None for u in uppers):
            lca = _common_ancestor(uppers)
            if lca is not None:
                return lca, ""
    for stem in ROOT_STEMS:
        for b in bones:
            if _stem(b.name) == stem:
                return b, ""
    return None, "no legs to find the pelvis by, and no bone named " + "/".join(ROOT_STEMS)


def _find_head(obj: Any, root: Any) -> Any:
    below = {b.name for b in root.children_recursive}
    for b in obj.data.bones:
        if b.name in below and _stem(b.name) in HEAD_STEMS:
            return b
    for pb in obj.pose.bones:
        if pb.name in below and getattr(pb, "rigify_type", "") == RIGIFY_HEAD_TYPE:
            b = pb.bone
            while True:
                nxt = [c for c in b.children if c.use_connect]
                if len(nxt) != 1:
                    return b
                b = nxt[0]
    return None


def _unblended(obj: Any, chain: list[Any]) -> list[str]:
    """The bones of ``chain`` (top side first, ending at the chest or head) that bend the
    body: controls with no enabled constraint on themselves or below them in ``chain``."""
    pbs = obj.pose.bones
    out: list[str] = []
    constrained_below = False
    for b in reversed(chain):
        pb = pbs[b.name]
        if any(c.enabled and c.influence > 0.0 for c in pb.constraints):
            constrained_below = True
            continue
        if not constrained_below and not b.name.startswith(HELPER_PREFIXES):
            out.append(b.name)
    return list(reversed(out))


def detect_body(obj: Any) -> DetectedBody:
    """The body of an armature object (see the module docstring). Raises
    :class:`BodyNotFound` when there is no root or no limb."""
    found = detect(obj)
    limbs = tuple(found.limbs)
    if not limbs:
        raise BodyNotFound(f"no arms or legs recognised: {found.report()}")
    missing = dict(found.missing)
    legs = [d for d in limbs if d.name.startswith("leg")]
    arms = [d for d in limbs if d.name.startswith("arm")]
    root, why = _find_root(obj, legs)
    if root is None:
        raise BodyNotFound(f"no root bone: {why}")
    bones = obj.data.bones
    limb_bones = {n for d in limbs for n in (d.upper, d.lower, d.end)}
    if root.name in limb_bones:
        raise BodyNotFound(f"root bone {root.name!r} is a limb bone")
    chest = _common_ancestor([bones[d.upper] for d in arms]) if arms else None
    trunk = _between(root, chest) if chest is not None else []
    if chest is not None and not trunk and chest != root:
        missing["spine"] = f"the arms' common bone {chest.name!r} is not below {root.name!r}"
    head = _find_head(obj, root)
    neck: list[Any] = []
    if head is None:
        missing["head"] = "no bone named " + "/".join(HEAD_STEMS) + " below the root"
    else:
        on_trunk = {b.name for b in trunk} | {root.name}
        b = head
        while b is not None and b.name not in on_trunk:
            neck.append(b)
            b = b.parent
        neck.reverse()
        if b is None:
            missing["head"] = f"{head.name!r} is not below {root.name!r}"
            head, neck = None, []
    bend = _unblended(obj, trunk) + (_unblended(obj, neck) if neck else [])
    bend = [n for n in bend if n not in limb_bones]
    return DetectedBody(root=root.name, bend=tuple(bend),
                        head="" if head is None else head.name, limbs=limbs, missing=missing)
