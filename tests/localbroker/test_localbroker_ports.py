"""Ports for servers started later: never ones the kernel may give an outgoing connection meanwhile."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from localbroker.procs import free_ports

EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")


@pytest.mark.parametrize("count", [1, 3, 20])
def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range(count: int) -> None:
    ports = free_ports(count)
    assert len(set(ports)) == len(ports) == count
    if EPHEMERAL.exists():
        low = int(EPHEMERAL.read_text().split()[0])
        assert all(port < low for port in ports), (ports, low)
    for port in ports:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))
