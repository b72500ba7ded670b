"""Plumbing shared by the example advisors: options, request handling and the Kafka loop.

An advisor is a function from a `candidates.proposed` request to the entries it answers with (or None to stay
silent). Everything else, reading requests in its own consumer group, skipping requests that do not name it,
posting `recommendation.posted` keyed by the rule's subject key and stopping cleanly on SIGTERM, lives here.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError, KafkaError

from connection.errors import CredentialsError, SettingsError
from connection.failures import describe_failure, probe_connection
from connection.security import connection_options
from connection.settings import KafkaSettings, load_kafka_settings
from topics.codec import decode_event, encode_event
from topics.errors import ContractError
from topics.k8s import ObjectReference
from topics.names import TOPIC_SPECS, TopicRole
from topics.placementrule import CandidatesProposed, RecommendationEntry, RecommendationPosted, RuleRef

__all__ = [
    "AdvisorConfig",
    "Answer",
    "base_parser",
    "configure_logging",
    "echo",
    "encode_recommendation",
    "handle_request",
    "parse_arguments",
    "rule_key",
    "run_main",
    "serve",
    "start_from_args",
]

_LOG = logging.getLogger("advisors")

T = TypeVar("T")

Answer = Callable[[CandidatesProposed], Sequence[RecommendationEntry] | None]
"""What an advisor does with a request that names it; None means "no answer"."""


@dataclass(frozen=True, slots=True)
class AdvisorConfig:
    """Where an advisor connects and who it is."""

    bootstrap: str
    name: str
    topic_prefix: str = ""
    group_id: str | None = None
    security: KafkaSettings = field(default_factory=KafkaSettings)
    """TLS and SASL settings, read like the processor's (PLACEMENT_KAFKA__SECURITY_PROTOCOL, ..._SASL_USERNAME,
    ..._SASL_PASSWORD_FILE, ...): each advisor can run as its own principal; its bootstrap servers and group come
    from the options."""

    def client_options(self) -> dict[str, Any]:
        """aiokafka connection arguments of every client this advisor creates."""
        return {**connection_options(self.security), "bootstrap_servers": self.bootstrap}

    def topic(self, role: TopicRole) -> str:
        """The topic of a role: the prefix plus the default name (as the service's `TopicNames.prefixed`)."""
        return self.topic_prefix + TOPIC_SPECS[role].default_name

    @property
    def group(self) -> str:
        """One consumer group per advisor name, so several replicas of one advisor share the requests."""
        return self.group_id or f"advisor-{self.name}"

    @property
    def source(self) -> str:
        """The CloudEvents `source` of the advisor's posts."""
        return f"/advisors/{self.name}"


def base_parser(description: str) -> argparse.ArgumentParser:
    """The options every advisor takes."""
    parser = argparse.ArgumentParser(
        description=description,
        epilog="Kafka TLS and SASL settings are read from the environment, as the processor reads them "
        "(PLACEMENT_KAFKA__SECURITY_PROTOCOL, PLACEMENT_KAFKA__SASL_USERNAME, PLACEMENT_KAFKA__SASL_PASSWORD_FILE, "
        "PLACEMENT_KAFKA__SSL_CA_FILE, ...; see docs/security.md); secrets are never taken as options.",
    )
    parser.add_argument("--bootstrap", default="127.0.0.1:9092", help="Kafka bootstrap servers (host:port,...)")
    parser.add_argument("--name", required=True, help="advisor name, as listed in the rules' spec.advisors")
    parser.add_argument("--topic-prefix", default="", help="prefix of every topic name (as the processor's)")
    parser.add_argument("--group", default=None, help="consumer group (default: advisor-<name>)")
    parser.add_argument("--log-level", default="INFO", help="logging level")
    return parser


def configure_logging(level: str) -> None:
    """Plain stderr logging for a command-line program."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def start_from_args(args: argparse.Namespace) -> AdvisorConfig:
    """Logging set up and the connection settings of `base_parser` options: the shared start of every `main`."""
    configure_logging(args.log_level)
    try:
        security = load_kafka_settings()
    except SettingsError as exc:
        raise SystemExit(f"advisor {args.name}: {exc}") from None
    return AdvisorConfig(
        bootstrap=args.bootstrap, name=args.name, topic_prefix=args.topic_prefix, group_id=args.group, security=security
    )


def parse_arguments(parser: argparse.ArgumentParser, parse: Callable[[str], T], values: Sequence[str]) -> list[T]:
    """Parse positional arguments; a bad one is a usage error (exit 2) naming the problem."""
    try:
        return [parse(value) for value in values]
    except ValueError as exc:
        parser.error(str(exc))


def rule_key(rule: RuleRef) -> str:
    """The rule's subject key, which is also the record key of every post about it."""
    return f"PlacementRule/{rule.namespace}/{rule.name}"


def echo(candidate: ObjectReference, score: int | None = None) -> RecommendationEntry:
    """An entry naming a candidate exactly as proposed (kind included, so matching is unambiguous)."""
    return RecommendationEntry(
        api_version=candidate.api_version,
        kind=candidate.kind,
        namespace=candidate.namespace or None,
        name=candidate.name,
        score=score,
    )


def handle_request(value: bytes | None, name: str, answer: Answer) -> RecommendationPosted | None:
    """Decode one request record and answer it when it names this advisor (K1); anything else yields None."""
    if value is None:
        return None
    try:
        event = decode_event(value, TopicRole.ADVISOR_REQUESTS)
    except ContractError as exc:
        _LOG.warning("skipping an unreadable request: %s", exc)
        return None
    request = event.data
    if not isinstance(request, CandidatesProposed) or name not in request.advisors:
        return None
    entries = answer(request)
    if entries is None:
        return None
    return RecommendationPosted(rule=request.rule, round=request.round, advisor=name, recommendations=list(entries))


def encode_recommendation(posted: RecommendationPosted, source: str, now: datetime) -> tuple[bytes, bytes]:
    """Record key and value of a post."""
    key = rule_key(posted.rule)
    value = encode_event(
        kind_name="recommendation.posted",
        data=posted,
        subject=key,
        event_id=str(uuid.uuid4()),
        time=now,
        source=source,
    )
    return key.encode(), value


async def _wait(ready: asyncio.Event, stop: asyncio.Event) -> bool:
    """Wait for `ready` unless `stop` comes first; True when ready."""
    waiters = [asyncio.create_task(ready.wait()), asyncio.create_task(stop.wait())]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    return ready.is_set() and not stop.is_set()


async def serve(
    config: AdvisorConfig, answer: Answer, stop: asyncio.Event, *, ready: asyncio.Event | None = None
) -> None:
    """Answer requests until `stop` is set; with `ready`, wait for it before the first request.

    Offsets are committed after the batch's posts are acknowledged (at least once): a repeated post for the same
    round simply replaces the first one in the processor (E3).
    """
    consumer = AIOKafkaConsumer(
        config.topic(TopicRole.ADVISOR_REQUESTS),
        **config.client_options(),
        group_id=config.group,
        client_id=f"advisor-{config.name}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    producer = AIOKafkaProducer(**config.client_options(), client_id=f"advisor-{config.name}", acks="all")
    await producer.start()
    try:
        await consumer.start()
        try:
            if ready is not None and not await _wait(ready, stop):
                return
            target = config.topic(TopicRole.ADVISOR_RECOMMENDATIONS)
            _LOG.info("advisor %s answering requests from %s", config.name, config.topic(TopicRole.ADVISOR_REQUESTS))
            while not stop.is_set():
                batch = await consumer.getmany(timeout_ms=500, max_records=500)
                if not batch:
                    continue
                sent = 0
                for records in batch.values():
                    for record in records:
                        posted = handle_request(record.value, config.name, answer)
                        if posted is None:
                            continue
                        key, value = encode_recommendation(posted, config.source, datetime.now(UTC))
                        await producer.send(target, value=value, key=key)
                        sent += 1
                        _LOG.debug("answered round %d of %s", posted.round, key.decode())
                if sent:
                    await producer.flush()
                await consumer.commit()
        finally:
            await consumer.stop()
    finally:
        await producer.stop()


def run_main(main: Callable[[asyncio.Event], Awaitable[None]]) -> int:
    """Run an advisor until SIGTERM or SIGINT; the exit status is 1 when Kafka fails."""

    async def runner() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await main(stop)

    try:
        asyncio.run(runner())
    except (KafkaError, CredentialsError) as exc:
        try:
            security = load_kafka_settings()  # as start_from_args read it, to name the principal
        except SettingsError:
            security = KafkaSettings()
        cause = exc
        if isinstance(exc, KafkaConnectionError):  # aiokafka's "Unable to bootstrap" hides a refused login
            cause = asyncio.run(probe_connection(security)) or exc
        _LOG.error("advisor stopped: %s", describe_failure(cause, security) or exc)
        return 1
    return 0
