"""Queue placement (YuniKorn placement rules) throughput and latency: replay, then Kafka, against the ceiling.

1. replay: N `application.submitted` lines through the in-memory Replayer (one line = one batch, as
   `placement-stream replay` does), output discarded;
2. Kafka: the N submissions pre-produced over several YuniKorn partitions (keys `Application/<name>`,
   names picked so every task partition gets the same number of keys), a Processor started in this
   process; placements/s is timed as the pass-through is, from the first batch received to the last
   transaction committed; also the time from its becoming ready until all N decisions are visible to a
   read_committed consumer (running in a thread of this process);
3. decision latency (last run): after the backlog, submissions produced at a steady rate well below the
   measured throughput; per record, from the submission's produce timestamp to its decision being visible;
4. the pass-through ceiling (benchmarks.passthrough) with the same N, task partitions and value size, run
   alternately with 2. (`--repeat` times each, medians compared, as single runs on a 2-core machine
   vary by a third), and the ratio of Kafka placements/s to pass-through records/s;
5. peak RSS of this process.

Applications never complete here, so every YuniKorn partition's state grows to N/keys active applications.
Figures are printed, never asserted. Usage: `python -m benchmarks.queue_placement [--records N]
[--partitions P] [--keys-per-partition K] [--users U] [--repeat R] [--no-kafka] [--profile]`
(uses $KAFKA_BOOTSTRAP_SERVERS when set, else starts a local broker).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from benchmarks import passthrough
from benchmarks.support import kafka_broker, peak_rss_mib, percentiles, print_figures
from streams.kafka.admin import create_topics
from streams.kafka.tasks import partition_of
from streams.replay import Replayer
from streams.service import Processor
from streams.settings import KafkaSettings, Settings, TopicNames

__all__ = ["Workload", "main"]

_PLACED = b"application.placed"
_REJECTED = b"application.rejected"


@dataclass(frozen=True)
class Workload:
    """N submissions spread round-robin over YuniKorn partitions that cover every task partition."""

    records: int
    task_partitions: int
    keys_per_partition: int
    users: int
    partitions: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        wanted = dict.fromkeys(range(self.task_partitions), self.keys_per_partition)
        names: list[str] = []
        candidate = 0
        while any(wanted.values()):
            name = f"p{candidate}"
            task = partition_of(f"Application/{name}", self.task_partitions)
            if wanted[task]:
                wanted[task] -= 1
                names.append(name)
            candidate += 1
        object.__setattr__(self, "partitions", tuple(names))

    def queue_config(self) -> str:
        """Every partition: provided (create false), then user below root.users (create true)."""
        partition = """  - name: {name}
    placementrules:
      - name: provided
        create: false
      - name: user
        create: true
        parent:
          name: fixed
          value: root.users
    queues:
      - name: root
        submitacl: " devs"
        queues:
          - name: default
          - name: users
            parent: true
"""
        return "partitions:\n" + "".join(partition.format(name=name) for name in self.partitions)

    def submission(self, index: int, time: str = "2026-01-01T00:00:00Z") -> tuple[str, dict[str, Any]]:
        """(record key, CloudEvent) of the index-th submission; every 10th asks for root.default by name."""
        name = self.partitions[index % len(self.partitions)]
        data = {
            "applicationId": f"app-{index}",
            "partition": name,
            "user": f"user{index % self.users}",
            "groups": ["devs"],
            "queue": "root.default" if index % 10 == 0 else "",
            "tags": {"namespace": f"ns{index % 7}"},
        }
        value = {
            "specversion": "1.0",
            "id": f"sub-{index}",
            "source": "/benchmarks/queue-placement",
            "type": "application.submitted.v1",
            "datacontenttype": "application/json",
            "time": time,
            "subject": f"Application/{name}",
            "data": data,
        }
        return f"Application/{name}", value

    def lines(self) -> Iterator[bytes]:
        """Replay input: one submission per line."""
        for index in range(self.records):
            key, value = self.submission(index)
            yield orjson.dumps({"topic": "submissions", "key": key, "value": value})


class _Discard(io.RawIOBase):
    """A binary sink that drops everything (Replayer writes and flushes per record)."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return len(data)


# --- 1. replay ---------------------------------------------------------------------------------------
def measure_replay(workload: Workload, config: Path) -> dict[str, float | str]:
    """Placements/s through the Replayer, one line per batch."""
    replayer = Replayer(Settings(http_port=0), _Discard(), queue_config=config)  # type: ignore[arg-type]
    lines = list(workload.lines())
    started = time.perf_counter()
    bad = replayer.run(lines)
    elapsed = time.perf_counter() - started
    return {
        "replay placements/s": round(workload.records / elapsed),
        "replay seconds": f"{elapsed:.2f}",
        "replay bad lines": bad,
    }


