"""The IK/FK switch properties a limb and a body's pin share (one mixin): registered on
both property groups, writable, and still there after unregister/register twice."""

from __future__ import annotations

import importlib
from typing import Any

import bpy

from tests.blender.limber_rigs import RIGIFY_LIMBS, add_limb, metarig

SWITCH = ("switch_bone", "switch_restore", "switch_keyed")


def _registered(limber: Any) -> None:
    props = limber.sub("addon.props")
    for cls in (props.LIMBER_PG_limb, props.LIMBER_PG_pin):
        rna = cls.bl_rna.properties
        for name in SWITCH:
            assert name in rna, (cls.__name__, name)
        assert rna["switch_restore"].is_hidden and rna["switch_keyed"].is_hidden
        assert not rna["switch_bone"].is_hidden


def test_limb_and_pin_share_the_switch_properties(limber: Any) -> None:
    _registered(limber)
    package = importlib.import_module(limber.module)
    try:
        for _ in range(2):
            package.unregister()
            package.register()
            _registered(limber)
    finally:
        limber.ensure_registered()
    obj = metarig()
    lb = add_limb(obj, "arm.L", RIGIFY_LIMBS["arm.L"])
    lb.switch_bone, lb.switch_restore, lb.switch_keyed = "upper_arm_parent.L", 0.5, True
    assert (lb.switch_bone, lb.switch_restore, lb.switch_keyed) == ("upper_arm_parent.L", 0.5,
                                                                   True)
    assert bpy.ops.limber.add_body(armature=obj.name) == {"FINISHED"}
    pins = obj.limber.bodies[-1].pins
    hand = next(p for p in pins if p.kind == "HAND")
    hand.switch_restore = 0.25
    assert hand.switch_restore == 0.25 and hand.switch_bone == "" and not hand.switch_keyed
