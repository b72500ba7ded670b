"""`placement-stream describe`: the group as `kafka-streams-groups.sh --describe` shows a Kafka Streams app. From
Kafka: the members with their release and address (the member metadata's user data, platform P17), the tasks each
owns, each task's lag in records and in seconds (the age of its oldest record not committed); from each
instance's `/status`: restores in progress, last commit and decision times, dead letters by reason. Needs no
shell on the instances: only the broker and their HTTP endpoints."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

from streams.errors import ServiceError
from streams.http import http_get
from streams.kafka.clients import admin_client
from streams.kafka.membership import decode_member
from streams.kafka.tables import new_reader
from streams.settings import Settings, load_settings

__all__ = ["add_arguments", "describe_group", "main_from_args", "render_table"]

_STATUS_TIMEOUT_SECONDS = 5.0
_OLDEST_RECORD_SECONDS = 2.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's options."""
    parser.add_argument(
        "--bootstrap-servers",
        "--bootstrap",
        dest="bootstrap_servers",
        help="overrides PLACEMENT_KAFKA__BOOTSTRAP_SERVERS",
    )
    parser.add_argument("--group", help="overrides PLACEMENT_KAFKA__GROUP_ID")
    parser.add_argument(
        "--url",
        action="append",
        default=[],
        help="an instance's HTTP address to ask instead of the addresses the members advertise (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


@dataclass(frozen=True, slots=True)
class _Member:
    member_id: str
    client_id: str
    host: str
    url: str | None
    version: str | None
    tasks: tuple[int, ...]
    topics: tuple[str, ...]
    """The topics it subscribes to: the subject topics, whatever their names."""


def _members(raw: list[Any], protocol_type: str) -> list[_Member]:
    """The DescribeGroups members, their metadata and assignment decoded (consumer protocol only)."""
    members = []
    for member_id, client_id, host, metadata, assignment in raw:
        url = version = None
        tasks: tuple[int, ...] = ()
        topics: tuple[str, ...] = ()
        if protocol_type == "consumer" and metadata:
            decoded_metadata = ConsumerProtocolMemberMetadata.decode(metadata)
            url, version = decode_member(decoded_metadata.user_data)
            topics = tuple(decoded_metadata.subscription)
        if protocol_type == "consumer" and assignment:
            decoded = ConsumerProtocolMemberAssignment.decode(assignment)
            tasks = tuple(sorted({p for _topic, partitions in decoded.assignment for p in partitions}))
        members.append(_Member(member_id, client_id, host, url, version, tasks, topics))
    return sorted(members, key=lambda m: (m.tasks[:1] or (1 << 30,), m.member_id))


async def _oldest_ages(consumer: AIOKafkaConsumer, at: dict[TopicPartition, int]) -> dict[TopicPartition, float]:
    """Seconds since the timestamp of the first record at or past each position (read_committed)."""
    if not at:
        return {}
    consumer.assign(list(at))
    for tp, offset in at.items():
        consumer.seek(tp, offset)
    ages: dict[TopicPartition, float] = {}
    deadline = time.monotonic() + _OLDEST_RECORD_SECONDS
    while len(ages) < len(at) and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=200, max_records=len(at))
        for tp, records in batches.items():
            if records and tp not in ages:
                ages[tp] = max(0.0, time.time() - records[0].timestamp / 1000)
                consumer.pause(tp)
    return ages


async def _task_lag(settings: Settings, group: str, tasks: set[int], subscribed: set[str]) -> dict[int, dict[str, Any]]:
    """Per task, over the subject topics (those the members subscribe to; without members, the settings'):
    committed offsets, ends (last stable offsets), records and seconds."""
    names = settings.topics
    topics = sorted(subscribed) or [names.submissions, names.advisor_recommendations]
    admin = admin_client(settings.kafka)
    await admin.start()
    try:
        committed = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    tasks |= {tp.partition for tp in committed if tp.topic in topics}
    wanted = [TopicPartition(topic, task) for topic in topics for task in sorted(tasks)]
    consumer = new_reader(settings.kafka, f"{settings.kafka.client_id}-describe", fetch_max_wait_ms=100)
    await consumer.start()
    try:
        ends = await consumer.end_offsets(wanted)
        positions = {tp: committed[tp].offset if tp in committed and committed[tp].offset >= 0 else 0 for tp in wanted}
        behind = {tp: at for tp, at in positions.items() if ends[tp] > at}
        ages = await _oldest_ages(consumer, behind)
    finally:
        await consumer.stop()
    lag: dict[int, dict[str, Any]] = {}
    for tp in wanted:
        row = lag.setdefault(tp.partition, {"records": 0, "seconds": 0.0, "topics": {}})
        records = max(0, ends[tp] - positions[tp])
        row["records"] += records
        row["seconds"] = round(max(row["seconds"], ages.get(tp, 0.0)), 3)
        row["topics"][tp.topic] = {"committed": positions[tp], "end": ends[tp], "records": records}
    return lag


