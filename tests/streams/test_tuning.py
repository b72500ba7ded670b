"""The interpreter settings the processor applies at start (streams/tuning.py)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from streams.settings import Settings
from streams.tuning import collector_paused_then_frozen, tune_garbage_collector, tune_switch_interval


@pytest.fixture(autouse=True)
def _restored() -> Iterator[None]:
    interval, threshold, enabled = sys.getswitchinterval(), gc.get_threshold(), gc.isenabled()
    yield
    sys.setswitchinterval(interval)
    gc.set_threshold(*threshold)
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


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


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
def test_a_restore_pauses_the_collector_and_freezes_what_it_built(enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    gc.unfreeze()
    with collector_paused_then_frozen():
        assert not gc.isenabled()
        built = [[index] for index in range(1000)]
        frozen_before_leaving = gc.get_freeze_count()
    assert gc.isenabled() is enabled
    assert gc.get_freeze_count() >= frozen_before_leaving + len(built)
    assert gc.is_tracked(built[0])


def test_the_collector_runs_again_after_a_failed_restore() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused_then_frozen():
        raise RuntimeError("the broker went away")
    assert gc.isenabled()
