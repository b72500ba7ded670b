"""Shared advisor plumbing without Kafka: request filtering, post building, keys, topics and options."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from advisors.common import AdvisorConfig, base_parser, echo, encode_recommendation, handle_request, rule_key
from topics.codec import decode_event, encode_event
from topics.names import TopicRole
from topics.placementrule import CandidatesProposed, RecommendationEntry, RecommendationPosted, RuleRef

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def request(advisors: list[str], round_number: int = 3) -> bytes:
    data = CandidatesProposed.model_validate(
        {
            "rule": {"namespace": "apps", "name": "db"},
            "round": round_number,
            "advisors": advisors,
            "candidates": [
                {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "name": "c1"},
                {"kind": "VirtualMachine", "namespace": "raleigh", "name": "dev"},
            ],
        }
    )
    return encode_event(
        kind_name="candidates.proposed", data=data, subject="PlacementRule/apps/db", event_id="1", time=NOW
    )


def first_only(req: CandidatesProposed) -> list[RecommendationEntry]:
    return [echo(req.candidates[0], 40)]


@pytest.mark.parametrize(
    ("value", "name", "answered"),
    [
        (request(["cpu", "veto"]), "cpu", True),
        (request(["cpu", "veto"]), "veto", True),
        (request(["veto"]), "cpu", False),
        (request(["CPU"]), "cpu", False),
        (request([]), "cpu", False),
        (None, "cpu", False),
        (b"not json", "cpu", False),
        (b'{"specversion": "1.0", "id": "x", "source": "/s", "type": "nope.v1", "data": {}}', "cpu", False),
    ],
    ids=["named", "named-second", "not-named", "case-sensitive", "nobody", "tombstone", "garbage", "unknown-type"],
)
def test_advisor_handles_only_requests_naming_it(value: bytes | None, name: str, answered: bool) -> None:
    posted = handle_request(value, name, first_only)
    assert (posted is not None) is answered
    if posted is not None:
        assert posted.advisor == name
        assert posted.round == 3
        assert posted.rule == RuleRef(namespace="apps", name="db")
        assert posted.recommendations[0].model_dump(by_alias=True, exclude_none=True) == {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "name": "c1",
            "score": 40,
        }


def test_advisor_silent_answer_posts_nothing() -> None:
    assert handle_request(request(["cpu"]), "cpu", lambda req: None) is None


def test_advisor_post_key_and_value() -> None:
    posted = RecommendationPosted(rule=RuleRef(namespace="apps", name="db"), round=2, advisor="cpu")
    key, value = encode_recommendation(posted, "/advisors/cpu", NOW)
    assert key == b"PlacementRule/apps/db"
    event = decode_event(value, TopicRole.ADVISOR_RECOMMENDATIONS)
    assert event.kind.name == "recommendation.posted"
    assert event.data == posted
    assert event.envelope.subject == "PlacementRule/apps/db"
    assert event.envelope.source == "/advisors/cpu"
    assert rule_key(RuleRef(name="r")) == "PlacementRule//r"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--name", "cpu"], ("127.0.0.1:9092", "advisor-cpu", "placement.advisor-requests")),
        (
            ["--name", "cpu", "--bootstrap", "k:1", "--topic-prefix", "t1-", "--group", "g"],
            ("k:1", "g", "t1-placement.advisor-requests"),
        ),
    ],
)
def test_advisor_options(args: list[str], expected: tuple[str, str, str]) -> None:
    parsed: Any = base_parser("x").parse_args(args)
    config = AdvisorConfig(parsed.bootstrap, parsed.name, parsed.topic_prefix, parsed.group)
    assert (config.bootstrap, config.group, config.topic(TopicRole.ADVISOR_REQUESTS)) == expected
    assert config.topic(TopicRole.ADVISOR_RECOMMENDATIONS).endswith("placement.advisor-recommendations")
    assert config.topic(TopicRole.CLUSTER_STATUS).endswith("placement.cluster-status")


def test_advisor_name_is_required() -> None:
    with pytest.raises(SystemExit):
        base_parser("x").parse_args([])
