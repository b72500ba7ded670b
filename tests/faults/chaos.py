"""The moving parts of a fault run: `placement-stream run` processes that can be SIGKILLed and restarted, the
producer that records what it sent (the replay input), a read_committed watcher of the decisions topic and
broker stops.

Everything is black-box: processes are configured only through PLACEMENT_* variables and watched only through
their HTTP endpoint and the topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError
from prometheus_client.parser import text_string_to_metric_families

from localbroker.broker import BrokerError, LocalBroker
from localbroker.procs import free_ports
from streams.http import http_get
from streams.settings import TopicNames
from tests.faults.workload import BARRIER_CLUSTER, Item

__all__ = ["DecisionWatch", "Feeder", "Replica", "kill_broker", "restart_broker"]


def _command() -> list[str]:
    """The installed console script next to this interpreter, as an operator runs it."""
    script = Path(sys.executable).parent / "placement-stream"
    return [str(script), "run"] if script.exists() else [sys.executable, "-m", "streams", "run"]


class Replica:
    """One instance slot: the same static group member id across restarts, a fresh process (and port) each start."""

    def __init__(self, env: dict[str, str], slot: int, member_id: str, workdir: Path) -> None:
        self.slot = slot
        self.member_id = member_id
        self.command = _command()
        """What the next start runs: this checkout's processor, or an earlier release's (upgrade runs)."""
        self._env = {**os.environ, **env, "PLACEMENT_KAFKA__GROUP_INSTANCE_ID": member_id}
        self._workdir = workdir / f"slot{slot}"
        self._workdir.mkdir(parents=True, exist_ok=True)
        self.log = workdir / f"slot{slot}.log"
        self.port = 0
        self.process: asyncio.subprocess.Process | None = None
        self.started_at = 0.0
        self.was_ready = False
        """/readyz answered 200 since the last start: an HTTP endpoint that stops answering is busy, not starting."""
        self.exits: list[str] = []
        """Processes that ended on their own (not killed or stopped by the harness): exit code and the last error
        they logged."""

    async def start(self) -> None:
        self.port = free_ports(1)[0]
        # `phase` reads the counters as they are at the moment it asks, not a page rendered up to a second before
        env = {**self._env, "PLACEMENT_HTTP_PORT": str(self.port), "PLACEMENT_METRICS_MAX_AGE_MS": "0"}
        if self.command != _command():  # an earlier release runs its own installed code, never this checkout's
            env.pop("PYTHONPATH", None)
        with self.log.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                *self.command, env=env, cwd=self._workdir, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log
            )
        self.started_at = time.monotonic()
        self.was_ready = False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def kill(self) -> None:
        """SIGKILL, as a node failure or an OOM kill does."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()

    async def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM and wait: the exit code (None if it had to be killed)."""
        process = self.process
        if process is None or process.returncode is not None:
            return None if process is None else process.returncode
        process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            await self.kill()
            return None

    async def revive(self) -> bool:
        """Restart the process if it ended on its own, as a supervisor would; True if it had."""
        if self.process is None or self.process.returncode is None:
            return False
        self.exits.append(f"slot {self.slot} exit {self.process.returncode}: {self.last_error()}")
        await self.start()
        return True

    def last_error(self) -> str:
        """Why a process ended: the exception of a traceback it printed last, else its last ERROR line."""
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        tail = lines[-200:]
        tracebacks = [i for i, line in enumerate(tail) if line.startswith("Traceback (most recent call last)")]
        if tracebacks:
            trace = [line for line in tail[tracebacks[-1] :] if line.strip()]
            return " | ".join([*trace[-4:]])[:600]
        for line in reversed(tail):
            if '"ERROR"' in line or "Error" in line:
                return line[:300]
        return lines[-1][:300] if lines else "(empty log)"

    async def _get(self, path: str) -> tuple[int, str]:
        try:
            status, body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{self.port}{path}", 2)
        except OSError:
            return 0, ""
        return status, body.decode()

    async def ready(self) -> bool:
        ready = self.running and (await self._get("/readyz"))[0] == 200
        self.was_ready = self.was_ready or ready
        return ready

    async def phase(self) -> str:
        """Where the process is now: start-up (no HTTP yet), restore (tables, group join or task restore),
        busy (HTTP too slow to answer while deciding), mid-transaction (a consumed batch not yet committed),
        backlog (committed, lag left) or idle."""
        if not self.running:
            return "down"
        if not await self.ready():
            return "busy" if self.was_ready else "restore" if (await self._get("/livez"))[0] else "start-up"
        status, body = await self._get("/metrics")
        if status != 200:
            return "busy"
        samples: dict[str, float] = defaultdict(float)
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                samples[sample.name] += sample.value
        if samples["placement_records_consumed_total"] > samples["placement_records_processed_total"]:
            return "mid-transaction"
        return "backlog" if samples["placement_consumer_lag"] > 0 else "idle"

    async def wait_ready(self, timeout: float = 60) -> float:
        """Seconds since start until /readyz answered 200; fails the run after `timeout`."""
        deadline = self.started_at + timeout
        while not await self.ready():
            if self.process is not None and self.process.returncode is not None:
                raise AssertionError(f"slot {self.slot} exited with {self.process.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                raise AssertionError(f"slot {self.slot} not ready {timeout:g} s after start; see {self.log}")
            await asyncio.sleep(0.02)
        return time.monotonic() - self.started_at


class Feeder:
    """One idempotent producer; `sent` is every item in the order it was handed to the producer, which keeps
    each partition's order, so it is the replay input."""

    def __init__(self, bootstrap: str, topics: TopicNames) -> None:
        self._producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
        self._topics = topics
        self.sent: list[Item] = []

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def send(self, items: Iterable[Item]) -> None:
        """Send and wait until every record is acknowledged."""
        pending = []
        for item in items:
            value = None if item.value is None else orjson.dumps(item.value)
            self.sent.append(item)
            pending.append(await self._producer.send(self._topics.name(item.role), value, key=item.key.encode()))
        await asyncio.gather(*pending)


