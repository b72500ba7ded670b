"""Watching the processor's topics while it runs (platform P14): a topic deleted or a partition count changed
stops every task within seconds, with one error naming the topics.

aiokafka refreshes a consumer's metadata only every `metadata_max_age_ms` (5 minutes), and the group learns of
new partitions only then: records on them went undecided for that long, then the assignment failed. One
metadata request a second for the processor's topics is cheap next to a batch, and a change must be seen in
three answers in a row, so a broker answering from metadata a moment old does not stop the tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from aiokafka.errors import KafkaError

from streams.kafka.clients import admin_client
from streams.kafka.topology import count_change
from streams.settings import KafkaSettings

__all__ = ["TopicWatch"]

log = logging.getLogger("placement.topics")

_UNKNOWN_TOPIC = 3


class TopicWatch:
    """Compares the topics' partition counts with those the processor started with, every `interval` seconds;
    calls `changed` once with the message when `confirmations` answers in a row show the same change, then
    ends."""

    def __init__(
        self,
        kafka: KafkaSettings,
        expected: Mapping[str, int],
        changed: Callable[[str], None],
        interval: float = 1.0,
        confirmations: int = 3,
    ) -> None:
        self._kafka = kafka
        self._expected = dict(expected)
        self._changed = changed
        self._interval = interval
        self._confirmations = confirmations

    async def run(self) -> None:
        admin = admin_client(self._kafka)
        started = False
        last: str | None = None
        times = 0
        try:
            while True:
                await asyncio.sleep(self._interval)
                try:
                    if not started:
                        await admin.start()
                        started = True
                    found = await asyncio.wait_for(self._counts(admin), self._interval * 5)
                except (KafkaError, TimeoutError, OSError):
                    continue  # the broker is away: the loop's probe says so; the topics are looked at once it is back
                problem = None if found is None else count_change(self._expected, found)
                times, last = (times + 1 if problem == last else 1), problem
                if problem is not None and times >= self._confirmations:
                    self._changed(problem)
                    return
        finally:
            with contextlib.suppress(Exception):
                await admin.close()

    async def _counts(self, admin: Any) -> dict[str, int | None] | None:
        """Partition count per topic (None: the topic does not exist); None when the answer was not clear."""
        described: list[dict[str, Any]] = await admin.describe_topics(list(self._expected))
        found: dict[str, int | None] = {}
        for entry in described:
            name, code = str(entry.get("topic") or entry.get("name")), entry.get("error_code", 0)
            if code == _UNKNOWN_TOPIC:
                found[name] = None
            elif code:
                return None
            else:
                found[name] = len(entry["partitions"])
        return found
