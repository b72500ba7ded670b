"""The interpreter settings the processor applies at start (streams/tuning.py)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from streams.settings import Settings
from streams.tuning import tune_garbage_collector, tune_switch_interval


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    interval, threshold = sys.getswitchinterval(), gc.get_threshold()
    yield
    sys.setswitchinterval(interval)
    gc.set_threshold(*threshold)


@pytest.mark.parametrize(("milliseconds", "seconds"), [(1.0, 0.001), (5.0, 0.005), (0.5, 0.0005)])
def test_switch_interval_is_set_in_milliseconds(milliseconds: float, seconds: float) -> None:
    tune_switch_interval(milliseconds)
    assert sys.getswitchinterval() == pytest.approx(seconds)


def test_the_default_switch_interval_is_shorter_than_pythons() -> None:
    tune_switch_interval(Settings().switch_interval_ms)
    assert sys.getswitchinterval() == pytest.approx(0.001)


@pytest.mark.parametrize(("threshold", "young"), [(50_000, 50_000), (1_000, 1_000)])
def test_gc_threshold_sets_the_young_generation_only(threshold: int, young: int) -> None:
    _, older, oldest = gc.get_threshold()
    tune_garbage_collector(threshold)
    assert gc.get_threshold() == (young, older, oldest)


def test_gc_threshold_zero_keeps_what_was_set() -> None:
    before = gc.get_threshold()
    tune_garbage_collector(0)
    assert gc.get_threshold() == before
