"""The replay command for people: what it prints by default, how dead letters are reported, its exit status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_LINES = (EXAMPLES / "events.jsonl").read_bytes().splitlines()
WEB = orjson.loads(EXAMPLE_LINES[6])  # the Placement apps/web


def line(**changes: Any) -> bytes:
    """The apps/web line with top-level fields replaced (None removes one) and data fields set."""
    item = orjson.loads(orjson.dumps(WEB))
    for name, value in changes.items():
        if name == "spec":
            item["value"]["data"]["spec"].update(value)
        elif name == "type":
            item["value"]["type"] = value
        elif value is None:
            item.pop(name)
        else:
            item[name] = value
    return orjson.dumps(item)


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, lines: list[bytes], *args: str) -> tuple[int, Any, str]:
    source = tmp_path / "input.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    code = main(["replay", str(source), "--queue-config", str(EXAMPLES / "queues.yaml"), *args])
    captured = capsys.readouterr()
    return code, [orjson.loads(x) for x in captured.out.splitlines()], captured.err


@pytest.mark.parametrize(
    ("args", "topics"),
    [
        ((), {"placement.decisions", "placement.advisor-requests"}),
        (("--all",), {"placement.decisions", "placement.advisor-requests", "placement.state-changelog"}),
    ],
)
def test_by_default_only_decisions_requests_and_dead_letters_are_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: tuple[str, ...], topics: set[str]
) -> None:
    code, records, _ = run(capsys, tmp_path, [*EXAMPLE_LINES, line(type="placement.unknown.v1")], *args)
    assert code == 1
    assert {r["topic"] for r in records} == topics | {"placement.dead-letter"}


@pytest.mark.parametrize(
    ("extra", "args", "code", "reported"),
    [
        ([], (), 0, []),
        ([line(type="placement.unknown.v1")], (), 1, ["line 14: dead-lettered at VALIDATE: unknown event type"]),
        ([line(type="placement.unknown.v1")], ("--keep-going",), 0, ["line 14: dead-lettered at VALIDATE"]),
        ([b"{not json"], (), 1, ["line 14: not JSON"]),
        ([b"{not json"], ("--keep-going",), 0, ["line 14: not JSON"]),
        # without a key the runtime can only say the key is missing; the report adds the value's own problem
        (
            [line(key=None, spec={"numberOfClusters": "many"})],
            (),
            1,
            ["line 14: dead-lettered at VALIDATE", 'no "key", and none can be derived', "spec.numberOfClusters"],
        ),
        ([line(key=None, value=None)], (), 1, ["line 14: dead-lettered", "a null value (a tombstone) needs the"]),
        ([line(key=None)], (), 0, []),  # a valid value without a key: the key is derived
    ],
)
def test_dead_letters_are_reported_by_line_and_fail_the_run_unless_told_to_keep_going(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    extra: list[bytes],
    args: tuple[str, ...],
    code: int,
    reported: list[str],
) -> None:
    status, records, err = run(capsys, tmp_path, [*EXAMPLE_LINES, *extra], *args)
    assert status == code
    for text in reported:
        assert text in err
    if not reported:
        assert err == ""
    letters = [r for r in records if r["topic"] == "placement.dead-letter"]
    assert len(letters) == sum("dead-lettered" in text for text in reported[:1])
