"""The wire contract: type names and versions, envelope validation, encode/decode round trips, schemas."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest

from topics.codec import decode_event, dump_model, encode_event
from topics.errors import DecodeError, SchemaError, UnknownEventTypeError
from topics.events import EVENT_KINDS, parse_type
from topics.names import TOPIC_SPECS, TopicRole
from topics.placement import ClusterDecision, DecisionEntries, Placement, PlacementDecided
from topics.queue import ApplicationPlaced, ApplicationSubmitted

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("wire", "name", "version"),
    [
        ("placement.applied.v1", "placement.applied", 1),
        ("io.example.placement.applied.v1", "placement.applied", 1),
        ("cluster.taints.updated.v1", "cluster.taints.updated", 1),
        ("managedclustersetbinding.deleted.v1", "managedclustersetbinding.deleted", 1),
    ],
)
def test_wire_types_resolve_to_catalogue_entries(wire: str, name: str, version: int) -> None:
    kind, parsed_version = parse_type(wire)
    assert (kind.name, parsed_version) == (name, version)


@pytest.mark.parametrize(
    ("wire", "message"),
    [
        ("placement.applied", "no version suffix"),
        ("placement.applied.v2", "version v2 unknown"),
        ("placement.exploded.v1", "unknown event type"),
        ("", "no version suffix"),
    ],
)
def test_unknown_types_and_versions_are_refused(wire: str, message: str) -> None:
    with pytest.raises(UnknownEventTypeError, match=message):
        parse_type(wire)


def test_every_catalogue_type_carries_a_version_and_a_topic() -> None:
    for kind in EVENT_KINDS.values():
        assert kind.wire_type().endswith(".v1")
        assert kind.topic in TOPIC_SPECS


def test_encode_then_decode_round_trips_camel_case_fields() -> None:
    data = ApplicationSubmitted(application_id="a1", user="alice", groups=["dev"], tags={"k": "v"})
    raw = encode_event(
        kind_name="application.submitted",
        data=data,
        subject="Application/default",
        event_id="e1",
        time=datetime(2026, 1, 1, tzinfo=UTC),
    )
    wire = orjson.loads(raw)
    assert wire["type"] == "application.submitted.v1"
    assert wire["time"] == "2026-01-01T00:00:00Z"
    assert wire["subject"] == wire["partitionkey"] == "Application/default"
    assert wire["data"]["applicationId"] == "a1"
    decoded = decode_event(raw, TopicRole.SUBMISSIONS)
    assert decoded.data == data


_PAGE = {
    "apiVersion": "cluster.open-cluster-management.io/v1beta1",
    "kind": "PlacementDecision",
    "metadata": {
        "name": "p-decision-1",
        "namespace": "ns",
        "labels": {"cluster.open-cluster-management.io/placement": "p"},
    },
    "status": {"decisions": [{"clusterName": "c1", "reason": ""}, {"clusterName": "c2", "reason": ""}]},
}


@pytest.mark.parametrize(
    "data",
    [
        {"namespace": "ns", "name": "p", "deleted": True},
        {
            "namespace": "ns",
            "name": "p",
            "generation": 3,
            "evaluationTime": "2026-01-01T01:02:03.004567Z",
            "placementDecisions": [_PAGE],
            "decisionGroups": [
                {"decisionGroupIndex": 0, "decisionGroupName": "", "decisions": ["p-decision-1"], "clusterCount": 2}
            ],
            "numberOfSelectedClusters": 2,
            "conditions": [
                {"type": "PlacementSatisfied", "status": "True", "reason": "AllDecisionsScheduled", "message": "m"}
            ],
            "scores": {"c1": 200},
            "warning": {"plugin": "AddOn/a/b", "message": "expired"},
            "passingScores": {"c1": 200, "c2": -100},
            "prioritizers": [{"name": "Balance", "weight": 1, "scores": {"c1": 100}}],
            "filteredBy": {"c3": "TaintToleration"},
        },
    ],
)
def test_plain_json_fields_are_written_exactly_as_pydantic_would(data: dict[str, object]) -> None:
    """PlacementDecided passes its large plain-JSON fields through unwalked: same bytes, same field order."""
    model = PlacementDecided.model_validate(data)
    assert model.JSON_FIELDS
    expected = orjson.dumps(model.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert orjson.dumps(dump_model(model)) == expected
    raw = encode_event(kind_name="placement.decided", data=model, subject="Placement/ns/p", event_id="e", time=NOW)
    assert decode_event(raw, TopicRole.DECISIONS).data == model


def _shared(entries: list[dict[str, str]]) -> DecisionEntries:
    return DecisionEntries([ClusterDecision(clusterName=e["clusterName"], reason=e["reason"]) for e in entries])


@pytest.mark.parametrize(
    "pages",
    [
        [{**_PAGE, "status": {"decisions": _shared(_PAGE["status"]["decisions"])}}],
        [{**_PAGE, "status": {"decisions": _shared([])}}],
        [
            {**_PAGE, "status": {"decisions": _shared([{"clusterName": 'c"\\é', "reason": ""}])}},
            _PAGE,  # plain lists beside shared ones
            {**_PAGE, "status": {"decisions": _shared([]), "extra": 1}},  # more than decisions: written as it is
        ],
    ],
    ids=["shared", "empty", "mixed"],
)
def test_shared_decision_entries_are_written_as_plain_lists_would_be(pages: list[dict[str, object]]) -> None:
    """Entries the engine shares (DecisionEntries) are serialised once, to the bytes plain lists give."""
    model = PlacementDecided.model_construct(namespace="ns", name="p", placement_decisions=pages, deleted=False)
    plain = PlacementDecided.model_construct(
        namespace="ns", name="p", placement_decisions=orjson.loads(orjson.dumps(pages)), deleted=False
    )

    def encoded(data: PlacementDecided) -> bytes:
        return encode_event(kind_name="placement.decided", data=data, subject="Placement/ns/p", event_id="e", time=NOW)

    assert encoded(model) == encoded(model) == encoded(plain)
    assert orjson.dumps(dump_model(model)) == orjson.dumps(dump_model(plain))
    assert dump_model(model)["placementDecisions"] == plain.placement_decisions  # plain JSON unless serialised
    shared = [p["status"]["decisions"] for p in pages if isinstance(p["status"]["decisions"], DecisionEntries)]
    assert all(entries.json() is entries.json() for entries in shared)  # made once


def test_encode_refuses_data_of_another_type() -> None:
    wrong = ApplicationSubmitted(application_id="a1")
    with pytest.raises(TypeError, match="ApplicationPlaced"):
        encode_event(kind_name="application.placed", data=wrong, subject="s", event_id="e", time=datetime.now(UTC))
    ok = ApplicationPlaced(application_id="a", partition="default", queue="root.q", rule="fixed", created=False)
    assert encode_event(kind_name="application.placed", data=ok, subject="s", event_id="e", time=datetime.now(UTC))


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (b"\x00\x01", DecodeError, "not JSON"),
        (b'"text"', DecodeError, "expected a CloudEvent"),
        (
            b'{"specversion": "0.3", "id": "1", "source": "/s", "type": "placement.applied.v1"}',
            SchemaError,
            "specversion",
        ),
        (
            b'{"specversion": "1.0", "id": "1", "source": "/s", "type": "application.submitted.v1", '
            b'"data": {"applicationId": "a", "surprise": 1}}',
            SchemaError,
            "surprise",
        ),
        (
            b'{"specversion": "1.0", "id": "1", "source": "/s", "type": "managedcluster.applied.v1", "data": {}}',
            SchemaError,
            "does not belong",
        ),
    ],
)
def test_decode_errors_say_what_is_wrong(value: bytes, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        decode_event(value, TopicRole.SUBMISSIONS)


def test_kubernetes_objects_keep_unknown_fields_users_paste() -> None:
    raw = orjson.dumps(
        {
            "specversion": "1.0",
            "id": "1",
            "source": "/s",
            "type": "managedcluster.applied.v1",
            "data": {
                "metadata": {"name": "c1", "uid": "abc", "resourceVersion": "7"},
                "spec": {"hubAcceptsClient": True},
            },
        }
    )
    decoded = decode_event(raw, TopicRole.CLUSTER_STATUS)
    dumped = decoded.data.model_dump(by_alias=True)
    assert dumped["metadata"]["uid"] == "abc"
    assert dumped["spec"]["hubAcceptsClient"] is True


def test_every_event_type_has_a_json_schema() -> None:
    for kind in EVENT_KINDS.values():
        schema = kind.data_model.model_json_schema(by_alias=True, mode="serialization")
        assert schema["type"] == "object"
        assert "properties" in schema


@pytest.mark.parametrize(
    "raw",
    [
        {"metadata": {"name": "web", "namespace": "apps"}},
        {"metadata": {"name": "web"}, "spec": {"numberOfClusters": 2, "extra": 1}, "status": {"a": 1}, "zzz": 2},
    ],
    ids=["bare", "unknown-fields"],
)
def test_dump_model_puts_given_json_in_the_fields_place(raw: dict[str, object]) -> None:
    placement = Placement.model_validate(raw)
    whole = dump_model(placement)
    given = dump_model(placement, {"spec": {"given": True}})
    assert list(given) == list(whole)
    assert given == {**whole, "spec": {"given": True}}
