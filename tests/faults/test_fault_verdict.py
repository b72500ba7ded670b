"""The verdict's definitions catch what they name: replay's own output passes, and each kind of damage a
faulty processor could do to the committed output (a record lost, repeated, changed or reordered) is
reported under the matching heading and nowhere else. And the workload's answers do not depend on the
interleaving of topics, so a difference in a fault run is the processor's. No broker needed."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from streams.settings import Settings, TopicNames
from tests.faults.verdict import Output, compare, replay
from tests.faults.workload import Item, Workload
from topics.names import TopicRole

Outputs = dict[TopicRole, list[Output]]
Damage = Callable[[Outputs], None]


def _type(record: Output) -> str | None:
    return None if record.value is None else orjson.loads(record.value).get("type")


def _index(records: list[Output], wanted: Callable[[Output], bool], nth: int = 0) -> int:
    return [i for i, record in enumerate(records) if wanted(record)][nth]


def _is_app(record: Output) -> bool:
    return _type(record) in ("application.placed.v1", "application.rejected.v1")


def _is_decided(record: Output) -> bool:
    return _type(record) == "placement.decided.v1"


def _with_data(record: Output, **changes: object) -> Output:
    value = orjson.loads(record.value or b"{}")
    value["data"].update(changes)
    return replace(record, value=orjson.dumps(value))


def drop_application(out: Outputs) -> None:
    del out[TopicRole.DECISIONS][_index(out[TopicRole.DECISIONS], _is_app)]


def repeat_application(out: Outputs) -> None:
    records = out[TopicRole.DECISIONS]
    at = _index(records, _is_app, 3)
    records.insert(at + 1, records[at])


def change_queue(out: Outputs) -> None:
    records = out[TopicRole.DECISIONS]
    at = _index(records, lambda r: _type(r) == "application.placed.v1")
    records[at] = _with_data(records[at], queue="root.elsewhere")


def swap_applications(out: Outputs) -> None:
    records = out[TopicRole.DECISIONS]
    first = _index(records, _is_app)
    second = _index(records, lambda r: _is_app(r) and r.key == records[first].key, 1)
    records[first], records[second] = records[second], records[first]


def drop_placement(out: Outputs) -> None:
    records = out[TopicRole.DECISIONS]
    key = records[_index(records, _is_decided)].key
    records[:] = [r for r in records if r.key != key]


def repeat_placement(out: Outputs) -> None:
    records = out[TopicRole.DECISIONS]
    at = _index(records, _is_decided)
    records.insert(at + 1, records[at])


def stale_placement(out: Outputs) -> None:
    """The last decision of a placement that changed its answer is lost: an earlier answer stays last."""
    records = out[TopicRole.DECISIONS]
    counts: dict[str, int] = {}
    for record in records:
        counts[record.key] = counts.get(record.key, 0) + (1 if _is_decided(record) else 0)
    key = next(k for k, n in counts.items() if k.startswith("Placement/") and n >= 3)
    last = max(i for i, r in enumerate(records) if r.key == key)
    del records[last]


def repeat_dead_letter(out: Outputs) -> None:
    out[TopicRole.DEAD_LETTER].append(out[TopicRole.DEAD_LETTER][0])


def drop_dead_letter(out: Outputs) -> None:
    del out[TopicRole.DEAD_LETTER][-1]


def extra_config_rejection(out: Outputs) -> None:
    value = {"type": "queueconfig.rejected.v1", "data": {"path": "q.yaml", "error": "x", "sha256": "0"}}
    out[TopicRole.DECISIONS].append(Output("QueueConfig", orjson.dumps(value)))


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Outputs:
    workload = Workload(seed=5, partitions=2, clusters=8, placements=10)
    config: Path = tmp_path_factory.mktemp("verdict") / "queues.yaml"
    config.write_text(workload.queue_config())
    items = workload.setup() + workload.stream(400) + workload.probes() + workload.finale()
    return replay(items, Settings(topics=TopicNames.prefixed("v."), resync_seconds=0), config)


@pytest.mark.parametrize(
    ("damage", "lost", "duplicated", "differing"),
    [
        (None, 0, 0, 0),
        (drop_application, 1, 0, 0),
        (repeat_application, 0, 1, 0),
        (change_queue, 0, 0, 1),
        (swap_applications, 0, 0, 1),
        (drop_placement, 1, 0, 0),
        (repeat_placement, 0, 1, 0),
        (stale_placement, 0, 0, 1),
        (drop_dead_letter, 1, 0, 0),
        (repeat_dead_letter, 0, 1, 0),
        (extra_config_rejection, 0, 0, 1),
    ],
)
def test_each_kind_of_damage_is_reported_under_its_name(
    replayed: Outputs, damage: Damage | None, lost: int, duplicated: int, differing: int
) -> None:
    committed = {role: list(records) for role, records in replayed.items()}
    if damage is not None:
        damage(committed)
    verdict = compare(committed, replayed)
    assert (len(verdict.lost), len(verdict.duplicated), len(verdict.differing)) == (lost, duplicated, differing), (
        verdict.details()
    )
    assert verdict.checked["applications"] > 50 and verdict.checked["placements"] > 5
    assert verdict.checked["dead letters"] > 0


def _interleaved(items: list[Item], rng: random.Random) -> list[Item]:
    """Another order Kafka could deliver: each inventory topic and each submission key keeps its own order."""
    lanes: dict[object, list[Item]] = defaultdict(list)
    for item in reversed(items):
        lanes[item.key if item.role is TopicRole.SUBMISSIONS else item.role].append(item)
    mixed: list[Item] = []
    while lanes:
        lane = rng.choice(list(lanes))
        for _ in range(rng.randint(1, 200)):
            if lanes[lane]:
                mixed.append(lanes[lane].pop())
        if not lanes[lane]:
            del lanes[lane]
    return mixed


@pytest.mark.parametrize("seed", [38, 45, 46])
def test_the_workload_answers_do_not_depend_on_how_topics_interleave(seed: int, tmp_path: Path) -> None:
    """The premise of the fault runs: a difference from replay is the processor's, not the workload's order."""
    workload = Workload(seed=seed, partitions=3, clusters=10, placements=20)
    config = tmp_path / "queues.yaml"
    config.write_text(workload.queue_config())
    items = workload.setup() + workload.stream(1200) + workload.finale()
    settings = Settings(topics=TopicNames.prefixed("v."), resync_seconds=0)
    in_order = replay(items, settings, config)
    mixed = _interleaved(items, random.Random(seed))
    assert mixed != items and sorted(map(id, mixed)) == sorted(map(id, items))
    verdict = compare(replay(mixed, settings, config), in_order)
    assert verdict.ok(), verdict.details()
    assert verdict.checked["placements"] > 20
