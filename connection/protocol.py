"""Everything taken from aiokafka beyond its public API, in one module written for one aiokafka version.

aiokafka's public calls cannot ask which operations the broker allows: its Metadata request stops at v5, before
the topics' authorized operations (v8), and it parses a DescribeGroups v3 answer with the v2 layout, which drops
the group's. So the two requests are declared here and sent through the admin client's request method. The
connection probe opens one connection with aiokafka's connection factory, and the group's committed offsets are
read with their metadata from the consumer's coordinator (`AIOKafkaConsumer.committed` drops it).
tests/connection/test_protocol_contract.py pins `WRITTEN_FOR` and the private names and signatures used here: an
aiokafka upgrade fails it first, and each check says which public form to move to if one appears.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.conn import create_conn
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import Array, Boolean, Bytes, Int16, Int32, Schema, String

__all__ = ["WRITTEN_FOR", "committed_offsets", "group_operations", "open_connection", "topic_operations"]

WRITTEN_FOR = "0.14.0"
"""The aiokafka version whose private API this module uses (pyproject.toml allows 0.14.x)."""


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
    response: Any = await admin._send_request(_AuthorizedOperationsRequest(names))
    return {topic: (error_code, operations) for error_code, topic, _, _, operations in response.topics}


async def group_operations(admin: AIOKafkaAdminClient, group: str, coordinator: int) -> list[tuple[int, int]]:
    """The group's error code and the operations this client may perform on it (negative: not reported), asked of
    its coordinator."""
    response: Any = await admin._send_request(_GroupOperationsRequest(group), coordinator)
    return [
        (error_code, operations)
        for error_code, _name, _state, _type, _protocol, _members, operations in response.groups
    ]


async def open_connection(host: str, port: int, request_timeout_ms: int, options: dict[str, Any]) -> Any:
    """One authenticated connection to one broker (the caller closes it); `options` are the client's connection
    arguments without the bootstrap servers."""
    return await create_conn(host, port, request_timeout_ms=request_timeout_ms, **options)


async def committed_offsets(
    consumer: AIOKafkaConsumer, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, Any]:
    """The group's committed offsets of `partitions` with their metadata (`OffsetAndMetadata`; offset -1: none),
    in one request to the group's coordinator."""
    fetched: dict[TopicPartition, Any] = await consumer._coordinator.fetch_committed_offsets(list(partitions))
    return fetched
