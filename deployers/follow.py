"""What every deployer does with the decisions topic: read it whole at start, then follow it.

It reads the compacted decisions topic from the beginning at every start (read_committed, so it never sees a
transaction the processor aborted), keeping the last decision per subject; once it has read up to the end offsets
it saw at start it hands the whole table to the deployer (which makes its output match, dropping what was deleted
meanwhile), then hands over each batch's changes. No consumer group: a deployer that rebuilds its table from the
topic needs no committed offsets, and a consumer without a group starts at once instead of waiting for a join.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from connection.errors import CredentialsError, SettingsError
from connection.security import connection_options
from connection.settings import KafkaSettings, load_kafka_settings
from deployers.kafka_logs import TransientKafkaErrors
from deployers.state import Change, DecisionTable
from topics.names import TOPIC_SPECS, TopicRole

__all__ = ["LOW_LATENCY", "DecisionSink", "KafkaSource", "add_kafka_arguments", "follow_decisions", "run_deployer"]

_LOG = logging.getLogger("deployers")

LOW_LATENCY = {
    "fetch_min_bytes": 1,  # answer a fetch as soon as one record is there
    "fetch_max_wait_ms": 100,  # how long the broker holds an empty fetch: bounds idle polling, not latency
    "isolation_level": "read_committed",  # only decisions whose transaction committed
    "enable_auto_commit": False,
    "auto_offset_reset": "earliest",
}
"""Consumer settings of a deployer that acts within milliseconds of a commit."""


@dataclass(frozen=True, slots=True)
class KafkaSource:
    """Where a deployer reads the decisions."""

    bootstrap: str
    topic_prefix: str = ""
    security: KafkaSettings = field(default_factory=KafkaSettings)
    """TLS and SASL settings, read like the processor's (PLACEMENT_KAFKA__SECURITY_PROTOCOL, ...); the bootstrap
    servers come from the options."""

    def client_options(self) -> dict[str, Any]:
        """aiokafka connection arguments."""
        return {**connection_options(self.security), "bootstrap_servers": self.bootstrap}

    @property
    def topic(self) -> str:
        """The decisions topic (the prefix plus the default name, as the processor's prefixed topic names)."""
        return self.topic_prefix + TOPIC_SPECS[TopicRole.DECISIONS].default_name


class DecisionSink(Protocol):
    """A deployer's output."""

    async def caught_up(self, current: Mapping[str, dict[str, Any]]) -> None:
        """Make the output hold exactly `current` (subject -> document), after a start."""

    async def changed(self, changes: Mapping[str, Change]) -> None:
        """Apply one batch's changes (each subject's last); also called with none on idle turns."""


async def _partitions(consumer: AIOKafkaConsumer, topic: str, stop: asyncio.Event) -> list[TopicPartition]:
    """Every partition of the topic (a consumer without a group is given them all), waiting while the topic does
    not exist yet: the processor creates it at start."""
    warned = False
    while not stop.is_set():
        assigned = sorted(consumer.assignment(), key=lambda tp: tp.partition)
        if assigned:
            return assigned
        if not warned:
            _LOG.info("waiting for topic %s", topic)
            warned = True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.1)
    return []


async def follow_decisions(
    source: KafkaSource, table: DecisionTable, sink: DecisionSink, stop: asyncio.Event, *, client_id: str
) -> None:
    """Run until `stop` is set."""
    consumer = AIOKafkaConsumer(source.topic, **source.client_options(), client_id=client_id, **LOW_LATENCY)
    try:
        await consumer.start()
        partitions = await _partitions(consumer, source.topic, stop)
        if not partitions:
            return
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        reading_history = True
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=200, max_records=1000)
            changed: dict[str, Change] = {}
            for records in batch.values():
                for record in records:
                    change = table.apply(record.key, record.value)
                    if change is not None:
                        changed[change.subject] = change  # a batch's last change of a subject is the one to write
            if reading_history:
                positions = [await consumer.position(tp) for tp in partitions]
                if all(position >= ends[tp] for tp, position in zip(partitions, positions, strict=True)):
                    reading_history = False
                    await sink.caught_up(table.current)
                continue
            await sink.changed(changed)
    finally:
        await consumer.stop()


def add_kafka_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap", default="127.0.0.1:9092", help="Kafka bootstrap servers (host:port,...)")
    parser.add_argument("--topic-prefix", default="", help="prefix of every topic name (as the processor's)")
    parser.add_argument("--log-level", default="INFO", help="logging level")


def run_deployer(
    name: str, args: argparse.Namespace, run: Callable[[KafkaSource, asyncio.Event], Awaitable[None]]
) -> int:
    """Logging, Kafka security from the environment, and `run` until SIGTERM or SIGINT; the exit status (2: bad
    settings, 1: Kafka failed)."""
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(TransientKafkaErrors())
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        security = load_kafka_settings()
    except SettingsError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    source = KafkaSource(args.bootstrap, args.topic_prefix, security)

    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run(source, stop)

    try:
        asyncio.run(runner())
    except (KafkaError, CredentialsError) as exc:
        _LOG.error("%s stopped: %s", name, exc)
        return 1
    return 0
