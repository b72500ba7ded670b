"""Kafka connection settings, read as the service reads them (PLACEMENT_KAFKA__..., nested with __, and a .env
file), by every program that connects: the service, the example advisors, the deployers and the command-line
tools. A bad value becomes one `SettingsError` naming the variable, the field and the problem."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from connection.errors import SettingsError

__all__ = [
    "ENVIRONMENT",
    "KafkaSettings",
    "environment_variable",
    "invalid_settings",
    "load_kafka_settings",
    "with_bootstrap_fallback",
]

ENVIRONMENT = SettingsConfigDict(
    env_prefix="PLACEMENT_", env_nested_delimiter="__", env_file=".env", extra="ignore", frozen=True
)
"""Where settings come from: PLACEMENT_* variables, nested with __, and a .env file in the working directory."""


class KafkaSettings(BaseModel):
    """Connection and consumer-group settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: str = "127.0.0.1:9092"
    """Comma-separated host:port list (env KAFKA_BOOTSTRAP_SERVERS is honoured too)."""
    group_id: str = "placement"
    group_instance_id: str | None = None
    """Static membership: a stable id per replica avoids a rebalance on restart, and a replica restarted after a
    crash gets its tasks back at once instead of after the session timeout. Unset, a Kubernetes StatefulSet
    pod uses its name (`<set>-<ordinal>`, stable across restarts); elsewhere the member is dynamic."""
    client_id: str = "placement-stream"
    task_partitions: int = Field(default=3, ge=1, le=256)
    """Partitions of every co-partitioned topic; one transactional producer per owned partition."""
    replication_factor: int = Field(default=1, ge=1)
    session_timeout_ms: int = Field(default=6000, ge=1000)
    """How long the group waits for a silent member: after a crash of a dynamic member, its tasks move only then.
    6 s is the broker's default minimum (`group.min.session.timeout.ms`)."""
    heartbeat_interval_ms: int = Field(default=1000, ge=100)
    """How often the group member reports to the coordinator, and so how soon it learns of a rebalance: when an
    instance joins, the others keep every task until their next heartbeat. aiokafka's default of 3 s made a
    second instance wait seconds for its share; must stay below a third of the session timeout."""
    transaction_timeout_ms: int = Field(default=60_000, ge=1000)
    group_offsets_interval_ms: int = Field(default=1000, ge=0)
    """How often a task's transaction also commits its consumed offsets to the consumer group (0: every one).
    Every transaction records them in the task's changelog partition, which is where a new owner starts (the
    later of the two), so the group's offsets serve monitoring and trail by up to this much while a task runs; a
    graceful stop commits them exactly. In a transaction they cost two round trips before the task's records can
    be sent (AddOffsetsToTxn, TxnOffsetCommit): at 1,000 submissions/s, p50 25.4 ms and p99 53.3 ms with them in
    every transaction, 18.5 ms and 39.4 ms at 1 s (medians of 3 runs)."""
    max_batch_records: int = Field(default=1000, ge=1)
    poll_timeout_ms: int = Field(default=20, ge=1)
    """Longest wait for subject records before the inventory tables are read again: it bounds how long an
    inventory change waits to be applied (at 100 ms, up to 100 ms were added to every change). The price is
    idle CPU: an idle processor used 5.6% of a core at 20 ms and 3.9% at 100 ms on the benchmark machine."""
    fetch_max_wait_ms: int = Field(default=10, ge=1, le=500)
    """How long the broker may hold the subject consumer's fetch when it has nothing new. aiokafka keeps one fetch
    in flight per broker, for the partitions that had nothing buffered when it was sent; a record arriving on
    another partition waits for that fetch to end. At the client default (500 ms) this was most of a decision's
    latency at low rates (queued 278 ms on average at 100 submissions/s, 82 ms at 10 ms)."""
    compression_type: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "zstd"
    """Codec of every record batch the processor produces. A decision of a few hundred clusters is tens of
    kilobytes of repetitive JSON that zstd shrinks several times; consumers need zstd support (Kafka 2.1+
    clients), else choose `none` or `gzip`."""

    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    """How every client connects: SASL_SSL for SCRAM or PLAIN over TLS (Strimzi, Amazon MSK, Confluent Cloud), SSL
    for TLS alone or mutual TLS (with `ssl_cert_file`), the SASL_PLAINTEXT and PLAINTEXT forms only on trusted
    networks."""
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] = "SCRAM-SHA-512"
    """Used with the SASL_* protocols."""
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    """Never logged or printed; prefer `sasl_password_file`, which is read again at every connection set-up, so a
    rotated Kubernetes secret is picked up by the next client."""
    sasl_password_file: Path | None = None
    sasl_oauth_token_file: Path | None = None
    """OAUTHBEARER: a file holding the current token (re-read for every new connection, as a sidecar refreshes it)."""
    sasl_oauth_token_command: str | None = None
    """OAUTHBEARER: a command (no shell) that prints a token on stdout, run for every new connection."""
    ssl_ca_file: Path | None = None
    """PEM bundle of the CAs that sign the brokers' certificates; unset, the system's trust store is used."""
    ssl_cert_file: Path | None = None
    """PEM client certificate (chain) for mutual TLS; needs `ssl_key_file`."""
    ssl_key_file: Path | None = None
    ssl_key_password_file: Path | None = None
    """For an encrypted `ssl_key_file`."""
    ssl_check_hostname: bool = True
    """Whether the broker's certificate must name the host connected to; turn off only for brokers reached through
    addresses their certificates do not list."""

    @model_validator(mode="after")
    def _security_is_complete(self) -> KafkaSettings:
        """Catch half-configured security at start, naming what is missing, instead of as a broker error later."""
        sasl = self.security_protocol.startswith("SASL_")
        tls = self.security_protocol.endswith("SSL")
        problems: list[str] = []
        if sasl and self.sasl_mechanism == "OAUTHBEARER":
            if (self.sasl_oauth_token_file is None) == (self.sasl_oauth_token_command is None):
                problems.append("OAUTHBEARER needs exactly one of sasl_oauth_token_file, sasl_oauth_token_command")
        elif sasl:
            if not self.sasl_username:
                problems.append(f"{self.sasl_mechanism} needs sasl_username")
            if (self.sasl_password is None) == (self.sasl_password_file is None):
                problems.append(f"{self.sasl_mechanism} needs exactly one of sasl_password, sasl_password_file")
        if (self.ssl_cert_file is None) != (self.ssl_key_file is None):
            problems.append("mutual TLS needs both ssl_cert_file and ssl_key_file")
        tls_files = (self.ssl_ca_file, self.ssl_cert_file, self.ssl_key_file, self.ssl_key_password_file)
        if not tls and any(tls_files):
            problems.append(f"ssl_* files are set but security_protocol {self.security_protocol} does not use TLS")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @field_validator("heartbeat_interval_ms")
    @classmethod
    def _heartbeat_within_session(cls, value: int, info: ValidationInfo) -> int:
        session = info.data.get("session_timeout_ms")
        if session is not None and value * 3 > session:
            raise ValueError(f"must be at most a third of session_timeout_ms ({session})")
        return value

    def compression(self) -> str | None:
        """The codec as the Kafka client takes it."""
        return None if self.compression_type == "none" else self.compression_type


