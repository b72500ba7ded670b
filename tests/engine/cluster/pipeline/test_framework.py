"""ValueRange: a departing candidate moves a normalised range only when it was the last at either end."""

from __future__ import annotations

import numpy as np
import pytest

from engine.cluster.pipeline.framework import ValueRange

RANGE_CASES = [
    # values, departures in order, the answer of each drop (True: range unchanged)
    ([4.0, 8.0, 16.0], [8.0], [True]),
    ([4.0, 8.0, 16.0], [4.0], [False]),
    ([4.0, 8.0, 16.0], [16.0], [False]),
    ([4.0, 4.0, 16.0], [4.0, 4.0], [True, False]),
    ([4.0, 16.0, 16.0, 16.0], [16.0, 16.0, 16.0], [True, True, False]),
    # every value equal: both ends at once
    ([8.0, 8.0], [8.0, 8.0], [True, False]),
    ([8.0], [8.0], [False]),
    # a value outside the range was not a candidate's: nothing moves
    ([4.0, 16.0], [2.0, 32.0], [True, True]),
]


@pytest.mark.parametrize(("values", "departures", "answers"), RANGE_CASES)
def test_value_range_drop(values: list[float], departures: list[float], answers: list[bool]) -> None:
    extent = ValueRange.of(np.array(values))
    assert (extent.low, extent.high) == (min(values), max(values))
    assert [extent.drop(value) for value in departures] == answers


def test_a_refused_drop_records_nothing() -> None:
    extent = ValueRange.of(np.array([4.0, 8.0, 16.0]))
    assert not extent.drop(4.0)
    assert extent == ValueRange(4.0, 1, 16.0, 1)
