"""The numeric level's stop test for one active row on Python scalars (_settle_one) takes
the same decisions as its batched form (_settle_rows): the stall count, the polishing
flag, the reason and whether the row is done, objectives compared lexicographically."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.body.solve import _settle_one, _settle_rows
from core.chain.settings import StopReason

_VALUES = st.sampled_from([0.0, 1e-12, 1e-6, 0.5, 1.0, 1.0 - 1e-7, 2.0, np.inf, np.nan])


def _batched(
    moved: float,
    met: bool,
    near: bool,
    obj: list[float],
    now: list[float],
    stall: int,
    polish: bool,
) -> tuple[bool, int, bool, object]:
    """_settle_rows on a batch of one row: (done, stall, polish, reason)."""
    stall_a = np.array([stall])
    polish_a = np.array([polish])
    reasons = np.array([StopReason.REACHED], dtype=object)
    keep = _settle_rows(
        np.array([0]),
        np.array([moved]),
        np.array([met]),
        np.array([near]),
        np.array([obj]),
        np.array([now]),
        stall_a,
        polish_a,
        reasons,
        1e-9,
    )
    return not bool(keep[0]), int(stall_a[0]), bool(polish_a[0]), reasons[0]


@settings(max_examples=400, deadline=None)
@given(
    moved=st.sampled_from([0.0, 1e-10, 1e-3, 2e-3, 3e-3, 4e-3, 1.0]),
    met=st.booleans(),
    near=st.booleans(),
    obj=st.lists(_VALUES, min_size=2, max_size=3),
    now=st.lists(_VALUES, min_size=3, max_size=3),
    stall=st.integers(0, 12),
    polish=st.booleans(),
)
def test_one_row_stop_test_is_the_batched_one(
    moved: float,
    met: bool,
    near: bool,
    obj: list[float],
    now: list[float],
    stall: int,
    polish: bool,
) -> None:
    near = near or met  # (the caller's: met goals are near)
    now = now[: len(obj)]
    stall_a = np.array([stall])
    polish_a = np.array([polish])
    reasons = np.array([StopReason.REACHED], dtype=object)
    done = _settle_one(0, moved, met, near, obj, now, stall_a, polish_a, reasons, 1e-9)
    assert (done, int(stall_a[0]), bool(polish_a[0]), reasons[0]) == _batched(
        moved, met, near, obj, now, stall, polish
    )
