"""Prometheus series of the service; one registry per service instance so tests can run several."""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, TopicPartition
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from engine.runtime import OutputRecord
from streams.version import VERSION
from topics.names import TopicRole

__all__ = ["LATENCY_BUCKETS", "Metrics", "OutputTally"]

LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0)
RESTORE_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
"""A task's restore: milliseconds when it holds a few subjects, seconds for tens of thousands of Placements."""


@dataclass
class OutputTally:
    """What records add to the produced and dead-letter series, counted as they are sent: a transaction's
    records need not be kept until its commit just to be counted then."""

    topics: collections.Counter[TopicRole] = field(default_factory=collections.Counter)
    dead_letters: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    """By (source topic, stage), from the Kafka Connect style headers."""

    def add(self, records: Iterable[OutputRecord]) -> None:
        """Count more records."""
        for record in records:
            self.topics[record.topic] += 1
            if record.topic is TopicRole.DEAD_LETTER:
                headers = dict(record.headers)
                stage = headers.get("__connect.errors.stage", b"").decode()
                source = headers.get("__connect.errors.topic", b"").decode()
                self.dead_letters[source, stage] += 1


class Metrics:
    """Counters use `_total`, durations are seconds, labels stay bounded (topic, partition, stage, outcome)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._declare_flow(self.registry)
        self._declare_state(self.registry)
        self._declare_health(self.registry)

    def _declare_flow(self, r: CollectorRegistry) -> None:
        """What the batches move: records, decisions, transactions, and the time each stage takes."""
        self.consumed = Counter("placement_records_consumed", "Records consumed", ["topic"], registry=r)
        self.processed = Counter(
            "placement_records_processed",
            "Records consumed and processed, their batch's outputs committed",
            ["topic"],
            registry=r,
        )
        self.decided = Counter("placement_subjects_decided", "Subjects decided, re-decisions included", registry=r)
        self.produced = Counter("placement_records_produced", "Records produced", ["topic"], registry=r)
        self.dead_letters = Counter("placement_dead_letters", "Records dead-lettered", ["topic", "stage"], registry=r)
        self.misplaced = Counter(
            "placement_misplaced_records",
            "Subject records refused (dead-lettered) for arriving off the partition murmur2 of their key names",
            ["topic"],
            registry=r,
        )
        self.transactions = Counter("placement_transactions", "Task transactions", ["outcome"], registry=r)
        self.rebalances = Counter("placement_rebalances", "Consumer-group assignments received", registry=r)
        self.decision_latency = Histogram(
            "placement_decision_latency_seconds",
            "Engine time per published batch (apply, decide, encode, in the worker thread)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_stage = Histogram(
            "placement_batch_stage_seconds",
            "Time per batch in each stage of the loop: waiting for the poll, reading the inventory to its end, topping"
            " the batch up, waiting for the engine, sending outputs, committing the task transactions",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.event_age = Histogram(
            "placement_event_age_seconds",
            "Commit time minus record timestamp of consumed subject records",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )

    def _declare_state(self, r: CollectorRegistry) -> None:
        """What the instance holds: lag, restores, subjects, and the engines' isolated failures and counters."""
        self.lag = Gauge(
            "placement_consumer_lag",
            "Last stable offset minus the last committed position",
            ["topic", "partition"],
            registry=r,
        )
        self.restore_seconds = Gauge(
            "placement_restore_seconds",
            "Duration of the last restore: the inventory tables at start, the peers' changelog, and the changelog of"
            " every task the last assignment took (of the one task, when a task is restored after an abort)",
            ["table"],
            registry=r,
        )
        self.task_restore = Histogram(
            "placement_task_restore_seconds",
            "Time to read one task's changelog partition to its end and restore its subjects",
            buckets=RESTORE_BUCKETS,
            registry=r,
        )
        self.ready = Gauge("placement_ready", "1 when the service is ready", registry=r)
        self.subjects = Gauge("placement_subjects", "Subjects owned by this instance", registry=r)
        self.incidents = Counter(
            "placement_processing_errors",
            "Engine calls that failed and were isolated (their records dead-lettered, their subject left as before)",
            ["stage"],
            registry=r,
        )
        self.cel_stopped = Counter(
            "placement_cel_evaluations_stopped", "CEL evaluations stopped at the cost limit", registry=r
        )
        self.cel_budget_stops = Counter(
            "placement_cel_budget_stops",
            "Placement evaluations whose CEL was stopped by the per-placement budget",
            registry=r,
        )
        self._engine_counters = {"cel_evaluations_stopped": self.cel_stopped, "cel_budget_stops": self.cel_budget_stops}
        """The engine totals (`Runtime.counters`) each counter follows."""
        self._engine_seen: dict[str, int] = {}

    def _declare_health(self, r: CollectorRegistry) -> None:
        """What the probes and the HTTP endpoint see, and the release."""
        self.broker_reachable = Gauge("placement_broker_reachable", "1 while the Kafka cluster answers", registry=r)
        self.failing_tasks = Gauge("placement_failing_tasks", "Tasks whose last transaction was aborted", registry=r)
        self.topics_refused = Gauge(
            "placement_topics_refused",
            "1 while the topics are refused and no task runs (see the error log)",
            registry=r,
        )
        self.loop_progress_age = Gauge(
            "placement_loop_progress_age_seconds", "Seconds since the processing loop last made progress", registry=r
        )
        self.http_rejected = Counter(
            "placement_http_rejected",
            "HTTP requests refused or failed, by reason (too_many_connections, idle_evicted, header_too_large,"
            " bad_request, body_too_large, timeout, reset, socket_error, accept_failed)",
            ["reason"],
            registry=r,
        )
        self.http_connections = Gauge("placement_http_connections", "Open connections to the HTTP endpoint", registry=r)
        self.build_info = Gauge("placement_stream_build_info", "The running release; always 1", ["version"], registry=r)
        self.build_info.labels(VERSION).set(1)
        self._lag_series: set[tuple[str, int]] = set()
        """(topic, partition) of the lag series set so far: those of partitions given away are removed."""
        self.last_commit_at: float | None = None
        """Wall-clock time of the last committed task transaction (for /status)."""
        self.last_decision_at: float | None = None
        """Wall-clock time of the last committed transaction that published a decision (for /status)."""

    def transaction_committed(self, tally: OutputTally, topic_name: Callable[[TopicRole], str]) -> None:
        """A task transaction committed with the records `tally` counted."""
        self.transactions.labels("committed").inc()
        self.count_produced(tally, topic_name)
        self.last_commit_at = time.time()
        if tally.topics.get(TopicRole.DECISIONS):
            self.last_decision_at = self.last_commit_at

    def count_produced(self, tally: OutputTally, topic_name: Callable[[TopicRole], str]) -> None:
        """Add records that are now committed (or sent outside any transaction)."""
        for topic, count in tally.topics.items():
            self.produced.labels(topic_name(topic)).inc(count)
        for (source, stage), count in tally.dead_letters.items():
            self.dead_letters.labels(source, stage).inc(count)

    def follow_engine_counters(self, totals: dict[str, int]) -> None:
        """Move the counters the engines keep as totals (`Runtime.counters`) by what they gained."""
        for name, counter in self._engine_counters.items():
            gained = totals.get(name, 0) - self._engine_seen.get(name, 0)
            if gained > 0:
                counter.inc(gained)
                self._engine_seen[name] = totals[name]

    def record_lag(self, consumer: AIOKafkaConsumer, consumed: Mapping[TopicPartition, int]) -> None:
        """The group consumer's lag per assigned partition: last stable offset minus the position this instance
        last committed there (or started from). Nothing here awaits: a rebalance runs beside the loop and can
        take a partition during any await, and `position()` of a partition not yet positioned waits for the
        broker, which may be away."""
        assigned = consumer.assignment()
        self.keep_lag({tp.partition for tp in assigned})
        for tp in assigned:
            at, stable = consumed.get(tp), consumer.last_stable_offset(tp)
            if at is not None and stable is not None and stable >= 0:
                self.lag.labels(tp.topic, str(tp.partition)).set(max(0, stable - at))
                self._lag_series.add((tp.topic, tp.partition))

    def keep_lag(self, partitions: Collection[int]) -> None:
        """Remove the lag series of partitions other than `partitions` (given away in a rebalance): a gauge left
        at its last value would report lag that no instance has."""
        for topic, partition in sorted(self._lag_series):
            if partition not in partitions:
                self.lag.remove(topic, str(partition))
                self._lag_series.discard((topic, partition))
