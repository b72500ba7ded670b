"""The trace context a decision carries: the W3C `traceparent` (and `tracestate`) of the input that caused it, as a
Kafka header and as the CloudEvents distributed-tracing extension (platform P16)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
import pytest

from engine.runtime import InputRecord, OutputRecord, Runtime
from engine.runtime.records import Header
from engine.runtime.tracecontext import TraceContext, from_headers, valid_traceparent
from tests.engine.runtime.test_runtime_processor import T0, CountingEngine, cluster, placement, record
from topics.names import TopicRole

PARENT_A = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
PARENT_B = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
PARENT_C = "00-11111111111111111111111111111111-2222222222222222-01"


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        (PARENT_A, True),
        ("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later-fields", True),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", False),
        ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", False),
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", False),
        ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", False),
        ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", False),
        ("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", False),
        ("", False),
        ("not a traceparent", False),
    ],
)
def test_traceparent_format(text: str, valid: bool) -> None:
    assert valid_traceparent(text) is valid


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ((), None),
        ((("traceparent", PARENT_A.encode()),), TraceContext(PARENT_A)),
        ((("traceparent", PARENT_A.encode()), ("tracestate", b"a=1")), TraceContext(PARENT_A, "a=1")),
        ((("tracestate", b"a=1"),), None),
        ((("traceparent", b"\xff\xfe"),), None),
        ((("traceparent", PARENT_A.encode()), ("tracestate", b"x" * 513)), TraceContext(PARENT_A)),
    ],
)
def test_context_from_headers(headers: tuple[Header, ...], expected: TraceContext | None) -> None:
    assert from_headers(headers) == expected


def traced(source: InputRecord, parent: str | None = None, state: str | None = None, **envelope: str) -> InputRecord:
    """`source` with a traceparent header and/or extension attributes in its envelope."""
    headers: tuple[Header, ...] = ()
    if parent is not None:
        headers += (("traceparent", parent.encode()),)
    if state is not None:
        headers += (("tracestate", state.encode()),)
    value = source.value
    if envelope and value is not None:
        value = orjson.dumps({**orjson.loads(value), **envelope})
    return replace(source, headers=headers, value=value)


def decisions(out: list[OutputRecord]) -> dict[str, OutputRecord]:
    return {o.key.decode(): o for o in out if o.topic is TopicRole.DECISIONS and o.key is not None}


def carried(out: OutputRecord) -> tuple[Any, Any, Any, Any]:
    """(header traceparent, header tracestate, extension traceparent, extension tracestate)."""
    headers = dict(out.headers)
    envelope = orjson.loads(out.value or b"{}")
    parent, state = headers.get("traceparent"), headers.get("tracestate")
    return (
        None if parent is None else parent.decode(),
        None if state is None else state.decode(),
        envelope.get("traceparent"),
        envelope.get("tracestate"),
    )


@pytest.fixture
def runtime() -> Runtime:
    return Runtime([CountingEngine()])


@pytest.mark.parametrize(
    ("name", "header", "state", "extension", "expected"),
    [
        ("header", PARENT_A, None, {}, (PARENT_A, None, PARENT_A, None)),
        ("header with state", PARENT_A, "v=1", {}, (PARENT_A, "v=1", PARENT_A, "v=1")),
        ("extension only", None, None, {"traceparent": PARENT_B}, (PARENT_B, None, PARENT_B, None)),
        ("extension with state", None, None, {"traceparent": PARENT_B, "tracestate": "s=2"}, (PARENT_B, "s=2") * 2),
        ("header wins", PARENT_A, None, {"traceparent": PARENT_B}, (PARENT_A, None, PARENT_A, None)),
        ("malformed header, valid extension", "00-zz", None, {"traceparent": PARENT_B}, (PARENT_B, None) * 2),
        ("malformed extension", None, None, {"traceparent": "00-bad"}, (None, None, None, None)),
    ],
)
def test_a_decision_carries_its_causes_context(
    runtime: Runtime,
    name: str,
    header: str | None,
    state: str | None,
    extension: dict[str, str],
    expected: tuple[Any, ...],
) -> None:
    runtime.process([cluster("c1", "gpu")], T0)
    out = runtime.process([traced(placement("p1", "gpu"), header, state, **extension)], T0)
    assert carried(decisions(out)["Placement/ns/p1"]) == expected
    assert not [o for o in out if o.topic is TopicRole.DEAD_LETTER], "a malformed context never dead-letters"


def test_without_a_context_the_output_is_as_before(runtime: Runtime) -> None:
    """A malformed context is ignored: the records are byte for byte those of a record without one."""
    runtime.process([cluster("c1", "gpu")], T0)
    plain = Runtime([CountingEngine()])
    plain.process([cluster("c1", "gpu")], T0)
    source = placement("p1", "gpu")
    bad = traced(source, "00-not-valid", None, traceparent="bad")
    assert runtime.process([bad], T0) == plain.process([source], T0)


def test_the_last_record_with_a_context_names_the_cause(runtime: Runtime) -> None:
    first, second = traced(placement("p1", "gpu"), PARENT_A), traced(placement("p1", "gpu"), PARENT_B)
    untraced = placement("p1", "gpu")
    out = runtime.process([cluster("c1", "gpu"), first, second, untraced], T0)
    assert carried(decisions(out)["Placement/ns/p1"])[0] == PARENT_B


def test_an_inventory_change_names_its_redecisions_cause_and_a_subject_record_comes_first(runtime: Runtime) -> None:
    runtime.process([placement("p1", "gpu"), placement("p2", "gpu")], T0)
    change = traced(cluster("c1", "gpu"), PARENT_C)
    out = runtime.process([change, traced(placement("p2", "gpu"), PARENT_A)], T0)
    found = decisions(out)
    assert carried(found["Placement/ns/p1"])[0] == PARENT_C
    assert carried(found["Placement/ns/p2"])[0] == PARENT_A


def test_a_context_lasts_one_batch(runtime: Runtime) -> None:
    runtime.process([traced(placement("p1", "gpu"), PARENT_A)], T0)
    out = runtime.process([cluster("c1", "gpu")], T0)
    assert carried(decisions(out)["Placement/ns/p1"]) == (None, None, None, None)


def test_a_dead_letter_carries_its_records_context(runtime: Runtime) -> None:
    bad = record(TopicRole.SUBMISSIONS, "Placement/ns/x", None, raw=b"not json")
    out = runtime.process([traced(bad, PARENT_A, "k=v")], T0)
    [letter] = [o for o in out if o.topic is TopicRole.DEAD_LETTER]
    assert dict(letter.headers)["traceparent"] == PARENT_A.encode()
    assert dict(letter.headers)["tracestate"] == b"k=v"
