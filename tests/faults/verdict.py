"""What the committed output must look like after faults: the same answers `placement-stream replay` gives
for the same input, each exactly once.

Definitions, per kind of output (Kafka side: every record of the decisions and dead-letter topics a
read_committed consumer sees, in partition order; replay side: the in-process `Replayer` fed the records in
the order they were produced, which is the order of every record key):

* Applications (`application.placed` / `application.rejected`), one per (YuniKorn partition, applicationId):
  - lost: replay decided the application, no committed decision names it;
  - duplicated: more than one committed decision names it (a submission processed twice; a second run would
    also answer "already existed", so the copies need not be equal);
  - differing: its first committed decision's data (placed: queue, rule, created; rejected: reason) is not
    replay's, or replay never decided it, or the applications of one YuniKorn partition were decided in
    another order than replay's (they share one record key, so their order is fixed by the input).
* Placements (`placement.decided`, then a tombstone once deleted), one per `Placement/<ns>/<name>` key:
  - lost: replay published for the key, nothing committed for it;
  - duplicated: a committed decision whose answer equals the one committed just before it for that key
    (the processor publishes only changed answers, across restarts too, since the published answer is
    restored from the changelog);
  - differing: the last committed record's answer is not replay's last (a tombstone equals only a tombstone),
    or replay never published for the key.
  The answer is every field that does not depend on event ids, clocks or batching: pages (names, labels,
  clusters and reasons), decision groups, numberOfSelectedClusters, conditions without lastTransitionTime,
  warning and deleted. Not compared: id, time, evaluationTime, generation and scores (a new generation or
  new scores with an unchanged answer publish nothing, so they depend on how the input was batched).
* Dead letters, one per bad input record (its key and value bytes):
  - lost: replay dead-lettered it, nothing committed; duplicated: committed more than once;
  - differing: the stage or exception class differs from replay's, or replay did not dead-letter it.
* Anything else on the decisions topic (e.g. `queueconfig.rejected`) must match replay as a multiset.
"""

from __future__ import annotations

import io
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.replay import Replayer
from streams.settings import Settings
from tests.faults.workload import Item
from tests.integration.kafka_support import without
from topics.names import TopicRole

__all__ = ["Output", "Verdict", "compare", "read_committed", "replay"]

APPLICATION_TYPES = ("application.placed.v1", "application.rejected.v1")
PLACEMENT_TYPE = "placement.decided.v1"
_VOLATILE = frozenset({"lastTransitionTime"})
_UNCOMPARED = frozenset({"generation", "evaluationTime", "scores", "passingScores", "prioritizers", "filteredBy"})


@dataclass(frozen=True, slots=True)
class Output:
    """One output record: key, value bytes (None: tombstone) and headers."""

    key: str
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    at: str = ""
    """Where and when Kafka has it (`p<partition>@<offset> <produce time>`), to find it in the instances' logs."""


@dataclass
class Verdict:
    """Problems found, per kind of output; `checked` counts what was compared, so a pass is never vacuous."""

    checked: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.differing)

    def summary(self) -> str:
        checked = ", ".join(f"{kind} {count}" for kind, count in sorted(self.checked.items()))
        return f"lost {len(self.lost)}, duplicated {len(self.duplicated)}, differing {len(self.differing)} ({checked})"

    def by_kind(self) -> dict[str, tuple[int, int, int, int]]:
        """(checked, lost, duplicated, differing) per kind of output; every entry starts with its kind."""
        kinds = {"applications": "application", "placements": "placement", "dead letters": "dead letter"}
        kinds["other decisions"] = "other"

        def count(found: list[str], prefix: str) -> int:
            return sum(1 for entry in found if entry.startswith(prefix))

        return {
            kind: (self.checked[kind], count(self.lost, p), count(self.duplicated, p), count(self.differing, p))
            for kind, p in kinds.items()
        }

    def details(self, limit: int = 8) -> str:
        lines = [self.summary()]
        for name, found in (("lost", self.lost), ("duplicated", self.duplicated), ("differing", self.differing)):
            lines += [f"  {name}: {entry}" for entry in found[:limit]]
            if len(found) > limit:
                lines.append(f"  {name}: ... {len(found) - limit} more")
        return "\n".join(lines)


