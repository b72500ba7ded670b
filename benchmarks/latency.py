"""Submission to decision latency as a deployer sees it, and where the time goes.

Every party runs in a process of its own, as deployed: the processor (`placement-stream run`), a submitter
producing `application.submitted` at a steady rate, and a read_committed reader of the decisions topic
configured for latency (a small `fetch_max_wait_ms`). The submitter prints when it sent each submission, the
reader when it saw each decision, both on the host's monotonic clock. Per rate the benchmark prints the latency
percentiles and the processor's mean time per stage from its /metrics (`placement_batch_stage_seconds`):

- queued: from a record's timestamp until the loop's poll returned it (produce, broker, fetch, waiting for the
  loop to finish the previous batch);
- inventory: reading the global tables to their end (the inventory barrier), per batch;
- top_up: fetching the subject records that arrived since the poll's fetch, up to the ends the barrier saw;
- engine, send, commit: deciding, sending the outputs into the task transactions, committing them, per batch;
- visible: the rest, from the commit to the reader (the transaction markers, the reader's fetch).

With `--baseline exactly-once` a minimal copier takes the processor's place: per poll and per partition it opens a
transaction, adds the consumed offsets, writes one stand-in decision per submission and commits, with the
processor's poll, fetch and producer settings: exactly-once done the plain way, one round trip after another, and
no placement work. `--baseline at-least-once` copies without transactions (produce, wait for the
acknowledgements, commit the offsets): about what the same machine, broker, submitter and reader cost without
transactions.

Usage: `python -m benchmarks.latency [--rates 100,1000,5000] [--seconds 5] [--repeat 3] [--baseline MODE]` (uses
$KAFKA_BOOTSTRAP_SERVERS when set, else starts a local broker). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from benchmarks.instances import Instance, Samples
from benchmarks.queue_placement import Workload
from benchmarks.support import copying_consumer, kafka_broker, print_table
from streams.kafka.admin import create_topics
from streams.kafka.tasks import TRANSACTION_RETRY_BACKOFF_MS
from streams.settings import KafkaSettings, Settings, TopicNames

__all__ = ["main"]

READY = "ready"
Runs = dict[float, list[dict[str, float]]]
"""Per rate, the figures of each run."""
STAGES = ("queued", "inventory", "top_up", "engine", "send", "commit")
_DECIDED = (b"application.placed", b"application.rejected")


def _workload() -> Workload:
    """The queue benchmark's submissions over 3 task partitions (the submitter and the processor agree on it)."""
    return Workload(records=0, task_partitions=3, keys_per_partition=2, users=200)


# --- child processes ---------------------------------------------------------------------------------------
async def _submit(bootstrap: str, topic: str, *, first: int, count: int, rate: float) -> None:
    """Produce `count` submissions from index `first` at `rate` per second; print `<monotonic> <app id>` each."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, enable_idempotence=True)
    await producer.start()
    try:
        print(READY, flush=True)
        started, sent, pending = time.monotonic(), [], []
        for offset in range(count):
            delay = started + offset / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            key, value = _workload().submission(first + offset)
            sent.append(f"{time.monotonic()} {value['data']['applicationId']}\n")
            pending.append(await producer.send(topic, orjson.dumps(value), key=key.encode()))
        await asyncio.gather(*pending)
        sys.stdout.write("".join(sent))
        sys.stdout.flush()
    finally:
        await producer.stop()


async def _read(bootstrap: str, topic: str, partitions: int) -> None:
    """Read decisions read_committed, as a deployer configured for latency does; print `<monotonic> <app id>`."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, isolation_level="read_committed", fetch_max_wait_ms=5
    )
    await consumer.start()
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    await consumer.seek_to_end(*tps)
    for tp in tps:
        await consumer.position(tp)
    print(READY, flush=True)
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=100)
            at = time.monotonic()
            lines = [
                f"{at} {orjson.loads(r.value)['data']['applicationId']}\n"
                for records in batch.values()
                for r in records
                if r.value is not None and any(kind in r.value[:200] for kind in _DECIDED)
            ]
            if lines:
                sys.stdout.write("".join(lines))
                sys.stdout.flush()
    finally:
        await consumer.stop()


BASELINES = ("exactly-once", "at-least-once")
"""The baseline copier's modes: a transaction per partition and poll, or produce then commit the offsets."""


async def _stand_ins(producer: AIOKafkaProducer, sink: str, partition: int, records: list[Any]) -> list[Any]:
    """Send a stand-in decision per submission to `partition` of `sink`; returns the delivery futures."""
    sent = []
    for record in records:
        app = orjson.loads(record.value or b"{}")["data"]["applicationId"]
        decided = orjson.dumps({"type": _DECIDED[0].decode(), "data": {"applicationId": app}})
        sent.append(await producer.send(sink, decided, key=record.key, partition=partition))
    return sent


