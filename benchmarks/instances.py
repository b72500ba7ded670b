"""Processor instances in processes of their own, started with the service's command and watched through their
HTTP endpoint, as an operator runs and watches replicas.

A Python process runs its engines on one core; on a machine with several, scale-out is more instances in one
consumer group (each owns a share of the task partitions and keeps the whole inventory). The benchmarks start
them this way so that what they measure is what `placement-stream run` does.
"""

from __future__ import annotations

import asyncio
import compileall
import functools
import os
import signal
import sys
from collections import defaultdict
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

import engine
import streams
import topics
from localbroker.procs import free_ports
from streams.http import http_get
from streams.settings import Settings

__all__ = ["Instance", "InstanceGroup", "Samples", "sample", "sum_samples"]

Samples = dict[str, dict[tuple[tuple[str, str], ...], float]]
"""Sample name -> sorted label pairs -> value, as one /metrics page gives them."""


@functools.cache
def compile_bytecode() -> None:
    """Compile the project's modules once, as installing the package does: with PYTHONDONTWRITEBYTECODE set (as
    on the benchmark machine) or a fresh checkout, every instance would otherwise compile them again at start,
    0.7 s of its start-up there that a deployed processor does not spend."""
    for package in (topics, engine, streams):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)


class Instance:
    """One `placement-stream run` process; `source` is the checkout it runs (default: this one)."""

    def __init__(self, settings: Settings, instance_id: str, source: Path | None = None) -> None:
        self.port = free_ports(1)[0]
        self._source = source
        kafka = settings.kafka.model_copy(update={"group_instance_id": instance_id})
        mine = settings.model_copy(update={"kafka": kafka, "http_host": "127.0.0.1", "http_port": self.port})
        self._env = {**os.environ, **mine.environment(), "PLACEMENT_LOG_LEVEL": "WARNING"}
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        """Start the process (it reads the global tables, joins the group and restores on its own)."""
        compile_bytecode()
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "streams", "run", env=self._env, stdin=asyncio.subprocess.DEVNULL, cwd=self._source
        )

    async def _get(self, path: str) -> tuple[int, str]:
        """Status and body of one GET; status 0 while nothing listens yet."""
        try:
            status, body = await asyncio.to_thread(http_get, f"http://127.0.0.1:{self.port}{path}", 5)
        except OSError:
            return 0, ""
        return status, body.decode()

    async def ready(self) -> bool:
        """/readyz answers 200: tables caught up, group joined, tasks restored."""
        if self._process is not None and self._process.returncode is not None:
            raise RuntimeError(f"instance on port {self.port} exited with {self._process.returncode}")
        return (await self._get("/readyz"))[0] == 200

    async def samples(self) -> Samples:
        """Every sample of its /metrics page."""
        status, body = await self._get("/metrics")
        if status != 200:
            raise RuntimeError(f"/metrics on port {self.port} answered {status}")
        found: Samples = defaultdict(dict)
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                found[sample.name][tuple(sorted(sample.labels.items()))] = sample.value
        return found

    def peak_rss_mib(self) -> float:
        """The process's peak resident memory so far (VmHWM; Linux)."""
        if self._process is None:
            return 0.0
        for line in Path(f"/proc/{self._process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    async def stop(self, timeout: float = 30) -> None:
        """SIGTERM, as a deployment stops a replica, and wait for the exit."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            process.kill()
            await process.wait()


class InstanceGroup:
    """N instances of one consumer group (static members `<group>-0` ... `<group>-N-1`)."""

    def __init__(self, settings: Settings, count: int) -> None:
        self.members = [Instance(settings, f"{settings.kafka.group_id}-{i}") for i in range(count)]

    async def start(self) -> None:
        """Start every member at once."""
        for member in self.members:
            await member.start()

    async def ready(self) -> bool:
        """Every member is ready."""
        return all(await asyncio.gather(*(m.ready() for m in self.members)))

    async def samples(self) -> list[Samples]:
        """Each member's samples, in member order."""
        return list(await asyncio.gather(*(m.samples() for m in self.members)))

    async def stop(self) -> None:
        """Stop every member."""
        await asyncio.gather(*(m.stop() for m in self.members))


def sample(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value; 0 when the series has not appeared yet."""
    return samples.get(name, {}).get(tuple(sorted(labels.items())), 0.0)


def sum_samples(members: list[Samples], name: str, **labels: str) -> float:
    """One sample's value summed over the members of a group."""
    return sum(sample(m, name, **labels) for m in members)
