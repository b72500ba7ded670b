"""Pass-through ceiling: consume -> produce in a Kafka transaction with no work, records/s.

The processor cannot be faster than this on the same machine and broker, so it is the yardstick for the
placement benchmarks. Usage: `python -m benchmarks.passthrough [--records N] [--partitions P]`.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections import defaultdict

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.coordinator.assignors.range import RangePartitionAssignor

from benchmarks.support import copying_consumer, kafka_broker, percentiles, print_figures

__all__ = ["main", "measure"]


async def _fill(bootstrap: str, topic: str, records: int, size: int) -> float:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=262_144)
    await producer.start()
    payload = b"x" * size
    started = time.perf_counter()
    try:
        futures = [await producer.send(topic, payload, key=f"k{i}".encode()) for i in range(records)]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return records / (time.perf_counter() - started)


async def measure(bootstrap: str, records: int, partitions: int, size: int, batch: int) -> dict[str, float | str]:
    """Fill an input topic, then move it to an output topic in per-partition transactions."""
    run = uuid.uuid4().hex[:8]
    source, sink, group = f"bench-{run}-in", f"bench-{run}-out", f"bench-{run}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(t, partitions, 1) for t in (source, sink)])
    await admin.close()
    produce_rate = await _fill(bootstrap, source, records, size)

    consumer = copying_consumer(bootstrap, source, group, partition_assignment_strategy=(RangePartitionAssignor,))
    producers = {
        p: AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=f"{group}-{p}", linger_ms=5, max_batch_size=262_144
        )
        for p in range(partitions)
    }
    for producer in producers.values():
        await producer.start()
    await consumer.start()
    moved = 0
    commit_times: list[float] = []
    started = None
    try:
        while moved < records:
            batches = await consumer.getmany(timeout_ms=500, max_records=batch)
            if started is None and batches:
                started = time.perf_counter()
            by_partition: dict[int, dict[TopicPartition, list]] = defaultdict(dict)
            for tp, chunk in batches.items():
                by_partition[tp.partition][tp] = chunk
            for partition, chunks in by_partition.items():
                producer = producers[partition]
                t0 = time.perf_counter()
                async with producer.transaction():
                    offsets = {tp: chunk[-1].offset + 1 for tp, chunk in chunks.items()}
                    await producer.send_offsets_to_transaction(offsets, group)
                    futures = [
                        await producer.send(sink, r.value, key=r.key) for chunk in chunks.values() for r in chunk
                    ]
                    await asyncio.gather(*futures)
                commit_times.append(time.perf_counter() - t0)
                moved += sum(len(c) for c in chunks.values())
    finally:
        await consumer.stop()
        for producer in producers.values():
            await producer.stop()
    elapsed = time.perf_counter() - (started or time.perf_counter())
    figures: dict[str, float | str] = {
        "records": records,
        "partitions": partitions,
        "value bytes": size,
        "produce (acks=all) records/s": round(produce_rate),
        "pass-through records/s": round(records / elapsed),
        "transactions": len(commit_times),
    }
    figures.update({f"transaction {k}": v for k, v in percentiles(commit_times).items()})
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--size", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()

    async def run() -> dict[str, float | str]:
        with kafka_broker() as bootstrap:
            return await measure(bootstrap, args.records, args.partitions, args.size, args.batch)

    print_figures("pass-through ceiling (consume -> transactional produce, no work)", asyncio.run(run()))


if __name__ == "__main__":
    main()
