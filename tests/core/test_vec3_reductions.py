"""The column-by-column reductions of core.geometry.vec3 equal numpy's reductions bit for
bit (values, NaN, shapes) on every shape they take a shortcut for and around it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.geometry.vec3 import norm_rows, row_max, sum_squares

SHAPES = [
    (3,),
    (1, 3),
    (15, 3),
    (16, 3),
    (300, 1),
    (300, 2),
    (300, 6),
    (300, 7),
    (300, 8),
    (300, 9),
    (20, 5, 7),
    (40, 2, 3),
    (2, 0),
    (0, 3),
]


def _data(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape) * np.exp(rng.normal(size=shape) * 8.0)
    a[rng.random(shape) < 0.02] = np.nan
    return a


@pytest.mark.parametrize("shape", SHAPES)
def test_reductions_equal_numpy(shape: tuple[int, ...]) -> None:
    for seed in range(3):
        a = _data(shape, seed)
        for arr in (a, np.asfortranarray(a)):
            ref = np.add.reduce(arr * arr, axis=-1)
            assert np.array_equal(sum_squares(arr), ref, equal_nan=True)
            assert np.array_equal(norm_rows(arr), np.sqrt(ref), equal_nan=True)
            kept = norm_rows(arr, keepdims=True)
            assert kept.shape == shape[:-1] + (1,)
            assert np.array_equal(kept, np.sqrt(ref)[..., None], equal_nan=True)
            if shape[-1]:
                got = row_max(arr)
                assert np.shape(got) == shape[:-1]
                assert np.array_equal(got, np.maximum.reduce(arr, axis=-1), equal_nan=True)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 64),
    cols=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_reductions_equal_numpy_random(rows: int, cols: int, seed: int) -> None:
    a = _data((rows, cols), seed)
    ref = np.add.reduce(a * a, axis=-1)
    assert np.array_equal(sum_squares(a), ref, equal_nan=True)
    assert np.array_equal(norm_rows(a), np.sqrt(ref), equal_nan=True)
    assert np.array_equal(row_max(a), np.maximum.reduce(a, axis=-1), equal_nan=True)
