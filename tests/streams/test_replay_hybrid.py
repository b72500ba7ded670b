"""Replay driven interactively for hybrid PlacementRules: a driver answers each `candidates.proposed` line as the
advisors would, on the advisor-recommendations topic, and reads the rounds and decisions back.

The rule is the documentation's worked example without an earlier decision (shared/seeds): grc (predicate) vetoes
cluster2, rhacm (priority, 60) recommends cluster3, cost (priority, 50) answers cluster2, cluster1, cluster3 in
rounds 1, 2, 3. The answers are computed by the shipped advisor logic (advisors.veto, advisors.fixed_scores) from
the proposals the replay prints.
"""

from __future__ import annotations

import io
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from advisors.common import Answer, handle_request, rule_key
from advisors.fixed_scores import answer as fixed_answer
from advisors.fixed_scores import parse_entry
from advisors.veto import accept, parse_target
from streams.replay import Replayer
from streams.settings import Settings
from topics.codec import encode_event

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RULE_KEY = "PlacementRule/apps/doc"
REQUESTS, RECOMMENDATIONS = "placement.advisor-requests", "placement.advisor-recommendations"
DECISIONS, CHANGELOG = "placement.decisions", "placement.state-changelog"
CLUSTERS = ["cluster1", "cluster2", "cluster3"]

_COST = [parse_entry(e) for e in ("1:cluster2", "2:cluster1", "3:cluster3")]
_RHACM = [parse_entry("cluster3")]
SEED_ANSWERS: dict[str, Answer] = {
    "grc": lambda request: accept(request.candidates, [parse_target("cluster2")]),
    "rhacm": lambda request: fixed_answer(request.candidates, request.round, _RHACM),
    "cost": lambda request: fixed_answer(request.candidates, request.round, _COST),
}


def stamp(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def cloud_event(kind: str, event_id: str, at: datetime, data: Any) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": event_id,
        "source": "/tests",
        "type": f"{kind}.v1",
        "time": stamp(at),
        "datacontenttype": "application/json",
        "data": data,
    }


def setup_lines() -> list[dict[str, Any]]:
    """Three clusters at T0, then the rule one second later (round 1 opens at T0 + 1 s)."""
    lines = [
        {
            "topic": "placement.cluster-status",
            "key": f"ManagedCluster/{name}",
            "value": cloud_event("managedcluster.applied", f"mc-{name}", T0, {"metadata": {"name": name}}),
        }
        for name in CLUSTERS
    ]
    rule = {
        "apiVersion": "core.hybridapp.io/v1alpha1",
        "kind": "PlacementRule",
        "metadata": {"name": "doc", "namespace": "apps", "generation": 1},
        "spec": {
            "replicas": 1,
            "advisors": [
                {"name": "grc", "type": "predicate", "rules": {"policies": [{"name": None}]}},
                {"name": "rhacm", "type": "priority", "weight": 60, "rules": {"resourceHint": {"type": "cpu"}}},
                {"name": "cost", "type": "priority", "weight": 50},
            ],
        },
    }
    value = cloud_event("placementrule.applied", "rule-doc", T0 + timedelta(seconds=1), rule)
    lines.append({"topic": "placement.submissions", "key": RULE_KEY, "value": value})
    return lines


def answers_to(proposal: dict[str, Any], advisors: dict[str, Answer]) -> list[dict[str, Any]]:
    """Input lines answering a `candidates.proposed` output line, one per advisor that it names, in its order."""
    raw = orjson.dumps(proposal["value"])
    lines = []
    for name in proposal["value"]["data"]["advisors"]:
        if name not in advisors:
            continue
        posted = handle_request(raw, name, advisors[name])
        assert posted is not None
        key = rule_key(posted.rule)
        value = encode_event(
            kind_name="recommendation.posted",
            data=posted,
            subject=key,
            event_id=f"{name}-{posted.round}",
            time=datetime.fromisoformat(proposal["value"]["time"].replace("Z", "+00:00")),
            source=f"/advisors/{name}",
        )
        lines.append({"topic": RECOMMENDATIONS, "key": key, "value": orjson.loads(value)})
    return lines


def is_proposal(record: dict[str, Any]) -> bool:
    return bool(record["topic"] == REQUESTS and record["value"]["type"] == "candidates.proposed.v1")


