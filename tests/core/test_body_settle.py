"""The numeric level's stop test for one active row on Python scalars (_settle_one) takes
the same decisions as its batched form (the stall count, the polishing flag, the reason
and whether the row is done), objectives compared by lexicographic_less."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.body.solve import _PROGRESS, _REST_STEP, _SETTLED, _STALL, _settle_one
from core.chain.loop import lexicographic_less
from core.chain.settings import StopReason

_VALUES = st.sampled_from([0.0, 1e-12, 1e-6, 0.5, 1.0, 1.0 - 1e-7, 2.0, np.inf, np.nan])


def _batched(
    moved: float, met: bool, obj: list[float], now: list[float], stall: int, polish: bool
) -> tuple[bool, int, bool, object]:
    """The batched test of _numeric on one row: (done, stall, polish, reason)."""
    step_tolerance = 1e-9
    act = np.array([0])
    stall_a = np.array([stall])
    polish_a = np.array([polish])
    reasons = np.array([StopReason.REACHED], dtype=object)
    moved_a, met_a = np.array([moved]), np.array([met])
    improved = lexicographic_less(np.array([obj]), np.array([now]), 1.0 - _PROGRESS)[0]
    stall_a[act] = np.where(improved, 0, stall_a[act] + 1)
    small = moved_a <= step_tolerance
    done_conv = met_a & (small | (stall_a[act] >= _SETTLED) | polish_a[act])
    polish_a[act[met_a & ~done_conv & (moved_a <= _REST_STEP)]] = True
    done_stall = ~met_a & (small | (stall_a[act] >= _STALL))
    reasons[act[done_stall]] = StopReason.STALLED
    done = bool((done_conv | done_stall)[0])
    return done, int(stall_a[0]), bool(polish_a[0]), reasons[0]


@settings(max_examples=400, deadline=None)
@given(
    moved=st.sampled_from([0.0, 1e-10, 1e-3, 2e-3, 3e-3, 4e-3, 1.0]),
    met=st.booleans(),
    obj=st.lists(_VALUES, min_size=2, max_size=3),
    now=st.lists(_VALUES, min_size=3, max_size=3),
    stall=st.integers(0, 12),
    polish=st.booleans(),
)
def test_one_row_stop_test_is_the_batched_one(
    moved: float, met: bool, obj: list[float], now: list[float], stall: int, polish: bool
) -> None:
    now = now[: len(obj)]
    stall_a = np.array([stall])
    polish_a = np.array([polish])
    reasons = np.array([StopReason.REACHED], dtype=object)
    done = _settle_one(0, moved, met, obj, now, stall_a, polish_a, reasons, 1e-9)
    assert (done, int(stall_a[0]), bool(polish_a[0]), reasons[0]) == _batched(
        moved, met, obj, now, stall, polish
    )
