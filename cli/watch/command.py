"""`placement-stream watch`: the API server's objects as the records `apply -f` publishes, continuously.

The Kubernetes client is lightkube: asyncio-native, typed (it ships `py.typed`, so mypy checks our calls), with
generic resources for CRDs, kubeconfig and in-cluster service-account configuration, and lists that expose their
resourceVersion and watches that surface `410 Gone` as an error to relist on.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from lightkube import AsyncClient, KubeConfig

from cli.apply.command import prepare_topics, send_record, start_producer
from cli.watch.follow import Follower
from cli.watch.kinds import HANDOVER_ANNOTATION, watched_kinds
from cli.watch.published import Published
from connection.kubernetes import kube_config
from streams.settings import Settings
from topics.names import TopicRole
from topics.objects.convert import Outgoing

__all__ = ["Sender", "WatchOptions", "add_arguments", "kube_config", "run_watch", "watch_forever"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WatchOptions:
    """What the command line asked for."""

    state_file: Path
    all_placements: bool = False
    pods: bool = False
    retry_seconds: float = 1.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", type=Path, help="kubeconfig file (default: in-cluster, $KUBECONFIG, ~/.kube)")
    parser.add_argument("--context", help="kubeconfig context (default: its current context)")
    parser.add_argument(
        "--state-file",
        type=Path,
        default=Path("placement-stream-watch.json"),
        help="what was published, so a restart publishes only what changed (default: ./placement-stream-watch.json)",
    )
    parser.add_argument(
        "--all-placements",
        action="store_true",
        help=f'take every Placement, not only those annotated {HANDOVER_ANNOTATION}: "true"',
    )
    parser.add_argument("--pods", action="store_true", help="also publish YuniKorn's pods as application submissions")
    parser.add_argument("--bootstrap-servers", help="overrides PLACEMENT_KAFKA__BOOTSTRAP_SERVERS")


class Sender:
    """Publishes one change's records and waits for the broker; a Kafka failure is retried until it passes (the
    producer is idempotent, and nothing later is published meanwhile, so nothing is reordered or lost)."""

    def __init__(self, producer: AIOKafkaProducer, settings: Settings, retry_seconds: float) -> None:
        self._producer = producer
        self._settings = settings
        self._retry_seconds = retry_seconds

    async def __call__(self, records: list[Outgoing]) -> None:
        while True:
            try:
                futures = [await send_record(self._producer, self._settings, record) for record in records]
                for future in futures:
                    await future
            except KafkaError as exc:
                _log.warning("publishing %s failed (%s); retrying", records[0].key, exc)
                await asyncio.sleep(self._retry_seconds)
                continue
            return


async def watch_forever(
    config: KubeConfig, settings: Settings, options: WatchOptions, stop: asyncio.Event, *, context: str | None = None
) -> None:
    """Follow the API server until `stop` is set; a change being published then is finished first."""
    published = Published.load(options.state_file)
    await prepare_topics(settings, {TopicRole.CLUSTER_STATUS, TopicRole.SUBMISSIONS})
    producer = await start_producer(settings, "watch")
    client = AsyncClient(config=config.get(context_name=context) if context else config)
    try:
        send = Sender(producer, settings, options.retry_seconds)
        follower = Follower(
            client, send, published, take_all=options.all_placements, retry_seconds=options.retry_seconds
        )
        following = asyncio.create_task(follower.follow(watched_kinds(pods=options.pods)))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({following, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not following.done():
            async with follower.publishing:
                following.cancel()
        with suppress(asyncio.CancelledError):
            await following
    finally:
        await client.close()
        await producer.stop()


def run_watch(args: argparse.Namespace, settings: Settings) -> int:
    """The `watch` command: runs until SIGTERM or SIGINT."""
    config = kube_config(args.kubeconfig, args.context)
    options = WatchOptions(args.state_file, all_placements=args.all_placements, pods=args.pods)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await watch_forever(config, settings, options, stop, context=args.context)

    asyncio.run(main())
    return 0