# --- 2./3. Kafka -------------------------------------------------------------------------------------
class DecisionWatch:
    """A read_committed consumer of the decisions topic in its own thread and event loop: when each
    application's decision became visible (wall clock), keyed by application id."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        self.seen: dict[str, float] = {}
        self.rejected = 0
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the decision watcher did not start")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    async def _run(self) -> None:
        consumer = AIOKafkaConsumer(
            self._topic,
            bootstrap_servers=self._bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            enable_auto_commit=False,
        )
        try:
            await consumer.start()
            self._ready.set()
            while not self._stop.is_set():
                batch = await consumer.getmany(timeout_ms=50, max_records=5000)
                now = time.time()
                for chunk in batch.values():
                    for record in chunk:
                        if record.value is None:
                            continue
                        if _PLACED not in record.value and _REJECTED not in record.value:
                            continue
                        value = orjson.loads(record.value)
                        self.seen[value["data"]["applicationId"]] = now
                        self.rejected += value["type"].startswith("application.rejected")
        except BaseException as exc:  # reported by the main thread
            self.error = exc
            self._ready.set()
        finally:
            await consumer.stop()

    async def wait_for(self, count: int, timeout: float) -> float:
        """Wall-clock time when `count` decisions had been seen."""
        deadline = time.monotonic() + timeout
        while len(self.seen) < count:
            if self.error is not None:
                raise RuntimeError(f"decision watcher failed: {self.error}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(self.seen)} of {count} decisions visible after {timeout} s")
            await asyncio.sleep(0.005)
        return max(self.seen.values())


async def _produce(
    bootstrap: str, topic: str, items: list[tuple[str, dict[str, Any]]], rate: float | None = None
) -> dict[str, float]:
    """Send the items (paced at `rate` per second when given); the produce timestamp (s) per app id."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, max_batch_size=262_144)
    await producer.start()
    produced: dict[str, float] = {}
    try:
        started = time.monotonic()
        futures = []
        for index, (key, value) in enumerate(items):
            if rate is not None:
                delay = started + index / rate - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            stamp = int(time.time() * 1000)
            produced[value["data"]["applicationId"]] = stamp / 1000
            futures.append(await producer.send(topic, orjson.dumps(value), key=key.encode(), timestamp_ms=stamp))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return produced


async def measure_kafka(
    bootstrap: str, workload: Workload, config: Path, profile: cProfile.Profile | None, *, latency: bool = True
) -> dict[str, float | str]:
    run = uuid.uuid4().hex[:8]
    settings = Settings(
        kafka=KafkaSettings(
            bootstrap_servers=bootstrap, group_id=f"bench-q-{run}", task_partitions=workload.task_partitions
        ),
        topics=TopicNames.prefixed(f"bench-q-{run}."),
        queue_config=config,
        http_port=0,
        log_level="WARNING",
    )
    await create_topics(settings)
    backlog = [workload.submission(i) for i in range(workload.records)]
    produce_started = time.perf_counter()
    await _produce(bootstrap, settings.topics.submissions, backlog)
    produce_rate = workload.records / (time.perf_counter() - produce_started)

    watch = DecisionWatch(bootstrap, settings.topics.decisions)
    watch.start()
    processor = Processor(settings)
    if profile is not None:
        profile.enable()
    task = asyncio.create_task(processor.run())
    try:
        while not processor.ready:  # tables caught up, group joined, tasks restored: processing starts
            if task.done():
                task.result()
            await asyncio.sleep(0.001)
        started = time.time()
        last_visible = await watch.wait_for(workload.records, timeout=600)
        if profile is not None:
            profile.disable()
        elapsed = last_visible - started
        assert processor.progress.first_batch_at is not None
        throughput = workload.records / (processor.progress.last_commit_at - processor.progress.first_batch_at)
        batches = processor.progress.batches_done
        rss_after_backlog = peak_rss_mib()

        # 3. latency at a steady rate well below the throughput
        rate = max(50.0, min(1000.0, throughput / 4))
        count = int(rate * 4) if latency else 0
        paced = [workload.submission(workload.records + i) for i in range(count)]
        produced = await _produce(bootstrap, settings.topics.submissions, paced, rate=rate) if paced else {}
        await watch.wait_for(workload.records + count, timeout=120)
        latencies = [watch.seen[app] - at for app, at in produced.items()]
    finally:
        processor.request_stop()
        await asyncio.wait_for(task, 60)
        watch.stop()
    figures: dict[str, float | str] = {
        "produce (acks=all) records/s": round(produce_rate),
        "kafka placements/s": round(throughput),
        "kafka seconds (ready -> last decision visible)": f"{elapsed:.2f}",
        "kafka batches": batches,
        "kafka records per batch": round(workload.records / max(1, batches)),
        "kafka rejected": watch.rejected,
        "peak RSS after backlog (MiB)": round(rss_after_backlog),
    }
    if latencies:
        figures[f"latency at {rate:.0f} submissions/s, records"] = count
        figures.update({f"latency {k}": v for k, v in percentiles(latencies).items()})
    return figures


