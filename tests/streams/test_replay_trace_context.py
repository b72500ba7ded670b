"""Replay carries each input's trace context to the records it causes, and changes nothing else (platform P16)."""

from __future__ import annotations

import io
from pathlib import Path

import orjson

from streams.replay import Replayer
from streams.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "streams" / "examples"
PARENT_A = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
PARENT_B = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def replayed(lines: list[bytes]) -> list[bytes]:
    out = io.BytesIO()
    replayer = Replayer(Settings(), out, queue_config=EXAMPLES / "queues.yaml")
    for line in lines:
        replayer.feed(line)
    return out.getvalue().splitlines()


def example_lines() -> list[bytes]:
    return (EXAMPLES / "events.jsonl").read_bytes().splitlines()


def with_context(lines: list[bytes]) -> list[bytes]:
    """Every subject line with a context: the placement's as an extension attribute, the applications' as headers."""
    traced = []
    for raw in lines:
        line = orjson.loads(raw)
        if line["key"].startswith("Placement/"):
            line["value"]["traceparent"] = PARENT_A
        elif line["key"].startswith("Application/"):
            line["headers"] = {"traceparent": PARENT_B, "tracestate": "vendor=1"}
        traced.append(orjson.dumps(line))
    return traced


def without_context(line: bytes) -> bytes:
    """An output line with the trace attributes and headers taken out, in the key order they had."""
    item = orjson.loads(line)
    headers = item.pop("headers", {})
    for name in ("traceparent", "tracestate"):
        if isinstance(item["value"], dict):
            item["value"].pop(name, None)
        headers.pop(name, None)
    if headers and item["topic"] == "placement.dead-letter":
        item["headers"] = headers
    return orjson.dumps(item)


def test_decisions_carry_the_context_of_their_input() -> None:
    out = [orjson.loads(line) for line in replayed(with_context(example_lines()))]
    decisions = [o for o in out if o["topic"] == "placement.decisions"]
    by_key = {o["key"]: o for o in decisions}
    placement = by_key["Placement/apps/web"]
    assert placement["value"]["traceparent"] == PARENT_A
    assert placement["headers"]["traceparent"] == PARENT_A
    applications = [o for o in decisions if o["key"].startswith("Application/")]
    assert applications
    for decision in applications:
        assert (decision["value"]["traceparent"], decision["value"]["tracestate"]) == (PARENT_B, "vendor=1")
        assert (decision["headers"]["traceparent"], decision["headers"]["tracestate"]) == (PARENT_B, "vendor=1")
    rule = by_key["PlacementRule/apps/db"]
    assert "traceparent" not in rule["value"] and "headers" not in rule


def test_the_context_adds_its_attributes_and_nothing_else() -> None:
    """With the trace attributes taken out, the traced replay is byte for byte the untraced one, event ids too."""
    plain = replayed(example_lines())
    traced = replayed(with_context(example_lines()))
    assert traced != plain
    assert [without_context(line) for line in traced] == plain
