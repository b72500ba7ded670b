"""Least privilege: the ACLs each principal needs, a check of them at start, and one clear message per failure.

A missing ACL surfaces in aiokafka as an error deep inside a client (a transaction that cannot add a partition,
a consumer that cannot join), often retried and logged at every attempt. The processor instead asks the broker
up front which operations it may perform on its topics and group (the Metadata and DescribeGroups requests
report them), and turns what is missing into one message naming the resource, the operation and the principal.
Authentication and TLS failures are recognised the same way, from a single probe connection.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.conn import create_conn
from aiokafka.errors import (
    AuthenticationFailedError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    IllegalSaslStateError,
    KafkaError,
    SaslAuthenticationFailed,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailed,
    UnsupportedSaslMechanismError,
)
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import Array, Boolean, Bytes, Int16, Int32, Schema, String

from streams.errors import ServiceError
from streams.kafka.security import connection_options
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


def transactional_id_prefix(group_id: str) -> str:
    """The prefix of every task producer's transactional id (see streams/kafka/tasks.py)."""
    return f"{group_id}-tasks-"


def principal_of(kafka: KafkaSettings) -> str:
    """The principal the broker most likely sees, for messages; a TLS certificate's is the broker's mapping of its
    distinguished name, unknown here."""
    if kafka.security_protocol.startswith("SASL_") and kafka.sasl_mechanism != "OAUTHBEARER" and kafka.sasl_username:
        return f"User:{kafka.sasl_username}"
    if kafka.ssl_cert_file is not None:
        return "the principal of the client certificate"
    if kafka.security_protocol.startswith("SASL_"):
        return "the principal of the OAUTHBEARER token"
    return "User:ANONYMOUS"


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


# --- which operations the broker allows ----------------------------------------------------------------------
class _MetadataResponseV8(Response):  # type: ignore[misc]
    API_KEY = 3
    API_VERSION = 8
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("brokers", Array(("node_id", Int32), ("host", String("utf-8")), ("port", Int32), ("rack", String("utf-8")))),
        ("cluster_id", String("utf-8")),
        ("controller_id", Int32),
        (
            "topics",
            Array(
                ("error_code", Int16),
                ("topic", String("utf-8")),
                ("is_internal", Boolean),
                (
                    "partitions",
                    Array(
                        ("error_code", Int16),
                        ("partition", Int32),
                        ("leader", Int32),
                        ("leader_epoch", Int32),
                        ("replicas", Array(Int32)),
                        ("isr", Array(Int32)),
                        ("offline_replicas", Array(Int32)),
                    ),
                ),
                ("topic_authorized_operations", Int32),
            ),
        ),
        ("cluster_authorized_operations", Int32),
    )


class _MetadataRequestV8(RequestStruct):  # type: ignore[misc]
    API_KEY = 3
    API_VERSION = 8
    RESPONSE_TYPE = _MetadataResponseV8
    SCHEMA = Schema(
        ("topics", Array(String("utf-8"))),
        ("allow_auto_topic_creation", Boolean),
        ("include_cluster_authorized_operations", Boolean),
        ("include_topic_authorized_operations", Boolean),
    )


class _AuthorizedOperationsRequest(Request[_MetadataRequestV8]):  # type: ignore[misc]
    """Topic metadata with the operations the caller may perform on each topic (Metadata v8, Kafka 2.3+)."""

    API_KEY = 3

    def __init__(self, topics: list[str]) -> None:
        self._topics = topics

    def build(self, request_struct_class: type[_MetadataRequestV8]) -> _MetadataRequestV8:
        return request_struct_class(self._topics, False, False, True)


class _DescribeGroupsResponseV3(Response):  # type: ignore[misc]
    API_KEY = 15
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "groups",
            Array(
                ("error_code", Int16),
                ("group", String("utf-8")),
                ("state", String("utf-8")),
                ("protocol_type", String("utf-8")),
                ("protocol", String("utf-8")),
                (
                    "members",
                    Array(
                        ("member_id", String("utf-8")),
                        ("client_id", String("utf-8")),
                        ("client_host", String("utf-8")),
                        ("member_metadata", Bytes),
                        ("member_assignment", Bytes),
                    ),
                ),
                ("authorized_operations", Int32),
            ),
        ),
    )


