"""Kubernetes quantities as the contract carries them in ManagedCluster allocatable and capacity."""

from __future__ import annotations

import pytest

from topics.quantity import parse_quantity


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("500m", 0.5),
        ("4Gi", 4294967296.0),
        ("2", 2.0),
        (3, 3.0),
        ("1k", 1000.0),
        ("1.5M", 1.5e6),
        ("1e3", 1000.0),
        ("100Ki", 102400.0),
        ("x", None),
        ("1e400", None),
        ("9Ei", 9 * 2.0**60),
    ],
)
def test_quantities(raw: str | int, value: float | None) -> None:
    assert parse_quantity(raw) == value
