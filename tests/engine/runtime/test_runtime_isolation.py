"""A failure costs one subject and its records, never the batch: hostile records, engine bugs and oversize
dead letters, driven through the counting engine of the runtime tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson
import pytest
from test_runtime_processor import T0, Counted, CountingEngine, cluster, decided, event, placement, record

from engine.core import EngineContext, Step
from engine.inventory import InventoryChange
from engine.runtime import InputRecord, OutputRecord, Runtime, Stage
from engine.runtime.deadletter import MAX_DEAD_LETTER_KEY_BYTES, MAX_DEAD_LETTER_VALUE_BYTES, dead_letter
from topics.codec import MAX_NESTING, MAX_VALUE_BYTES
from topics.names import TopicRole


class FailingEngine(CountingEngine):
    """Raises where a placement's `fail` annotation says: in on_event, decide, on_timer or affected_by."""

    def on_event(self, key: str, state: Counted | None, event: Any, ctx: EngineContext) -> Step[Counted]:
        if _fails(event.data.metadata.annotations, "on_event"):
            raise RuntimeError(f"on_event bug for {key}")
        return super().on_event(key, state, event, ctx)

    def decide(self, key: str, state: Counted, ctx: EngineContext) -> Step[Counted]:
        if _fails(state.placement.metadata.annotations, "decide"):
            raise ZeroDivisionError(f"decide bug for {key}")
        return super().decide(key, state, ctx)

    def on_timer(self, key: str, state: Counted, ctx: EngineContext) -> Step[Counted]:
        if _fails(state.placement.metadata.annotations, "on_timer"):
            raise KeyError("timer bug")
        return super().on_timer(key, state, ctx)

    def affected_by(self, changes: Sequence[InventoryChange], ctx: EngineContext) -> Iterable[str]:
        if any(c.after is not None and "explode" in c.after.metadata.labels for c in changes):
            raise ValueError("index bug")
        return super().affected_by(changes, ctx)


def _fails(annotations: dict[str, str], where: str) -> bool:
    return annotations.get("fail") == where


def letters(out: list[OutputRecord]) -> list[OutputRecord]:
    return [o for o in out if o.topic is TopicRole.DEAD_LETTER]


def header(letter: OutputRecord, name: str) -> str:
    return dict(letter.headers)[name].decode()


@pytest.fixture
def failing() -> FailingEngine:
    return FailingEngine()


@pytest.mark.parametrize("where", ["on_event", "decide"])
def test_an_engine_failure_dead_letters_its_record_and_the_batch_goes_on(failing: FailingEngine, where: str) -> None:
    runtime = Runtime([failing])
    bad = placement("bad", "gpu", fail=where)
    out = runtime.process([cluster("c1", "gpu"), placement("a", "gpu"), bad, placement("z", "gpu")], T0)
    (letter,) = letters(out)
    assert header(letter, "__connect.errors.stage") == Stage.PROCESS
    assert header(letter, "__connect.errors.offset") == str(bad.offset)
    assert "bug for Placement/ns/bad" in header(letter, "__connect.errors.exception.message")
    assert letter.partition == bad.partition and letter.value == bad.value
    assert decided(out) == [("a", 1), ("z", 1)]
    assert "Placement/ns/bad" not in runtime.states
    assert not [o for o in out if o.key == b"Placement/ns/bad" and o.topic is not TopicRole.DEAD_LETTER]
    (incident,) = runtime.take_incidents()
    assert (incident.subject, incident.stage, incident.dead_letters) == ("Placement/ns/bad", Stage.PROCESS, 1)
    assert runtime.take_incidents() == []


def test_a_failed_update_keeps_the_decision_and_state_from_before(failing: FailingEngine) -> None:
    runtime = Runtime([failing])
    runtime.process([cluster("c1", "gpu"), placement("p", "gpu")], T0)
    kept = runtime.states["Placement/ns/p"]
    out = runtime.process([placement("p", "gpu", fail="decide")], T0)
    assert [o.topic for o in out] == [TopicRole.DEAD_LETTER]
    assert runtime.states["Placement/ns/p"] is kept
    # the next good update is decided against the kept state: no changelog entry was lost or invented
    out = runtime.process([cluster("c2", "gpu")], T0)
    assert decided(out) == [("p", 2)]
    assert [o.key for o in out if o.topic is TopicRole.CHANGELOG] == [b"Placement/ns/p"]


def test_a_failing_inventory_redecision_or_timer_is_noted_and_skipped(failing: FailingEngine) -> None:
    runtime = Runtime([failing])
    runtime.process([placement("t", "gpu", timerSeconds=5, fail="on_timer"), placement("g", "gpu")], T0)
    out = runtime.process([cluster("c1", "gpu", "explode")], T0)
    assert letters(out) == [] and decided(out) == []
    assert [i.subject for i in runtime.take_incidents()] == ["Placement/*"]
    assert runtime.fire_timers(T0.replace(minute=1)) == []
    assert [i.subject for i in runtime.take_incidents()] == ["Placement/ns/t"]
    assert runtime.next_timer() is None, "a failed timer must not fire again and again"
    assert decided(runtime.process([cluster("c2", "gpu")], T0)) == [("g", 2), ("t", 2)]


