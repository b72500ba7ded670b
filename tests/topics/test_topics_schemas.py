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


def replayed_values() -> list[dict[str, Any]]:
    out = io.BytesIO()
    lines = [*(EXAMPLES / "events.jsonl").read_bytes().splitlines(), b'{"timestamp": "2026-11-23T10:01:00Z"}']
    Replayer(Settings(), out, queue_config=EXAMPLES / "queues.yaml").run(lines)
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
