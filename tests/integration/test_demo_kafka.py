"""The demo as a new user meets it: YAML applied, decisions printed, the deployer's files written, a quiet stderr,
and SIGTERM or SIGINT stopping everything it started with exit 0 and no traceback."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kafka_support import KafkaWorld, free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in iter(stream.readline, ""):  # type: ignore[attr-defined]
        into.put(line)
    into.put("")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_the_demo_goes_from_yaml_to_deployed_files_and_stops_cleanly_on_a_signal(
    world: KafkaWorld, tmp_path: Path, stop: signal.Signals
) -> None:
    env = {**os.environ, **world.env(PLACEMENT_HTTP_PORT=str(free_port())), "KAFKA_BOOTSTRAP_SERVERS": world.bootstrap}
    deployed = tmp_path / "deployed"
    seen: list[str] = []
    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(
        [sys.executable, "-m", "cli", "demo", "--deployed-dir", str(deployed)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as demo:
        reader = threading.Thread(target=_lines, args=(demo.stdout, lines), daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + 90
            # both readers of the decisions report before the stop: either may be first, and a stop right after
            # the deployer's line could come before the printer's
            while not all(
                any(wanted in line for line in seen)
                for wanted in ("[deployer] Placement/apps/web: wrote", "placement.decisions] ")
            ):
                assert time.monotonic() < deadline, "".join(seen)
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                assert line, "the demo ended early:\n" + "".join(seen)
                seen.append(line)
            demo.send_signal(stop)
            demo.wait(timeout=20)
        finally:
            if demo.poll() is None:
                demo.kill()
        reader.join(10)
        err = demo.stderr.read() if demo.stderr else ""
    out = "".join(seen) + "".join(iter(lines.get, ""))
    assert demo.returncode == 0, err
    assert f"== broker at {world.bootstrap}" in out
    assert "placement.cluster.open-cluster-management.io/web published" in out
    assert "pod/sleep-app-1 published (application app-1)" in out
    # the decisions printer and the deployer read the decisions independently: either may report first
    assert out.index("published") < out.index("placement.decisions] ")
    assert out.index("published") < out.index("[deployer] Placement/apps/web")
    assert f"== {stop.name}: stopping everything the demo started" in out
    assert (deployed / "placements/apps/web.yaml").is_file()
    assert "Traceback" not in err and "ERROR" not in err, err
