"""`placement-stream explain`: NS/NAME or a full subject key of any kind, from a replay or a running processor's HTTP
endpoint; a malformed key is a usage error (exit 2, one line on stderr), never a traceback."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import orjson
import pytest

from streams.cli import main
from streams.http import HealthServer
from streams.metrics import Metrics
from streams.replay import Replayer
from streams.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EVENTS = str(EXAMPLES / "events.jsonl")
QUEUES = ["--queue-config", str(EXAMPLES / "queues.yaml")]
GOOD = [
    ("apps/web", "placement", "Placement/apps/web"),
    ("Placement/apps/web", "placement", "Placement/apps/web"),
    ("PlacementRule/apps/db", "placementRule", "PlacementRule/apps/db"),
    ("Application/default", "subject", "Application/default"),
]
MALFORMED = [
    ("web", "'web' is not a subject key"),
    ("Placement/web", "expected NS/NAME or Placement/NS/NAME"),
    ("apps/web/x", "'apps/web/x' is not a subject key"),
    ("PlacementRule/db", "expected PlacementRule/NS/NAME"),
    ("Application/", "expected Application/PARTITION"),
    ("", "'' is not a subject key"),
]


@pytest.mark.parametrize(("key", "field", "subject"), GOOD)
def test_explain_after_a_replay_accepts_every_kind(
    capsys: pytest.CaptureFixture[str], key: str, field: str, subject: str
) -> None:
    assert main(["explain", EVENTS, *QUEUES, "--placement", key]) == 0
    assert orjson.loads(capsys.readouterr().out)[field] == subject


@pytest.mark.parametrize("source", [[EVENTS], ["--url", "http://127.0.0.1:9"]])
@pytest.mark.parametrize(("key", "message"), MALFORMED)
def test_a_malformed_key_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], source: list[str], key: str, message: str
) -> None:
    assert main(["explain", *source, "--placement", key]) == 2  # the processor is not even asked
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("placement-stream explain: ")
    assert message in captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err


@pytest.mark.parametrize("key", ["apps/nothing", "PlacementRule/apps/nothing", "Application/nothing"])
def test_an_unknown_subject_exits_1(capsys: pytest.CaptureFixture[str], key: str) -> None:
    assert main(["explain", EVENTS, *QUEUES, "--subject", key]) == 1
    assert "nothing is not known to" in capsys.readouterr().err


async def test_explain_from_a_running_processor_accepts_every_kind(capsys: pytest.CaptureFixture[str]) -> None:
    replayer = Replayer(Settings(), io.BytesIO(), queue_config=EXAMPLES / "queues.yaml", warn=lambda _: None)
    assert replayer.run((EXAMPLES / "events.jsonl").read_bytes().splitlines()) == 0
    server = HealthServer(Metrics(), lambda: True, lambda: True, lambda k: replayer.runtime.explain(k, replayer.now))
    url = f"http://127.0.0.1:{await server.start('127.0.0.1', 0)}"
    try:
        for key, field, subject in GOOD:
            assert await asyncio.to_thread(main, ["explain", "--url", url, "--placement", key]) == 0
            assert orjson.loads(capsys.readouterr().out)[field] == subject
        assert await asyncio.to_thread(main, ["explain", "--url", url, "--placement", "apps/nothing"]) == 1
        assert f"Placement/apps/nothing is not known to {url}" in capsys.readouterr().err
    finally:
        await server.stop()
