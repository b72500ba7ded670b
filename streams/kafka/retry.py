"""Retries only for what Kafka itself calls retriable, with bounded exponential backoff."""

from __future__ import annotations

from aiokafka.errors import KafkaError
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_exponential

__all__ = ["is_retriable", "kafka_retrying"]


def is_retriable(error: BaseException) -> bool:
    """aiokafka marks transient errors (leader moves, timeouts, coordinator loading) as retriable."""
    return isinstance(error, KafkaError) and bool(getattr(error, "retriable", False))


def kafka_retrying(max_seconds: float = 60.0) -> AsyncRetrying:
    """An async retry loop for one Kafka call site."""
    return AsyncRetrying(
        retry=retry_if_exception(is_retriable),
        wait=wait_exponential(multiplier=0.1, max=5.0),
        stop=stop_after_delay(max_seconds),
        reraise=True,
    )