class _DescribeGroupsRequestV3(RequestStruct):  # type: ignore[misc]
    API_KEY = 15
    API_VERSION = 3
    RESPONSE_TYPE = _DescribeGroupsResponseV3
    SCHEMA = Schema(("groups", Array(String("utf-8"))), ("include_authorized_operations", Boolean))


class _GroupOperationsRequest(Request[_DescribeGroupsRequestV3]):  # type: ignore[misc]
    """A group's description with the operations the caller may perform on it (aiokafka parses the v3 answer
    with the v2 layout, which drops them)."""

    API_KEY = 15

    def __init__(self, group: str) -> None:
        self._group = group

    def build(self, request_struct_class: type[_DescribeGroupsRequestV3]) -> _DescribeGroupsRequestV3:
        return request_struct_class([self._group], True)


async def topic_operations(admin: AIOKafkaAdminClient, names: list[str]) -> dict[str, tuple[int, int]]:
    """Per topic: the error code (0, 3 for a topic that does not exist, 29 when even describing it is denied) and
    the operations this client may perform. Never creates a topic, whatever the broker's auto-creation setting."""
    response: Any = await admin._send_request(_AuthorizedOperationsRequest(names))  # aiokafka has no public form
    return {topic: (error_code, operations) for error_code, topic, _, _, operations in response.topics}


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
    response: Any = await admin._send_request(_GroupOperationsRequest(group), coordinator)
    for error_code, _name, _state, _type, _protocol, _members, operations in response.groups:
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


# --- classifying failures ----------------------------------------------------------------------------------
def describe_failure(exc: BaseException, kafka: KafkaSettings, resource: str = "") -> str | None:
    """One clear sentence for an authentication, TLS or authorization failure; None for anything else (a broker
    that is away, a timeout), which is retried as before."""
    who = principal_of(kafka)
    on = f" on {resource}" if resource else ""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"TLS: the broker's certificate is not trusted ({exc.verify_message}); set ssl_ca_file to the CA that "
            "signed it"
        )
    if isinstance(exc, ssl.SSLError):
        return f"TLS handshake with the broker failed ({exc.reason or exc.__class__.__name__}); check ssl_* settings"
    if isinstance(exc, SaslAuthenticationFailed | AuthenticationFailedError | IllegalSaslStateError):
        return (
            f"SASL {kafka.sasl_mechanism} authentication of {who} failed: wrong username or password (or token), "
            "or the user does not exist on the broker"
        )
    if isinstance(exc, UnsupportedSaslMechanismError):
        return f"the broker does not enable SASL mechanism {kafka.sasl_mechanism} on this listener"
    if isinstance(exc, TopicAuthorizationFailedError):
        return f"Kafka denies {who} a topic operation{on}: grant Read or Write on the topic (see docs/security.md)"
    if isinstance(exc, GroupAuthorizationFailedError):
        return f"Kafka denies {who} the consumer group {kafka.group_id}: grant Read on Group {kafka.group_id}"
    if isinstance(exc, TransactionalIdAuthorizationFailed):
        prefix = transactional_id_prefix(kafka.group_id)
        return f"Kafka denies {who} its transactions: grant Write on TransactionalId prefix {prefix}"
    if isinstance(exc, ClusterAuthorizationFailedError):
        return f"Kafka denies {who} a cluster operation{on}: grant IdempotentWrite on Cluster (brokers before 2.8)"
    return None


async def probe_connection(kafka: KafkaSettings, timeout_ms: int = 10_000) -> BaseException | None:
    """Open (and close) one connection to the first bootstrap server that accepts TCP, with authentication; the
    error it raised or None. aiokafka's own bootstrap reports such failures only as "Unable to bootstrap"."""
    options = connection_options(kafka)
    options.pop("bootstrap_servers")
    failure: BaseException | None = None
    for address in kafka.bootstrap_servers.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            conn = await create_conn(host.strip("[]"), int(port), request_timeout_ms=timeout_ms, **options)
        except (OSError, KafkaError, TimeoutError) as exc:
            failure = exc.__cause__ if isinstance(exc.__cause__, ssl.SSLError) else exc
            if describe_failure(failure, kafka) is not None:
                return failure  # authentication and TLS fail the same way on every broker
            continue
        conn.close()
        return None
    return failure
