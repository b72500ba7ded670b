"""The quick-start demo: local broker, processor, two example advisors, the example deployer, example YAML.

`apply` publishes the YAML under examples/ (OCM clusters and a Placement, a hybrid PlacementRule, YuniKorn pods)
with event times of now, so the example toleration (20 s on cluster3's maintenance taint) runs out during the
demo and the placement is re-decided without cluster3. Every decision is printed as it is published, and the
example deployer's files under .cache/demo-deployed/ follow them.

Everything runs in this process except the broker; SIGTERM, SIGINT (Ctrl-C) and any error stop all of it, the
broker included, and end with one line instead of a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import signal
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer

from advisors.common import AdvisorConfig, serve
from advisors.cpu_priority import CpuTable, follow_cluster_status, score_by_cpu
from advisors.veto import accept, parse_target
from cli.apply.command import ApplyRequest, plan, publish
from connection.errors import ConnectionSetupError
from deployers.decision_files import DeployerConfig, deploy
from deployers.kafka_logs import TransientKafkaErrors
from localbroker.commands import DEMO_DIR_NAME
from localbroker.fetch import default_cache_root
from localbroker.testing import BrokerUnavailable, external_bootstrap, session_broker
from streams.errors import ServiceError
from streams.service import Processor
from streams.settings import Settings, load_settings
from topics.names import TOPIC_SPECS, TopicRole

__all__ = ["DEMO_FILES", "describe", "main", "run_demo"]

EXAMPLES = Path(str(files("streams") / "examples"))
"""The service's package data, so an installed package has them too; a checkout's `examples/` links there."""
DEMO_FILES = ("clusters.yaml", "placement.yaml", "placementrule.yaml", "pods.yaml")
"""Applied in this order: inventory before what is placed on it."""
DEMO_SECONDS = 35.0
DEPLOYED = default_cache_root() / "demo-deployed"
_STOP_SECONDS = 10.0


def _say(text: str) -> None:
    print(text, flush=True)


def _stamp() -> str:
    return datetime.now(UTC).strftime("%H:%M:%S")


class _DeployerLines(logging.Handler):
    """The example deployer's change log, printed like the decisions it follows."""

    def emit(self, record: logging.LogRecord) -> None:
        _say(f"{_stamp()} [deployer] {record.getMessage()}")


