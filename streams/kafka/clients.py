"""Construction of the processor's Kafka clients, in one place so every client gets the same connection settings
(bootstrap servers, TLS, SASL: see connection/security.py)."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.assignors.range import RangePartitionAssignor

from connection.security import connection_options
from streams.kafka.membership import MemberDirectoryAssignor
from streams.settings import KafkaSettings

__all__ = ["Records", "admin_client", "group_consumer", "loose_producer"]

Records = dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]
"""What one poll of a consumer returns: the fetched records of each partition."""


def admin_client(kafka: KafkaSettings) -> AIOKafkaAdminClient:
    """For creating and checking topics."""
    return AIOKafkaAdminClient(**connection_options(kafka), client_id=f"{kafka.client_id}-admin")


def loose_producer(kafka: KafkaSettings) -> AIOKafkaProducer:
    """Idempotent, non-transactional: records bound to no task (dead letters of inventory, rejected configs)."""
    return AIOKafkaProducer(
        **connection_options(kafka),
        client_id=f"{kafka.client_id}-loose",
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
        compression_type=kafka.compression(),
    )


def group_consumer(kafka: KafkaSettings, assignor: MemberDirectoryAssignor | None = None) -> AIOKafkaConsumer:
    """The consumer-group member reading the subject topics: read_committed, offsets committed only inside the
    tasks' transactions, co-partitioned inputs assigned by range so one member owns a partition number on every
    subject topic; `assignor` (range's assignment) also shares the members' HTTP addresses (membership.py)."""
    return AIOKafkaConsumer(
        **connection_options(kafka),
        client_id=kafka.client_id,
        group_id=kafka.group_id,
        group_instance_id=kafka.group_instance_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        session_timeout_ms=kafka.session_timeout_ms,
        heartbeat_interval_ms=kafka.heartbeat_interval_ms,
        partition_assignment_strategy=(assignor or RangePartitionAssignor,),
        fetch_max_wait_ms=kafka.fetch_max_wait_ms,
    )
