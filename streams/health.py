"""What /livez and /readyz answer, and why: the processing loop's progress, the broker's reachability, the tasks
that cannot commit, and start-up progress.

Liveness asks "would a restart help?": only a loop that has stopped progressing (a stuck engine call, a dead
task) says no. Readiness asks "is this instance doing its job now?": it turns false while the broker is out of
reach or a task cannot commit, and comes back by itself when they recover, as Kubernetes expects.
"""

from __future__ import annotations

import logging
import time

from streams.metrics import Metrics

__all__ = ["Health"]

log = logging.getLogger("placement.health")


class Health:
    """Progress and readiness facts, set by the processor and read by the HTTP probes at request time."""

    def __init__(self, metrics: Metrics, liveness_timeout: float) -> None:
        self._metrics = metrics
        self._liveness_timeout = liveness_timeout
        self._last_progress = time.monotonic()
        self.crashed = False
        """A core task died; only a restart helps."""
        self.started = False
        """Global tables caught up and the first assignment taken."""
        self.stopping = False
        self.broker_reachable = True
        self.failing_tasks: set[int] = set()
        self.refusal: str | None = None
        """Why the topics are refused (platform P14): no task runs, not ready, yet alive, as a restart would be
        refused the same way; the error was logged once."""

    def progressed(self) -> None:
        """The loop or the engine moved on: a batch chunk, a poll, a restore step."""
        self._last_progress = time.monotonic()

    def progress_age(self) -> float:
        """Seconds since the last progress."""
        return time.monotonic() - self._last_progress

    def alive(self) -> bool:
        """False once a core task died or the loop has been stuck longer than the liveness timeout (not while the
        topics are refused: nothing is meant to progress then)."""
        age = self.progress_age()
        self._metrics.loop_progress_age.set(age)
        return not self.crashed and (age < self._liveness_timeout or self.refusal is not None)

    def ready(self) -> bool:
        """Started, not stopping, the topics accepted, the broker answering and every owned task able to commit."""
        ready = (
            self.started
            and not self.stopping
            and self.refusal is None
            and self.broker_reachable
            and not self.failing_tasks
        )
        self._metrics.ready.set(1 if ready else 0)
        self._metrics.broker_reachable.set(1 if self.broker_reachable else 0)
        self._metrics.failing_tasks.set(len(self.failing_tasks))
        return ready

    def refuse(self, reason: str | None) -> None:
        """The topics are refused for `reason` (None: accepted again)."""
        self.refusal = reason
        self._metrics.topics_refused.set(0 if reason is None else 1)

    def note_broker(self, reachable: bool, error: BaseException | None = None) -> None:
        """Whether the broker answered the last probe; a change is logged once."""
        if self.broker_reachable and not reachable:
            log.error("Kafka is not reachable; not ready until it is", extra={"error": repr(error)})
        elif reachable and not self.broker_reachable:
            log.info("Kafka is reachable again")
        self.broker_reachable = reachable