class _KafkaEnvironment(BaseSettings):
    """The `kafka` part of the service's settings alone, for programs that only connect."""

    model_config = ENVIRONMENT

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)


def load_kafka_settings() -> KafkaSettings:
    """The connection settings from PLACEMENT_KAFKA__* and .env, as the service reads them."""
    try:
        return _KafkaEnvironment(**with_bootstrap_fallback({})).kafka
    except ValidationError as exc:
        raise invalid_settings(exc) from exc


def with_bootstrap_fallback(overrides: dict[str, Any]) -> dict[str, Any]:
    """`overrides` with KAFKA_BOOTSTRAP_SERVERS as the bootstrap servers when PLACEMENT_KAFKA__BOOTSTRAP_SERVERS
    is unset and no override names them."""
    kafka_env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not kafka_env or "PLACEMENT_KAFKA__BOOTSTRAP_SERVERS" in os.environ:
        return overrides
    given = dict(overrides.get("kafka", {}) or {})
    given.setdefault("bootstrap_servers", kafka_env)
    return {**overrides, "kafka": given}


def invalid_settings(exc: ValidationError) -> SettingsError:
    """One error for every problem of a validation: each names the field, its variable and the problem."""
    problems = []
    for item in exc.errors():
        field = ".".join(str(p) for p in item["loc"])
        problems.append(f"{field} (env {environment_variable(*item['loc'])} or .env): {item['msg']}")
    return SettingsError("invalid settings: " + "; ".join(problems))


def environment_variable(*location: object) -> str:
    """The environment variable of a settings field, e.g. `kafka`, `task_partitions` ->
    PLACEMENT_KAFKA__TASK_PARTITIONS."""
    return "PLACEMENT_" + "__".join(str(part).upper() for part in location)