def _configure_logging() -> None:
    """Warnings and errors on stderr in plain text, without aiokafka's retried start-up conditions; the
    deployer's changes on stdout."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(TransientKafkaErrors())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    deployer = logging.getLogger("deployers")
    deployer.setLevel(logging.INFO)
    deployer.propagate = False
    deployer.handlers[:] = [_DeployerLines()]


@contextlib.contextmanager
def _broker() -> Iterator[str]:
    data_dir = default_cache_root() / DEMO_DIR_NAME  # where `broker status` and `broker stop` look too
    if not external_bootstrap():
        shutil.rmtree(data_dir, ignore_errors=True)
        _say("== starting a local Apache Kafka broker (first run downloads it from Maven Central)")
    with session_broker(data_dir) as bootstrap:
        try:
            yield bootstrap
        finally:
            if not external_bootstrap():
                _say("== stopping the broker")
    if not external_bootstrap():
        _say("== broker stopped")


def describe(value: dict[str, Any]) -> str:
    """One readable line for a decision-topic event."""
    kind, data = value["type"], value.get("data") or {}
    if kind.startswith("application.placed"):
        created = " (created)" if data["created"] else ""
        return f"app {data['applicationId']} -> {data['queue']}{created} by rule {data['rule']}"
    if kind.startswith("application.rejected"):
        return f"app {data['applicationId']} rejected: {data['reason']}"
    if kind.startswith("placement.decided"):
        if data.get("deleted"):
            return f"placement {data['namespace']}/{data['name']} deleted"
        clusters = [
            d["clusterName"] for page in data.get("placementDecisions", []) for d in page["status"]["decisions"]
        ]
        conditions = {c["type"]: c.get("reason", "") for c in data.get("conditions", [])}
        return (
            f"placement {data['namespace']}/{data['name']} -> {clusters or 'no clusters'}"
            f" scores={data.get('scores', {})} satisfied={conditions.get('PlacementSatisfied', '?')}"
        )
    if kind.startswith("placementrule.decided"):
        names = [d.get("name") for d in data.get("decisions", [])]
        return f"placement rule {data['namespace']}/{data['name']} -> {names} (round {data.get('round')})"
    if kind.startswith("candidates.proposed"):
        names = [c.get("name") for c in data.get("candidates", [])]
        return f"round {data['round']} of {data['rule']['name']}: asking {data['advisors']} about {names}"
    return f"{kind}: {orjson.dumps(data).decode()[:200]}"


async def _show(settings: Settings, stop: asyncio.Event, seconds: float | None) -> None:
    """Print the decision, advisor-request and dead-letter records as they are committed."""
    consumer = AIOKafkaConsumer(
        settings.topics.decisions,
        settings.topics.advisor_requests,
        settings.topics.dead_letter,
        bootstrap_servers=settings.kafka.bootstrap_servers,
        group_id=None,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    started = time.monotonic()
    try:
        while not stop.is_set() and (seconds is None or time.monotonic() - started < seconds):
            batches = await consumer.getmany(timeout_ms=200)
            for tp, records in batches.items():
                for record in records:
                    if record.value is None:
                        _say(f"{_stamp()} [{tp.topic}] {record.key!r}: tombstone")
                        continue
                    try:
                        line = describe(orjson.loads(record.value))
                    except (orjson.JSONDecodeError, KeyError, TypeError):
                        line = f"undecodable value {record.value[:60]!r}"
                    _say(f"{_stamp()} [{tp.topic}] {line}")
    finally:
        await consumer.stop()


async def _apply_examples(settings: Settings) -> None:
    request = ApplyRequest(paths=[str(EXAMPLES / name) for name in DEMO_FILES])
    planned = plan(request)
    failures = await publish(planned, settings)
    for index, item in enumerate(planned):
        problem = item.error or failures.get(index, "")
        notes = "".join(f" ({record.note})" for record in item.records[:1] if record.note)
        _say(f"   {item.where}: {problem}" if problem else f"   {item.label} published{notes}")


def _topic_prefix(settings: Settings) -> str:
    """The prefix the example programs put before the default topic names (as `TopicNames.prefixed`)."""
    default = TOPIC_SPECS[TopicRole.DECISIONS].default_name
    return settings.topics.decisions.removesuffix(default) if settings.topics.decisions.endswith(default) else ""


def _advisors(bootstrap: str, prefix: str, stop: asyncio.Event) -> list[Callable[[], Coroutine[Any, Any, None]]]:
    """The two example advisors, run here instead of as programs so one stop ends them too."""
    cpu, veto = AdvisorConfig(bootstrap, "cpu", prefix), AdvisorConfig(bootstrap, "veto", prefix)
    table = CpuTable()
    vetoed = [parse_target("cluster4")]
    return [
        lambda: follow_cluster_status(cpu, table, stop),
        lambda: serve(cpu, lambda request: score_by_cpu(request.candidates, table.cpu), stop, ready=table.ready),
        lambda: serve(veto, lambda request: accept(request.candidates, vetoed), stop),
    ]


async def _wait_ready(processor: Processor, task: asyncio.Task[None], stop: asyncio.Event) -> bool:
    while not processor.ready:
        if task.done():
            task.result()
        if stop.is_set():
            return False
        await asyncio.sleep(0.1)
    return True


async def run_demo(stop: asyncio.Event, *, keep_running: bool = False, deployed: Path = DEPLOYED) -> None:
    """Run everything and print decisions as they are published until DEMO_SECONDS pass or `stop` is set.

    The advisors and the deployer use the processor's topic names, so PLACEMENT_TOPICS__* settings apply to all.
    """
    with _broker() as bootstrap:
        _say(f"== broker at {bootstrap}; other commands reach it with KAFKA_BOOTSTRAP_SERVERS={bootstrap}, e.g.")
        _say(f"   KAFKA_BOOTSTRAP_SERVERS={bootstrap} .venv/bin/placement-stream apply -f examples/placement.yaml")
        if stop.is_set():
            return
        settings = load_settings(kafka={"bootstrap_servers": bootstrap}, queue_config=EXAMPLES / "queues.yaml")
        processor = Processor(settings)
        processing = asyncio.create_task(processor.run())
        helpers: list[asyncio.Task[None]] = []
        try:
            if not await _wait_ready(processor, processing, stop):
                return
            _say(f"== processor ready; metrics and probes on http://{settings.http_host}:{processor.http_port}")
            shutil.rmtree(deployed, ignore_errors=True)
            prefix = _topic_prefix(settings)
            starts: list[Callable[[], Coroutine[Any, Any, None]]] = [
                *_advisors(bootstrap, prefix, stop),
                lambda: deploy(DeployerConfig(bootstrap, deployed, prefix), stop),
            ]
            helpers = [asyncio.create_task(start()) for start in starts]
            _say(f"== example advisors cpu and veto running; the example deployer writes {deployed}")
            _say("== placement-stream apply -f " + " -f ".join(f"examples/{name}" for name in DEMO_FILES))
            await _apply_examples(settings)
            _say("== decisions follow; cluster3's maintenance taint is tolerated for 20 s: watch apps/web change")
            await _show(settings, stop, None if keep_running else DEMO_SECONDS)
            _say(f"== deployed state: {', '.join(_files(deployed)) or 'no files'} (under {deployed})")
        finally:
            stop.set()
            for helper in helpers:
                with contextlib.suppress(Exception, asyncio.CancelledError, TimeoutError):
                    await asyncio.wait_for(helper, _STOP_SECONDS)
            processor.request_stop()
            with contextlib.suppress(Exception, asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(processing, settings.shutdown_timeout_seconds)


def _files(root: Path) -> list[str]:
    return [str(path.relative_to(root)) for path in sorted(root.rglob("*.yaml"))] if root.exists() else []


async def _until_signal(keep_running: bool, deployed: Path) -> int:
    """Run the demo; the first SIGTERM or SIGINT stops it cleanly, a second one cancels the stopping."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    main_task = asyncio.current_task()
    signals = {"count": 0}

    def on_signal(name: str) -> None:
        signals["count"] += 1
        if signals["count"] == 1:
            _say(f"== {name}: stopping everything the demo started")
            stop.set()
        elif main_task is not None:
            main_task.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig.name)
    try:
        await run_demo(stop, keep_running=keep_running, deployed=deployed)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return 0


def main(*, keep_running: bool = False, deployed: Path | None = None) -> int:
    """The `demo` command: 0 when it ran (or was stopped by a signal), 1 with one line on stderr when it failed."""
    _configure_logging()
    try:
        return asyncio.run(_until_signal(keep_running, deployed or DEPLOYED))
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 130
    except (ServiceError, ConnectionSetupError, BrokerUnavailable, OSError) as exc:
        print(f"demo stopped: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # any other failure: one line, the broker already stopped by the context managers
        print(f"demo stopped: {exc.__class__.__name__}: {exc}", file=sys.stderr)
        return 1
