"""Example deployer: keeps a directory of PlacementDecision YAML files equal to the current decisions.

    python -m deployers.decision_files --bootstrap 127.0.0.1:9092 --out deployed/ [--topic-prefix PREFIX]

It reads the compacted decisions topic from the beginning at every start (read_committed, so it never sees a
transaction the processor aborted), keeping the last decision per subject; once it has read up to the end offsets
it saw at start it makes the directory match (files of subjects deleted while it was down go), then follows the
topic and rewrites a subject's file when its decision changes. No consumer group: a deployer that rebuilds its
table from the topic needs no committed offsets, and a consumer without a group starts at once instead of waiting
for a group join.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from deployers.directory import DecisionDirectory
from deployers.kafka_logs import TransientKafkaErrors
from deployers.state import Change, DecisionTable
from streams.errors import SettingsError
from streams.kafka.security import CredentialsError, connection_options
from streams.settings import KafkaSettings, load_settings
from topics.names import TOPIC_SPECS, TopicRole

__all__ = ["DeployerConfig", "deploy", "main"]

_LOG = logging.getLogger("deployers.decision_files")

LOW_LATENCY = {
    "fetch_min_bytes": 1,  # answer a fetch as soon as one record is there
    "fetch_max_wait_ms": 100,  # how long the broker holds an empty fetch: bounds idle polling, not latency
    "isolation_level": "read_committed",  # only decisions whose transaction committed
    "enable_auto_commit": False,
    "auto_offset_reset": "earliest",
}
"""Consumer settings of a deployer that acts within milliseconds of a commit."""


@dataclass(frozen=True, slots=True)
class DeployerConfig:
    """Where the deployer reads and writes."""

    bootstrap: str
    out: Path
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


def _log(changes: Sequence[str]) -> None:
    for line in changes:
        _LOG.info("%s", line)


async def deploy(config: DeployerConfig, stop: asyncio.Event, *, caught_up: asyncio.Event | None = None) -> None:
    """Run until `stop` is set; `caught_up` is set once the directory matches the topic as it was at start."""
    table = DecisionTable()
    directory = DecisionDirectory(config.out)
    consumer = AIOKafkaConsumer(
        config.topic, **config.client_options(), client_id="deployer-decision-files", **LOW_LATENCY
    )
    try:
        await consumer.start()
        partitions = await _partitions(consumer, config.topic, stop)
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
                    changes = directory.reconcile(table.current)
                    _log(changes)
                    _LOG.info(
                        "caught up with %s: %d subjects, %d files changed",
                        config.topic,
                        len(table.current),
                        len(changes),
                    )
                    if caught_up is not None:
                        caught_up.set()
                continue
            for subject, change in changed.items():
                written = directory.write(subject, change.document)
                if written is not None:
                    _LOG.info("%s: %s", subject, written)
    finally:
        await consumer.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; SIGTERM or SIGINT stops it, exit 1 when Kafka fails."""
    parser = argparse.ArgumentParser(
        description="Example deployer: one PlacementDecision YAML file per subject.",
        epilog="Kafka TLS and SASL settings are read from the environment, as the processor reads them "
        "(PLACEMENT_KAFKA__SECURITY_PROTOCOL, ...).",
    )
    parser.add_argument("--bootstrap", default="127.0.0.1:9092", help="Kafka bootstrap servers (host:port,...)")
    parser.add_argument("--out", type=Path, required=True, help="directory of the decision files")
    parser.add_argument("--topic-prefix", default="", help="prefix of every topic name (as the processor's)")
    parser.add_argument("--log-level", default="INFO", help="logging level")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(TransientKafkaErrors())
    logging.getLogger("aiokafka").setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        security = load_settings().kafka
    except SettingsError as exc:
        print(f"deployer: {exc}", file=sys.stderr)
        return 2
    config = DeployerConfig(bootstrap=args.bootstrap, out=args.out, topic_prefix=args.topic_prefix, security=security)

    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await deploy(config, stop)

    try:
        asyncio.run(runner())
    except (KafkaError, CredentialsError) as exc:
        _LOG.error("deployer stopped: %s", exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
