"""The runtime's own mechanics, driven through a small counting engine defined here.

The engine counts the clusters that carry the label its placement names (in an annotation); that is enough to observe
coalescing, inventory-driven re-decisions, changelog writes, restore, timers and dead letters.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import orjson
import pytest

from engine.cluster import ClusterPlacementEngine
from engine.core import Emit, EngineContext, Step
from engine.errors import RoutingError
from engine.inventory import InventoryChange
from engine.runtime import Handover, InputRecord, OutputRecord, Runtime, Stage
from engine.runtime.processor import DECIDE_CHUNK
from engine.runtime.routing import changelog_key, split_changelog_key
from topics.codec import DecodedEvent
from topics.names import TopicRole
from topics.placement import Placement, PlacementDecided

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Counted:
    placement: Placement
    published: int | None = None
    due: datetime | None = None
    fired: int = 0


class CountingEngine:
    KIND: ClassVar[str] = "Placement"
    EVENTS: ClassVar[frozenset[str]] = frozenset({"placement.applied", "placement.deleted"})
    KEY_SHAPE: ClassVar[str] = ClusterPlacementEngine.KEY_SHAPE
    subject_of = staticmethod(ClusterPlacementEngine.subject_of)

    def __init__(self) -> None:
        self.decided: list[str] = []
        self.tracked: dict[str, Counted] = {}

    def on_event(self, key: str, state: Counted | None, event: DecodedEvent, ctx: EngineContext) -> Step[Counted]:
        if event.kind.name == "placement.deleted":
            return Step(None, (Emit(None, None),))
        assert isinstance(event.data, Placement)
        due = event.data.metadata.annotations.get("timerSeconds")
        base = state or Counted(event.data)
        return Step(
            replace(base, placement=event.data, due=None if due is None else ctx.now + timedelta(seconds=int(due))),
            redecide=True,
        )

    def on_deleted(self, key: str, state: Counted | None, ctx: EngineContext) -> Step[Counted]:
        return Step(None)

    def decide(self, key: str, state: Counted, ctx: EngineContext) -> Step[Counted]:
        self.decided.append(key)
        label = state.placement.metadata.annotations["label"]
        count = sum(1 for c in ctx.inventory.clusters() if label in c.metadata.labels)
        if count == state.published:
            return Step(state)
        meta = state.placement.metadata
        data = PlacementDecided(namespace=meta.namespace, name=meta.name, number_of_selected_clusters=count)
        return Step(replace(state, published=count), (Emit("placement.decided", data),))

    def on_timer(self, key: str, state: Counted, ctx: EngineContext) -> Step[Counted]:
        return Step(replace(state, due=None, fired=state.fired + 1), redecide=True)

    def next_due(self, state: Counted) -> datetime | None:
        return state.due

    def affected_by(self, changes: Sequence[InventoryChange], ctx: EngineContext) -> Iterable[str]:
        labels = {
            label
            for change in changes
            for obj in (change.before, change.after)
            if obj is not None
            for label in obj.metadata.labels
        }
        return [key for key, state in self.tracked.items() if state.placement.metadata.annotations["label"] in labels]

    def on_config(self, key: str, state: Counted, ctx: EngineContext) -> Step[Counted]:
        return Step(state)

    def track(self, key: str, state: Counted | None) -> None:
        if state is None:
            self.tracked.pop(key, None)
        else:
            self.tracked[key] = state

    def dump_state(self, state: Counted) -> dict[str, Any]:
        placement = state.placement.model_dump(mode="json", by_alias=True)
        return {"placement": placement, "published": state.published, "fired": state.fired}

    def load_state(self, raw: Mapping[str, Any]) -> Counted:
        return Counted(Placement.model_validate(raw["placement"]), raw["published"], fired=raw["fired"])


# --- builders -------------------------------------------------------------------------------------
_offsets: dict[TopicRole, int] = {}


def record(topic: TopicRole, key: str | None, value: Any, raw: bytes | None = None) -> InputRecord:
    offset = _offsets[topic] = _offsets.get(topic, -1) + 1
    body = raw if raw is not None else (None if value is None else orjson.dumps(value))
    return InputRecord(topic, 0, offset, None if key is None else key.encode(), body, T0, topic.value)


def event(kind: str, data: Any, **envelope: Any) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"id-{kind}", "source": "/test", "type": f"{kind}.v1", "data": data, **envelope}


def placement(name: str, label: str, **extra: Any) -> InputRecord:
    annotations = {"label": label, **{k: str(v) for k, v in extra.items()}}
    data = {"metadata": {"namespace": "ns", "name": name, "annotations": annotations}}
    return record(TopicRole.SUBMISSIONS, f"Placement/ns/{name}", event("placement.applied", data))


def cluster(name: str, *labels: str) -> InputRecord:
    data = {"metadata": {"name": name, "labels": dict.fromkeys(labels, "x")}}
    return record(TopicRole.CLUSTER_STATUS, f"ManagedCluster/{name}", event("managedcluster.applied", data))


def decided(outputs: list[OutputRecord]) -> list[tuple[str, int]]:
    found = []
    for out in outputs:
        if out.topic is TopicRole.DECISIONS and out.value is not None:
            data = orjson.loads(out.value)["data"]
            found.append((data["name"], data["numberOfSelectedClusters"]))
    return found


@pytest.fixture
def engine() -> CountingEngine:
    return CountingEngine()


@pytest.fixture
def runtime(engine: CountingEngine) -> Runtime:
    return Runtime([engine])


# --- tests ----------------------------------------------------------------------------------------
def test_events_for_one_subject_in_a_batch_are_decided_once(runtime: Runtime, engine: CountingEngine) -> None:
    out = runtime.process([cluster("c1", "gpu"), placement("p", "gpu"), placement("p", "gpu")], T0)
    assert engine.decided == ["Placement/ns/p"]
    assert decided(out) == [("p", 1)]


def test_inventory_change_redecides_only_affected_subjects(runtime: Runtime, engine: CountingEngine) -> None:
    runtime.process([placement("gpu", "gpu"), placement("arm", "arm")], T0)
    engine.decided.clear()
    out = runtime.process([cluster("c1", "gpu")], T0)
    assert engine.decided == ["Placement/ns/gpu"]
    assert decided(out) == [("gpu", 1)]


def test_unchanged_answer_publishes_nothing_and_writes_no_changelog(runtime: Runtime) -> None:
    runtime.process([placement("p", "gpu")], T0)
    out = runtime.process([cluster("c1", "arm")], T0)
    assert out == []


def test_changelog_entry_restores_the_subject_elsewhere(runtime: Runtime) -> None:
    out = runtime.process([cluster("c1", "gpu"), placement("p", "gpu")], T0)
    changelog = [o for o in out if o.topic is TopicRole.CHANGELOG]
    assert [o.key for o in changelog] == [b"Placement/ns/p"]
    other_engine = CountingEngine()
    other = Runtime([other_engine])
    other.restore("Placement/ns/p", changelog[0].value)
    assert other.states["Placement/ns/p"].published == 1
    assert "Placement/ns/p" in other_engine.tracked


def test_delete_emits_tombstones_for_decision_and_changelog(runtime: Runtime) -> None:
    runtime.process([placement("p", "gpu")], T0)
    gone = record(
        TopicRole.SUBMISSIONS,
        "Placement/ns/p",
        event("placement.deleted", {"metadata": {"name": "p", "namespace": "ns"}}),
    )
    out = runtime.process([gone], T0)
    assert [(o.topic, o.value) for o in out] == [(TopicRole.DECISIONS, None), (TopicRole.CHANGELOG, None)]
    assert runtime.states == {}


def test_timers_fire_at_their_instant_and_in_order(runtime: Runtime, engine: CountingEngine) -> None:
    runtime.process([placement("late", "x", timerSeconds=20), placement("early", "x", timerSeconds=10)], T0)
    engine.decided.clear()
    assert runtime.next_timer() == T0 + timedelta(seconds=10)
    assert runtime.fire_timers(T0 + timedelta(seconds=9)) == []
    runtime.fire_timers(T0 + timedelta(seconds=30))
    assert engine.decided == ["Placement/ns/early", "Placement/ns/late"]
    assert runtime.next_timer() is None


@pytest.mark.parametrize(
    ("name", "key", "raw", "stage", "message"),
    [
        ("not json", "Placement/ns/p", b"{nope", Stage.DECODE, "not JSON"),
        ("json array", "Placement/ns/p", b"[1]", Stage.DECODE, "expected a CloudEvent"),
        ("unknown type", "Placement/ns/p", orjson.dumps(event("placement.exploded", {})), Stage.VALIDATE, "unknown"),
        (
            "unknown version",
            "Placement/ns/p",
            orjson.dumps({**event("placement.applied", {}), "type": "placement.applied.v9"}),
            Stage.VALIDATE,
            "v9",
        ),
        (
            "no version",
            "Placement/ns/p",
            orjson.dumps({**event("placement.applied", {}), "type": "placement.applied"}),
            Stage.VALIDATE,
            "version",
        ),
        (
            "schema",
            "Placement/ns/p",
            orjson.dumps(event("placement.applied", {"metadata": {}})),
            Stage.VALIDATE,
            "metadata.name",
        ),
        ("envelope", "Placement/ns/p", orjson.dumps({"type": "placement.applied.v1"}), Stage.VALIDATE, "specversion"),
        (
            "wrong topic",
            "Placement/ns/p",
            orjson.dumps(event("placement.decided", {"namespace": "ns", "name": "p"})),
            Stage.VALIDATE,
            "does not belong",
        ),
        (
            "key mismatch",
            "Placement/ns/other",
            orjson.dumps(event("placement.applied", {"metadata": {"name": "p", "namespace": "ns"}})),
            Stage.VALIDATE,
            "does not match",
        ),
        (
            "bad key",
            "Nothing/x",
            orjson.dumps(event("placement.applied", {"metadata": {"name": "p", "namespace": "ns"}})),
            Stage.VALIDATE,
            "subject kind",
        ),
        (
            "missing key",
            None,
            orjson.dumps(event("placement.applied", {"metadata": {"name": "p", "namespace": "ns"}})),
            Stage.VALIDATE,
            "key",
        ),
    ],
)
def test_bad_records_are_dead_lettered_and_the_next_record_is_processed(
    runtime: Runtime, name: str, key: str | None, raw: bytes, stage: str, message: str
) -> None:
    bad = record(TopicRole.SUBMISSIONS, key, None, raw=raw)
    out = runtime.process([bad, cluster("c1", "gpu"), placement("good", "gpu")], T0)
    letters = [o for o in out if o.topic is TopicRole.DEAD_LETTER]
    assert len(letters) == 1, name
    headers = dict(letters[0].headers)
    assert letters[0].value == raw and letters[0].key == bad.key
    assert headers["__connect.errors.stage"].decode() == stage
    assert message in headers["__connect.errors.exception.message"].decode()
    assert headers["__connect.errors.offset"].decode() == str(bad.offset)
    assert headers["__connect.errors.topic"].decode() == "submissions"
    assert letters[0].partition == 0
    assert decided(out) == [("good", 1)]


def test_inventory_dead_letters_are_bound_to_no_task_and_can_be_switched_off(engine: CountingEngine) -> None:
    bad = record(TopicRole.CLUSTER_STATUS, "ManagedCluster/c1", None, raw=b"\xff")
    assert [o.partition for o in Runtime([engine]).process([bad], T0)] == [None]
    assert Runtime([engine], dead_letter_inventory=False).process([bad], T0) == []


def test_output_ids_are_deterministic_per_input(engine: CountingEngine) -> None:
    def run() -> list[bytes | None]:
        _offsets.clear()
        inputs = [cluster("c", "a"), placement("p", "a"), placement("q", "a")]
        return [o.value for o in Runtime([CountingEngine()]).process(inputs, T0)]

    first = run()
    assert first == run()
    ids = [orjson.loads(value)["id"] for value in first if value is not None and b'"specversion"' in value]
    assert len(ids) > 1 and len(set(ids)) == len(ids)  # numbered per event
    assert {uuid.UUID(event_id).version for event_id in ids} == {5}


def _subjects(chunk: Handover, topic: TopicRole) -> list[str | None]:
    return [o.subject for o in chunk.records if o.topic is topic]


@pytest.mark.parametrize(
    ("placements", "chunks"),
    [(1, 1), (DECIDE_CHUNK, 1), (DECIDE_CHUNK + 1, 2), (2 * DECIDE_CHUNK + 5, 3)],
)
def test_outputs_are_handed_over_per_chunk_of_decided_subjects(placements: int, chunks: int) -> None:
    inputs = [cluster("c", "a")] + [placement(f"p{i:04}", "a") for i in range(placements)]
    handed = list(Runtime([CountingEngine()]).process_chunks(inputs, T0))
    assert len(handed) == chunks
    for chunk in handed:  # a chunk carries the changelog of the subjects it decided, after their decisions
        assert _subjects(chunk, TopicRole.DECISIONS) == _subjects(chunk, TopicRole.CHANGELOG)
        assert len(_subjects(chunk, TopicRole.DECISIONS)) <= DECIDE_CHUNK
    whole = Runtime([CountingEngine()]).process(inputs, T0)
    assert [o.value for chunk in handed for o in chunk.records] == [o.value for o in whole]
    assert [chunk.finished for chunk in handed] == [None] * (chunks - 1) + [0], "one task: finished at the end"
    assert len(decided(whole)) == placements


def _task_by_number(key: str) -> int:
    """Placement/ns/pNNNN belongs to task NNNN % 3."""
    return int(key[-4:]) % 3


@pytest.mark.parametrize("placements", [1, 5, DECIDE_CHUNK + 2, 3 * DECIDE_CHUNK + 1])
def test_subjects_are_decided_task_by_task_and_each_task_is_marked_finished_after_its_last_output(
    placements: int,
) -> None:
    engine = CountingEngine()
    runtime = Runtime([engine], task_of=_task_by_number)
    names = [f"p{i:04}" for i in range(placements)]
    placed = [_on_its_task(placement(n, "a")) for n in reversed(names)]
    handed = list(runtime.process_chunks([cluster("c", "a"), *placed], T0))
    keys = [f"Placement/ns/{n}" for n in names]
    assert engine.decided == sorted(keys, key=lambda k: (_task_by_number(k), k))
    tasks = sorted({_task_by_number(k) for k in keys})
    assert [c.finished for c in handed if c.finished is not None] == tasks, "each task once, in task order"
    _assert_nothing_after_its_task_finished(handed)
    assert sorted(_subjects(Handover([o for c in handed for o in c.records]), TopicRole.CHANGELOG)) == sorted(keys)

    # a deleted subject is touched, not decided: its tombstone still comes within its own task
    deletion = _on_its_task(
        record(
            TopicRole.SUBMISSIONS,
            keys[-1],
            event("placement.deleted", {"metadata": {"name": names[-1], "namespace": "ns"}}),
        )
    )
    again = list(runtime.process_chunks([cluster("c2", "a"), deletion], T0))
    _assert_nothing_after_its_task_finished(again)
    assert [c.finished for c in again if c.finished is not None] == tasks
    changelog = [o for c in again for o in c.records if o.topic is TopicRole.CHANGELOG]
    assert sorted(o.subject for o in changelog if o.subject) == sorted(keys)
    assert [o.subject for o in changelog if o.value is None] == [keys[-1]]


def _on_its_task(given: InputRecord) -> InputRecord:
    assert given.key is not None
    return replace(given, partition=_task_by_number(given.key.decode()))


def _assert_nothing_after_its_task_finished(handed: list[Handover]) -> None:
    finished: set[int] = set()
    for chunk in handed:
        for output in chunk.records:
            assert output.subject is not None and _task_by_number(output.subject) not in finished
        if chunk.finished is not None:
            finished.add(chunk.finished)


def test_redecide_and_timers_hand_over_in_chunks(runtime: Runtime) -> None:
    many = DECIDE_CHUNK + 3
    first = runtime.process([placement(f"p{i:04}", "a", timerSeconds=5) for i in range(many)], T0)
    runtime.process([cluster("c", "a")], T0 + timedelta(seconds=1))  # every decision changes
    fired = list(runtime.fire_timer_chunks(T0 + timedelta(seconds=10)))
    assert len(fired) == many  # one timer, one batch, one hand-over each
    assert all(_subjects(c, TopicRole.CHANGELOG) == [c.records[0].subject] for c in fired)
    assert all(c.finished is None for c in fired), "the next timer may be any task's: none is finished"
    for entry in first:  # as if restored from a changelog written before the cluster came
        if entry.topic is TopicRole.CHANGELOG:
            runtime.restore(entry.key.decode(), entry.value)
    redecided = list(runtime.redecide_chunks(list(runtime.states), T0 + timedelta(seconds=20)))
    assert [len(_subjects(c, TopicRole.DECISIONS)) for c in redecided] == [DECIDE_CHUNK, 3]
    assert [c.finished for c in redecided] == [None, 0]


@pytest.mark.parametrize(
    ("subject", "part", "key"),
    [
        ("Application/default", "", "Application/default"),
        ("Application/default", "apps/a/b", "Application/default/apps/a/b"),
        ("Placement/ns/p", "", "Placement/ns/p"),
        ("Placement/ns/p", "x", "Placement/ns/p/x"),
    ],
)
def test_changelog_keys_name_the_subject_and_the_part(subject: str, part: str, key: str) -> None:
    assert changelog_key(subject, part) == key
    assert split_changelog_key(key) == (subject, part)


@pytest.mark.parametrize("key", ["Nothing/x", "Application", "Placement/ns"])
def test_changelog_keys_without_a_subject_are_refused(key: str) -> None:
    with pytest.raises(RoutingError):
        split_changelog_key(key)


class CostlyCountingEngine(CountingEngine):
    """Subjects annotated `costly` say their decision is costly (`CostlyEngine`)."""

    def costly(self, key: str, state: Counted) -> bool:
        return "costly" in state.placement.metadata.annotations


@pytest.mark.parametrize(
    ("costly", "light"),
    [
        (["p0000"], ["p0001", "p0002", "p0003", "p0004", "p0005"]),  # task 0 holds a costly and a light subject
        (["p0001", "p0005"], ["p0000", "p0002", "p0003", "p0004"]),  # two costly subjects, tasks 1 and 2
        ([], ["p0000", "p0001", "p0002"]),  # none costly: task after task, as before
    ],
)
def test_costly_subjects_are_decided_after_every_task_finished(costly: list[str], light: list[str]) -> None:
    engine = CostlyCountingEngine()
    runtime = Runtime([engine], task_of=_task_by_number)
    inputs = _costly_batch(costly, light)
    handed = list(runtime.process_chunks(inputs, T0))
    costly_keys = [f"Placement/ns/{name}" for name in costly]
    light_keys = [f"Placement/ns/{name}" for name in light]
    # light subjects task by task, then the costly ones task by task: each decided once
    by_task = lambda k: (_task_by_number(k), k)  # noqa: E731
    assert engine.decided == sorted(light_keys, key=by_task) + sorted(costly_keys, key=by_task)
    # every task, a costly subject's own included, is finished before any costly subject is decided
    tasks = sorted({_task_by_number(k) for k in costly_keys + light_keys})
    assert [c.finished for c in handed if c.finished is not None] == tasks
    last = max(i for i, c in enumerate(handed) if c.finished is not None)
    after = {o.subject for c in handed[last + 1 :] for o in c.records}
    assert after == set(costly_keys)
    whole = Runtime([CostlyCountingEngine()], task_of=_task_by_number).process(inputs, T0)
    assert [o.value for c in handed for o in c.records] == [o.value for o in whole], "deterministic"
    assert sorted(name for name, _ in decided(whole)) == sorted(costly + light)


@pytest.mark.parametrize("costly", [["p0000"], ["p0001", "p0005"]])
def test_a_stop_between_the_finished_tasks_and_the_costly_decisions_loses_no_decision(costly: list[str]) -> None:
    """The finished transactions hold the costly subjects' new state but not their decision: a new owner that
    restores them and re-decides what it restored, as after every restore, publishes exactly those decisions."""
    light = [name for name in ("p0000", "p0001", "p0002", "p0003") if name not in costly]
    inputs = _costly_batch(costly, light)
    handed = list(Runtime([CostlyCountingEngine()], task_of=_task_by_number).process_chunks(inputs, T0))
    last = max(i for i, c in enumerate(handed) if c.finished is not None)
    committed = [o for c in handed[: last + 1] for o in c.records]
    lost = [o for c in handed[last + 1 :] for o in c.records]
    owner = Runtime([CostlyCountingEngine()], task_of=_task_by_number)
    owner.process(inputs[:1], T0)  # the inventory is global: every instance reads it whole
    for entry in committed:
        if entry.topic is TopicRole.CHANGELOG and entry.key is not None:
            owner.restore(entry.key.decode(), entry.value)
    redecided = owner.redecide(sorted(owner.states), T0)
    assert decided(redecided) == decided(lost) and sorted(n for n, _ in decided(lost)) == sorted(costly)
    assert not {n for n, _ in decided(committed)} & set(costly)


class FailingCostlyEngine(CostlyCountingEngine):
    """Costly subjects fail to be decided."""

    def decide(self, key: str, state: Counted, ctx: EngineContext) -> Step[Counted]:
        if self.costly(key, state):
            raise RuntimeError("decision failed")
        return super().decide(key, state, ctx)


@pytest.mark.parametrize("defer", [False, True], ids=["in-its-batch", "deferred"])
def test_a_costly_decision_that_fails_dead_letters_its_records_once_and_reverts_the_changelog(defer: bool) -> None:
    runtime = Runtime([FailingCostlyEngine()], task_of=_task_by_number)
    runtime.process([cluster("c", "a"), _on_its_task(placement("p0000", "a"))], T0)  # decided, not costly
    changed = _on_its_task(placement("p0000", "b", costly=1))
    batch = [changed, _on_its_task(placement("p0003", "a"))]
    handed = list(runtime.process_chunks(batch, T0, defer_costly=defer))
    if defer:
        assert runtime.deferred_keys() == {0: ["Placement/ns/p0000"]}
        handed += runtime.redecide_chunks(["Placement/ns/p0000"], T0)
    outputs = [o for c in handed for o in c.records]
    letters = [o for o in outputs if o.topic is TopicRole.DEAD_LETTER]
    assert [(o.key, o.value) for o in letters] == [(changed.key, changed.value)]
    assert decided(outputs) == [("p0003", 1)]
    entries = [o for o in outputs if o.topic is TopicRole.CHANGELOG and o.subject == "Placement/ns/p0000"]
    assert len(entries) == 2  # the new state, in the finished transaction, then the state before the batch
    assert entries[-1].value is not None
    restored = orjson.loads(entries[-1].value)["state"]["placement"]["metadata"]["annotations"]
    assert restored == {"label": "a"} and runtime.states["Placement/ns/p0000"].placement.metadata.annotations == {
        "label": "a"
    }


def test_deferred_costly_subjects_are_decided_later_with_their_trace_and_once() -> None:
    """Deferred, a costly subject's new state is in its batch's changelog but its decision is not; re-decided in a
    later turn, it publishes what its batch would have, with the trace context of the record that changed it."""
    inputs = _costly_batch(["p0000", "p0004"], ["p0001", "p0003"])
    parent = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    inputs[1] = replace(inputs[1], headers=(("traceparent", parent),))  # p0000's record
    costly = ["Placement/ns/p0000", "Placement/ns/p0004"]
    inline = Runtime([CostlyCountingEngine()], task_of=_task_by_number).process(inputs, T0)
    engine = CostlyCountingEngine()
    runtime = Runtime([engine], task_of=_task_by_number)
    first = [o for c in runtime.process_chunks(inputs, T0, defer_costly=True) for o in c.records]
    assert engine.decided == ["Placement/ns/p0003", "Placement/ns/p0001"]
    assert sorted(name for name, _ in decided(first)) == ["p0001", "p0003"]
    assert set(costly) <= {o.subject for o in first if o.topic is TopicRole.CHANGELOG}
    assert runtime.deferred_keys() == {0: costly[:1], 1: costly[1:]}
    later = runtime.redecide(costly, T0)
    assert decided(later) == [d for d in decided(inline) if d[0] in ("p0000", "p0004")]
    [traced] = [o for o in later if o.topic is TopicRole.DECISIONS and o.subject == costly[0]]
    assert dict(traced.headers)["traceparent"] == parent
    assert runtime.deferred_keys() == {}
    assert runtime.redecide(costly, T0) == [], "decided once: nothing changed since"


def _costly_batch(costly: list[str], light: list[str]) -> list[InputRecord]:
    """A cluster, then each placement on its task, the costly ones annotated so."""
    inputs = [cluster("c", "a")]
    inputs += [
        _on_its_task(placement(name, "a", **({"costly": 1} if name in costly else {})))
        for name in sorted(costly + light)
    ]
    return inputs
