"""Local Apache Kafka broker without Docker: a Maven-resolved classpath and a managed JVM process.

Used by the test suite (``kafka_bootstrap`` fixture), the demo and the benchmarks, so all of them run against
a real Kafka 4.x broker with no container engine.
"""

from __future__ import annotations

from localbroker.broker import BrokerError, LocalBroker, broker_status
from localbroker.fetch import KafkaLibsError, default_cache_root, ensure_kafka_libs

__all__ = [
    "BrokerError",
    "KafkaLibsError",
    "LocalBroker",
    "broker_status",
    "default_cache_root",
    "ensure_kafka_libs",
]
