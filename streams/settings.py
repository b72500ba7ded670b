"""Service settings from the environment (prefix PLACEMENT_, nested with __), a .env file and CLI flags."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from engine.core import EngineSettings
from streams.errors import SettingsError
from topics.names import TOPIC_SPECS, TopicRole

__all__ = ["KafkaSettings", "Settings", "TopicNames", "load_settings", "stable_identity"]


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


class TopicNames(BaseModel):
    """Actual topic names per role."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    submissions: str = TOPIC_SPECS[TopicRole.SUBMISSIONS].default_name
    cluster_status: str = TOPIC_SPECS[TopicRole.CLUSTER_STATUS].default_name
    taints: str = TOPIC_SPECS[TopicRole.TAINTS].default_name
    advisor_recommendations: str = TOPIC_SPECS[TopicRole.ADVISOR_RECOMMENDATIONS].default_name
    advisor_requests: str = TOPIC_SPECS[TopicRole.ADVISOR_REQUESTS].default_name
    decisions: str = TOPIC_SPECS[TopicRole.DECISIONS].default_name
    changelog: str = TOPIC_SPECS[TopicRole.CHANGELOG].default_name
    dead_letter: str = TOPIC_SPECS[TopicRole.DEAD_LETTER].default_name

    def name(self, role: TopicRole) -> str:
        """The topic name of a role."""
        return str(getattr(self, role.value.replace("-", "_")))

    def roles(self) -> dict[str, TopicRole]:
        """Topic name -> role."""
        return {self.name(role): role for role in TopicRole}

    @classmethod
    def prefixed(cls, prefix: str) -> TopicNames:
        """Default names with a prefix, e.g. for isolated test runs."""
        return cls(**{role.value.replace("-", "_"): prefix + spec.default_name for role, spec in TOPIC_SPECS.items()})


class Settings(BaseSettings):
    """Everything the service reads at start."""

    model_config = SettingsConfigDict(
        env_prefix="PLACEMENT_", env_nested_delimiter="__", env_file=".env", extra="ignore", frozen=True
    )

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    topics: TopicNames = Field(default_factory=TopicNames)
    queue_config: Path | None = None
    """YuniKorn `partitions:` file; without one every application is rejected with a reason saying so."""
    queue_config_poll_seconds: float = Field(default=1.0, gt=0)
    advisor_timeout_seconds: float = Field(default=30.0, gt=0)
    resync_seconds: float = Field(default=600.0, ge=0)
    explain: list[str] = Field(default_factory=list)
    """Placement subject keys whose decision events carry explain data."""
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=0, le=65535)
    """Port of /metrics, /healthz, /livez and /readyz; 0 disables the endpoint."""
    log_level: str = "INFO"
    shutdown_timeout_seconds: float = Field(default=20.0, gt=0)
    """Bound on the whole graceful stop; the batch in flight gets at most `stop_grace_seconds` of it."""
    stop_grace_seconds: float = Field(default=1.0, ge=0)
    """How long a stop waits for the batch in flight to commit before abandoning it (its records are read again
    by the next owner, exactly once), so SIGTERM or Ctrl-C ends the process within about two seconds."""
    max_task_aborts: int = Field(default=3, ge=1)
    """Times one record may abort its task's transaction (the broker refusing its outputs) before it is
    dead-lettered instead of tried again."""
    liveness_timeout_seconds: float = Field(default=60.0, gt=0)
    """/livez turns false when the processing loop has made no progress for this long, so an orchestrator
    restarts a process that is truly stuck."""
    gc_threshold: int = Field(default=50_000, ge=0)
    """Young-generation threshold of Python's cyclic garbage collector (see streams/memory.py); 0 keeps
    Python's default of 700."""

    def environment(self) -> dict[str, str]:
        """These settings as the PLACEMENT_* variables `placement-stream run` reads, e.g. to start replicas;
        unset (None) fields are left out, lists go as JSON."""
        env: dict[str, str] = {}
        for name, value in self.model_dump(mode="json").items():
            fields = [((name, f), v) for f, v in value.items()] if isinstance(value, dict) else [((name,), value)]
            for location, inner in fields:
                if inner is not None:
                    env[_variable(*location)] = inner if isinstance(inner, str) else json.dumps(inner)
        return env

    def engine_settings(self) -> EngineSettings:
        """The pure subset the engines see."""
        return EngineSettings(
            advisor_timeout_seconds=self.advisor_timeout_seconds,
            resync_seconds=self.resync_seconds,
            explain=frozenset(self.explain),
        )


def stable_identity(environ: dict[str, str] | None = None) -> str | None:
    """The pod name when running as a Kubernetes StatefulSet member (`<set>-<ordinal>`), which survives restarts;
    None elsewhere, where a default identity could collide between replicas."""
    env = os.environ if environ is None else environ
    name = env.get("HOSTNAME", "")
    if "KUBERNETES_SERVICE_HOST" in env and re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?-[0-9]+", name):
        return name
    return None


def load_settings(**overrides: Any) -> Settings:
    """Build settings; a bad value becomes a SettingsError naming the source, the field and the problem."""
    kafka_env = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if kafka_env and "PLACEMENT_KAFKA__BOOTSTRAP_SERVERS" not in os.environ:
        kafka = dict(overrides.pop("kafka", {}) or {})
        kafka.setdefault("bootstrap_servers", kafka_env)
        overrides["kafka"] = kafka
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for item in exc.errors():
            field = ".".join(str(p) for p in item["loc"])
            env = _variable(*item["loc"])
            problems.append(f"{field} (env {env} or .env): {item['msg']}")
        raise SettingsError("invalid settings: " + "; ".join(problems)) from exc
    identity = stable_identity()
    if settings.kafka.group_instance_id is None and identity is not None:
        kafka = settings.kafka.model_copy(update={"group_instance_id": identity})
        settings = settings.model_copy(update={"kafka": kafka})
    return settings


def _variable(*location: object) -> str:
    """The environment variable of a settings field, e.g. `kafka`, `task_partitions` ->
    PLACEMENT_KAFKA__TASK_PARTITIONS."""
    return "PLACEMENT_" + "__".join(str(part).upper() for part in location)
