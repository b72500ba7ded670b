"""Example deployer: keeps a directory of PlacementDecision YAML files equal to the current decisions.

    python -m deployers.decision_files --bootstrap 127.0.0.1:9092 --out deployed/ [--topic-prefix PREFIX]

The topic is read as every deployer reads it (`deployers.follow`): whole at start, then followed. Once caught up
the directory is made to match (files of subjects deleted while it was down go); then a subject's file is
rewritten when its decision changes.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connection.settings import KafkaSettings
from deployers.directory import DecisionDirectory
from deployers.follow import KafkaSource, add_kafka_arguments, follow_decisions, run_deployer
from deployers.state import Change, DecisionTable

__all__ = ["DeployerConfig", "deploy", "main"]

_LOG = logging.getLogger("deployers.decision_files")


@dataclass(frozen=True, slots=True)
class DeployerConfig:
    """Where the deployer reads and writes."""

    bootstrap: str
    out: Path
    topic_prefix: str = ""
    security: KafkaSettings = field(default_factory=KafkaSettings)
    """TLS and SASL settings, read like the processor's; the bootstrap servers come from the options."""

    @property
    def source(self) -> KafkaSource:
        return KafkaSource(self.bootstrap, self.topic_prefix, self.security)


class _Files:
    """The directory as a decision sink."""

    def __init__(self, directory: DecisionDirectory, topic: str, caught_up: asyncio.Event | None) -> None:
        self._directory = directory
        self._topic = topic
        self._caught_up = caught_up

    async def caught_up(self, current: Mapping[str, dict[str, Any]]) -> None:
        changes = self._directory.reconcile(current)
        for line in changes:
            _LOG.info("%s", line)
        _LOG.info("caught up with %s: %d subjects, %d files changed", self._topic, len(current), len(changes))
        if self._caught_up is not None:
            self._caught_up.set()

    async def changed(self, changes: Mapping[str, Change]) -> None:
        for subject, change in changes.items():
            written = self._directory.write(subject, change.document)
            if written is not None:
                _LOG.info("%s: %s", subject, written)


async def deploy(config: DeployerConfig, stop: asyncio.Event, *, caught_up: asyncio.Event | None = None) -> None:
    """Run until `stop` is set; `caught_up` is set once the directory matches the topic as it was at start."""
    source = config.source
    sink = _Files(DecisionDirectory(config.out), source.topic, caught_up)
    await follow_decisions(source, DecisionTable(), sink, stop, client_id="deployer-decision-files")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; SIGTERM or SIGINT stops it, exit 1 when Kafka fails."""
    parser = argparse.ArgumentParser(
        description="Example deployer: one PlacementDecision YAML file per subject.",
        epilog="Kafka TLS and SASL settings are read from the environment, as the processor reads them "
        "(PLACEMENT_KAFKA__SECURITY_PROTOCOL, ...).",
    )
    add_kafka_arguments(parser)
    parser.add_argument("--out", type=Path, required=True, help="directory of the decision files")
    args = parser.parse_args(argv)

    async def run(source: KafkaSource, stop: asyncio.Event) -> None:
        config = DeployerConfig(source.bootstrap, args.out, source.topic_prefix, source.security)
        await deploy(config, stop)

    return run_deployer("deployer", args, run)


if __name__ == "__main__":
    sys.exit(main())