# --- the two sides --------------------------------------------------------------------------------
def replay(items: Sequence[Item], settings: Settings, queue_config: Path) -> dict[TopicRole, list[Output]]:
    """Decisions and dead letters of `placement-stream replay` over `items`, in the order given."""
    out = io.BytesIO()
    replayer = Replayer(settings, out, queue_config=queue_config, warn=_fail)
    replayer.run(orjson.dumps({"topic": item.role.value, "key": item.key, "value": item.value}) for item in items)
    found: dict[TopicRole, list[Output]] = defaultdict(list)
    roles = settings.topics.roles()
    for line in out.getvalue().splitlines():
        record = orjson.loads(line)
        role = roles[record["topic"]]
        value = record["value"]
        raw = None if value is None else orjson.dumps(value) if isinstance(value, dict) else str(value).encode()
        headers = tuple((name, text.encode()) for name, text in (record.get("headers") or {}).items())
        found[role].append(Output(record["key"], raw, headers))
    return found


def _fail(text: str) -> None:
    raise AssertionError(f"replay refused its input: {text}")


async def read_committed(bootstrap: str, topic: str, partitions: int) -> list[Output]:
    """Every committed record of `topic`'s `partitions`, partition by partition, in offset order (up to the last
    stable offset)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, isolation_level="read_committed", enable_auto_commit=False
    )
    await consumer.start()
    try:
        assigned = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(assigned)
        await consumer.seek_to_beginning(*assigned)
        end = await consumer.end_offsets(assigned)
        found: dict[int, list[Output]] = defaultdict(list)
        while [tp for tp in assigned if await consumer.position(tp) < end[tp]]:
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                found[tp.partition] += [
                    Output(
                        (r.key or b"").decode(),
                        r.value,
                        tuple((name, bytes(value)) for name, value in r.headers),
                        f"p{r.partition}@{r.offset} {datetime.fromtimestamp(r.timestamp / 1000, UTC):%H:%M:%S.%f}",
                    )
                    for r in records
                ]
    finally:
        await consumer.stop()
    return [record for p in sorted(found) for record in found[p]]


# --- comparison -----------------------------------------------------------------------------------
def compare(
    committed: dict[TopicRole, list[Output]], replayed: dict[TopicRole, list[Output]], verdict: Verdict | None = None
) -> Verdict:
    """Check the committed decisions and dead letters against replay's (see the module docstring)."""
    verdict = verdict or Verdict()
    kafka = _split(committed.get(TopicRole.DECISIONS, []))
    expected = _split(replayed.get(TopicRole.DECISIONS, []))
    _applications(kafka["applications"], expected["applications"], verdict)
    _placements(kafka["placements"], expected["placements"], verdict)
    _others(kafka["others"], expected["others"], verdict)
    _dead_letters(committed.get(TopicRole.DEAD_LETTER, []), replayed.get(TopicRole.DEAD_LETTER, []), verdict)
    return verdict


@dataclass(frozen=True, slots=True)
class _Decision:
    key: str
    value: dict[str, Any] | None
    at: str


def _split(records: Iterable[Output]) -> dict[str, list[_Decision]]:
    groups: dict[str, list[_Decision]] = defaultdict(list)
    for record in records:
        value = None if record.value is None else orjson.loads(record.value)
        kind = None if value is None else value.get("type")
        decision = _Decision(record.key, value, record.at)
        if kind in APPLICATION_TYPES:
            groups["applications"].append(decision)
        elif kind == PLACEMENT_TYPE or (value is None and record.key.startswith("Placement/")):
            groups["placements"].append(decision)
        else:
            groups["others"].append(decision)
    return groups


def _answer(value: dict[str, Any] | None) -> Any:
    """The compared part of a value (None for a tombstone)."""
    if value is None:
        return None
    if value["type"] in APPLICATION_TYPES:
        return (value["type"], _stable(value["data"]))
    return _stable({k: v for k, v in value["data"].items() if k not in _UNCOMPARED})


def _stable(value: Any) -> Any:
    return without(value, _VOLATILE)


def _data(decision: _Decision) -> dict[str, Any]:
    assert decision.value is not None, "applications have no tombstones"
    data: dict[str, Any] = decision.value["data"]
    return data