def decided(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        r["value"]
        for r in records
        if r["topic"] == DECISIONS and r["key"] == RULE_KEY and r["value"]["type"] == "placementrule.decided.v1"
    ]


def names(refs: Sequence[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in refs]


class ReplaySession:
    """`python -m streams replay -` with pipes: lines go in one at a time, output lines are read as they come."""

    def __init__(self, workdir: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streams", "replay", "-", "--all", *args],  # --all: these tests read the changelog
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
        )
        self.sent: list[bytes] = []
        self.errors = ""
        self.output = bytearray()
        self.records: list[dict[str, Any]] = []
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, *items: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        for item in items:
            line = orjson.dumps(item) + b"\n"
            self.sent.append(line)
            self.proc.stdin.write(line)
            self.proc.stdin.flush()

    def until(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 30.0) -> dict[str, Any]:
        """Read output lines until one satisfies `predicate`; fails on EOF or after `timeout` seconds."""
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no matching output line in {timeout} s; got {self.records}") from None
            if not line:
                raise AssertionError(f"replay ended early: {self.stderr()}")
            self.output += line
            record: dict[str, Any] = orjson.loads(line)
            self.records.append(record)
            if predicate(record):
                return record

    def close(self) -> int:
        """End the input, read the remaining output, and return the exit status."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        while line := self._lines.get(timeout=30):
            self.output += line
            self.records.append(orjson.loads(line))
        code = self.proc.wait(30)
        self.shutdown()
        return code

    def shutdown(self) -> None:
        """Stop the process if it still runs and close every pipe (idempotent)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)
        assert self.proc.stderr is not None
        if not self.proc.stderr.closed:
            self.errors = self.proc.stderr.read().decode(errors="replace")
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()

    def stderr(self) -> str:
        return self.errors if self.proc.poll() is not None else "(still running)"


Sessions = Callable[..., ReplaySession]


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[Sessions]:
    """Starts replay sessions in `tmp_path`; every one is stopped and its pipes closed at the end."""
    started: list[ReplaySession] = []

    def start(*args: str) -> ReplaySession:
        session = ReplaySession(tmp_path, *args)
        started.append(session)
        return session

    yield start
    for session in started:
        session.shutdown()


def drive(sessions: Sessions, advisors: dict[str, Answer] = SEED_ANSWERS) -> ReplaySession:
    """Answer every round until a non-empty decision is published, then end the input."""
    session = sessions()
    session.send(*setup_lines())
    while True:
        record = session.until(lambda r: is_proposal(r) or bool(decided([r]) and decided([r])[0]["data"]["decisions"]))
        if not is_proposal(record):
            break
        session.send(*answers_to(record, advisors))
    code = session.close()
    assert code == 0, session.stderr()
    return session


def test_interactive_replay_runs_the_worked_example_round_by_round(sessions: Sessions) -> None:
    session = drive(sessions)
    records = session.records
    assert {r["topic"] for r in records} == {REQUESTS, DECISIONS, CHANGELOG}
    assert all(r["key"] == RULE_KEY for r in records)

    proposals = [r["value"]["data"] for r in records if is_proposal(r)]
    assert [p["round"] for p in proposals] == [1, 2, 3]
    assert [names(p["candidates"]) for p in proposals] == [CLUSTERS, ["cluster1", "cluster3"], ["cluster3"]]
    assert all(p["advisors"] == ["grc", "rhacm", "cost"] for p in proposals)
    # the proposals come at the instants of the answers that closed the previous round: the replay clock
    assert [r["value"]["time"] for r in records if is_proposal(r)] == [stamp(T0 + timedelta(seconds=1))] * 3

    events = decided(records)
    assert [names(e["data"]["decisions"]) for e in events] == [[], ["cluster3"]]
    assert events[0]["data"]["round"] == 1, "the first evaluation is published at once, before any answer"
    final = events[-1]["data"]
    assert final["round"] == 3
    assert names(final["eliminators"]) == ["cluster2", "cluster1"]
    assert {name: names(entries) for name, entries in final["recommendations"].items()} == {
        "grc": ["cluster3"],
        "rhacm": ["cluster3"],
        "cost": ["cluster3"],
    }
    assert final["reductions"] == [{"round": 1, "removed": ["cluster2"]}, {"round": 2, "removed": ["cluster1"]}]
    rating = final["lastReduction"]
    assert (rating["round"], rating["reason"], names(rating["removed"])) == (2, "rating", ["cluster1"])
    assert {r["candidate"]["name"]: r["hundredths"] for r in rating["ratings"]} == {"cluster1": 5000, "cluster3": 6000}
    second_status = proposals[1]["status"]
    assert second_status["reductions"] == [{"round": 1, "removed": ["cluster2"]}]
    assert (second_status["lastReduction"]["reason"], second_status["lastReduction"]["ratings"]) == ("predicate", [])
    assert records[-1]["topic"] == CHANGELOG, "the decision's batch ends with its changelog entry"
    assert sum(1 for line in session.sent if b"recommendation.posted" in line) == 9


