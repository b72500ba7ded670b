"""What the topics must look like for the state to be right, as pure checks (platform P2, P14).

A subject's records, state and decisions live in partition `murmur2(key) % n` of every co-partitioned topic.
Change `n` and most subjects move to another partition, away from their state and their last decision, so a
count other than the one the state was built with is refused, at start and while running. The count is
recorded by a marker at the head of each changelog partition (written when the partition is first used), and
the placement of the keys already written (the changelog's and the decisions') must agree with it as well: a
changelog from before the markers has only its placement to show.

The marker's key lies under the task offsets prefix (task_offsets.py) and its value is an empty list of
offsets: every version that reads task offsets records skips it quietly, so a rollback reads it as nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.errors import RoutingError
from engine.runtime.routing import split_changelog_key
from streams.kafka.tasks import partitions_of

__all__ = [
    "MARKER_VALUE",
    "REPARTITION_HELP",
    "Misplaced",
    "count_change",
    "emptied_decisions",
    "empty_changelog",
    "history_problem",
    "is_partitions_marker",
    "marker_count",
    "misplaced",
    "misplaced_state",
    "partitions_marker",
    "placing_counts",
    "policy_problems",
    "recorded_counts",
]

REPARTITION_HELP = "see 'Changing partition counts' in docs/operations.md"
"""Where a refusal about partition counts points the operator."""

_MARKER_PREFIX = b"~task-offsets/~partitions/"
MARKER_VALUE = b"[]"
"""No offsets: a reader of task offsets records takes nothing from it."""

_GUESS_LIMIT = 256


def partitions_marker(count: int) -> bytes:
    """The key of the marker saying the state was built with `count` partitions (its value is `MARKER_VALUE`)."""
    return _MARKER_PREFIX + str(count).encode()


def is_partitions_marker(key: bytes) -> bool:
    return key.startswith(_MARKER_PREFIX)


def marker_count(key: bytes) -> int | None:
    """The count a marker key records; None for another key or an unreadable one."""
    if not is_partitions_marker(key):
        return None
    digits = key[len(_MARKER_PREFIX) :]
    return int(digits) if digits.isdigit() else None


@dataclass(frozen=True, slots=True)
class Misplaced:
    """A key found in a partition its subject does not hash to under the current count."""

    topic: str
    key: str
    partition: int
    expected: int


def _subject_keys(records: Iterable[tuple[int, bytes]]) -> list[tuple[int, str, str, str]]:
    """(partition, key, subject, part) of each subject entry key among (partition, key); keys of no subject
    (markers, task offsets) are left out."""
    found = []
    for partition, raw in records:
        try:
            key = raw.decode()
            subject, part = split_changelog_key(key)
        except (UnicodeDecodeError, RoutingError):
            continue
        found.append((partition, key, subject, part))
    return found


def misplaced(topic: str, records: Iterable[tuple[int, bytes]], count: int) -> list[Misplaced]:
    """The subject keys among (partition, key) that `count` partitions would put elsewhere; keys of no subject
    (markers, task offsets) are not judged."""
    found = _subject_keys(records)
    expected = partitions_of([subject for _, _, subject, _ in found], count)
    return [
        Misplaced(topic, key, partition, task)
        for (partition, key, _, _), task in zip(found, expected, strict=True)
        if task != partition
    ]


def placing_counts(records: Iterable[tuple[int, bytes]], limit: int = _GUESS_LIMIT) -> list[int]:
    """The partition counts up to `limit` that place every subject key where it was found: the counts the
    records may have been written with."""
    subjects = [(partition, subject) for partition, _, subject, _ in _subject_keys(records)]
    keys = [subject for _, subject in subjects]
    return [
        count
        for count in range(1, limit + 1)
        if all(p == q for (p, _), q in zip(subjects, partitions_of(keys, count), strict=True))
    ]


def recorded_counts(markers: Iterable[tuple[int, bytes]]) -> dict[int, set[int]]:
    """The counts the changelog's partition markers record, by partition."""
    counts: dict[int, set[int]] = {}
    for partition, key in markers:
        count = marker_count(key)
        if count is not None:
            counts.setdefault(partition, set()).add(count)
    return counts


