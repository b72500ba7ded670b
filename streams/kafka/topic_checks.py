"""The start checks of the state topics (platform P14): refuse what would decide silently from lost or
misplaced state.

Before topics are created: a changelog or decisions topic that is missing while the consumer group has
committed offsets was deleted, and creating it empty would lose the state. Once they exist: the topics that
keep state must be compacted; a changelog partition the group committed offsets for must not be empty; and the
changelog's partition markers and the keys at the head and tail of every changelog and decisions partition
must agree with the partition count. Each refusal is a `TopicRefusal` whose message names the topic, the
setting and the fix; `setup_topics` logs it once and checks again every few seconds.

The reads are bounded: one offsets request per topic, the first and the last `SAMPLE_RECORDS` records of each
partition, one describe-configs request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from streams.errors import TopicRefusal
from streams.kafka.access import OPERATION_CODES, topic_operations
from streams.kafka.clients import loose_producer
from streams.kafka.retry import kafka_retrying
from streams.kafka.tables import new_reader
from streams.kafka.topology import (
    MARKER_VALUE,
    emptied_decisions,
    empty_changelog,
    history_problem,
    is_partitions_marker,
    misplaced,
    partitions_marker,
    placing_counts,
    policy_problems,
    recorded_counts,
)
from streams.settings import Settings
from topics.names import TOPIC_SPECS

__all__ = ["SAMPLE_RECORDS", "check_state_topics", "committed_offsets", "refuse_lost_topics"]

log = logging.getLogger("placement.admin")

SAMPLE_RECORDS = 64
"""Records read at each end of a partition to check where its keys were placed."""
_UNKNOWN_TOPIC = 3
_TOPIC_AUTHORIZATION_FAILED = 29
_READ_SECONDS = 30.0
_FETCH_BYTES = 64 * 1024


async def committed_offsets(settings: Settings, admin: AIOKafkaAdminClient) -> dict[int, int]:
    """The group's highest committed offset per partition number of the subject topics (none: no entry)."""
    names = settings.topics
    subject_topics = {names.submissions, names.advisor_recommendations}
    async for attempt in kafka_retrying():  # the coordinator is not known yet on a new cluster
        with attempt:
            offsets = await admin.list_consumer_group_offsets(settings.kafka.group_id)
    committed: dict[int, int] = {}
    for tp, meta in offsets.items():
        if tp.topic in subject_topics and meta.offset > 0:
            committed[tp.partition] = max(committed.get(tp.partition, 0), meta.offset)
    return committed


async def refuse_lost_topics(settings: Settings, admin: AIOKafkaAdminClient, committed: Mapping[int, int]) -> None:
    """Before the missing topics are created: refuse when the changelog or decisions topic is missing although
    the group has committed offsets (it was deleted; an empty one would start from nothing)."""
    if not committed or settings.accept_empty_state:
        return
    names = settings.topics
    answers = await topic_operations(admin, [names.changelog, names.decisions])
    missing = sorted(name for name, (code, _) in answers.items() if code == _UNKNOWN_TOPIC)
    if missing:
        raise TopicRefusal(
            f"topic {', '.join(missing)} does not exist while the consumer group {settings.kafka.group_id} has "
            f"committed offsets: it was deleted, and creating it empty would lose the state and decide subjects "
            "again from nothing. Restore it, or start over on purpose (see 'Starting over' in "
            "docs/operations.md: reset the group's offsets, or set PLACEMENT_ACCEPT_EMPTY_STATE=true for one start)"
        )


async def check_state_topics(
    settings: Settings, admin: AIOKafkaAdminClient, counts: Mapping[str, int], committed: Mapping[int, int]
) -> None:
    """Once the topics exist (`counts`: name -> partitions): cleanup policies, an emptied changelog, the
    partition count the state was built with; then mark the changelog partitions still empty with the count."""
    names = settings.topics
    await _check_policies(
        admin, [settings.topics.name(r) for r, s in TOPIC_SPECS.items() if s.cleanup_policy == "compact"]
    )
    count = counts[names.changelog]
    # short waits and small fetches: only a few records of each partition are wanted (the broker still
    # returns a whole first batch, however large)
    reader = new_reader(
        settings.kafka,
        f"{settings.kafka.client_id}-check",
        fetch_max_wait_ms=5,
        retry_backoff_ms=20,
        max_partition_fetch_bytes=_FETCH_BYTES,
    )
    await reader.start()
    try:
        changelog = [TopicPartition(names.changelog, p) for p in range(count)]
        decisions = [TopicPartition(names.decisions, p) for p in range(counts[names.decisions])]
        starts, ends = await asyncio.wait_for(
            asyncio.gather(reader.beginning_offsets(changelog + decisions), reader.end_offsets(changelog + decisions)),
            _READ_SECONDS,
        )
        if not settings.accept_empty_state:
            problem = empty_changelog(names.changelog, committed, {tp.partition: ends[tp] for tp in changelog})
            if problem:
                raise TopicRefusal(problem)
        readable = decisions if await _may_read(admin, names.decisions) else []
        sampled = await _sample(reader, changelog + readable, starts, ends)
    finally:
        await reader.stop()
    keys = {
        topic: [(tp.partition, key) for tp, key in sampled if tp.topic == topic]
        for topic in (names.changelog, names.decisions)
    }
    emptied = emptied_decisions(names.decisions, {tp.partition: ends[tp] for tp in decisions}, keys[names.changelog])
    if emptied and not settings.accept_empty_state:
        raise TopicRefusal(emptied)
    markers = recorded_counts((p, key) for p, key in keys[names.changelog] if is_partitions_marker(key))
    wrong = [m for topic, found in keys.items() for m in misplaced(topic, found, count)]
    fitting = placing_counts(keys[names.changelog] + keys[names.decisions]) if wrong else []
    problem = history_problem(names.changelog, count, markers, wrong, fitting)
    if problem:
        raise TopicRefusal(problem)
    await _mark(settings, [tp.partition for tp in changelog if ends[tp] == 0], count)


