"""The replica's routes on a processor that has not joined a group yet, without Kafka: /what-if and /explain need
the token when one is set and say the instance has not joined; a document that is no subject gets 400; /status
answers at once and openly."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from streams.http import HealthServer, http_call
from streams.replica import Replica
from streams.service import Processor
from streams.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOKEN = "s3cret"


@pytest.fixture
async def base() -> AsyncIterator[str]:
    processor = Processor(Settings(http_port=0))
    replica = Replica(processor, processor.assignor, 5.0)
    server = HealthServer(processor.metrics, lambda: True, lambda: False, None, TOKEN, replica=replica)
    port = await server.start("127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await server.stop()


async def call(url: str, body: bytes | None = None, token: str | None = TOKEN) -> tuple[int, str]:
    status, answer = await asyncio.to_thread(http_call, url, 10, token, body)
    loaded = orjson.loads(answer)
    return status, loaded.get("error") or ("ok" if loaded.get("tasks") == [] else str(loaded))


@pytest.mark.parametrize(
    ("path", "body", "token", "expected"),
    [
        ("/what-if", (EXAMPLES / "placement.yaml").read_bytes(), None, (401, "/what-if needs an Authorization")),
        ("/explain/apps/web", None, "wrong", (401, "/explain needs an Authorization")),
        ("/what-if", (EXAMPLES / "placement.yaml").read_bytes(), TOKEN, (503, "has not joined the group yet")),
        ("/explain/apps/web", None, TOKEN, (503, "has not joined the group yet")),
        ("/what-if", b"kind: ManagedCluster\nmetadata: {name: c1}\n", TOKEN, (400, "inventory, not a subject")),
        ("/what-if", b"[unclosed", TOKEN, (400, "not YAML or JSON")),
        ("/what-if", None, TOKEN, (405, "POST a document")),
        ("/explain/nonsense", None, TOKEN, (400, "is not a subject key")),
        ("/status", None, None, (200, "ok")),
    ],
)
async def test_routes_before_joining(
    base: str, path: str, body: bytes | None, token: str | None, expected: tuple[int, str]
) -> None:
    status, message = await call(base + path, body, token)
    assert status == expected[0], message
    assert expected[1] in message


def _exchange(port: int, head: bytes, body: bytes) -> tuple[bytes, bytes]:
    """Send `head`, read the interim answer, then send `body` and read the rest."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        interim = sock.recv(1024)
        sock.sendall(body)
        rest = b""
        while chunk := sock.recv(65536):
            rest += chunk
    return interim, rest


async def test_a_client_expecting_100_continue_is_told_to_send_its_body(base: str) -> None:
    body = (EXAMPLES / "placement.yaml").read_bytes()
    head = (
        f"POST /what-if HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n"
        "Expect: 100-continue\r\n\r\n"
    ).encode()
    interim, rest = await asyncio.to_thread(_exchange, int(base.rsplit(":", 1)[1]), head, body)
    assert interim.startswith(b"HTTP/1.1 100 Continue")
    assert rest.startswith(b"HTTP/1.1 503") and b"has not joined the group yet" in rest
