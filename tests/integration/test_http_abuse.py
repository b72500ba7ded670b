"""Local clients leaning on the HTTP endpoint while the processor decides on a real broker: idle connections
holding every slot, oversized headers and scrapers in a loop. The decisions are replay's, nothing lost or
duplicated; probes still answer; every refusal is counted, logged once per reason and never with a traceback."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable

import pytest
from kafka_support import (
    EXAMPLES,
    KafkaWorld,
    http_get,
    parity_inputs,
    published_decisions,
    running,
    wait_for,
)

pytestmark = pytest.mark.integration

Abuser = Callable[[int, threading.Event], None]
_ROUNDS = 5000
"""Bound on each abuser's loop, whatever happens to the test."""


def _hold_idle(port: int, stop: threading.Event) -> None:
    """Keep 12 connections open sending nothing; reopen each one the server closes."""
    held: list[socket.socket] = []
    try:
        for _ in range(_ROUNDS):
            if stop.wait(0.05):
                return
            for sock in list(held):
                sock.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    if sock.recv(1) == b"":
                        held.remove(sock)
                        sock.close()
            while len(held) < 12:
                with contextlib.suppress(OSError):
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    finally:
        for sock in held:
            sock.close()


def _request(port: int, data: bytes) -> None:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        while sock.recv(65536):
            pass


def _oversized(port: int, stop: threading.Event) -> None:
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n"
    for _ in range(_ROUNDS):
        if stop.wait(0.01):
            return
        _request(port, request)


def _scrape(port: int, stop: threading.Event) -> None:
    for _ in range(_ROUNDS):
        if stop.is_set():
            return
        _request(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")


async def test_decisions_are_replays_while_clients_abuse_the_http_endpoint(
    world: KafkaWorld, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    lines, expected = parity_inputs()
    names = world.example_topics()
    settings = world.settings(queue_config=EXAMPLES / "queues.yaml", http_max_connections=8, http_timeout_seconds=1)
    async with running(settings) as processor:
        stop = threading.Event()
        abusers: list[Abuser] = [_hold_idle, _oversized, _scrape, _scrape]
        threads = [threading.Thread(target=f, args=(processor.http_port, stop)) for f in abusers]
        for thread in threads:
            thread.start()
        try:
            for topic, key, value in lines:  # one record per batch, as replay does
                done = processor.records_done
                await world.produce([(names[topic], key, value)])
                await wait_for(lambda d=done: processor.records_done > d)
            records = await world.collect(world.topics.decisions, lambda r: len(r) >= len(expected))
            ready = (await http_get(f"http://127.0.0.1:{processor.http_port}/readyz"))[0]
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
        rejected = {
            reason: processor.metrics.http_rejected.labels(reason)._value.get()
            for reason in ("header_too_large", "too_many_connections", "idle_evicted")
        }
    assert published_decisions(records) == expected
    assert ready == 200
    assert all(count > 0 for count in rejected.values()), rejected
    refusals = [getattr(r, "reason", None) for r in caplog.records if r.name == "placement.http"]
    assert len(refusals) == len(set(refusals))  # at most one line per reason in the test's minute
    assert not [r for r in caplog.records if r.exc_info]
