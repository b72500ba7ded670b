"""`placement-stream run` with no broker: it says so, answers its probes, and stops at once on a signal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from localbroker.procs import free_ports

SHUTDOWN_TIMEOUT_SECONDS = 20.0


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_without_a_broker_run_says_so_and_stops_without_waiting_for_its_clients(sig: signal.Signals) -> None:
    """A Kafka client's stop with the broker gone waits until the whole stop's timeout (20 s) cuts it short, unless
    each client's stop is bounded; the figure is not a speed goal, only far from that timeout on a loaded machine."""
    http = free_ports(1)[0]
    env = {
        **os.environ,
        "PLACEMENT_KAFKA__BOOTSTRAP_SERVERS": f"127.0.0.1:{free_ports(1)[0]}",  # nothing listens there
        "PLACEMENT_HTTP_PORT": str(http),
        "PLACEMENT_SHUTDOWN_TIMEOUT_SECONDS": str(SHUTDOWN_TIMEOUT_SECONDS),
    }
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    command = [sys.executable, "-m", "streams", "run"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while _status(f"http://127.0.0.1:{http}/livez") != 200:
            assert time.monotonic() < deadline, "the probes never answered"
            time.sleep(0.1)
        assert _status(f"http://127.0.0.1:{http}/readyz") == 503
        time.sleep(2.5)  # at least one retry
        sent = time.monotonic()
        process.send_signal(sig)
        _, stderr = process.communicate(timeout=10)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
    log = stderr.decode()
    assert process.returncode == 0, log
    assert took < SHUTDOWN_TIMEOUT_SECONDS / 2, f"took {took:.2f} s to stop: the clients' stops were waited for"
    assert "Kafka is not reachable; retrying until it is" in log
    assert "Traceback" not in log and "never retrieved" not in log
