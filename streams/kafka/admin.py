"""Create the service's topics if missing and check the ones that exist have the shape it relies on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from streams.errors import TopicSetupError
from streams.kafka.retry import kafka_retrying
from streams.settings import Settings
from topics.names import TOPIC_SPECS

__all__ = ["TOPIC_ALREADY_EXISTS", "ensure_topics", "setup_topics"]

log = logging.getLogger("placement.admin")
_RECONNECT_SECONDS = 2.0

TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3
_METADATA_ATTEMPTS = 50  # x 0.2 s: metadata of a created topic propagates in milliseconds on a healthy cluster


async def setup_topics(settings: Settings, reachable: Callable[[bool], None]) -> dict[str, int]:
    """Connect (retrying every 2 s for as long as it takes, saying so each time, for a broker that is not up yet
    is the common case at start) and `ensure_topics`; `reachable` hears whether the broker answered."""
    kafka = settings.kafka
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers, client_id=f"{kafka.client_id}-admin")
        try:
            await admin.start()
            break
        except KafkaError as exc:
            reachable(False)
            log.error(
                "Kafka is not reachable; retrying until it is",
                extra={"bootstrap_servers": kafka.bootstrap_servers, "error": str(exc)},
            )
            await admin.close()
            await asyncio.sleep(_RECONNECT_SECONDS)
    reachable(True)
    try:
        return await ensure_topics(settings, admin)
    finally:
        await admin.close()


async def ensure_topics(settings: Settings, admin: AIOKafkaAdminClient) -> dict[str, int]:
    """Create every topic (co-partitioned ones with `task_partitions`); return name -> partition count.

    `create_topics` reports per-topic error codes instead of raising, so each code is checked here.
    """
    wanted = []
    for role, spec in TOPIC_SPECS.items():
        partitions = settings.kafka.task_partitions if spec.co_partitioned else 1
        configs = {"cleanup.policy": spec.cleanup_policy}
        if spec.max_message_bytes:
            configs["max.message.bytes"] = str(spec.max_message_bytes)
        wanted.append(
            NewTopic(settings.topics.name(role), partitions, settings.kafka.replication_factor, None, configs)
        )
    async for attempt in kafka_retrying():
        with attempt:
            response = await admin.create_topics(wanted)
    problems = [
        f"{topic}: error {code} {message or ''}".strip()
        for topic, code, *rest in response.topic_errors
        for message in [rest[0] if rest else None]
        if code not in (0, TOPIC_ALREADY_EXISTS)
    ]
    if problems:
        raise TopicSetupError("cannot create topics: " + "; ".join(problems))
    counts: dict[str, int] = {}
    described = await _describe_when_known(admin, [t.name for t in wanted])
    for entry in described:
        name = entry.get("topic") or entry.get("name")
        if entry.get("error_code", 0):
            raise TopicSetupError(f"cannot describe topic {name}: error {entry['error_code']}")
        counts[name] = len(entry["partitions"])
    co = {
        settings.topics.name(role): counts.get(settings.topics.name(role), 0)
        for role, spec in TOPIC_SPECS.items()
        if spec.co_partitioned
    }
    if len(set(co.values())) != 1:
        shape = ", ".join(f"{name}={n}" for name, n in sorted(co.items()))
        raise TopicSetupError(f"co-partitioned topics must have equal partition counts, found {shape}")
    return counts


async def _describe_when_known(admin: AIOKafkaAdminClient, names: list[str]) -> list[dict[str, Any]]:
    """Describe topics, waiting (bounded) while a just-created topic is not yet in the broker's metadata."""
    for _ in range(_METADATA_ATTEMPTS):
        described: list[dict[str, Any]] = await admin.describe_topics(names)
        if not any(entry.get("error_code", 0) == UNKNOWN_TOPIC_OR_PARTITION for entry in described):
            break
        await asyncio.sleep(0.2)
    return described
