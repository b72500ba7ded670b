"""Metrics that follow totals the engines keep (`Runtime.counters`)."""

from __future__ import annotations

import pytest

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