def history_problem(
    changelog: str, count: int, markers: Mapping[int, set[int]], wrong: list[Misplaced], fitting: list[int]
) -> str | None:
    """Why the changelog and decisions cannot have been written with `count` partitions, or None. `fitting`: the
    counts that place every key seen (`placing_counts`), to say which count the topics were written with."""
    other = sorted({c for counts in markers.values() for c in counts} - {count})
    if other:
        where = ", ".join(f"partition {p}: {sorted(c)}" for p, c in sorted(markers.items()) if c - {count})
        return (
            f"the state in {changelog} was built with {'/'.join(map(str, other))} partitions ({where}), the "
            f"co-partitioned topics now have {count}: subjects would be decided away from their state and "
            f"their last decision; {REPARTITION_HELP}"
        )
    if wrong:
        first = wrong[0]
        topics = ", ".join(sorted({m.topic for m in wrong}))
        return (
            f"{topics} hold keys placed for another partition count ({len(wrong)} seen, e.g. {first.key} in "
            f"partition {first.partition} of {first.topic}, which {count} partitions place in {first.expected}"
            f"{_fitting(fitting)}); the co-partitioned topics now have {count} partitions; {REPARTITION_HELP}"
        )
    return None


def _fitting(counts: list[int]) -> str:
    if not counts:
        return ""
    shown = ", ".join(map(str, counts[:4])) + (", ..." if len(counts) > 4 else "")
    return f"; the keys seen fit {shown} partitions"


def misplaced_state(changelog: str, task: int, keys: list[str], count: int) -> str:
    """The message for a restored changelog partition holding subjects `count` partitions place elsewhere."""
    return (
        f"partition {task} of {changelog} holds {len(keys)} subjects that {count} partitions place in another "
        f"task (e.g. {keys[0]}): the state was built with another partition count; every task is stopped and "
        f"the instance is not ready; {REPARTITION_HELP}"
    )


def count_change(expected: Mapping[str, int], found: Mapping[str, int | None]) -> str | None:
    """A message naming every topic that is gone or whose partition count is not the one the processor
    started with, or None when all are as they were."""
    gone = sorted(name for name in expected if found.get(name) is None)
    changed = sorted(
        f"{name} {expected[name]} -> {found[name]}"
        for name in expected
        if found.get(name) is not None and found[name] != expected[name]
    )
    if not gone and not changed:
        return None
    parts = []
    if gone:
        parts.append(f"topic deleted: {', '.join(gone)} (the processor cannot commit without it)")
    if changed:
        parts.append(f"partition count changed: {', '.join(changed)}")
    return (
        "the topics changed while running: "
        + "; ".join(parts)
        + "; every task is stopped and the instance is not ready; restart once the topics are as they were, or "
        f"re-partition: {REPARTITION_HELP}"
    )


def policy_problems(policies: Mapping[str, str | None], wanted: str = "compact") -> list[str]:
    """One message per topic whose `cleanup.policy` is not `wanted`, each with the command that fixes it."""
    return [
        f"topic {name} has cleanup.policy={policy}; the processor needs {wanted} (a subject's latest state and "
        f"decision must stay for ever): kafka-configs.sh --bootstrap-server ... --alter --entity-type topics "
        f"--entity-name {name} --add-config cleanup.policy={wanted}"
        for name, policy in sorted(policies.items())
        if policy != wanted
    ]


def empty_changelog(changelog: str, committed: Mapping[int, int], ends: Mapping[int, int]) -> str | None:
    """Why the changelog must have been deleted or re-created, or None: every transaction that commits a
    task's offsets also writes into its changelog partition, so a partition the group committed offsets for
    is never empty."""
    empty = sorted(p for p, offset in committed.items() if offset > 0 and ends.get(p, 0) == 0)
    if not empty:
        return None
    return (
        f"{changelog} is empty in partitions {empty} while the consumer group committed offsets for them: the "
        "changelog was deleted or re-created and the state is lost; starting would decide those records' "
        "subjects again from nothing. To start over on purpose, reset the group's offsets with "
        "kafka-consumer-groups.sh (see 'Starting over' in docs/operations.md) or set "
        "PLACEMENT_ACCEPT_EMPTY_STATE=true for one start"
    )


def emptied_decisions(
    decisions: str, ends: Mapping[int, int], changelog_keys: Iterable[tuple[int, bytes]]
) -> str | None:
    """Why the decisions topic must have been re-created, or None: a changelog entry of a published decision (a
    Placement's `/decision` part, a placed application's `/apps/<id>` part) is written in the transaction that
    publishes the decision, so its partition of the decisions topic is never empty."""
    published: dict[int, str] = {}
    for partition, key, _, part in _subject_keys(changelog_keys):
        if part == "decision" or part.startswith("apps/"):
            published.setdefault(partition, key)
    empty = sorted(p for p in published if ends.get(p, 0) == 0)
    if not empty:
        return None
    return (
        f"{decisions} is empty in partitions {empty} while the changelog holds decisions published there (e.g. "
        f"{published[empty[0]]}): the decisions topic was deleted or re-created and its consumers lost every "
        "decision. Restore it, or start over on purpose (see 'Starting over' in docs/operations.md, or set "
        "PLACEMENT_ACCEPT_EMPTY_STATE=true for one start)"
    )
