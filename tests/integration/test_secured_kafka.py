"""The processor, the example advisors and the tools on a secured broker (SASL_SSL, mutual TLS, ACLs enforced by
StandardAuthorizer), each principal holding exactly the ACLs docs/security.md lists and nothing else.

One secured broker serves the module; each test has its own topics and group. Every log record, error and metric
these tests see is checked for the secrets they use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka_support import EXAMPLES, Record, free_port, http_get, values

from connection.security import connection_options
from localbroker import LocalBroker
from localbroker.acls import grant
from localbroker.secure import make_ca
from localbroker.testing import secure_broker
from streams.http import http_get as blocking_get
from streams.kafka.access import Grant, advisor_grants, deployer_grants, processor_grants, submitter_grants
from streams.kafka.admin import ensure_topics, missing_access
from streams.kafka.clients import admin_client
from streams.service import Processor
from streams.settings import KafkaSettings, Settings, TopicNames
from topics.names import TopicRole

pytestmark = pytest.mark.integration

USERS = ("processor", "submitter", "deployer", "advisor-veto", "advisor-cpu", "limited")
EXPLAIN_TOKEN = "explain-" + uuid.uuid4().hex
ADVISORS = {"veto": ("advisors.veto", ["cluster4"]), "cpu": ("advisors.cpu_priority", [])}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with secure_broker(tmp_path_factory.mktemp("secured"), dict.fromkeys(USERS)) as started:
        yield started


@pytest.fixture
def secrets_seen(broker: LocalBroker, caplog: pytest.LogCaptureFixture) -> Iterator[list[str]]:
    """Collects what the test saw besides the logs (errors, metrics); at the end no secret may appear in any of it
    nor in any log record (aiokafka's included, at DEBUG)."""
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    yield seen
    texts = seen + [f"{r.getMessage()} {r.__dict__}" for r in caplog.records]
    for secret in [*broker.tls.users().values(), EXPLAIN_TOKEN]:
        leaks = [text[:200] for text in texts if secret in text]
        assert not leaks, f"a secret appeared in {len(leaks)} log lines, errors or metrics: {leaks[:3]}"


class Secured:
    """One test's topics and group on the secured broker, and a client settings factory per principal."""

    def __init__(self, broker: LocalBroker) -> None:
        self.broker = broker
        self.run_id = uuid.uuid4().hex[:10]
        self.prefix = f"s{self.run_id}."
        self.topics = TopicNames.prefixed(self.prefix)
        self.group = f"placement-{self.run_id}"
        self.ca = broker.tls.ca[0]

    def kafka(self, user: str, mode: str = "scram-sha-512", **extra: Any) -> KafkaSettings:
        """Connection settings of `user` in one of the supported ways of authenticating."""
        base: dict[str, Any] = {
            "bootstrap_servers": self.broker.bootstrap,
            "group_id": self.group,
            "task_partitions": 2,
        }
        password = self.broker.tls.directory / f"{user}.password"
        password.write_text(self.broker.tls.users()[user] + "\n")
        if mode == "mutual-tls":
            cert, key = self.broker.tls.client_certificate(user)
            base |= {"bootstrap_servers": self.broker.tls_bootstrap, "security_protocol": "SSL"}
            base |= {"ssl_cert_file": cert, "ssl_key_file": key}
        elif mode == "oauthbearer":
            token = self.broker.tls.directory / f"{user}.token"
            token.write_text(_unsigned_token(user))
            base |= {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_file": token}
        else:
            mechanism = mode.upper()
            base |= {"security_protocol": "SASL_SSL", "sasl_mechanism": mechanism, "sasl_username": user}
            base |= {"sasl_password_file": password}
        return KafkaSettings(**{"ssl_ca_file": self.ca, **base, **extra})

    def settings(self, kafka: KafkaSettings, **overrides: Any) -> Settings:
        overrides.setdefault("http_port", free_port())
        return Settings(kafka=kafka, topics=self.topics, **overrides)

    async def allow(self, user: str, grants: list[Grant]) -> None:
        await grant(self.broker.bootstrap, self.broker.admin_options(), f"User:{user}", grants)

    async def create_topics(self) -> None:
        """As an administrator would, so the processor needs no Create."""
        admin = admin_client(self.kafka("admin"))
        await admin.start()
        try:
            await ensure_topics(self.settings(self.kafka("admin")), admin)
        finally:
            await admin.close()

    async def send_examples(self, user: str = "submitter") -> int:
        """examples/events.jsonl with today's times, as the submitter principal."""
        now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        producer = AIOKafkaProducer(**connection_options(self.kafka(user)), acks="all")
        await producer.start()
        try:
            lines = (EXAMPLES / "events.jsonl").read_bytes().splitlines()
            for line in lines:
                item = orjson.loads(line)
                item["value"]["time"] = now
                topic = self.prefix + item["topic"]
                await producer.send_and_wait(topic, orjson.dumps(item["value"]), key=item["key"].encode())
        finally:
            await producer.stop()
        return len(lines)

    async def collect(
        self,
        user: str,
        role: TopicRole,
        types: set[str],
        until: Callable[[list[dict[str, Any]]], bool] = lambda _: True,
        timeout: float = 60,
    ) -> list[Record]:
        """Read a topic as `user` in its own group until every event type in `types` was seen and `until` holds."""
        consumer = AIOKafkaConsumer(
            self.topics.name(role),
            **connection_options(self.kafka(user)),
            group_id=f"{user}-{self.run_id}",
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        await consumer.start()
        records: list[Record] = []
        deadline = time.monotonic() + timeout
        try:
            while not (types <= {v["type"] for v in values(records)} and until(values(records))):
                assert time.monotonic() < deadline, f"only {sorted({v['type'] for v in values(records)})} seen"
                for batch in (await consumer.getmany(timeout_ms=200)).values():
                    records.extend(batch)
        finally:
            await consumer.stop()
        return records


def _unsigned_token(subject: str) -> str:
    """A development OAUTHBEARER token (alg none), which the local broker's default validator accepts."""
    import base64

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(orjson.dumps(value)).rstrip(b"=").decode()

    now = int(time.time())
    return f"{part({'alg': 'none'})}.{part({'sub': subject, 'iat': now, 'exp': now + 3600})}."


@asynccontextmanager
async def started(settings: Settings) -> AsyncIterator[tuple[Processor, asyncio.Task[None]]]:
    """A processor running in this loop (ready or not) until the block ends."""
    processor = Processor(settings)
    task = asyncio.create_task(processor.run())
    try:
        yield processor, task
    finally:
        processor.request_stop()
        await asyncio.wait_for(task, 30)


async def until_ready(processor: Processor, task: asyncio.Task[None], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not processor.ready:
        if task.done():
            task.result()
        assert time.monotonic() < deadline, "processor did not become ready"
        await asyncio.sleep(0.05)


def _rule_decided(events: list[dict[str, Any]]) -> bool:
    """The hybrid rule placed, after the advisors' round."""
    return any(e["type"] == "placementrule.decided.v1" and e["data"]["decisions"] for e in events)


def _advisor(world: Secured, name: str, workdir: Path, **security: Any) -> subprocess.Popen[bytes]:
    """An example advisor program as its own principal, its credentials from files in the environment."""
    module, args = ADVISORS[name]
    kafka = world.kafka(f"advisor-{name}", **security)
    env = {**os.environ, **Settings(kafka=kafka).environment()}
    command = [sys.executable, "-m", module, "--bootstrap", world.broker.bootstrap, "--name", name]
    command += ["--topic-prefix", world.prefix, "--group", f"advisor-{name}-{world.run_id}", *args]
    with (workdir / f"advisor-{name}.log").open("wb") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)


async def test_processor_with_documented_acls_decides_queue_cluster_and_hybrid(
    broker: LocalBroker, tmp_path: Path, secrets_seen: list[str]
) -> None:
    """SCRAM-SHA-512 over TLS, topics created by an administrator: every principal has exactly its documented
    ACLs, and applications, placements and a hybrid rule (both example advisors answering) are decided."""
    world = Secured(broker)
    await world.create_topics()
    settings = world.settings(
        world.kafka("processor"), queue_config=EXAMPLES / "queues.yaml", explain_token=EXPLAIN_TOKEN
    )
    await world.allow("processor", processor_grants(settings))
    await world.allow("submitter", submitter_grants(settings))
    await world.allow("deployer", deployer_grants(settings, f"deployer-{world.run_id}"))
    for name, (module, _) in ADVISORS.items():
        follows = module == "advisors.cpu_priority"
        grants = advisor_grants(settings, f"advisor-{name}-{world.run_id}", reads_cluster_status=follows)
        await world.allow(f"advisor-{name}", grants)
    submitted = (TopicRole.SUBMISSIONS, TopicRole.CLUSTER_STATUS, TopicRole.TAINTS)
    admin = admin_client(world.kafka("submitter"))  # a tool as the submitter checks only the topics it writes
    await admin.start()
    try:
        assert set(await ensure_topics(settings, admin, submitted)) == {world.topics.name(r) for r in submitted}
    finally:
        await admin.close()
    advisors = [_advisor(world, name, tmp_path) for name in ADVISORS]
    try:
        async with started(settings) as (processor, task):
            await until_ready(processor, task)
            await world.send_examples()
            wanted = {"application.placed.v1", "placement.decided.v1", "placementrule.decided.v1"}
            decisions = await world.collect("deployer", TopicRole.DECISIONS, wanted, _rule_decided)
            url = f"http://127.0.0.1:{processor.http_port}"
            explain = f"{url}/explain/apps/web"
            assert (await http_get(explain))[0] == 401
            status, body = await asyncio.to_thread(blocking_get, explain, 5, EXPLAIN_TOKEN)
            assert status == 200
            assert (await http_get(f"{url}/readyz"))[0] == 200
            metrics = (await http_get(f"{url}/metrics"))[1]
            secrets_seen += [metrics, body.decode()]
    finally:
        for advisor in advisors:
            advisor.terminate()
            advisor.wait(20)
    posts = await world.collect("admin", TopicRole.ADVISOR_RECOMMENDATIONS, {"recommendation.posted.v1"})
    assert {v["data"]["advisor"] for v in values(posts, "recommendation.posted.v1")} == set(ADVISORS)
    (rule,) = values(decisions, "placementrule.decided.v1")[-1:]
    assert "cluster4" not in {d["name"] for d in rule["data"]["decisions"]}  # vetoed by the veto advisor
    secrets_seen += [(tmp_path / f"advisor-{name}.log").read_text() for name in ADVISORS]
    async with started(settings) as (processor, task):  # the start checks again, on topics holding data now
        await until_ready(processor, task)
        assert processor.health.refusal is None


async def test_missing_write_on_decisions_is_one_clear_error_until_granted(
    broker: LocalBroker, caplog: pytest.LogCaptureFixture, secrets_seen: list[str]
) -> None:
    """The processor says once what to grant, stays not ready (the check is repeated, silently), and goes on
    by itself once the ACL is there."""
    world = Secured(broker)
    await world.create_topics()
    settings = world.settings(world.kafka("limited"), queue_config=EXAMPLES / "queues.yaml")
    missing = Grant("Topic", world.topics.decisions, "Write")
    await world.allow("limited", [g for g in processor_grants(settings) if g != missing])
    async with started(settings) as (processor, task):
        await asyncio.sleep(7)  # past the first recheck
        denied = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert denied == [
            f"Kafka denies User:limited access (checked at start; rechecked every few seconds): "
            f"grant Write on Topic {world.topics.decisions}"
        ]
        assert not processor.ready
        assert (await http_get(f"http://127.0.0.1:{settings.http_port}/readyz"))[0] == 503
        await world.allow("limited", [missing])
        await until_ready(processor, task, timeout=30)
        secrets_seen.append((await http_get(f"http://127.0.0.1:{settings.http_port}/metrics"))[1])


@pytest.mark.parametrize(
    ("kind", "role"),
    [("Topic", TopicRole.SUBMISSIONS), ("Topic", TopicRole.DEAD_LETTER), ("Group", None), ("TransactionalId", None)],
    ids=["read-input", "write-dead-letter", "group", "transactional-ids"],
)
async def test_the_start_check_names_exactly_the_missing_acl(
    broker: LocalBroker, secrets_seen: list[str], kind: str, role: TopicRole | None
) -> None:
    """Each documented ACL is needed, and the check names the one left out (whatever its resource type)."""
    world = Secured(broker)
    await world.create_topics()
    settings = world.settings(world.kafka("limited"))
    grants = processor_grants(settings)
    (left_out,) = [g for g in grants if g.resource_type == kind and (role is None or g.name == world.topics.name(role))]
    await world.allow("limited", [g for g in grants if g != left_out])
    admin = admin_client(settings.kafka)
    await admin.start()
    try:
        assert await missing_access(settings, admin) == [left_out]
    finally:
        await admin.close()


REJECTIONS = [
    ("scram-sha-512", "wrong-password", "SASL SCRAM-SHA-512 authentication of User:processor failed"),
    ("scram-sha-512", "untrusted-ca", "TLS: the broker's certificate is not trusted"),
    ("mutual-tls", "untrusted-ca", "TLS: the broker's certificate is not trusted"),
]


async def test_rejected_login_or_certificate_is_one_clear_error_each(
    broker: LocalBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture, secrets_seen: list[str]
) -> None:
    """A wrong password and an untrusted broker certificate (SASL and mutual TLS): one processor per row, run
    side by side past the first recheck; each says what is wrong in one line, and none is ready."""
    other_ca = make_ca(tmp_path, "other-ca")[0]
    wrong = tmp_path / "password"
    wrong.write_text(broker.tls.users()["submitter"] + "\n")  # a real secret, of someone else
    kafkas = []
    for mode, change, _ in REJECTIONS:
        world = Secured(broker)
        changed = {"sasl_password_file": wrong} if change == "wrong-password" else {"ssl_ca_file": other_ca}
        kafkas.append(world.kafka("processor", mode, client_id=f"{mode}-{change}", **changed))
    advisor_world = Secured(broker)
    advisor = _advisor(advisor_world, "veto", tmp_path, sasl_password_file=wrong)
    async with contextlib.AsyncExitStack() as stack:
        processors = [(await stack.enter_async_context(started(Secured(broker).settings(k))))[0] for k in kafkas]
        await asyncio.sleep(6)  # past the first recheck
        assert not any(processor.ready for processor in processors)
    assert advisor.wait(30) == 1
    advisor_log = (tmp_path / "advisor-veto.log").read_text()
    assert "advisor stopped: SASL SCRAM-SHA-512 authentication of User:advisor-veto failed" in advisor_log
    secrets_seen.append(advisor_log)
    errors = sorted(r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert len(errors) == len(REJECTIONS)
    for message in {message for _, _, message in REJECTIONS}:
        expected = sum(1 for *_, m in REJECTIONS if m == message)
        assert sum(1 for e in errors if e.startswith(f"cannot use Kafka: {message}")) == expected


@pytest.mark.parametrize(
    ("mode", "creates_topics"),
    [("mutual-tls", False), ("scram-sha-256", False), ("plain", True), ("oauthbearer", False)],
)
async def test_each_way_of_authenticating_decides_with_the_documented_acls(
    broker: LocalBroker, secrets_seen: list[str], mode: str, creates_topics: bool
) -> None:
    """Mutual TLS (the certificate's CN is the principal), SCRAM-SHA-256, PLAIN, and OAUTHBEARER; with PLAIN
    the processor creates its own topics, with the Create ACLs that takes."""
    world = Secured(broker)
    if not creates_topics:
        await world.create_topics()
    settings = world.settings(world.kafka("processor", mode), queue_config=EXAMPLES / "queues.yaml")
    await world.allow("processor", processor_grants(settings, creates_topics=creates_topics))
    await world.allow("submitter", submitter_grants(settings))
    await world.allow("deployer", deployer_grants(settings, f"deployer-{world.run_id}"))
    async with started(settings) as (processor, task):
        await until_ready(processor, task)
        await world.send_examples()
        await world.collect("deployer", TopicRole.DECISIONS, {"application.placed.v1", "placement.decided.v1"})
