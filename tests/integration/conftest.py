"""Fixtures of the real-broker tests; the helpers live in kafka_support."""

from __future__ import annotations

import pytest
from kafka_support import KafkaWorld


@pytest.fixture
def world(kafka_bootstrap: str) -> KafkaWorld:
    """Private topics and consumer group for one test, on the session's broker."""
    return KafkaWorld(kafka_bootstrap)
