"""Error messages quote values the same way under numpy 1 and 2 (no ``np.float64(…)``)."""

from __future__ import annotations

import numpy as np
import pytest

from core import InvalidInputError, SolveSettings
from core.errors import format_value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (np.float64(1.5), "1.5"),
        (np.float32(0.5), "0.5"),
        (np.int64(3), "3"),
        (np.bool_(True), "True"),
        ((np.float64(0.25), 2), "(0.25, 2)"),
        ((np.float64(0.25),), "(0.25,)"),
        ([np.float64(-1.0), "a"], "[-1.0, 'a']"),
        ("XYZ", "'XYZ'"),
        (None, "None"),
        (1e-9, "1e-09"),
        (np.array([1.0, 2.0]), "array([1., 2.])"),
    ],
)
def test_format_value_shows_numpy_scalars_as_python_numbers(value: object, text: str) -> None:
    assert format_value(value) == text


def test_settings_message_names_the_number_plainly() -> None:
    with pytest.raises(InvalidInputError) as info:
        SolveSettings(damping=np.float64(-1.0))
    msg = str(info.value)
    assert "got -1.0" in msg and "np." not in msg
