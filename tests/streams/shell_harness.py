"""A started shell on the in-memory Kafka of fake_kafka.py: the real loop, ownership, task commits and runtime,
with fake clients and task producers."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import orjson
from aiokafka import TopicPartition

from engine.registry import build_engines
from engine.runtime import Runtime
from streams.context import ShellClients, ShellContext, SubjectTasks
from streams.engine_thread import EngineThread
from streams.health import Health
from streams.kafka.assignment import TaskOwnership
from streams.kafka.commits import TaskCommits
from streams.kafka.poison import PoisonGuard
from streams.loop import ProcessingLoop
from streams.metrics import Metrics
from streams.observer import ShellObserver
from streams.settings import Settings
from tests.streams.fake_kafka import FakeBarrier, FakeBroker, FakeConsumer, FakePeers, FakeProducer, FakeTaskProducers

EVENTS = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[2] / "examples" / "events.jsonl").read_text().splitlines()
    if line.strip()
]
PARTITIONS = 2


def placement(name: str) -> dict[str, Any]:
    """The example Placement `apps/web`, renamed."""
    event = copy.deepcopy(next(e for e in EVENTS if e["key"] == "Placement/apps/web"))
    event["key"] = f"Placement/apps/{name}"
    event["value"]["id"] = f"placement-{name}"
    event["value"]["data"]["metadata"]["name"] = name
    return event


def settings(**fields: Any) -> Settings:
    kafka = {"task_partitions": PARTITIONS, "poll_timeout_ms": 1, **fields.pop("kafka", {})}
    return Settings(kafka=kafka, engine_wait_ms=0, **fields)


class Shell:
    """One instance's shell over a FakeBroker, owning every task once `start`ed."""

    def __init__(self, broker: FakeBroker, config: Settings) -> None:
        self.broker = broker
        self.settings = config
        self.topics = config.topics
        metrics = Metrics()
        self.observer = ShellObserver(metrics, Health(metrics, 60.0), config.topics.name, None)
        self.ctx = ShellContext(
            settings=config,
            observer=self.observer,
            guard=PoisonGuard(config.max_task_aborts),
            batch_lock=asyncio.Lock(),
            stop=asyncio.Event(),
            tasks=FakeTaskProducers(config.kafka, broker),
            keys=SubjectTasks(PARTITIONS),
            engine_thread=EngineThread(0),
        )
        self.runtime = Runtime(
            build_engines(), config.engine_settings(), None, dead_letter_inventory=False, task_of=self.ctx.keys.task_of
        )
        inventory = [e for e in EVENTS if e["topic"] == self.topics.cluster_status]
        for event in inventory:
            broker.append(TopicPartition(event["topic"], 0), event["key"].encode(), orjson.dumps(event["value"]))
        self.consumer = FakeConsumer(broker)
        self.clients = ShellClients(
            consumer=self.consumer,
            restorer=FakeConsumer(broker),
            peers=FakePeers(),
            barrier=FakeBarrier(broker.log(TopicPartition(self.topics.cluster_status, 0))),
            loose=FakeProducer(broker),
        )
        self.commits = TaskCommits(self.ctx)
        self.ownership = TaskOwnership(self.ctx, self.clients, self.runtime, self.commits)
        self.loop = ProcessingLoop(
            self.ctx, self.clients, self.runtime, ownership=self.ownership, commits=self.commits, queue_file=None
        )
        self.idle_polls = 0

    def produce(self, *events: dict[str, Any]) -> None:
        """Committed subject records, each on its key's partition."""
        for event in events:
            tp = TopicPartition(event["topic"], self.ctx.keys.task_of(event["key"]))
            self.broker.append(tp, event["key"].encode(), orjson.dumps(event["value"]))

    async def start(self) -> None:
        """Join as the only instance: every task taken over."""
        assigned = [TopicPartition(t, p) for t in self.ctx.subject_topics for p in range(PARTITIONS)]
        self.consumer.assign(assigned)
        await self.ownership.take_assignment(assigned)

    async def run_until_idle(self, idle_polls: int = 3) -> None:
        """Run the loop until its polls have found nothing new `idle_polls` times in a row."""

        def idle() -> None:
            self.idle_polls += 1
            if self.idle_polls >= idle_polls:
                self.ctx.stop.set()

        def fetched(_records: Any) -> None:
            self.idle_polls = 0

        self.consumer.idle, self.consumer.fetched = idle, fetched
        await self.loop.run()

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        value = self.observer.metrics.registry.get_sample_value(name, labels or {})
        return 0.0 if value is None else value

    def decided(self) -> list[bytes | None]:
        """The keys of the committed decisions."""
        return self.broker.keys(self.topics.decisions)
