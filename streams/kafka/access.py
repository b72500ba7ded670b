"""Least privilege: the ACLs each principal needs, a check of them at start, and one clear message per failure.

A missing ACL surfaces in aiokafka as an error deep inside a client (a transaction that cannot add a partition,
a consumer that cannot join), often retried and logged at every attempt. The processor instead asks the broker
up front which operations it may perform on its topics and group (the Metadata and DescribeGroups requests
report them), and turns what is missing into one message naming the resource, the operation and the principal.
Authentication and TLS failures are recognised the same way, from a single probe connection
(connection/failures.py); the requests that report the operations are in connection/protocol.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import GroupAuthorizationFailedError, KafkaError, TransactionalIdAuthorizationFailed

from connection.failures import describe_failure, principal_of, probe_connection, transactional_id_prefix
from connection.protocol import group_operations, topic_operations
from connection.security import connection_options
from streams.errors import ServiceError
from streams.settings import KafkaSettings, Settings
from topics.names import TopicRole

__all__ = [
    "AccessDeniedError",
    "Grant",
    "advisor_grants",
    "deployer_grants",
    "describe_failure",
    "missing_group_grants",
    "missing_topic_grants",
    "missing_transactional_grants",
    "principal_of",
    "probe_connection",
    "processor_grants",
    "submitter_grants",
    "topic_operations",
    "transactional_id_prefix",
]

ResourceType = Literal["Topic", "Group", "TransactionalId", "Cluster"]
Operation = Literal["Read", "Write", "Create", "Describe", "IdempotentWrite"]

# Kafka's AclOperation codes: bit n of an "authorized operations" field is operation n.
OPERATION_CODES: dict[str, int] = {"Read": 3, "Write": 4, "Create": 5, "Describe": 8, "IdempotentWrite": 12}
_UNKNOWN_TOPIC = 3
_TOPIC_AUTHORIZATION_FAILED = 29
_GROUP_AUTHORIZATION_FAILED = 30
_COORDINATOR_ATTEMPTS = 50

_PROCESSOR_READS: tuple[TopicRole, ...] = (TopicRole.SUBMISSIONS, TopicRole.ADVISOR_RECOMMENDATIONS)
_PROCESSOR_READS += (TopicRole.CLUSTER_STATUS, TopicRole.TAINTS, TopicRole.CHANGELOG)
_PROCESSOR_WRITES = (TopicRole.DECISIONS, TopicRole.ADVISOR_REQUESTS, TopicRole.CHANGELOG, TopicRole.DEAD_LETTER)


@dataclass(frozen=True, slots=True)
class Grant:
    """One ALLOW ACL: an operation on a resource (a literal name, or every name with a prefix)."""

    resource_type: ResourceType
    name: str
    operation: Operation
    pattern: Literal["LITERAL", "PREFIXED"] = "LITERAL"

    def describe(self) -> str:
        """E.g. `Write on Topic decisions` or `Write on TransactionalId prefix placement-tasks-`."""
        prefix = "prefix " if self.pattern == "PREFIXED" else ""
        return f"{self.operation} on {self.resource_type} {prefix}{self.name}"

    def kafka_acls_arguments(self, principal: str) -> str:
        """The `kafka-acls.sh --add` arguments that grant it."""
        resource = {
            "Topic": f"--topic {self.name}",
            "Group": f"--group {self.name}",
            "TransactionalId": f"--transactional-id {self.name}",
            "Cluster": "--cluster",
        }[self.resource_type]
        pattern = " --resource-pattern-type prefixed" if self.pattern == "PREFIXED" else ""
        return f"--allow-principal {principal} --operation {self.operation} {resource}{pattern}"


class AccessDeniedError(ServiceError):
    """The broker refuses an operation this process needs; the message says what to grant to whom."""


def processor_grants(settings: Settings, *, creates_topics: bool = False) -> list[Grant]:
    """Exactly what the processor needs: read its inputs and tables, write its outputs, its group, its tasks'
    transactional ids; create on topics only when it is the one that creates them."""
    names, group = settings.topics, settings.kafka.group_id
    grants = [Grant("Topic", names.name(role), "Read") for role in _PROCESSOR_READS]
    grants += [Grant("Topic", names.name(role), "Write") for role in _PROCESSOR_WRITES]
    grants.append(Grant("Group", group, "Read"))
    grants.append(Grant("TransactionalId", transactional_id_prefix(group), "Write", "PREFIXED"))
    if creates_topics:
        grants += [Grant("Topic", names.name(role), "Create") for role in TopicRole]
    return grants


def submitter_grants(settings: Settings) -> list[Grant]:
    """Whoever publishes submissions and inventory (cluster status, taints)."""
    roles = (TopicRole.SUBMISSIONS, TopicRole.CLUSTER_STATUS, TopicRole.TAINTS)
    return [Grant("Topic", settings.topics.name(role), "Write") for role in roles]


def advisor_grants(settings: Settings, group: str, *, reads_cluster_status: bool = False) -> list[Grant]:
    """One advisor: read the requests in its own group, write its recommendations; an advisor that follows the
    inventory (the example `cpu_priority`) also reads cluster status."""
    grants = [
        Grant("Topic", settings.topics.name(TopicRole.ADVISOR_REQUESTS), "Read"),
        Grant("Group", group, "Read"),
        Grant("Topic", settings.topics.name(TopicRole.ADVISOR_RECOMMENDATIONS), "Write"),
    ]
    if reads_cluster_status:
        grants.append(Grant("Topic", settings.topics.name(TopicRole.CLUSTER_STATUS), "Read"))
    return grants


def deployer_grants(settings: Settings, group: str) -> list[Grant]:
    """Whoever acts on decisions: read the decisions topic in its own group."""
    return [Grant("Topic", settings.topics.name(TopicRole.DECISIONS), "Read"), Grant("Group", group, "Read")]


def denied_message(kafka: KafkaSettings, missing: Sequence[Grant], why: str = "") -> str:
    """The one error line for missing ACLs."""
    grants = "; ".join(grant.describe() for grant in missing)
    reason = f" ({why})" if why else ""
    return f"Kafka denies {principal_of(kafka)} access{reason}: grant {grants}"


async def missing_topic_grants(
    admin: AIOKafkaAdminClient, settings: Settings, grants: Iterable[Grant]
) -> tuple[list[Grant], set[str]]:
    """The topic grants the broker does not give this client, and the topics that do not exist (visible to it).

    A topic the client may not even describe is reported as needing every operation wanted on it, as Kafka then
    hides whether the topic exists; create grants are left to the creation, where the broker answers for them.
    """
    wanted = [grant for grant in grants if grant.resource_type == "Topic" and grant.operation != "Create"]
    answers = await topic_operations(admin, sorted({grant.name for grant in wanted}))
    absent = {topic for topic, (error_code, _) in answers.items() if error_code == _UNKNOWN_TOPIC}
    allowed = {
        topic: None if error_code == _TOPIC_AUTHORIZATION_FAILED else operations
        for topic, (error_code, operations) in answers.items()
    }
    missing = []
    for grant in wanted:
        if grant.operation == "Create" or grant.name in absent:
            continue  # creation is judged when creating; a topic that does not yet exist reports no operations
        operations = allowed.get(grant.name)
        if operations is None or not operations & (1 << OPERATION_CODES[grant.operation]):
            missing.append(grant)
    return missing, absent


async def missing_group_grants(admin: AIOKafkaAdminClient, group: str) -> list[Grant]:
    """Read on the consumer group, or nothing missing."""
    for _ in range(_COORDINATOR_ATTEMPTS):  # the first group of a cluster waits for its offsets topic
        try:
            coordinator = await admin.find_coordinator(group)
            break
        except GroupAuthorizationFailedError:
            return [Grant("Group", group, "Read")]
        except KafkaError as exc:
            if not exc.retriable:
                raise
            await asyncio.sleep(0.2)
    else:
        return []  # no coordinator yet: the consumer reports a refusal when it joins
    for error_code, operations in await group_operations(admin, group, coordinator):
        if error_code == _GROUP_AUTHORIZATION_FAILED:
            return [Grant("Group", group, "Read")]
        if operations >= 0 and not operations & (1 << OPERATION_CODES["Read"]):  # negative: not reported
            return [Grant("Group", group, "Read")]
    return []


async def missing_transactional_grants(kafka: KafkaSettings) -> list[Grant]:
    """Write on the task producers' transactional ids, or nothing missing: a producer with an id of the same prefix
    (never a task's own, which would fence its owner) registers and leaves."""
    prefix = transactional_id_prefix(kafka.group_id)
    producer = AIOKafkaProducer(
        **connection_options(kafka), client_id=f"{kafka.client_id}-access-check", transactional_id=f"{prefix}check"
    )
    try:
        await producer.start()
    except TransactionalIdAuthorizationFailed:
        return [Grant("TransactionalId", prefix, "Write", "PREFIXED")]
    finally:
        await producer.stop()
    return []