def _nested(depth: int) -> str:
    return '{"x":' * depth + "1" + "}" * depth


def _raw_placement(spec_json: str, type_: str = "placement.applied.v1") -> bytes:
    envelope = f'{{"specversion":"1.0","id":"1","source":"/t","type":"{type_}",'
    return (envelope + '"data":{"metadata":{"namespace":"ns","name":"p"},"spec":{"extra":' + spec_json + "}}}").encode()


@pytest.mark.parametrize(
    ("name", "raw", "stage", "message"),
    [
        ("nested 300 levels", _raw_placement(_nested(300)), Stage.DECODE, f"deeper than {MAX_NESTING}"),
        ("nested 5000 levels", _raw_placement(_nested(5000)), Stage.DECODE, "not JSON"),
        ("just too deep", _raw_placement(_nested(MAX_NESTING)), Stage.DECODE, "deeper"),
        ("oversize", _raw_placement('"' + "a" * MAX_VALUE_BYTES + '"'), Stage.DECODE, "bytes, more than"),
        ("version with a leading zero", _raw_placement("1", "placement.applied.v01"), Stage.VALIDATE, "leading"),
        ("version zero", _raw_placement("1", "placement.applied.v0"), Stage.VALIDATE, "v0 unknown"),
        ("lone surrogate", b'{"specversion":"1.0","id":"\\ud800"}', Stage.DECODE, "not JSON"),
        ("not utf-8", b"\xff\xfe" * 10, Stage.DECODE, "not JSON"),
    ],
)
def test_hostile_values_are_dead_lettered_with_a_reason(name: str, raw: bytes, stage: str, message: str) -> None:
    runtime = Runtime([CountingEngine()])
    bad = record(TopicRole.SUBMISSIONS, "Placement/ns/p", None, raw=raw)
    out = runtime.process([cluster("c1", "gpu"), bad, placement("good", "gpu")], T0)
    (letter,) = letters(out)
    assert header(letter, "__connect.errors.stage") == stage, name
    assert message in header(letter, "__connect.errors.exception.message"), name
    assert decided(out) == [("good", 1)]


def test_a_value_just_inside_the_limits_is_decided() -> None:
    runtime = Runtime([CountingEngine()])
    data = {"metadata": {"namespace": "ns", "name": "p", "annotations": {"label": "gpu", "pad": "a" * 1_000_000}}}
    out = runtime.process([record(TopicRole.SUBMISSIONS, "Placement/ns/p", event("placement.applied", data))], T0)
    assert decided(out) == [("p", 0)]


@pytest.mark.parametrize(
    ("key_bytes", "value_bytes"),
    [(10, 10), (10, MAX_DEAD_LETTER_VALUE_BYTES), (10, 1_048_576), (1_048_576, 10), (1_048_576, 1_048_576)],
)
def test_dead_letters_are_bounded_and_say_what_was_cut(key_bytes: int, value_bytes: int) -> None:
    bad = InputRecord(TopicRole.SUBMISSIONS, 2, 7, b"k" * key_bytes, b"v" * value_bytes, T0, "placement.submissions")
    letter = dead_letter(bad, Stage.DECODE, ValueError("x" * 100_000), bound_to_task=True)
    headers = dict(letter.headers)
    size = len(letter.key or b"") + len(letter.value or b"") + sum(len(k) + len(v) for k, v in letter.headers)
    assert size < 600 * 1024
    for part, original, limit, kept in (
        ("key", key_bytes, MAX_DEAD_LETTER_KEY_BYTES, letter.key),
        ("value", value_bytes, MAX_DEAD_LETTER_VALUE_BYTES, letter.value),
    ):
        cut = original > limit
        assert (f"placement.errors.{part}.truncated" in headers) is cut
        assert kept == (b"k" if part == "key" else b"v") * min(original, limit)
        if cut:
            assert headers[f"placement.errors.{part}.original.bytes"] == str(original).encode()
    assert len(headers["__connect.errors.exception.message"]) < 5000


def test_a_record_that_cannot_be_written_back_is_dead_lettered() -> None:
    """State that the changelog cannot hold (a float the JSON writer refuses as a key) fails the subject only."""

    class Unwritable(CountingEngine):
        def dump_state(self, state: Counted) -> dict[str, Any]:
            if state.placement.metadata.annotations.get("unwritable"):
                return {"bad": {1.5: "float keys cannot be written"}}
            return super().dump_state(state)

    runtime = Runtime([Unwritable()])
    bad = placement("bad", "gpu", unwritable="yes")
    out = runtime.process([bad, placement("good", "gpu")], T0)
    assert [header(x, "__connect.errors.offset") for x in letters(out)] == [str(bad.offset)]
    assert decided(out) == [("good", 0)]
    assert orjson.loads(next(o.value for o in out if o.topic is TopicRole.CHANGELOG) or b"{}")["kind"] == "Placement"
