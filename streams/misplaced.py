"""Subject records refused for their partition: counted per topic, and logged once per topic and producer.

A producer with the wrong partitioner misplaces most of its records, so a line per record would flood the log;
the first record of each producer names it, and the set of producers named is bounded so that a source that
changes with every record cannot grow it either.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from engine.runtime import Misplaced
from engine.runtime.inputs import FIX_PARTITIONER
from streams.metrics import Metrics

__all__ = ["MAX_LOGGED_PRODUCERS", "MisplacedRecords"]

log = logging.getLogger("placement.service")

MAX_LOGGED_PRODUCERS = 256
"""Topic and producer pairs logged; past it one last line says that further producers are only counted."""


class MisplacedRecords:
    """Counts misplaced subject records and logs each topic and producer the first time."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._logged: set[tuple[str, str]] = set()
        self._full_said = False

    def note(self, records: Iterable[Misplaced]) -> None:
        """Count these records and log the producers not named yet."""
        for record in records:
            self._metrics.misplaced.labels(record.topic_name).inc()
            pair = (record.topic_name, record.producer)
            if pair in self._logged:
                continue
            if len(self._logged) >= MAX_LOGGED_PRODUCERS:
                if not self._full_said:
                    self._full_said = True
                    log.error("more producers misplace subject records; they are counted, not logged")
                continue
            self._logged.add(pair)
            log.error(
                "subject records arrive off the partition of their key; they are dead-lettered, not applied",
                extra={
                    "topic": record.topic_name,
                    "producer": record.producer or "(unnamed: a tombstone or an event without source)",
                    "expected_partition": record.expected,
                    "arrival_partition": record.arrived,
                    "fix": FIX_PARTITIONER,
                },
            )
