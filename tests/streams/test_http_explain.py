"""`/explain/<key>` on the service's HTTP endpoint, without Kafka: every subject kind the instance holds answers,
a malformed key gets 400 and an unknown subject 404 (both with a JSON `error`), a failing handler 500."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from streams.http import HealthServer, http_get
from streams.metrics import Metrics
from streams.replay import Replayer
from streams.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def replayed() -> Replayer:
    """A runtime holding one subject of each kind: the examples' placement, rule and partition."""
    replayer = Replayer(Settings(), io.BytesIO(), queue_config=EXAMPLES / "queues.yaml", warn=lambda _: None)
    assert replayer.run((EXAMPLES / "events.jsonl").read_bytes().splitlines()) == 0
    return replayer


async def _serve(explain: Callable[[str], dict[str, Any] | None]) -> tuple[HealthServer, str]:
    server = HealthServer(Metrics(), lambda: True, lambda: True, explain)
    port = await server.start("127.0.0.1", 0)
    return server, f"http://127.0.0.1:{port}"


@pytest.fixture
async def base(replayed: Replayer) -> AsyncIterator[str]:
    server, url = await _serve(lambda key: replayed.runtime.explain(key, replayed.now))
    try:
        yield url
    finally:
        await server.stop()


async def get(url: str) -> tuple[int, Any]:
    status, body = await asyncio.to_thread(http_get, url, 10)
    return status, orjson.loads(body)


@pytest.mark.parametrize(
    ("path", "field", "subject"),
    [
        ("apps/web", "placement", "Placement/apps/web"),
        ("Placement/apps/web", "placement", "Placement/apps/web"),
        (quote("Placement/apps/web", safe=""), "placement", "Placement/apps/web"),
        (quote("apps/web", safe=""), "placement", "Placement/apps/web"),
        ("PlacementRule/apps/db", "placementRule", "PlacementRule/apps/db"),
        (quote("PlacementRule/apps/db", safe=""), "placementRule", "PlacementRule/apps/db"),
        ("Application/default", "subject", "Application/default"),
    ],
)
async def test_every_subject_kind_is_explained(base: str, path: str, field: str, subject: str) -> None:
    status, report = await get(f"{base}/explain/{path}")
    assert status == 200, report
    assert report[field] == subject


async def test_the_explained_documents_say_what_each_engine_knows(base: str) -> None:
    _, placement = await get(f"{base}/explain/apps/web")
    assert placement["selected"]
    _, rule = await get(f"{base}/explain/PlacementRule/apps/db")
    assert rule["advisors"]["expected"] == ["veto", "cpu"]
    _, partition = await get(f"{base}/explain/Application/default")
    assert partition["applications"] and partition["configuration"]["rules"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("web", "'web' is not a subject key"),
        ("Placement/web", "expected NS/NAME or Placement/NS/NAME"),
        ("apps/web/x", "'apps/web/x' is not a subject key"),
        ("Placement/Placement/apps/web", "expected NS/NAME or Placement/NS/NAME"),
        ("PlacementRule/db", "expected PlacementRule/NS/NAME"),
        ("Application/default/apps/app-1", "expected Application/PARTITION"),
        ("", "'' is not a subject key"),
        ("apps%20x/web", "no spaces or control characters"),
        ("apps/web%00", "no spaces or control characters"),
    ],
)
async def test_a_malformed_key_is_answered_400_with_the_reason(base: str, path: str, message: str) -> None:
    status, body = await get(f"{base}/explain/{path}")
    assert status == 400
    assert message in body["error"]


@pytest.mark.parametrize(
    "path", ["apps/nothing", "Placement/apps/nothing", "PlacementRule/apps/nothing", "Application/nothing"]
)
async def test_an_unknown_subject_is_answered_404(base: str, path: str) -> None:
    status, body = await get(f"{base}/explain/{path}")
    assert status == 404
    assert "on this instance" in body["error"]


async def test_a_failing_explain_is_answered_500_not_dropped() -> None:
    def broken(key: str) -> dict[str, Any] | None:
        raise RuntimeError(f"engine bug while explaining {key}")

    server, url = await _serve(broken)
    try:
        status, body = await get(f"{url}/explain/apps/web")
        assert (await asyncio.to_thread(http_get, f"{url}/healthz", 10))[0] == 200  # still serving
    finally:
        await server.stop()
    assert status == 500
    assert "error" in body
