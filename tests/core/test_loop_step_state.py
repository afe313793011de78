"""The loop's fast StepState constructor builds the same frozen instance as the dataclass."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from core.chain.loop import STEP_STATE_FIELDS, StepState, step_state


def _values() -> dict[str, object]:
    a = np.arange(6.0).reshape(2, 3)
    return {name: (a if name in ("q", "e", "J") else name) for name in STEP_STATE_FIELDS}


def test_step_state_equals_the_dataclass() -> None:
    values = _values()
    fast, slow = step_state(**values), StepState(**values)  # type: ignore[arg-type]
    assert type(fast) is StepState
    assert STEP_STATE_FIELDS == tuple(f.name for f in dataclasses.fields(StepState))
    assert vars(fast).keys() == vars(slow).keys()
    for name in STEP_STATE_FIELDS:
        assert getattr(fast, name) is getattr(slow, name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.iteration = 1  # type: ignore[misc]
    assert dataclasses.replace(fast, iteration=7).iteration == 7


def test_step_state_needs_every_field() -> None:
    values = _values()
    del values["frames"]
    with pytest.raises(TypeError, match="frames"):
        step_state(**values)
