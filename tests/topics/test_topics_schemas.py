"""Record schemas: the CloudEvents envelope with one type's data, so other languages can validate whole records."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from streams.replay import Replayer
from streams.settings import Settings
from topics.events import EVENT_KINDS
from topics.schemas import all_event_schemas

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCHEMAS = all_event_schemas()
EXAMPLE_VALUES = [orjson.loads(line)["value"] for line in (EXAMPLES / "events.jsonl").read_bytes().splitlines()]


def replayed_values(settings: Settings | None = None) -> list[dict[str, Any]]:
    out = io.BytesIO()
    lines = [*(EXAMPLES / "events.jsonl").read_bytes().splitlines(), b'{"timestamp": "2026-11-23T10:01:00Z"}']
    Replayer(settings or Settings(), out, queue_config=EXAMPLES / "queues.yaml").run(lines)
    records = [orjson.loads(line) for line in out.getvalue().splitlines()]
    return [r["value"] for r in records if r["topic"] != "placement.state-changelog" and r["value"] is not None]


def errors(value: dict[str, Any], wire_type: str | None = None) -> list[str]:
    validator = Draft202012Validator(SCHEMAS[wire_type or value["type"]])
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)]


def test_there_is_one_valid_schema_per_type_with_the_type_fixed() -> None:
    assert set(SCHEMAS) == {kind.wire_type() for kind in EVENT_KINDS.values()}
    for wire_type, schema in SCHEMAS.items():
        Draft202012Validator.check_schema(schema)
        assert schema["properties"]["type"] == {
            "const": wire_type,
            "description": schema["properties"]["type"]["description"],
        }
        assert {"specversion", "id", "source", "type", "data"} <= set(schema["required"])


@pytest.mark.parametrize("value", EXAMPLE_VALUES + replayed_values(), ids=lambda v: v["type"])
def test_what_producers_and_the_processor_write_validates(value: dict[str, Any]) -> None:
    assert errors(value) == []


PLACEMENT = next(v for v in EXAMPLE_VALUES if v["type"] == "placement.applied.v1")


def changed(**fields: Any) -> dict[str, Any]:
    value = orjson.loads(orjson.dumps(PLACEMENT))
    for name, new in fields.items():
        if new is None:
            value.pop(name)
        else:
            value[name] = new
    return value


@pytest.mark.parametrize(
    ("value", "wire_type", "problem"),
    [
        (changed(id=None), None, "'id' is a required property"),
        (changed(specversion="0.3"), None, "'1.0' was expected"),
        (changed(type="placementrule.applied.v1"), "placement.applied.v1", "'placement.applied.v1' was expected"),
        (changed(data={"spec": {}}), None, "'metadata' is a required property"),
        (
            changed(data={"metadata": {"name": "web"}, "spec": {"numberOfClusters": "two"}}),
            None,
            "spec/numberOfClusters",
        ),
        (changed(data=None), None, "'data' is a required property"),
    ],
)
def test_a_broken_record_fails_its_schema(value: dict[str, Any], wire_type: str | None, problem: str) -> None:
    found = errors(value, wire_type)
    assert any(problem in text for text in found), found


EXPLAINED = [
    v for v in replayed_values(Settings(explain=["Placement/apps/web"])) if v["type"] == "placement.decided.v1"
]


def test_explained_decisions_carry_every_passing_score_and_validate() -> None:
    """K4: passingScores is explain data, the selected clusters' scores are among them (K3)."""
    assert EXPLAINED
    for value in EXPLAINED:
        data = value["data"]
        assert set(data["scores"]) <= set(data["passingScores"]), data
        assert all(data["passingScores"][name] == total for name, total in data["scores"].items())
        assert errors(value) == []


def test_the_schema_says_what_each_score_field_holds() -> None:
    fields = SCHEMAS["placement.decided.v1"]["properties"]["data"]["properties"]
    assert "selected cluster" in fields["scores"]["description"]
    assert "Explain only" in fields["passingScores"]["description"]
    assert {"type": "object", "additionalProperties": {"type": "integer"}} in fields["passingScores"]["anyOf"]


def test_a_decision_written_before_scores_were_of_the_selected_clusters_only_validates() -> None:
    """Events on the compacted decisions topic from earlier versions hold every passing cluster's score."""
    value = next(v for v in replayed_values() if v["type"] == "placement.decided.v1")
    old = {**value, "data": {**value["data"], "scores": {**value["data"]["scores"], "not-selected": -100}}}
    assert errors(old) == []