async def _may_read(admin: AIOKafkaAdminClient, topic: str) -> bool:
    """Whether this principal may read `topic`: the processor's least privilege writes decisions without reading
    them, and then their placement is judged by the changelog's alone."""
    code, operations = (await topic_operations(admin, [topic])).get(topic, (0, -1))
    if code == 0 and (operations < 0 or operations & (1 << OPERATION_CODES["Read"])):
        return True
    log.info("the decisions' key placement is not checked: this principal may not read them", extra={"topic": topic})
    return False


async def _check_policies(admin: AIOKafkaAdminClient, names: Sequence[str]) -> None:
    """Refuse a compacted topic whose cleanup.policy is not compact; a broker that will not describe a topic's
    configs to this principal is said once as a warning (DescribeConfigs is not among the processor's grants)."""
    resources = [ConfigResource(ConfigResourceType.TOPIC, name, {"cleanup.policy": None}) for name in names]
    responses: list[Any] = await admin.describe_configs(resources)
    policies: dict[str, str | None] = {}
    denied = []
    for response in responses:
        for code, _message, _type, name, entries, *_ in response.resources:
            if code == _TOPIC_AUTHORIZATION_FAILED:
                denied.append(name)
            elif code == 0:
                policies[name] = next((str(e[1]) for e in entries if e[0] == "cleanup.policy"), None)
    if denied:
        log.warning(
            "cannot check the cleanup.policy of topics (grant DescribeConfigs on them to have it checked)",
            extra={"topics": sorted(denied)},
        )
    problems = policy_problems(policies)
    if problems:
        raise TopicRefusal("; ".join(problems))


async def _sample(
    reader: AIOKafkaConsumer,
    partitions: Sequence[TopicPartition],
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
) -> list[tuple[TopicPartition, bytes]]:
    """The keys of the first and last `SAMPLE_RECORDS` records of each partition (below its end)."""
    head = {tp: (starts[tp], min(ends[tp], starts[tp] + SAMPLE_RECORDS)) for tp in partitions}
    tail = {tp: (max(head[tp][1], ends[tp] - SAMPLE_RECORDS), ends[tp]) for tp in partitions}
    return await _read_ranges(reader, head) + await _read_ranges(reader, tail)


async def _read_ranges(
    reader: AIOKafkaConsumer, ranges: Mapping[TopicPartition, tuple[int, int]]
) -> list[tuple[TopicPartition, bytes]]:
    wanted = {tp: span for tp, span in ranges.items() if span[0] < span[1]}
    if not wanted:
        return []
    reader.assign(list(wanted))
    for tp, (start, _) in wanted.items():
        reader.seek(tp, start)
    keys: list[tuple[TopicPartition, bytes]] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _READ_SECONDS
    pending = set(wanted)
    while pending:
        if loop.time() > deadline:
            raise TimeoutError(f"reading {sorted(map(str, pending))} took longer than {_READ_SECONDS}s")
        batches = await reader.getmany(*pending, timeout_ms=200, max_records=SAMPLE_RECORDS * 4)
        for tp, records in batches.items():
            keys += [(tp, r.key) for r in records if r.key is not None and r.offset < wanted[tp][1]]
        for tp in list(pending):
            if await reader.position(tp) >= wanted[tp][1]:
                pending.discard(tp)
    return keys


async def _mark(settings: Settings, partitions: Sequence[int], count: int) -> None:
    """Write the count's marker at the head of each empty changelog partition (see topology.py)."""
    if not partitions:
        return
    producer = loose_producer(settings.kafka)
    await producer.start()
    try:
        key = partitions_marker(count)
        sent = [await producer.send(settings.topics.changelog, MARKER_VALUE, key=key, partition=p) for p in partitions]
        await asyncio.wait_for(asyncio.gather(*sent), _READ_SECONDS)
    finally:
        await producer.stop()
    log.info(
        "changelog partitions marked with the partition count", extra={"partitions": list(partitions), "count": count}
    )
