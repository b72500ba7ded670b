"""A group of this checkout and the previous release (plain range, no member metadata): the assignment is shared,
`describe` lists the old member without an address or release, and a request for one of its subjects is refused
with 503 naming that member instead of being forwarded nowhere."""

from __future__ import annotations

import asyncio
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import orjson
import pytest

from cli.describe import describe_group
from streams.kafka.admin import create_topics
from streams.kafka.tasks import partition_of
from tests.faults.releases import install_release, previous_release
from tests.integration.kafka_support import KafkaWorld, running, wait_for

pytestmark = pytest.mark.integration


def _explain(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, str(orjson.loads(exc.read())["error"])


async def test_a_subject_of_an_earlier_release_member_is_refused_naming_it(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    previous = await asyncio.to_thread(install_release, previous_release())
    world = KafkaWorld(kafka_bootstrap, partitions=4)
    settings = world.settings()
    await create_topics(settings)
    async with running(settings) as current:  # first in the group: the leader, handing out the map
        env = {**os.environ, **world.env()}
        env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
        env.pop("PYTHONPATH", None)  # the release runs its own code, not this checkout's
        with (tmp_path / "previous.log").open("wb") as log:
            old = subprocess.Popen(previous, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:

            def shared() -> bool:
                directory = current.assignor.directory
                return (
                    directory.known
                    and len(directory.members) == 2
                    and not current.assignor.joining
                    and len(current.owned_tasks) == 2
                )

            await wait_for(shared, timeout=90)
            described = await describe_group(settings)
            (earlier,) = [m for m in described["members"] if m["version"] is None]
            assert earlier["url"] is None and len(earlier["tasks"]) == 2
            assert sorted(t for m in described["members"] for t in m["tasks"]) == [0, 1, 2, 3]

            task = earlier["tasks"][0]
            key = next(f"Placement/apps/p{i}" for i in range(1000) if partition_of(f"Placement/apps/p{i}", 4) == task)
            url = f"http://127.0.0.1:{current.http_port}/explain/{quote(key, safe='')}"
            status, message = await asyncio.to_thread(_explain, url)
            assert status == 503
            assert earlier["memberId"] in message and "advertises no HTTP address" in message
        finally:
            old.terminate()
            await asyncio.to_thread(old.wait, 30)
