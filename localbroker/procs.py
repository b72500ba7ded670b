"""Process, port and event-loop helpers for the local broker, kept apart from the Kafka-specific code."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["free_ports", "log_tail", "owns_pid", "port_is_free", "port_open", "process_alive", "run_sync"]

HOST = "127.0.0.1"
T = TypeVar("T")


_LOWEST_SPARE = 20_000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _below_ephemeral() -> range | None:
    """Ports the kernel never hands to an outgoing connection: those below its ephemeral range."""
    try:
        low = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return range(_LOWEST_SPARE, low) if low - _LOWEST_SPARE >= 1_000 else None


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports for servers started afterwards (the broker, a processor's HTTP endpoint).

    Taken below the kernel's ephemeral range where it can be read: a port from that range, free when probed,
    can be given to any outgoing connection before its server binds it, and a fault run's restarted processor
    once failed so ("address already in use"). All probes are held open together, so no port is repeated."""
    sockets: list[socket.socket] = []
    spare = _below_ephemeral()
    candidates = random.sample(spare, min(len(spare), 200)) if spare is not None else []
    try:
        for port in [*candidates, *([0] * count)]:  # the kernel's own choice when the spare range runs short
            if len(sockets) == count:
                break
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((HOST, port))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def port_is_free(port: int) -> bool:
    """A restart reuses recorded ports; say so clearly when something else took one meanwhile.

    The probe listens with SO_REUSEADDR, as the broker's own (JVM) server sockets do: connections of a broker that
    died (SIGKILL, a crash) linger in TIME_WAIT for a minute, and they must not block its restart. A port another
    process listens on is still refused.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
            sock.listen()
        except OSError:
            return False
        return True


async def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP on host:port; a cheap pre-check before a Kafka client tries."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError):
        return False
    writer.close()
    await writer.wait_closed()
    return True


def log_tail(path: Path, lines: int = 40) -> str:
    """The last lines of the broker log, which explain most start-up failures."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no broker.log)"
    return "\n".join(text.splitlines()[-lines:]) or "(broker.log is empty)"


def process_alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie (containers may lack an init that reaps orphans)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def owns_pid(pid: int, config: Path) -> bool:
    """Guard against pid reuse: only signal a process that is `kafka.Kafka <this data dir's config>`."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return process_alive(pid)  # no procfs: trust the pid file
    return b"kafka.Kafka" in argv and str(config).encode() in argv


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on a private loop in a worker thread: safe whether or not the caller has a loop."""
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(asyncio.run(coro))
        except BaseException as exc:
            error.append(exc)

    worker = threading.Thread(target=target, name="localbroker-ready", daemon=True)
    worker.start()
    worker.join()
    if error:
        raise error[0]
    return result[0]