async def _copy(bootstrap: str, source: str, sink: str, group: str, mode: str) -> None:
    """The baseline's processor: consume `source` in `group` and copy each polled partition's records to the same
    partition of `sink` as stand-in decisions, in one transaction with the consumed offsets (exactly-once), or
    committing the offsets once the copies are acknowledged (at-least-once)."""
    kafka = KafkaSettings()
    exactly_once = mode == BASELINES[0]
    consumer = copying_consumer(bootstrap, source, group, fetch_max_wait_ms=kafka.fetch_max_wait_ms)
    producers: dict[int, AIOKafkaProducer] = {}
    await consumer.start()
    try:
        while not consumer.assignment():
            await consumer.getmany(timeout_ms=100)
        for tp in consumer.assignment():
            delivery: dict[str, Any] = (
                {"transactional_id": f"{group}-{tp.partition}", "retry_backoff_ms": TRANSACTION_RETRY_BACKOFF_MS}
                if exactly_once
                else {"acks": "all", "enable_idempotence": True}
            )
            producers[tp.partition] = AIOKafkaProducer(
                bootstrap_servers=bootstrap, compression_type=kafka.compression(), linger_ms=0, **delivery
            )
            await producers[tp.partition].start()
        print(READY, flush=True)
        while True:
            polled = await consumer.getmany(timeout_ms=kafka.poll_timeout_ms, max_records=kafka.max_batch_records)
            for tp, records in sorted(polled.items()):
                producer, offsets = producers[tp.partition], {tp: records[-1].offset + 1}
                if exactly_once:
                    async with producer.transaction():
                        await producer.send_offsets_to_transaction(offsets, group)
                        await _stand_ins(producer, sink, tp.partition, records)
                else:
                    await asyncio.gather(*await _stand_ins(producer, sink, tp.partition, records))
                    await consumer.commit(offsets)
    finally:
        for producer in producers.values():
            await producer.stop()
        await consumer.stop()


class _Child:
    """A child process of this module that prints `<monotonic> <app id>` lines after a `ready` line."""

    def __init__(self, *args: str) -> None:
        self._args = args
        self.times: dict[str, float] = {}
        self._process: asyncio.subprocess.Process | None = None
        self._reading: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.latency", *self._args, stdout=asyncio.subprocess.PIPE
        )
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), 60)
        if line.strip().decode() != READY:
            raise RuntimeError(f"benchmark child {self._args[0]} did not start")
        self._reading = asyncio.create_task(self._collect())

    async def _collect(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        async for line in self._process.stdout:
            at, app = line.decode().split()
            self.times[app] = float(at)

    async def wait(self) -> None:
        assert self._process is not None and self._reading is not None
        await self._process.wait()
        await self._reading

    async def stop(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            await self._process.wait()
        if self._reading is not None:
            await self._reading


# --- the measurement -------------------------------------------------------------------------------------
def _stage_sums(samples: Samples) -> dict[str, tuple[float, float]]:
    """(sum, count) per stage, and of the event age (timestamp to commit)."""
    found = {}
    for stage in STAGES:
        key = (("stage", stage),)
        found[stage] = (
            samples.get("placement_batch_stage_seconds_sum", {}).get(key, 0.0),
            samples.get("placement_batch_stage_seconds_count", {}).get(key, 0.0),
        )
    found["age"] = (
        samples.get("placement_event_age_seconds_sum", {}).get((), 0.0),
        samples.get("placement_event_age_seconds_count", {}).get((), 0.0),
    )
    return found


async def _run_rate(
    bootstrap: str,
    settings: Settings,
    instance: Instance | None,
    reader: _Child,
    *,
    first: int,
    count: int,
    rate: float,
) -> dict[str, float]:
    """One rate's percentiles, and the processor's stages (none for the baseline copier, `instance` None)."""
    before = _stage_sums(await instance.samples()) if instance is not None else {}
    submitter = _Child("submit", bootstrap, settings.topics.submissions, str(first), str(count), str(rate))
    await submitter.start()
    await submitter.wait()
    apps = list(submitter.times)
    deadline = time.monotonic() + 60
    while any(app not in reader.times for app in apps):
        if time.monotonic() > deadline:
            missing = sum(app not in reader.times for app in apps)
            raise RuntimeError(f"{missing} of {count} decisions not seen within 60 s")
        await asyncio.sleep(0.05)
    latencies = sorted(reader.times[app] - submitter.times[app] for app in apps)
    after = _stage_sums(await instance.samples()) if instance is not None else {}

    def mean(stage: str) -> float:
        if stage not in after:
            return 0.0
        total, seen = (after[stage][0] - before[stage][0], after[stage][1] - before[stage][1])
        return total / seen if seen else 0.0

    def at(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))]

    figures = {"p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": latencies[-1]}
    figures.update({stage: mean(stage) for stage in STAGES})
    figures["visible"] = statistics.fmean(latencies) - mean("age") if after else 0.0
    figures["batches"] = after["commit"][1] - before["commit"][1] if after else 0.0
    return figures


