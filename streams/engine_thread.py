"""The worker thread the runtime decides in, and how the event loop waits for it.

The engine runs off the event loop so that a long batch never stops the loop from heartbeating to the group and
answering the probes. But a loop that goes back to its selector while the engine runs wakes for every Kafka
response, and each wake must take the interpreter lock back from the busy engine thread (see
streams/tuning.py): the two threads hand the lock to and fro, each hand-over costing up to a switch interval.
On the benchmark machine that cost more than the overlap it buys: 10,000 Placements decided from cold through
Kafka took 16.5 s when the loop served Kafka during every step, 13.5 s when it waited for each step first.

So the loop waits for a step without the lock (a blocking wait on the step's future) for up to `wait_ms`, and
only a step still running then is awaited on the selector: the loop is never held longer than that, however
long a step takes, and the broker keeps working on what was sent meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["EngineThread"]

T = TypeVar("T")


class EngineThread:
    """One worker thread for the runtime's steps (the runtime is not thread-safe: one step at a time)."""

    def __init__(self, wait_ms: float) -> None:
        self._wait = wait_ms / 1000
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")

    def start(self, step: Callable[[], T]) -> Future[T]:
        """Run `step` in the worker thread; its outcome comes from `result`."""
        return self._executor.submit(step)

    async def result(self, started: Future[T]) -> T:
        """The step's result (or its exception): waited for holding the event loop for at most `wait_ms`, then
        on the loop, which serves Kafka and the probes again until the step ends."""
        if self._wait > 0:
            try:
                return started.result(timeout=self._wait)
            except TimeoutError:
                pass
        return await asyncio.wrap_future(started)

    def close(self) -> None:
        """Let the thread end once its step (if any) has; nothing waits for it."""
        self._executor.shutdown(wait=False)
