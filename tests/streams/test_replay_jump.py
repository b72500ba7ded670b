"""Replay across a clock jump: the periodic resync of a placement runs at most once per jump, one-shot timers
(a toleration's expiry, an advisor deadline) still run at their own instants in time order, output is written as the
timers run, and a jump to the year 9999 ends."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from engine.cluster import ClusterPlacementEngine
from engine.registry import build_engines
from streams.replay import Replayer
from streams.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EXAMPLE_LINES = (EXAMPLES / "events.jsonl").read_bytes().splitlines()
SETTLED = "2026-11-23T10:05:00Z"
"""After the toleration of cluster3's taint ran out (10:00:20); the next resync is due at 10:10:20."""
RESYNC = datetime(2026, 11, 23, 10, 10, 20, tzinfo=UTC)
PERIOD = timedelta(seconds=600)


def clock(instant: str) -> bytes:
    return orjson.dumps({"timestamp": instant})


class Out(io.BytesIO):
    """The replay's output, noting at each record what the runtime has done so far."""

    def __init__(self) -> None:
        super().__init__()
        self.replayer: Replayer | None = None
        self.rule_waiting: list[bool] = []

    def write(self, data: Any) -> int:
        assert self.replayer is not None
        state = self.replayer.runtime.states.get("PlacementRule/apps/db")
        self.rule_waiting.append(state is not None and state.deadline is not None)
        return super().write(data)


def _replayer() -> tuple[Replayer, Out, ClusterPlacementEngine]:
    engines = build_engines()
    cluster = next(e for e in engines if isinstance(e, ClusterPlacementEngine))
    out = Out()
    replayer = Replayer(Settings(), out, queue_config=EXAMPLES / "queues.yaml", engines=engines, warn=pytest.fail)
    out.replayer = replayer
    return replayer, out, cluster


def _records(raw: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in raw.splitlines()]


@pytest.mark.parametrize(
    "jump_to", ["2026-11-23T10:20:21Z", "2026-11-23T13:00:00Z", "2027-11-23T10:00:00Z", "2126-01-01T00:00:00Z"]
)
def test_a_jump_runs_the_resync_once_and_keeps_its_schedule(jump_to: str) -> None:
    replayer, out, cluster = _replayer()
    assert replayer.run([*EXAMPLE_LINES, clock(SETTLED)]) == 0
    decided, written = cluster.decide_calls, len(out.getvalue())
    replayer.feed(clock(jump_to))
    assert cluster.decide_calls - decided == 1, "one resync for the whole jump"
    after = _records(out.getvalue()[written:])
    assert [r["key"] for r in after] == ["Placement/apps/web/decision"], "only the timer moved"
    due = datetime.fromisoformat(after[0]["value"]["state"]["due"])
    now = datetime.fromisoformat(jump_to)
    assert now < due <= now + PERIOD
    assert (due - RESYNC) % PERIOD == timedelta(0), "the next resync stays on the placement's schedule"


def test_one_shot_timers_run_at_their_instants_in_order_and_are_written_as_they_run() -> None:
    replayer, out, _ = _replayer()
    assert replayer.run(EXAMPLE_LINES) == 0
    written = len(out.getvalue())
    waiting_before = len(out.rule_waiting)
    replayer.feed(clock("2027-11-23T10:00:00Z"))
    decisions = [
        (r["key"], r["value"]["time"])
        for r in _records(out.getvalue()[written:])
        if r["topic"] == "placement.decisions"
    ]
    # the toleration of cluster3's taint (20 s) expires before the rule's advisor deadline (30 s after 10:00:07)
    assert decisions == [
        ("Placement/apps/web", "2026-11-23T10:00:20Z"),
        ("PlacementRule/apps/db", "2026-11-23T10:00:37Z"),
    ]
    waiting = out.rule_waiting[waiting_before:]
    assert waiting[0] is True, "the placement's records are out before the rule's deadline runs"
    assert waiting[-1] is False


def test_a_jump_replays_the_same_bytes() -> None:
    lines = [*EXAMPLE_LINES, clock(SETTLED), clock("2027-11-23T10:00:00Z"), clock("2031-02-03T04:05:06Z")]
    runs = []
    for _ in range(2):
        replayer, out, _ = _replayer()
        assert replayer.run(lines) == 0
        runs.append(out.getvalue())
    assert runs[0] == runs[1]


@pytest.mark.parametrize("jump_to", ["2027-11-23T10:00:00Z", "9999-12-31T23:59:59Z"])
def test_the_replay_command_ends_after_a_jump_of_years(tmp_path: Path, jump_to: str) -> None:
    lines = [*EXAMPLE_LINES, clock(SETTLED)]
    replayer, out, _ = _replayer()
    assert replayer.run(lines) == 0
    before = _records(out.getvalue())
    replay_input = tmp_path / "input.jsonl"
    replay_input.write_bytes(b"\n".join([*lines, clock(jump_to)]) + b"\n")
    command = [sys.executable, "-m", "streams", "replay", "--all", str(replay_input)]
    command += ["--queue-config", str(EXAMPLES / "queues.yaml")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    records = _records(done.stdout)
    assert records[: len(before)] == before
    assert [r["key"] for r in records[len(before) :]] == ["Placement/apps/web/decision"], "one resync for the jump"
