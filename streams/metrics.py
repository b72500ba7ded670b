"""Prometheus series of the service; one registry per service instance so tests can run several."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["LATENCY_BUCKETS", "Metrics"]

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0)


class Metrics:
    """Counters use `_total`, durations are seconds, labels stay bounded (topic, partition, stage, outcome)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.consumed = Counter("placement_records_consumed", "Records consumed", ["topic"], registry=r)
        self.produced = Counter("placement_records_produced", "Records produced", ["topic"], registry=r)
        self.dead_letters = Counter("placement_dead_letters", "Records dead-lettered", ["topic", "stage"], registry=r)
        self.transactions = Counter("placement_transactions", "Task transactions", ["outcome"], registry=r)
        self.rebalances = Counter("placement_rebalances", "Consumer-group assignments received", registry=r)
        self.decision_latency = Histogram(
            "placement_decision_latency_seconds",
            "Engine time per batch (apply, decide, encode)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.event_age = Histogram(
            "placement_event_age_seconds",
            "Commit time minus record timestamp of consumed subject records",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lag = Gauge(
            "placement_consumer_lag", "Last stable offset minus position", ["topic", "partition"], registry=r
        )
        self.restore_seconds = Gauge("placement_restore_seconds", "Duration of the last restore", ["table"], registry=r)
        self.ready = Gauge("placement_ready", "1 when the service is ready", registry=r)
        self.subjects = Gauge("placement_subjects", "Subjects owned by this instance", registry=r)