def test_interactive_replay_is_byte_identical_and_equal_to_a_file_replay(sessions: Sessions, tmp_path: Path) -> None:
    first, second = drive(sessions), drive(sessions)
    assert first.sent == second.sent
    assert bytes(first.output) == bytes(second.output)
    assert b"placementrule.decided.v1" in first.output

    recorded = tmp_path / "session.jsonl"
    recorded.write_bytes(b"".join(first.sent))
    batch = subprocess.run(
        [sys.executable, "-m", "streams", "replay", "--all", str(recorded)],
        capture_output=True,
        check=True,
        cwd=tmp_path,
    )
    assert batch.stdout == bytes(first.output), "the same lines from a file give the same bytes"


def test_late_round_post_is_dropped_and_a_repost_replaces_the_answer(sessions: Sessions) -> None:
    session = sessions()
    session.send(*setup_lines())
    first = session.until(is_proposal)
    grc, rhacm, cost = answers_to(first, SEED_ANSWERS)
    session.send(grc, rhacm, cost)
    second = session.until(is_proposal)
    assert second["value"]["data"]["round"] == 2
    # cost first answers cluster3, then changes its mind to cluster1 (E3); then its round-1 post arrives late (E1)
    grc2, rhacm2, cost2 = answers_to(second, SEED_ANSWERS)
    wrong = orjson.loads(orjson.dumps(cost2))
    wrong["value"]["id"] = "cost-2-first"
    wrong["value"]["data"]["recommendations"] = [{"kind": "ManagedCluster", "name": "cluster3"}]
    session.send(grc2, wrong, cost2, cost, rhacm2)  # rhacm's post completes the round
    third = session.until(is_proposal)
    assert session.close() == 0
    assert third["value"]["data"]["round"] == 3
    reduction = third["value"]["data"]["status"]["lastReduction"]
    # cost's first answer kept: cluster1 = 0, cluster3 = 110; its stale one taken: cluster1 = 0, cluster3 = 60
    assert {r["candidate"]["name"]: r["hundredths"] for r in reduction["ratings"]} == {
        "cluster1": 5000,
        "cluster3": 6000,
    }


def _line(item: dict[str, Any]) -> bytes:
    return orjson.dumps(item)