def _status(url: str, bearer: str | None) -> dict[str, Any]:
    try:
        status, body = http_get(f"{url.rstrip('/')}/status", _STATUS_TIMEOUT_SECONDS, bearer)
    except OSError as exc:
        return {"error": f"{url}: {getattr(exc, 'reason', exc)}"}
    if status != 200:
        return {"error": f"{url}: HTTP {status}"}
    loaded: dict[str, Any] = orjson.loads(body)
    return loaded


async def describe_group(settings: Settings, urls: list[str] | None = None) -> dict[str, Any]:
    """The description of the settings' group: members, tasks with lag, and what each instance says."""
    group = settings.kafka.group_id
    admin = admin_client(settings.kafka)
    await admin.start()
    try:
        described = (await admin.describe_consumer_groups([group]))[0].groups[0]
    finally:
        await admin.close()
    error_code, _group, state, protocol_type, protocol, raw_members = described[:6]
    if error_code:
        raise ServiceError(f"group {group}: DescribeGroups failed with error code {error_code}")
    members = _members(raw_members, protocol_type)
    tasks = {task for m in members for task in m.tasks}
    lag = await _task_lag(settings, group, tasks, {topic for m in members for topic in m.topics})
    asked = urls or [m.url for m in members if m.url]
    bearer = settings.explain_bearer()
    statuses = await asyncio.gather(*(asyncio.to_thread(_status, url, bearer) for url in asked))
    by_url = {s.get("url") or url: s for url, s in zip(asked, statuses, strict=True)}
    owner = {task: m.member_id for m in members for task in m.tasks}
    restoring = {
        r["task"]: r for s in statuses for r in s.get("restores", {}).get("running", []) if isinstance(r, dict)
    }
    return {
        "group": group,
        "state": state,
        "protocol": protocol,
        "members": [
            {
                "memberId": m.member_id,
                "clientId": m.client_id,
                "host": m.host,
                "url": m.url,
                "version": m.version,
                "tasks": list(m.tasks),
                "status": by_url.get(m.url) if m.url else None,
            }
            for m in members
        ],
        "tasks": [
            {"task": task, "owner": owner.get(task), **lag[task], "restore": restoring.get(task)}
            for task in sorted(lag)
        ],
        "instances": [s for s in statuses if s.get("url") not in {m.url for m in members}],
    }


def _when(text: str | None) -> str:
    return "-" if not text else text.replace("T", " ").split(".")[0].rstrip("Z")


def render_table(described: dict[str, Any]) -> str:
    """The description as a person reads it: the group, its members, its tasks."""
    lines = [f"GROUP {described['group']}  STATE {described['state']}  PROTOCOL {described['protocol']}", ""]
    rows: list[tuple[str, ...]] = [
        ("MEMBER", "VERSION", "URL", "TASKS", "READY", "LAST COMMIT", "LAST DECISION", "DEAD LETTERS")
    ]
    for m in described["members"]:
        status = m["status"] or {}
        dead = ", ".join(f"{k}={v}" for k, v in (status.get("deadLetters") or {}).items()) or "-"
        rows.append(
            (
                m["memberId"],
                m["version"] or "? (no metadata)",
                m["url"] or "-",
                ",".join(map(str, m["tasks"])) or "-",
                status.get("error") or str(status.get("ready", "-")).lower(),
                _when(status.get("lastCommitAt")),
                _when(status.get("lastDecisionAt")),
                dead,
            )
        )
    lines += [*_aligned(rows), ""]
    rows = [("TASK", "OWNER", "LAG RECORDS", "LAG SECONDS", "RESTORE")]
    for t in described["tasks"]:
        restore = t["restore"]
        shown = "-"
        if restore:
            shown = f"restoring: offset {restore['readTo']} of {restore['endOffset']}, {restore['records']} records"
        rows.append((str(t["task"]), t["owner"] or "-", str(t["records"]), f"{t['seconds']:.1f}", shown))
    return "\n".join(lines + _aligned(rows)) + "\n"


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def main_from_args(args: argparse.Namespace) -> int:
    """Describe the group; tables, or JSON with --json."""
    overrides: dict[str, Any] = {}
    if args.bootstrap_servers or args.group:
        kafka = {"bootstrap_servers": args.bootstrap_servers, "group_id": args.group}
        overrides["kafka"] = {k: v for k, v in kafka.items() if v}
    described = asyncio.run(describe_group(load_settings(**overrides), args.url))
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(described, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(render_table(described))
    return 0
