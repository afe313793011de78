"""SolveSettings is the flat alias of the loop's settings and each method's own part."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest

from core import (
    DLSSettings,
    InvalidInputError,
    LBFGSBSettings,
    LoopSettings,
    Method,
    SolveSettings,
)
from core.chain.settings import METHOD_SETTINGS, SETTINGS_PARTS


def test_every_flat_field_belongs_to_a_part_with_the_same_default() -> None:
    flat = {f.name: f.default for f in fields(SolveSettings)}
    covered = set()
    for part in SETTINGS_PARTS:
        for f in fields(part):
            assert f.name in flat, (part.__name__, f.name)
            assert f.default == flat[f.name] or (
                isinstance(f.default, float) and math.isclose(f.default, flat[f.name])
            ), (part.__name__, f.name)
            covered.add(f.name)
    assert covered == set(flat)
    assert set(METHOD_SETTINGS) == set(Method)


def test_compose_and_part_round_trip() -> None:
    s = SolveSettings.compose(LoopSettings(max_iterations=7), DLSSettings(damping=0.2))
    assert s == SolveSettings(max_iterations=7, damping=0.2)
    assert s.part(DLSSettings) == DLSSettings(damping=0.2)
    assert s.part(LoopSettings).max_iterations == 7
    assert s.part(LBFGSBSettings) == LBFGSBSettings()


def test_compose_validates_like_the_flat_settings() -> None:
    with pytest.raises(InvalidInputError, match="damping"):
        SolveSettings.compose(DLSSettings(damping=-1.0))
    with pytest.raises(InvalidInputError, match="settings parts"):
        SolveSettings.compose(SolveSettings())
