"""`placement-stream apply -f` / `delete -f`: documents in, one report line per document, records out.

Every document is converted before anything is sent, so a broken file is reported in full; the valid documents
are still published (as kubectl applies the valid objects of a file). Records go out in document order through
one idempotent producer, so a retried batch is never duplicated and one key's records keep their order.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

import orjson
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from cli.apply.files import manifest_files
from connection.security import connection_options
from streams.errors import ServiceError
from streams.kafka.admin import ensure_topics
from streams.kafka.clients import admin_client
from streams.settings import Settings, load_settings
from topics.names import TopicRole
from topics.objects.convert import (
    CONVERTERS,
    ApplyContext,
    ConversionError,
    Converter,
    NotApplicable,
    Outgoing,
    convert,
    resource_converter,
)
from topics.objects.documents import Document, DocumentError, parse_documents

__all__ = [
    "ApplyRequest",
    "Planned",
    "main_from_args",
    "plan",
    "prepare_topics",
    "publish",
    "render_record",
    "run_apply",
    "send_record",
    "start_producer",
]

_UNKNOWN_TOPIC = 3
"""Kafka's UNKNOWN_TOPIC_OR_PARTITION error code."""


@dataclass(frozen=True, slots=True)
class ApplyRequest:
    """What the command line asked for."""

    paths: Sequence[str]
    delete: bool = False
    dry_run: bool = False
    namespace: str = "default"
    recursive: bool = False
    resource_kinds: Sequence[str] = ()
    time: datetime | None = None


@dataclass(slots=True)
class Planned:
    """One document and what became of it."""

    where: str
    records: list[Outgoing] = field(default_factory=list)
    error: str = ""
    skipped: str = ""

    @property
    def label(self) -> str:
        """The object's kubectl-style name, or the document's place when it has none."""
        return self.records[0].label if self.records else self.where


def _converters(resource_kinds: Sequence[str]) -> dict[str, Converter]:
    extra = {kind: resource_converter(kind) for kind in resource_kinds if kind not in CONVERTERS}
    return {**CONVERTERS, **extra}


def plan(request: ApplyRequest) -> list[Planned]:
    """Read and convert every document; problems are recorded per document (or per file), never raised."""
    ctx = ApplyContext(namespace=request.namespace, time=request.time or datetime.now(UTC), delete=request.delete)
    converters = _converters(request.resource_kinds)
    planned: list[Planned] = []
    for path in request.paths:
        try:
            files = manifest_files(path, recursive=request.recursive)
        except DocumentError as exc:
            planned.append(Planned(path, error=str(exc)))
            continue
        if not files:
            planned.append(Planned(path, error=f"{path}: no .yaml, .yml or .json files"))
        for source, raw in files:
            try:
                documents: list[Document] = parse_documents(source, raw)
            except DocumentError as exc:
                planned.append(Planned(source, error=str(exc)))
                continue
            for document in documents:
                planned.append(_convert_one(document, ctx, converters))
    return planned


def _convert_one(document: Document, ctx: ApplyContext, converters: dict[str, Converter]) -> Planned:
    where = document.where
    body = document.body
    if isinstance(body, dict):
        kind, meta = body.get("kind"), body.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if isinstance(kind, str) and isinstance(name, str):
            where = f"{where} ({kind} {name})"
    try:
        return Planned(where, records=convert(body, ctx, converters))
    except NotApplicable as exc:
        return Planned(where, skipped=str(exc))
    except ConversionError as exc:
        return Planned(where, error=str(exc))


def render_record(record: Outgoing, settings: Settings) -> bytes:
    """One record as a `replay` input line."""
    line = {"topic": settings.topics.name(record.role), "key": record.key, "value": record.value}
    return orjson.dumps(line)


async def prepare_topics(settings: Settings, roles: set[TopicRole]) -> None:
    """Create the processor's topics when one of those to write is missing (its partition counts and policies),
    so publishing before the processor ever ran does not leave a broker-created topic with the wrong partition
    count; a submitter allowed only to write never needs more than describing its own topics."""
    admin = admin_client(settings.kafka)
    try:
        await admin.start()
    except (KafkaError, OSError) as exc:
        raise ServiceError(f"Kafka at {settings.kafka.bootstrap_servers} is not reachable: {exc}") from None
    try:
        described = await admin.describe_topics(sorted(settings.topics.name(role) for role in roles))
        if any(entry.get("error_code") == _UNKNOWN_TOPIC for entry in described):
            await ensure_topics(settings, admin, roles)  # only the topics it writes: its ACLs may allow no others
    finally:
        await admin.close()


