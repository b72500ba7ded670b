"""connection/protocol.py against the installed aiokafka: the version it was written for, the private names and
signatures it relies on, and its requests and answers as they go over the wire. Each check fails on an aiokafka
that changed them, before any broker is involved; the last ones fail when aiokafka's public calls start doing
what the module does by hand, so the module can shrink."""

from __future__ import annotations

import inspect
from typing import Any

import aiokafka
import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.conn import create_conn
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.protocol.admin import DescribeGroupsRequest
from aiokafka.protocol.api import Request, Response
from aiokafka.protocol.metadata import MetadataRequest

from connection import protocol
from connection.protocol import WRITTEN_FOR

METADATA, DESCRIBE_GROUPS = 3, 15


def test_the_installed_aiokafka_is_the_one_the_module_was_written_for() -> None:
    assert aiokafka.__version__ == WRITTEN_FOR, "review connection/protocol.py against this aiokafka, then update it"


@pytest.mark.parametrize(
    ("function", "parameters"),
    [
        (AIOKafkaAdminClient._send_request, ["self", "request", "node_id"]),
        (GroupCoordinator.fetch_committed_offsets, ["self", "partitions"]),
    ],
    ids=["AIOKafkaAdminClient._send_request", "GroupCoordinator.fetch_committed_offsets"],
)
def test_the_private_methods_keep_their_parameters(function: object, parameters: list[str]) -> None:
    assert list(inspect.signature(function).parameters) == parameters  # type: ignore[arg-type]


def test_the_connection_factory_takes_what_connection_options_gives() -> None:
    signature = inspect.signature(create_conn)
    assert list(signature.parameters)[:2] == ["host", "port"]
    keywords = {"request_timeout_ms", "client_id", "security_protocol", "ssl_context", "sasl_mechanism"}
    keywords |= {"sasl_plain_username", "sasl_plain_password", "sasl_oauth_token_provider"}
    assert keywords <= set(signature.parameters)


def test_a_started_consumer_holds_its_group_coordinator() -> None:
    assert "self._coordinator = GroupCoordinator(" in inspect.getsource(AIOKafkaConsumer.start)


@pytest.mark.parametrize(
    ("request_", "versions", "version", "sent"),
    [
        (
            protocol._AuthorizedOperationsRequest(["a", "b"]),
            {METADATA: (0, 12)},
            8,
            {
                "topics": ["a", "b"],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": True,
            },
        ),
        (
            protocol._GroupOperationsRequest("g"),
            {DESCRIBE_GROUPS: (0, 5)},
            3,
            {"groups": ["g"], "include_authorized_operations": True},
        ),
    ],
    ids=["Metadata v8", "DescribeGroups v3"],
)
def test_each_request_is_built_at_its_version_and_encodes(
    request_: Request[Any], versions: dict[int, tuple[int, int]], version: int, sent: dict[str, object]
) -> None:
    struct = request_.prepare(versions)
    built_version = struct.API_VERSION
    assert built_version == version
    assert type(struct).decode(struct.encode()).to_object() == sent


def test_a_metadata_answer_is_read_as_topic_operations_reads_it() -> None:
    partition = (0, 0, 1, 5, [1], [1], [])
    answer = protocol._MetadataResponseV8(
        0,
        [(1, "localhost", 9092, None)],
        "cluster",
        1,
        [(0, "a", False, [partition], 0b1000), (29, "b", False, [], 0)],
        0,
    )
    decoded = protocol._MetadataResponseV8.decode(answer.encode())
    assert [(error, topic, operations) for error, topic, _, _, operations in decoded.topics] == [
        (0, "a", 0b1000),
        (29, "b", 0),
    ]


def test_a_group_answer_keeps_its_authorized_operations() -> None:
    answer = protocol._DescribeGroupsResponseV3(0, [(0, "g", "Stable", "consumer", "range", [], 0b1000)])
    decoded = protocol._DescribeGroupsResponseV3.decode(answer.encode())
    assert [(error, operations) for error, *_, operations in decoded.groups] == [(0, 0b1000)]


def test_aiokafka_public_metadata_still_stops_before_authorized_operations() -> None:
    newest = max(struct.API_VERSION for struct in MetadataRequest._CLASSES)
    assert newest < 8, "admin.describe_topics may now report authorized operations: use it in topic_operations"


def _group_fields(response: type[Response]) -> tuple[str, ...]:
    groups: tuple[str, ...] = response.SCHEMA.fields[response.SCHEMA.names.index("groups")].array_of.names
    return groups


def test_aiokafka_still_reads_a_describe_groups_v3_answer_without_its_operations() -> None:
    assert "authorized_operations" in _group_fields(protocol._DescribeGroupsResponseV3)  # what is looked for
    v3 = next(struct for struct in DescribeGroupsRequest._CLASSES if struct.API_VERSION == 3)
    assert "authorized_operations" not in _group_fields(v3.RESPONSE_TYPE), (
        "admin.describe_consumer_groups(include_authorized_operations=True) may now work: use it in group_operations"
    )