Load = Callable[[int], contextlib.AbstractAsyncContextManager[object]]
"""Something running beside the measured runs, given the processor's HTTP port (see benchmarks/http_load.py)."""


async def measure(
    bootstrap: str,
    rates: list[float],
    seconds: float,
    repeat: int,
    *,
    baseline: str | None = None,
    source: Path | None = None,
    load: Load | None = None,
    stages: bool = True,
) -> Runs:
    """Per rate, the figures of `repeat` runs: of the processor (run from the checkout `source`, default this one,
    with `load` running beside the runs; its stages read from /metrics unless `stages` is false), or of the
    baseline copier in mode `baseline`."""
    run = uuid.uuid4().hex[:8]
    workload = _workload()
    results: Runs = {rate: [] for rate in rates}
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as folder:
        config = Path(folder) / "queues.yaml"
        config.write_text(workload.queue_config())
        settings = Settings(
            kafka=KafkaSettings(bootstrap_servers=bootstrap, group_id=f"bench-l-{run}", task_partitions=3),
            topics=TopicNames.prefixed(f"bench-l-{run}."),
            queue_config=config,
            log_level="WARNING",
            metrics_max_age_ms=1000 if load else 0,  # the stage sums before and after a run are read fresh
        )
        await create_topics(settings)
        instance = None if baseline else Instance(settings, f"bench-l-{run}-0", source)
        topics = settings.topics
        copier = _Child("copy", bootstrap, topics.submissions, topics.decisions, f"bench-l-{run}", str(baseline))
        reader = _Child("read", bootstrap, settings.topics.decisions, "3")
        try:
            if instance is None:
                await copier.start()
            else:
                await instance.start()
                while not await instance.ready():
                    await asyncio.sleep(0.1)
            await reader.start()
            warm = _Child("submit", bootstrap, settings.topics.submissions, "0", "200", "200")
            await warm.start()
            await warm.wait()
            first = 200
            async with load(instance.port) if load and instance else contextlib.nullcontext():
                for _ in range(repeat):
                    for rate in rates:
                        count = max(1, int(rate * seconds))
                        results[rate].append(
                            await _run_rate(
                                bootstrap,
                                settings,
                                instance if stages else None,
                                reader,
                                first=first,
                                count=count,
                                rate=rate,
                            )
                        )
                        first += count
        finally:
            await reader.stop()
            await copier.stop()
            if instance is not None:
                await instance.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="100,1000,5000", help="submissions per second, comma-separated")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of submissions per rate and run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per rate (medians are printed)")
    parser.add_argument("--baseline", choices=BASELINES, help="a minimal copier in this mode instead of the processor")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    with kafka_broker() as bootstrap:
        results = asyncio.run(measure(bootstrap, rates, args.seconds, args.repeat, baseline=args.baseline))
    percentiles = ("p50", "p90", "p99", "max")
    columns = percentiles if args.baseline else (*percentiles, *STAGES, "visible")
    counted = () if args.baseline else ("batches",)
    rows = []
    for rate, runs in results.items():
        median = {name: statistics.median(run[name] for run in runs) for name in (*columns, *counted)}
        cells = [f"{median[name] * 1000:.1f}" for name in columns] + [f"{median[name]:.0f}" for name in counted]
        rows.append([f"{rate:.0f}/s", *cells])
    who = f"a minimal {args.baseline} copier (a baseline)" if args.baseline else "the processor; stages are means"
    print_table(
        f"submission -> decision visible through {who} (ms, medians of {args.repeat} runs of {args.seconds:g} s)",
        ("rate", *columns, *counted),
        rows,
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("submit", "read", "copy"):
        command, bootstrap, topic, *rest = sys.argv[1:]
        if command == "copy":
            asyncio.run(_copy(bootstrap, topic, rest[0], rest[1], rest[2]))
        elif command == "read":
            asyncio.run(_read(bootstrap, topic, int(rest[0])))
        else:
            first, count, rate = int(rest[0]), int(rest[1]), float(rest[2])
            asyncio.run(_submit(bootstrap, topic, first=first, count=count, rate=rate))
    else:
        main()