class DecisionWatch:
    """Follows the decisions topic read_committed from the start, remembering when each application's first
    decision and each placement's last decision became visible."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=None,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            enable_auto_commit=False,
        )
        self._task: asyncio.Task[None] | None = None
        self.applications: dict[str, float] = {}
        self.placements: dict[str, dict[str, Any] | None] = {}
        self.records = 0
        self.regressions: list[str] = []
        """Barrier placements that lost the barrier cluster again: decided on inventory older than an answer
        already committed for them (the barrier cluster only ever becomes selectable)."""

    async def start(self) -> None:
        await self._consumer.start()
        self._task = asyncio.create_task(self._follow())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._consumer.stop()

    async def _follow(self) -> None:
        while True:
            try:
                batches = await self._consumer.getmany(timeout_ms=50)
            except KafkaError:  # the broker is down for a moment: the consumer reconnects by itself
                await asyncio.sleep(0.2)
                continue
            now = time.monotonic()
            for records in batches.values():
                for record in records:
                    self.records += 1
                    key = (record.key or b"").decode()
                    value = None if record.value is None else orjson.loads(record.value)
                    if key.startswith("Placement/"):
                        if _holds_barrier(self.placements.get(key)) and not _holds_barrier(value):
                            self.regressions.append(f"{key} p{record.partition}@{record.offset}")
                        self.placements[key] = value
                    elif value is not None and value["type"].startswith("application."):
                        self.applications.setdefault(value["data"]["applicationId"], now)

    async def wait_applications(self, ids: Iterable[str], since: float, timeout: float = 60) -> float | None:
        """Seconds from `since` until every application in `ids` has a visible decision; None after `timeout`."""
        wanted = list(ids)
        while True:
            seen = [self.applications.get(app) for app in wanted]
            if all(at is not None for at in seen):
                return max(at for at in seen if at is not None) - since
            if time.monotonic() - since > timeout:
                return None
            await asyncio.sleep(0.01)

    def barrier_passed(self, keys: Iterable[str]) -> bool:
        """Every barrier placement's last visible decision holds the barrier cluster."""
        return all(_holds_barrier(self.placements.get(key)) for key in keys)


def _holds_barrier(value: dict[str, Any] | None) -> bool:
    if value is None or value["data"].get("deleted"):
        return False
    pages = value["data"]["placementDecisions"]
    return BARRIER_CLUSTER in {d["clusterName"] for page in pages for d in page["status"]["decisions"]}


async def kill_broker(broker: LocalBroker, how: str) -> None:
    """Stop the broker with SIGTERM (controlled shutdown) or SIGKILL (a crash), and reap it."""
    if how == "KILL":
        pid = broker.running_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    await broker.astop()


async def restart_broker(broker: LocalBroker, timeout: float = 150) -> float:
    """Start the broker again on its data dir and ports; seconds it took. A port left in TIME_WAIT by a killed
    broker may be refused for a while: retry until it is free rather than give up."""
    started = time.monotonic()
    while True:
        try:
            await broker.astart()
            return time.monotonic() - started
        except BrokerError as exc:
            if "in use" not in str(exc) or time.monotonic() - started > timeout:
                raise
            await asyncio.sleep(1)
