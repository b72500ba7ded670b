"""Create the service's topics if missing and check the ones that exist have the shape it relies on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from streams.errors import TopicRefusal, TopicSetupError
from streams.kafka.access import (
    AccessDeniedError,
    Grant,
    denied_message,
    describe_failure,
    missing_group_grants,
    missing_topic_grants,
    missing_transactional_grants,
    probe_connection,
    processor_grants,
    topic_operations,
)
from streams.kafka.clients import admin_client
from streams.kafka.retry import kafka_retrying
from streams.kafka.topic_checks import check_state_topics, committed_offsets, refuse_lost_topics
from streams.kafka.topology import REPARTITION_HELP
from streams.settings import Settings
from topics.names import TOPIC_SPECS, TopicRole

__all__ = ["TOPIC_ALREADY_EXISTS", "create_topics", "ensure_topics", "missing_access", "new_topics", "setup_topics"]

log = logging.getLogger("placement.admin")
_RECONNECT_SECONDS = 2.0
_ACCESS_RECHECK_SECONDS = 5.0

TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_AUTHORIZATION_FAILED = 29
_METADATA_ATTEMPTS = 50  # x 0.2 s: metadata of a created topic propagates in milliseconds on a healthy cluster


async def setup_topics(
    settings: Settings, reachable: Callable[[bool], None], refused: Callable[[str | None], None] = lambda _: None
) -> dict[str, int]:
    """Connect, check the broker grants what the processor needs, `ensure_topics` and check the state topics
    (topic_checks.py); `reachable` hears whether the broker answered, `refused` why the topics are refused
    (None once they are accepted).

    Every obstacle is waited out, as at start the broker is often simply not up yet: an unreachable broker is
    retried every 2 s, saying so each time; a rejected login, an untrusted certificate or a missing ACL is said
    once (again only if it changes) and rechecked every few seconds, so granting the ACL or fixing the secret
    lets the processor go on without a restart, and the log is not flooded meanwhile. A refusal of the topics
    is said and rechecked the same way.
    """
    obstacles = _Obstacles(settings, reachable)
    while True:
        outcome = await _set_up_once(settings, obstacles, refused)
        if isinstance(outcome, dict):
            return outcome
        await asyncio.sleep(outcome)


class _Obstacles:
    """What set-up says while it waits: a problem once (again only if it changes), an unreachable broker at every
    attempt."""

    def __init__(self, settings: Settings, reachable: Callable[[bool], None]) -> None:
        self.kafka = settings.kafka
        self.reachable = reachable
        self._said = ""

    def once(self, message: str) -> float:
        """Say `message` unless it was the last said; returns how long to wait before the next attempt."""
        if message != self._said:
            log.error(message, extra={"bootstrap_servers": self.kafka.bootstrap_servers})
            self._said = message
        return _ACCESS_RECHECK_SECONDS

    def unreachable(self, error: BaseException) -> float:
        """The broker did not answer; returns how long to wait before the next attempt."""
        self.reachable(False)
        log.error(
            "Kafka is not reachable; retrying until it is",
            extra={"bootstrap_servers": self.kafka.bootstrap_servers, "error": repr(error)},
        )
        return _RECONNECT_SECONDS


async def _set_up_once(
    settings: Settings, obstacles: _Obstacles, refused: Callable[[str | None], None]
) -> dict[str, int] | float:
    """One attempt of `setup_topics`: the partition counts, or how long to wait before the next attempt."""
    kafka = settings.kafka
    failure = await probe_connection(kafka)
    problem = describe_failure(failure, kafka) if failure is not None else None
    if problem is not None:  # not ready (nothing started yet); one line says why, not a second one too
        return obstacles.once(f"cannot use Kafka: {problem}")
    if failure is not None:
        return obstacles.unreachable(failure)
    admin = admin_client(kafka)
    try:
        await admin.start()
        obstacles.reachable(True)
        missing = await missing_access(settings, admin)
        if not missing:
            counts = await _checked_topics(settings, admin)
            refused(None)
            return counts
        return obstacles.once(denied_message(kafka, missing, "checked at start; rechecked every few seconds"))
    except TopicRefusal as exc:
        refused(str(exc))
        return obstacles.once(f"refusing to run the tasks: {exc} (rechecked every few seconds)")
    except AccessDeniedError as exc:
        return obstacles.once(str(exc))
    except (KafkaError, TimeoutError) as exc:
        problem = describe_failure(exc, kafka)
        if problem is None:  # the broker went away or is electing leaders (a restart): try again soon
            return obstacles.unreachable(exc)
        return obstacles.once(f"cannot use Kafka: {problem}")
    finally:
        await admin.close()


async def _checked_topics(settings: Settings, admin: AIOKafkaAdminClient) -> dict[str, int]:
    """`ensure_topics` between the state checks that must see the topics before and after it."""
    committed = await committed_offsets(settings, admin)
    await refuse_lost_topics(settings, admin, committed)
    counts = await ensure_topics(settings, admin)
    await check_state_topics(settings, admin, counts, committed)
    return counts


async def missing_access(settings: Settings, admin: AIOKafkaAdminClient) -> list[Grant]:
    """The processor's grants (besides creating topics) the broker does not give it."""
    wanted = processor_grants(settings)
    missing, _absent = await missing_topic_grants(admin, settings, wanted)
    missing += await missing_group_grants(admin, settings.kafka.group_id)
    return missing + await missing_transactional_grants(settings.kafka)