async def start_producer(settings: Settings, purpose: str) -> AIOKafkaProducer:
    """A started idempotent producer (acks=all): a retried batch is never duplicated, one key keeps its order."""
    producer = AIOKafkaProducer(
        **connection_options(settings.kafka),
        client_id=f"{settings.kafka.client_id}-{purpose}",
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
    )
    try:
        await producer.start()
    except (KafkaError, OSError) as exc:
        raise ServiceError(f"Kafka at {settings.kafka.bootstrap_servers} is not reachable: {exc}") from None
    return producer


async def send_record(producer: AIOKafkaProducer, settings: Settings, record: Outgoing) -> asyncio.Future[Any]:
    """Queue one record; the future resolves when the broker has it."""
    value = None if record.value is None else orjson.dumps(record.value)
    future: asyncio.Future[Any] = await producer.send(settings.topics.name(record.role), value, key=record.key.encode())
    return future


async def publish(planned: list[Planned], settings: Settings) -> dict[int, str]:
    """Send every record of the valid documents; returns document index -> send error for those that failed."""
    await prepare_topics(settings, {record.role for item in planned for record in item.records})
    producer = await start_producer(settings, "apply")
    failures: dict[int, str] = {}
    try:
        pending: list[tuple[int, asyncio.Future[Any]]] = []
        for index, item in enumerate(planned):
            for record in item.records:
                pending.append((index, await send_record(producer, settings, record)))
        for index, future in pending:
            try:
                await future
            except KafkaError as exc:
                failures.setdefault(index, f"not published: {exc}")
    finally:
        await producer.stop()
    return failures


def run_apply(
    request: ApplyRequest,
    settings: Settings,
    out: IO[bytes],
    report: Callable[[str], None],
    error: Callable[[str], None],
) -> int:
    """Plan, then print (`--dry-run`) or publish; 0 when every document was handled, 1 when any failed."""
    planned = plan(request)
    failures: dict[int, str] = {}
    if request.dry_run:
        for item in planned:
            for record in item.records:
                out.write(render_record(record, settings) + b"\n")
        out.flush()
    elif any(item.records for item in planned):
        failures = asyncio.run(publish(planned, settings))
    done = "deleted" if request.delete else "published"
    suffix = " (dry run)" if request.dry_run else ""
    for index, item in enumerate(planned):
        problem = item.error or failures.get(index, "")
        if problem:
            error(f"error: {item.where}: {problem}")
        elif item.skipped:
            report(f"{item.where} skipped: {item.skipped}")
        else:
            notes = "".join(f" ({r.note})" for r in item.records[:1] if r.note)
            report(f"{item.label} {done}{notes}{suffix}")
    return 1 if any(item.error for item in planned) or failures else 0


def _parse_time(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def main_from_args(args: Any, *, delete: bool) -> int:
    """The `apply` / `delete` command: arguments from `cli.apply.arguments`, output on stdout and stderr."""
    when = None
    if args.time is not None:
        when = _parse_time(args.time)
        if when is None:
            print(f"placement-stream: --time {args.time!r} is not an RFC 3339 time", file=sys.stderr)
            return 2
    overrides: dict[str, Any] = {}
    if args.bootstrap_servers:
        overrides["kafka"] = {"bootstrap_servers": args.bootstrap_servers}
    settings = load_settings(**overrides)
    request = ApplyRequest(
        paths=args.paths,
        delete=delete,
        dry_run=args.dry_run,
        namespace=args.namespace,
        recursive=args.recursive,
        resource_kinds=args.resource_kinds,
        time=when,
    )
    reports = sys.stderr if args.dry_run else sys.stdout

    def report(line: str) -> None:
        print(line, file=reports, flush=True)

    def error(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    # aiokafka's own lines would repeat, less clearly, the one error this command reports for a Kafka failure
    kafka_log = logging.getLogger("aiokafka")
    level = kafka_log.level
    kafka_log.setLevel(logging.CRITICAL)
    try:
        return run_apply(request, settings, sys.stdout.buffer, report, error)
    finally:
        kafka_log.setLevel(level)
