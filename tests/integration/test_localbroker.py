"""The local broker launcher against a real Kafka: admin, topics, transactions, restart on the same data dir (after a
clean stop and after SIGKILL, with the dead broker's connections in TIME_WAIT)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import NewTopic
from kafka_support import admin_client

from connection.failures import probe_connection
from localbroker import LocalBroker, ensure_kafka_libs
from localbroker.procs import port_is_free
from streams.settings import KafkaSettings

pytestmark = pytest.mark.integration

TOPIC_ALREADY_EXISTS = 36


def _topic() -> str:
    return f"lb-{uuid.uuid4().hex[:12]}"


async def _create_topic(bootstrap: str, name: str) -> int:
    """Create one topic and return its error code (create_topics reports errors, it does not raise)."""
    async with admin_client(bootstrap) as admin:
        response = await admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)])
    (entry,) = response.topic_errors
    assert entry[0] == name
    return int(entry[1])


async def _list_topics(bootstrap: str) -> list[str]:
    async with admin_client(bootstrap) as admin:
        return await admin.list_topics()


async def test_broker_answers_admin_request(kafka_bootstrap: str) -> None:
    async with admin_client(kafka_bootstrap) as admin:
        cluster = await admin.describe_cluster()
    assert len(cluster["brokers"]) == 1


async def test_created_topic_is_listed_and_second_create_reports_36(kafka_bootstrap: str) -> None:
    name = _topic()
    assert await _create_topic(kafka_bootstrap, name) == 0
    assert name in await _list_topics(kafka_bootstrap)
    assert await _create_topic(kafka_bootstrap, name) == TOPIC_ALREADY_EXISTS


async def test_committed_transaction_is_visible_to_read_committed_consumer(kafka_bootstrap: str) -> None:
    name = _topic()
    assert await _create_topic(kafka_bootstrap, name) == 0
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, transactional_id=f"txn-{name}")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(name, b"committed", key=b"k")
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        name,
        bootstrap_servers=kafka_bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    await consumer.start()
    values: list[bytes | None] = []
    try:
        async with asyncio.timeout(30):
            while not values:
                batches = await consumer.getmany(timeout_ms=500)
                values += [record.value for records in batches.values() for record in records]
    finally:
        await consumer.stop()
    assert values == [b"committed"]


async def test_restart_on_same_data_dir_keeps_topics(tmp_path: Path) -> None:
    broker = LocalBroker(tmp_path / "broker", ensure_kafka_libs())
    name = _topic()
    try:
        first = await broker.astart()
        assert await _create_topic(first, name) == 0
        assert await broker.astop() in {0, 143}

        second = await broker.astart()
        assert second == first, "a restart must reuse the recorded ports"
        assert name in await _list_topics(second)
        assert await _create_topic(second, name) == TOPIC_ALREADY_EXISTS
    finally:
        await broker.astop()


def _plain_bind_refused(port: int) -> bool:
    """Whether binding without SO_REUSEADDR fails: what the old port check did, and what TIME_WAIT makes fail."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False