def _applications(kafka: list[_Decision], replayed: list[_Decision], verdict: Verdict) -> None:
    def by_app(decisions: list[_Decision]) -> dict[tuple[str, str], list[_Decision]]:
        found: dict[tuple[str, str], list[_Decision]] = defaultdict(list)
        for decision in decisions:
            found[(_data(decision)["partition"], _data(decision)["applicationId"])].append(decision)
        return found

    got, want = by_app(kafka), by_app(replayed)
    verdict.checked["applications"] += len(want)
    for app, expected in want.items():
        seen, answer = got.get(app, []), _answer(expected[0].value)
        if not seen:
            verdict.lost.append(f"application {app}: replay {answer}")
            continue
        if len(seen) > 1:
            ids = "same id" if len({d.value["id"] for d in seen if d.value}) == 1 else "different ids"
            copies = "; ".join(f"{d.at} {_answer(d.value)}" for d in seen)
            verdict.duplicated.append(f"application {app}: {len(seen)} decisions ({ids}): {copies}")
        if _answer(seen[0].value) != answer:
            verdict.differing.append(f"application {app}: kafka {seen[0].at} {_answer(seen[0].value)} != {answer}")
    verdict.differing += [f"application {app}: decided, replay never did" for app in got.keys() - want.keys()]

    def order(decisions: list[_Decision]) -> dict[str, list[str]]:
        found: dict[str, list[str]] = defaultdict(list)
        for decision in decisions:
            app = _data(decision)["applicationId"]
            if app not in found[decision.key]:
                found[decision.key].append(app)
        return found

    got_order, want_order = order(kafka), order(replayed)
    for key, apps in want_order.items():
        wanted = set(apps)
        kept = [app for app in got_order.get(key, []) if app in wanted]
        decided = set(kept)
        present = [app for app in apps if app in decided]
        if kept != present:
            first = next(i for i, (a, b) in enumerate(zip(kept, present, strict=True)) if a != b)
            verdict.differing.append(
                f"application order in {key}: #{first} is {kept[first]}, replay decided {present[first]} there"
            )


def _placements(kafka: list[_Decision], replayed: list[_Decision], verdict: Verdict) -> None:
    got: dict[str, list[_Decision]] = defaultdict(list)
    for decision in kafka:
        got[decision.key].append(decision)
    want: dict[str, Any] = {decision.key: _answer(decision.value) for decision in replayed}
    verdict.checked["placements"] += len(want)
    for key, final in want.items():
        history = got.get(key)
        if not history:
            verdict.lost.append(f"placement {key}: replay's final {_brief(final)}")
            continue
        if _answer(history[-1].value) != final:
            last = history[-1]
            verdict.differing.append(
                f"placement {key}: kafka {last.at} {_brief(_answer(last.value))} != replay {_brief(final)}"
            )
    for key, history in got.items():
        answers = [_answer(d.value) for d in history]
        for i in range(1, len(history)):
            if answers[i] is not None and answers[i] == answers[i - 1]:
                again = f"{history[i - 1].at} and {history[i].at}: {_brief(answers[i])}"
                verdict.duplicated.append(f"placement {key}: unchanged answer published again, {again}")
                break
    verdict.differing += [f"placement {key}: published, replay never did" for key in got.keys() - want.keys()]


def _brief(answer: Any) -> str:
    if answer is None:
        return "tombstone"
    if answer.get("deleted"):
        return "deleted"
    clusters = sorted(d["clusterName"] for page in answer["placementDecisions"] for d in page["status"]["decisions"])
    reasons = [c["reason"] for c in answer["conditions"]]
    return f"{clusters} {reasons}"


def _others(kafka: list[_Decision], replayed: list[_Decision], verdict: Verdict) -> None:
    def counted(decisions: list[_Decision]) -> Counter[bytes]:
        return Counter(orjson.dumps((d.key, _stable(d.value)), option=orjson.OPT_SORT_KEYS) for d in decisions)

    got, want = counted(kafka), counted(replayed)
    verdict.lost += [f"other decision {item.decode()[:200]}" for item in (want - got).elements()]
    verdict.differing += [f"other decision not in replay {item.decode()[:200]}" for item in (got - want).elements()]


def _dead_letters(kafka: list[Output], replayed: list[Output], verdict: Verdict) -> None:
    def by_input(records: list[Output]) -> dict[tuple[str, bytes | None], list[tuple[bytes, bytes, str]]]:
        found: dict[tuple[str, bytes | None], list[tuple[bytes, bytes, str]]] = defaultdict(list)
        for record in records:
            headers = dict(record.headers)
            stage = headers.get("__connect.errors.stage", b"")
            cause = (stage, headers.get("__connect.errors.exception.class.name", b""), record.at)
            found[(record.key, record.value)].append(cause)
        return found

    got, want = by_input(kafka), by_input(replayed)
    verdict.checked["dead letters"] += len(want)
    for record, causes in want.items():
        seen = got.get(record, [])
        if not seen:
            verdict.lost.append(f"dead letter {record[0]} {record[1]!r:.120}")
        elif len(seen) > 1:
            copies = ", ".join(at for *_, at in seen)
            verdict.duplicated.append(f"dead letter {record[0]} {record[1]!r:.100}: {len(seen)} times: {copies}")
        elif seen[0][:2] != causes[0][:2]:
            verdict.differing.append(f"dead letter {record[0]}: {seen[0]} != replay {causes[0]}")
    verdict.differing += [f"dead letter {r[0]} not in replay" for r in got.keys() - want.keys()]
