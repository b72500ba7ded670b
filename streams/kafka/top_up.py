"""Topping a polled batch up with the subject records that arrived while the previous batch was processed.

aiokafka fetches a broker's partitions again only once everything it fetched from them was consumed, so what
a poll returns was fetched right after the previous poll: a record produced while that batch was decided and
committed waited for the next poll to fetch it and for a whole further batch to be returned. The barrier now
also asks the subject partitions' ends, just before the tables', and the batch takes what lies below them before
it is decided. Only records below those ends are taken: they were produced before the tables' ends were taken,
so the inventory barrier covers them as it covers the polled ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.kafka.clients import Records

__all__ = ["TOP_UP_SECONDS", "top_up"]

TOP_UP_SECONDS = 0.01
"""How long a batch waits for records known to be there. They are on the broker already, so one fetch round
trip brings them; past this the batch goes on with what it has and the rest comes with the next poll."""


async def top_up(
    consumer: AIOKafkaConsumer,
    polled: Records,
    ends: Mapping[TopicPartition, int],
    *,
    max_records: int,
    timeout: float = TOP_UP_SECONDS,
) -> Records:
    """`polled` plus the records of each assigned partition from its position up to its end in `ends`, at
    most `max_records` in all. A record fetched at or past its partition's end is not taken: the partition
    is positioned back at the end, so the next poll fetches it again."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    batch = {tp: list(records) for tp, records in polled.items()}
    room = max_records - sum(len(records) for records in batch.values())
    started: dict[TopicPartition, int] = {}
    """Where each topped-up partition stood, to go back to if a fetch fails: the caller rewinds only what
    it polled."""
    try:
        while room > 0 and (left := deadline - loop.time()) > 0:
            positions = await _positions(consumer, ends, left)
            pending = [tp for tp, at in positions.items() if at < ends[tp]]
            if not pending:
                break
            for tp in pending:
                started.setdefault(tp, positions[tp])
            fetched = await consumer.getmany(*pending, timeout_ms=max(1, int(left * 1000)), max_records=room)
            for tp, records in fetched.items():
                end = ends[tp]
                taken = [r for r in records if r.offset < end]
                if len(taken) < len(records) and tp in consumer.assignment():
                    consumer.seek(tp, end)
                if taken:
                    batch.setdefault(tp, []).extend(taken)
                    room -= len(taken)
    except BaseException:
        assigned = consumer.assignment()
        for tp, at in started.items():
            if tp in assigned:
                consumer.seek(tp, at)
        raise
    return batch


async def _positions(
    consumer: AIOKafkaConsumer, ends: Mapping[TopicPartition, int], within: float
) -> dict[TopicPartition, int]:
    """The positions of the assigned partitions among `ends`, or none if they are not all known within `within`
    seconds: a partition being reset waits for an offsets request, which waits for ever while the broker is
    away."""
    assigned = consumer.assignment()
    wanted = [tp for tp in ends if tp in assigned]
    try:
        found = await asyncio.wait_for(asyncio.gather(*(consumer.position(tp) for tp in wanted)), within)
    except TimeoutError:
        return {}
    return dict(zip(wanted, found, strict=True))
