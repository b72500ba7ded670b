"""What the shell reports as it works: the Prometheus series, the health facts behind the probes, the progress
benchmarks wait for, and the logs of what the runtime isolated.

The loop, the task transactions and task ownership call one hook per event (`batch_decided`, `task_aborted`,
`assignment_taken`, ...), so a new series or health fact is added here once instead of being threaded through
every shell object.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition

from engine.runtime import OutputRecord, Runtime
from streams.health import Health
from streams.kafka.clients import Records
from streams.metrics import Metrics, OutputTally
from streams.misplaced import MisplacedRecords
from streams.tracing import Tracing
from topics.names import TopicRole

__all__ = ["Progress", "ShellObserver"]

log = logging.getLogger("placement.service")


@dataclass
class Progress:
    """Batches processed and committed, so tests and benchmarks can wait for progress; `first_batch_at` and
    `last_commit_at` are `time.perf_counter()` instants, so benchmarks time the consume-process-commit loop the way
    the pass-through ceiling is timed."""

    batches_done: int = 0
    records_done: int = 0
    first_batch_at: float | None = None
    last_commit_at: float = 0.0


class ShellObserver:
    """Metrics and health as one: the hooks the shell calls, each keeping both up to date."""

    def __init__(
        self, metrics: Metrics, health: Health, topic_of: Callable[[TopicRole], str], tracing: Tracing | None
    ) -> None:
        self.metrics = metrics
        self.health = health
        self.tracing = tracing
        """Spans per consumed record when an exporter is configured (P16); None costs nothing."""
        self.progress = Progress()
        self._topic_of = topic_of
        self._misplaced = MisplacedRecords(metrics)

    # --- the loop -----------------------------------------------------------------------------------
    def progressed(self) -> None:
        """The loop or the engine moved on: a poll, a hand-over, a restore step."""
        self.health.progressed()

    @property
    def broker_reachable(self) -> bool:
        return self.health.broker_reachable

    def broker(self, reachable: bool, error: BaseException | None = None) -> None:
        """Whether the broker answered the last request that needed it."""
        self.health.note_broker(reachable, error)

    def stage(self, stage: str, seconds: float) -> None:
        """Time a batch spent in one stage of the loop."""
        self.metrics.batch_stage.labels(stage).observe(seconds)

    def polled(self, subjects: Records) -> None:
        """Per polled record, its timestamp to now: producing, the broker, fetching and waiting for the loop."""
        now_ms = time.time() * 1000
        queued = self.metrics.batch_stage.labels("queued")
        for records in subjects.values():
            for record in records:
                queued.observe(max(0.0, (now_ms - record.timestamp) / 1000))

    def batch_started(self, by_topic: Counter[str]) -> None:
        """A batch of consumed records goes to the runtime."""
        if by_topic and self.progress.first_batch_at is None:
            self.progress.first_batch_at = time.perf_counter()
        for topic, count in by_topic.items():
            self.metrics.consumed.labels(topic).inc(count)

    def batch_decided(self, decided: int, engine_seconds: float, handed_over: int) -> None:
        """The runtime handed its last output of a batch over: `decided` subjects, in `engine_seconds`."""
        self.metrics.decided.inc(decided)
        if handed_over:
            self.metrics.decision_latency.observe(engine_seconds)

    def batch_done(self, by_topic: Counter[str], subjects: Records, runtime: Runtime) -> None:
        """A batch's transactions are settled: count what was processed and log what the runtime isolated."""
        metrics = self.metrics
        for topic, count in by_topic.items():
            metrics.processed.labels(topic).inc(count)
        committed_at = time.time() * 1000
        for batch in subjects.values():
            for record in batch:
                metrics.event_age.observe(max(0.0, (committed_at - record.timestamp) / 1000))
        metrics.subjects.set(len(runtime.states))
        metrics.follow_engine_counters(runtime.counters())
        self._misplaced.note(runtime.take_misplaced())
        for subject, message in runtime.take_notices():
            log.warning(message, extra={"subject": subject})
        for incident in runtime.take_incidents():
            metrics.incidents.labels(incident.stage).inc()
            log.error(
                "isolated a failure",
                extra={"subject": incident.subject, "stage": incident.stage, "error": repr(incident.error)},
            )
        if by_topic:
            self.progress.batches_done += 1
            self.progress.records_done += sum(by_topic.values())
            self.progress.last_commit_at = time.perf_counter()

    def lag(self, consumer: AIOKafkaConsumer, consumed: Mapping[TopicPartition, int]) -> None:
        self.metrics.record_lag(consumer, consumed)

    # --- the task transactions ----------------------------------------------------------------------
    def transaction_committed(self, tally: OutputTally) -> None:
        """A task transaction committed with the records `tally` counted (and the last commit and decision times
        /status shows)."""
        self.metrics.transaction_committed(tally, self._topic_of)

    def task_committed(self, task: int) -> None:
        """The task's transaction committed: it can commit again."""
        self.health.failing_tasks.discard(task)

    def task_aborted(self, task: int) -> None:
        """The task's transaction was aborted: not ready until it commits again."""
        self.metrics.transactions.labels("aborted").inc()
        self.health.failing_tasks.add(task)

    def loose_sent(self, records: Iterable[OutputRecord]) -> None:
        """Records bound to no task were sent outside any transaction."""
        tally = OutputTally()
        tally.add(records)
        self.metrics.count_produced(tally, self._topic_of)

    # --- task ownership -----------------------------------------------------------------------------
    def rebalanced(self) -> None:
        self.metrics.rebalances.inc()

    def tasks_kept(self, tasks: Collection[int]) -> None:
        """Only `tasks` are still owned: the lag series of the others go."""
        self.metrics.keep_lag(tasks)

    def restored(self, table: str, seconds: float) -> None:
        """The last restore of `table` (inventory, peers, changelog) took `seconds`."""
        self.metrics.restore_seconds.labels(table).set(seconds)

    def task_restored(self, task: int, seconds: float) -> None:
        """One task's changelog read back; its producer is new and its state restored, so it can commit."""
        self.metrics.task_restore.observe(seconds)
        self.restored("changelog", seconds)  # the assignment's total replaces it
        self.health.failing_tasks.discard(task)

    def assignment_taken(self, owned: Collection[int], subjects: int) -> None:
        """Every assigned task is restored: the instance is started, and ready unless something else says no."""
        health = self.health
        health.started = True  # the tables were caught up before the group was joined
        health.failing_tasks &= set(owned)
        self.metrics.subjects.set(subjects)
        health.progressed()
        self.metrics.ready.set(1 if health.ready() else 0)

    def topics_refused(self, problem: str) -> bool:
        """The topics changed under the running tasks; False when a refusal was said already."""
        if self.health.refusal is not None:
            return False
        log.error(problem)
        self.health.refuse(problem)
        return True
