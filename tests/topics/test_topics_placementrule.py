"""PlacementRule events on the wire: decided events and candidate publications written before the bounded
reduction history (hybrid-placement H6) still decode after an upgrade, in today's shape."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from topics.codec import decode_event, dump_model
from topics.errors import ContractError
from topics.names import TopicRole

MC = {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster"}


def ref(name: str, namespace: str = "") -> dict[str, Any]:
    return {**MC, **({"namespace": namespace} if namespace else {}), "name": name}


def rated(*pairs: tuple[str, int]) -> list[dict[str, Any]]:
    return [{"candidate": ref(n), "rating": h / 100, "hundredths": h} for n, h in pairs]


# a decided event as the release before H6 wrote it: a forced finalisation with both steps whole
EARLIER_DECIDED = {
    "namespace": "default",
    "name": "rule",
    "generation": 1,
    "decisions": [ref("c2")],
    "candidates": [ref("c2")],
    "eliminators": [ref("c3"), ref("c1")],
    "round": 1,
    "deleted": False,
    "observedGeneration": 1,
    "lastUpdateTime": "2026-01-01T00:00:00Z",
    "recommendations": {"a": [{"name": "c1", "score": 50}, {"name": "c2", "score": 90}, {"name": "c3", "score": 10}]},
    "reductions": [
        {"round": 1, "reason": "rating", "removed": [ref("c3")], "ratings": rated(("c1", 5000), ("c2", 9000),
         ("c3", 1000)), "forced": True},
        {"round": 1, "reason": "rating", "removed": [ref("c1")], "ratings": rated(("c1", 5000), ("c2", 9000)),
         "forced": True},
    ],
}  # fmt: skip


def record(kind: str, data: dict[str, Any]) -> bytes:
    envelope = {"specversion": "1.0", "id": "1", "source": "/tests", "type": f"{kind}.v1"}
    envelope.update(time=datetime(2026, 1, 1, tzinfo=UTC).isoformat(), datacontenttype="application/json", data=data)
    return orjson.dumps(envelope)


def test_a_decided_event_of_the_earlier_shape_reads_as_todays() -> None:
    event = decode_event(record("placementrule.decided", EARLIER_DECIDED), TopicRole.DECISIONS)
    wire = dump_model(event.data)
    assert wire["reductions"] == [{"round": 1, "removed": ["c3"]}, {"round": 1, "removed": ["c1"]}]
    assert wire["lastReduction"] == EARLIER_DECIDED["reductions"][-1], "the last step stays whole"
    assert [d["name"] for d in wire["decisions"]] == ["c2"]
    again = decode_event(record("placementrule.decided", wire), TopicRole.DECISIONS)
    assert dump_model(again.data) == wire, "today's shape reads as it is"


def test_a_candidates_publication_of_the_earlier_shape_reads_as_todays() -> None:
    step = {"round": 1, "reason": "predicate", "removed": [ref("db", "apps")], "ratings": [], "forced": False}
    status = {"round": 2, "candidates": [ref("web", "apps")], "reductions": [step]}
    rule = {"namespace": "apps", "name": "r"}
    data = {"rule": rule, "round": 2, "advisors": ["a"], "candidates": [ref("web", "apps")], "status": status}
    event = decode_event(record("candidates.proposed", data), TopicRole.ADVISOR_REQUESTS)
    wire = dump_model(event.data)["status"]
    assert wire["reductions"] == [{"round": 1, "removed": ["apps/db"]}]
    assert wire["lastReduction"]["reason"] == "predicate"


@pytest.mark.parametrize(
    "reductions",
    [
        [{"round": 1, "reason": "rating", "removed": "c1"}],
        [{"round": "one", "reason": "rating", "removed": [ref("c1")]}],
        [{"round": 1, "removed": [ref("c1")]}],
    ],
    ids=["removed-not-a-list", "round-not-a-number", "references-without-reason"],
)
def test_malformed_reductions_are_still_refused(reductions: list[dict[str, Any]]) -> None:
    with pytest.raises(ContractError, match="reductions"):
        decode_event(
            record("placementrule.decided", {**EARLIER_DECIDED, "reductions": reductions}), TopicRole.DECISIONS
        )
