"""Metrics that follow totals the engines keep (`Runtime.counters`)."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from streams.metrics import Metrics


@pytest.mark.parametrize(
    ("name", "metric"),
    [
        ("cel_evaluations_stopped", "placement_cel_evaluations_stopped_total"),
        ("cel_budget_stops", "placement_cel_budget_stops_total"),
    ],
)
def test_engine_totals_move_their_counters_by_what_they_gained(name: str, metric: str) -> None:
    metrics = Metrics()
    for total in (0, 2, 2, 5):
        metrics.follow_engine_counters({name: total})
    assert metrics.registry.get_sample_value(metric) == 5
    other = next(
        m for m in ("placement_cel_evaluations_stopped_total", "placement_cel_budget_stops_total") if m != metric
    )
    assert metrics.registry.get_sample_value(other) == 0


class _Consumer:
    """What `record_lag` reads of the group consumer."""

    def __init__(self, assigned: set[TopicPartition]) -> None:
        self.assigned = assigned

    def assignment(self) -> set[TopicPartition]:
        return self.assigned

    def last_stable_offset(self, tp: TopicPartition) -> int:
        return 10


def test_lag_series_of_partitions_given_away_are_removed() -> None:
    metrics = Metrics()
    tps = {TopicPartition("subs", p) for p in (0, 1)}
    metrics.record_lag(_Consumer(tps), dict.fromkeys(tps, 4))
    assert metrics.registry.get_sample_value("placement_consumer_lag", {"topic": "subs", "partition": "1"}) == 6
    kept = {TopicPartition("subs", 0)}
    metrics.record_lag(_Consumer(kept), dict.fromkeys(kept, 7))
    assert metrics.registry.get_sample_value("placement_consumer_lag", {"topic": "subs", "partition": "0"}) == 3
    assert metrics.registry.get_sample_value("placement_consumer_lag", {"topic": "subs", "partition": "1"}) is None
    metrics.keep_lag(set())  # a rebalance that took every task
    assert metrics.registry.get_sample_value("placement_consumer_lag", {"topic": "subs", "partition": "0"}) is None
