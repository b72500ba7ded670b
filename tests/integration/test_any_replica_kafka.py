"""Three replicas on a real broker, asked as a user behind a load balancer asks: `/explain` and `POST /what-if`
answer the same from every instance for a queue partition, a Placement and a hybrid PlacementRule (two of three
forward to the owner); a what-if changes no topic and no state; `describe` lists the members, their tasks and lag,
and a fourth instance's restore while it is in progress."""

from __future__ import annotations

import asyncio
import contextlib
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest
import yaml
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from kafka_support import EXAMPLES, KafkaWorld, Record, running, stable, wait_for, without

import streams.service
from cli.describe import describe_group, render_table
from cli.main import main
from connection.security import connection_options
from streams.forwarding import FORWARDED_TO
from streams.kafka.admin import create_topics
from streams.kafka.tasks import partition_of
from streams.service import Processor
from streams.settings import KafkaSettings, Settings
from topics.names import TOPIC_SPECS, TopicRole
from topics.objects.convert import ApplyContext, convert

pytestmark = pytest.mark.integration

SUBJECTS = ["Application/default", "Placement/apps/web", "PlacementRule/apps/db"]
PLACEMENTS = 12
"""Placements besides the examples', so every task's changelog holds entries for the fourth instance to restore."""


def _documents() -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []
    for name in ("clusters.yaml", "placement.yaml", "placementrule.yaml", "pods.yaml"):
        bodies += [body for body in yaml.safe_load_all((EXAMPLES / name).read_text()) if body]
    web = next(b for b in bodies if b["kind"] == "Placement")
    for i in range(PLACEMENTS):
        bodies.append({**web, "metadata": {"name": f"extra-{i}", "namespace": "apps"}})
    return bodies


def _record(body: dict[str, Any], now: datetime) -> tuple[TopicRole, str, dict[str, Any] | None]:
    (out,) = convert(body, ApplyContext(namespace="default", time=now))
    return out.role, out.key, out.value


def _call(url: str, body: bytes | None = None) -> tuple[int, dict[str, Any], str | None]:
    """Status, JSON body and the forwarded-to header of a GET (or a POST of `body`)."""
    request = urllib.request.Request(url, data=body, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, orjson.loads(response.read()), response.headers.get(FORWARDED_TO)
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read()), exc.headers.get(FORWARDED_TO)


async def _ask(url: str, body: bytes | None = None) -> tuple[int, dict[str, Any], str | None]:
    return await asyncio.to_thread(_call, url, body)


def _settings(world: KafkaWorld) -> Settings:
    # advisors never answer here: a long timeout keeps the rule's round open, so no timer publishes meanwhile
    return world.settings(queue_config=EXAMPLES / "queues.yaml", advisor_timeout_seconds=3600)


def _url(processor: Processor) -> str:
    return f"http://127.0.0.1:{processor.http_port}"


async def _ends(world: KafkaWorld, settings: Settings) -> dict[str, dict[int, int]]:
    """Every topic's end offsets (high watermarks)."""
    names = settings.topics
    return {
        names.name(role): await world.end_offsets(names.name(role), None if TOPIC_SPECS[role].co_partitioned else 1)
        for role in TopicRole
    }


async def _settled(processors: list[Processor]) -> None:
    """Every instance has the same map of all members, and every task is restored by its owner."""

    def settled() -> bool:
        directories = [p.assignor.directory for p in processors]
        owned = sorted(task for p in processors for task in p.owned_tasks)
        return (
            all(
                d.known and len(d.members) == len(processors) and not p.assignor.joining
                for d, p in zip(directories, processors, strict=True)
            )
            and len({d.members for d in directories}) == 1
            and owned == list(range(len(owned)))
            and len(owned) == processors[0].settings.kafka.task_partitions
        )

    await wait_for(settled, timeout=60)


@contextlib.asynccontextmanager
async def _three(world: KafkaWorld) -> AsyncIterator[list[Processor]]:
    async with contextlib.AsyncExitStack() as stack:
        processors = [await stack.enter_async_context(running(_settings(world))) for _ in range(3)]
        await _settled(processors)
        yield processors


async def _seeded(world: KafkaWorld) -> None:
    now = datetime.now(UTC)
    settings = _settings(world)
    await create_topics(settings)
    records = [_record(body, now) for body in _documents()]
    await world.produce([(settings.topics.name(role), key, value) for role, key, value in records])


async def _decided(world: KafkaWorld) -> None:
    topic = world.settings().topics.decisions
    wanted = {s.encode() for s in SUBJECTS} | {f"Placement/apps/extra-{i}".encode() for i in range(PLACEMENTS)}
    await world.collect(topic, lambda got: wanted <= {r.key for r in got})