@pytest.mark.parametrize(
    ("advisors", "decision", "eliminated", "answered"),
    [
        # nobody answers: every rating is 0, candidates fall in key order and the last one stays (H7)
        ({}, ["cluster3"], ["cluster1", "cluster2"], set()),
        # grc is silent and abstains: no veto; rhacm (60) on cluster1 beats cost (50) on cluster2
        (
            {
                "rhacm": lambda request: fixed_answer(request.candidates, request.round, [parse_entry("cluster1")]),
                "cost": lambda request: fixed_answer(request.candidates, request.round, [parse_entry("cluster2")]),
            },
            ["cluster1"],
            ["cluster3", "cluster2"],
            {"rhacm", "cost"},
        ),
    ],
    ids=["no-answers", "predicate-silent"],
)
def test_timestamp_line_past_the_deadline_finishes_the_round(
    advisors: dict[str, Answer], decision: list[str], eliminated: list[str], answered: set[str]
) -> None:
    timeout = 10.0
    out = io.BytesIO()
    replayer = Replayer(Settings(advisor_timeout_seconds=timeout), out)
    opened = T0 + timedelta(seconds=1)
    deadline = opened + timedelta(seconds=timeout)

    def taken() -> list[dict[str, Any]]:
        records = [orjson.loads(line) for line in out.getvalue().splitlines()]
        out.seek(0)
        out.truncate()
        return records

    def lines() -> Iterator[bytes]:
        for item in setup_lines():
            yield _line(item)
        proposals = [r for r in taken() if is_proposal(r)]
        assert [p["value"]["data"]["round"] for p in proposals] == [1]
        for item in answers_to(proposals[0], advisors):
            yield _line(item)
        yield _line({"timestamp": stamp(deadline - timedelta(milliseconds=1))})
        assert not decided(taken()), "nothing happens before the deadline"
        yield _line({"timestamp": stamp(deadline + timedelta(seconds=5))})

    assert replayer.run(lines()) == 0
    records = taken()
    assert not any(is_proposal(r) for r in records), "a forced finalisation publishes no new round (I2)"
    events = decided(records)
    assert len(events) == 1
    assert events[0]["time"] == stamp(deadline), "the timer fires at its own instant"
    data = events[0]["data"]
    assert names(data["decisions"]) == decision
    assert data["round"] == 1
    assert names(data["eliminators"]) == eliminated
    assert set(data["recommendations"]) == answered
    assert [(r["round"], r["removed"]) for r in data["reductions"]] == [(1, [name]) for name in eliminated]
    last = data["lastReduction"]
    assert last["forced"] and last["round"] == 1 and names(last["removed"]) == eliminated[-1:]
    assert replayer.clock == deadline + timedelta(seconds=5)


def test_cli_advisor_timeout_sets_the_round_deadline(sessions: Sessions) -> None:
    session = sessions("--advisor-timeout", "4")
    session.send(*setup_lines())
    session.until(is_proposal)
    session.send({"timestamp": stamp(T0 + timedelta(seconds=60))})
    event = session.until(lambda r: bool(decided([r]) and decided([r])[0]["data"]["decisions"]))
    assert session.close() == 0
    assert event["value"]["time"] == stamp(T0 + timedelta(seconds=5)), "round 1 opened at T0 + 1 s, 4 s timeout"
    assert names(event["value"]["data"]["decisions"]) == ["cluster3"]


def fleet_lines(clusters: int) -> list[bytes]:
    """`clusters` clusters, then a rule with `replicas: 1` and no advisors selecting them all."""
    lines = []
    for i in range(clusters):
        data = {"metadata": {"name": f"m{i:04d}", "labels": {"fleet": "yes"}}}
        value = cloud_event("managedcluster.applied", f"mc-{i}", T0, data)
        lines.append(_line({"topic": "placement.cluster-status", "key": f"ManagedCluster/m{i:04d}", "value": value}))
    spec = {"replicas": 1, "targetLabels": {"matchLabels": {"fleet": "yes"}}}
    rule = {"metadata": {"name": "fleet", "namespace": "apps", "generation": 1}, "spec": spec}
    value = cloud_event("placementrule.applied", "rule-fleet", T0 + timedelta(seconds=1), rule)
    return [*lines, _line({"topic": "placement.submissions", "key": "PlacementRule/apps/fleet", "value": value})]


def test_rule_without_advisors_is_decided_at_once_asking_nobody() -> None:
    outputs = []
    for _ in range(2):
        out = io.BytesIO()
        assert Replayer(Settings(), out).run(fleet_lines(300)) == 0
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1], "replay is byte-for-byte stable"
    records = [orjson.loads(line) for line in outputs[0].splitlines()]
    assert [(r["topic"], r["value"]["type"]) for r in records if r["topic"] != CHANGELOG] == [
        (DECISIONS, "placementrule.decided.v1")
    ], "no candidates.proposed: nobody is asked (H6)"
    data = next(r["value"]["data"] for r in records if r["topic"] == DECISIONS)
    assert names(data["decisions"]) == ["m0299"]
    assert data["round"] == 300
    assert data["reductions"] == [{"round": i + 1, "removed": [f"m{i:04d}"]} for i in range(299)]
    assert data["lastReduction"]["round"] == 299
    assert [r["candidate"]["name"] for r in data["lastReduction"]["ratings"]] == ["m0298", "m0299"]
