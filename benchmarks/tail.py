"""A read_committed reader of one topic in its own process, as a deployer would run it.

Decoding tens of megabytes of decisions in the benchmark's own event loop would slow the processor it
measures, so the reader is a child process. It prints one line per record, `<time.monotonic()> <key>`
(the monotonic clock is shared by all processes on the host), and the benchmark reads the lines.

Child: `python -m benchmarks.tail BOOTSTRAP TOPIC PARTITIONS`.
"""

from __future__ import annotations

import asyncio
import sys
import time

from aiokafka import AIOKafkaConsumer, TopicPartition

__all__ = ["TopicTail"]

READY = "ready"


class TopicTail:
    """Starts the child reader and collects (arrival instant, key) of every record it reports."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self._args = (bootstrap, topic, str(partitions))
        self.arrivals: list[tuple[float, str]] = []
        self.keys: set[str] = set()
        self._process: asyncio.subprocess.Process | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Start the child and wait until it reads from the beginning of every partition."""
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.tail", *self._args, stdout=asyncio.subprocess.PIPE
        )
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), 60)
        if line.decode().strip() != READY:
            raise RuntimeError(f"the tail process did not start: {line!r}")
        self._task = asyncio.create_task(self._collect())

    async def _collect(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        async for line in self._process.stdout:
            at, _, key = line.decode().rstrip("\n").partition(" ")
            self.keys.add(key)
            self.arrivals.append((float(at), key))

    async def stop(self) -> None:
        """Stop the child."""
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            await self._process.wait()
        if self._task is not None:
            self._task.cancel()


async def _read(bootstrap: str, topic: str, partitions: int) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        isolation_level="read_committed",
        enable_auto_commit=False,
        fetch_max_wait_ms=20,
        max_partition_fetch_bytes=16 * 1024 * 1024,
    )
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    await consumer.seek_to_beginning(*tps)
    print(READY, flush=True)
    out = sys.stdout
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=50, max_records=5000)
            at = time.monotonic()
            lines = [
                f"{at} {record.key.decode()}\n"
                for records in batch.values()
                for record in records
                if record.key is not None and record.value is not None
            ]
            if lines:
                out.write("".join(lines))
                out.flush()
    finally:
        await consumer.stop()


if __name__ == "__main__":
    asyncio.run(_read(sys.argv[1], sys.argv[2], int(sys.argv[3])))