# --- main ---------------------------------------------------------------------------------------------
def _print_profile(profile: cProfile.Profile) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(25)
    print(out.getvalue())


def value_size(workload: Workload) -> int:
    """The mean bytes of a submission's value: the pass-through moves records of this size."""
    return round(sum(len(orjson.dumps(workload.submission(i)[1])) for i in range(100)) / 100)


async def against_ceiling(
    bootstrap: str,
    workload: Workload,
    config: Path,
    repeat: int,
    *,
    batch: int = 1000,
    profile: cProfile.Profile | None = None,
    latency: bool = True,
) -> tuple[list[float], list[float], dict[str, float | str]]:
    """Kafka placements/s and the pass-through ceiling (same records, task partitions and value size) run
    alternately `repeat` times on one broker: (placements/s per run, ceiling records/s per run, the last Kafka
    run's figures, with its latency when `latency`)."""
    placements: list[float] = []
    ceilings: list[float] = []
    kafka: dict[str, float | str] = {}
    for attempt in range(repeat):
        last = attempt == repeat - 1
        kafka = await measure_kafka(bootstrap, workload, config, profile if last else None, latency=latency and last)
        placements.append(float(kafka["kafka placements/s"]))
        ceiling = await passthrough.measure(
            bootstrap, workload.records, workload.task_partitions, value_size(workload), batch
        )
        ceilings.append(float(ceiling["pass-through records/s"]))
    return placements, ceilings, kafka


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=3, help="task partitions (Kafka topic partitions)")
    parser.add_argument("--keys-per-partition", type=int, default=2, help="YuniKorn partitions per task partition")
    parser.add_argument("--users", type=int, default=200, help="distinct users (dynamic queues per partition)")
    parser.add_argument("--batch", type=int, default=1000, help="pass-through batch size (= max_batch_records)")
    parser.add_argument("--repeat", type=int, default=3, help="Kafka and pass-through runs, alternating")
    parser.add_argument("--no-kafka", action="store_true", help="only the replay figure")
    parser.add_argument("--profile", action="store_true", help="cProfile the in-process processor (Kafka phase)")
    args = parser.parse_args()
    workload = Workload(args.records, args.partitions, args.keys_per_partition, args.users)

    with tempfile.TemporaryDirectory(prefix="bench-queues-") as scratch:
        config = Path(scratch) / "queues.yaml"
        config.write_text(workload.queue_config())
        figures: dict[str, float | str] = {
            "records": workload.records,
            "task partitions": workload.task_partitions,
            "yunikorn partitions": len(workload.partitions),
            "users": workload.users,
            "value bytes": value_size(workload),
        }
        profile = cProfile.Profile() if args.profile else None

        async def run() -> None:
            with kafka_broker() as bootstrap:
                placements, ceilings, kafka = await against_ceiling(
                    bootstrap, workload, config, args.repeat, batch=args.batch, profile=profile
                )
            figures.update(kafka)
            figures["kafka placements/s"] = round(statistics.median(placements))
            figures["kafka placements/s, each run"] = " ".join(str(round(x)) for x in placements)
            figures["pass-through records/s"] = round(statistics.median(ceilings))
            figures["pass-through records/s, each run"] = " ".join(str(round(x)) for x in ceilings)
            figures["kafka placements/s / pass-through records/s (medians)"] = (
                f"{statistics.median(placements) / statistics.median(ceilings):.2f}"
            )

        if not args.no_kafka:
            asyncio.run(run())
        figures.update(measure_replay(workload, config))
        figures["peak RSS (MiB)"] = round(peak_rss_mib())
    print_figures("queue placement (YuniKorn rules): replay, Kafka with transactions, pass-through ceiling", figures)
    if profile is not None:
        _print_profile(profile)


if __name__ == "__main__":
    main()