async def test_any_replica_explains_and_evaluates_what_ifs_without_changing_anything(
    world: KafkaWorld, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    world.partitions = 3
    await _seeded(world)
    async with _three(world) as processors:
        await _decided(world)
        urls = [_url(p) for p in processors]
        owners = {key: next(_url(p) for p in processors if p.task_of(key) in p.owned_tasks) for key in SUBJECTS}

        explained: dict[str, Any] = {}
        for key in SUBJECTS:
            answers = [await _ask(f"{url}/explain/{quote(key, safe='')}") for url in urls]
            assert [status for status, _, _ in answers] == [200] * 3, answers
            assert len({orjson.dumps(stable(body)) for _, body, _ in answers}) == 1, key
            forwarded = [to for url, (_, _, to) in zip(urls, answers, strict=True) if url != owners[key]]
            assert forwarded == [owners[key]] * 2, "the two others forward to the owner"
            explained[key] = stable(answers[0][1])
        assert explained["PlacementRule/apps/db"]["round"] >= 1, "the rule's rounds are explained"
        assert explained["PlacementRule/apps/db"]["advisors"]["expected"] == ["veto", "cpu"]
        assert explained["Application/default"]["applications"], "the partition's applications are explained"
        assert len(explained["Placement/apps/web"]["selected"]) == 2

        settings = _settings(world)
        before = await _ends(world, settings)
        documents = _what_if_documents()
        what_ifs: dict[str, dict[str, Any]] = {}
        for key, document in documents.items():
            answers = [await _ask(f"{url}/what-if", document) for url in urls]
            assert [status for status, _, _ in answers] == [200] * 3, answers
            # a round opened now has its deadline from now
            assert len({orjson.dumps(without(stable(body), {"deadline"})) for _, body, _ in answers}) == 1, key
            what_ifs[key] = answers[0][1]

        web = what_ifs["Placement/apps/web"]
        assert web["exists"] and len(web["current"]["clusters"]) == 2
        assert len(web["decision"]["clusters"]) == 1, "numberOfClusters: 1"
        assert len(web["changes"]["clusters"]["removed"]) == 1 and not web["changes"]["clusters"]["added"]
        app = what_ifs["Application/default"]
        assert app["decision"] == {"application": "app-new", "queue": "root.analytics", "rule": "provided"}
        assert app["current"] is None
        rule = what_ifs["PlacementRule/apps/db"]
        assert rule["exists"] and rule["decision"]["advisors"] == ["veto"]
        assert rule["changes"]["advisors"] == {"added": [], "removed": ["cpu"]}
        document = tmp_path / "web.yaml"
        document.write_bytes(documents["Placement/apps/web"])
        assert await asyncio.to_thread(main, ["what-if", "-f", str(document), "--url", urls[2]]) == 0
        printed = orjson.loads(capsysbinary.readouterr().out)
        assert without(stable(printed), {"deadline"}) == without(stable(web), {"deadline"})
        new = await _ask(f"{urls[0]}/what-if", _placement("brand-new", clusters=1))
        assert new[0] == 200 and not new[1]["exists"] and new[1]["current"] is None

        await asyncio.sleep(1)  # anything a what-if published or scheduled would be there by now
        assert await _ends(world, settings) == before, "a what-if publishes nothing"
        for key in SUBJECTS:
            status, body, _ = await _ask(f"{urls[1]}/explain/{quote(key, safe='')}")
            assert status == 200 and stable(body) == explained[key], f"{key}'s state is unchanged"

        status, body, _ = await _ask(f"{urls[2]}/what-if", b"kind: ManagedCluster\nmetadata: {name: x}\n")
        assert status == 400 and "not a subject" in body["error"]


def _placement(name: str, clusters: int) -> bytes:
    body = yaml.safe_load((EXAMPLES / "placement.yaml").read_text())
    body["metadata"]["name"] = name
    body["spec"]["numberOfClusters"] = clusters
    return yaml.safe_dump(body).encode()


def _what_if_documents() -> dict[str, bytes]:
    rule = yaml.safe_load((EXAMPLES / "placementrule.yaml").read_text())
    rule["spec"]["advisors"] = rule["spec"]["advisors"][:1]
    pod = next(b for b in yaml.safe_load_all((EXAMPLES / "pods.yaml").read_text()) if b and b["kind"] == "Pod")
    pod["metadata"]["labels"]["applicationId"] = "app-new"
    return {
        "Placement/apps/web": _placement("web", clusters=1),
        "PlacementRule/apps/db": orjson.dumps(rule),
        "Application/default": yaml.safe_dump(pod).encode(),
    }


class _GatedReader(AIOKafkaConsumer):  # type: ignore[misc]
    """A restorer that reads one record a fetch and, once it has read one, waits for the gate."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = asyncio.Event()
        self.reached = asyncio.Event()

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]:
        if self.reached.is_set():
            await self.gate.wait()
        batch: dict[TopicPartition, list[Record]] = await super().getmany(
            *partitions, timeout_ms=timeout_ms, max_records=1
        )
        if any(batch.values()):
            self.reached.set()
        return batch


async def test_describe_lists_members_tasks_lag_and_a_restore_in_progress(
    world: KafkaWorld, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world.partitions = 4
    await _seeded(world)
    async with _three(world) as processors:
        await _decided(world)
        settings = _settings(world)
        described = await describe_group(settings)
        assert described["state"] == "Stable" and described["protocol"] == "range"
        members = described["members"]
        assert sorted(m["url"] for m in members) == sorted(_url(p) for p in processors)
        assert all(m["version"] == streams.service.VERSION for m in members)
        assert sorted(t for m in members for t in m["tasks"]) == [0, 1, 2, 3]
        assert [t["task"] for t in described["tasks"]] == [0, 1, 2, 3]
        assert all(t["records"] == 0 and t["owner"] for t in described["tasks"]), "all caught up"
        assert all(m["status"]["ready"] for m in members)
        # the first instance decided everything before the others joined and took tasks from it
        assert any(m["status"]["lastCommitAt"] and m["status"]["lastDecisionAt"] for m in members)
        assert sum(m["status"]["subjects"] for m in members) > PLACEMENTS
        assert "LAG RECORDS" in render_table(described)
        # the command: the group's topics come from the members' subscriptions, the addresses from their metadata
        command = ["describe", "--bootstrap", world.bootstrap, "--group", world.group]
        assert await asyncio.to_thread(main, command) == 0
        table = capsys.readouterr().out
        assert all(_url(p) in table for p in processors) and "LAG SECONDS" in table

        readers: list[_GatedReader] = []

        def gated(kafka: KafkaSettings, client_id: str, **options: Any) -> _GatedReader:
            reader = _GatedReader(
                **connection_options(kafka),
                client_id=client_id,
                group_id=None,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                isolation_level="read_committed",
                **options,
            )
            readers.append(reader)
            return reader

        monkeypatch.setattr(streams.service, "new_reader", gated)
        fourth = Processor(settings)
        run = asyncio.create_task(fourth.run())
        try:
            await wait_for(lambda: bool(readers) and readers[0].reached.is_set(), timeout=60)
            described = await describe_group(settings)
            assert len(described["members"]) == 4
            restoring = [t for t in described["tasks"] if t["restore"] is not None]
            assert len(restoring) == 1, described["tasks"]
            restore = restoring[0]["restore"]
            assert 0 < restore["readTo"] < restore["endOffset"], restore
            (fourth_member,) = [m for m in described["members"] if m["url"] == _url(fourth)]
            assert fourth_member["tasks"] == [restoring[0]["task"]]
            assert fourth_member["status"]["restoring"] == [restoring[0]["task"]]
            assert "restoring: offset" in render_table(described)

            # a submission for the task being restored waits: the lag shows it, in records and in seconds
            task = restoring[0]["task"]
            name = next(f"lag-{i}" for i in range(1000) if partition_of(f"Placement/apps/lag-{i}", 4) == task)
            placement = yaml.safe_load(_placement(name, clusters=1))
            role, key, value = _record(placement, datetime.now(UTC))
            await world.produce([(settings.topics.name(role), key, value)])
            await asyncio.sleep(0.5)
            described = await describe_group(settings)
            (lagging,) = [t for t in described["tasks"] if t["records"]]
            assert lagging["task"] == task and lagging["records"] == 1 and lagging["seconds"] >= 0.5

            readers[0].gate.set()
            await wait_for(lambda: fourth.ready, timeout=60)
            described = await describe_group(settings)
            assert all(t["restore"] is None for t in described["tasks"])
            (fourth_member,) = [m for m in described["members"] if m["url"] == _url(fourth)]
            assert [r["done"] for r in fourth_member["status"]["restores"]["last"]] == [True]
        finally:
            if readers:
                readers[0].gate.set()
            fourth.request_stop()
            await asyncio.wait_for(run, 30)

        # the fourth left: the map follows, and every one of the three answers for every subject again
        await _settled(processors)
        for url in (_url(p) for p in processors):
            for key in SUBJECTS:
                status, _, _ = await _ask(f"{url}/explain/{quote(key, safe='')}")
                assert status == 200, (url, key)