async def create_topics(settings: Settings) -> dict[str, int]:
    """`ensure_topics` through an admin client of its own, for tools, tests and benchmarks that need the topics
    before a processor runs."""
    admin = admin_client(settings.kafka)
    await admin.start()
    try:
        return await ensure_topics(settings, admin)
    finally:
        await admin.close()


async def ensure_topics(
    settings: Settings, admin: AIOKafkaAdminClient, roles: Collection[TopicRole] | None = None
) -> dict[str, int]:
    """Create the topics that do not exist yet (co-partitioned ones with `task_partitions`), so a processor
    whose topics were created by an administrator needs no create ACL; return name -> partition count.

    `roles` limits it to some topics (e.g. the ones a submitter writes, which is all its ACLs let it describe).
    """
    wanted = new_topics(settings, roles)
    answers = await topic_operations(admin, [topic.name for topic in wanted])
    refused = sorted(name for name, (code, _) in answers.items() if code == TOPIC_AUTHORIZATION_FAILED)
    if refused:
        raise AccessDeniedError(
            denied_message(settings.kafka, [Grant("Topic", name, "Describe") for name in refused], "describing")
        )
    missing = [topic for topic in wanted if answers.get(topic.name, (UNKNOWN_TOPIC_OR_PARTITION, 0))[0]]
    if missing:
        await _create(settings, admin, missing)
    counts: dict[str, int] = {}
    described = await _describe_when_known(admin, [t.name for t in wanted])
    for entry in described:
        name = str(entry.get("topic") or entry.get("name"))
        if entry.get("error_code", 0):
            raise TopicSetupError(f"cannot describe topic {name}: error {entry['error_code']}")
        counts[name] = len(entry["partitions"])
    co = {
        settings.topics.name(role): counts.get(settings.topics.name(role), 0)
        for role, spec in TOPIC_SPECS.items()
        if spec.co_partitioned and (roles is None or role in roles)
    }
    if len(set(co.values())) > 1:
        shape = ", ".join(f"{name}={n}" for name, n in sorted(co.items()))
        raise TopicRefusal(f"co-partitioned topics must have equal partition counts, found {shape}; {REPARTITION_HELP}")
    return counts


def new_topics(settings: Settings, roles: Collection[TopicRole] | None = None) -> list[NewTopic]:
    """The topics as the processor creates them (co-partitioned ones with `task_partitions`), in role order; the
    Strimzi `KafkaTopic`s (`streams/manifests/strimzi.py`) are made from the same list."""
    wanted = []
    for role, spec in TOPIC_SPECS.items():
        if roles is not None and role not in roles:
            continue
        partitions = settings.kafka.task_partitions if spec.co_partitioned else 1
        configs = {"cleanup.policy": spec.cleanup_policy}
        if spec.max_message_bytes:
            configs["max.message.bytes"] = str(spec.max_message_bytes)
        wanted.append(
            NewTopic(settings.topics.name(role), partitions, settings.kafka.replication_factor, None, configs)
        )
    return wanted


async def _create(settings: Settings, admin: AIOKafkaAdminClient, topics: list[NewTopic]) -> None:
    """Create the topics that do not exist; `create_topics` reports per-topic error codes instead of raising."""
    async for attempt in kafka_retrying():
        with attempt:
            response = await admin.create_topics(topics)
    denied = [topic for topic, code, *_ in response.topic_errors if code == TOPIC_AUTHORIZATION_FAILED]
    if denied:
        grants = [Grant("Topic", name, "Create") for name in sorted(denied)]
        raise AccessDeniedError(
            denied_message(settings.kafka, grants, "the topics do not exist; or let an administrator create them")
        )
    problems = [
        f"{topic}: error {code} {message or ''}".strip()
        for topic, code, *rest in response.topic_errors
        for message in [rest[0] if rest else None]
        if code not in (0, TOPIC_ALREADY_EXISTS)
    ]
    if problems:
        raise TopicSetupError("cannot create topics: " + "; ".join(problems))


async def _describe_when_known(admin: AIOKafkaAdminClient, names: list[str]) -> list[dict[str, Any]]:
    """Describe topics, waiting (bounded) while a just-created topic is not yet in the broker's metadata."""
    for _ in range(_METADATA_ATTEMPTS):
        described: list[dict[str, Any]] = await admin.describe_topics(names)
        if not any(entry.get("error_code", 0) == UNKNOWN_TOPIC_OR_PARTITION for entry in described):
            break
        await asyncio.sleep(0.2)
    return described
