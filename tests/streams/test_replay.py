"""Replay: deterministic output, the clock driven by event times and timestamp lines, bad lines reported."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.replay import Replayer
from streams.settings import Settings, TopicNames

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_LINES = (EXAMPLES / "events.jsonl").read_bytes().splitlines()


def replay(lines: list[bytes], settings: Settings | None = None) -> tuple[list[dict[str, Any]], bytes, list[str]]:
    out, warnings = io.BytesIO(), []
    replayer = Replayer(settings or Settings(), out, queue_config=EXAMPLES / "queues.yaml", warn=warnings.append)
    bad = replayer.run(lines)
    assert bad == len(warnings)
    raw = out.getvalue()
    return [orjson.loads(line) for line in raw.splitlines()], raw, warnings


def clock(instant: str) -> bytes:
    return orjson.dumps({"timestamp": instant})


def decisions(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r["value"] for r in records if isinstance(r["value"], dict) and r["value"].get("type") == kind]


def test_the_same_input_gives_the_same_bytes() -> None:
    lines = [*EXAMPLE_LINES, clock("2026-11-23T10:05:00Z")]
    first, second = replay(lines)[1], replay(lines)[1]
    assert first == second
    assert first.count(b"placement.decided.v1") >= 2


@pytest.mark.parametrize(
    ("clock_lines", "expected_times"),
    [
        ([], ["2026-11-23T10:00:00Z"]),
        (["2026-11-23T10:00:19Z"], ["2026-11-23T10:00:00Z"]),
        # the toleration of cluster3's taint (added 10:00:00, 20 s) fires at its own instant, not at the clock's
        (["2026-11-23T10:00:19Z", "2026-11-23T10:01:00Z"], ["2026-11-23T10:00:00Z", "2026-11-23T10:00:20Z"]),
        (["2026-11-23T10:01:00Z", "2026-11-23T10:00:30Z"], ["2026-11-23T10:00:00Z", "2026-11-23T10:00:20Z"]),
    ],
)
def test_timestamp_lines_fire_due_timers_at_their_instants(clock_lines: list[str], expected_times: list[str]) -> None:
    records, _, warnings = replay([*EXAMPLE_LINES, *map(clock, clock_lines)])
    assert not warnings
    placed = decisions(records, "placement.decided.v1")
    assert [d["time"] for d in placed] == expected_times
    if len(placed) == 2:
        selected = {
            d["clusterName"] for page in placed[1]["data"]["placementDecisions"] for d in page["status"]["decisions"]
        }
        assert "cluster3" not in selected


def test_role_names_are_accepted_and_the_configured_names_are_written() -> None:
    settings = Settings(topics=TopicNames.prefixed("team-a."))
    line = orjson.loads(EXAMPLE_LINES[8])  # app-1's submission
    line["topic"] = "submissions"
    records, _, warnings = replay([orjson.dumps(line)], settings)
    assert not warnings
    assert {r["topic"] for r in records} == {"team-a.placement.decisions", "team-a.placement.state-changelog"}
    assert decisions(records, "application.placed.v1")[0]["data"]["queue"] == "root.analytics"


def test_bad_lines_are_reported_by_number_and_the_rest_is_replayed() -> None:
    app = orjson.loads(EXAMPLE_LINES[8])
    lines = [
        b"{not json",
        orjson.dumps({"topic": "nowhere", "key": "k", "value": None}),
        orjson.dumps([1, 2]),
        orjson.dumps({**app, "value": "\u00ff garbage"}),
        orjson.dumps(app),
    ]
    records, _, warnings = replay(lines)
    assert [w.split(":")[0] for w in warnings] == ["line 1", "line 2", "line 3"]
    assert "unknown topic 'nowhere'" in warnings[1]
    letters = [r for r in records if r["topic"] == "placement.dead-letter"]
    assert len(letters) == 1 and letters[0]["headers"]["__connect.errors.stage"] == "DECODE"
    assert letters[0]["key"] == "Application/default"
    assert len(decisions(records, "application.placed.v1")) == 1