def _time_wait_port() -> int:
    """A port whose only trace is a connection in TIME_WAIT: the server side closed first, then stopped listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = int(server.getsockname()[1])
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            accepted.close()  # the server closes first: its end of the connection goes to TIME_WAIT
            assert client.recv(1) == b""
    return port


async def _answered_connection(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection the broker has accepted and answered (ApiVersions v0), so nothing is left unread on its side."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client_id = b"localbroker-test"
    request = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id  # api key, version, correlation id
    writer.write(struct.pack(">i", len(request)) + request)
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    response = await reader.readexactly(size)
    assert struct.unpack(">i", response[:4]) == (7,)
    return reader, writer


def _listening(family: socket.AddressFamily, host: str, reuse: bool) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    if reuse:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen()
    return sock


@pytest.mark.parametrize(
    ("family", "host", "reuse"),
    [
        (socket.AF_INET, "127.0.0.1", False),
        (socket.AF_INET, "127.0.0.1", True),  # as the JVM listens
        (socket.AF_INET, "0.0.0.0", True),
        (socket.AF_INET6, "::", True),
    ],
)
def test_a_port_another_process_listens_on_is_not_free(family: socket.AddressFamily, host: str, reuse: bool) -> None:
    with _listening(family, host, reuse) as taken:
        assert not port_is_free(int(taken.getsockname()[1]))


def test_a_port_left_in_time_wait_is_free() -> None:
    port = _time_wait_port()
    assert _plain_bind_refused(port), "the connection should linger in TIME_WAIT"
    assert port_is_free(port)


async def test_start_right_after_the_broker_was_killed_reuses_its_ports(tmp_path: Path) -> None:
    data_dir = tmp_path / "broker"
    crashed = LocalBroker(data_dir, ensure_kafka_libs())
    name = _topic()
    bootstrap = await crashed.astart()
    state = crashed.state
    assert state is not None
    assert not any(port_is_free(p) for p in (state.broker_port, state.controller_port)), "the broker holds them"
    assert await _create_topic(bootstrap, name) == 0
    pid = crashed.running_pid()
    assert pid is not None
    # a client connected while the broker dies: the broker's end of it stays in TIME_WAIT once the client closes
    reader, writer = await _answered_connection(state.broker_port)
    os.killpg(pid, signal.SIGKILL)
    async with asyncio.timeout(30):
        assert await reader.read() == b""
        while crashed.running_pid() is not None:  # reaps the killed JVM
            await asyncio.sleep(0.05)
    writer.close()
    await writer.wait_closed()
    assert _plain_bind_refused(state.broker_port), "the killed broker's connection should linger in TIME_WAIT"

    restarted = LocalBroker(data_dir, ensure_kafka_libs())  # as a new `placement-stream broker start` would
    try:
        assert await restarted.astart() == bootstrap, "a restart must reuse the recorded ports"
        assert name in await _list_topics(bootstrap)
    finally:
        await restarted.astop()


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["broker", "--help"], ["fetch", "start", "stop", "status"]),
        (["broker", "start", "--help"], ["--secure", "--user NAME", "--data-dir", "StandardAuthorizer"]),
        (["broker", "stop", "--help"], ["--timeout", "demo-broker"]),
        (["broker", "status", "--help"], ["--json", "demo-broker"]),
    ],
)
def test_broker_subcommands_have_real_help(command: list[str], says: list[str]) -> None:
    shown = subprocess.run([sys.executable, "-m", "cli", *command], capture_output=True, text=True, check=True).stdout
    assert all(text in shown for text in says), shown
    assert "args" not in shown.split()


def _cli(cache: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PLACEMENT_CACHE_DIR": str(cache), "KAFKA_LIBS": str(ensure_kafka_libs())}
    return subprocess.run(
        [sys.executable, "-m", "cli", "broker", *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )


async def test_secure_broker_from_the_command_line_is_found_by_status_and_stop(tmp_path: Path) -> None:
    """`start --secure` in the demo's data dir: `status` and `stop` without --data-dir find it; a client configured
    by the written settings file gets in as the user it names, and a plaintext client does not."""
    cache = tmp_path / "cache"
    demo_dir = cache / "demo-broker"
    started = _cli(cache, "start", "--secure", "--user", "placement", "--data-dir", str(demo_dir))
    try:
        assert started.returncode == 0, started.stderr
        bootstrap = started.stdout.strip()
        status = _cli(cache, "status")
        assert status.returncode == 0
        assert status.stdout.startswith("running secure ") and f"bootstrap={bootstrap}" in status.stdout
        settings = dict(
            line.split("=", 1) for line in (demo_dir / "tls" / "placement.env").read_text().splitlines() if line
        )
        password = (demo_dir / "tls" / "placement.password").read_text().strip()
        assert password not in started.stdout + started.stderr + "".join(settings.values())
        assert settings["PLACEMENT_KAFKA__SASL_USERNAME"] == "placement"
        assert settings["PLACEMENT_KAFKA__BOOTSTRAP_SERVERS"] == bootstrap
        kafka = KafkaSettings(
            **{key.removeprefix("PLACEMENT_KAFKA__").lower(): value for key, value in settings.items()}
        )
        assert await probe_connection(kafka) is None
        refused = await probe_connection(KafkaSettings(bootstrap_servers=bootstrap), timeout_ms=3000)
        assert refused is not None
    finally:
        stopped = _cli(cache, "stop")
    assert stopped.returncode == 0 and f"stopped {demo_dir}" in stopped.stderr
    assert _cli(cache, "status").returncode == 1
