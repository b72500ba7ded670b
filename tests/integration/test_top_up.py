"""A polled batch is topped up to the subject ends the barrier saw, never past them (streams/kafka/top_up.py)."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import NewTopic
from kafka_support import KafkaWorld, admin_client

from streams.kafka.top_up import _positions, top_up

pytestmark = pytest.mark.integration

SENT = {0: 5, 1: 3}
"""Records per partition on the topic, offsets 0.."""

CASES = [
    # (name, records polled first from partition 0, ends, max_records, taken per partition, next poll per partition)
    ("up to the ends", 0, {0: 3, 1: 3}, 100, {0: [0, 1, 2], 1: [0, 1, 2]}, {0: [3, 4], 1: []}),
    ("after a poll", 2, {0: 4, 1: 2}, 100, {0: [0, 1, 2, 3], 1: [0, 1]}, {0: [4], 1: [2]}),
    ("nothing past the poll", 2, {0: 2, 1: 0}, 100, {0: [0, 1], 1: []}, {0: [2, 3, 4], 1: [0, 1, 2]}),
    ("at most max_records", 1, {0: 5, 1: 3}, 3, None, None),
]


@pytest.mark.parametrize(("name", "polled", "ends", "max_records", "taken", "after"), CASES, ids=[c[0] for c in CASES])
async def test_top_up(
    world: KafkaWorld,
    name: str,
    polled: int,
    ends: dict[int, int],
    max_records: int,
    taken: dict[int, list[int]] | None,
    after: dict[int, list[int]] | None,
) -> None:
    topic = f"t{world.run_id}.topup"
    async with admin_client(world.bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, len(SENT), 1)])
    await _produce(world, topic)
    consumer = AIOKafkaConsumer(bootstrap_servers=world.bootstrap, isolation_level="read_committed")
    await consumer.start()
    try:
        tps = {p: TopicPartition(topic, p) for p in SENT}
        consumer.assign(list(tps.values()))
        await consumer.seek_to_beginning(*tps.values())
        first = await consumer.getmany(tps[0], timeout_ms=5000, max_records=polled) if polled else {}
        batch = await top_up(
            consumer, first, {tps[p]: end for p, end in ends.items()}, max_records=max_records, timeout=5.0
        )
        got = {p: [r.offset for r in batch.get(tp, [])] for p, tp in tps.items()}
        if taken is None:  # only the count is fixed: which partition fills the room first is the broker's
            assert sum(map(len, got.values())) == max_records
            assert got[0][:polled] == list(range(polled))
        else:
            assert got == taken
        rest = {p: [] for p in tps}
        for _ in range(5):
            for tp, records in (await consumer.getmany(timeout_ms=300)).items():
                rest[tp.partition].extend(r.offset for r in records)
        if after is None:  # nothing lost, nothing twice
            for p in tps:
                assert sorted(got[p] + rest[p]) == list(range(SENT[p]))
        else:
            assert rest == after
    finally:
        await consumer.stop()


async def _produce(world: KafkaWorld, topic: str, sent: dict[int, int] = SENT) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=world.bootstrap, acks="all")
    await producer.start()
    try:
        for partition, count in sent.items():
            for n in range(count):
                await producer.send_and_wait(topic, f"{partition}-{n}".encode(), partition=partition)
    finally:
        await producer.stop()


async def test_positions_not_known_in_time_leave_the_batch_as_polled(world: KafkaWorld) -> None:
    """A partition still being reset needs an offsets request, which never ends while the broker is away: the
    top-up does not wait for it."""
    topic = f"t{world.run_id}.topup"
    async with admin_client(world.bootstrap) as admin:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    await _produce(world, topic, {0: 2})
    consumer = AIOKafkaConsumer(bootstrap_servers=world.bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])  # no position yet: the fetcher resets it in the background
        assert await _positions(consumer, {tp: 2}, 0.0) == {}
        assert await _positions(consumer, {tp: 2}, 5.0) == {tp: 0}
    finally:
        await consumer.stop()
